"""Parser noise: corrupted heads stay valid trees with the requested number of changes."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data import Sentence
from syntaxformer.data import tree as T
from syntaxformer.data.noise import corrupt_heads, corrupt_sentence
from tests.masks.reference import random_heads, rngs


@settings(max_examples=80, deadline=None)
@given(rngs(), st.floats(0.0, 1.0))
def test_noise_corrupt_heads_keeps_valid_tree_and_counts(rng: random.Random, fraction: float):
    n = rng.randint(1, 15)
    roots = 2 if n > 3 and rng.random() < 0.2 else 1
    heads = random_heads(n, rng, roots)
    before = list(heads)
    new = corrupt_heads(heads, fraction, np.random.default_rng(rng.randrange(2**32)))
    assert heads == before  # input untouched
    T.check_heads(new)
    assert T.roots(new) == T.roots(heads)
    attached = n - roots
    target = int(np.floor(fraction * attached + 0.5))
    changed = sum(a != b for a, b in zip(heads, new))
    if roots > 1 or target <= n - 2:
        assert changed == target
    else:  # every word re-attached: the last child of the single root may have nowhere else to go
        assert n - 2 <= changed <= target


def test_noise_corrupt_heads_edges():
    heads = [1, 2, -1, 2, 3]
    assert corrupt_heads(heads, 0.0, 0) == heads
    assert corrupt_heads(heads, 0.5, 7) == corrupt_heads(heads, 0.5, 7)  # seeded
    assert corrupt_heads([-1], 1.0, 0) == [-1]
    assert corrupt_heads([-1, 0], 1.0, 0) == [-1, 0]  # nowhere else to attach
    with pytest.raises(ValueError, match="fraction"):
        corrupt_heads(heads, 1.5)
    # a star: not every leaf can leave the root (the root must keep a child), all but one do
    full = corrupt_heads([-1, 0, 0, 0, 0, 0], 1.0, 3)
    assert sum(a != b for a, b in zip([-1, 0, 0, 0, 0, 0], full)) == 4
    # a chain can be fully re-attached: 2 -> 0, then 1 -> 2
    assert sum(a != b for a, b in zip([-1, 0, 1], corrupt_heads([-1, 0, 1], 1.0, 0))) == 2


def test_noise_corrupt_sentence():
    s = Sentence(words=["a", "b", "c", "d"], heads=[1, -1, 1, 2], deprels=["x", "root", "y", "z"], sent_id="s1")
    c = corrupt_sentence(s, 1.0, np.random.default_rng(0))
    assert c is not s and c.words == s.words and c.deprels == s.deprels and c.sent_id == "s1"
    assert s.heads == [1, -1, 1, 2] and c.metadata["corrupted_heads"] == 1.0
    assert c.heads != s.heads and T.roots(c.heads) == [1]
