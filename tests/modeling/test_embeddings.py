"""The syntax feature embeddings (modeling/embeddings.py): shapes, sum / concat, scale, clear errors."""

from __future__ import annotations

import pytest
import torch

from syntaxformer.errors import SyntaxformerError
from syntaxformer.modeling.embeddings import SyntaxFeatureEmbedding, SyntaxInfusedEmbedding, split_dim


def test_embeddings_shapes_sum_and_concat():
    ids = {
        "upos_ids": torch.tensor([[2, 5, 0]]),
        "case_ids": torch.tensor([[2, 3, 0]]),
        "subword_ids": torch.tensor([[2, 4, -1]]),
    }
    feats = ("upos", "case", "subword")
    s = SyntaxFeatureEmbedding(feats, 20, "sum")
    c = SyntaxFeatureEmbedding(feats, 20, "concat")
    assert s(ids).shape == (1, 3, 20) and c(ids).shape == (1, 3, 20)
    assert [e.embedding_dim for e in c.embeddings.values()] == split_dim(20, 3) == [7, 7, 6]
    manual = sum(s.embeddings[f](ids[f"{f}_ids"].clamp(min=0)) for f in feats)
    assert torch.allclose(s(ids), manual)
    assert torch.equal(s(ids)[0, 2], torch.zeros(20))  # "no word" (0 and padding -1) is the zero vector
    emb = SyntaxInfusedEmbedding(50, 64, feats, 20, "sum", padding_idx=0, scale=8.0)
    out = emb(torch.tensor([[7, 9, 0]]), ids)
    assert out.shape == (1, 3, 64) and emb.tokens.embedding_dim == 44
    assert torch.allclose(out[..., :44], 8.0 * emb.tokens(torch.tensor([[7, 9, 0]])))
    assert torch.allclose(out[..., 44:], 8.0 * emb.features(ids))  # same scale as the token part
    base = SyntaxInfusedEmbedding(50, 64, (), padding_idx=0)
    assert base(torch.tensor([[7]])).shape == (1, 1, 64)
    with pytest.raises(SyntaxformerError, match="no 'case_ids'"):
        s({"upos_ids": ids["upos_ids"], "subword_ids": ids["subword_ids"]})
    with pytest.raises(SyntaxformerError, match="combine"):
        SyntaxFeatureEmbedding(feats, 20, "product")
