"""encode_syntax: compact per-position syntax arrays, checked against explicit node-level trees."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data import tree as T
from syntaxformer.data.align import AlignedExample
from syntaxformer.data.collate import CONSTITUENCY_KEYS, DEPENDENCY_KEYS, encode_syntax
from syntaxformer.data.constituency import Tree
from syntaxformer.errors import AlignmentError
from tests.masks.reference import Spec, constituency_nodes, dependency_nodes, make_example, random_example, rngs, window

CAT = Tree.from_string("(S (NP (DT the) (NN cat)) (VP (VBD sat)))")


def _cat_example() -> AlignedExample:
    # [CLS] the cat ##s sat [SEP]; the -> cat -> sat (root)
    return make_example(Spec([[([1, 2, -1], CAT)]], [1, 2, 1]))


def test_encode_share_hand_built():
    e = encode_syntax(_cat_example(), "share", max_distance=3)
    assert e["syntax_tree"].tolist() == [-1, 0, 0, 0, 0, -1]
    assert e["syntax_segment"].tolist() == [-1, 0, 0, 0, 0, -1]
    # pre-order: sat 0, cat 1, the 2
    assert e["dep_tin"].tolist() == [-1, 2, 1, 1, 0, -1]
    assert e["dep_tout"].tolist() == [-1, 2, 2, 2, 2, -1]
    assert e["dep_depth"].tolist() == [-1, 2, 1, 1, 0, -1]
    assert e["dep_parent"].tolist() == [-1, 2, 4, 4, -1, -1]
    assert e["dep_anc_lo"][1].tolist() == [1, 0, 0] and e["dep_anc_hi"][1].tolist() == [2, 2, -1]
    assert e["dep_anc_head"][1].tolist() == [1, 0, -1]
    assert e["dep_anc_hi"][4].tolist() == [-1, -1, -1]  # the root has no ancestor
    # constituency: the/cat under NP (head cat) under S (head sat); sat under VP under S
    assert e["con_key"].tolist() == [-1, 0, 1, 1, 2, -1]
    assert e["con_depth"].tolist() == [-1, 2, 2, 2, 2, -1]
    assert e["con_anc_lo"][1, :2].tolist() == [0, 0] and e["con_anc_hi"][1, :2].tolist() == [1, 2]
    assert e["con_anc_head"][1, :2].tolist() == [1, 2]
    assert e["con_anc_lo"][4, :2].tolist() == [2, 0] and e["con_anc_hi"][4, :2].tolist() == [2, 2]
    assert e["con_anc_head"][4, :2].tolist() == [2, 2]
    assert e["con_anc_hi"][1, 2] == -1 and e["con_anc_head"][1, 2] == -1


def test_encode_children_hand_built():
    e = encode_syntax(_cat_example(), "children", max_distance=3)
    # subword tree: sat -> cat -> {the, ##s}
    tin, tout = e["dep_tin"].tolist(), e["dep_tout"].tolist()
    assert tin[4] == 0 and tout[4] == 3  # sat: the whole sentence
    assert tin[2] < tin[3] <= tout[2] and tin[2] < tin[1] <= tout[2]  # ##s and "the" under "cat"
    assert tout[3] == tin[3] and tout[1] == tin[1]  # leaves
    assert e["dep_depth"].tolist() == [-1, 2, 1, 2, 0, -1]
    assert e["dep_parent"].tolist() == [-1, 2, 4, 2, -1, -1]
    assert e["dep_anc_head"][3].tolist() == [tin[2], tin[4], -1]
    # constituency ignores the criterion
    share = encode_syntax(_cat_example(), "share", max_distance=3)
    for key in CONSTITUENCY_KEYS:
        assert np.array_equal(e[key], share[key])


def test_encode_shapes_dtypes_and_flags():
    e = encode_syntax(_cat_example(), max_distance=4)
    assert set(e) == set(DEPENDENCY_KEYS) | set(CONSTITUENCY_KEYS)
    for key, value in e.items():
        assert value.dtype == np.int32, key
        assert value.shape == ((6, 4) if "_anc_" in key else (6,)), key
    e = encode_syntax(_cat_example(), constituency=False)
    assert set(e) == set(DEPENDENCY_KEYS)


def test_encode_only_special_tokens():
    ex = make_example(Spec([[([-1, 0], None)]], [0, 0]))
    e = encode_syntax(ex)
    for key, value in e.items():
        assert (value == (0 if key.endswith("_anc_lo") else -1)).all(), key


def test_encode_word_without_pieces_keeps_ancestry():
    # a -> b -> c, b has no piece of its own: a still sees c as its 2nd ancestor
    ex = make_example(Spec([[([1, 2, -1], None)]], [1, 0, 1]))
    for criterion in ("share", "children"):
        e = encode_syntax(ex, criterion, max_distance=3)
        a, c = 1, 2
        assert e["dep_depth"][a] == 2 and e["dep_parent"][a] == -1
        assert e["dep_anc_lo"][a, 1] <= e["dep_tin"][c] <= e["dep_anc_hi"][a, 1]
        assert e["dep_anc_head"][a, 1] == e["dep_tin"][c]
        # b's interval covers a but is nobody's key
        assert e["dep_anc_lo"][a, 0] <= e["dep_tin"][a] <= e["dep_anc_hi"][a, 0]
        assert e["dep_anc_head"][a, 0] not in e["dep_tin"].tolist()


def test_encode_sentence_without_tree():
    ex = make_example(Spec([[([1, -1], Tree.from_string("(S (A x) (B y))")), ([-1, 0], None)]], [1, 1, 1, 1]))
    e = encode_syntax(ex, max_distance=2)
    assert e["con_depth"].tolist() == [-1, 1, 1, -1, -1, -1]
    assert e["con_anc_hi"][3:5].max() == -1 and e["con_anc_head"][3:5].max() == -1
    assert e["syntax_tree"].tolist() == [-1, 0, 0, 1, 1, -1]


def test_encode_lone_preterminal_and_unlabelled_wrapper():
    trees = [Tree.from_string("(NN word)"), Tree.from_string("( (S (A x) (B y)))")]
    ex = make_example(Spec([[([-1], trees[0]), ([-1, 0], trees[1])]], [1, 1, 1]))
    e = encode_syntax(ex, max_distance=3)
    assert e["con_depth"].tolist() == [-1, 0, 2, 2, -1]
    assert e["con_anc_lo"][2, :2].tolist() == [1, 1] and e["con_anc_hi"][2, :2].tolist() == [2, 2]


def test_encode_lexical_head_of_non_constituent_span():
    # words 0..3; dependency: 1 is root, 0 -> 1, 2 -> 1, 3 -> 0. The phrase (2 3) is not a dependency
    # constituent: both 2 (head 1) and 3 (head 0) leave it; both have depth 1 and 2 -> highest is 2.
    tr = Tree.from_string("(S (A (a w0) (b w1)) (B (c w2) (d w3)))")
    ex = make_example(Spec([[([1, -1, 1, 0], tr)]], [1, 1, 1, 1]))
    e = encode_syntax(ex, max_distance=2)
    assert e["con_anc_head"][3].tolist() == [2, 1]  # phrase (2 3) -> word 2; S -> root word 1
    assert e["con_anc_head"][1].tolist() == [1, 1]  # phrase (0 1) -> word 1 (head of 0)
    # ties on depth: leftmost
    tr2 = Tree.from_string("(S (A (a w0) (b w1) (c w2)) (d w3))")
    ex2 = make_example(Spec([[([3, 3, 3, -1], tr2)]], [1, 1, 1, 1]))
    e2 = encode_syntax(ex2, max_distance=2)
    assert e2["con_anc_head"][1, 0] == 0  # 0, 1, 2 all leave the span with depth 1: leftmost


def test_encode_errors_name_the_problem():
    ex = _cat_example()
    with pytest.raises(ValueError, match="criterion"):
        encode_syntax(ex, "first")
    with pytest.raises(ValueError, match="max_distance"):
        encode_syntax(ex, max_distance=0)
    bad = AlignedExample(ex.input_ids, ex.word_index.copy(), ex.piece_index.copy(), ex.n_pieces, ex.forest)
    bad.piece_index[1] = 3
    with pytest.raises(AlignmentError, match="piece 3 of word 0"):
        encode_syntax(bad, "children")
    encode_syntax(bad, "share")  # piece numbers do not matter when pieces share their word
    bad.word_index[1] = 7
    with pytest.raises(AlignmentError, match="word 7"):
        encode_syntax(bad)
    ex2 = make_example(Spec([[([-1], None), ([-1], None)]], [1, 1]))
    ex2.forest.heads[1] = 0  # a head in another sentence
    with pytest.raises(AlignmentError, match="same sentence"):
        encode_syntax(ex2)
    ex3 = make_example(Spec([[([1, -1], Tree.from_string("(S (A x))"))]], [1, 1]))
    with pytest.raises(ValueError, match="leaves"):
        encode_syntax(ex3)


# -- properties on random examples, against explicit node-level trees ------------------------------------------


def _check_dependency(ex: AlignedExample, e: dict[str, np.ndarray], criterion: str, D: int) -> None:
    heads, nodes = dependency_nodes(ex, criterion)
    depth = T.depths(heads)
    L = len(nodes)
    vis = [i for i in range(L) if nodes[i] >= 0]
    tin, tout = e["dep_tin"], e["dep_tout"]
    for i in range(L):
        if nodes[i] < 0:
            assert e["syntax_tree"][i] == -1 and e["dep_tin"][i] == -1 and e["dep_depth"][i] == -1
            assert e["dep_anc_hi"][i].max() == -1 and e["dep_parent"][i] == -1
            continue
        w = int(ex.word_index[i])
        assert e["syntax_tree"][i] == ex.forest.tree_id[w] and e["syntax_segment"][i] == ex.forest.segment[w]
        assert e["dep_depth"][i] == depth[nodes[i]]
        anc = T.ancestors(heads, nodes[i])
        par = anc[0] if anc else -1
        first = next((j for j in range(L) if par >= 0 and nodes[j] == par), -1)
        assert e["dep_parent"][i] == first
        for j in vis:
            assert (tin[j] <= tin[i] <= tout[j]) == (nodes[j] in [nodes[i]] + anc)
            assert (tin[i] == tin[j]) == (nodes[i] == nodes[j])
        for k in range(1, D + 1):
            lo, hi, hd = e["dep_anc_lo"][i, k - 1], e["dep_anc_hi"][i, k - 1], e["dep_anc_head"][i, k - 1]
            if k > len(anc):
                assert lo > hi and hd == -1
                continue
            a = anc[k - 1]
            covered = {j for j in vis if lo <= tin[j] <= hi}
            assert covered == {j for j in vis if a in [nodes[j]] + T.ancestors(heads, nodes[j])}
            assert lo == hd
            assert all(tin[j] == hd for j in vis if nodes[j] == a)


def _check_constituency(ex: AlignedExample, e: dict[str, np.ndarray], D: int) -> None:
    heads, lex, nodes = constituency_nodes(ex)
    W = len(ex.forest.heads)

    def span(p: int) -> tuple[int, int]:
        words = [w for w in range(W) if p in T.ancestors(heads, w)]
        return min(words), max(words)

    for i, w in enumerate(nodes):
        if w < 0:
            assert e["con_key"][i] == -1 and e["con_depth"][i] == -1
            continue
        assert e["con_key"][i] == w
        if ex.forest.trees[int(ex.forest.tree_id[w])] is None:
            assert e["con_depth"][i] == -1 and e["con_anc_hi"][i].max() == -1
            continue
        anc = T.ancestors(heads, w)
        assert e["con_depth"][i] == len(anc)
        for k in range(1, D + 1):
            lo, hi, hd = (int(e[f"con_anc_{x}"][i, k - 1]) for x in ("lo", "hi", "head"))
            if k > len(anc):
                assert lo > hi and hd == -1
            else:
                assert (lo, hi) == span(anc[k - 1]) and hd == lex[anc[k - 1]]


@settings(max_examples=100, deadline=None)
@given(rngs(), st.sampled_from(["share", "children"]), st.sampled_from([1, 2, 4, 15]))
def test_encode_matches_node_level_trees(rng: random.Random, criterion: str, D: int):
    ex = random_example(rng)
    e = encode_syntax(ex, criterion, max_distance=D)
    _check_dependency(ex, e, criterion, D)
    _check_constituency(ex, e, D)


@settings(max_examples=100, deadline=None)
@given(rngs(), st.sampled_from(["share", "children"]))
def test_encode_window_matches_full_example(rng: random.Random, criterion: str):
    ex = random_example(rng, max_words=10)
    full = encode_syntax(ex, criterion, max_distance=6)
    L = len(ex)
    start = rng.randrange(L)
    end = rng.randint(start + 1, L)
    win, mapping = window(ex, start, end, cls=rng.random() < 0.5, sep=rng.random() < 0.5)
    e = encode_syntax(win, criterion, max_distance=6)
    inside = [i for i, m in enumerate(mapping) if m is not None]
    outer = [mapping[i] for i in inside]
    for key in e:
        if key != "dep_parent":
            assert np.array_equal(e[key][inside], full[key][outer]), key
    # the parent pointer is the first in-window position of the parent node
    for i in inside:
        p = full["dep_parent"][mapping[i]]
        if p < 0:
            assert e["dep_parent"][i] == -1
            continue
        same = [j for j in inside if full["dep_tin"][mapping[j]] == full["dep_tin"][p]]
        assert e["dep_parent"][i] == (same[0] if same else -1)
    _check_dependency(win, e, criterion, 6)
