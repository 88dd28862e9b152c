"""Predictions on raw text with a trained model: parse on the fly, featurize, batch, forward, one record per input.

The one code path behind ``syntaxformer predict MODEL --input FILE`` and the ``transformers`` pipelines
(:mod:`syntaxformer.pipelines`); the steps themselves are :mod:`syntaxformer.modeling.raw_text`'s, shared with an
exported folder's pipelines. ``docs/inference.md`` shows its use and lists the fields of a record, per head.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from syntaxformer.data.collate import pad_arrays
from syntaxformer.data.readers.table import read_table, text_value
from syntaxformer.errors import ConfigError, DataError, FormatError, InputError
from syntaxformer.modeling.raw_text import (
    HEAD_INPUTS,
    check_inputs,
    class_head,
    classification_records,
    label_names,
    model_outputs,
    run_batches,
)
from syntaxformer.modeling.seq2seq import generate_ids
from syntaxformer.tasks.base import TaskContext, get_task, text_inputs_data
from syntaxformer.tasks.featurize import annotator_for, build_features
from syntaxformer.training.blocks import build_context, check_max_length, load_tokenizer, position_limit
from syntaxformer.training.config import RunConfig
from syntaxformer.training.run import load_run, load_saved_model
from syntaxformer.training.run_folder import RUN_FILE
from syntaxformer.utils import atomic_write

__all__ = [
    "INPUT_FORMATS",
    "Predictor",
    "model_head",
    "num_beams",
    "read_inputs",
    "tuned_null_threshold",
    "write_records",
]

logger = logging.getLogger(__name__)

#: File suffixes :func:`read_inputs` reads.
INPUT_FORMATS: tuple[str, ...] = (".txt", ".csv", ".tsv", ".jsonl", ".json")


def model_head(model: Any) -> str:
    """The head of a model (``"sequence_classification"``, ``"question_answering"``, ``"seq2seq"`` ...), from its class
    name. Raises ConfigError: a model class of no known head."""
    name = type(model).__name__
    head = class_head(name)
    if head is not None:
        return head
    raise ConfigError(
        f"{name} is not a task model (expected a class named ...ForSequenceClassification, "
        "...ForQuestionAnswering, ...ForMultipleChoice or ...ForConditionalGeneration)"
    )


class _TimedAnnotator:
    """An annotator that adds the seconds spent parsing to ``clock["parse_s"]`` (everything else is the wrapped
    one's: source, cache_key, name ...)."""

    def __init__(self, annotator: Any, clock: dict[str, float]):
        self._annotator = annotator
        self._clock = clock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._annotator, name)
        if name not in ("annotate", "annotate_pretokenized"):
            return value

        def timed(texts: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return value(texts)
            finally:
                self._clock["parse_s"] += time.perf_counter() - t0

        return timed


class Predictor:
    """A trained model ready for raw inputs.

    Build it with :meth:`from_run` (a run folder of ``syntaxformer train``) or :meth:`from_pretrained` (a model
    folder or a loaded model without a run record: the default parser and options).

    Args:
        model: the task model (``...ForSequenceClassification``, ``...ForQuestionAnswering``, the translation model).
        context: the featurization context (:class:`~syntaxformer.tasks.base.TaskContext`).
        task: the run's task, or ``None`` (sentence classification without a run record).
        auxiliary: the task's auxiliary models by name (SQuAD's parallel verifier).
        null_threshold, num_beams: span QA's no-answer threshold (``None``: the task's); translation's beam size.
    """

    def __init__(
        self,
        model: Any,
        context: Any,
        task: Any = None,
        auxiliary: Mapping[str, Any] | None = None,
        null_threshold: float | None = None,
        num_beams: int = 5,
    ):
        self.model = model.eval()
        self.context = context
        self.task = task
        self.head = task.head if task is not None else model_head(model)
        if self.head not in HEAD_INPUTS:
            raise ConfigError(
                f"predicting raw inputs supports sequence classification, span QA, multiple choice "
                f"and translation models, not {self.head} ({type(model).__name__})"
            )
        if self.head in ("question_answering", "multiple_choice") and task is None:
            raise InputError(f"a {self.head} predictor needs its task (get_task('squad2') / get_task('race'))")
        self.auxiliary = {k: v.eval() for k, v in (auxiliary or {}).items()}
        self.null_threshold = null_threshold
        self.num_beams = int(num_beams)
        self.timings: dict[str, float] = {}

    # -- construction ------------------------------------------------------------------------------------
    @classmethod
    def from_run(
        cls,
        run_dir: str | os.PathLike,
        *,
        changes: Mapping[str, Any] | None = None,
        model: Any = None,
        tokenizer: Any = None,
        device: Any = None,
        parse_cache: bool | str | None = None,
        null_threshold: float | None = None,
        trust_remote_code: bool | None = None,
    ) -> Predictor:
        """The model of a run folder with the run's task, parser and feature options.

        Args:
            run_dir: a folder written by ``syntaxformer train`` (``run.json`` and the saved model).
            changes: run-config changes (``{"parser": ..., "max_length": ...}``).
            model, tokenizer: already loaded ones (a pipeline's), else loaded from ``run_dir``.
            device: where the model runs (default: its device, else CUDA when available).
            parse_cache: override the run's parse cache (``False``: parse every text afresh).
            null_threshold: span QA: the no-answer threshold (default: the one tuned on the run's dev articles,
                ``metrics.json``, else the task's ``null_threshold``).
            trust_remote_code: let the run import the modules its ``run.json`` names (a part registered in code
                outside syntaxformer; :func:`~syntaxformer.training.run.load_run`).

        Raises:
            DataError: ``run_dir`` is not a finished run with a saved model.
        """
        config, task = load_run(run_dir, changes, trust_remote_code=trust_remote_code)
        prep = TaskContext(tokenizer=None, parser=config.parser, parse_cache=config.parse_cache, progress=False)
        if model is None:
            model = load_saved_model(run_dir, task.head)
        if task.head == "seq2seq" or tokenizer is None:
            tokenizer = task.load_tokenizer(str(run_dir), prep) or tokenizer or load_tokenizer(str(run_dir))
        if task.head != "seq2seq":
            check_max_length(config.max_length, model.config, run_dir)
        context = _for_raw_text(build_context(config, tokenizer, model.config), prep, parse_cache)
        # SQuAD's parallel verifier, saved in <run_dir>/<name>
        auxiliary = {name: load_saved_model(Path(run_dir) / name, task.head) for name in task.auxiliary_models()}
        if null_threshold is None and task.head == "question_answering":
            null_threshold = tuned_null_threshold(run_dir)
        return cls(model, context, task, auxiliary, null_threshold, num_beams(config, task)).to(device)

    @classmethod
    def from_pretrained(
        cls,
        model: Any,
        tokenizer: Any = None,
        *,
        task: Any = None,
        parser: str | None = None,
        max_length: int | None = None,
        parse_cache: bool | str | None = None,
        device: Any = None,
        **options: Any,
    ) -> Predictor:
        """A predictor for a model folder or a loaded model: :meth:`from_run` when the folder holds ``run.json``,
        else the default parser and options (``max_length`` 128; 384 for span QA). A plain ``transformers``
        classifier (no ``syntax_inputs`` in its config) works too: its texts are tokenized, not parsed.

        Args:
            model: a folder or a loaded task model.
            tokenizer: its tokenizer (default: loaded from the folder).
            task: a task name or :class:`~syntaxformer.tasks.base.Task` (default: ``squad2`` for span QA,
                ``race`` for multiple choice, ``translation`` for the translation model, none for classification).
            parser, max_length, parse_cache: featurization options (default: the run's, else the library's).
            device: where the model runs.
            options: more :class:`~syntaxformer.training.RunConfig` options (``criterion``, ``syntax`` ...).
        """
        folder = model if isinstance(model, (str, os.PathLike)) else getattr(model, "name_or_path", None)
        changes = {k: v for k, v in {"parser": parser, "max_length": max_length, **options}.items() if v is not None}
        if task is None and folder and (Path(folder) / RUN_FILE).is_file():
            return cls.from_run(
                folder,
                changes=changes,
                model=None if isinstance(model, (str, os.PathLike)) else model,
                tokenizer=tokenizer,
                device=device,
                parse_cache=parse_cache,
            )
        if isinstance(model, (str, os.PathLike)):
            model = load_saved_model(model, None)
        head = model_head(model)
        if task is None:
            task = {"question_answering": "squad2", "multiple_choice": "race", "seq2seq": "translation"}.get(head)
        task = get_task(task) if isinstance(task, str) else task
        prep = TaskContext(tokenizer=None, parser=parser, progress=False)
        if head == "seq2seq":
            if not folder:
                raise InputError(
                    "a translation model given as an object needs its folder (model.name_or_path) "
                    "for its source_tokenizer/ and target_tokenizer/"
                )
            tokenizer = task.load_tokenizer(str(folder), prep)
        elif tokenizer is None:
            if not folder:
                raise InputError("give the tokenizer of a model that has no folder (model.name_or_path)")
            tokenizer = load_tokenizer(str(folder))
        defaults = task.training_defaults() if task is not None else {}
        if "max_length" not in changes:  # the task's default, within what the model can read
            limit = position_limit(model.config) if head != "seq2seq" else None
            changes["max_length"] = min(int(defaults.get("max_length", 128)), limit or 1 << 30)
        config = RunConfig(**{k: v for k, v in changes.items() if k != "task"})
        if head != "seq2seq":
            check_max_length(config.max_length, model.config, folder or type(model).__name__)
        if hasattr(model.config, "syntax_inputs"):
            context = build_context(config, tokenizer, model.config)
        else:  # a plain transformers model: tokenized only, nothing parsed
            context = TaskContext(tokenizer=tokenizer, max_length=int(config.max_length))
        context = _for_raw_text(context, prep, parse_cache)
        return cls(model, context, task, None, None, int(defaults.get("generation_num_beams", 5))).to(device)

    def to(self, device: Any = None) -> Predictor:
        """Move the model (and auxiliary models) to ``device`` (``None``: CUDA when available for a model on the
        CPU, else where it is)."""
        if device is None:
            device = self.device
            if device.type == "cpu" and torch.cuda.is_available():
                device = torch.device("cuda")
        self.model.to(device)
        for m in self.auxiliary.values():
            m.to(device)
        return self

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    @property
    def label_names(self) -> list[str]:
        """Class names in class-id order (``config.id2label``) of a classification model."""
        return label_names(self.model.config)

    # -- prediction --------------------------------------------------------------------------------------
    def predict(
        self,
        inputs: Iterable[Any],
        batch_size: int = 32,
        *,
        logits: bool = False,
        top_k: int | None = None,
        max_answer_length: int | None = None,
    ) -> list[dict[str, Any]]:
        """One record per input, in input order (the fields per head: ``docs/inference.md``).

        ``self.timings`` then holds ``parse_s`` (the parser), ``featurize_s`` (alignment and syntax arrays, without
        parsing), ``forward_s`` (batching and the model, generation for translation), ``total_s`` and ``n``.

        Args:
            inputs: texts, ``(text, text_pair)`` tuples or mappings with the keys the head reads
                (:func:`~syntaxformer.modeling.raw_text.check_inputs`).
            batch_size: inputs per forward pass.
            logits: sequence classification: each record also holds ``logits``, the model's outputs as they are.
            top_k: span QA: each record also holds ``answers``, the ``top_k`` best spans of different positions
                (``{"answer", "start", "end", "score"}``, best first; fewer when the passage has fewer).
            max_answer_length: span QA: the longest answer span in tokens (default: the task's).

        Raises:
            InputError: an option for another head, a value that is not a positive number, or a bad input (its
                position named).
        """
        for name, value, head in (
            ("logits", logits or None, "sequence_classification"),
            ("top_k", top_k, "question_answering"),
            ("max_answer_length", max_answer_length, "question_answering"),
        ):
            if value is None:
                continue
            if self.head != head:
                raise InputError(f"{name}= applies to {head} models, not to this {self.head} model")
            if name != "logits" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InputError(f"{name}={value!r} must be a positive whole number")
        records = check_inputs(inputs, self.head, name="Predictor.predict")[0]
        clock = {"parse_s": 0.0}
        t0 = time.perf_counter()
        if not records:
            self.timings = {"parse_s": 0.0, "featurize_s": 0.0, "forward_s": 0.0, "total_s": 0.0, "n": 0}
            return []
        context = self.context
        if context.syntax_inputs:
            inner = annotator_for(context)  # built once, kept in context.annotator
            context.annotator = _TimedAnnotator(inner, clock)
        try:
            data, features = self._featurize(records)
        finally:
            if context.syntax_inputs:
                context.annotator = inner
        t1 = time.perf_counter()
        if self.head == "seq2seq":  # the one decoding path of every translation
            ids = generate_ids(
                self.model, features, int(batch_size), show_progress=bool(context.progress), num_beams=self.num_beams
            )
            outputs: Any = {"ids": list(ids)}
        else:
            collate = (
                self.task.collator(context)
                if self.task is not None
                else functools.partial(pad_arrays, pad_token_id=context.pad_token_id)
            )
            outputs = run_batches(
                features,
                collate,
                lambda batch: model_outputs(self.model, batch, **self.auxiliary),
                int(batch_size),
                self.device,
            )
        options: dict[str, Any] = {"logits": bool(logits), "top_k": top_k, "max_answer_length": max_answer_length}
        options["null_threshold"] = self.null_threshold
        if self.task is not None:
            result = self.task.raw_records(records, data, features, outputs, self.model.config, options)
        else:  # a classifier without a run record
            result = classification_records(records, outputs["logits"], self.model.config, bool(logits))
        t2, parse = time.perf_counter(), clock["parse_s"]
        self.timings = {"parse_s": parse, "featurize_s": t1 - t0 - parse, "forward_s": t2 - t1, "total_s": t2 - t0}
        self.timings["n"] = len(records)
        return result

    def _featurize(self, records: list[dict[str, Any]]) -> tuple[Any, Any]:
        if self.task is not None:
            data = self.task.inference_data(records)
            return data, self.task.featurize(data, self.context, "predict")
        data = text_inputs_data(records)
        return data, build_features("inputs", data, self.context, "predict")


# -- reading and writing ---------------------------------------------------------------------------------
def read_inputs(
    path: str | os.PathLike,
    *,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    head: str = "sequence_classification",
    id_column: str | None = None,
    run_columns: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Inputs from a file (``-`` = standard input, one text per line), read as ``predict --input`` reads one: the
    formats, and the column read when ``text_column`` is not given, are in docs/inference.md ("From the command line").
    Arguments: text_column / text_pair_column: the columns of the text and of a pair's second text (span QA and
    multiple choice: of ``question`` and ``context``; multiple choice also reads ``options``, a list); head: the
    model's head; id_column: a column copied to the records as ``id`` (default ``id`` when the file has one);
    run_columns: the run's own ``text_column`` / ``text_pair_column``, the default when the file has them. Raises
    DataError: no such file, a row without its text; FormatError: an unknown format, a missing column, a text field
    that is not a string or a malformed line (named)."""
    path = str(path)
    suffix = Path(path).suffix.lower()
    if path != "-" and not Path(path).is_file():
        raise DataError(f"input file {path} " + ("is a folder; give a file" if Path(path).is_dir() else "not found"))
    if path != "-" and suffix not in INPUT_FORMATS:
        raise FormatError(
            f"unknown input format {suffix or '(no suffix)'!r}; expected one of {', '.join(INPUT_FORMATS)}", source=path
        )
    if (path == "-" or suffix == ".txt") and (text_pair_column or head in ("question_answering", "multiple_choice")):
        raise FormatError(
            "a .txt file holds one text per line: give pairs / questions with contexts as "
            ".csv, .tsv or .jsonl with named columns (questions with options: .jsonl)",
            source=path,
        )
    table = read_table(path, lines=True, allow_empty=True)
    if not table.rows:
        return []
    columns = table.columns
    if head in ("question_answering", "multiple_choice"):
        wanted = {"question": text_column or "question", "context": text_pair_column or "context"}
    else:
        run = run_columns or {}
        for text, pair in ((run.get("text_column"), run.get("text_pair_column")), ("sentence1", "sentence2")):
            if text_column is None and text in columns:
                text_column = text
                text_pair_column = text_pair_column or (pair if pair in columns else None)
        first = text_column or next(
            (c for c in ("text", "sentence") if c in columns), columns[0] if len(columns) == 1 else None
        )
        if first is None:
            raise FormatError(
                f"which column holds the text? The file has columns {columns}; pass --text-column", source=path
            )
        wanted = {"text": first, **({"text_pair": text_pair_column} if text_pair_column else {})}
    for key, column in wanted.items():
        if column not in columns and not (key == "context" and head == "multiple_choice"):
            raise FormatError(f"no column {column!r} ({key}); the file has columns {columns}", source=path)
    ident = id_column or ("id" if "id" in columns else None)
    out = []
    for i, row in enumerate(table.rows):
        where = table.where(i)
        rec: dict[str, Any] = {}
        for key, column in wanted.items():
            if key == "context" and head == "multiple_choice" and row.get(column) is None:
                continue  # questions without a passage
            if column not in row:
                raise FormatError(f"no column {column!r} (columns: {sorted(row)})", where)
            rec[key] = text_value(row[column], where, column, required=key != "context")
        if head == "multiple_choice":
            options = row.get("options")
            if not isinstance(options, list):
                raise FormatError(
                    f"'options' must be a list of the answer options (a .jsonl / .json file), got {options!r}", where
                )
            rec["options"] = [text_value(o, where, f"options[{k}]") for k, o in enumerate(options)]
        if ident is not None and row.get(ident) is not None:
            if isinstance(row[ident], (list, dict)):
                raise FormatError(f"the id column {ident!r} holds {row[ident]!r}; an id is a string or a number", where)
            rec["id"] = row[ident]
        out.append(rec)
    return out


def write_records(records: Sequence[Mapping[str, Any]], path: str | os.PathLike | None = None) -> None:
    """One JSON object per line, to ``path`` (atomically) or standard output (``None`` or ``-``); the characters
    that ``str.splitlines`` takes for line ends (U+2028, U+2029, NEL) are written escaped, so every reader sees one
    record per line."""
    lines = "".join(json.dumps(r, ensure_ascii=False).translate(_LINE_BREAKS) + "\n" for r in records)
    if path is None or str(path) == "-":
        sys.stdout.write(lines)
        sys.stdout.flush()
        return
    with atomic_write(path) as f:
        f.write(lines)


# -- helpers -------------------------------------------------------------------------------------------------
#: Line ends to ``str.splitlines`` (and so to many JSONL readers), escaped as JSON lets them be inside strings.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def _for_raw_text(context: Any, prep: Any, parse_cache: bool | str | None) -> Any:
    """``context`` made ready for raw inputs: the task's extra options from ``prep``, no feature cache, no progress
    bars, no parser noise, ``parse_cache`` where given."""
    context.extra.update(prep.extra)
    context.use_cache, context.progress, context.parser_noise = False, False, 0.0
    if parse_cache is not None:
        context.parse_cache = parse_cache
    return context


def num_beams(config: Any, task: Any) -> int:
    """The beam size a run translates with: its ``generation_num_beams``, else the task's default, else 5."""
    beams = config.training_args.get("generation_num_beams")
    return int(beams or task.training_defaults().get("generation_num_beams", 5))


def tuned_null_threshold(run_dir: str | os.PathLike) -> float | None:
    """The no-answer threshold tuned on the run's dev articles (``metrics.json`` ``dev.best_f1_threshold``)."""
    path = Path(run_dir) / "metrics.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8"))["dev"]["best_f1_threshold"]["threshold"]
        value = float(value)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if math.isfinite(value) else None
