"""Ablations: random masks / groups keep the statistics; corrupted heads stay valid trees."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data import Sentence
from syntaxformer.data import tree as T
from syntaxformer.data.encode import encode_syntax
from syntaxformer.masks import (
    corrupt_heads,
    corrupt_sentence,
    random_like_groups,
    random_like_mask,
    relation_groups_from_features,
    sdoi_mask_from_features,
)
from tests.masks.reference import pad, random_example, random_heads, rngs


def _batch(seed: int, n: int = 4):
    rng = random.Random(seed)
    batch = pad([encode_syntax(random_example(rng, max_words=10)) for _ in range(n)], extra=2)
    return batch, batch["syntax_tree"] >= 0


def test_random_like_mask_keeps_row_density():
    batch, valid = _batch(0)
    mask = sdoi_mask_from_features(batch)
    g = torch.Generator().manual_seed(0)
    rand = random_like_mask(mask, valid, g)
    assert rand.dtype == torch.bool and rand.shape == mask.shape
    L = mask.shape[-1]
    eye = torch.eye(L, dtype=torch.bool)
    pair = valid[:, :, None] & valid[:, None, :]
    off = pair & ~eye
    assert torch.equal((rand & off).sum(-1), (mask & off).sum(-1))  # same count per row
    assert torch.equal(rand[~off], mask[~off])  # diagonal, specials and padding untouched
    assert rand.any(-1).all()
    assert not torch.equal(rand, mask)  # (for this seed) something moved
    assert torch.equal(rand, random_like_mask(mask, valid, torch.Generator().manual_seed(0)))


def test_random_like_mask_is_uniform_over_valid_columns():
    L = 6
    mask = torch.zeros(1, L, L, dtype=torch.bool)
    mask[0, 0, 1] = True
    valid = torch.tensor([[True, True, True, False, True, True]])
    g = torch.Generator().manual_seed(1)
    hits = torch.zeros(L)
    for _ in range(400):
        hits += random_like_mask(mask, valid, g)[0, 0].float()
    assert hits[0] == 0 and hits[3] == 0  # never self (it was False) nor an invalid column
    assert (hits[[1, 2, 4, 5]] > 60).all()


def test_random_like_groups_keeps_group_sizes():
    batch, valid = _batch(1)
    dep, _ = relation_groups_from_features(batch, 15)
    rand = random_like_groups(dep, valid, torch.Generator().manual_seed(0))
    assert rand.dtype == dep.dtype and rand.shape == dep.shape
    L = dep.shape[-1]
    off = valid[:, :, None] & valid[:, None, :] & ~torch.eye(L, dtype=torch.bool)
    for b in range(dep.shape[0]):
        assert torch.equal(torch.bincount(rand[b][off[b]].long(), minlength=47),
                           torch.bincount(dep[b][off[b]].long(), minlength=47))
    assert torch.equal(rand[~off], dep[~off])
    assert not torch.equal(rand, dep)


@settings(max_examples=80, deadline=None)
@given(rngs(), st.floats(0.0, 1.0))
def test_corrupt_heads_keeps_valid_tree_and_counts(rng: random.Random, fraction: float):
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


def test_corrupt_heads_edges():
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


def test_corrupt_sentence():
    s = Sentence(words=["a", "b", "c", "d"], heads=[1, -1, 1, 2], deprels=["x", "root", "y", "z"], sent_id="s1")
    c = corrupt_sentence(s, 1.0, np.random.default_rng(0))
    assert c is not s and c.words == s.words and c.deprels == s.deprels and c.sent_id == "s1"
    assert s.heads == [1, -1, 1, 2] and c.metadata["corrupted_heads"] == 1.0
    assert c.heads != s.heads and T.roots(c.heads) == [1]
