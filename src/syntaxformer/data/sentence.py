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

import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from syntaxformer.data import tree as _tree
from syntaxformer.data.constituency import Tree
from syntaxformer.errors import FormatError, InputError, TreeError


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
        _tree.check_heads(self.heads, what)
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
        return _tree.roots(self.heads)

    def children(self, i: int) -> list[int]:
        """Dependents of word ``i``."""
        return [j for j, h in enumerate(self.heads) if h == i]

    def ancestors(self, i: int) -> list[int]:
        """Proper ancestors of word ``i``, nearest first."""
        return _tree.ancestors(self.heads, i)

    def detokenized(self) -> tuple[str, list[tuple[int, int]]]:
        """The text and word offsets: ``(text, offsets)`` if known, else words joined by single spaces."""
        if self.text is not None and self.offsets is not None:
            return self.text, list(self.offsets)
        offsets, pos = [], 0
        for w in self.words:
            offsets.append((pos, pos + len(w)))
            pos += len(w) + 1
        return " ".join(self.words), offsets

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
    def from_dict(cls, data: dict[str, Any]) -> "Sentence":
        """Inverse of :meth:`to_dict`."""
        if "words" not in data or "heads" not in data:
            raise FormatError(f"a sentence record needs 'words' and 'heads'; got keys {sorted(data)}")
        tree = data.get("tree")
        offsets = data.get("offsets")
        return cls(
            words=list(data["words"]),
            heads=[int(h) for h in data["heads"]],
            deprels=data.get("deprels"),
            upos=data.get("upos"),
            xpos=data.get("xpos"),
            lemmas=data.get("lemmas"),
            offsets=[tuple(o) for o in offsets] if offsets is not None else None,  # type: ignore[misc]
            text=data.get("text"),
            tree=Tree.from_string(tree) if isinstance(tree, str) else tree,
            sent_id=data.get("sent_id"),
            source=data.get("source"),
            metadata=dict(data.get("metadata") or {}),
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

    @property
    def words(self) -> list[str]:
        """All words of the document, sentence after sentence."""
        return [w for s in self.sentences for w in s.words]

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
    def from_dict(cls, data: dict[str, Any]) -> "Document":
        return cls(
            sentences=[Sentence.from_dict(s) for s in data["sentences"]],
            text=data.get("text"),
            doc_id=data.get("doc_id"),
            metadata=dict(data.get("metadata") or {}),
        )

    @classmethod
    def from_sentences(cls, sentences: Sequence[Sentence], doc_id: str | None = None) -> "Document":
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


def read_jsonl(path: str) -> Iterator[Sentence | Document]:
    """Read sentences / documents written by :func:`write_jsonl` (a record with ``sentences`` is a Document)."""
    from syntaxformer.utils import open_text

    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                yield Document.from_dict(data) if "sentences" in data else Sentence.from_dict(data)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError, TreeError) as e:
                raise FormatError(f"bad JSONL record: {e}", path, lineno) from e


def write_jsonl(items: Sequence[Sentence | Document] | Iterator[Sentence | Document], path: str) -> int:
    """Write one JSON record per sentence / document, atomically (temp file + rename). Returns the count."""
    from syntaxformer.utils import atomic_write

    n = 0
    with atomic_write(path) as f:
        for item in items:
            f.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n
