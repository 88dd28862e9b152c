"""SDOI masks: batched Euler-interval builder vs. an explicit ancestor walk."""

from __future__ import annotations

import random

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data.collate import encode_syntax
from syntaxformer.masks import sdoi_mask, sdoi_mask_from_features
from tests.masks.reference import Spec, make_example, pad, random_example, ref_sdoi, rngs, window


def _mask(spec: Spec, criterion: str = "share") -> np.ndarray:
    e = encode_syntax(make_example(spec), criterion)
    return sdoi_mask_from_features(pad([e]))[0].numpy()


def test_sdoi_chain():
    # [CLS] w0 w1 w2 w3 [SEP], w0 -> w1 -> w2 -> w3 (root): each word sees itself and everything to its right
    m = _mask(Spec([[([1, 2, 3, -1], None)]], [1, 1, 1, 1]))
    expected = np.eye(6, dtype=bool)
    for i in range(1, 5):
        expected[i, i:5] = True
    assert np.array_equal(m, expected)


def test_sdoi_star():
    # w0 is the root of w1..w3: children see the root; the root sees only itself
    m = _mask(Spec([[([-1, 0, 0, 0], None)]], [1, 1, 1, 1]))
    expected = np.eye(6, dtype=bool)
    expected[2:5, 1] = True
    assert np.array_equal(m, expected)


def test_sdoi_pieces_share_or_hang_off_first_piece():
    spec = Spec([[([-1, 0], None)]], [1, 3])  # [CLS] w0 w1 ##a ##b [SEP]
    share = _mask(spec, "share")
    assert share[2:5, 1:5].all()  # the pieces of w1 are one node: they see each other and w0
    children = _mask(spec, "children")
    assert children[3, 2] and children[3, 1] and not children[3, 4] and not children[2, 3]


def test_sdoi_two_sentences_and_pair_never_cross():
    spec = Spec([[([-1, 0], None), ([1, -1], None)], [([-1], None)]], [1, 1, 1, 1, 1])
    m = _mask(spec)
    # positions: 0 CLS, 1-2 sentence 0, 3-4 sentence 1, 5 SEP, 6 text 1, 7 SEP
    assert m[2, 1] and m[3, 4] and not m[3, 1] and not m[1:3, 3:5].any() and not m[6, :6].any()
    assert np.array_equal(m.sum(1), [1, 1, 2, 2, 1, 1, 1, 1])


def test_sdoi_specials_and_padding_attend_to_themselves_only():
    ex = make_example(Spec([[([-1, 0, 1], None)]], [1, 1, 1]), extra_specials=(2,))
    e = encode_syntax(ex)
    m = sdoi_mask_from_features(pad([e], extra=3))[0].numpy()
    special = [0, 2, 5, 6, 7, 8]  # CLS, inserted special, SEP, 3 pads
    for s in special:
        assert m[s].tolist() == [j == s for j in range(9)]
        assert m[:, s].tolist() == [j == s for j in range(9)]
    assert m.any(1).all()


def test_sdoi_unbatched_and_dtypes():
    e = encode_syntax(make_example(Spec([[([1, -1], None)]], [2, 1])))
    batched = sdoi_mask_from_features(pad([e]))[0]
    for dtype in (torch.int32, torch.int64):
        t = {k: torch.as_tensor(e[k]).to(dtype) for k in ("dep_tin", "dep_tout", "syntax_tree")}
        single = sdoi_mask(t["dep_tin"], t["dep_tout"], t["syntax_tree"])
        assert single.dtype == torch.bool and single.shape == (5, 5)
        assert torch.equal(single, batched)


@settings(max_examples=100, deadline=None)
@given(st.lists(rngs(), min_size=1, max_size=4), st.sampled_from(["share", "children"]))
def test_sdoi_matches_reference_batched(rngs_: list[random.Random], criterion: str):
    examples = []
    for rng in rngs_:
        ex = random_example(rng)
        if rng.random() < 0.5:  # a random window of it
            start = rng.randrange(len(ex))
            ex, _ = window(ex, start, rng.randint(start + 1, len(ex)), rng.random() < 0.5, rng.random() < 0.5)
        examples.append(ex)
    batch = pad([encode_syntax(ex, criterion) for ex in examples], extra=rngs_[0].randint(0, 2))
    masks = sdoi_mask_from_features(batch)
    L = masks.shape[-1]
    for b, ex in enumerate(examples):
        n = len(ex)
        expected = np.eye(L, dtype=bool)
        expected[:n, :n] = ref_sdoi(ex, criterion)
        assert np.array_equal(masks[b].numpy(), expected)
