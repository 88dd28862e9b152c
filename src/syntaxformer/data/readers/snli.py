"""SNLI: the original JSONL (:func:`read_snli_jsonl`; its Stanford parser trees become dependencies by the head rules
of :mod:`syntaxformer.data.headrules`) and the tokenized InferSent / SentEval ``s1`` / ``s2`` / ``labels`` triple
(:func:`read_snli_tokenized`, no trees); :func:`read_snli_examples` reads either as task examples.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from itertools import zip_longest
from pathlib import Path
from typing import NamedTuple

from syntaxformer.data.constituency import Tree
from syntaxformer.data.examples import TaskExample
from syntaxformer.data.readers.ptb import sentence_from_tree
from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import DataError, FormatError
from syntaxformer.utils import json_lines, open_text

__all__ = [
    "SNLI_LABELS",
    "UNLABELED",
    "NLIPair",
    "TextPair",
    "read_snli_examples",
    "read_snli_jsonl",
    "read_snli_tokenized",
]

logger = logging.getLogger(__name__)

#: The three SNLI classes; ``"-"`` marks a pair without annotator consensus (jsonl only).
SNLI_LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
#: The gold label of a pair without annotator consensus (skipped for training and evaluation).
UNLABELED = "-"


class NLIPair(NamedTuple):
    """A parsed premise / hypothesis pair (``sentence1`` / ``sentence2``), its ``gold_label`` and ``pairID``."""

    premise: Sentence
    hypothesis: Sentence
    label: str
    pair_id: str


class TextPair(NamedTuple):
    """A tokenized premise / hypothesis pair (words separated by single spaces) and its label."""

    premise: str
    hypothesis: str
    label: str


def read_snli_jsonl(
    path: str | Path, *, skip_unlabeled: bool = False, labels: bool = True, source: str = "stanford-parser:snli"
) -> Iterator[NLIPair]:
    """Read the rows of an ``snli_1.0_*.jsonl`` file lazily as :class:`NLIPair` objects, parsing both sentences'
    trees (the Stanford parser's, so ``source`` is not gold). ``skip_unlabeled`` skips rows whose ``gold_label`` is
    ``"-"``; ``labels`` also sets dependency labels. Sentences have ``sent_id`` ``"<pairID>:s1"`` / ``":s2"``, the
    cleaned tree (``ROOT`` wrapper removed) and ``metadata`` ``{"pairID", "gold_label", "line"}``.

    Raises:
        FormatError: invalid JSON, a row that is not an object, a missing or non-string field, a ``gold_label``
            other than the three labels and ``"-"``, or a malformed tree, naming file and line.
    """
    with open_text(path) as f:
        for lineno, row in json_lines(f, str(path), "an SNLI row (an object with the fields of snli_1.0_*.jsonl)"):
            missing = [k for k in ("pairID", "gold_label", "sentence1_parse", "sentence2_parse") if k not in row]
            if missing:
                raise FormatError(
                    f"SNLI row lacks {missing}; expected the fields of snli_1.0_*.jsonl", str(path), lineno
                )
            for k in ("gold_label", "sentence1_parse", "sentence2_parse"):
                if not isinstance(row[k], str):
                    raise FormatError(f"SNLI field {k!r} is {row[k]!r:.40}; expected a string", str(path), lineno)
            if not isinstance(row["pairID"], (str, int)) or isinstance(row["pairID"], bool):
                raise FormatError(f"SNLI field 'pairID' is {row['pairID']!r:.40}; expected a string", str(path), lineno)
            gold = row["gold_label"]
            if gold not in SNLI_LABELS and gold != UNLABELED:
                raise FormatError(
                    f"unknown SNLI gold_label {gold!r}; expected one of {list(SNLI_LABELS)} or "
                    f"{UNLABELED!r} (no annotator consensus)",
                    str(path),
                    lineno,
                )
            if skip_unlabeled and gold == UNLABELED:
                continue
            pair_id = str(row["pairID"])
            sentences = []
            for key in ("sentence1", "sentence2"):
                tree = Tree.from_string(row[f"{key}_parse"], f"{path} ({key}_parse)", lineno)
                meta = {"pairID": pair_id, "gold_label": gold, "line": lineno}
                sent_id, where = f"{pair_id}:s{key[-1]}", (str(path), lineno)
                sentences.append(
                    sentence_from_tree(tree, sent_id=sent_id, source=source, metadata=meta, labels=labels, where=where)
                )
            yield NLIPair(sentences[0], sentences[1], gold, pair_id)


def read_snli_tokenized(folder: str | Path, split: str = "dev", *, check_labels: bool = True) -> Iterator[TextPair]:
    """Read the ``s1.<split>`` / ``s2.<split>`` / ``labels.<split>`` triple of ``folder`` lazily as
    :class:`TextPair` objects (lines stripped); ``check_labels`` refuses a label not in :data:`SNLI_LABELS`.

    Raises:
        DataError: a file is missing.
        FormatError: the files have different numbers of lines, or a label is unknown (naming file and line).
    """
    folder = Path(folder)
    paths = [folder / f"{name}.{split}" for name in ("s1", "s2", "labels")]
    for p in paths:
        if not p.is_file():
            raise DataError(f"SNLI file {p} not found (expected s1.{split}, s2.{split} and labels.{split} in {folder})")
    with open_text(paths[0]) as f1, open_text(paths[1]) as f2, open_text(paths[2]) as f3:
        for lineno, lines in enumerate(zip_longest(f1, f2, f3), 1):
            if None in lines:
                short = paths[lines.index(None)]
                raise FormatError(
                    f"{short.name} ends before the other SNLI files (line {lineno} is missing "
                    "there); s1, s2 and labels must have one line per pair",
                    str(short),
                    lineno,
                )
            premise, hypothesis, label = (line.strip() for line in lines)
            if check_labels and label not in SNLI_LABELS:
                raise FormatError(
                    f"unknown SNLI label {label!r}; expected one of {list(SNLI_LABELS)}", str(paths[2]), lineno
                )
            yield TextPair(premise, hypothesis, label)


def read_snli_examples(path: str | os.PathLike, split: str = "dev") -> tuple[list[TaskExample], list[str]]:
    """``(examples, files read)`` of SNLI: a ``.jsonl`` file (examples carry its parses as ``syntax_a`` /
    ``syntax_b``; rows without a gold label are skipped), or the s1/s2/labels triple (``path``: their folder, with
    ``split`` as the suffix, or the ``s1.<split>`` file). ``split`` also names the ids.
    """
    path = Path(path)
    labels = list(SNLI_LABELS)
    if path.suffix == ".jsonl":
        out, unlabeled = [], 0
        for pair in read_snli_jsonl(path):
            if pair.label == UNLABELED:
                unlabeled += 1
                continue
            out.append(
                TaskExample(
                    guid=f"{split}-{pair.pair_id}",
                    text_a=pair.premise.detokenized()[0],
                    text_b=pair.hypothesis.detokenized()[0],
                    label=labels.index(pair.label),
                    syntax_a=pair.premise,
                    syntax_b=pair.hypothesis,
                )
            )
        if unlabeled:
            logger.info(
                "%s: %d pairs without a gold label ('-', no annotator consensus) left out; %d kept",
                path,
                unlabeled,
                len(out),
            )
        return out, [str(path)]
    if path.is_file() and path.name.startswith("s1."):
        split_suffix = path.name[3:]
        folder = path.parent
    else:
        folder, split_suffix = path, split
    files = [str(folder / f"{n}.{split_suffix}") for n in ("s1", "s2", "labels")]
    out = [
        TaskExample(guid=f"{split}-{i}", text_a=p.premise, text_b=p.hypothesis, label=labels.index(p.label))
        for i, p in enumerate(read_snli_tokenized(folder, split_suffix))
    ]
    return out, files
