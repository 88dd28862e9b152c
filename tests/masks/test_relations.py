"""Syntax-BERT relation groups: batched builder vs. pair-by-pair LCA walks on explicit trees."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data.collate import encode_syntax
from syntaxformer.data.constituency import Tree
from syntaxformer.masks import group_id, group_name, num_groups, relation_groups, relation_groups_from_features
from tests.masks.reference import Spec, make_example, pad, random_example, ref_con_groups, ref_dep_groups, rngs, window


def _groups(spec: Spec, D: int = 15, criterion: str = "share", pairwise: bool = True):
    e = encode_syntax(make_example(spec), criterion, max_distance=D)
    dep, con = relation_groups_from_features(pad([e]), D, pairwise)
    return dep[0].numpy(), con[0].numpy()


def test_relations_group_ids_round_trip():
    D = 15
    assert num_groups(D) == 46 and num_groups(D, pairwise=False) == 45
    seen = {0}
    for kind in ("child", "parent", "sibling"):
        for d in range(1, D + 1):
            g = group_id(kind, d, D)
            assert group_name(g, D) == (kind, d)
            seen.add(g)
    assert group_id("pairwise", max_distance=D) == 46 and group_name(46, D) == ("pairwise", 0)
    assert seen | {46} == set(range(47))
    with pytest.raises(ValueError):
        group_id("cousin", 1)
    with pytest.raises(ValueError):
        group_id("child", 16, 15)
    assert group_id("self", max_distance=D) == 47 and group_name(47, D) == ("self", 0)
    assert group_id("special", max_distance=D) == 48 and group_name(48, D) == ("special", 0)
    with pytest.raises(ValueError):
        group_name(49, 15)


def test_relations_chain():
    # w0 -> w1 -> w2 -> w3 (root); positions 1..4
    dep, _ = _groups(Spec([[([1, 2, 3, -1], None)]], [1, 1, 1, 1]), D=15)
    for a in range(4):
        for b in range(4):
            g = dep[a + 1, b + 1]
            if a == b:
                assert g == 0
            elif b > a:  # b is a's ancestor at distance b - a
                assert group_name(g) == ("child", b - a)
            else:
                assert group_name(g) == ("parent", a - b)
    assert not dep[0].any() and not dep[:, 0].any() and not dep[5].any() and not dep[:, 5].any()


def test_relations_parent_and_child_are_named_as_in_the_paper():
    """Syntax-BERT §3.2: "In the parent mask with certain distance d, we have M^p_{i,j,d} = 1 if and only if the
    node i is the parent or ancestor of node j, at the same time dist(i,j) = d." and "In the child mask ... node
    j is the parent or ancestor of node i." (row i = query, column j = key)."""
    # w0 -> w1 -> w2 (root): w2 is the parent of w1, the ancestor of w0 at distance 2
    dep, _ = _groups(Spec([[([1, 2, -1], None)]], [1, 1, 1]), D=15)
    pos = {w: w + 1 for w in range(3)}
    assert group_name(dep[pos[2], pos[1]]) == ("parent", 1)  # i = w2 is the parent of j = w1
    assert group_name(dep[pos[2], pos[0]]) == ("parent", 2)  # i = w2 is an ancestor of j = w0
    assert group_name(dep[pos[0], pos[1]]) == ("child", 1)  # j = w1 is the parent of i = w0
    assert group_name(dep[pos[0], pos[2]]) == ("child", 2)


def test_relations_star_siblings_and_cutoff():
    dep, _ = _groups(Spec([[([-1, 0, 0, 0], None)]], [1, 1, 1, 1]), D=15)
    assert group_name(dep[2, 3]) == ("sibling", 2) and group_name(dep[2, 1]) == ("child", 1)
    assert group_name(dep[1, 4]) == ("parent", 1)
    # chain of 6 with D = 2: only distances 1 and 2
    dep, _ = _groups(Spec([[([1, 2, 3, 4, 5, -1], None)]], [1] * 6), D=2)
    assert group_name(dep[1, 3], 2) == ("child", 2) and dep[1, 4] == 0 and group_name(dep[4, 3], 2) == ("parent", 1)


def test_relations_subword_criteria():
    spec = Spec([[([-1, 0], None)]], [1, 3])  # [CLS] w0 w1 ##a ##b [SEP]
    share, _ = _groups(spec, criterion="share")
    assert not share[2:5, 2:5].any()  # pieces of one word: one node, no relation
    assert (share[2:5, 1] == group_id("child", 1)).all()
    children, _ = _groups(spec, criterion="children")
    assert group_name(children[3, 2]) == ("child", 1) and group_name(children[3, 4]) == ("sibling", 2)
    assert group_name(children[3, 1]) == ("child", 2) and group_name(children[1, 4]) == ("parent", 2)


def test_relations_pairwise():
    spec = Spec([[([-1, 0], None)], [([-1], None)]], [1, 1, 1])  # CLS a b SEP c SEP
    dep, con = _groups(spec, D=3)
    pw = group_id("pairwise", max_distance=3)
    for g in (dep, con):
        assert (g[1:3, 4] == pw).all() and (g[4, 1:3] == pw).all()
        assert not (g[[0, 3, 5]] == pw).any() and not (g[:, [0, 3, 5]] == pw).any()
    dep, _ = _groups(spec, D=3, pairwise=False)
    assert not dep[1:3, 4].any() and not dep[4].any()


def test_relations_constituency_hand_built():
    tr = Tree.from_string("(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT a) (NN mat)))))")
    # dependency: the->cat, cat->sat, sat root, on->mat, a->mat, mat->sat
    spec = Spec([[([1, 2, -1, 5, 5, 2], tr)]], [1] * 6)
    _, con = _groups(spec, D=15)
    p = {w: w + 1 for w in range(6)}  # word -> position
    assert group_name(con[p[0], p[1]]) == ("child", 2)  # the -> cat: cat heads NP
    assert group_name(con[p[1], p[0]]) == ("parent", 2)
    assert group_name(con[p[1], p[2]]) == ("child", 4)  # cat-NP-S-VP-sat; sat heads S
    assert group_name(con[p[0], p[5]]) == ("sibling", 6)  # the-NP-S-VP-PP-NP-mat; S headed by sat
    assert group_name(con[p[3], p[5]]) == ("child", 3)  # on-PP-NP-mat; PP headed by mat (dependency head)
    assert group_name(con[p[4], p[5]]) == ("child", 2)


def test_relations_rejects_narrow_tables():
    e = encode_syntax(make_example(Spec([[([-1, 0], None)]], [1, 1])), max_distance=4)
    b = pad([e])
    with pytest.raises(ValueError, match="max_distance"):
        relation_groups_from_features(b, max_distance=5)
    narrow, _ = relation_groups_from_features(b, max_distance=3)  # narrower layout than the table is fine
    wide = encode_syntax(make_example(Spec([[([-1, 0], None)]], [1, 1])), max_distance=3)
    assert torch.equal(narrow, relation_groups_from_features(pad([wide]), 3)[0])


def _random_batch(rngs_: list[random.Random], criterion: str, D: int):
    examples = []
    for rng in rngs_:
        ex = random_example(rng)
        if rng.random() < 0.3:
            start = rng.randrange(len(ex))
            ex, _ = window(ex, start, rng.randint(start + 1, len(ex)), rng.random() < 0.5, rng.random() < 0.5)
        examples.append(ex)
    width = D + rngs_[0].randint(0, 2)  # the tables may be wider than the layout
    batch = pad([encode_syntax(ex, criterion, max_distance=width) for ex in examples], extra=rngs_[0].randint(0, 2))
    return examples, batch


@settings(max_examples=100, deadline=None)
@given(
    st.lists(rngs(), min_size=1, max_size=3),
    st.sampled_from(["share", "children"]),
    st.sampled_from([1, 2, 3, 5, 15]),
    st.booleans(),
)
def test_relations_match_reference(rngs_: list[random.Random], criterion: str, D: int, pairwise: bool):
    examples, batch = _random_batch(rngs_, criterion, D)
    dep, con = relation_groups_from_features(batch, D, pairwise)
    B, L = batch["syntax_tree"].shape
    assert dep.dtype == con.dtype == torch.uint8 and dep.shape == con.shape == (B, L, L)
    for b, ex in enumerate(examples):
        n = len(ex)
        for got, ref in (
            (dep[b].numpy(), ref_dep_groups(ex, criterion, D, pairwise)),
            (con[b].numpy(), ref_con_groups(ex, D, pairwise)),
        ):
            assert np.array_equal(got[:n, :n], ref)
            assert not got[n:].any() and not got[:, n:].any()  # padding


@settings(max_examples=60, deadline=None)
@given(rngs(), st.sampled_from(["share", "children"]))
def test_relations_window_matches_full_example(rng: random.Random, criterion: str):
    ex = random_example(rng, max_words=10)
    D = 4
    full = relation_groups_from_features(pad([encode_syntax(ex, criterion, max_distance=D)]), D)
    start = rng.randrange(len(ex))
    win, mapping = window(ex, start, rng.randint(start + 1, len(ex)), rng.random() < 0.5, rng.random() < 0.5)
    part = relation_groups_from_features(pad([encode_syntax(win, criterion, max_distance=D)]), D)
    inside = [i for i, m in enumerate(mapping) if m is not None]
    outer = [mapping[i] for i in inside]
    for f, p in zip(full, part):
        assert torch.equal(p[0][inside][:, inside], f[0][outer][:, outer])


@settings(max_examples=30, deadline=None)
@given(rngs())
def test_relations_are_converse(rng: random.Random):
    """parent d at (i, j) <=> child d at (j, i); sibling and pairwise are symmetric (dependency trees)."""
    ex = random_example(rng, max_words=12)
    D = 6
    dep, _ = relation_groups_from_features(
        pad([encode_syntax(ex, rng.choice(["share", "children"]), max_distance=D)]), D
    )
    g = dep[0].long()
    kind_t = g.T.clone()
    swap = (kind_t >= 1) & (kind_t <= 2 * D)
    kind_t[swap] = torch.where(kind_t[swap] <= D, kind_t[swap] + D, kind_t[swap] - D)
    assert torch.equal(g, kind_t)


def test_relation_groups_direct_call_matches_helper():
    e = pad([encode_syntax(make_example(Spec([[([1, -1, 1], None)], [([-1], None)]], [1, 2, 1, 1])))])
    direct = relation_groups(
        e["dep_tin"],
        e["dep_depth"],
        e["dep_anc_lo"],
        e["dep_anc_hi"],
        e["dep_anc_head"],
        e["syntax_tree"],
        e["syntax_segment"],
        15,
        True,
        key_hi=e["dep_tout"],
    )
    assert torch.equal(direct, relation_groups_from_features(e)[0])
    dep, con = relation_groups_from_features(e, constituency=False)
    assert con is None and torch.equal(dep, direct)


def test_relation_groups_unbatched():
    e = encode_syntax(make_example(Spec([[([1, -1, 1], None)], [([-1], None)]], [1, 2, 1, 1])))
    t = {k: torch.as_tensor(v) for k, v in e.items()}
    single = relation_groups(
        t["con_key"],
        t["con_depth"],
        t["con_anc_lo"],
        t["con_anc_hi"],
        t["con_anc_head"],
        t["syntax_tree"],
        t["syntax_segment"],
    )
    assert single.shape == (len(e["con_key"]),) * 2
    assert torch.equal(single, relation_groups_from_features(pad([e]))[1][0])
