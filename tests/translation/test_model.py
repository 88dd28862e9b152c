"""The translation model: equal to the plain Transformer where syntax is off, syntax reaches it where on, beam
search through ``generate``, save / load."""

from __future__ import annotations

import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError
from transformers import MarianMTModel

from syntaxformer.errors import SyntaxformerError
from syntaxformer.translation.dataset import collate, encode_corpus
from syntaxformer.translation.model import SyntaxTransformerForTranslation, build_config

FEATS = ("upos", "case", "subword")


@pytest.fixture(scope="module")
def batch(annotator, tokenizers, m30k_small):
    src_tok, tgt_tok = tokenizers
    train, _ = m30k_small
    return collate(encode_corpus(train.select(range(4)), src_tok, tgt_tok, annotator, show_progress=False))


def _model(tokenizers, **options) -> SyntaxTransformerForTranslation:
    src_tok, tgt_tok = tokenizers
    torch.manual_seed(0)
    model = SyntaxTransformerForTranslation(build_config("tiny", len(src_tok), len(tgt_tok), feature_dim=8,
                                                         **options))
    return model.eval()


def test_model_baseline_equals_the_plain_marian_model(tokenizers, batch):
    """No features, no SG layer: exactly MarianMTModel with our source embedding as its encoder embedding."""
    model = _model(tokenizers)
    plain = MarianMTModel(model.config.seq2seq).eval()
    state = {k[len("seq2seq."):]: v for k, v in model.state_dict().items() if k.startswith("seq2seq.")}
    state["model.encoder.embed_tokens.weight"] = model.source_embeddings.tokens.weight
    missing, unexpected = plain.load_state_dict(state, strict=False)
    assert not unexpected and all("embed_positions" in k for k in missing)
    with torch.no_grad():
        ours = model(**batch)
        theirs = plain(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
    assert torch.allclose(ours.logits, theirs.logits, atol=1e-5)
    unsmoothed = torch.nn.functional.cross_entropy(ours.logits.flatten(0, 1), batch["labels"].flatten())
    assert torch.allclose(unsmoothed, theirs.loss, atol=1e-5) and not torch.allclose(ours.loss, theirs.loss)


def test_model_sg_layer_path_equals_plain_path_when_it_has_no_weight(tokenizers, batch):
    """alpha = 1 gives H̄ = H: the SG encoder path reduces to the plain path (same weights otherwise)."""
    plain = _model(tokenizers, features=FEATS)
    sg = _model(tokenizers, features=FEATS, use_sg_layer=True, alpha=1.0)
    sg.load_state_dict(plain.state_dict(), strict=False)
    with torch.no_grad():
        a, b = plain.encode(**batch).last_hidden_state, sg.encode(**batch).last_hidden_state
    assert torch.allclose(a, b, atol=1e-6)
    half = _model(tokenizers, features=FEATS, use_sg_layer=True)
    half.load_state_dict(sg.state_dict())
    with torch.no_grad():
        c = half.encode(**batch).last_hidden_state
    assert not torch.allclose(a, c, atol=1e-3)


def test_model_syntax_inputs_reach_the_encoder_only_when_enabled(tokenizers, batch):
    noisy = dict(batch)
    noisy["upos_ids"] = torch.where(batch["upos_ids"] > 0, 2, 0)  # every word an ADJ
    noisy["dep_tout"] = batch["dep_tin"].clone()  # no word dominates another: SDOI = self only
    for options, changes in (({}, False), ({"features": FEATS}, True), ({"use_sg_layer": True}, True)):
        model = _model(tokenizers, **options)
        with torch.no_grad():
            diff = (model.encode(**batch).last_hidden_state - model.encode(**noisy).last_hidden_state).abs().max()
        assert (diff > 1e-4) == changes, options
    with pytest.raises(SyntaxformerError, match="dep_tin"):
        _model(tokenizers, use_sg_layer=True).encode(batch["input_ids"], batch["attention_mask"])


def test_model_generate_beam5_with_syntax_features(tokenizers, batch):
    model = _model(tokenizers, features=FEATS, use_sg_layer=True)
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    out = model.generate(num_beams=5, max_new_tokens=7, **inputs)
    assert out.shape[0] == 4 and 2 <= out.shape[1] <= 8 and torch.all(out[:, 0] == model.config.seq2seq.bos_token_id)
    greedy_one = model.generate(num_beams=1, max_new_tokens=7, **{k: v[:1] for k, v in inputs.items()})
    greedy_all = model.generate(num_beams=1, max_new_tokens=7, **inputs)
    n = greedy_one.shape[1]
    assert torch.equal(greedy_one[0], greedy_all[0, :n])  # padding of the other sources does not leak in


def test_model_save_and_load_round_trip(tokenizers, batch, tmp_path):
    model = _model(tokenizers, features=("xpos", "subword"), feature_combine="concat", use_sg_layer=True)
    model.save_pretrained(tmp_path)
    again = SyntaxTransformerForTranslation.from_pretrained(str(tmp_path)).eval()
    assert again.config.features == ["xpos", "subword"] and again.config.feature_combine == "concat"
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, again(**batch).logits, atol=1e-6)
    lm, dec = again.seq2seq.lm_head.weight, again.seq2seq.model.decoder.embed_tokens.weight
    assert lm.data_ptr() == dec.data_ptr()  # decoder input and output embeddings stay tied
    with pytest.raises(StrictDataclassClassValidationError, match="feature_dim"):
        build_config("tiny", 10, 10, features=FEATS, feature_dim=32)
