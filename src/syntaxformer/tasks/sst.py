"""The SST tree tasks: ``sst5`` (SST-1, five classes) and ``sst2_trees`` (binary, neutral sentences dropped), read
from the PTB-bracketed trees (local files only: the hub copies have no trees). Each example keeps its gold tree;
its gold tokens are parsed for the dependency tree when features are built.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syntaxformer.data.examples import TaskData, TaskExample
from syntaxformer.data.readers.sst import read_sst_examples
from syntaxformer.errors import ConfigError
from syntaxformer.tasks.base import register_task
from syntaxformer.tasks.sentence import SentenceTask, TaskSpec, spec_task

__all__ = ["SST_CONSTITUENCY_SOURCE", "SST_SPECS", "SstTreeTask"]

#: How the constituency trees of the SST tree tasks are described in ``metrics.json``.
SST_CONSTITUENCY_SOURCE = "gold SST trees"
#: Version of the SST example construction (unescaping, phrases); part of the data fingerprint.
_SST_READER_VERSION = 1
_SST_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}

# ``columns`` / ``hub_columns`` name the fields of the examples for messages; they are not file columns.
_SST_SHARED: dict[str, Any] = {
    "folder": "sst_trees",
    "columns": {"text_a": "sentence", "label": "label"},
    "metrics": ("accuracy",),
    "hub": ("", None),
    "hub_columns": {"text_a": "sentence", "label": "label"},
    "split_files": _SST_FILES,
}
SST_SPECS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "sst5",
        "SST-5",
        labels=("0", "1", "2", "3", "4"),
        class_names=("very negative", "negative", "neutral", "positive", "very positive"),
        **_SST_SHARED,
    ),
    TaskSpec(
        "sst2_trees",
        "SST-2 (trees)",
        labels=("0", "1"),
        tree_labels={0: 0, 1: 0, 2: None, 3: 1, 4: 1},
        class_names=("negative", "positive"),
        **_SST_SHARED,
    ),
)


class SstTreeTask(SentenceTask):
    """An SST tree task; examples carry their gold tree (``TaskExample.tree_a``).

    Args:
        phrases: also train on every phrase of more than 3 words of the training trees (train split only;
            Syntax-BERT §4.1).
    """

    def __init__(self, phrases: bool = False, **options: Any):
        super().__init__(**options)
        if not isinstance(phrases, bool):
            raise ConfigError(f"{self.name}: option phrases={phrases!r} must be true or false")
        self.phrases = phrases

    def options(self) -> dict[str, Any]:
        return {"phrases": self.phrases} if self.phrases else {}

    def _phrases(self, split: str) -> bool:
        return self.phrases and split == "train"  # the paper uses phrases for training only

    def load_split(self, split: str, data: Mapping[str, Any]) -> TaskData:
        if data.get(f"{split}_file") is None and (
            data.get("dataset") is not None or (data.get("data_dir") is None and self.default_data_dir() is None)
        ):
            raise ConfigError(
                f"{self.title} reads the PTB-bracketed SST tree files ({dict(self.spec.split_files)}); the hub "
                f"copies of SST have no trees. Give data_dir (a folder with those files) or {split}_file, or set "
                f"SYNTAXFORMER_DATA to a folder holding {self.spec.folder}/"
            )
        return super().load_split(split, data)

    def read_file(self, path: Path, split: str) -> tuple[list[TaskExample], list[str]]:
        return read_sst_examples(path, split, tree_labels=self.spec.tree_labels, phrases=self._phrases(split)), [
            str(path)
        ]

    def fingerprint_extra(self, split: str) -> str:
        return f"sst{_SST_READER_VERSION}|phrases={self._phrases(split)}"

    def data_metadata(self, split: str) -> dict[str, Any]:
        return {
            "constituency_source": SST_CONSTITUENCY_SOURCE,
            "examples": "sentences+phrases" if self._phrases(split) else "sentences",
        }


for _spec in SST_SPECS:
    register_task(spec_task(SstTreeTask, _spec))
