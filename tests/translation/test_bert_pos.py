"""BERT+POS (Syntax-Infused BERT): a trainable POS embedding added to the token embeddings of the SG-Net
classification model; off by default, leaving the model and its outputs unchanged."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.subword_features import subword_feature_ids
from syntaxformer.modeling import SGNetForSequenceClassification, SGNetConfig


def _config(**options) -> SGNetConfig:
    enc = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64)
    return SGNetConfig(encoder=enc, num_labels=2, pooling="mean", **options)


def _batch(annotator, tokenizers):
    from syntaxformer.data.collate import SyntaxCollator, example_arrays

    src_tok, _ = tokenizers
    docs = annotator.annotate(["A little girl climbing into a wooden playhouse.", "Two dogs run."])
    feats = []
    for w in SyntaxAligner(src_tok).align_batch(docs):
        arrays = example_arrays(w[0], constituency=False)
        arrays["pos_ids"] = subword_feature_ids(w[0], None, ["upos"])["upos_ids"]
        feats.append(arrays)
    batch = SyntaxCollator(pad_token_id=0)(feats)  # pads pos_ids with -1, which the model reads as "no word"
    batch["labels"] = torch.tensor([0, 1])
    return batch


def test_bert_pos_is_off_by_default_and_starts_as_the_plain_model(annotator, tokenizers):
    batch = _batch(annotator, tokenizers)
    torch.manual_seed(0)
    plain = SGNetForSequenceClassification(_config()).eval()
    assert plain.config.pos_embeddings is None and plain.sgnet.pos_embeddings is None
    assert not any("pos_embeddings" in k for k in plain.state_dict())
    with_pos = SGNetForSequenceClassification(_config(pos_embeddings="upos")).eval()
    missing, unexpected = with_pos.load_state_dict(plain.state_dict(), strict=False)
    assert missing == ["sgnet.pos_embeddings.weight"] and not unexpected
    with torch.no_grad():
        a = plain(**batch).logits
        b = with_pos(**batch).logits  # zero-initialised POS table: the same outputs at the start
        assert torch.allclose(a, b, atol=1e-6)
        with_pos.sgnet.pos_embeddings.weight.normal_(0, 0.5)
        assert not torch.allclose(a, with_pos(**batch).logits, atol=1e-4)
    with pytest.raises(ValueError, match="pos_ids"):
        with_pos(**{k: v for k, v in batch.items() if k != "pos_ids"})


def test_bert_pos_gradient_reaches_the_pos_embedding(annotator, tokenizers):
    batch = _batch(annotator, tokenizers)
    torch.manual_seed(0)
    model = SGNetForSequenceClassification(_config(pos_embeddings="upos")).train()
    model(**batch).loss.backward()
    grad = model.sgnet.pos_embeddings.weight.grad
    used = torch.unique(batch["pos_ids"].clamp(min=0))
    assert grad is not None and torch.all(grad[used[used > 0]].abs().sum(-1) > 0)
    assert torch.all(grad[0] == 0)  # "no word" (special tokens, padding) stays a zero vector
