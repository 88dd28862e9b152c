"""Annotation as a batch function, for corpus-scale parsing on an existing engine: :class:`BatchAnnotator` turns a
batch of rows (a dict of columns, as ``datasets.Dataset.map(batched=True)`` and Ray Data's ``map_batches`` hand
them over) into the same columns plus the parse as JSON-able columns (how workers build their annotator and share
the parse cache, with examples: docs/distributed.md, *Parsing a corpus*).

Columns (``prefix`` + name) per row:

* text mode (``mode="text"``, :meth:`~.base.Annotator.annotate`: a text may hold several sentences): one entry per
  sentence, each the field of that sentence: ``words`` ``list[list[str]]``, ``heads`` ``list[list[int]]`` (0-based,
  -1 = root), ``deprels`` / ``upos`` / ``xpos`` / ``lemmas`` ``list[list[str] | None]``, ``offsets``
  ``list[list[[start, end]]]`` (into the row's text), ``sent_id`` ``list[str | None]``, ``tree``
  ``list[str | None]`` (bracketed), ``metadata`` ``list[str]`` (JSON); ``source`` ``str``;
* pretokenized mode (``mode="pretokenized"``, :meth:`~.base.Annotator.annotate_pretokenized`: the column holds
  word lists, one sentence each): the same fields one level flatter (``heads`` ``list[int]`` ...), plus ``text``.

:func:`document_from_row` / :func:`sentence_from_row` turn a row back into the :class:`Document` /
:class:`Sentence` the annotator returned (equal, field for field).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from syntaxformer.data.annotators.base import Annotator
from syntaxformer.data.annotators.factory import make_annotator
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import AnnotatorError

__all__ = ["MODES", "SENTENCE_FIELDS", "BatchAnnotator", "document_from_row", "sentence_from_row"]

#: The Sentence fields stored as columns (``text`` too in pretokenized mode), and the row-level ``source``.
SENTENCE_FIELDS: tuple[str, ...] = tuple(
    "words heads deprels upos xpos lemmas offsets sent_id tree metadata".split()  # noqa: SIM905 (a word list)
)
#: ``"text"``: the column holds raw texts (one Document each); ``"pretokenized"``: word lists (one Sentence each).
MODES: tuple[str, ...] = ("text", "pretokenized")


class BatchAnnotator:
    """Parse a column of a batch of rows; picklable, builds its annotator once per process.

    Args:
        spec: the parser, any :func:`~syntaxformer.data.annotators.factory.make_annotator` spec (``None`` = the
            default spaCy pipeline). A string spec is rebuilt in each worker; an :class:`Annotator` object is
            pickled as it is.
        column: the input column: raw texts (``mode="text"``) or word lists (``mode="pretokenized"``).
        mode: one of :data:`MODES`.
        cache: the parse cache (``True`` = default location, a path, or ``None`` / ``False``); the same file is
            shared by all workers.
        prefix: put before every output column name (e.g. ``"parse_"``), to keep input columns of the same name.
        **options: more keyword arguments for :func:`make_annotator` (e.g. ``batch_size``, ``n_process`` for spaCy).

    Raises:
        AnnotatorError: ``mode`` is not one of :data:`MODES`, or ``spec`` names no annotator (raised here, in the
            driver, not in the workers).
    """

    def __init__(
        self,
        spec: Any = None,
        *,
        column: str = "text",
        mode: str = "text",
        cache: Any = True,
        prefix: str = "",
        **options: Any,
    ):
        if mode not in MODES:
            raise AnnotatorError(f"BatchAnnotator mode={mode!r} is not valid; choose one of {MODES}")
        self.spec = spec
        self.column = column
        self.mode = mode
        self.cache = cache
        self.prefix = prefix
        self.options = options
        self._annotator: Annotator | None = None
        # Built once here to check the spec and to know the parser's identity by content: it is part of the pickled
        # state, so datasets' fingerprint of this function (its map cache) changes whenever the parses would.
        self.parser_key = self.annotator.cache_key()

    @property
    def annotator(self) -> Annotator:
        """The annotator, built from the spec on first use in this process (no progress bars)."""
        if self._annotator is None:
            self._annotator = make_annotator(self.spec, cache=self.cache, progress=False, **self.options)
        return self._annotator

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if not isinstance(self.spec, Annotator):  # rebuilt from the spec where it is used
            state["_annotator"] = None
        return state

    def __repr__(self) -> str:
        return f"BatchAnnotator({self.spec!r}, column={self.column!r}, mode={self.mode!r})"

    # -- the batch function ----------------------------------------------------------------------------
    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``batch[column]``.

        Args:
            batch: column name -> values of the rows (lists, or numpy arrays as Ray Data gives them).

        Returns:
            The batch's columns plus the parse columns (see the module docstring), one value per row.

        Raises:
            AnnotatorError: the batch has no column ``column``, or a value is not a text / word list.
        """
        if self.column not in batch:
            raise AnnotatorError(
                f"the batch has no column {self.column!r} to parse (columns: {sorted(batch)}); "
                "pass BatchAnnotator(column=...)"
            )
        values = _plain(batch[self.column])
        out = {name: _plain(value) for name, value in batch.items()}
        p = self.prefix
        if self.mode == "text":
            docs = self.annotator.annotate([_text(v, i, self.column) for i, v in enumerate(values)])
            for name in SENTENCE_FIELDS:
                out[p + name] = [[_field(s, name) for s in doc.sentences] for doc in docs]
            default = str(getattr(self.annotator, "source", "") or "")
            out[p + "source"] = [next((s.source for s in doc.sentences if s.source), default) for doc in docs]
        else:
            sentences = self.annotator.annotate_pretokenized([_words(v, i, self.column) for i, v in enumerate(values)])
            for name in (*SENTENCE_FIELDS, "text"):
                out[p + name] = [_field(s, name) for s in sentences]
            out[p + "source"] = [s.source or "" for s in sentences]
        return out

    def features(self, input_features: Any = None) -> Any:
        """The ``datasets.Features`` of the output (``ds.map(..., features=parse.features(ds.features))``), so
        that shards whose rows are all empty texts get the same column types as the others.

        Args:
            input_features: the input dataset's ``features`` (kept as they are), or ``None``.
        """
        from datasets import Features, List, Value

        string, integer = Value("string"), Value("int64")
        kinds = {"heads": List(integer), "offsets": List(List(integer, length=2))}
        kinds.update(dict.fromkeys(("sent_id", "tree", "metadata"), string))
        per_sentence = {name: kinds.get(name, List(string)) for name in SENTENCE_FIELDS}
        out = dict(input_features or {})
        p = self.prefix
        if self.mode == "text":
            out.update({p + name: List(kind) for name, kind in per_sentence.items()})
        else:
            out.update({p + name: kind for name, kind in per_sentence.items()})
            out[p + "text"] = string
        out[p + "source"] = string
        return Features(out)


# -- rows back to the data model ------------------------------------------------------------------------------
def document_from_row(row: Mapping[str, Any], *, text_column: str = "text", prefix: str = "") -> Document:
    """The :class:`Document` a row parsed by ``BatchAnnotator(mode="text")`` holds.

    Args:
        row: one row (column name -> value; numpy arrays are accepted).
        text_column: the column of the parsed text (the Document's ``text``).
        prefix: the ``prefix`` the BatchAnnotator used.

    Raises:
        AnnotatorError: the row has no parse columns (named in the message).
    """
    _require(row, prefix + "words", prefix)
    n = len(_plain(row[prefix + "words"]))
    source = _plain(row.get(prefix + "source")) or None
    sentences = []
    for i in range(n):
        record = {name: _plain(row[prefix + name])[i] for name in SENTENCE_FIELDS if prefix + name in row}
        sentences.append(_sentence(record, source))
    text = _plain(row[text_column]) if text_column in row else None
    return Document(sentences, text=text)


def sentence_from_row(row: Mapping[str, Any], *, prefix: str = "") -> Sentence:
    """The :class:`Sentence` a row parsed by ``BatchAnnotator(mode="pretokenized")`` holds (see
    :func:`document_from_row` for the arguments)."""
    _require(row, prefix + "words", prefix)
    record = {name: _plain(row[prefix + name]) for name in (*SENTENCE_FIELDS, "text") if prefix + name in row}
    return _sentence(record, _plain(row.get(prefix + "source")) or None)


# -- helpers ----------------------------------------------------------------------------------------------
def _field(s: Sentence, name: str) -> Any:
    """One Sentence field as a JSON-able column value."""
    if name == "offsets":
        return None if s.offsets is None else [[int(a), int(b)] for a, b in s.offsets]
    if name == "tree":
        return None if s.tree is None else s.tree.to_string()
    if name == "metadata":
        return json.dumps(s.metadata, ensure_ascii=False, sort_keys=True)
    value = getattr(s, name)
    return list(value) if isinstance(value, (list, tuple)) else value


def _sentence(record: Mapping[str, Any], source: str | None) -> Sentence:
    """The Sentence of a row's fields, read as :meth:`Sentence.from_dict` reads a record (``metadata`` is JSON)."""
    data = {k: v for k, v in record.items() if v is not None and k not in ("tree", "metadata")}
    if record.get("tree"):
        data["tree"] = record["tree"]
    return Sentence.from_dict({**data, "source": source, "metadata": json.loads(record.get("metadata") or "{}")})


def _plain(value: Any) -> Any:
    """Numpy arrays and scalars (Ray Data's batches and rows) as Python lists and values, recursively."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _text(value: Any, i: int, column: str) -> str:
    if not isinstance(value, str):
        raise AnnotatorError(
            f"row {i} of the batch: column {column!r} holds a {type(value).__name__}, expected a "
            "text (use mode='pretokenized' for word lists)"
        )
    return value


def _words(value: Any, i: int, column: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise AnnotatorError(
            f"row {i} of the batch: column {column!r} holds {value!r:.60}, expected a list of "
            "words (use mode='text' for raw texts)"
        )
    return list(value)


def _require(row: Mapping[str, Any], name: str, prefix: str) -> None:
    if name not in row:
        raise AnnotatorError(
            f"the row has no parse column {name!r} (columns: {sorted(row)}); was it parsed by a "
            f"BatchAnnotator with prefix={prefix!r}?"
        )
