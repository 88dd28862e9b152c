"""The sentence-level tasks: GLUE (SST-2, CoLA, MRPC, STS-B, QNLI, RTE, WNLI), SNLI, and the SST tree tasks.

A :class:`TaskSpec` says where a task's texts and labels are in its files (GLUE TSV layouts differ per task), what
its labels are, how it is scored, and which Hugging Face hub data set holds it for users who are online.

The SST tree tasks (``sst5``: SST-1, five classes; ``sst2_trees``: binary, neutral sentences dropped) read the
Stanford Sentiment Treebank's PTB-bracketed trees (``../shared/data/sst_trees/{train,dev}.txt``): the gold
constituency tree of every sentence is kept, and its gold tokens are parsed by spaCy for the dependency tree (see
:mod:`syntaxformer.tasks.data` and :mod:`syntaxformer.tasks.features`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from syntaxformer.errors import SyntaxformerError

__all__ = ["TaskSpec", "TASKS", "get_task", "task_names"]


@dataclass(frozen=True)
class TaskSpec:
    """Everything task-specific about a sentence(-pair) classification or regression task.

    Attributes:
        name: short name (``"sst2"``).
        title: the usual name (``"SST-2"``).
        folder: data folder relative to the shared data root (``"glue/SST-2"``).
        columns: role -> column name in files with a header; roles are ``"text_a"``, ``"text_b"`` (pairs only),
            ``"label"`` and ``"id"`` (optional).
        headerless: role -> column position for files without a header (CoLA's train/dev); ``None`` if every
            file of the task has a header.
        test_columns: like ``columns``, for the unlabeled test files (which lack the label column and may name the
            id column differently).
        labels: the label strings, in class-id order (the hub data sets use the same order); ``None`` for
            regression.
        metrics: metric names (:data:`syntaxformer.tasks.metrics.METRICS`); the first is the headline number.
        hub: ``(path, config name)`` of the task on the Hugging Face hub.
        hub_columns: role -> column name in the hub data set.
        split_files: split -> file name in ``folder``.
        reader: file format: ``"tsv"`` (GLUE), ``"snli"`` (s1/s2/labels or jsonl) or ``"sst_trees"`` (one
            PTB-bracketed SST tree per line; examples carry the gold tree).
        tree_labels: for ``"sst_trees"``: SST root score (0-4) -> class id, ``None`` = drop the example (the
            neutral sentences of binary SST); ``None`` = every score is its own class.
    """

    name: str
    title: str
    folder: str
    columns: Mapping[str, str]
    labels: tuple[str, ...] | None
    metrics: tuple[str, ...]
    hub: tuple[str, str | None]
    hub_columns: Mapping[str, str]
    headerless: Mapping[str, int] | None = None
    test_columns: Mapping[str, str] | None = None
    split_files: Mapping[str, str] = field(
        default_factory=lambda: {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"})
    reader: str = "tsv"
    tree_labels: Mapping[int, int | None] | None = None

    @property
    def has_gold_trees(self) -> bool:
        """True for tasks whose files give a gold constituency tree of every text (SST)."""
        return self.reader == "sst_trees"

    @property
    def is_pair(self) -> bool:
        """True for sentence-pair tasks."""
        return "text_b" in self.columns

    @property
    def is_regression(self) -> bool:
        """True for regression (STS-B)."""
        return self.labels is None

    @property
    def num_labels(self) -> int:
        """Number of model outputs: the number of classes, or 1 for regression."""
        return 1 if self.labels is None else len(self.labels)

    @property
    def main_metric(self) -> str:
        """The headline metric."""
        return self.metrics[0]


_GLUE_HUB = "nyu-mll/glue"
_SST_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}

TASKS: dict[str, TaskSpec] = {t.name: t for t in [
    TaskSpec("sst2", "SST-2", "glue/SST-2", {"text_a": "sentence", "label": "label"}, ("0", "1"), ("accuracy",),
             (_GLUE_HUB, "sst2"), {"text_a": "sentence", "label": "label", "id": "idx"},
             test_columns={"text_a": "sentence", "id": "index"}),
    TaskSpec("cola", "CoLA", "glue/CoLA", {"text_a": "sentence", "label": "label", "id": "index"}, ("0", "1"),
             ("matthews_correlation",), (_GLUE_HUB, "cola"), {"text_a": "sentence", "label": "label", "id": "idx"},
             # train.tsv / dev.tsv: source, label, original judgement (*), sentence; no header.
             headerless={"id": 0, "label": 1, "text_a": 3},
             test_columns={"text_a": "sentence", "id": "index"}),
    TaskSpec("mrpc", "MRPC", "glue/MRPC", {"text_a": "#1 String", "text_b": "#2 String", "label": "Quality"},
             ("0", "1"), ("f1", "accuracy"), (_GLUE_HUB, "mrpc"),
             {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"},
             test_columns={"text_a": "#1 String", "text_b": "#2 String", "id": "index"}),
    TaskSpec("stsb", "STS-B", "glue/STS-B", {"text_a": "sentence1", "text_b": "sentence2", "label": "score",
                                            "id": "index"},
             None, ("pearson", "spearman"), (_GLUE_HUB, "stsb"),
             {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"}),
    TaskSpec("qnli", "QNLI", "glue/QNLI", {"text_a": "question", "text_b": "sentence", "label": "label",
                                          "id": "index"},
             ("entailment", "not_entailment"), ("accuracy",), (_GLUE_HUB, "qnli"),
             {"text_a": "question", "text_b": "sentence", "label": "label", "id": "idx"}),
    TaskSpec("rte", "RTE", "glue/RTE", {"text_a": "sentence1", "text_b": "sentence2", "label": "label",
                                       "id": "index"},
             ("entailment", "not_entailment"), ("accuracy",), (_GLUE_HUB, "rte"),
             {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"}),
    TaskSpec("wnli", "WNLI", "glue/WNLI", {"text_a": "sentence1", "text_b": "sentence2", "label": "label",
                                          "id": "index"},
             ("0", "1"), ("accuracy",), (_GLUE_HUB, "wnli"),
             {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "id": "idx"}),
    # SNLI: the tokenized s1/s2/labels triple or the original jsonl (see syntaxformer.tasks.data).
    TaskSpec("snli", "SNLI", "snli", {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
             ("entailment", "neutral", "contradiction"), ("accuracy",), ("stanfordnlp/snli", None),
             {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
             split_files={"train": "s1.train", "dev": "s1.dev", "test": "s1.test"}, reader="snli"),
    # SST tree tasks: sentence-level examples from the PTB-bracketed trees (root score = label). The hub copies of
    # SST have no trees, so these tasks read local files only (``columns`` / ``hub_columns`` name the fields of
    # the examples for messages; they are not file columns).
    TaskSpec("sst5", "SST-5", "sst_trees", {"text_a": "sentence", "label": "label"}, ("0", "1", "2", "3", "4"),
             ("accuracy",), ("", None), {"text_a": "sentence", "label": "label"},
             split_files=_SST_FILES, reader="sst_trees"),
    TaskSpec("sst2_trees", "SST-2 (trees)", "sst_trees", {"text_a": "sentence", "label": "label"}, ("0", "1"),
             ("accuracy",), ("", None), {"text_a": "sentence", "label": "label"},
             split_files=_SST_FILES, reader="sst_trees", tree_labels={0: 0, 1: 0, 2: None, 3: 1, 4: 1}),
]}

_ALIASES = {"sst-2": "sst2", "sts-b": "stsb", "sts": "stsb", "mnli": None, "qqp": None,
            "sst-5": "sst5", "sst-1": "sst5", "sst1": "sst5", "sst2-trees": "sst2_trees", "sst2trees": "sst2_trees",
            "sst-2-trees": "sst2_trees"}


def task_names() -> list[str]:
    """Names of the known tasks."""
    return sorted(TASKS)


def get_task(name: str) -> TaskSpec:
    """The :class:`TaskSpec` of ``name`` (case-insensitive; ``"SST-2"`` and ``"sst2"`` both work).

    Raises:
        SyntaxformerError: unknown task; the message lists the known ones.
    """
    key = name.lower().replace("_", "-")
    key = _ALIASES.get(key, key.replace("-", "")) if key in _ALIASES else key.replace("-", "")
    if key is None or key not in TASKS:
        raise SyntaxformerError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    return TASKS[key]
