"""The GLUE tasks (SST-2, CoLA, MRPC, STS-B, QNLI, RTE, WNLI): TSV files read by
:func:`~syntaxformer.data.readers.glue.read_glue_tsv`, or the hub copy ``nyu-mll/glue`` without local files.
"""

from __future__ import annotations

from pathlib import Path

from syntaxformer.data.examples import TaskExample
from syntaxformer.data.readers.glue import read_glue_tsv
from syntaxformer.tasks.base import register_task
from syntaxformer.tasks.sentence import SentenceTask, TaskSpec, spec_task

__all__ = ["GLUE_SPECS", "GlueTask"]


class GlueTask(SentenceTask):
    """A GLUE task read from its TSV files."""

    def read_file(self, path: Path, split: str) -> tuple[list[TaskExample], list[str]]:
        return read_glue_tsv(self.spec.layout, path, split), [str(path)]


_GLUE_HUB = "nyu-mll/glue"

GLUE_SPECS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "sst2",
        "SST-2",
        "glue/SST-2",
        {"text_a": "sentence", "label": "label"},
        ("0", "1"),
        ("accuracy",),
        (_GLUE_HUB, "sst2"),
        {"text_a": "sentence", "label": "label", "id": "idx"},
        test_columns={"text_a": "sentence", "id": "index"},
        class_names=("negative", "positive"),
    ),
    TaskSpec(
        "cola",
        "CoLA",
        "glue/CoLA",
        {"text_a": "sentence", "label": "label", "id": "index"},
        ("0", "1"),
        ("matthews_correlation",),
        (_GLUE_HUB, "cola"),
        {"text_a": "sentence", "label": "label", "id": "idx"},
        # train.tsv / dev.tsv: source, label, original judgement (*), sentence; no header.
        headerless={"id": 0, "label": 1, "text_a": 3},
        test_columns={"text_a": "sentence", "id": "index"},
        class_names=("unacceptable", "acceptable"),
    ),
    TaskSpec(
        "mrpc",
        "MRPC",
        "glue/MRPC",
        {"text_a": "#1 String", "text_b": "#2 String", "label": "Quality"},
        ("0", "1"),
        ("f1", "accuracy"),
        (_GLUE_HUB, "mrpc"),
        {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"},
        test_columns={"text_a": "#1 String", "text_b": "#2 String", "id": "index"},
        class_names=("not_equivalent", "equivalent"),
    ),
    TaskSpec(
        "stsb",
        "STS-B",
        "glue/STS-B",
        {"text_a": "sentence1", "text_b": "sentence2", "label": "score", "id": "index"},
        None,
        ("pearson", "spearman"),
        (_GLUE_HUB, "stsb"),
        {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"},
    ),
    TaskSpec(
        "qnli",
        "QNLI",
        "glue/QNLI",
        {"text_a": "question", "text_b": "sentence", "label": "label", "id": "index"},
        ("entailment", "not_entailment"),
        ("accuracy",),
        (_GLUE_HUB, "qnli"),
        {"text_a": "question", "text_b": "sentence", "label": "label", "id": "idx"},
    ),
    TaskSpec(
        "rte",
        "RTE",
        "glue/RTE",
        {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "index"},
        ("entailment", "not_entailment"),
        ("accuracy",),
        (_GLUE_HUB, "rte"),
        {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"},
    ),
    TaskSpec(
        "wnli",
        "WNLI",
        "glue/WNLI",
        {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "index"},
        ("0", "1"),
        ("accuracy",),
        (_GLUE_HUB, "wnli"),
        {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"},
        class_names=("not_entailment", "entailment"),
    ),
)

for _spec in GLUE_SPECS:
    register_task(spec_task(GlueTask, _spec))
