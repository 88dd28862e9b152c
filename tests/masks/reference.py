"""Slow, obvious references for the mask builders, and generators of aligned test examples.

The references work on explicit node-level trees with :mod:`syntaxformer.data.tree` (``ancestors``, ``depths``)
and :func:`lca` below and loop over all pairs of positions; they share no code with :mod:`syntaxformer.data.collate` or
:mod:`syntaxformer.masks`.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np
import torch

from syntaxformer.data import tree as T
from syntaxformer.data.align import AlignedExample, WordForest
from syntaxformer.data.constituency import Tree


def lca(heads, i: int, j: int) -> int:
    """Lowest common ancestor-or-self of ``i`` and ``j``; -1 if they lie in different trees of the forest."""
    anc_j = {j, *T.ancestors(heads, j)}
    return next((a for a in [i, *T.ancestors(heads, i)] if a in anc_j), -1)


# ---------------------------------------------------------------------------------------------------------------
# Building examples
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Spec:
    """Sentences of an example: per text, a list of ``(local heads, constituency tree or None)``."""

    texts: list[list[tuple[list[int], Tree | None]]]
    n_pieces: list[int]  # per forest word


def make_forest(spec: Spec) -> WordForest:
    heads, tree_id, segment, trees, starts = [], [], [], [], []
    base = t = 0
    for seg, sentences in enumerate(spec.texts):
        for h, tr in sentences:
            starts.append(base)
            heads += [x + base if x >= 0 else -1 for x in h]
            tree_id += [t] * len(h)
            segment += [seg] * len(h)
            trees.append(tr)
            base += len(h)
            t += 1
    return WordForest(
        heads=np.array(heads, dtype=np.int64),
        tree_id=np.array(tree_id, dtype=np.int64),
        segment=np.array(segment, dtype=np.int64),
        trees=trees,
        sentence_start=np.array(starts, dtype=np.int64),
    )


def make_example(spec: Spec, extra_specials: tuple[int, ...] = ()) -> AlignedExample:
    """Full tokenization ``[CLS] text0 [SEP] (text1 [SEP])`` plus extra special tokens inserted at the given
    indices of the (growing) position list."""
    forest = make_forest(spec)
    wi, pi = [-1], [-1]
    w = 0
    for sentences in spec.texts:
        for h, _ in sentences:
            for _ in h:
                for k in range(spec.n_pieces[w]):
                    wi.append(w)
                    pi.append(k)
                w += 1
        wi.append(-1)
        pi.append(-1)
    for at in extra_specials:
        at = min(at, len(wi))
        wi.insert(at, -1)
        pi.insert(at, -1)
    L = len(wi)
    return AlignedExample(
        input_ids=np.arange(L),
        word_index=np.array(wi, dtype=np.int64),
        piece_index=np.array(pi, dtype=np.int64),
        n_pieces=np.array(spec.n_pieces, dtype=np.int64),
        forest=forest,
    )


def window(
    example: AlignedExample, start: int, end: int, cls: bool = True, sep: bool = True
) -> tuple[AlignedExample, list[int | None]]:
    """Positions ``start..end-1`` of ``example`` (optionally between new special tokens), and for every window
    position its full-example position (``None`` for the added specials)."""
    full = list(range(start, end))
    mapping: list[int | None] = ([None] if cls else []) + full + ([None] if sep else [])
    wi = np.array([-1 if m is None else example.word_index[m] for m in mapping], dtype=np.int64)
    pi = np.array([-1 if m is None else example.piece_index[m] for m in mapping], dtype=np.int64)
    return AlignedExample(
        input_ids=np.arange(len(mapping)),
        word_index=wi,
        piece_index=pi,
        n_pieces=example.n_pieces,
        forest=example.forest,
        window=1,
    ), mapping


def random_heads(n: int, rng: random.Random, roots: int = 1, deep: bool = False) -> list[int]:
    """Random forest: nodes in random order attach to an earlier node (``deep``: mostly the previous one, which
    gives long chains)."""
    order = list(range(n))
    rng.shuffle(order)
    heads = [-1] * n
    for idx in range(min(roots, n), n):
        heads[order[idx]] = order[idx - 1] if deep and rng.random() < 0.85 else order[rng.randrange(idx)]
    return heads


def random_tree(n: int, rng: random.Random, max_children: int = 4, deep: bool = False) -> Tree:
    """Random constituency tree over ``n`` words: pre-terminals, n-ary phrases, some unary chains
    (``deep``: mostly right-branching binary phrases)."""

    def build(lo: int, hi: int) -> Tree:
        if hi - lo == 1:
            node = Tree("X", [f"w{lo}"])
        else:
            if deep and rng.random() < 0.85:
                cuts = [lo + 1]
            else:
                k = rng.randint(2, min(max_children, hi - lo))
                cuts = sorted(rng.sample(range(lo + 1, hi), k - 1))
            bounds = [lo] + cuts + [hi]
            node = Tree("P", [build(a, b) for a, b in itertools.pairwise(bounds)])
        while rng.random() < 0.15:
            node = Tree("U", [node])
        return node

    return build(0, n)


def random_spec(rng: random.Random, max_words: int = 8, max_pieces: int = 3, p_tree: float = 0.8) -> Spec:
    texts = []
    n_words = 0
    for _ in range(rng.randint(1, 2)):
        sentences = []
        for _ in range(rng.randint(1, 3)):
            deep = rng.random() < 0.15  # now and then a long chain-like sentence (deeper than D = 15)
            n = rng.randint(1, 3 * max_words if deep else max_words)
            roots = 2 if n > 2 and rng.random() < 0.1 else 1
            tr = random_tree(n, rng, deep=deep) if rng.random() < p_tree else None
            sentences.append((random_heads(n, rng, roots, deep), tr))
            n_words += n
        texts.append(sentences)
    n_pieces = [rng.choice([0] + [1] * 3 + list(range(1, max_pieces + 1))) for _ in range(n_words)]
    return Spec(texts, n_pieces)


def random_example(rng: random.Random, **kw) -> AlignedExample:
    spec = random_spec(rng, **kw)
    n_pos = 1 + sum(spec.n_pieces) + len(spec.texts)
    extra = tuple(rng.randint(0, n_pos) for _ in range(rng.choice([0, 0, 1, 2])))
    return make_example(spec, extra)


# ---------------------------------------------------------------------------------------------------------------
# Node-level trees
# ---------------------------------------------------------------------------------------------------------------


def dependency_nodes(example: AlignedExample, criterion: str) -> tuple[list[int], list[int]]:
    """Node-level heads of the whole example and the node of every position (-1 for specials).

    ``"share"``: one node per word (node id = word index). ``"children"``: node ``w`` is ``(w, 0)``; the pieces
    ``(w, k > 0)`` get ids after all words and hang off node ``w``.
    """
    heads = [int(h) for h in example.forest.heads]
    W = len(heads)
    piece_id: dict[tuple[int, int], int] = {}
    if criterion == "children":
        for w in range(W):
            for k in range(1, int(example.n_pieces[w])):
                piece_id[(w, k)] = len(heads)
                heads.append(w)
    nodes = []
    for w, k in zip(example.word_index.tolist(), example.piece_index.tolist()):
        if w < 0:
            nodes.append(-1)
        elif criterion == "share" or k == 0:
            nodes.append(w)
        else:
            nodes.append(piece_id[(w, k)])
    return heads, nodes


def constituency_nodes(example: AlignedExample) -> tuple[list[int], list[int], list[int]]:
    """Phrase tree over the whole example: node ``w < W`` is word ``w`` (pre-terminal merged into the word),
    phrase nodes follow. Returns ``(heads, lexical head word per node (-1 for words), node per position)``."""
    forest = example.forest
    W = len(forest.heads)
    heads = [-1] * W
    lex = [-1] * W
    dep_heads = [int(h) for h in forest.heads]
    starts = list(forest.sentence_start) + [W]
    for t, tr in enumerate(forest.trees):
        if tr is None:
            continue
        s0, s1 = int(starts[t]), int(starts[t + 1])
        local = [h - s0 if h >= 0 else -1 for h in dep_heads[s0:s1]]
        depth = T.depths(local)
        pos = [s0]

        def visit(node, parent: int, pos=pos, depth=depth, s0=s0) -> list[int]:
            """Add ``node``; return the words below it."""
            if isinstance(node, str) or node.is_preterminal():
                w = pos[0]
                pos[0] += 1
                heads[w] = parent
                return [w]
            me = len(heads)
            heads.append(parent)
            lex.append(-1)
            words = []
            for c in node.children:
                words += visit(c, me)
            span = set(words)
            exits = [w for w in words if dep_heads[w] < 0 or dep_heads[w] not in span]
            if len(exits) == 1:
                lex[me] = exits[0]
            else:  # highest word, leftmost on ties
                lex[me] = min(exits, key=lambda w: (depth[w - s0], w))
            return words

        visit(tr, -1)
        assert pos[0] == s1
    nodes = [int(w) for w in example.word_index.tolist()]
    return heads, lex, nodes


# ---------------------------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------------------------


def ref_sdoi(example: AlignedExample, criterion: str) -> np.ndarray:
    heads, nodes = dependency_nodes(example, criterion)
    L = len(nodes)
    m = np.eye(L, dtype=bool)
    for i in range(L):
        if nodes[i] < 0:
            continue
        anc = {nodes[i], *T.ancestors(heads, nodes[i])}
        for j in range(L):
            if nodes[j] >= 0 and nodes[j] in anc:
                m[i, j] = True
    return m


def _groups(
    heads: list[int], lex_head, nodes: list[int], segments: list[int], D: int, pairwise: bool, has_tree
) -> np.ndarray:
    L = len(nodes)
    depth = T.depths(heads)
    g = np.zeros((L, L), dtype=np.uint8)
    for i in range(L):
        for j in range(L):
            a, b = nodes[i], nodes[j]
            if a < 0 or b < 0:
                continue
            if pairwise and segments[i] != segments[j]:
                g[i, j] = 3 * D + 1
                continue
            if a == b or not (has_tree(a) and has_tree(b)):
                continue
            c = lca(heads, a, b)
            if c < 0:
                continue
            dist = int(depth[a] + depth[b] - 2 * depth[c])
            if dist > D:
                continue
            h = lex_head(c)
            if h == b:
                g[i, j] = dist
            elif h == a:
                g[i, j] = D + dist
            else:
                g[i, j] = 2 * D + dist
    return g


def ref_dep_groups(example: AlignedExample, criterion: str, D: int = 15, pairwise: bool = True) -> np.ndarray:
    heads, nodes = dependency_nodes(example, criterion)
    seg = [int(example.forest.segment[w]) if w >= 0 else -1 for w in example.word_index.tolist()]
    return _groups(heads, lambda c: c, nodes, seg, D, pairwise, lambda a: True)


def ref_con_groups(example: AlignedExample, D: int = 15, pairwise: bool = True) -> np.ndarray:
    heads, lex, nodes = constituency_nodes(example)
    seg = [int(example.forest.segment[w]) if w >= 0 else -1 for w in example.word_index.tolist()]
    tree_of = example.forest.tree_id
    trees = example.forest.trees

    def has_tree(a: int) -> bool:
        return trees[int(tree_of[a])] is not None

    return _groups(heads, lambda c: lex[c], nodes, seg, D, pairwise, has_tree)


# ---------------------------------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------------------------------


def pad(encodings: list[dict[str, np.ndarray]], extra: int = 0) -> dict[str, torch.Tensor]:
    """Right-pad every array with -1 (the collator's convention) to the longest length + ``extra``."""
    L = max(len(e["syntax_tree"]) for e in encodings) + extra
    out = {}
    for key in encodings[0]:
        first = encodings[0][key]
        arr = np.full((len(encodings), L) + first.shape[1:], -1, dtype=first.dtype)
        for b, e in enumerate(encodings):
            arr[b, : len(e[key])] = e[key]
        out[key] = torch.from_numpy(arr)
    return out


def rngs():
    """Hypothesis strategy: a seeded ``random.Random`` (the generators above draw everything from it)."""
    from hypothesis import strategies as st

    return st.integers(0, 2**32 - 1).map(random.Random)
