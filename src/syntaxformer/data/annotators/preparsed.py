"""Parses made by any external parser (Stanza, UDPipe, CoreNLP, ...), read from a file and matched to the texts.

The file is CoNLL-U (``# text = ...`` on every sentence) or syntaxformer JSONL (what ``syntaxformer annotate
--output x.jsonl`` writes); nothing is parsed (docs/parsing.md). ``annotate`` matches a passage on its
whitespace-normalised text: a record with that text, or a run of consecutive sentences whose texts, joined by
spaces, give it; word offsets are re-computed against the input text. ``annotate_pretokenized`` matches the exact
word sequence of one sentence. The first match in the file wins; no match is a ``ParseNotFoundError``. Every parse
is checked when the file is read (:meth:`PreparsedAnnotator._check_spelling`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from syntaxformer.data.annotators.base import Annotator
from syntaxformer.data.readers.conllu import read_conllu, surface_tokens
from syntaxformer.data.sentence import Document, Sentence, join_words, read_jsonl
from syntaxformer.errors import AnnotatorError, FormatError, ParseNotFoundError, clip_text

__all__ = ["PREPARSED_FORMATS", "PreparsedAnnotator"]

#: File formats and the extensions that select them.
PREPARSED_FORMATS: dict[str, tuple[str, ...]] = {"conllu": (".conllu", ".conll"), "jsonl": (".jsonl",)}


def _normalise(text: str) -> str:
    return " ".join(text.split())


class PreparsedAnnotator(Annotator):
    """An annotator whose parses come from a CoNLL-U or JSONL file (see the module docstring).

    Args:
        path: the file.
        format: ``"conllu"`` or ``"jsonl"``; default from the extension (``.conllu`` / ``.conll`` / ``.jsonl``).

    Attributes:
        source: ``"<format>:<file name>"``, stored in the ``source`` of every sentence returned.

    Raises:
        AnnotatorError: the file does not exist or its format cannot be told.
        FormatError: the file is malformed (the message names the file and line).
    """

    def __init__(self, path: str | os.PathLike, format: str | None = None):
        self.path = os.fspath(path)
        if format is None:
            ext = os.path.splitext(self.path)[1].lower()
            format = next((f for f, exts in PREPARSED_FORMATS.items() if ext in exts), None)
            if format is None:
                raise AnnotatorError(
                    f"cannot tell the format of pre-parsed file {self.path!r} from its extension: "
                    "use .conllu or .jsonl, or say format='conllu' / 'jsonl'"
                )
        if format not in PREPARSED_FORMATS:
            raise AnnotatorError(
                f"unknown pre-parsed format {format!r}; expected one of {', '.join(PREPARSED_FORMATS)}"
            )
        if not os.path.isfile(self.path):
            raise AnnotatorError(f"pre-parsed file not found: {self.path}")
        self.format = format
        self.source = f"{format}:{os.path.basename(self.path)}"
        self._key = f"preparsed|{format}|{hashlib.sha256(Path(self.path).read_bytes()).hexdigest()}"
        self._sentences: list[Sentence] = []  # every sentence of the file, in order
        self._texts: list[str] = []  # their normalised texts
        self._docs: dict[str, tuple[Document, list[int]]] = {}  # normalised text -> Document record, its sentences
        self._by_text: dict[str, list[int]] = {}  # normalised sentence text -> indices of the sentences
        self._by_words: dict[tuple[str, ...], int] = {}
        self._own: list[str | None] = []  # per sentence: its text in the file, if its offsets point into it
        self._spans: list[list[tuple[int, int]] | None] = []  # and those offsets
        self._longest = 0
        for record in read_conllu(self.path) if format == "conllu" else read_jsonl(self.path):
            if isinstance(record, Document):
                first = len(self._sentences)
                for s in record.sentences:
                    self._add(s, record.text)
                if record.text is not None:
                    self._docs.setdefault(_normalise(record.text), (record, list(range(first, len(self._sentences)))))
            else:
                self._add(record, None)

    def _add(self, sentence: Sentence, doc_text: str | None) -> None:
        own, spans = None, None  # the sentence's text and word offsets in it, where the file gives them
        if sentence.offsets is not None and sentence.text is not None:
            own, spans = sentence.text, list(sentence.offsets)
        elif sentence.offsets is not None and doc_text is not None:
            a, b = sentence.offsets[0][0], sentence.offsets[-1][1]
            own, spans = doc_text[a:b], [(x - a, y - a) for x, y in sentence.offsets]
        given = own if own is not None else sentence.text
        if given is not None:
            self._check_spelling(sentence, given, spans)
        text = given if given is not None else " ".join(sentence.words)
        k = len(self._sentences)
        self._sentences.append(sentence)
        self._spans.append(spans)
        self._own.append(own)
        self._texts.append(_normalise(text))
        self._by_text.setdefault(self._texts[k], []).append(k)
        self._by_words.setdefault(tuple(sentence.words), k)
        self._longest = max(self._longest, len(self._texts[k]))

    def _check_spelling(self, sentence: Sentence, text: str, spans: list[tuple[int, int]] | None) -> None:
        """A parse must be of its text: the words (a multiword token as its surface form) spell the text, whitespace
        aside, and word offsets from the file point at their words.

        Raises:
            FormatError: naming the text, the file and the first word that differs.
        """
        tokens = surface_tokens(sentence.words, sentence.metadata.get("multiword_tokens"))
        inside = {k for _, a, b, _, multiword in tokens if multiword for k in range(a, b + 1)}
        spelled, target = "".join("".join(t[0].split()) for t in tokens), "".join(text.split())
        if spelled != target:
            at = next((i for i, (x, y) in enumerate(zip(spelled, target)) if x != y), min(len(spelled), len(target)))
            raise FormatError(
                f"the words {clip_text(' '.join(sentence.words), 60)} do not spell the text "
                f"{clip_text(text, 60)} (they differ from character {at} of the text without spaces: "
                f"{spelled[at : at + 12]!r} vs {target[at : at + 12]!r}); a parse must cover exactly its "
                "text",
                self.path,
            )
        for k, (word, (a, b)) in enumerate(zip(sentence.words, spans or ())):
            if k not in inside and text[a:b] != word:
                raise FormatError(
                    f"the offsets [{a}, {b}] of word {k} {word!r} point at {text[a:b]!r} in the text "
                    f"{clip_text(text, 60)}; offsets must point at their words",
                    self.path,
                )

    def __len__(self) -> int:
        """Number of sentences in the file."""
        return len(self._sentences)

    def cache_key(self) -> str:
        """``"preparsed|<format>|<SHA-256 of the file>"``: another file content is another parser."""
        return self._key

    # -- passages --------------------------------------------------------------------------------------
    def annotate(self, texts: Sequence[str]) -> list[Document]:
        """The parse of each passage, matched on its whitespace-normalised text (see the module docstring).

        Raises:
            ParseNotFoundError: a text has no parse in the file.
        """
        out = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise AnnotatorError(f"texts[{i}] is a {type(text).__name__}; expected str")
            out.append(self._document(text))
        return out

    def _document(self, text: str) -> Document:
        key = _normalise(text)
        if not key:
            return Document([], text=text)
        if key in self._docs:
            record, run = self._docs[key]
            return Document(self._place(run, text), text=text, doc_id=record.doc_id, metadata=dict(record.metadata))
        found = self._by_text.get(key)
        matched = found[:1] if found is not None else self._find_run(key)
        if matched is None:
            raise ParseNotFoundError(
                f"no parse of the text {clip_text(text, 60)} in {self.path} ({len(self)} sentences; "
                "texts are matched on their whitespace-normalised text)"
            )
        return Document(self._place(matched, text), text=text)

    def _find_run(self, key: str) -> list[int] | None:
        """Indices of consecutive sentences whose texts, joined by spaces, are ``key``."""
        # the first sentence is a prefix of the passage ending before a space
        for end in (i for i, ch in enumerate(key) if ch == " " and i <= self._longest):
            for first in self._by_text.get(key[:end], ()):
                run, pos, k = [first], end + 1, first + 1
                while pos < len(key) and k < len(self._texts):
                    nxt = self._texts[k]
                    if not key.startswith(nxt, pos) or (pos + len(nxt) < len(key) and key[pos + len(nxt)] != " "):
                        break
                    run.append(k)
                    pos += len(nxt) + 1
                    k += 1
                if pos >= len(key):
                    return run
        return None

    def _place(self, run: list[int], text: str) -> list[Sentence]:
        """Copies of the sentences ``run`` inside ``text`` (in order): offsets into it, no text of their own."""
        # The file's text and ``text`` agree up to whitespace, so they share their non-whitespace characters:
        # offsets are carried over by counting those.
        dense = [i for i, ch in enumerate(text) if not ch.isspace()]  # position of each non-whitespace character
        squeezed = "".join(text[i] for i in dense)
        cursor = 0  # in ``squeezed``
        out = []
        for k in run:
            sentence, own, spans = self._sentences[k], self._own[k], self._spans[k]
            target = self._texts[k].replace(" ", "")
            at = squeezed.find(target, cursor)
            if at < 0:
                raise ParseNotFoundError(
                    f"the parsed sentence {clip_text(self._texts[k], 60)} of {self.path} is not in the text "
                    f"{clip_text(text, 60)}"
                )
            if own is not None and spans is not None:
                rank = [0] * (len(own) + 1)  # rank[i]: non-whitespace characters of ``own`` before position i
                for i, ch in enumerate(own):
                    rank[i + 1] = rank[i] + (not ch.isspace())
                offsets = [(dense[at + rank[a]], dense[at + rank[b] - 1] + 1) for a, b in spans]
            else:
                offsets = _search(sentence.words, text, dense[at] if at < len(dense) else len(text), self.path)
            cursor = at + len(target)
            out.append(self._copy(sentence, text=None, offsets=offsets))
        return out

    def _copy(self, sentence: Sentence, **changes: Any) -> Sentence:
        """A copy of a sentence of the file with ``changes``, this annotator's ``source`` and its own metadata."""
        return dataclasses.replace(sentence, source=self.source, metadata=dict(sentence.metadata), **changes)

    # -- gold tokens -----------------------------------------------------------------------------------
    def annotate_pretokenized(self, words: Sequence[Sequence[str]]) -> list[Sentence]:
        """The parse of each word list, matched on the exact word sequence of one sentence.

        Returns:
            One :class:`Sentence` per input, ``words`` as given, ``text`` the words joined by single spaces.

        Raises:
            ParseNotFoundError: a word list is not the words of any sentence of the file.
        """
        out = []
        for ws in words:
            ws = list(ws)
            k = self._by_words.get(tuple(ws))
            if k is None:
                raise ParseNotFoundError(
                    f"no sentence with the words {clip_text(' '.join(ws), 60)} in {self.path} "
                    f"({len(self)} sentences; word lists are matched exactly)"
                )
            text, offsets = join_words(ws)
            out.append(self._copy(self._sentences[k], words=ws, offsets=offsets, text=text))
        return out

    def __repr__(self) -> str:
        return f"PreparsedAnnotator({self.path!r}, format={self.format!r})"


def _search(words: list[str], text: str, pos: int, path: str) -> list[tuple[int, int]]:
    """Offsets of ``words`` found one after the other in ``text`` from ``pos`` (for records without offsets)."""
    out = []
    for w in words:
        start = text.find(w, pos)
        if start < 0:
            raise ParseNotFoundError(
                f"the word {w!r} of a parsed sentence of {path} is not in the text "
                f"{clip_text(text, 60)}: the file's words must spell its texts"
            )
        out.append((start, start + len(w)))
        pos = start + len(w)
    return out
