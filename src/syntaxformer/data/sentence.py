"""The data model: :class:`Sentence` and :class:`Document`, the single source of truth for syntax.

Readers (CoNLL-U, PTB brackets, SST, SNLI) and annotators (spaCy) write these; alignment, masks and models read
them. Conventions, stated once:

* ``heads[i]`` is the **0-based** index of word ``i``'s head in the same sentence; **-1 marks a root**
  (CoNLL-U's 1-based heads with 0 = root are converted by the reader: ``head - 1``).
* ``offsets[i] = (start, end)`` are character offsets of word ``i`` in ``Sentence.text`` (end exclusive). For a
  sentence inside a :class:`Document`, offsets are relative to the **document** text, so a passage can be
  tokenized once and its subwords mapped back to words of any sentence.
* ``tree`` is an optional constituency tree whose leaves are exactly ``words`` (same order).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, overload

from syntaxformer.data.tree import ancestors as _ancestors
from syntaxformer.data.tree import check_heads as _check_heads
from syntaxformer.data.tree import roots as _roots
from syntaxformer.errors import FormatError, InputError, TreeError
from syntaxformer.utils import atomic_write, json_lines, open_text

if TYPE_CHECKING:
    from syntaxformer.data.constituency import Tree


def on_demand(name: str) -> ModuleType:
    """The data module ``name`` (``"constituency"``, ``"subword_features"``), imported when first needed: found
    beside this module, in the library and in an exported model folder (which carries it only for a model that
    reads its inputs: :func:`syntaxformer.sharing.export_code.code_exports`)."""
    return importlib.import_module(f".{name}", __package__)


@dataclass
class Sentence:
    """One sentence with its dependency (and optionally constituency) analysis.

    Attributes:
        words: the tokens (surface forms).
        heads: 0-based head index per word; -1 for a root.
        deprels: dependency label per word (scheme depends on the source: UD, ClearNLP/spaCy, ...).
        upos: coarse (universal) POS tags, or ``None``.
        xpos: fine (language-specific, e.g. PTB) POS tags, or ``None``.
        lemmas: lemmas, or ``None``.
        offsets: ``(start, end)`` character offsets of each word in ``text`` (or in the document text), or
            ``None`` when the words are not tied to a text (then :meth:`detokenized` builds one).
        text: the sentence text, or ``None``.
        tree: constituency tree over ``words``, or ``None``.
        sent_id: identifier (e.g. CoNLL-U ``sent_id``).
        source: where the analysis came from, e.g. ``"gold:conllu"`` or ``"spacy:en_core_web_sm@3.8.0"``.
        metadata: any other key/value annotations (CoNLL-U comments, SST root label, ...).
    """

    words: list[str]
    heads: list[int]
    deprels: list[str] | None = None
    upos: list[str] | None = None
    xpos: list[str] | None = None
    lemmas: list[str] | None = None
    offsets: list[tuple[int, int]] | None = None
    text: str | None = None
    tree: Tree | None = None
    sent_id: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    # -- validation -----------------------------------------------------------------------------------
    def validate(self) -> None:
        """Check lengths and that ``heads`` form a forest. Raises :class:`TreeError` / :class:`InputError`."""
        what = f"sentence {self.sent_id!r}" if self.sent_id else "sentence"
        n = len(self.words)
        if n == 0:
            raise InputError(f"{what}: a sentence needs at least one word")
        for name in ("heads", "deprels", "upos", "xpos", "lemmas", "offsets"):
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise InputError(f"{what}: {len(value)} {name} for {n} words")
        for i, w in enumerate(self.words):
            if not isinstance(w, str) or not w:
                raise InputError(f"{what}: word {i} is empty or not a string ({w!r})")
        _check_heads(self.heads, what)
        if self.tree is not None:
            leaves = self.tree.leaves()
            if len(leaves) != n:
                raise TreeError(f"{what}: constituency tree has {len(leaves)} leaves for {n} words")

    # -- navigation (spaCy-like) -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.words)

    @property
    def roots(self) -> list[int]:
        """Indices of root words."""
        return _roots(self.heads)

    def children(self, i: int) -> list[int]:
        """Dependents of word ``i``."""
        return [j for j, h in enumerate(self.heads) if h == i]

    def ancestors(self, i: int) -> list[int]:
        """Proper ancestors of word ``i``, nearest first."""
        return _ancestors(self.heads, i)

    def detokenized(self) -> tuple[str, list[tuple[int, int]]]:
        """The text and word offsets: ``(text, offsets)`` if known, else words joined by single spaces."""
        if self.text is not None and self.offsets is not None:
            return self.text, list(self.offsets)
        return join_words(self.words)

    # -- serialisation ---------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the JSONL record format); ``tree`` is stored as a bracketed string."""
        out: dict[str, Any] = {"words": self.words, "heads": self.heads}
        for name in ("deprels", "upos", "xpos", "lemmas", "text", "sent_id", "source"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.offsets is not None:
            out["offsets"] = [list(o) for o in self.offsets]
        if self.tree is not None:
            out["tree"] = self.tree.to_string()
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sentence:
        """Inverse of :meth:`to_dict`; the record's types and offsets are checked (it may come from a file).

        Raises:
            FormatError: a field of the wrong type (``words`` a string rather than a list, a head that is not a
                whole number, ...), offsets that are not ``[start, end]`` pairs with ``0 <= start <= end`` inside
                ``text``.
        """
        if not isinstance(data, dict):
            raise FormatError(f"a sentence record must be a JSON object; got {type(data).__name__}")
        if "words" not in data or "heads" not in data:
            raise FormatError(f"a sentence record needs 'words' and 'heads'; got keys {sorted(data)}")
        words = _str_list(data["words"], "words", required=True)
        heads = data["heads"]
        if not isinstance(heads, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in heads):
            raise FormatError(f"'heads' must be a list of whole numbers (0-based, -1 = root); got {heads!r:.80}")
        text = _typed(data, "text", str, "a string")
        offsets = _offsets(data.get("offsets"), len(text) if text is not None else None)
        tree = data.get("tree")
        if isinstance(tree, str):
            tree = on_demand("constituency").Tree.from_string(tree)
        elif tree is not None and not isinstance(tree, on_demand("constituency").Tree):
            raise FormatError(f"'tree' must be a bracketed string; got {tree!r:.60}")
        for name in ("sent_id", "source"):
            _typed(data, name, str, "a string")
        metadata = _typed(data, "metadata", dict, "an object")
        return cls(
            words=words,
            heads=list(heads),
            deprels=_str_list(data.get("deprels"), "deprels"),
            upos=_str_list(data.get("upos"), "upos"),
            xpos=_str_list(data.get("xpos"), "xpos"),
            lemmas=_str_list(data.get("lemmas"), "lemmas"),
            offsets=offsets,
            text=text,
            tree=tree,
            sent_id=data.get("sent_id"),
            source=data.get("source"),
            metadata=dict(metadata or {}),
        )

    def pretty(self) -> str:
        """A readable table of the dependency analysis (1-based ids, CoNLL-style, for humans)."""
        rows = []
        for i, w in enumerate(self.words):
            head = self.heads[i]
            rows.append(
                f"{i + 1:>3}  {w:<15} {(self.upos or [''] * len(self))[i]:<6} "
                f"{(self.xpos or [''] * len(self))[i]:<5} -> {head + 1 if head >= 0 else 0:>3} "
                f"{(self.heads and head >= 0 and self.words[head]) or 'ROOT':<15} "
                f"{(self.deprels or [''] * len(self))[i]}"
            )
        return "\n".join(rows)


@dataclass
class Document:
    """A passage: several sentences over one text (each sentence is its own tree).

    Word offsets of the sentences are relative to ``text``.
    """

    sentences: list[Sentence]
    text: str | None = None
    doc_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sentences": [s.to_dict() for s in self.sentences]}
        if self.text is not None:
            out["text"] = self.text
        if self.doc_id is not None:
            out["doc_id"] = self.doc_id
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        """Inverse of :meth:`to_dict`; sentence offsets (relative to the document text) are checked against it.

        Raises:
            FormatError: as :meth:`Sentence.from_dict`, or ``sentences`` not a list, or word offsets past the end
                of the document text.
        """
        if not isinstance(data, dict) or not isinstance(data.get("sentences"), list):
            raise FormatError("a document record must be a JSON object with a list 'sentences'")
        text = _typed(data, "text", str, "a string")
        sentences = [Sentence.from_dict(s) for s in data["sentences"]]
        if text is not None:
            for k, s in enumerate(sentences):
                if s.text is None and s.offsets is not None and any(b > len(text) for _, b in s.offsets):
                    raise FormatError(
                        f"sentence {k}: word offsets {max(b for _, b in s.offsets)} past the end of "
                        f"the document text (length {len(text)})"
                    )
        metadata = _typed(data, "metadata", dict, "an object")
        doc_id = _typed(data, "doc_id", str, "a string")
        return cls(sentences=sentences, text=text, doc_id=doc_id, metadata=dict(metadata or {}))

    @classmethod
    def from_sentences(cls, sentences: Sequence[Sentence], doc_id: str | None = None) -> Document:
        """Join stand-alone sentences into one document text (single spaces), shifting word offsets."""
        parts, shifted, pos = [], [], 0
        for s in sentences:
            text, offsets = s.detokenized()
            parts.append(text)
            d = s.to_dict()
            d["offsets"] = [[a + pos, b + pos] for a, b in offsets]
            d.pop("text", None)
            shifted.append(Sentence.from_dict(d))
            pos += len(text) + 1
        return cls(shifted, text=" ".join(parts), doc_id=doc_id)


def _typed(data: dict[str, Any], name: str, kind: type, expected: str) -> Any:
    """A record's optional field ``name``, checked to be ``None`` or a ``kind``."""
    value = data.get(name)
    if value is not None and not isinstance(value, kind):
        raise FormatError(f"{name!r} must be {expected}; got {value!r:.60}")
    return value


@overload
def _str_list(value: Any, name: str, required: Literal[True]) -> list[str]: ...


@overload
def _str_list(value: Any, name: str, required: bool = False) -> list[str] | None: ...


def _str_list(value: Any, name: str, required: bool = False) -> list[str] | None:
    """A record's list of strings (``words``, ``deprels``, ...), checked: a bare string is not a list of words."""
    if value is None and not required:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FormatError(f"{name!r} must be a list of strings; got {value!r:.80}")
    return list(value)


def _offsets(value: Any, text_length: int | None) -> list[tuple[int, int]] | None:
    """A record's word offsets, checked: ``[start, end]`` pairs of whole numbers, ``0 <= start <= end``, and
    ``end <= len(text)`` when the record has its own text."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise FormatError(f"'offsets' must be a list of [start, end] pairs; got {value!r:.80}")
    out = []
    for i, pair in enumerate(value):
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair)
        ):
            raise FormatError(f"offsets[{i}] is {pair!r:.40}; expected a [start, end] pair of whole numbers")
        a, b = pair
        if not 0 <= a <= b or (text_length is not None and b > text_length):
            raise FormatError(
                f"offsets[{i}] = [{a}, {b}] is not a span of the text (need 0 <= start <= end"
                + (f" <= {text_length}, the text's length)" if text_length is not None else ")")
            )
        out.append((a, b))
    return out


def read_jsonl(path: str) -> Iterator[Sentence | Document]:
    """Read sentences / documents written by :func:`write_jsonl` (a record with ``sentences`` is a Document)."""
    with open_text(path) as f:
        yield from records_from_lines(f, path)


def records_from_lines(lines: Iterable[str], source: str) -> Iterator[Sentence | Document]:
    """The records of JSON lines written by :func:`write_jsonl` (a file's lines, standard input); errors name
    ``source`` and the line."""
    for lineno, data in json_lines(lines, source, "one sentence or document record (a JSON object) per line"):
        try:
            yield Document.from_dict(data) if "sentences" in data else Sentence.from_dict(data)
        except (KeyError, TypeError, ValueError, TreeError) as e:
            raise FormatError(f"bad JSONL record: {e}", source, lineno) from e


def write_jsonl(items: Sequence[Sentence | Document] | Iterator[Sentence | Document], path: str) -> int:
    """Write one JSON record per sentence / document, atomically (temp file + rename). Returns the count."""
    n = 0
    with atomic_write(path) as f:
        for item in items:
            f.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def join_words(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The words joined by single spaces, and each word's offsets in that text."""
    offsets, pos = [], 0
    for w in words:
        offsets.append((pos, pos + len(w)))
        pos += len(w) + 1
    return " ".join(words), offsets


def check_unicode(text: str, what: str) -> None:
    """Reject a string that is not valid Unicode text: one holding a lone surrogate (``"x\\udcff"``, what
    ``errors="surrogateescape"`` leaves for undecodable bytes), which cannot be written as UTF-8, stored in the
    parse cache or given to a tokenizer.

    Raises:
        InputError: naming ``what``, the position and the character.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(
            f"{what} holds the lone surrogate {text[e.start]!r} at character {e.start}, which is not "
            "valid Unicode text; decode the input with errors='replace' (or fix its encoding)"
        ) from None
