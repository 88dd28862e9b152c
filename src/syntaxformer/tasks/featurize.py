"""Task examples -> model features, the one pipeline every task uses: annotate -> (noise) -> align -> encode.

:func:`build_features` runs it for a split, :data:`BLOCK_SIZE` examples at a time (one batched
``datasets.Dataset.map``), and keeps the rows in Arrow (:class:`FeatureDataset`): in the processed-features cache
(docs/architecture.md) or in memory. A :class:`RowEncoder` makes the rows of a task family (:class:`TextRows` for
text (pair) examples). With no syntax inputs no parser is built: the texts are only tokenized. Where the syntax
comes from: :func:`syntax_source`.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators import make_annotator
from syntaxformer.data.annotators.cache import default_cache_dir
from syntaxformer.data.collate import TOKEN_KEYS
from syntaxformer.data.constituency import with_dependency_trees
from syntaxformer.data.examples import TaskData, TaskExample, example_seed
from syntaxformer.data.headrules import unlabeled_to_dependencies
from syntaxformer.data.noise import corrupt_sentence
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import ConfigError, DataError
from syntaxformer.utils import atomic_write
from syntaxformer.utils import progress as progress_bar

__all__ = [
    "BLOCK_SIZE",
    "CONSTITUENCY_MODES",
    "FEATURE_VERSION",
    "SYNTAX_MODES",
    "TOKEN_KEYS",
    "FeatureDataset",
    "ParsedRows",
    "RowEncoder",
    "TextRows",
    "annotator_for",
    "annotator_identity",
    "build_features",
    "corrupt",
    "encode_examples",
    "example_analyses",
    "features_cache_dir",
    "headrule_sentence",
    "parser_label",
    "syntax_source",
    "tokenizer_fingerprint",
    "with_dependency_trees",
]

logger = logging.getLogger(__name__)

#: Version of the stored feature format; part of the cache key (bump when the arrays change meaning).
FEATURE_VERSION = 3
#: Values of ``TaskContext.syntax``.
SYNTAX_MODES: tuple[str, ...] = ("auto", "parser", "given")
#: Values of ``TaskContext.constituency``.
CONSTITUENCY_MODES: tuple[str, ...] = ("given", "from_dependency")
#: Examples encoded together (one ``Dataset.map`` batch): parsed, aligned and written as one block of rows.
BLOCK_SIZE = 1024


class FeatureDataset(torch.utils.data.Dataset):
    """Features of one split in Arrow: one row per feature (an example, a window, a question with its options).

    Columns: ``guid``, one flattened list column per array key (``meta["shapes"]`` restores the trailing
    dimensions) and one column per scalar key. ``dataset[i]`` is ``{key: array [L_i, ...]}`` plus the scalars,
    each array a read-only view of the Arrow buffers (reading copies nothing). ``meta["side_keys"]`` are not model
    inputs (:meth:`side`); with ``meta["choices"]`` ``dataset[i]`` is ``{"options": [{key: array} per option],
    scalars}`` (the option lengths in the side column ``option_lengths``).

    Attributes:
        dataset: the ``datasets.Dataset`` of the rows.
        labels: ``[N]`` int64 class ids or float32 values (the ``labels`` column), or ``None``.
        meta: how the features were made (sizes, truncation counts, cache file, parser, ...).
    """

    def __init__(self, dataset: Any, meta: dict[str, Any] | None = None):
        self.dataset = dataset
        self.meta = dict(meta or {})
        self._index()

    def _index(self) -> None:
        """Per Arrow record batch: its first row and each list column's (offsets, values) as numpy views."""
        table = self.dataset.data.table
        names = table.column_names
        side = {*self.meta.get("side_keys", ()), "guid"}
        lists = [k for k in names if hasattr(table.schema.field(k).type, "value_type")]  # Arrow list columns
        self.keys = [k for k in lists if k not in side]
        self.scalar_keys = [k for k in names if k not in lists and k not in side]
        shapes, dtypes = self.meta.get("shapes", {}), self.meta.get("dtypes", {})
        self._trail = {k: tuple(shapes.get(k, ())) for k in lists}
        # datasets stores some token columns narrower: rows are given back in the dtype they were made with
        self._dtype = {k: np.dtype(dtypes.get(k, "<i8")) for k in names if k != "guid"}
        self._starts: list[int] = []
        self._blocks: list[dict[str, tuple[np.ndarray, np.ndarray]]] = []
        row = 0
        for batch in table.to_batches():
            if not batch.num_rows:
                continue
            self._starts.append(row)
            block = {}
            for k in lists:
                column = batch.column(names.index(k))
                block[k] = (column.offsets.to_numpy(), column.values.to_numpy(zero_copy_only=False))
            self._blocks.append(block)
            row += batch.num_rows
        self._scalars = {
            k: table.column(k).to_numpy().astype(self._dtype[k], copy=False)
            for k in names
            if k not in lists and k != "guid"
        }
        self.labels = self._scalars.get("labels")

    def _array(self, b: int, j: int, k: str) -> np.ndarray:
        offsets, values = self._blocks[b][k]
        v = values[offsets[j] : offsets[j + 1]].astype(self._dtype[k], copy=False)
        trail = self._trail[k]
        return v.reshape(-1, *trail) if trail else v

    def _locate(self, i: int) -> tuple[int, int]:
        i = int(i)
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} of a split of {len(self)} rows")
        b = bisect.bisect_right(self._starts, i) - 1
        return b, i - self._starts[b]

    def __getstate__(self) -> dict[str, Any]:
        # The views are rebuilt from the data set (pickling them would copy every row).
        return {"dataset": self.dataset, "meta": self.meta}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._index()

    def __len__(self) -> int:
        return int(self.dataset.num_rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        b, j = self._locate(i)
        out: dict[str, Any] = {k: self._array(b, j, k) for k in self.keys}
        if self.meta.get("choices"):
            cuts = np.cumsum(self._array(b, j, "option_lengths"))[:-1]
            parts = {k: np.split(v, cuts) for k, v in out.items()}
            out = {"options": [{k: parts[k][c] for k in parts} for c in range(len(cuts) + 1)]}
        for k in self.scalar_keys:
            out[k] = self._scalars[k][int(i)]
        return out

    def side(self, i: int) -> dict[str, Any]:
        """The columns of row ``i`` that are not model inputs (``meta["side_keys"]``)."""
        b, j = self._locate(i)
        out: dict[str, Any] = {}
        for k in self.meta.get("side_keys", ()):
            out[k] = self._array(b, j, k) if k in self._blocks[b] else self._scalars[k][int(i)].item()
        return out

    @property
    def guids(self) -> list[str]:
        """The example id of each row, in row order."""
        return [str(g) for g in self.dataset.data.table.column("guid").to_pylist()]

    # -- storage ---------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike) -> FeatureDataset:
        """Read a features cache file (Arrow, memory-mapped) and its ``.json`` description."""
        import datasets

        with open(_meta_path(path), encoding="utf-8") as f:
            meta = json.load(f)
        return cls(datasets.Dataset.from_file(str(path)), meta)


def _meta_path(path: str | os.PathLike) -> Path:
    return Path(path).with_suffix(".json")


def features_cache_dir() -> Path:
    """``<parse cache dir>/features`` (``$SYNTAXFORMER_CACHE`` or ``~/.cache/syntaxformer``)."""
    return Path(default_cache_dir()) / "features"


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """SHA-256 of the tokenizer's serialisation without its truncation and padding settings (each call sets those
    anew, so they say nothing about the features)."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    try:
        truncation, padding = backend.truncation, backend.padding
    except AttributeError as e:
        raise ConfigError(
            f"{type(tokenizer).__name__} is not a fast tokenizer; features need one "
            "(AutoTokenizer.from_pretrained(name, use_fast=True))"
        ) from e
    backend.no_truncation()
    backend.no_padding()
    try:
        text = backend.to_str()
    finally:
        if truncation is not None:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def annotator_identity(context: Any) -> str | None:
    """The parser's content key (:meth:`~syntaxformer.data.annotators.Annotator.cache_key`) for cache keys;
    ``None`` for an object with ``annotate`` only (its features are not cached)."""
    key = getattr(annotator_for(context), "cache_key", None)
    return None if key is None else str(key())


def annotator_for(context: Any) -> Any:
    """``context.annotator``, else built from ``context.parser`` (:func:`~syntaxformer.data.make_annotator`) on
    first use and kept there, so the splits of a run share one parser."""
    if context.annotator is None:
        context.annotator = make_annotator(context.parser, cache=context.parse_cache, progress=context.progress)
    return context.annotator


def parser_label(annotator: Any, spec: Any = None) -> str:
    """How reports name a parser (an annotator or its ``source``): ``spaCy en_core_web_sm`` for a spaCy pipeline
    (as ``spec`` names it when that is a package name), else the source as it is (``conll:parses.conll``)."""
    source = str(getattr(annotator, "source", annotator) or "")
    if not source.startswith("spacy:"):
        return source
    name = source.removeprefix("spacy:").split("@")[0]
    if isinstance(spec, str) and spec and not any(c in spec for c in "/\\"):  # a package name, not a folder
        name = spec.removeprefix("spacy:")
    return f"spaCy {name}"


def _parse_once(annotator: Any, items: Sequence[Any], pretokenized: bool = False) -> dict[Any, Any]:
    """Parse every unique text (or gold token tuple, as one sentence over exactly those tokens) once; item ->
    analysis (cached parses are reused)."""
    unique = list(dict.fromkeys(items))
    if not unique:
        return {}
    what = "gold token lists" if pretokenized else "texts"
    logger.info("parsing %d %s with %s (cached parses are reused)", len(unique), what, annotator.source)
    parses = annotator.annotate_pretokenized([list(w) for w in unique]) if pretokenized else annotator.annotate(unique)
    return dict(zip(unique, parses))


def headrule_sentence(tree: Any) -> Sentence:
    """A Sentence over the leaves of ``tree`` with dependencies from the head rules (no parser, tags guessed)."""
    deps = unlabeled_to_dependencies(tree, None, labels=True)
    return Sentence(
        words=tree.leaves(), heads=deps.heads, deprels=deps.deprels, tree=tree, source="gold-tree+headrules"
    )


def corrupt(doc: Document | Sentence, fraction: float, seed: int, key: str) -> Document | Sentence:
    """``doc`` with ``fraction`` of the dependency heads re-attached at random (SG-Net TPAMI §7.6), seeded by
    ``seed`` and ``key`` (an example id + side), so the noise does not depend on batch order."""
    rng = np.random.default_rng(example_seed(key, seed))
    if isinstance(doc, Sentence):
        return corrupt_sentence(doc, fraction, rng)
    return Document(
        [corrupt_sentence(s, fraction, rng) for s in doc.sentences],
        text=doc.text,
        doc_id=doc.doc_id,
        metadata=dict(doc.metadata),
    )


def _check_context(context: Any) -> None:
    if context.syntax not in SYNTAX_MODES:
        raise ConfigError(f"syntax={context.syntax!r} is not valid; choose one of {SYNTAX_MODES}")
    if context.constituency not in CONSTITUENCY_MODES:
        raise ConfigError(f"constituency={context.constituency!r} is not valid; choose one of {CONSTITUENCY_MODES}")
    if not 0.0 <= float(context.parser_noise) <= 1.0:
        raise ConfigError(f"parser_noise={context.parser_noise} must be a fraction in [0, 1]")
    if context.max_length is not None and int(context.max_length) < 4:
        raise ConfigError(f"max_length={context.max_length} must be at least 4")
    if context.pos_tags not in (None, "upos", "xpos"):
        raise ConfigError(f"pos_tags={context.pos_tags!r} must be None, 'upos' or 'xpos'")


def _needs_parser(examples: Sequence[TaskExample], context: Any) -> bool:
    """Whether some text has no given Sentence (``syntax="given"`` never parses)."""
    if context.syntax == "given" or not context.syntax_inputs:
        return False
    reparse = context.syntax == "parser"
    return any(
        (e.syntax_a is None or reparse) or (e.text_b is not None and (e.syntax_b is None or reparse)) for e in examples
    )


def _cache_key(
    task_name: str, split: str, data: TaskData, tokenizer: Any, context: Any, parser_id: str | None, rows: RowEncoder
) -> str:
    options = {
        **rows.options(),
        "max_length": context.max_length,
        "criterion": context.criterion,
        "syntax_inputs": list(context.syntax_inputs),
        "max_distance": context.max_distance,
        "syntax": context.syntax,
        "parser_noise": float(context.parser_noise),
        "noise_seed": int(context.noise_seed),
        "constituency": context.constituency,
        "pos_tags": context.pos_tags,
    }
    payload = {
        "version": FEATURE_VERSION,
        "task": task_name,
        "split": split,
        "data": data.fingerprint,
        "examples": _examples_fingerprint(data.examples, rows),
        "n": len(data),
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "parser": parser_id,
        "options": options,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _examples_fingerprint(examples: Sequence[Any], rows: RowEncoder) -> str:
    """SHA-256 of the exact examples (:meth:`RowEncoder.record` of each), whatever the data's fingerprint says
    (two subsamples of the same size)."""
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps(rows.record(e), ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


class RowEncoder(Protocol):
    """How the examples of a task family become feature rows (:class:`TextRows`, span QA's
    :class:`~syntaxformer.tasks.squad.SpanRows`, multiple choice's :class:`~syntaxformer.tasks.race.ChoiceRows`).

    Attributes:
        side_keys: columns of a row that are not model inputs (:meth:`FeatureDataset.side`).
        choices: rows hold one sequence per option (lengths in the side column ``option_lengths``).
    """

    side_keys: tuple[str, ...]
    choices: bool

    def options(self) -> dict[str, Any]:
        """What besides the context's options changes the rows (part of the cache key)."""

    def record(self, example: Any) -> list[Any]:
        """What identifies an example's rows (JSON-serialisable; part of the cache key)."""

    def prepare(self, data: Any, context: Any) -> str | None:
        """Check the examples against the context; the parser's identity for the cache key (``"none"``: nothing
        is parsed; ``None``: the rows are not cached)."""

    def encode(
        self, block: Sequence[Any], indices: Sequence[int], context: Any
    ) -> tuple[dict[str, list[Any]], int, int]:
        """The rows of a block of examples (at positions ``indices`` of the split): ``({column: one value per
        row}, examples truncated, texts parsed)``; columns are ``guid``, arrays and scalars."""

    def syntax_source(self, data: Any, context: Any) -> dict[str, str] | None:
        """Where the trees come from, in words, or ``None`` when the family does not say."""


class TextRows:
    """Text (pair) examples -> one row each (:func:`encode_examples`) with its ``labels`` when the split has
    them."""

    side_keys: tuple[str, ...] = ()
    choices: bool = False

    def __init__(self, label_dtype: Any = np.int64):
        self.label_dtype = label_dtype
        self.needs_parser = self.labeled = False

    def options(self) -> dict[str, Any]:
        return {}

    def record(self, example: Any) -> list[Any]:
        """Ids, texts, labels, gold-tree leaves."""
        e = example
        trees = [None if t is None else t.leaves() for t in (e.tree_a, e.tree_b)]
        return [e.guid, e.text_a, e.text_b, e.label, *trees]

    def prepare(self, data: Any, context: Any) -> str | None:
        """Given parses where ``syntax="given"``; the parser's identity, ``"given"`` or ``"none"``."""
        _check_given(data.examples, context)
        self.needs_parser = _needs_parser(data.examples, context)
        self.labeled = data.has_labels
        if self.needs_parser:
            return annotator_identity(context)
        return "given" if context.syntax_inputs else "none"

    def encode(
        self, block: Sequence[Any], indices: Sequence[int], context: Any
    ) -> tuple[dict[str, list[Any]], int, int]:
        columns, n_truncated, n_parsed = encode_examples(block, context, self.needs_parser)
        out: dict[str, list[Any]] = {"guid": [e.guid for e in block], **columns}
        if self.labeled:
            out["labels"] = [np.asarray(e.label, dtype=self.label_dtype) for e in block]
        return out, n_truncated, n_parsed

    def syntax_source(self, data: Any, context: Any) -> dict[str, str] | None:
        """:func:`syntax_source`."""
        return syntax_source(data, context)


class ParsedRows:
    """Base of the :class:`RowEncoder` s whose examples are parsed whole (span QA, multiple choice): every text is
    parsed unless the model reads no syntax, which gets no parser; no rows options and no syntax source."""

    side_keys: tuple[str, ...] = ()
    choices: bool = False

    def options(self) -> dict[str, Any]:
        return {}

    def prepare(self, data: Any, context: Any) -> str | None:
        return annotator_identity(context) if context.syntax_inputs else "none"

    @staticmethod
    def annotator(context: Any) -> Any:
        """The parser of ``context``, or ``None`` for a model that reads no syntax."""
        return annotator_for(context) if context.syntax_inputs else None

    def syntax_source(self, data: Any, context: Any) -> dict[str, str] | None:
        return None


def build_features(
    task_name: str,
    data: TaskData,
    context: Any,
    split: str,
    *,
    label_dtype: Any = np.int64,
    cache_dir: str | os.PathLike | None = None,
    rows: RowEncoder | None = None,
) -> FeatureDataset:
    """Features of one split, from the processed-features cache (``<cache_dir>/<task>-<split>-<key>.arrow``; our
    own key, given as ``new_fingerprint``, so ``datasets`` reuses nothing by itself) when possible.

    Args:
        task_name: the task's name (part of the cache key and file name).
        data: the split's examples.
        context: the :class:`~syntaxformer.tasks.base.TaskContext` (tokenizer, parser, syntax inputs, options).
        split: split name (part of the cache key and file name).
        label_dtype: ``np.int64`` (class ids) or ``np.float32`` (regression), for the default ``rows``.
        cache_dir: folder of the features cache (default ``context.cache_dir``, else :func:`features_cache_dir`).
        rows: how the examples become rows (default: text (pair) examples, one row each).

    Returns:
        A :class:`FeatureDataset`; ``meta`` tells whether it came from the cache (``"cache": "hit"``).
    """
    import datasets

    _check_context(context)
    rows = rows or TextRows(label_dtype)
    examples = data.examples
    parser_id = rows.prepare(data, context)
    use_cache = context.use_cache and parser_id is not None
    key = _cache_key(task_name, split, data, context.tokenizer, context, parser_id, rows)
    folder = Path(cache_dir or context.cache_dir or features_cache_dir())
    path = folder / f"{task_name}-{split}-{key[:20]}.arrow"
    if use_cache and path.is_file() and _meta_path(path).is_file():
        try:
            ds = FeatureDataset.load(path)
            if ds.meta.get("n_examples") == len(data):
                ds.meta.update(cache="hit", cache_file=str(path))
                logger.info("%s %s: %d examples loaded from the features cache %s", task_name, split, len(data), path)
                return ds
        except Exception as e:  # noqa: BLE001 - unreadable / truncated file: rebuild it
            logger.warning("features cache %s is unreadable (%s: %s); rebuilding it", path, type(e).__name__, e)

    counts = {"n_truncated": 0, "n_parsed_texts": 0, "positions": 0}
    shapes: dict[str, list[int]] = {}
    dtypes: dict[str, str] = {}
    n = len(examples)
    with progress_bar(
        total=n, desc=f"encoding {task_name}", disable=None if context.progress and n >= 2000 else True, unit="ex"
    ) as bar:

        def encode(batch: dict[str, list[Any]]) -> dict[str, Any]:
            indices = [int(i) for i in batch["index"]]
            block = [examples[i] for i in indices]
            columns, n_truncated, n_parsed = rows.encode(block, indices, context)
            counts["n_truncated"] += n_truncated
            counts["n_parsed_texts"] += n_parsed
            counts["positions"] += sum(len(v) for v in columns["input_ids"])
            out: dict[str, Any] = {}
            for k, values in columns.items():
                if k == "guid" or not values:
                    out[k] = values
                    continue
                first = np.asarray(values[0])
                dtypes.setdefault(k, first.dtype.str)
                if first.ndim == 0:  # a scalar per row
                    out[k] = np.asarray(values, dtype=first.dtype)
                else:  # [L, D] tables are stored flat; meta["shapes"] keeps D
                    shapes.setdefault(k, list(first.shape[1:]))
                    out[k] = [np.asarray(a).reshape(-1) for a in values]
            bar.update(len(block))
            return out

        index = datasets.Dataset.from_dict({"index": np.arange(n, dtype=np.int64)})
        enabled = datasets.utils.logging.is_progress_bar_enabled()
        datasets.utils.logging.disable_progress_bar()  # ours counts the examples
        try:
            mapped = index.map(
                encode,
                batched=True,
                batch_size=BLOCK_SIZE,
                remove_columns=["index"],  # a block of examples may make more rows (windows) than it has
                new_fingerprint=key,
                cache_file_name=str(path) if use_cache else None,
                load_from_cache_file=False,  # a hit is read above, with its description
                keep_in_memory=not use_cache,
                writer_batch_size=BLOCK_SIZE,
            )
        finally:
            if enabled:
                datasets.utils.logging.enable_progress_bar()
    meta = {
        "n_truncated": counts["n_truncated"],
        "max_length": context.max_length,
        "mean_length": counts["positions"] / len(mapped) if len(mapped) else 0.0,
        "shapes": shapes,
        "dtypes": dtypes,
        "side_keys": list(rows.side_keys),
        "choices": rows.choices,
        "task": task_name,
        "split": split,
        "n_examples": n,
        "n_parsed_texts": counts["n_parsed_texts"],
        "parser": parser_id,
        "source": data.source,
        "sample": data.sample_note,
        "total_examples": data.total,
        "parser_noise": context.parser_noise,
        "syntax_source": rows.syntax_source(data, context),
        "cache": "miss",
    }
    if use_cache:
        meta["cache_file"] = str(path)
        with atomic_write(_meta_path(path), "w") as f:
            json.dump(meta, f)
    ds = FeatureDataset(mapped, meta)
    logger.info(
        "%s %s: %d examples encoded into %d rows (%d truncated to %s tokens)",
        task_name,
        split,
        n,
        len(ds),
        meta["n_truncated"],
        context.max_length,
    )
    return ds


def _check_given(examples: Sequence[TaskExample], context: Any) -> None:
    """With ``syntax="given"`` every text must have a given parse or a gold tree."""
    if context.syntax != "given":
        return

    def given(e: TaskExample, side: str) -> bool:
        return getattr(e, f"syntax_{side}") is not None or getattr(e, f"tree_{side}") is not None

    missing = [e.guid for e in examples if not given(e, "a") or (e.text_b is not None and not given(e, "b"))]
    if missing:
        raise DataError(
            f"syntax='given' but {len(missing)} examples have no given parse (first: "
            f"{missing[0]}); use syntax='auto' to parse them"
        )


def encode_examples(
    examples: Sequence[TaskExample], context: Any, needs_parser: bool | None = None
) -> tuple[dict[str, list[np.ndarray]], int, int]:
    """The features of a block of examples (:func:`example_analyses`, aligned, :meth:`~syntaxformer.tasks.base.TaskContext.window_arrays`), or only
    tokenized when the model reads no syntax.

    Returns:
        ``({key: [array [L_i, ...] per example]}, number of examples truncated, number of texts parsed)``.
    """
    if not context.syntax_inputs:
        return (*_encode_plain(examples, context), 0)
    docs_a, docs_b, n_parsed = example_analyses(examples, context, needs_parser)
    aligner = SyntaxAligner(
        context.tokenizer, max_length=context.max_length, window_segment=None if docs_b is not None else 0
    )
    columns: dict[str, list[np.ndarray]] = {}
    n_truncated = 0
    for windows in aligner.align_batch(docs_a, docs_b):
        ex = windows[0]  # no stride: exactly one (possibly truncated) window
        if int(np.sum(ex.word_index >= 0)) < int(np.sum(ex.n_pieces)):
            n_truncated += 1
        for k, v in context.window_arrays(ex).items():
            columns.setdefault(k, []).append(v)
    return columns, n_truncated, n_parsed


def example_analyses(
    examples: Sequence[TaskExample], context: Any, needs_parser: bool | None = None
) -> tuple[list[Any], list[Any] | None, int]:
    """Per example, the analysis of each text (a given Sentence, a parsed Document, or a Sentence over a gold
    tree's tokens carrying that tree), after parser noise and constituency filling.

    Returns:
        ``(analyses of text_a, analyses of text_b or None for single texts, number of texts parsed)``.
    """
    if needs_parser is None:
        needs_parser = _needs_parser(examples, context)
    pair = any(e.text_b is not None for e in examples)
    use_given = context.syntax != "parser"
    _check_given(examples, context)
    texts: list[str] = []
    token_lists: list[tuple[str, ...]] = []
    if needs_parser:
        for e in examples:
            for side, text in (("a", e.text_a), ("b", e.text_b)):
                if text is None or (use_given and getattr(e, f"syntax_{side}") is not None):
                    continue
                tree = getattr(e, f"tree_{side}")
                if use_given and tree is not None:
                    token_lists.append(tuple(tree.leaves()))
                else:
                    texts.append(text)
    parsed: dict[str, Document] = {}
    parsed_tokens: dict[tuple[str, ...], Sentence] = {}
    if texts or token_lists:
        annotator = annotator_for(context)
        parsed = _parse_once(annotator, texts)
        parsed_tokens = _parse_once(annotator, token_lists, pretokenized=True)

    def analysis(e: TaskExample, side: str, text: str) -> Any:
        sentence = getattr(e, f"syntax_{side}")
        if use_given and sentence is not None:
            return sentence
        tree = getattr(e, f"tree_{side}")
        if use_given and tree is not None:
            if context.syntax == "given":
                return headrule_sentence(tree)
            return dataclasses.replace(parsed_tokens[tuple(tree.leaves())], tree=tree)
        return parsed[text]

    docs_a: list[Any] = []
    docs_b: list[Any] | None = [] if pair else None
    for e in examples:
        docs_a.append(analysis(e, "a", e.text_a))
        if docs_b is not None:
            docs_b.append(Document([], text="") if e.text_b is None else analysis(e, "b", e.text_b))
    for side, docs in zip("ab", (docs_a, docs_b) if docs_b is not None else (docs_a,)):
        if context.parser_noise > 0:
            docs[:] = [
                corrupt(d, context.parser_noise, context.noise_seed, f"{e.guid}:{side}") for d, e in zip(docs, examples)
            ]
        if context.constituency == "from_dependency":
            docs[:] = [with_dependency_trees(d) for d in docs]
    return docs_a, docs_b, len(parsed) + len(parsed_tokens)


def _encode_plain(examples: Sequence[TaskExample], context: Any) -> tuple[dict[str, list[np.ndarray]], int]:
    """Token arrays only (a model that reads no syntax), and the number of examples truncated."""
    pair = any(e.text_b is not None for e in examples)
    texts_a = [e.text_a for e in examples]
    texts_b = [e.text_b or "" for e in examples] if pair else None
    enc = context.tokenizer(
        texts_a, texts_b, truncation=True, max_length=context.max_length, return_overflowing_tokens=False
    )
    full = context.tokenizer(texts_a, texts_b, truncation=False)
    columns = {k: [np.asarray(x, dtype=np.int64) for x in enc[k]] for k in TOKEN_KEYS if k in enc}
    n_truncated = sum(len(a) > len(b) for a, b in zip(full["input_ids"], enc["input_ids"]))
    return columns, n_truncated


def syntax_source(data: TaskData, context: Any) -> dict[str, str]:
    """Where the dependency and constituency trees of these features come from, in words (for ``metrics.json``).

    Returns:
        ``{"dependency": ..., "constituency": ...}``, e.g. ``"spaCy en_core_web_sm on gold tokens"`` and
        ``"gold SST trees"`` for the SST tree tasks.
    """
    if not context.syntax_inputs:
        none = "none (the model reads no syntax)"
        return {"dependency": none, "constituency": none}
    examples = data.examples
    use_given = context.syntax != "parser"
    n = len(examples)
    n_sentence = sum(e.syntax_a is not None for e in examples) if use_given else 0
    n_tree = sum(e.syntax_a is None and e.tree_a is not None for e in examples) if use_given else 0
    parsed = n_sentence + n_tree < n or (n_tree and context.syntax != "given")  # the parser made some trees
    parser = parser_label(annotator_for(context), context.parser) if parsed else ""
    dep: list[str] = []
    con: list[str] = []
    if n_tree:
        con.append(str(data.metadata.get("constituency_source", "gold trees from the data file")))
        dep.append(
            "head rules on the gold trees (tags guessed)" if context.syntax == "given" else f"{parser} on gold tokens"
        )
    if n_sentence:
        first = next(e.syntax_a for e in examples if e.syntax_a is not None)
        origin = first.source or "the data file"
        has_tree = first.tree is not None
        con.append(f"given trees ({origin})" if has_tree else "none in the given parses")
        dep.append(f"given ({origin}; head rules on its trees)" if has_tree else f"given ({origin})")
    fallback = "read off the dependency trees (dependency_to_constituency)"
    if n_sentence and context.constituency == "from_dependency" and con and con[-1] == "none in the given parses":
        con[-1] = fallback
    if n - n_sentence - n_tree > 0:
        dep.append(f"{parser} on raw text")
        con.append(
            fallback
            if context.constituency == "from_dependency"
            else "none (no constituency parser: constituency relations are empty)"
        )
    out = {"dependency": " + ".join(dict.fromkeys(dep)), "constituency": " + ".join(dict.fromkeys(con))}
    if float(context.parser_noise) > 0:
        out["dependency"] += f", {context.parser_noise:g} of the heads re-attached at random (parser noise)"
    return out
