"""Sentence(-pair) classification and regression: one :class:`SentenceTask` class parameterised by a
:class:`TaskSpec`, subclassed by the GLUE, SNLI and SST families; a new task in their formats is a new spec
(:func:`spec_task` makes the class).
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from syntaxformer import defaults
from syntaxformer.data.examples import TaskData, TaskExample, file_fingerprint
from syntaxformer.data.readers.glue import TsvLayout
from syntaxformer.errors import ConfigError, DataError, SyntaxformerError
from syntaxformer.tasks.base import Predictions, Task, TaskContext, sample_limit
from syntaxformer.tasks.featurize import FeatureDataset, build_features, syntax_source
from syntaxformer.tasks.metrics import compute_metrics

__all__ = ["SPLITS", "SentenceTask", "TaskSpec", "load_hub_split", "logits_to_predictions", "spec_task"]

logger = logging.getLogger(__name__)

#: Split names, and their names in hub data sets.
SPLITS = ("train", "dev", "test")
_HUB_SPLIT = {"train": "train", "dev": "validation", "test": "test"}


@dataclass(frozen=True)
class TaskSpec:
    """Everything task-specific about a sentence(-pair) classification or regression task.

    Attributes:
        name: short name (``"sst2"``).
        title: the usual name (``"SST-2"``).
        folder: data folder relative to the shared data root (``"glue/SST-2"``).
        columns: role (``"text_a"``, ``"text_b"``, ``"label"``, ``"id"``) -> column name in files with a header.
        labels: the label strings, in class-id order; ``None`` for regression.
        metrics: metric names (:data:`syntaxformer.tasks.metrics.METRICS`); the first is the headline number.
        hub: ``(path, config name)`` of the task on the Hugging Face hub (``("", None)``: none).
        hub_columns: role -> column name in the hub data set.
        headerless: role -> column position for files without a header (CoLA's train/dev).
        test_columns: like ``columns``, for the unlabeled test files.
        split_files: split -> file name in ``folder``.
        tree_labels: SST tree tasks: root score (0-4) -> class id (``None`` = drop the example).
        class_names: what each class means, in class-id order (the model's ``id2label``); ``None`` = ``labels``.
            Prediction files of a split keep the file labels (GLUE submissions expect them).
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
        default_factory=lambda: {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    )
    tree_labels: Mapping[int, int | None] | None = None
    class_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.class_names is not None and (self.labels is None or len(self.class_names) != len(self.labels)):
            raise ConfigError(
                f"task spec {self.name!r}: class_names {self.class_names} must name each of the labels {self.labels}"
            )

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
    def layout(self) -> TsvLayout:
        """The TSV layout of the task's files (:func:`syntaxformer.data.readers.glue.read_glue_tsv`)."""
        return TsvLayout(self.title, self.columns, self.labels, self.headerless, self.test_columns)


def logits_to_predictions(logits: Any, regression: bool) -> np.ndarray:
    """Class ids (argmax) or regression values (``[N]``) from model logits ``[N, num_labels]``."""
    if isinstance(logits, (tuple, list)):
        logits = logits[0]
    logits = np.asarray(logits)
    if regression:
        return logits.reshape(len(logits), -1)[:, 0].astype(np.float64)
    return logits.argmax(-1)


class SentenceTask(Task[TaskData]):
    """A sentence(-pair) classification / regression task described by :attr:`spec`; subclasses implement
    :meth:`read_file`. Predictions are class ids (regression: values)."""

    spec: ClassVar[TaskSpec]
    head: ClassVar[str] = "sequence_classification"

    # -- identity --------------------------------------------------------------------------------------
    @property
    def labels(self) -> tuple[str, ...] | None:
        """The label strings in class-id order (``None`` for regression)."""
        return self.spec.labels

    @property
    def is_regression(self) -> bool:
        """True for regression (STS-B)."""
        return self.spec.is_regression

    @property
    def label_dtype(self) -> Any:
        """dtype of the label arrays (``int64`` class ids, ``float32`` values)."""
        return np.float32 if self.is_regression else np.int64

    @property
    def class_names(self) -> tuple[str, ...]:
        """The model's class names in class-id order (regression: ``("score",)``)."""
        return self.spec.class_names or self.spec.labels or ("score",)

    def model_options(self) -> dict[str, Any]:
        labels = self.class_names
        return {
            "num_labels": self.spec.num_labels,
            "problem_type": "regression" if self.is_regression else "single_label_classification",
            "id2label": dict(enumerate(labels)),
            "label2id": {label: i for i, label in enumerate(labels)},
        }

    # -- data ------------------------------------------------------------------------------------------
    def read_file(self, path: Path, split: str) -> tuple[list[TaskExample], list[str]]:
        """Examples of one file of the task's format, and the files read (for the fingerprint)."""
        raise NotImplementedError(f"{type(self).__name__} reads no files")

    def data_metadata(self, split: str) -> dict[str, Any]:
        """Facts about how the examples of ``split`` are made (``TaskData.metadata``)."""
        return {}

    def fingerprint_extra(self, split: str) -> str:
        """What besides the bytes read changes the examples (reader version, options); part of the fingerprint."""
        return ""

    def default_data_dir(self) -> Path | None:
        """``<shared data>/<task folder>`` (e.g. ``../shared/data/glue/SST-2``) if it exists."""
        root = defaults.shared_data_dir()  # looked up when called (tests replace it)
        if root is None:
            return None
        folder = root / self.spec.folder
        return folder if folder.is_dir() else None

    def split_file(self, folder: Path, split: str) -> Path:
        """The file of ``split`` in a data folder."""
        return folder / self.spec.split_files[split]

    def load_split(self, split: str, data: Mapping[str, Any]) -> TaskData:
        """Read one split from ``data["<split>_file"]``, else ``data["dataset"]`` (the hub), else
        ``data["data_dir"]``, else the task's folder under the shared data root, else its hub data set; subsampled
        as :func:`~syntaxformer.tasks.base.sample_limit` says.

        Raises:
            ConfigError / DataError: unknown split, no file for the split, or no examples.
        """
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; expected one of {SPLITS}")
        out = self._read_split(
            split, data.get(f"{split}_file"), data.get("data_dir"), data.get("dataset"), data.get("dataset_config")
        )
        if not out.examples:
            raise DataError(f"{self.title} {split} data from {out.source} is empty")
        return out.subsampled(*sample_limit(data, split))

    def _read_split(
        self, split: str, data_file: Any, data_dir: Any, dataset: str | None, dataset_config: str | None
    ) -> TaskData:
        spec = self.spec
        if data_file is None and dataset is not None:
            return load_hub_split(spec, split, dataset, dataset_config)
        if data_file is None:
            folder = Path(data_dir) if data_dir is not None else self.default_data_dir()
            if folder is None:
                if not spec.hub[0]:
                    raise DataError(
                        f"no data for {spec.title}: give data_dir (a folder with {dict(spec.split_files)}) or "
                        f"{split}_file, or set SYNTAXFORMER_DATA to a folder holding {spec.folder}/"
                    )
                logger.warning(
                    "no local copy: SYNTAXFORMER_DATA names no folder holding %s (set it to the shared data "
                    "folder); loading %s %s from the hub data set %r",
                    spec.folder,
                    spec.title,
                    split,
                    spec.hub[0],
                )
                try:
                    return load_hub_split(spec, split)
                except SyntaxformerError as e:
                    raise DataError(
                        f"no data for {spec.title}: give data_dir (a folder with {dict(spec.split_files)}), a "
                        f"{split}_file, or a hub dataset name; $SYNTAXFORMER_DATA/{spec.folder} was not found and the "
                        f"hub fallback failed: {e}"
                    ) from e
            data_file = self.split_file(folder, split)
        data_file = Path(data_file)
        if not data_file.exists():
            raise DataError(f"{spec.title} {split} file {data_file} not found")
        examples, files = self.read_file(data_file, split)
        fp = file_fingerprint(files)
        extra = self.fingerprint_extra(split)
        if extra:
            fp = hashlib.sha256(f"{fp}|{extra}".encode()).hexdigest()
        return TaskData(examples, ", ".join(files), fp, len(examples), metadata=self.data_metadata(split))

    def syntax_source(self, data: TaskData, context: TaskContext) -> dict[str, str] | None:
        """:func:`~syntaxformer.tasks.featurize.syntax_source` (gold trees, given parses or the parser)."""
        return syntax_source(data, context) if context.syntax_inputs else None

    def featurize(self, data: TaskData, context: TaskContext, split: str) -> FeatureDataset:
        return build_features(self.name, data, context, split, label_dtype=self.label_dtype)

    # -- predictions -----------------------------------------------------------------------------------
    def postprocess(
        self, data: TaskData, features: Any, raw: Any, auxiliary: Mapping[str, Any] | None = None
    ) -> Predictions:
        values = logits_to_predictions(raw, self.is_regression)
        return Predictions(ids=list(features.guids), values=np.asarray(values).tolist())

    def compute_metrics(self, data: TaskData, predictions: Predictions) -> dict[str, float]:
        if not data.has_labels:
            raise DataError(f"{self.title} data ({data.source}) has no labels to score predictions against")
        labels = np.asarray([e.label for e in data.examples], dtype=self.label_dtype)
        return compute_metrics(self.metric_names, predictions.values, labels)

    def prediction_records(self, data: TaskData, predictions: Predictions) -> list[dict[str, Any]]:
        """Per example, named as ``predict --input`` names them (``label`` a class name, regression ``value``),
        with ``scores`` where the task keeps them and ``gold_label`` when known."""
        key = "value" if self.is_regression else "label"
        scores = predictions.scores or [None] * len(predictions.values)
        records = []
        for e, v, s in zip(data.examples, predictions.values, scores):
            r = {"id": e.guid, "text": e.text_a, **({"text_pair": e.text_b} if e.text_b is not None else {})}
            r[key] = self._class_name(v)
            if isinstance(s, Mapping):
                r.update(score=s.get(r[key]), scores=s)
            if e.label is not None:
                r["gold_label"] = self._class_name(e.label)
            records.append(r)
        return records

    def submission_value(self, value: Any, record: Mapping[str, Any]) -> Any:
        """The label string as the data writes it (:meth:`label_name`)."""
        return self.label_name(value)

    def label_name(self, value: Any) -> Any:
        """A prediction as the data writes it (GLUE's submission format): the label string, or the value to 4
        decimals."""
        return round(float(value), 4) if self.spec.labels is None else self.spec.labels[int(value)]

    def _class_name(self, value: Any) -> Any:
        return float(value) if self.is_regression else self.class_names[int(value)]


def spec_task(base: type[SentenceTask], spec: TaskSpec) -> type[SentenceTask]:
    """A :class:`SentenceTask` subclass of ``base`` for ``spec``, defined in the caller's module."""
    module = sys._getframe(1).f_globals.get("__name__", base.__module__)
    cls_name = "".join(part.capitalize() for part in spec.name.replace("-", "_").split("_")) + "Task"
    return type(
        cls_name,
        (base,),
        {
            "spec": spec,
            "name": spec.name,
            "title": spec.title,
            "metric_names": tuple(spec.metrics),
            "__module__": module,
            "__doc__": f"{spec.title} ({base.__name__} over the spec ``{spec.name}``).",
        },
    )


def load_hub_split(
    spec: TaskSpec, split: str, dataset: str | None = None, config: str | None = None, **load_kwargs: Any
) -> TaskData:
    """Load one split (``"train"``, ``"dev"``, ``"test"``) of a Hugging Face hub data set (default ``spec.hub``;
    a local data set folder works too); ``load_kwargs`` go to ``datasets.load_dataset``."""
    import datasets

    name = dataset or spec.hub[0]
    same = dataset is None or name.split("/")[-1] == spec.hub[0].split("/")[-1]  # "glue" or "nyu-mll/glue"
    config = config if config is not None else (spec.hub[1] if same else None)
    try:
        ds = datasets.load_dataset(name, config, split=_HUB_SPLIT.get(split, split), **load_kwargs)
    except Exception as e:  # offline, unknown name, ... : one clear line
        raise DataError(
            f"could not load hub data set {name!r} (config {config!r}, split {_HUB_SPLIT.get(split, split)!r}): "
            f"{type(e).__name__}: {e}. Offline? Use the local files instead (data_dir / train_file / dev_file), "
            f"e.g. the GLUE TSVs under ../shared/data/glue"
        ) from e
    cols = spec.hub_columns
    missing = [c for c in cols.values() if c not in ds.column_names and c != cols.get("id")]
    if missing:
        raise DataError(
            f"hub data set {name!r} has columns {ds.column_names}; {spec.title} needs "
            f"{missing} (columns used: {dict(cols)})"
        )
    out = []
    for i, row in enumerate(ds):
        raw = row[cols["label"]]
        label: int | float | None
        if spec.labels is None:
            label = float(raw)
        elif isinstance(raw, str):
            label = spec.labels.index(raw)
        else:
            label = int(raw) if raw is not None and int(raw) >= 0 else None  # -1: unlabeled (test) / no consensus
        if label is None and split != "test":
            continue  # SNLI pairs without annotator consensus
        rid = row.get(cols["id"], i) if "id" in cols else i
        out.append(
            TaskExample(
                guid=f"{split}-{rid}",
                text_a=row[cols["text_a"]],
                text_b=row[cols["text_b"]] if "text_b" in cols else None,
                label=label,
            )
        )
    fingerprint = getattr(ds, "_fingerprint", None) or file_fingerprint([])
    return TaskData(
        out,
        f"hub:{name}" + (f"/{config}" if config else "") + f"[{split}]",
        hashlib.sha256(f"hub|{name}|{config}|{split}|{fingerprint}".encode()).hexdigest(),
        len(out),
    )
