"""CoNLL-U reader and writer (https://universaldependencies.org/format.html), written for syntaxformer.

Every sentence block becomes a :class:`~syntaxformer.data.Sentence` with 0-based heads (-1 = root); comments,
extra columns, multiword tokens and empty nodes are kept in ``metadata`` so that writing the sentence back gives
the same file, and offsets are computed against ``# text`` (``docs/parsing.md`` lists the keys and rules).
Malformed input raises :class:`~syntaxformer.errors.FormatError` with the file and line.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.data.tree import find_cycle
from syntaxformer.errors import FormatError, TreeError
from syntaxformer.utils import atomic_write, open_text

__all__ = ["format_conllu", "parse_conllu", "read_conllu", "sentence_to_conllu", "surface_tokens", "write_conllu"]

SOURCE = "gold:conllu"
# metadata keys that hold columns / structure rather than comments (never written as "# key = value")
RESERVED_KEYS = frozenset({"feats", "deps", "misc", "multiword_tokens", "empty_nodes", "comments"})

_WORD_ID = re.compile(r"[1-9][0-9]*\Z")
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)\Z")
_EMPTY_ID = re.compile(r"([0-9]+)\.([1-9][0-9]*)\Z")
_HEAD = re.compile(r"-?[0-9]+\Z")


def read_conllu(path: str | os.PathLike | IO[str], source: str | None = None) -> Iterator[Sentence]:
    """Read sentences (one per block, ``source="gold:conllu"``) from a CoNLL-U file or open text stream, lazily;
    ``source`` names it in error messages (default: the file name).

    Raises:
        FormatError: malformed input; the message names the file and line.
    """
    if isinstance(path, (str, os.PathLike)):
        name = source or os.fspath(path)
        with open_text(path, encoding="utf-8-sig") as f:
            yield from _read_lines(f, name)
    else:
        yield from _read_lines(path, source or str(getattr(path, "name", "<stream>")))


def parse_conllu(text: str, source: str = "<string>") -> list[Sentence]:
    """Parse CoNLL-U from a string. See :func:`read_conllu`."""
    return list(_read_lines(io.StringIO(text), source))


class _Block:
    """Lines of one sentence block while it is being read."""

    def __init__(self, first_line: int):
        self.first_line = first_line
        self.comments: list[tuple[int, str]] = []  # (line number, text after "#")
        self.rows: list[tuple[int, list[str]]] = []  # word rows
        self.mwts: list[tuple[int, int, int, list[str]]] = []  # (line, first id, last id, columns)
        self.empty: list[tuple[int, str]] = []  # (line, raw line) of empty nodes


def _read_lines(lines: Iterable[str], source: str) -> Iterator[Sentence]:
    block: _Block | None = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if not line.strip():
            if block is not None:  # a block holds at least the line that opened it
                yield _build(block, source)
            block = None
            continue
        if block is None:
            block = _Block(lineno)
        if line.startswith("#"):
            block.comments.append((lineno, line[1:]))
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise FormatError(
                f"expected 10 tab-separated columns (ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC), "
                f"found {len(cols)}",
                source,
                lineno,
            )
        for k, value in enumerate(cols):
            if value == "":
                raise FormatError(f"column {k + 1} is empty; use '_' for an unspecified value", source, lineno)
        _add_row(block, cols, lineno, source)
    if block is not None:
        yield _build(block, source)


def _add_row(block: _Block, cols: list[str], lineno: int, source: str) -> None:
    wid = cols[0]
    expected = len(block.rows) + 1
    if _WORD_ID.match(wid):
        if int(wid) != expected:
            raise FormatError(
                f"word id {wid} is out of sequence: expected {expected} (ids must run 1..n)", source, lineno
            )
        if not _HEAD.match(cols[6]):  # ASCII digits only: str.isdigit() / int() also take '٢' or '²'
            raise FormatError(
                f"head {cols[6]!r} of word {wid} is not an integer written in ASCII digits (0 = root, else a word id)",
                source,
                lineno,
            )
        block.rows.append((lineno, cols))
        return
    m = _RANGE_ID.match(wid)
    if m:
        first, last = int(m.group(1)), int(m.group(2))
        if first != expected:
            raise FormatError(f"multiword token {wid} must start at the next word id {expected}", source, lineno)
        if last <= first:
            raise FormatError(
                f"multiword token range {wid} must span at least two words (a-b with a < b)", source, lineno
            )
        block.mwts.append((lineno, first, last, cols))
        return
    m = _EMPTY_ID.match(wid)
    if m:
        if int(m.group(1)) != expected - 1:
            raise FormatError(
                f"empty node {wid} must follow word {m.group(1)}, but follows word {expected - 1}", source, lineno
            )
        block.empty.append((lineno, "\t".join(cols)))
        return
    raise FormatError(f"id {wid!r} is not an integer, a range 'a-b' or an empty-node id 'i.j'", source, lineno)


def _build(block: _Block, source: str) -> Sentence:
    if not block.rows:
        raise FormatError(
            "sentence block has no word lines (only comments, multiword tokens or empty nodes)",
            source,
            block.first_line,
        )
    n = len(block.rows)
    metadata: dict[str, Any] = {}
    sent_id: str | None = None
    text: str | None = None
    free: list[str] = []
    for _, comment in block.comments:
        body = comment[1:] if comment.startswith(" ") else comment
        key, sep, value = body.partition(" = ")
        key = key.strip()
        if not sep and body.strip() in ("newdoc", "newpar"):
            metadata[body.strip()] = None
        elif not sep or not key or key in RESERVED_KEYS:
            free.append(body)
        elif key == "sent_id":
            sent_id = value
        elif key == "text":
            text = value
        else:
            metadata[key] = value

    words = [cols[1] for _, cols in block.rows]
    heads: list[int] = []
    for i, (lineno, cols) in enumerate(block.rows):
        h = int(cols[6])
        if not 0 <= h <= n:
            raise FormatError(
                f"head {h} of word {i + 1} is out of range: must be 0 (root) or a word id 1..{n}", source, lineno
            )
        if h == i + 1:
            raise FormatError(f"word {i + 1} is its own head", source, lineno)
        heads.append(h - 1)
    cycle = find_cycle(heads)
    if cycle is not None:
        ids = " -> ".join(str(j + 1) for j in cycle + [cycle[0]])
        raise FormatError(
            f"heads form a cycle ({ids}); every word must reach the root", source, block.rows[cycle[0]][0]
        )
    for lineno, first, last, _ in block.mwts:
        if last > n:
            raise FormatError(f"multiword token {first}-{last} ends after the last word {n}", source, lineno)

    def column(k: int) -> list[str] | None:
        values = [cols[k] for _, cols in block.rows]
        return None if all(v == "_" for v in values) else values

    for key, k in (("feats", 5), ("deps", 8), ("misc", 9)):
        values = column(k)
        if values is not None:
            metadata[key] = values
    if block.mwts:
        metadata["multiword_tokens"] = [_mwt_record(first, last, cols) for _, first, last, cols in block.mwts]
    if block.empty:
        metadata["empty_nodes"] = [line for _, line in block.empty]
    if free:
        metadata["comments"] = free

    misc = [cols[9] for _, cols in block.rows]
    tokens = surface_tokens(words, metadata.get("multiword_tokens"), misc)
    if text is None:
        text = "".join(form + ("" if no_space else " ") for form, _, _, no_space, _ in tokens).rstrip(" ")
    offsets = _offsets(text, words, tokens)
    if "misc" not in metadata and _derived_misc(n, offsets, metadata.get("multiword_tokens")) != misc:
        metadata["misc"] = misc  # all "_", but the writer would otherwise derive SpaceAfter=No from the offsets
    try:
        return Sentence(
            words=words,
            heads=heads,
            deprels=column(7),
            upos=column(3),
            xpos=column(4),
            lemmas=column(2),
            offsets=offsets,
            text=text,
            sent_id=sent_id,
            source=SOURCE,
            metadata=metadata,
        )
    except (ValueError, TreeError) as e:  # anything the per-line checks above did not catch
        raise FormatError(str(e), source, block.first_line) from e


def _mwt_record(first: int, last: int, cols: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = {"first": first - 1, "last": last - 1, "form": cols[1], "misc": cols[9]}
    if any(c != "_" for c in cols[2:9]):
        record["columns"] = cols[2:9]
    return record


def _space_after_no(misc: str) -> bool:
    return "SpaceAfter=No" in misc.split("|")


def surface_tokens(
    words: list[str], mwts: Any, misc: list[str] | None = None
) -> list[tuple[str, int, int, bool, bool]]:
    """Surface tokens as ``(form, first word, last word, SpaceAfter=No, multiword)``, 0-based inclusive word indices:
    a multiword token (a record of ``metadata["multiword_tokens"]``; malformed ones are ignored) as its form, every
    other word as itself (``misc``: the words' MISC column, for their SpaceAfter)."""
    starts: dict[int, dict[str, Any]] = {}
    for m in mwts or ():
        if isinstance(m, dict) and isinstance(m.get("first"), int) and isinstance(m.get("last"), int):
            starts[m["first"]] = m
    out, i = [], 0
    while i < len(words):
        m = starts.get(i)
        if m is not None and m["last"] >= i:
            out.append((str(m.get("form", "")), i, m["last"], _space_after_no(str(m.get("misc", "_"))), True))
            i = m["last"] + 1
        else:
            out.append((words[i], i, i, misc is not None and _space_after_no(misc[i]), False))
            i += 1
    return out


def _offsets(
    text: str, words: list[str], tokens: list[tuple[str, int, int, bool, bool]]
) -> list[tuple[int, int]] | None:
    offsets: list[tuple[int, int]] = []
    pos = 0
    for form, first, last, *_ in tokens:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if not text.startswith(form, pos):
            return None
        start, end = pos, pos + len(form)
        pos = end
        if first == last:
            offsets.append((start, end))
            continue
        spans = _split_token(text[start:end], words[first : last + 1])
        if spans is None:
            return None
        offsets.extend((start + a, start + b) for a, b in spans)
    return offsets


def _split_token(surface: str, parts: list[str]) -> list[tuple[int, int]] | None:
    """Spans of the words of a multiword token inside its surface form (non-empty, non-overlapping)."""
    spans, pos = [], 0
    low = surface.lower()
    for p in parts:
        if low.startswith(p.lower(), pos) and len(p) > 0:
            spans.append((pos, pos + len(p)))
            pos += len(p)
        else:
            break
    if len(spans) == len(parts) and pos == len(surface):
        return spans
    k, n = len(parts), len(surface)
    if n < k:
        return None
    cuts = [j * n // k for j in range(k + 1)]  # even split: "du" -> "d" + "u" for de + le
    return [(cuts[j], cuts[j + 1]) for j in range(k)]


def sentence_to_conllu(sentence: Sentence) -> str:
    """One sentence as a CoNLL-U block (comment lines, word lines, and a final empty line).

    Offsets must be relative to ``sentence.text`` (see :func:`format_conllu` for sentences of a Document).
    Columns missing from the sentence are written as ``_``; ``SpaceAfter=No`` is derived from the offsets when
    the sentence has no stored MISC column.
    """
    n = len(sentence)
    meta = sentence.metadata or {}
    scalar = (str, int, float, bool, type(None))
    comments = [(k, v) for k, v in meta.items() if k not in RESERVED_KEYS and isinstance(v, scalar)]
    newdoc = [(k, v) for k, v in comments if k.startswith("newdoc")]
    sent_id = [("sent_id", sentence.sent_id)] if sentence.sent_id is not None else []
    others = [(k, v) for k, v in comments if not k.startswith("newdoc")]
    lines = [_comment(key, value) for key, value in newdoc + sent_id + others]
    lines += ["# " + _one_line(str(free)) for free in meta.get("comments") or []]
    lines.append(_comment("text", sentence.text if sentence.text is not None else sentence.detokenized()[0]))

    misc = meta.get("misc")
    if misc is None:
        misc = _derived_misc(n, sentence.offsets, meta.get("multiword_tokens"))
    feats = meta.get("feats") or ["_"] * n
    deps = meta.get("deps") or ["_"] * n
    mwts = {int(t["first"]): t for t in meta.get("multiword_tokens") or []}
    empty: dict[int, list[str]] = {}
    for raw in meta.get("empty_nodes") or []:
        empty.setdefault(int(raw.split("\t", 1)[0].split(".")[0]), []).append(raw)

    def col(values: list[str] | None, i: int) -> str:
        return _field(values[i]) if values is not None else "_"

    lines.extend(empty.get(0, []))
    for i in range(n):
        if i in mwts:
            t = mwts[i]
            middle = t.get("columns") or ["_"] * 7
            lines.append(
                "\t".join([f"{i + 1}-{int(t['last']) + 1}", _field(t["form"]), *middle, _field(t.get("misc") or "_")])
            )
        left = [col(values, i) for values in (sentence.lemmas, sentence.upos, sentence.xpos, feats)]
        right = [col(values, i) for values in (sentence.deprels, deps, misc)]
        lines.append("\t".join([str(i + 1), _field(sentence.words[i]), *left, str(sentence.heads[i] + 1), *right]))
        lines.extend(empty.get(i + 1, []))
    return "\n".join(lines) + "\n\n"


def format_conllu(items: Iterable[Sentence | Document]) -> str:
    """CoNLL-U text for sentences and/or documents (see :func:`write_conllu`)."""
    return "".join(_blocks(items))


def write_conllu(items: Iterable[Sentence | Document], path: str | os.PathLike) -> int:
    """Write sentences and/or documents as CoNLL-U, atomically; returns the number of sentences written.

    A :class:`Document` is written sentence by sentence; its first sentence carries ``# newdoc`` (with
    ``id = doc_id`` if set) and each sentence gets ``# text`` cut from the document text, with offsets made
    relative to it. A document without sentences writes nothing.
    """
    n = 0
    with atomic_write(path) as f:
        for block in _blocks(items):
            f.write(block)
            n += 1
    return n


def _blocks(items: Iterable[Sentence | Document]) -> Iterator[str]:
    for item in items:
        if isinstance(item, Document):
            for k, s in enumerate(item.sentences):
                local = _localize(s, item.text)
                if k == 0 and not any(key.startswith("newdoc") for key in local.metadata):
                    meta = {("newdoc id" if item.doc_id is not None else "newdoc"): item.doc_id}
                    meta.update(local.metadata)
                    local.metadata = meta
                yield sentence_to_conllu(local)
        else:
            yield sentence_to_conllu(item)


def _localize(sentence: Sentence, doc_text: str | None) -> Sentence:
    """A copy of a document's sentence whose text is its own span and whose offsets are relative to it."""
    data = sentence.to_dict()
    if doc_text is not None and sentence.offsets is not None and sentence.text is None:
        start, end = sentence.offsets[0][0], sentence.offsets[-1][1]
        data["text"] = doc_text[start:end]
        data["offsets"] = [[a - start, b - start] for a, b in sentence.offsets]
    elif sentence.text is None:
        data.pop("offsets", None)
    data["metadata"] = dict(sentence.metadata)
    return Sentence.from_dict(data)


def _derived_misc(n: int, offsets: list[tuple[int, int]] | None, mwts: list[dict] | None) -> list[str]:
    """MISC column implied by the offsets: ``SpaceAfter=No`` where a word ends where the next begins.

    Words inside a multiword token get ``_`` (their spacing is the token's, written on its range line).
    """
    misc = ["_"] * n
    if offsets is None:
        return misc
    inside: set[int] = set()
    for t in mwts or []:
        inside.update(range(int(t["first"]), int(t["last"]) + 1))
    for i in range(n - 1):
        if i not in inside and offsets[i][1] == offsets[i + 1][0]:
            misc[i] = "SpaceAfter=No"
    return misc


def _one_line(value: str) -> str:
    return " ".join(value.splitlines()) if ("\n" in value or "\r" in value) else value


def _comment(key: str, value: Any) -> str:
    return f"# {key}" if value is None else f"# {key} = {_one_line(str(value))}"


def _field(value: str) -> str:
    """A CoNLL-U field: no tabs or newlines, never empty."""
    value = str(value)
    if "\t" in value or "\n" in value or "\r" in value:
        value = " ".join(value.split())
    return value or "_"
