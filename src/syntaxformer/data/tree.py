"""Dependency-tree algorithms on head arrays.

Head convention (used everywhere in syntaxformer): ``heads[i]`` is the **0-based** index of word ``i``'s head
within the same sentence, and ``-1`` marks a root. A sentence may have several roots (a forest), but no cycles.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from syntaxformer.errors import TreeError


def check_heads(heads: Sequence[int], what: str = "sentence") -> None:
    """Raise :class:`TreeError` unless ``heads`` is a valid forest (0-based, -1 = root, acyclic)."""
    n = len(heads)
    for i, h in enumerate(heads):
        if not isinstance(h, (int, np.integer)) or h < -1 or h >= n:
            raise TreeError(f"{what}: head of word {i} is {h!r}; heads must be -1 (root) or in 0..{n - 1}")
        if h == i:
            raise TreeError(f"{what}: word {i} is its own head")
    cycle = find_cycle(heads)
    if cycle is not None:
        raise TreeError(f"{what}: heads form a cycle through words {cycle}")


def find_cycle(heads: Sequence[int]) -> list[int] | None:
    """Words of one cycle in ``heads`` (0-based, -1 = root), in head order; ``None`` if acyclic.

    Heads must be in range (see :func:`check_heads`).
    """
    state = [0] * len(heads)  # 0 = unvisited, 1 = on the current path, 2 = known to reach a root
    for start in range(len(heads)):
        path: list[int] = []
        i = start
        while i != -1 and state[i] == 0:
            state[i] = 1
            path.append(i)
            i = heads[i]
        if i != -1 and state[i] == 1:
            return path[path.index(i) :]
        for j in path:
            state[j] = 2
    return None


def children(heads: Sequence[int] | np.ndarray) -> list[list[int]]:
    """Children of every word, in increasing order."""
    out: list[list[int]] = [[] for _ in heads]
    for i, h in enumerate(heads):
        if h >= 0:
            out[h].append(i)
    return out


def roots(heads: Sequence[int] | np.ndarray) -> list[int]:
    """Indices of the root words."""
    return [i for i, h in enumerate(heads) if h < 0]


def depths(heads: Sequence[int] | np.ndarray) -> np.ndarray:
    """Depth of every word (roots have depth 0). Assumes a valid forest."""
    n = len(heads)
    depth = np.full(n, -1, dtype=np.int64)
    for start in range(n):
        path = []
        i = start
        while i != -1 and depth[i] < 0:
            path.append(i)
            i = heads[i]
        d = -1 if i == -1 else depth[i]
        for j in reversed(path):
            d += 1
            depth[j] = d
    return depth


def euler_tour(heads: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pre-order entry times ``tin`` and subtree exit times ``tout`` (inclusive) of every word.

    Roots are visited left to right, children in increasing index. ``j`` is an ancestor-or-self of ``i`` iff
    ``tin[j] <= tin[i] <= tout[j]``; ``tout[i] - tin[i] + 1`` is the size of ``i``'s subtree.
    """
    n = len(heads)
    kids = children(heads)
    tin = np.zeros(n, dtype=np.int64)
    tout = np.zeros(n, dtype=np.int64)
    t = 0
    for r in roots(heads):
        stack = [(r, False)]
        while stack:
            node, done = stack.pop()
            if done:
                tout[node] = t - 1
                continue
            tin[node] = t
            t += 1
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(kids[node]))
    if t != n:
        raise TreeError(f"heads do not form a forest: reached {t} of {n} words from the roots (cycle?)")
    return tin, tout


def ancestors(heads: Sequence[int], i: int) -> list[int]:
    """Proper ancestors of word ``i``, nearest first."""
    out = []
    h = heads[i]
    while h >= 0:
        out.append(h)
        h = heads[h]
        if len(out) > len(heads):
            raise TreeError("cycle in heads")
    return out


def is_projective(heads: Sequence[int]) -> bool:
    """True if no two arcs cross (roots attached to a virtual node before the sentence)."""
    arcs = [(min(i, h), max(i, h)) for i, h in enumerate(heads) if h >= 0]
    arcs += [(-1, i) for i, h in enumerate(heads) if h < 0]
    for a, (l1, r1) in enumerate(arcs):
        for l2, r2 in arcs[a + 1 :]:
            if l1 < l2 < r1 < r2 or l2 < l1 < r2 < r1:
                return False
    return True
