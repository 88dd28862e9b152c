"""SNLI: natural language inference from the original jsonl (with the Stanford parser's trees, used as the syntax)
or the tokenized ``s1`` / ``s2`` / ``labels`` triple (parsed like any text); the hub copy as a fallback."""

from __future__ import annotations

from pathlib import Path

from syntaxformer.data.examples import TaskExample
from syntaxformer.data.readers.snli import read_snli_examples
from syntaxformer.tasks.base import register_task
from syntaxformer.tasks.sentence import SentenceTask, TaskSpec, spec_task

__all__ = ["SNLI_SPEC", "SnliTask"]

#: Files: ``s1.<split>`` (with ``s2`` / ``labels`` beside it) or ``snli_1.0_<split>*.jsonl``.
SNLI_SPEC = TaskSpec(
    "snli",
    "SNLI",
    "snli",
    {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
    ("entailment", "neutral", "contradiction"),
    ("accuracy",),
    ("stanfordnlp/snli", None),
    {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
    split_files={"train": "s1.train", "dev": "s1.dev", "test": "s1.test"},
)


class SnliTask(SentenceTask):
    """SNLI read by :func:`syntaxformer.data.readers.snli.read_snli_examples`; jsonl examples carry their parses."""

    def split_file(self, folder: Path, split: str) -> Path:
        path = folder / self.spec.split_files[split]
        if not path.is_file():
            jsonl = sorted(folder.glob(f"snli_1.0_{split}*.jsonl"))
            return jsonl[0] if jsonl else path
        return path

    def read_file(self, path: Path, split: str) -> tuple[list[TaskExample], list[str]]:
        return read_snli_examples(path, split)


register_task(spec_task(SnliTask, SNLI_SPEC))
