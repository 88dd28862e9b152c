"""Labeled text (pair) examples, as the dataset readers produce them, and the split that holds them.

A reader turns a file into :class:`TaskExample` objects (label already mapped to its class id, or a float for
regression, ``None`` when the file has no labels); a task wraps them in :class:`TaskData` with where they came from
and a content fingerprint (:func:`file_fingerprint` of the files read, or :func:`content_fingerprint` of the examples
themselves), which keys the processed-features cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from syntaxformer.data.constituency import Tree
from syntaxformer.data.sentence import Sentence
from syntaxformer.utils import subsample

__all__ = ["TaskData", "TaskExample", "content_fingerprint", "example_seed", "file_fingerprint", "question_words"]


@dataclass
class TaskExample:
    """One example.

    Attributes:
        guid: a stable id (``"<split>-<row id>"``), used e.g. to seed parser noise per example.
        text_a: the (first) text.
        text_b: the second text of a pair, or ``None``.
        label: class id (int), value (float, regression) or ``None`` (unlabeled).
        syntax_a: a given analysis of ``text_a`` (SNLI jsonl parses), or ``None`` (parse it).
        syntax_b: likewise for ``text_b``.
        tree_a: a gold constituency tree of ``text_a`` whose leaves are its gold tokens (SST), or ``None``. When
            ``syntax_a`` is ``None``, featurization parses these tokens (one tree over exactly them) for the
            dependency tree and keeps this constituency tree.
        tree_b: likewise for ``text_b``.
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: int | float | None = None
    syntax_a: Sentence | None = None
    syntax_b: Sentence | None = None
    tree_a: Tree | None = None
    tree_b: Tree | None = None


@dataclass
class TaskData:
    """The examples of one split and where they came from.

    Attributes:
        examples: the examples, in file order (after subsampling, in sampled order): :class:`TaskExample` s, or a
            task's own example type (SQuAD's and RACE's readers have theirs).
        source: human-readable origin (file paths or ``hub:<name>``).
        fingerprint: hex digest of the content read (file bytes, or the hub data set's fingerprint).
        total: number of examples before subsampling.
        sample_note: description of the subsampling applied, or ``None``.
        metadata: other facts about the data, e.g. ``"constituency_source"`` (where the gold trees come from) and
            ``"examples"`` (``"sentences"`` or ``"sentences+phrases"``) for SST.
    """

    examples: Sequence[Any]
    source: str
    fingerprint: str
    total: int = 0
    sample_note: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.examples)

    @classmethod
    def of_inputs(cls, examples: list[Any], fields: Sequence[str]) -> TaskData:
        """Unlabeled examples made from raw inputs (``predict --input``, the pipelines), fingerprinted by the
        content of their ``fields``."""
        fingerprint = content_fingerprint([getattr(e, f) for f in fields] for e in examples)
        return cls(examples, "raw inputs", fingerprint, len(examples))

    @property
    def has_labels(self) -> bool:
        """True if every example has a label (examples without a ``label`` field, SQuAD's, count as labeled)."""
        return bool(self.examples) and all(getattr(e, "label", 0) is not None for e in self.examples)

    def subsampled(self, max_samples: int | None, seed: int) -> TaskData:
        """A seeded random subset of ``max_samples`` examples (:func:`syntaxformer.utils.subsample`; ``self`` if
        ``None`` or not smaller); the fingerprint and ``sample_note`` say which subset it is."""
        n = len(self.examples)
        if max_samples is None or max_samples >= n:
            return self
        kept = subsample(self.examples, max_samples, seed)
        note = f"random subsample of {max_samples} of {n} examples (seed {seed})"
        fp = hashlib.sha256(f"{self.fingerprint}|sample|{max_samples}|{seed}".encode()).hexdigest()
        return replace(self, examples=kept, fingerprint=fp, total=n, sample_note=note, metadata=dict(self.metadata))


def file_fingerprint(paths: Sequence[str | os.PathLike]) -> str:
    """SHA-256 of the bytes of the files (in order, each with its size as a separator)."""
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        h.update(f"{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def content_fingerprint(records: Iterable[Sequence[Any]]) -> str:
    """SHA-256 of examples by content: each record (the JSON-serialisable fields that define one example, e.g.
    ``[qid, context, question, answers]``) as JSON, NUL-separated. For readers whose examples are not the bytes of
    one file (SQuAD 2.0 and RACE split and filter their sources)."""
    h = hashlib.sha256()
    for record in records:
        h.update(json.dumps(list(record), ensure_ascii=False).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def example_seed(guid: str, seed: int) -> list[int]:
    """A seed sequence for per-example randomness that depends on the example id, not its position."""
    return [int(seed), zlib.crc32(guid.encode("utf-8"))]


def question_words(question: str) -> int:
    """Question length in words (whitespace tokens): the unit tasks record per question and the length buckets
    (:mod:`syntaxformer.analysis.buckets`) group by."""
    return len(question.split())
