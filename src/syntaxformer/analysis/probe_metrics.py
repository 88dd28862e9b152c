"""The tree targets and scores of the probes (:mod:`syntaxformer.analysis.probes`): tree distances, the minimum
spanning tree, UUAS, root accuracy and Hewitt & Manning's Spearman correlations averaged per sentence length
(punctuation as described in :mod:`syntaxformer.analysis.probes`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import minimum_spanning_tree, shortest_path
from scipy.stats import rankdata

from syntaxformer.data.sentence import Sentence
from syntaxformer.data.tree import roots
from syntaxformer.errors import DataError

__all__ = [
    "PUNCTUATION_UPOS",
    "SPEARMAN_LENGTHS",
    "minimum_spanning_tree_edges",
    "root_accuracy",
    "spearman_by_length",
    "tree_distance_matrix",
    "uuas",
]


#: UPOS tags removed before the minimum spanning tree and from the root candidates.
PUNCTUATION_UPOS: frozenset[str] = frozenset({"PUNCT"})

#: Sentence lengths (words, punctuation included) over which the Spearman correlations are averaged (H&M).
SPEARMAN_LENGTHS: tuple[int, int] = (5, 50)


def tree_distance_matrix(heads: Sequence[int]) -> np.ndarray:
    """``[n, n]`` number of arcs on the path between every two words of a dependency tree (``heads`` 0-based,
    -1 = root)."""
    n = len(heads)
    child = np.array([i for i, h in enumerate(heads) if h >= 0], dtype=np.int64)
    parent = np.array([h for h in heads if h >= 0], dtype=np.int64)
    graph = csr_matrix((np.ones(len(child)), (child, parent)), shape=(n, n))
    dist = shortest_path(graph, directed=False, unweighted=True)
    if np.isinf(dist).any():
        raise DataError(f"heads {list(heads)} do not form one tree (some words are not connected)")
    return dist.astype(np.int64)


def minimum_spanning_tree_edges(distances: np.ndarray) -> set[tuple[int, int]]:
    """The edges ``(i, j)``, ``i < j``, of a minimum spanning tree of the complete graph whose edge weights are the
    symmetric matrix ``distances`` ``[n, n]`` (the diagonal is ignored). scipy treats a zero weight as a missing edge,
    so the off-diagonal weights are shifted to start at 1 first: adding a constant to every edge changes no spanning
    tree's rank (all have ``n - 1`` edges)."""
    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    if n < 2:
        return set()
    d = (d + d.T) / 2
    off = ~np.eye(n, dtype=bool)
    shifted = np.where(off, d - d[off].min() + 1.0, 0.0)
    tree = minimum_spanning_tree(np.triu(shifted)).tocoo()
    return {(int(min(i, j)), int(max(i, j))) for i, j in zip(tree.row, tree.col)}


def _keep(sentence: Sentence) -> np.ndarray:
    return np.array([t not in PUNCTUATION_UPOS for t in sentence.upos or [""] * len(sentence)], dtype=bool)


def uuas(predicted: Sequence[np.ndarray], sentences: Sequence[Sentence]) -> float:
    """Undirected unlabeled attachment score of the minimum spanning trees of the predicted distance matrices,
    pooled over the sentences: correct arcs / gold arcs, both without punctuation (:data:`PUNCTUATION_UPOS`)."""
    correct = total = 0
    for d, s in zip(predicted, sentences):
        mask = _keep(s)
        keep = np.flatnonzero(mask)
        gold = {
            (min(int(i), s.heads[i]), max(int(i), s.heads[i])) for i in keep if s.heads[i] >= 0 and mask[s.heads[i]]
        }
        sub = np.asarray(d)[np.ix_(keep, keep)]
        pred = {(int(keep[i]), int(keep[j])) for i, j in minimum_spanning_tree_edges(sub)}
        correct += len(pred & gold)
        total += len(gold)
    return correct / total if total else float("nan")


def _row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of every row of ``a`` with the same row of ``b`` (0 where a row is constant)."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(-1) / den
    return np.where(den > 0, r, 0.0)


def spearman_by_length(
    predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray], lengths: tuple[int, int] = SPEARMAN_LENGTHS
) -> float:
    """H&M's Spearman correlations: Spearman's rho of every row of each predicted array with the same gold row,
    averaged per sentence length ``n`` (punctuation counted), then over the lengths in ``lengths`` (inclusive);
    ``nan`` if no sentence has such a length. For ``[n, n]`` distance matrices (one row per word, diagonal
    included) this is DSpr.; for ``[n]`` depths (one row per sentence) NSpr."""
    lo, hi = lengths
    per: dict[int, list[float]] = {}
    for p, g in zip(predicted, gold):
        n = len(g)
        if lo <= n <= hi:
            p2, g2 = np.atleast_2d(np.asarray(p, dtype=np.float64)), np.atleast_2d(np.asarray(g, dtype=np.float64))
            per.setdefault(n, []).extend(float(r) for r in _row_pearson(rankdata(p2, axis=-1), rankdata(g2, axis=-1)))
    if not per:
        return float("nan")
    return float(np.mean([np.mean(v) for v in per.values()]))


def root_accuracy(predicted: Sequence[np.ndarray], sentences: Sequence[Sentence]) -> float:
    """Share of the sentences whose non-punctuation word of smallest predicted depth is the gold root (sentences
    whose root is punctuation are not counted)."""
    hits = total = 0
    for p, s in zip(predicted, sentences):
        keep = _keep(s)
        root = roots(s.heads)
        if len(root) != 1 or not keep[root[0]]:
            continue
        cand = np.flatnonzero(keep)
        hits += int(cand[np.argmin(np.asarray(p)[cand])] == root[0])
        total += 1
    return hits / total if total else float("nan")
