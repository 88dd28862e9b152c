"""Random masks / groups (the "no syntax tree" ablation) keep the statistics of the real ones."""

from __future__ import annotations

import random

import torch

from syntaxformer.data.collate import encode_syntax
from syntaxformer.masks import relation_groups_from_features, sdoi_mask_from_features
from syntaxformer.masks.random import random_like_groups, random_like_mask
from tests.masks.reference import pad, random_example


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
        assert torch.equal(
            torch.bincount(rand[b][off[b]].long(), minlength=47), torch.bincount(dep[b][off[b]].long(), minlength=47)
        )
    assert torch.equal(rand[~off], dep[~off])
    assert not torch.equal(rand, dep)
