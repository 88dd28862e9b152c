"""Dependency -> constituency fallback: projectivization and the head-marked phrase tree, checked against
brute-force definitions on random trees and on every UD EWT dev sentence."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data.constituency import dependency_to_constituency, projectivize
from syntaxformer.data.tree import check_heads, is_projective
from syntaxformer.errors import TreeError


def _descendants(heads: list[int], h: int) -> set[int]:
    out = {h}
    changed = True
    while changed:
        changed = False
        for i, p in enumerate(heads):
            if p in out and i not in out:
                out.add(i)
                changed = True
    return out


@st.composite
def forests(draw, max_n: int = 14):
    n = draw(st.integers(1, max_n))
    order = draw(st.permutations(range(n)))
    heads = [-1] * n
    for k, i in enumerate(order[1:], start=1):  # attach each word to an earlier word of a random order
        heads[i] = -1 if draw(st.integers(0, 9)) == 0 else order[draw(st.integers(0, k - 1))]
    return heads


@settings(max_examples=300, deadline=None)
@given(forests())
def test_projectivize_gives_projective_tree_and_keeps_projective_ones(heads):
    out = projectivize(heads)
    check_heads(out)
    assert is_projective(out)
    if is_projective(heads):
        assert out == heads
    # every lift moves a word to one of its original ancestors (or to the root)
    for d, h in enumerate(out):
        anc, j = set(), heads[d]
        while j >= 0:
            anc.add(j)
            j = heads[j]
        assert h == -1 or h in anc


@settings(max_examples=300, deadline=None)
@given(forests())
def test_dependency_to_constituency_phrases_are_the_subtrees(heads):
    n = len(heads)
    words = [f"w{i}" for i in range(n)]
    tree = dependency_to_constituency(words, heads, [f"T{i}" for i in range(n)])
    assert tree.leaves() == words
    proj = projectivize(heads)
    # brute force: phrase spans = yields of words with dependents (+ the whole sentence for several roots)
    expected = {
        (min(_descendants(proj, h)), max(_descendants(proj, h)) + 1) for h in range(n) if any(p == h for p in proj)
    }
    roots = [i for i, h in enumerate(proj) if h < 0]
    if len(roots) > 1:
        expected.add((0, n))
    got = set()
    for label, a, b in tree.spans():
        if label.endswith("P") or label == "S":
            got.add((a, b))
    assert got == expected
    # the phrase of head h is labelled with h's tag
    for label, a, b in tree.spans():
        if label.endswith("P"):
            h = int(label[1:-1])
            assert (min(_descendants(proj, h)), max(_descendants(proj, h)) + 1) == (a, b)


def test_dependency_to_constituency_example_and_errors():
    tree = dependency_to_constituency(
        ["The", "cat", "sat", "on", "the", "mat", "."],
        [1, 2, -1, 2, 5, 3, 2],
        ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"],
    )
    assert tree.to_string() == (
        "(VERBP (NOUNP (DET The) (NOUN cat)) (VERB sat) (ADPP (ADP on) (NOUNP (DET the) (NOUN mat))) (PUNCT .))"
    )
    assert dependency_to_constituency(["a", "b"], [-1, -1]).to_string() == "(S (X a) (X b))"
    with pytest.raises(ValueError, match="heads"):
        dependency_to_constituency(["a"], [-1, 0])
    with pytest.raises(TreeError, match="cycle"):
        dependency_to_constituency(["a", "b"], [1, 0])
    # a very deep chain (no recursion limit)
    n = 3000
    deep = dependency_to_constituency(["x"] * n, [i + 1 if i + 1 < n else -1 for i in range(n)])
    assert len(deep.leaves()) == n


def test_dependency_to_constituency_on_ud_ewt():
    from syntaxformer.data.readers.conllu import read_conllu
    from tests.conftest import data_path

    path = data_path("ud_ewt")
    files = sorted(path.glob("*.conllu"))
    if not files:
        pytest.skip(f"no CoNLL-U file under {path}")
    sentences = list(read_conllu(files[0]))
    random.Random(0).shuffle(sentences)
    n_nonproj = 0
    for s in sentences[:600]:
        tree = dependency_to_constituency(s.words, s.heads, s.upos)
        assert tree.leaves() == s.words
        n_nonproj += not is_projective(s.heads)
    assert n_nonproj > 0  # the sample exercises projectivization
