"""The translation model (modeling/seq2seq.py): equal to the plain Transformer where syntax is off, syntax reaches
it where on, transformers' own beam search through ``generate`` with the syntax inputs as encoder inputs,
the one decoding path (``generate_ids``, ``translate_texts``), ``AutoModelForSeq2SeqLM`` save / load."""

from __future__ import annotations

import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError
from transformers import AutoConfig, AutoModelForSeq2SeqLM, MarianMTModel

from syntaxformer.data.translation_pairs import decode_translations
from syntaxformer.errors import SyntaxformerError
from syntaxformer.modeling.seq2seq import (
    SyntaxInfusedForConditionalGeneration,
    build_config,
    generate_ids,
    translate_texts,
)
from syntaxformer.tasks.translation import collate_pairs, encode_pairs

pytestmark = pytest.mark.usefixtures("one_thread")

FEATS = ("upos", "case", "subword")
ALL_INPUTS = ("upos_ids", "xpos_ids", "case_ids", "subword_ids", "dep_tin", "dep_tout", "syntax_tree")


@pytest.fixture(scope="module")
def batch(annotator, tokenizers, m30k_small):
    src_tok, tgt_tok = tokenizers
    train, _ = m30k_small
    return collate_pairs(
        encode_pairs(train.select(range(4)), src_tok, tgt_tok, annotator, ALL_INPUTS, show_progress=False), 0, 2
    )


def _model(tokenizers, **options) -> SyntaxInfusedForConditionalGeneration:
    src_tok, tgt_tok = tokenizers
    torch.manual_seed(0)
    model = SyntaxInfusedForConditionalGeneration(
        build_config("tiny", len(src_tok), len(tgt_tok), feature_dim=8, **options)
    )
    return model.eval()


def _source(batch):
    return {k: v for k, v in batch.items() if k not in ("labels", "decoder_input_ids")}


def test_seq2seq_baseline_equals_the_plain_marian_model(tokenizers, batch):
    """No features, no SG layer: exactly MarianMTModel with our source embedding as its encoder embedding."""
    model = _model(tokenizers)
    plain = MarianMTModel(model.config.seq2seq).eval()
    state = {k[len("seq2seq.") :]: v for k, v in model.state_dict().items() if k.startswith("seq2seq.")}
    state["model.encoder.embed_tokens.weight"] = model.source_embeddings.tokens.weight
    missing, unexpected = plain.load_state_dict(state, strict=False)
    assert not unexpected and all("embed_positions" in k for k in missing)
    with torch.no_grad():
        ours = model(**batch)
        theirs = plain(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
    assert torch.allclose(ours.logits, theirs.logits, atol=1e-5)
    assert torch.allclose(ours.loss, theirs.loss, atol=1e-5)  # plain cross-entropy; smoothing is the Trainer's
    # the collator's decoder input is the model's own shift of the labels
    assert torch.equal(batch["decoder_input_ids"], model.prepare_decoder_input_ids_from_labels(batch["labels"]))


def test_seq2seq_sg_layer_path_equals_plain_path_when_it_has_no_weight(tokenizers, batch):
    """alpha = 1 gives H̄ = H: the SG encoder path reduces to the plain path (same weights otherwise)."""
    plain = _model(tokenizers, features=FEATS)
    sg = _model(tokenizers, features=FEATS, use_sg_layer=True, alpha=1.0)
    sg.load_state_dict(plain.state_dict(), strict=False)
    with torch.no_grad():
        a, b = plain.encode(**_source(batch)).last_hidden_state, sg.encode(**_source(batch)).last_hidden_state
    assert torch.allclose(a, b, atol=1e-6)
    half = _model(tokenizers, features=FEATS, use_sg_layer=True)
    half.load_state_dict(sg.state_dict())
    with torch.no_grad():
        c = half.encode(**_source(batch)).last_hidden_state
    assert not torch.allclose(a, c, atol=1e-3)


def test_seq2seq_syntax_inputs_are_declared_and_reach_the_encoder_only_when_enabled(tokenizers, batch):
    noisy = dict(batch)
    noisy["upos_ids"] = torch.where(batch["upos_ids"] > 0, 2, 0)  # every word an ADJ
    noisy["dep_tout"] = batch["dep_tin"].clone()  # no word dominates another: SDOI = self only
    cases = (
        ({}, (), False),
        ({"features": FEATS}, ("upos_ids", "case_ids", "subword_ids"), True),
        ({"use_sg_layer": True}, ("dep_tin", "dep_tout", "syntax_tree"), True),
        ({"use_sg_layer": True, "sg_mask": "none"}, (), False),
    )
    for options, inputs, changes in cases:
        model = _model(tokenizers, **options)
        assert model.config.syntax_inputs == inputs, options
        with torch.no_grad():
            diff = (model(**batch).encoder_last_hidden_state - model(**noisy).encoder_last_hidden_state).abs().max()
        assert (diff > 1e-4) == changes, options
    with pytest.raises(SyntaxformerError, match="dep_tin"):
        _model(tokenizers, use_sg_layer=True).encode(batch["input_ids"], batch["attention_mask"])


def test_seq2seq_generate_is_transformers_beam_search_over_the_syntax_aware_encoder(tokenizers, batch):
    """``generate`` (GenerationMixin) with the syntax inputs as encoder kwargs gives what the wrapped model's
    ``generate`` gives on precomputed syntax-aware encoder outputs (the former hand-written path); a padded batch
    translates each sentence as it would be translated alone (beam 5 and greedy)."""
    model = _model(tokenizers, features=FEATS, use_sg_layer=True)
    inputs = _source(batch)
    with torch.no_grad():
        out = model.generate(**inputs, num_beams=5, max_new_tokens=7)
        reference = model.seq2seq.generate(
            encoder_outputs=model.encode(**inputs),
            attention_mask=inputs["attention_mask"],
            num_beams=5,
            max_new_tokens=7,
        )
        with_labels = model.generate(**inputs, labels=batch["labels"], num_beams=5, max_new_tokens=7)
    assert torch.equal(out, reference) and torch.equal(out, with_labels)  # labels (Seq2SeqTrainer) are ignored
    assert out.shape[0] == 4 and 2 <= out.shape[1] <= 8 and torch.all(out[:, 0] == model.config.decoder_start_token_id)
    lengths = inputs["attention_mask"].sum(1)
    for beams in (5, 1):
        with torch.no_grad():
            together = model.generate(**inputs, num_beams=beams, max_new_tokens=7)
        for i in range(4):
            alone = {k: v[i : i + 1, : int(lengths[i])] for k, v in inputs.items()}  # no padding at all
            with torch.no_grad():
                one = model.generate(**alone, num_beams=beams, max_new_tokens=7)
            row = together[i][together[i] != model.config.pad_token_id]
            assert torch.equal(one[0][one[0] != model.config.pad_token_id], row), (beams, i)


def test_seq2seq_generate_ids_translates_each_source_as_alone_in_input_order(annotator, tokenizers, m30k_small):
    """``generate_ids`` (length-sorted batches, outputs in input order) gives for every source what ``generate``
    gives for it alone; ``translate_texts`` decodes the same ids and gives a blank source an empty translation."""
    src_tok, tgt_tok = tokenizers
    model = _model(tokenizers, features=FEATS, use_sg_layer=True)
    sources = list(m30k_small[0].sources[:7])
    items = encode_pairs(sources, src_tok, None, annotator, model.config.syntax_inputs, show_progress=False)
    assert len({len(it["input_ids"]) for it in items}) > 2  # the batches are sorted, not in input order
    ids = generate_ids(model, items, 3, num_beams=3, max_new_tokens=7)
    assert ids.shape[0] == 7
    pad = model.config.pad_token_id
    for item, row in zip(items, ids):
        with torch.no_grad():
            one = model.generate(**collate_pairs([item], pad), num_beams=3, max_new_tokens=7)[0]
        assert one[one != pad].tolist() == row[(row != pad) & (row != -100)].tolist()
    texts = translate_texts(model, [sources[5], " ", sources[0]], src_tok, tgt_tok, annotator, 3, 2, num_beams=3,
                            max_new_tokens=7)  # fmt: skip
    assert texts == [*decode_translations(ids[[5]], tgt_tok), "", *decode_translations(ids[[0]], tgt_tok)]


def test_seq2seq_save_and_load_with_the_auto_classes(tokenizers, batch, tmp_path):
    model = _model(tokenizers, features=("xpos", "subword"), feature_combine="concat", use_sg_layer=True)
    model.save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).model_type == "syntax_infused_translation"
    again = AutoModelForSeq2SeqLM.from_pretrained(str(tmp_path)).eval()
    assert type(again) is SyntaxInfusedForConditionalGeneration
    assert again.config.features == ["xpos", "subword"] and again.config.feature_combine == "concat"
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, again(**batch).logits, atol=1e-6)
    lm, dec = again.seq2seq.lm_head.weight, again.seq2seq.model.decoder.embed_tokens.weight
    assert lm.data_ptr() == dec.data_ptr()  # decoder input and output embeddings stay tied
    assert again.generation_config.forced_eos_token_id == model.config.eos_token_id
    with pytest.raises(StrictDataclassClassValidationError, match="feature_dim"):
        build_config("tiny", 10, 10, features=FEATS, feature_dim=32)


# -- on CUDA (``gpu`` tests: skipped without a CUDA device; no data or parser needed) -------------------------------
def synthetic_batch(src_vocab: int = 40, tgt_vocab: int = 50, seed: int = 0) -> dict[str, torch.Tensor]:
    """A translation batch from random trees (the collator's ``dep_tin`` / ``dep_tout`` / ``syntax_tree``, -1 at
    special tokens and padding), random token and feature ids, random labels with -100 padding."""
    from syntaxformer.data.subword_features import N_RESERVED
    from tests.modeling.test_modeling_sgnet import make_batch

    trees = make_batch(seed)
    g = torch.Generator().manual_seed(seed)
    mask = trees["attention_mask"]
    batch = {
        "input_ids": torch.where(mask > 0, torch.randint(3, src_vocab, mask.shape, generator=g), 0),
        "attention_mask": mask,
    }
    batch.update({k: trees[k].long() for k in ("dep_tin", "dep_tout", "syntax_tree")})
    for f in FEATS:
        ids = torch.randint(N_RESERVED, N_RESERVED + 2, mask.shape, generator=g)
        batch[f"{f}_ids"] = torch.where(trees["syntax_tree"] >= 0, ids, 0)
    labels = torch.randint(3, tgt_vocab, (mask.shape[0], 6), generator=g)
    labels[0, 4:] = -100
    batch["labels"] = labels
    return batch


def check_seq2seq_on(device, atol: float = 1e-4) -> None:
    """The syntax-infused translation model (features + SDOI SG layer) on ``device``: the CPU model's loss, logits
    and gradients (same weights, eval mode so no dropout), and beam search runs there."""
    batch = synthetic_batch()
    torch.manual_seed(0)
    cpu = SyntaxInfusedForConditionalGeneration(
        build_config("tiny", 40, 50, features=FEATS, use_sg_layer=True, feature_dim=8)
    ).eval()
    other = SyntaxInfusedForConditionalGeneration(cpu.config).eval()
    other.load_state_dict(cpu.state_dict())
    other.to(device)
    moved = {k: v.to(device) for k, v in batch.items()}
    out_cpu, out_dev = cpu(**batch), other(**moved)
    assert torch.isfinite(out_dev.loss) and torch.allclose(out_dev.loss.cpu(), out_cpu.loss, atol=atol)
    assert torch.allclose(out_dev.logits.cpu(), out_cpu.logits, atol=atol)
    out_cpu.loss.backward()
    out_dev.loss.backward()
    g_cpu = {n: p.grad for n, p in cpu.named_parameters() if p.grad is not None}
    g_dev = {n: p.grad for n, p in other.named_parameters() if p.grad is not None}
    assert any(n.startswith("sg_layer.") for n in g_cpu) and any(
        n.startswith("source_embeddings.features.") for n in g_cpu
    )
    assert set(g_dev) == set(g_cpu)
    for name, grad in g_cpu.items():
        assert torch.allclose(g_dev[name].cpu(), grad, atol=atol), (name, (g_dev[name].cpu() - grad).abs().max())
    with torch.no_grad():
        hyp = other.generate(**_source(moved), num_beams=3, max_new_tokens=5)
    assert hyp.device.type == torch.device(device).type and hyp.shape[0] == batch["input_ids"].shape[0]


@pytest.mark.gpu
def test_seq2seq_forward_backward_and_generate_on_cuda(cuda_fp32):
    check_seq2seq_on(cuda_fp32)


def test_seq2seq_sg_layer_uses_gelu_and_old_configs_keep_relu(tmp_path):
    """SG-Net §3.2: the SG layer's feed-forward uses GeLU (the wrapped Transformer uses ReLU); ``"relu"`` stays
    reachable, and a config saved before ``sg_hidden_act`` existed loads with the activation it was trained with."""
    from transformers.activations import ACT2FN

    config = build_config("tiny", 50, 60, use_sg_layer=True)
    assert config.seq2seq.activation_function == "relu" and config.sg_hidden_act == "gelu"
    model = SyntaxInfusedForConditionalGeneration(config)
    assert type(model.sg_layer.act) is type(ACT2FN["gelu"])
    relu = SyntaxInfusedForConditionalGeneration(build_config("tiny", 50, 60, use_sg_layer=True, sg_hidden_act="relu"))
    assert type(relu.sg_layer.act) is type(ACT2FN["relu"])
    old = config.to_dict()
    del old["sg_hidden_act"]
    assert type(config).from_dict(old).sg_hidden_act == "relu"
    config.save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).sg_hidden_act == "gelu"


def test_seq2seq_forward_rejects_unknown_keywords_and_accepts_what_transformers_passes():
    """A misspelt or foreign key is an error naming it (it used to be passed on and ignored); the output options
    and ``num_items_in_batch`` (Trainer) are accepted."""
    batch = synthetic_batch()
    torch.manual_seed(0)
    model = SyntaxInfusedForConditionalGeneration(
        build_config("tiny", 40, 50, features=FEATS, use_sg_layer=True, feature_dim=8)
    ).eval()
    with torch.no_grad():
        reference = model(**batch).loss
        out = model(**batch, output_attentions=True, return_dict=True, num_items_in_batch=5)
    assert torch.equal(out.loss, reference)
    with pytest.raises(SyntaxformerError, match=r"unexpected keyword arguments \['pos_ids', 'text'\]"):
        model(**batch, text=["a"], pos_ids=batch["upos_ids"])
    assert model.accepts_loss_kwargs is False
