"""The task interface: what a task is, and the public registry that makes a new task one file.

A :class:`Task` knows everything about one task family that the runner (:mod:`syntaxformer.training.run`) must
not; docs/architecture.md ("The runner's contract with a task") lists the hooks in the order the runner calls them.
A task from outside the package is a :class:`Task` subclass decorated with :func:`register_task`. Tasks are built
with options (``get_task("squad2", doc_stride=128)``); :meth:`Task.options` returns them, so ``evaluate`` /
``predict`` rebuild the same task from the run folder.
"""

from __future__ import annotations

import abc
import copy
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, get_type_hints

from syntaxformer.data.collate import pad_arrays, window_arrays
from syntaxformer.data.examples import TaskData, TaskExample
from syntaxformer.errors import ConfigError, InputError, SyntaxformerError
from syntaxformer.modeling import raw_text
from syntaxformer.registry import TASKS
from syntaxformer.tasks.featurize import FeatureDataset

__all__ = [
    "HEADS",
    "PREDICTION_FIELDS",
    "READING_DEFAULTS",
    "Features",
    "Predictions",
    "SplitData",
    "Task",
    "TaskContext",
    "constructor_options",
    "get_task",
    "record_prediction",
    "refuse_unknown_options",
    "register_task",
    "sample_limit",
    "task_names",
    "task_option_names",
    "task_option_types",
    "text_inputs_data",
]

#: Heads a task can ask for (:func:`syntaxformer.modeling.model_class`; ``seq2seq``: the translation model).
HEADS: tuple[str, ...] = (
    "sequence_classification",
    "question_answering",
    "multiple_choice",
    "token_classification",
    "seq2seq",
)


#: Run-config defaults of the reading-comprehension tasks (SQuAD, RACE): BERT-style, one evaluation at the end.
READING_DEFAULTS: dict[str, Any] = {
    "max_length": 384,
    "learning_rate": 3e-5,
    "num_train_epochs": 2.0,
    "per_device_train_batch_size": 16,
    "per_device_eval_batch_size": 32,
    "data_seed": 0,
    "eval_strategy": "no",
    "save_strategy": "no",
    "save_total_limit": 1,
}


class SplitData(Protocol):
    """What the runner reads of a split that :meth:`Task.load_split` returns."""

    @property
    def source(self) -> str:
        """Where it came from, in words (file paths or ``hub:<name>``)."""

    @property
    def fingerprint(self) -> str:
        """Hex digest of the content read (``dev_predictions.json``, the run fingerprint)."""

    @property
    def total(self) -> int:
        """Number of examples before subsampling."""

    @property
    def sample_note(self) -> str | None:
        """The subsampling applied, in words, or ``None``."""

    @property
    def metadata(self) -> Mapping[str, Any]:
        """Other facts about the data (SST: ``"examples"``; ``"constituency_source"``)."""

    @property
    def has_labels(self) -> bool:
        """Whether every example has a label (a reference, a gold answer)."""

    def __len__(self) -> int: ...


class Features(Protocol):
    """A split's model features (:meth:`Task.featurize`): a map-style dataset of per-example dicts of arrays."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> Mapping[str, Any]: ...


#: The split data a task reads and scores (a :class:`SplitData`).
DataT = TypeVar("DataT", bound=SplitData)


@dataclass
class TaskContext:
    """What featurization needs to know about the run, besides the data.

    Attributes:
        tokenizer: the model's Hugging Face fast tokenizer (for translation: the source tokenizer).
        annotator: the parser, or ``None``: built from ``parser`` when first needed, so a cache hit loads none.
        syntax_inputs: the syntax batch keys the model reads; empty = no parser is used at all.
        parser: the parser spec the annotator is built from (a spaCy pipeline name or path), or ``None``.
        parse_cache: the parse cache (``True`` = default location, a path, or ``False``).
        max_length: tokens per window, special tokens included.
        criterion: subword criterion (``"share"`` / ``"children"``).
        max_distance: ``D`` of the ``[L, D]`` ancestor tables (Syntax-BERT).
        parser_noise: fraction of heads re-attached at random (SG-Net §7.6); ``noise_seed`` seeds it per example.
        syntax: ``"auto"`` (given parses / gold trees where the data has them, else the parser), ``"parser"``
            (always parse the raw text) or ``"given"`` (never parse; gold trees get head-rule dependencies).
        constituency: ``"given"`` (constituency trees only where the data gives them) or ``"from_dependency"``
            (texts without one get a tree read off their dependency tree; Syntax-BERT's default).
        pos_tags: the tag set of ``pos_ids`` (``"upos"`` / ``"xpos"``) when the model reads them.
        use_cache: read / write the processed-features cache.
        cache_dir: folder of the processed-features cache (``None`` = ``<cache>/features``).
        progress: show progress bars on long work.
        extra: task-specific context (e.g. the target tokenizer of a translation task).
    """

    tokenizer: Any
    annotator: Any = None
    syntax_inputs: tuple[str, ...] = ()
    parser: str | None = None
    parse_cache: bool | str = True
    max_length: int = 128
    criterion: str = "share"
    max_distance: int = 15
    parser_noise: float = 0.0
    noise_seed: int = 0
    syntax: str = "auto"
    constituency: str = "given"
    pos_tags: str | None = None
    use_cache: bool = True
    cache_dir: str | None = None
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def window_arrays(self, window: Any) -> dict[str, Any]:
        """The model inputs of one aligned window (:func:`syntaxformer.data.collate.window_arrays`)."""
        return window_arrays(window, self.syntax_inputs, self.criterion, self.max_distance, self.pos_tags)

    @property
    def pad_token_id(self) -> int:
        """The tokenizer's pad id (0 for a tokenizer without one)."""
        return self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0


@dataclass
class Predictions:
    """A task's predictions for one split, in example order.

    Attributes:
        ids: example ids (``TaskExample.guid``, SQuAD ``qid``, ...).
        values: one prediction per example, in the task's own terms (a label id, an answer text ...).
        scores: per-example scores for the output files, or ``None``.
        extra: anything else the metrics or the output files need.
    """

    ids: list[str]
    values: list[Any]
    scores: list[Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Task(abc.ABC, Generic[DataT]):
    """One task (family), over split data of type ``DataT``: the class attributes and abstract methods are the
    subclass's; every other hook has a default for a task on a pretrained encoder.

    Class attributes:
        name: registry name (lower case, e.g. ``"sst2"``).
        title: the usual name (``"SST-2"``) for messages and tables.
        head: one of :data:`HEADS`.
        metric_names: metric names; the first is the headline number.
        splits: the split names the task knows (``train`` / ``dev`` / ``test`` by default).
        unused_options: run-config options the task ignores -> what to use instead (``train`` refuses them).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    head: ClassVar[str] = "sequence_classification"
    metric_names: ClassVar[tuple[str, ...]] = ()
    splits: ClassVar[tuple[str, ...]] = ("train", "dev", "test")
    unused_options: ClassVar[Mapping[str, str]] = {}

    def __init__(self, **options: Any):
        if options:
            raise ConfigError(f"task {self.name!r} takes no options, got {sorted(options)}")

    # -- identity --------------------------------------------------------------------------------------
    def options(self) -> dict[str, Any]:
        """The options this task was built with (JSON-serialisable); ``get_task(name, **options)`` rebuilds it."""
        return {}

    @property
    def main_metric(self) -> str:
        """The headline metric (first of :attr:`metric_names`)."""
        return self.metric_names[0]

    def model_options(self) -> dict[str, Any]:
        """Config options the model needs from the task (``num_labels``, ``id2label``, ``problem_type`` ...)."""
        return {}

    @property
    def label_names(self) -> list[str]:
        """Batch keys that hold labels (the Trainer's ``label_names``)."""
        return ["labels"]

    # -- data ------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def load_split(self, split: str, data: Mapping[str, Any]) -> DataT:
        """Read one split (a name from :attr:`splits`) as the run config's data section ``data`` says."""

    @abc.abstractmethod
    def featurize(self, data: DataT, context: TaskContext, split: str) -> Features:
        """Model features of a split."""

    def collator(self, context: TaskContext) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
        """Batches features (pads token ids with the tokenizer's pad id, syntax arrays with -1)."""
        return functools.partial(pad_arrays, pad_token_id=context.pad_token_id)  # picklable for data-loader workers

    def feature_facts(self, features: Features) -> dict[str, Any]:
        """How features were made (``metrics.json``) and the gold ``labels`` array (``dev_predictions.json``):
        a :class:`~syntaxformer.tasks.featurize.FeatureDataset`'s ``meta`` and ``labels``."""
        return {**features.meta, "labels": features.labels} if isinstance(features, FeatureDataset) else {}

    # -- hooks the runner calls ------------------------------------------------------------------------
    def training_defaults(self) -> dict[str, Any]:
        """Run-config defaults of this task; explicit config values win over them."""
        return {}

    def build_tokenizer(self, train_data: DataT, output_dir: str, context: TaskContext) -> Any:
        """A tokenizer learned from the training data (translation: BPE), or ``None`` = the pretrained model's."""
        return None

    def build_model(self, system: str, model_options: Mapping[str, Any], context: TaskContext) -> Any:
        """A model built from scratch for this task, or ``None`` = ``model_class(system, head)``."""
        return None

    def auxiliary_models(self) -> dict[str, dict[str, Any]]:
        """Extra models trained on the same features (``<output_dir>/<name>``): name -> model option changes;
        their raw outputs reach :meth:`postprocess`."""
        return {}

    # -- predictions -----------------------------------------------------------------------------------
    @abc.abstractmethod
    def postprocess(
        self, data: DataT, features: Any, raw: Any, auxiliary: Mapping[str, Any] | None = None
    ) -> Predictions:
        """Raw model outputs for ``features`` (and of the :meth:`auxiliary_models`) -> per-example predictions."""

    @abc.abstractmethod
    def compute_metrics(self, data: DataT, predictions: Predictions) -> dict[str, Any]:
        """Scores of ``predictions`` against the labels of ``data`` (every name in :attr:`metric_names`)."""

    def run_files(self, data: DataT, predictions: Predictions) -> dict[str, Any]:
        """Extra files for the run folder: name -> content (a ``str`` is written as text, anything else as JSON)."""
        return {}

    def evaluation_splits(self) -> tuple[str, ...]:
        """The splits scored after training; the first one's scores are the run's headline."""
        return ("dev",)

    def load_tokenizer(self, run_dir: str, context: TaskContext) -> Any:
        """The tokenizer of a run folder for :meth:`build_tokenizer` tasks, or ``None`` = ``AutoTokenizer``'s."""
        return None

    def syntax_source(self, data: DataT, context: TaskContext) -> dict[str, str] | None:
        """Where the trees of ``data`` come from, in words (``metrics.json``), or ``None``."""
        return None

    def describe_run(self, model: Any) -> dict[str, Any]:
        """Task-specific facts about a trained model for ``metrics.json``."""
        return {}

    def inference_data(self, inputs: Sequence[Mapping[str, Any]]) -> DataT:
        """Raw inputs (mappings without labels) -> what :meth:`featurize` takes (default:
        :func:`text_inputs_data`)."""
        return text_inputs_data(inputs)  # type: ignore[return-value]  # DataT is TaskData for text tasks

    def raw_records(
        self,
        inputs: Sequence[Mapping[str, Any]],
        data: DataT,
        features: Any,
        outputs: Mapping[str, Sequence[Any]],
        model_config: Any,
        options: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """One record per raw input (fields: :mod:`syntaxformer.inference`) from the model's ``outputs`` (key ->
        one row per feature); ``options``: ``logits``, ``top_k``, ``max_answer_length``, ``null_threshold``.
        Default: sequence classification records."""
        if self.head == "sequence_classification":
            return raw_text.classification_records(inputs, outputs["logits"], model_config, bool(options.get("logits")))
        raise ConfigError(f"task {self.name!r} ({self.head}) makes no records of raw inputs")

    def prediction_records(self, data: DataT, predictions: Predictions) -> list[dict[str, Any]]:
        """One record per example of a split (``predictions_<split>.jsonl``): the fields of :meth:`raw_records`
        and the gold answer where known. Default: ``id``, ``prediction`` and ``score``."""
        scores = predictions.scores or [None] * len(predictions.ids)
        return [{"id": i, "prediction": v, "score": s} for i, v, s in zip(predictions.ids, predictions.values, scores)]

    def submission_value(self, value: Any, record: Mapping[str, Any]) -> Any:
        """The ``prediction`` column of ``predictions_<split>.tsv`` for one example (its value and record)."""
        return record_prediction(record)


#: The field that holds the prediction in a record of :meth:`Task.raw_records` / :meth:`Task.prediction_records`.
PREDICTION_FIELDS: tuple[str, ...] = ("label", "value", "answer", "prediction", "translation")


def record_prediction(record: Mapping[str, Any]) -> Any:
    """The prediction of a record (the first of :data:`PREDICTION_FIELDS` it has).

    Raises:
        InputError: a record with none of them.
    """
    for key in PREDICTION_FIELDS:
        if key in record:
            return record[key]
    raise InputError(f"record {dict(record)!r} has no prediction field (one of {', '.join(PREDICTION_FIELDS)})")


def sample_limit(data: Mapping[str, Any], split: str, unit: str = "examples") -> tuple[int | None, int]:
    """``(max_samples, data_seed)`` of a split from the data section (``max_samples``, else the split's
    ``max_{train,eval,predict}_samples``; seed 0 by default).

    Raises:
        ConfigError: a limit below 1, naming its key.
    """
    key = {"train": "max_train_samples", "dev": "max_eval_samples", "test": "max_predict_samples"}[split]
    n = data.get("max_samples")
    n = data.get(key) if n is None else n
    if n is not None and int(n) < 1:
        raise ConfigError(f"{key}={n} must be a positive number of {unit} (or null for all)")
    return (None if n is None else int(n)), (0 if data.get("data_seed") is None else int(data["data_seed"]))


def text_inputs_data(inputs: Sequence[Mapping[str, Any]]) -> TaskData:
    """Unlabeled text (pair) examples of raw inputs with the keys ``text`` and optionally ``text_pair``."""
    examples = [
        TaskExample(
            guid=f"input-{i}", text_a=str(r["text"]), text_b=None if r.get("text_pair") is None else str(r["text_pair"])
        )
        for i, r in enumerate(inputs)
    ]
    return TaskData.of_inputs(examples, ("text_a", "text_b"))


def register_task(
    task: Callable[..., Task], name: str | None = None, *, overwrite: bool = False
) -> Callable[..., Task]:
    """Make a task known to :func:`get_task`, the runner and the CLI in this process (entry points of group
    ``syntaxformer.tasks``: in every process).

    Args:
        task: a :class:`Task` subclass, or any callable returning a Task from keyword options.
        name: the registry name (default: ``task.name``). ``_`` and ``-`` are interchangeable, case is ignored.
        overwrite: replace an existing registration of that name (default: refuse, naming it).

    Returns:
        ``task`` (so this works as a class decorator).
    """
    key = TASKS.key(name or (task.name if isinstance(task, type) and issubclass(task, Task) else ""))
    if not key:
        raise InputError(f"register_task({task!r}): give the task a name (class attribute `name` or name=...)")
    TASKS.register(key, task, overwrite=overwrite)
    return task


def refuse_unknown_options(task: str, unknown: Mapping[str, Any]) -> None:
    """Options a task does not take (a constructor's ``**unknown``): an error naming the ones it does."""
    if unknown:
        raise ConfigError(
            f"option(s) {sorted(unknown)} do not apply to {task}; its options are {list(task_option_names(task))}"
        )


def constructor_options(task: Task) -> dict[str, Any]:
    """:meth:`Task.options` of a task that keeps each constructor option as the attribute of the same name."""
    params = list(inspect.signature(type(task).__init__).parameters.values())[1:]  # after self
    return copy.deepcopy({p.name: getattr(task, p.name) for p in params if p.kind is p.POSITIONAL_OR_KEYWORD})


def task_option_names(name: str) -> tuple[str, ...]:
    """The keyword options a registered task takes (from its constructor's signature), or ``()``."""
    return tuple(task_option_types(name))


def task_option_types(name: str) -> dict[str, Any]:
    """The keyword options of a registered task -> their annotations (``str`` where there is none; ``None`` for all
    when one does not resolve), or ``{}``."""
    key = _ALIASES.get(TASKS.key(str(name)), TASKS.key(str(name)))
    if key not in TASKS:
        return {}
    try:
        factory = TASKS.get(key)
    except SyntaxformerError:
        return {}
    # a class: its own __init__ (mypy's unsoundness warning is about instances, not this)
    target = factory.__init__ if isinstance(factory, type) else factory  # type: ignore[misc]
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return {}
    try:
        hints: dict[str, Any] | None = get_type_hints(target)
    except (NameError, TypeError, ValueError):
        hints = None
    return {
        p.name: None if hints is None else hints.get(p.name, str)
        for p in params
        if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def task_names() -> list[str]:
    """Names of the registered tasks (built-in ones and entry points included), sorted."""
    return TASKS.names()


def get_task(name: str | Task, **options: Any) -> Task:
    """The task called ``name``, built with ``options``; a :class:`Task` instance is returned as it is.

    Raises:
        UnknownTaskError: ``name`` is not registered; the message lists the known tasks.
    """
    if isinstance(name, Task):
        if options:
            raise InputError(f"get_task: options {sorted(options)} given with an already built task")
        return name
    key = TASKS.key(str(name))
    key = _ALIASES.get(key, key)
    if key not in TASKS:
        raise TASKS.unknown(name)
    return TASKS.get(key)(**options)


#: Other spellings of built-in task names.
_ALIASES: dict[str, str] = {
    "sst-2": "sst2",
    "sts-b": "stsb",
    "sts": "stsb",
    "sst-5": "sst5",
    "sst-1": "sst5",
    "sst1": "sst5",
    "sst2trees": "sst2-trees",
    "sst-2-trees": "sst2-trees",
}
