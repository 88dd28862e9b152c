"""Length-grouped batches (training/batching.py) against a direct reading of the rule."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxformer.errors import SyntaxformerError
from syntaxformer.training.batching import LengthGroupedBatchSampler, length_batches


def test_batching_shuffled_batches_cover_every_item_once_and_group_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 60, size=1037).tolist()
    batches = length_batches(lengths, 16, True, seed=7, bucket=5)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1037)) and all(1 <= len(b) <= 16 for b in batches)
    # reference: chunks of bucket * batch_size of the seeded permutation, each sorted by length
    perm = np.random.default_rng(7).permutation(1037)
    expected = []
    for s in range(0, 1037, 80):
        chunk = sorted(perm[s : s + 80].tolist(), key=lambda i: (lengths[i], list(perm[s : s + 80]).index(i)))
        expected += [chunk[k : k + 16] for k in range(0, len(chunk), 16)]
    assert sorted(map(tuple, batches)) == sorted(map(tuple, expected))
    assert length_batches(lengths, 16, True, seed=7, bucket=5) == batches  # seeded
    assert length_batches(lengths, 16, True, seed=8, bucket=5) != batches


def test_batching_evaluation_batches_are_longest_first():
    lengths = [3, 9, 1, 9, 4]
    assert length_batches(lengths, 2, False) == [[1, 3], [4, 0], [2]]
    with pytest.raises(SyntaxformerError, match="batch_size"):
        length_batches(lengths, 0, False)


def test_batching_sampler_draws_one_seed_per_epoch_and_knows_its_length():
    lengths = list(range(1, 300))
    sampler = LengthGroupedBatchSampler(lengths, 8, seed=3, bucket=4)
    first = list(sampler)
    assert first == length_batches(lengths, 8, True, 3 * 100_003, 4) and len(first) == len(sampler)
    sampler.set_epoch(2)
    assert list(sampler) == length_batches(lengths, 8, True, 3 * 100_003 + 2, 4) != first
    assert len(LengthGroupedBatchSampler(list(range(70)), 8, bucket=4)) == 9  # chunks 32 + 32 + 6: 4 + 4 + 1
