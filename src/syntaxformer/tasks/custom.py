"""Your own data, ``run_glue`` / ``run_qa`` / ``run_swag`` style: tasks defined by files and column names.

* ``custom`` (:class:`CustomTextTask`): text (pair) classification or regression from table files or a
  ``datasets`` source; the label kind is inferred from the training labels (:func:`infer_labels`).
* ``custom-qa`` (:class:`CustomQATask`): extractive QA on your own SQuAD-format JSON.
* ``custom-mc`` (:class:`CustomChoiceTask`): multiple choice from rows with a question, its options and the
  answer, with an optional context passage.

Everything that defines the task (columns, labels, label kind) is a task option, recorded in ``run.json`` once
the training labels are known. Where each split comes from: :mod:`syntaxformer.tasks.custom_splits`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from syntaxformer.data.examples import TaskData, TaskExample, content_fingerprint
from syntaxformer.data.readers.race import OPTION_LETTERS, RaceExample
from syntaxformer.data.readers.table import TABLE_FORMATS, Table, TableExamples, read_table, require_columns, text_value
from syntaxformer.errors import ConfigError, DataError, FormatError
from syntaxformer.tasks.base import (
    Predictions,
    constructor_options,
    refuse_unknown_options,
    register_task,
    sample_limit,
)
from syntaxformer.tasks.custom_splits import rows_for, split_names
from syntaxformer.tasks.race import RaceTask, choice_records
from syntaxformer.tasks.sentence import SentenceTask, TaskSpec
from syntaxformer.tasks.squad import SquadTask

__all__ = [
    "PROBLEM_TYPES",
    "CustomChoiceTask",
    "CustomQATask",
    "CustomTextTask",
    "TableExamples",
    "check_labels",
    "infer_labels",
    "is_squad_json",
    "task_for_data",
]

logger = logging.getLogger(__name__)


#: ``problem_type`` values: ``auto`` infers it from the training labels.
PROBLEM_TYPES: tuple[str, ...] = ("auto", "single_label_classification", "regression")


def is_squad_json(path: str | Path) -> bool:
    """Whether ``path`` is a SQuAD-format JSON file (``{"data": [{"paragraphs": [...]}, ...]}``)."""
    p = Path(path)
    if p.suffix.lower() != ".json" or not p.is_file():
        return False
    try:
        with open(p, encoding="utf-8-sig") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return False  # read_table gives the real error
    articles = data.get("data") if isinstance(data, Mapping) else None
    return (
        bool(articles)
        and isinstance(articles, list)
        and isinstance(articles[0], Mapping)
        and "paragraphs" in articles[0]
    )


def task_for_data(train_file: str | None, dataset: str | None = None, columns_given: Sequence[str] = ()) -> str:
    """The custom task for data when no task is named: ``custom-qa`` for SQuAD-format JSON, ``custom-mc`` for rows
    with ``question`` and ``options`` columns (and no text column given), else ``custom``."""
    if train_file and is_squad_json(train_file):
        return "custom-qa"
    if (
        train_file
        and not columns_given
        and Path(train_file).is_file()
        and Path(train_file).suffix.lower() in TABLE_FORMATS
    ):
        try:
            columns = read_table(train_file).columns
        except (DataError, FormatError):
            return "custom"  # the task reports the problem with its own message
        if {"question", "options"} <= set(columns):
            return "custom-mc"
    return "custom"


def _is_int(text: str) -> bool:
    try:
        int(text)
        return True
    except ValueError:
        return False


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _present(value: Any) -> bool:
    return (
        value is not None
        and not (isinstance(value, str) and not value.strip())
        and not (isinstance(value, float) and math.isnan(value))
    )


def _distinct_columns(task: Any) -> None:
    """Each column of a :class:`CustomTextTask` has one role (else an error naming both options)."""
    seen: dict[str, str] = {}
    for option, column in {
        "text_column (--text-column)": task.text_column,
        "text_pair_column (--text-pair-column)": task.text_pair_column,
        "label_column (--label-column)": task.label_column,
        "id_column (--id-column)": task.id_column,
    }.items():
        if not column:
            continue
        if column in seen:
            raise ConfigError(
                f"{seen[column]} and {option} both name the column {column!r}; a column is either the "
                "text, the second text, the label or the id"
            )
        seen[column] = option


#: Label texts that are not values (``str()`` of a NaN or infinite float; "none" / "NA" may be class names).
_MISSING_LABELS = frozenset({"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"})


def _label_kind(value: Any) -> str | None:
    """``"int"``, ``"number"`` (another finite number), ``"word"``, ``"other"`` or ``None`` (no label)."""
    if isinstance(value, bool):
        return "word"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        if not text or text.lower() in _MISSING_LABELS:
            return None
        if _is_int(text):
            return "int"
        try:
            number = float(text)
        except ValueError:
            return "word"
        return "number" if math.isfinite(number) else None
    return "other"


def check_labels(values: Sequence[Any], where: Sequence[str], column: str, regression: bool = False) -> None:
    """Training labels that can be learned: each row has one, and they are all of one kind.

    Args:
        values: the label of each row, as read.
        where: each row's place, for messages (``"train.csv:7"``).
        column: the label column, for messages.
        regression: the task is a regression (a label that is not a number is refused when it is read).

    Raises:
        DataError: a missing, blank, ``nan`` or infinite label; a list / object label; class names mixed with
            numbers (naming the odd value and its row).
    """
    kinds = []
    for value, place in zip(values, where):
        kind = _label_kind(value)
        if kind is None:
            shown = (
                "no label"
                if value is None or (isinstance(value, str) and not value.strip())
                else f"the label {value!r} is not a value"
            )
            raise DataError(
                f"{place}: {shown} in column {column!r}; every training row needs its label (remove "
                "the row or fill in its label)"
            )
        if kind == "other":
            raise DataError(
                f"{place}: the label {value!r} in column {column!r} is a {type(value).__name__}; a "
                "label is a class name or a number"
            )
        kinds.append(kind)
    words = [k == "word" for k in kinds]
    if regression:  # each label is read as a number, and one that is not is refused, naming its row
        return
    if any(words) and not all(words):  # class names and numbers: one of them is a stray value
        odd = not (sum(words) * 2 >= len(words))  # the minority kind
        k = words.index(odd)
        kind = "a number" if not odd else "a word"
        others = "class names" if odd is False else "numbers"
        raise DataError(
            f"{where[k]}: the label {values[k]!r} in column {column!r} is {kind} among {others} "
            f"({sum(words)} word and {len(words) - sum(words)} number labels); labels must be all class "
            "names or all numbers"
        )


def infer_labels(values: Sequence[Any]) -> tuple[str, list[str] | None]:
    """``("single_label_classification", class names)`` or ``("regression", None)`` for training labels
    (``run_glue``'s rule): whole numbers and text are classes, any other number makes a regression."""
    present = [v for v in values if _present(v)]
    if any(isinstance(v, float) for v in present) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in present
    ):
        return "regression", None
    texts = [str(v).strip() for v in present]
    if texts and all(_is_int(t) for t in texts):
        return "single_label_classification", [str(n) for n in sorted({int(t) for t in texts})]
    if texts and all(_is_number(t) for t in texts):
        return "regression", None
    return "single_label_classification", sorted(set(texts))


def _label_key(value: Any) -> str:
    """A class label as its name (``1`` and ``"1"`` are the same class)."""
    text = str(value).strip()
    return str(int(text)) if _is_int(text) else text


class CustomTextTask(SentenceTask):
    """Text (pair) classification or regression on the user's own files (``run_glue`` conventions).

    Args:
        text_column: the column of the text; ``None`` = ``sentence1`` (with ``sentence2`` as the pair),
            ``text`` or ``sentence``, or the only column that is not the label.
        text_pair_column: the column of the second text of a pair, or ``None``.
        label_column: the column of the label.
        id_column: a column of example ids, or ``None`` = the row number.
        labels: the class names in class-id order; ``None`` = inferred from the training labels.
        problem_type: one of :data:`PROBLEM_TYPES`.
        validation_fraction, split_seed: without validation data, the seeded share of the training rows held
            out as ``dev``.
    """

    name = "custom"
    title = "custom data"
    metric_names: ClassVar[tuple[str, ...]] = ("accuracy",)

    def __init__(
        self,
        text_column: str | None = None,
        text_pair_column: str | None = None,
        label_column: str = "label",
        id_column: str | None = None,
        labels: Sequence[Any] | None = None,
        problem_type: str = "auto",
        validation_fraction: float = 0.1,
        split_seed: int = 0,
        **unknown: Any,
    ):
        refuse_unknown_options(self.name, unknown)
        if problem_type not in PROBLEM_TYPES:
            raise ConfigError(f"problem_type={problem_type!r} is not valid; choose one of {PROBLEM_TYPES}")
        if labels is not None and (isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence)):
            raise ConfigError(f"labels={labels!r} must be a list of class names")
        if labels is not None and problem_type == "regression":
            raise ConfigError("labels are class names; a regression (problem_type=regression) has none")
        if not 0.0 <= float(validation_fraction) < 1.0:
            raise ConfigError(f"validation_fraction={validation_fraction} must lie in [0, 1)")
        if not label_column:
            raise ConfigError("label_column must name the column of the labels (--label-column)")
        self.text_column, self.text_pair_column = text_column, text_pair_column
        self.label_column, self.id_column = label_column, id_column
        _distinct_columns(self)
        self.label_list: list[str] | None = None
        if labels is not None:
            self.label_list = [_label_key(v) for v in labels]
            if len(set(self.label_list)) != len(self.label_list):
                raise ConfigError(f"labels={list(labels)} names a class twice")
        self.problem_type = (
            "single_label_classification" if self.label_list is not None and problem_type == "auto" else problem_type
        )
        self.validation_fraction, self.split_seed = float(validation_fraction), int(split_seed)
        self._update_spec()

    # -- identity ----------------------------------------------------------------------------------------
    def options(self) -> dict[str, Any]:
        return {**constructor_options(self), "labels": self.label_list}

    def _update_spec(self) -> None:
        """The instance's :class:`TaskSpec` (labels, metrics) from what is known so far."""
        regression = self.problem_type == "regression"
        columns = {"text_a": self.text_column or "", "label": self.label_column}
        if self.text_pair_column:
            columns["text_b"] = self.text_pair_column
        metrics = ("pearson", "spearman") if regression else ("accuracy",)
        self.metric_names = metrics  # type: ignore[misc]  # per instance: the label kind is known late
        self.spec = TaskSpec(  # type: ignore[misc]  # ClassVar set on the instance, on purpose
            self.name,
            self.title,
            "",
            columns,
            None if regression else tuple(self.label_list or ()),
            metrics,
            ("", None),
            {},
        )

    def _check_known(self) -> None:
        if self.problem_type == "auto" or (self.problem_type != "regression" and self.label_list is None):
            raise DataError(
                "the custom task does not know its labels yet: read the training split first (or "
                "give labels=[...] and problem_type)"
            )

    def model_options(self) -> dict[str, Any]:
        self._check_known()
        return super().model_options()

    @property
    def label_dtype(self) -> Any:
        self._check_known()
        return super().label_dtype

    # -- data --------------------------------------------------------------------------------------------
    def _resolve_columns(self, table: Table) -> None:
        """Fill in ``text_column`` / ``text_pair_column`` from the columns of the training table when not given."""
        if self.text_column:
            return
        cols = table.columns
        if "sentence1" in cols:
            self.text_column = "sentence1"
            if self.text_pair_column is None and "sentence2" in cols:
                self.text_pair_column = "sentence2"
        elif "text" in cols or "sentence" in cols:
            self.text_column = "text" if "text" in cols else "sentence"
        else:
            rest = [c for c in cols if c not in (self.label_column, self.id_column, self.text_pair_column)]
            if len(rest) != 1:
                raise DataError(
                    f"{table.source}: which column holds the text? Its columns are {cols}; give "
                    "--text-column (text_column), and --text-pair-column for pairs"
                )
            self.text_column = rest[0]
        _distinct_columns(self)
        self._update_spec()

    def load_split(self, split: str, data: Mapping[str, Any]) -> TaskData:
        """Read ``train``, ``dev`` (``validation``) or ``test`` (:func:`~syntaxformer.tasks.custom_splits.rows_for`);
        reading ``train`` fixes the text columns and the labels when they were not given.

        Raises:
            DataError: no data for the split, a missing column, a row without text or label, a ``dev`` / ``test``
                label that the training labels do not have.
            FormatError: a malformed file; a regression label that is not a number.
        """
        split = split_names(split)
        table, positions, source = rows_for(split, data, self.validation_fraction, self.split_seed, self.title)
        if split == "train" or (self.text_column is None and split == "dev"):
            self._resolve_columns(table)
        if self.text_column is None:
            raise DataError(f"{self.title}: read the training split first, or give text_column (--text-column)")
        labeled = split != "test" or self.label_column in table.columns
        require_columns(
            table,
            {
                "text": self.text_column,
                "text_pair": self.text_pair_column,
                "label": self.label_column if labeled else None,
                "id": self.id_column,
            },
        )
        if split == "train":
            values = [table.rows[i].get(self.label_column) for i in positions]
            regression = self.problem_type == "regression"
            check_labels(values, [table.where(i) for i in positions], self.label_column, regression=regression)
            if not regression and self.label_list is None:
                self._learn_labels(values, table.label_names.get(self.label_column), source)
        self._check_known()
        if not len(positions):
            raise DataError(f"{self.title} {split} data from {source} is empty")
        for i in positions:  # every row is checked now; its example is made again when it is read
            self._example(table, i, split, labeled)
        examples = TableExamples(functools.partial(self._example, table, split=split, labeled=labeled), positions)
        fp = hashlib.sha256(
            json.dumps(
                [table.fingerprint, positions if len(positions) != len(table) else None, self.options()], sort_keys=True
            ).encode()
        ).hexdigest()
        out = TaskData(examples, source, fp, len(examples), metadata={"problem_type": self.problem_type})
        return out.subsampled(*sample_limit(data, split))

    def _learn_labels(self, values: Sequence[Any], declared: Sequence[Any] | None, source: str) -> None:
        """The class names (with ``auto``: the label kind) from the training labels, or in the order of the
        data set's own class names (a ``datasets`` ClassLabel)."""
        if declared:
            kind, self.label_list = "single_label_classification", [_label_key(v) for v in declared]
        else:
            kind, names = infer_labels(values)
            self.label_list = names if names is not None else sorted({_label_key(v) for v in values if _present(v)})
        if self.problem_type == "auto":
            self.problem_type = kind
        if self.problem_type == "regression":
            self.label_list = None
        self._update_spec()
        if self.label_list is not None and len(self.label_list) < 2:
            raise DataError(
                f"{source}: every training label is {self.label_list}; classification needs at least two classes"
            )

    def _example(self, table: Table, i: int, split: str, labeled: bool) -> TaskExample:
        row = table.rows[i]
        assert self.text_column is not None  # load_split() refuses a task without one
        text = text_value(row.get(self.text_column), table.where(i), self.text_column)
        pair = None
        if self.text_pair_column:
            pair = text_value(row.get(self.text_pair_column), table.where(i), self.text_pair_column)
        guid = f"{split}-{row[self.id_column]}" if self.id_column else f"{split}-{i}"
        label = row.get(self.label_column) if labeled else None
        if not _present(label):
            if split != "test" and labeled:
                raise DataError(f"{table.where(i)}: no label in column {self.label_column!r}")
            label = None
        if label is not None:
            label = self._label_id(label, table, i, split)
        return TaskExample(guid=guid, text_a=str(text), text_b=None if pair is None else str(pair), label=label)

    def _label_id(self, value: Any, table: Table, i: int, split: str) -> int | float:
        if self.problem_type == "regression":
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise FormatError(
                    f"label {value!r} in column {self.label_column!r} is not a number (this task is a regression)",
                    table.where(i),
                ) from None
            if not math.isfinite(number):
                raise FormatError(f"label {value!r} is not a finite number", table.where(i))
            return number
        key = _label_key(value)
        assert self.label_list is not None  # _check_known() refuses a classification without labels
        try:
            return self.label_list.index(key)
        except ValueError:
            where = "training labels" if split != "train" else "labels given"
            raise DataError(
                f"{table.where(i)}: label {key!r} is not one of the {where} {self.label_list}; a "
                f"{split} label must be a class seen in training"
            ) from None

    def fingerprint_extra(self, split: str) -> str:
        return json.dumps(self.options(), sort_keys=True)

    # -- predictions -------------------------------------------------------------------------------------
    def postprocess(
        self, data: TaskData, features: Any, raw: Any, auxiliary: Mapping[str, Any] | None = None
    ) -> Predictions:
        """Class ids (regression: values) with the class probabilities as ``scores``."""
        out = super().postprocess(data, features, raw, auxiliary)
        if self.problem_type != "regression":
            logits = np.asarray(raw[0] if isinstance(raw, (tuple, list)) else raw, dtype=np.float64)
            probs = np.exp(logits - logits.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
            out.scores = [{n: round(float(p), 6) for n, p in zip(self.label_list or (), row)} for row in probs]
        return out


class CustomQATask(SquadTask):
    """Extractive QA on your own SQuAD-format JSON (1.1 or 2.0): :class:`~syntaxformer.tasks.squad.SquadTask`
    (its options) with no default data."""

    name = "custom-qa"
    title = "span QA"

    def load_split(self, split: str, data: Mapping[str, Any]) -> Any:
        split = split_names(split)
        if not data.get("dataset") and not data.get("train_file") and split != "test":
            raise DataError(
                "custom-qa: give a SQuAD-format JSON training file (--train-file; "
                '{"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]})'
            )
        out = super().load_split(split, data)
        if split == "dev" and out.metadata.get("split"):  # no dev file: articles held out of the training file
            logger.info(
                "%s: no validation file given (--validation-file): dev is %s", self.title, out.metadata["split"]
            )
        return out


class CustomChoiceTask(RaceTask):
    """Multiple choice on the user's own rows: a question, its options and the answer, with an optional context.

    Args:
        question_column: the column of the question.
        options_column: the column of the options (a list; in CSV / TSV a JSON list).
        answer_column: the column of the answer: the option's index (0-based), its letter or its text.
        context_column: the column of a passage, or ``None`` = ``context`` / ``article`` / ``passage`` when the
            file has one.
        id_column: a column of question ids, or ``None`` = the row number.
        validation_fraction, split_seed: as :class:`CustomTextTask`'s.

    Without a context the question alone is the first text; the metric is accuracy (percent).
    """

    name = "custom-mc"
    title = "multiple choice"
    metric_names: ClassVar[tuple[str, ...]] = ("accuracy",)

    def __init__(
        self,
        question_column: str = "question",
        options_column: str = "options",
        answer_column: str = "answer",
        context_column: str | None = None,
        id_column: str | None = None,
        validation_fraction: float = 0.1,
        split_seed: int = 0,
        **unknown: Any,
    ):
        refuse_unknown_options(self.name, unknown)
        if not 0.0 <= float(validation_fraction) < 1.0:
            raise ConfigError(f"validation_fraction={validation_fraction} must lie in [0, 1)")
        self.question_column, self.options_column, self.answer_column = question_column, options_column, answer_column
        self.context_column, self.id_column = context_column, id_column
        self.validation_fraction, self.split_seed = float(validation_fraction), int(split_seed)

    def options(self) -> dict[str, Any]:
        return constructor_options(self)

    def training_defaults(self) -> dict[str, Any]:
        return {**super().training_defaults(), "max_length": 128}

    def load_split(self, split: str, data: Mapping[str, Any]) -> Any:
        """The questions of ``split`` as :class:`~syntaxformer.data.readers.race.RaceExample` s (``level``
        ``"all"``, ``article`` the context).

        Raises:
            DataError: no data, a missing column, fewer than two options, an answer that names no option.
        """
        split = split_names(split)
        table, positions, source = rows_for(split, data, self.validation_fraction, self.split_seed, self.title)
        if split == "train" and self.context_column is None:
            self.context_column = next((c for c in ("context", "article", "passage") if c in table.columns), None)
        labeled = split != "test" or self.answer_column in table.columns
        require_columns(
            table,
            {
                "question": self.question_column,
                "options": self.options_column,
                "answer": self.answer_column if labeled else None,
                "context": self.context_column,
                "id": self.id_column,
            },
        )
        if not len(positions):
            raise DataError(f"{self.title} {split} data from {source} is empty")
        examples = TableExamples(functools.partial(self._example, table, split=split, labeled=labeled), positions)
        # every row is checked now (and fingerprinted); its example is made again when it is read
        fp = content_fingerprint([e.qid, e.article, e.question, e.options, e.label] for e in examples)
        out = TaskData(examples, source, fp, len(examples), None, {})
        return out.subsampled(*sample_limit(data, split))

    def _example(self, table: Table, i: int, split: str, labeled: bool) -> RaceExample:
        row = table.rows[i]
        options = row.get(self.options_column)
        if isinstance(options, str):
            try:
                options = json.loads(options)
            except json.JSONDecodeError:
                raise FormatError(
                    f"options {options!r} (column {self.options_column!r}) are not a JSON list", table.where(i)
                ) from None
        if not isinstance(options, list) or len(options) < 2 or not all(_present(o) for o in options):
            raise DataError(
                f"{table.where(i)}: column {self.options_column!r} must hold a list of at least two "
                f"non-empty options, got {options!r}"
            )
        options = [str(o) for o in options]
        question = row.get(self.question_column)
        if not _present(question):
            raise DataError(f"{table.where(i)}: no question in column {self.question_column!r}")
        context = str(row.get(self.context_column) or "") if self.context_column else ""
        if not context.strip():  # no passage: the question is the first text, scored with each option
            context, question = str(question), ""
        answer = row.get(self.answer_column) if labeled else None
        label = None if not _present(answer) else self._answer_index(answer, options, table, i)
        if label is None and split != "test":
            raise DataError(f"{table.where(i)}: no answer in column {self.answer_column!r}")
        qid = str(row[self.id_column]) if self.id_column else f"{split}-{i}"
        return RaceExample(
            qid=qid, passage_id=qid, level="all", article=context, question=str(question), options=options, label=label
        )

    def _answer_index(self, answer: Any, options: list[str], table: Table, i: int) -> int:
        if (isinstance(answer, int) and not isinstance(answer, bool)) or (isinstance(answer, str) and _is_int(answer)):
            index = int(answer)
        elif (
            isinstance(answer, str)
            and len(answer.strip()) == 1
            and answer.strip().upper() in OPTION_LETTERS
            and answer.strip() not in options
        ):
            index = OPTION_LETTERS.index(answer.strip().upper())
        elif str(answer) in options:
            index = options.index(str(answer))
        else:
            raise DataError(
                f"{table.where(i)}: answer {answer!r} is neither an option's index, its letter nor "
                f"its text; options: {options}"
            )
        if not 0 <= index < len(options):
            raise DataError(f"{table.where(i)}: answer {answer!r} is out of range for {len(options)} options")
        return index

    def compute_metrics(self, data: Any, predictions: Predictions) -> dict[str, Any]:
        """``accuracy`` (percent) and ``n``."""
        gold = [e.label for e in data.examples]
        if any(g is None for g in gold):
            raise DataError(f"{self.title} data ({data.source}) has no answers to score predictions against")
        correct = sum(int(p == g) for p, g in zip(predictions.values, gold))
        return {"accuracy": 100.0 * correct / len(gold), "n": len(gold)}

    def _question_facts(self, e: RaceExample, prediction: int) -> dict[str, Any]:
        return {"option": e.options[prediction]}

    def prediction_records(self, data: Any, predictions: Predictions) -> list[dict[str, Any]]:
        """Per question, as RACE's (:func:`~syntaxformer.tasks.race.choice_records`)."""
        return choice_records(data.examples, predictions, lambda e: e.question or e.article)


register_task(CustomTextTask)
register_task(CustomQATask)
register_task(CustomChoiceTask)
