"""Slow, obvious references for the probe metrics (:mod:`syntaxformer.analysis.probes`); they share no helper with
the library: Prim's algorithm on a dense matrix, a brute-force search over every edge subset, tree distances by
walking up to the lowest common ancestor, Spearman's rho from ``scipy.stats.spearmanr``."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.stats import spearmanr


def prim_edges(distances: np.ndarray) -> set[tuple[int, int]]:
    """Edges ``(i, j)``, ``i < j``, of the minimum spanning tree by Prim's algorithm, starting at node 0."""
    n = len(distances)
    if n < 2:
        return set()
    inside = {0}
    edges = set()
    while len(inside) < n:
        best = None
        for i in inside:
            for j in range(n):
                if j in inside:
                    continue
                if best is None or distances[i][j] < best[0]:
                    best = (distances[i][j], i, j)
        _, i, j = best
        edges.add((min(i, j), max(i, j)))
        inside.add(j)
    return edges


def brute_force_minimum_weight(distances: np.ndarray) -> float:
    """Smallest total weight of a spanning tree, over every subset of ``n - 1`` edges that connects all nodes."""
    n = len(distances)
    pairs = list(itertools.combinations(range(n), 2))
    best = np.inf
    for subset in itertools.combinations(pairs, n - 1):
        parent = list(range(n))

        def find(a, parent=parent):
            while parent[a] != a:
                a = parent[a]
            return a

        for a, b in subset:
            parent[find(a)] = find(b)
        if len({find(a) for a in range(n)}) == 1:
            best = min(best, sum(distances[a][b] for a, b in subset))
    return best


def path_to_root(heads, i):
    path = [i]
    while heads[path[-1]] >= 0:
        path.append(heads[path[-1]])
    return path


def tree_distance(heads, i, j) -> int:
    """Arcs between ``i`` and ``j``: up from ``i`` to the first node that is also above ``j``, then down."""
    up_i, up_j = path_to_root(heads, i), path_to_root(heads, j)
    for k, node in enumerate(up_i):
        if node in up_j:
            return k + up_j.index(node)
    raise ValueError("not one tree")


def random_heads(n: int, rng: np.random.Generator) -> list[int]:
    """A random dependency tree over ``n`` words (one root; each word attached to an earlier node of a random
    order)."""
    order = rng.permutation(n)
    heads = [-1] * n
    for k in range(1, n):
        heads[order[k]] = int(order[rng.integers(0, k)])
    return heads


def distance_spearman(predicted, gold, lo=5, hi=50) -> float:
    """H&M's DSpr. written out: per length, the mean over all rows of all sentences of that length of
    spearmanr(row, gold row); then the mean over lengths."""
    per_length: dict[int, list[float]] = {}
    for p, g in zip(predicted, gold):
        n = len(g)
        if lo <= n <= hi:
            for row_p, row_g in zip(p, g):
                per_length.setdefault(n, []).append(spearmanr(row_p, row_g).statistic)
    return float(np.mean([np.mean(v) for v in per_length.values()]))


def depth_spearman(predicted, gold, lo=5, hi=50) -> float:
    per_length: dict[int, list[float]] = {}
    for p, g in zip(predicted, gold):
        if lo <= len(g) <= hi:
            per_length.setdefault(len(g), []).append(spearmanr(p, g).statistic)
    return float(np.mean([np.mean(v) for v in per_length.values()]))
