"""Parallel text (translation): line-aligned plain text (Multi30k, :func:`read_parallel`), WMT ``.sgm`` files
(newstest, :func:`read_sgm` / :func:`read_sgm_pair`; text taken as sacreBLEU takes it: the characters between
``<seg ...>`` and ``</seg>``, stripped, entities as they are), either by extension (:func:`read_corpus`), seeded
subsets (:func:`corpus_fraction`) and the copies under ``../shared/data`` (:func:`multi30k`, :func:`newstest2013`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.data.examples import content_fingerprint
from syntaxformer.data.readers.table import split_lines
from syntaxformer.defaults import shared_data_dir
from syntaxformer.errors import ConfigError, DataError, FormatError
from syntaxformer.utils import open_text

__all__ = [
    "MULTI30K_SPLITS",
    "ParallelCorpus",
    "Segment",
    "corpus_fraction",
    "multi30k",
    "newstest2013",
    "read_corpus",
    "read_lines",
    "read_parallel",
    "read_sgm",
    "read_sgm_pair",
]


@dataclass
class ParallelCorpus:
    """Source and target sentences (raw text; ``targets`` ``None`` for source-only input), parallel by index, with
    an id per pair (``file:line`` or ``docid:segid``) and a short ``name`` (where it came from)."""

    sources: list[str]
    targets: list[str] | None
    ids: list[str]
    name: str = ""

    def __post_init__(self) -> None:
        if self.targets is not None and len(self.targets) != len(self.sources):
            raise DataError(f"{self.name or 'corpus'}: {len(self.sources)} sources but {len(self.targets)} targets")
        if len(self.ids) != len(self.sources):
            raise DataError(f"{self.name or 'corpus'}: {len(self.ids)} ids for {len(self.sources)} sentences")

    def __len__(self) -> int:
        return len(self.sources)

    # -- what the runner reads of a split (syntaxformer.tasks.base.SplitData) --
    @property
    def source(self) -> str:
        return self.name

    @property
    def fingerprint(self) -> str:
        """A hash of the pairs (:func:`~syntaxformer.data.examples.content_fingerprint`)."""
        targets: Sequence[str | None] = self.targets or [None] * len(self.sources)
        return content_fingerprint(zip(self.sources, targets))

    @property
    def total(self) -> int:
        return len(self.sources)

    @property
    def sample_note(self) -> str | None:
        return None

    @property
    def metadata(self) -> Mapping[str, Any]:
        return {}

    @property
    def has_labels(self) -> bool:
        return self.targets is not None

    def select(self, indices: Sequence[int], name: str | None = None) -> ParallelCorpus:
        """The pairs at ``indices`` (in that order)."""
        idx = [int(i) for i in indices]
        return ParallelCorpus(
            [self.sources[i] for i in idx],
            None if self.targets is None else [self.targets[i] for i in idx],
            [self.ids[i] for i in idx],
            name or self.name,
        )


def read_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 text file without their line ends (``\\n`` or ``\\r\\n``).

    Raises:
        FormatError: the file is missing or not UTF-8.
    """
    if not Path(path).is_file():
        raise FormatError("file not found", str(path))
    with open_text(path, newline="") as f:
        return split_lines(f.read())


def read_parallel(source: str | Path, target: str | Path | None = None) -> ParallelCorpus:
    """Read line-parallel plain text: ``source`` and (unless ``None``) ``target``, one sentence per line.

    Raises:
        FormatError: a file is missing / not UTF-8, the line counts differ, or a line is empty (the message names
            the first empty line).
    """
    src = read_lines(source)
    tgt = read_lines(target) if target is not None else None
    if tgt is not None and len(tgt) != len(src):
        raise FormatError(
            f"{len(src)} lines in the source file but {len(tgt)} lines in the target file {target}; "
            "parallel files must have one sentence per line, aligned line by line",
            str(source),
        )
    for name, lines in ((source, src), (target, tgt or [])):
        for i, line in enumerate(lines, 1):
            if not line.strip():
                raise FormatError("empty line; every line must hold a sentence", str(name), i)
    return ParallelCorpus(src, tgt, [f"{Path(source).name}:{i}" for i in range(1, len(src) + 1)], str(source))


@dataclass
class Segment:
    """One ``<seg>`` of a WMT ``.sgm`` file."""

    doc_id: str
    seg_id: str
    text: str
    line: int


_DOC = re.compile(r"<doc\b([^>]*)>", re.IGNORECASE)
_SEG = re.compile(r"<seg\b([^>]*)>(.*?)</seg>", re.IGNORECASE)
_END_DOC = re.compile(r"</doc>", re.IGNORECASE)
_ATTR = re.compile(r"""(\w+)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))""")


def _attrs(text: str) -> dict[str, str]:
    return {m.group(1).lower(): next(g for g in m.groups()[2:] if g is not None) for m in _ATTR.finditer(text)}


def read_sgm(path: str | Path) -> list[Segment]:
    """Segments of a WMT SGML file, in file order.

    Raises:
        FormatError: missing file, no segments, a ``<seg>`` outside a ``<doc>``, a ``<seg>`` without an ``id``, an
            unclosed ``<seg>`` (each segment must open and close on one line, as in every WMT release), a
            ``<doc>`` without ``docid``, or a segment id repeated within a document.
    """
    lines = read_lines(path)
    out: list[Segment] = []
    doc: str | None = None
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        m = _DOC.search(line)
        if m:
            attrs = _attrs(m.group(1))
            if "docid" not in attrs:
                raise FormatError("<doc> without a docid attribute", str(path), n)
            doc, seen = attrs["docid"], set()
        if _END_DOC.search(line) and doc is None:
            raise FormatError("</doc> without an open <doc>", str(path), n)
        opens = len(re.findall(r"<seg\b", line, re.IGNORECASE))
        segs = _SEG.findall(line)
        if opens != len(segs):
            raise FormatError("<seg> not closed by </seg> on the same line", str(path), n)
        for attr_text, text in segs:
            if doc is None:
                raise FormatError("<seg> outside a <doc docid=...> element", str(path), n)
            attrs = _attrs(attr_text)
            if "id" not in attrs:
                raise FormatError('<seg> without an id attribute (expected <seg id="N">)', str(path), n)
            if attrs["id"] in seen:
                raise FormatError(f"segment id {attrs['id']!r} repeated in document {doc!r}", str(path), n)
            seen.add(attrs["id"])
            out.append(Segment(doc, attrs["id"], text.strip(), n))
        if _END_DOC.search(line):
            doc = None
    if not out:
        raise FormatError("no <seg id=...>...</seg> segments found; is this a WMT .sgm file?", str(path))
    return out


def read_sgm_pair(source: str | Path, reference: str | Path | None = None) -> ParallelCorpus:
    """Source (and reference) ``.sgm`` files as a corpus; ids are ``docid:segid``.

    Raises:
        FormatError: as :func:`read_sgm`, or the two files' (document, segment) ids differ (the first mismatch is
            named).
    """
    src = read_sgm(source)
    ref = read_sgm(reference) if reference is not None else None
    if ref is not None:
        if len(ref) != len(src):
            raise FormatError(
                f"{len(src)} segments in the source but {len(ref)} in the reference {reference}", str(source)
            )
        for a, b in zip(src, ref):
            if (a.doc_id, a.seg_id) != (b.doc_id, b.seg_id):
                raise FormatError(
                    f"segment {a.doc_id}:{a.seg_id} (line {a.line}) faces {b.doc_id}:{b.seg_id} "
                    f"(line {b.line}) of the reference {reference}; the files are not parallel",
                    str(source),
                    a.line,
                )
    return ParallelCorpus(
        [s.text for s in src],
        None if ref is None else [s.text for s in ref],
        [f"{s.doc_id}:{s.seg_id}" for s in src],
        str(source),
    )


def read_corpus(source: str | Path, target: str | Path | None = None) -> ParallelCorpus:
    """:func:`read_sgm_pair` for ``.sgm`` files, else :func:`read_parallel`."""
    if str(source).lower().endswith(".sgm"):
        return read_sgm_pair(source, target)
    return read_parallel(source, target)


def corpus_fraction(corpus: ParallelCorpus, fraction: float, seed: int = 0) -> ParallelCorpus:
    """A seeded random ``fraction`` of the pairs (``round(fraction * n)``, at least 1), kept in corpus order.

    The subsets of one seed are nested: the 10% subset is contained in the 25% one, and so on.
    """
    if not 0.0 < fraction <= 1.0:
        raise ConfigError(f"fraction must lie in (0, 1], got {fraction}")
    if fraction == 1.0:
        return corpus
    n = max(1, round(fraction * len(corpus)))
    order = np.random.default_rng(seed).permutation(len(corpus))
    return corpus.select(sorted(order[:n].tolist()), f"{corpus.name} ({fraction:g}, seed {seed})")


MULTI30K_SPLITS = {"train": "train", "val": "val", "test2016": "test_2016_flickr"}


def _shared(*parts: str) -> Path:
    root = shared_data_dir()
    if root is None:
        raise DataError(f"no shared data folder: set SYNTAXFORMER_DATA to the folder that holds {'/'.join(parts)}")
    path = root.joinpath(*parts)
    if not path.exists():
        raise DataError(f"{path} not found")
    return path


def multi30k(
    split: str, data_dir: str | Path | None = None, source_lang: str = "en", target_lang: str = "de"
) -> ParallelCorpus:
    """A Multi30k task-1 split (``train`` 29,000, ``val`` 1,014, ``test2016`` 1,000 pairs)."""
    if split not in MULTI30K_SPLITS:
        raise ConfigError(f"unknown Multi30k split {split!r}; expected one of {', '.join(MULTI30K_SPLITS)}")
    folder = Path(data_dir) if data_dir is not None else _shared("multi30k")
    stem = MULTI30K_SPLITS[split]
    corpus = read_parallel(folder / f"{stem}.{source_lang}", folder / f"{stem}.{target_lang}")
    corpus.name = f"multi30k/{split}"
    return corpus


def newstest2013(data_dir: str | Path | None = None) -> ParallelCorpus:
    """WMT newstest2013 English→German from the ``.sgm`` release (3,000 segments)."""
    folder = Path(data_dir) if data_dir is not None else _shared("wmt14_ende", "newstest2013")
    corpus = read_sgm_pair(folder / "newstest2013-src.en.sgm", folder / "newstest2013-ref.de.sgm")
    corpus.name = "newstest2013"
    return corpus
