"""The annotator interface: anything that turns texts (or given words) into dependency parses.

An :class:`Annotator` is the one way syntax enters syntaxformer from a parser. Implementations: spaCy
(:class:`~syntaxformer.data.annotators.spacy.SpacyAnnotator`) and parses made by any external parser and stored in
a file (:class:`~syntaxformer.data.annotators.preparsed.PreparsedAnnotator`). A new parser is one subclass plus,
to make it available by name, :func:`~syntaxformer.data.annotators.factory.register_annotator` (a complete
example: docs/architecture.md, *A parser*).
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Iterable, Iterator, Sequence

from syntaxformer.data.sentence import Document, Sentence

__all__ = ["Annotator"]

_PIPE_BLOCK = 1024  # texts per annotate() call in the default pipe()


class Annotator(abc.ABC):
    """A dependency parser as syntaxformer sees it.

    Attributes:
        source: human-readable name of the parser, e.g. ``"spacy:en_core_web_sm@3.8.0"``; stored in the
            ``source`` of the sentences it makes. Set it as a class attribute or in ``__init__``.
    """

    source: str

    @abc.abstractmethod
    def cache_key(self) -> str:
        """Identity of the parser **by content**: equal keys mean equal parses of every input.

        Parse and feature caches are keyed by it, so it must change whenever the output can change (other weights,
        other configuration, other code version), even if the parser's name and version stay the same.
        """

    @abc.abstractmethod
    def annotate(self, texts: Sequence[str]) -> list[Document]:
        """Parse passages.

        Args:
            texts: raw texts; each may hold several sentences.

        Returns:
            One :class:`Document` per text, in order: ``text`` is the input, each sentence is its own tree, and
            word offsets are relative to the input text. An empty or whitespace-only text gives a Document with
            no sentences.
        """

    @abc.abstractmethod
    def annotate_pretokenized(self, words: Sequence[Sequence[str]]) -> list[Sentence]:
        """Parse given words (e.g. gold tokens), never re-tokenized or split.

        Args:
            words: one non-empty word list per sentence.

        Returns:
            One :class:`Sentence` per input: exactly one tree over exactly the given words.
        """

    def pipe(self, texts: Iterable[str]) -> Iterator[Document]:
        """Like :meth:`annotate`, but lazily over any iterable (parsed in blocks; override to stream better)."""
        it = iter(texts)
        while block := list(itertools.islice(it, _PIPE_BLOCK)):
            yield from self.annotate(block)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self, 'source', '?')!r})"
