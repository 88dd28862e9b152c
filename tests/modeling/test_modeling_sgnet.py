"""SG-Net model: config, syntax-guided layer vs. a slow reference, masks, aggregations, heads, save/load."""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForSequenceClassification,
    BertConfig,
    BertForSequenceClassification,
    DistilBertConfig,
)

from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.errors import InputError
from syntaxformer.masks import sdoi_mask
from syntaxformer.modeling import (
    AGGREGATIONS,
    SequenceClassifierOutput,
    SGNetConfig,
    SGNetForSequenceClassification,
    SGNetModel,
    SGNetModelOutput,
    SyntaxGuidedLayer,
)
from tests.conftest import enable_checkpointing, minilm_path
from tests.masks.reference import random_example

VOCAB = 100


def tiny_bert(**kw) -> BertConfig:
    """Tiny random BERT: hidden 32, 2 layers, 4 heads (intermediate 37 so no size coincides by accident)."""
    args = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=512,
    )
    args.update(kw)
    return BertConfig(**args)


def tiny_config(**kw) -> SGNetConfig:
    return SGNetConfig(encoder=tiny_bert(), **kw)


def make_batch(seed: int = 0, n: int = 3, max_words: int = 6) -> dict[str, torch.Tensor]:
    """A SyntaxCollator batch of random trees (special tokens, several sentences, pairs, padding), random ids."""
    rng = random.Random(seed)
    examples = [random_example(rng, max_words=max_words) for _ in range(n)]
    batch = SyntaxCollator(pad_token_id=0)(examples)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, batch["input_ids"].shape, generator=g)
    batch["input_ids"] = torch.where(batch["attention_mask"] > 0, ids, 0)
    assert (batch["attention_mask"] == 0).any(), "the batch should contain padding"
    return batch


def tiny_model(cls=SGNetForSequenceClassification, seed: int = 0, **kw):
    torch.manual_seed(seed)
    kw.setdefault("num_labels", 3)
    return cls(tiny_config(**kw)).eval()


# ---------------------------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------------------------


def test_config_defaults_come_from_paper_and_encoder():
    c = tiny_config()
    assert (c.use_sg_layer, c.alpha, c.alpha_mode, c.aggregation, c.pooling) == (True, 0.5, "fixed", "dual", "mean")
    assert (c.sg_num_heads, c.sg_intermediate_size, c.sg_hidden_act) == (4, 37, "gelu")
    assert c.sg_dropout == c.encoder.hidden_dropout_prob and c.classifier_dropout == c.encoder.hidden_dropout_prob
    assert c.hidden_size == 32 and not c.mask_special_in_aggregation and c.num_labels == 2


@pytest.mark.parametrize(
    "bad",
    [
        dict(alpha=1.5),
        dict(aggregation="sum"),
        dict(sg_num_heads=5),
        dict(pooling="max"),
        dict(alpha_mode="adaptive"),
        dict(sg_dropout=1.0),
    ],
)
def test_config_rejects_bad_options(bad):
    with pytest.raises(Exception) as err:
        tiny_config(**bad)
    assert next(iter(bad)) in str(err.value)


def test_config_json_round_trip_rebuilds_encoder_config(tmp_path):
    c = tiny_config(alpha_mode="learned", aggregation="concat", num_labels=4)
    c.save_pretrained(tmp_path)
    c2 = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(c2, SGNetConfig) and isinstance(c2.encoder, BertConfig)
    assert c2.encoder.intermediate_size == 37 and c2.num_labels == 4 and c2.aggregation == "concat"
    assert c2.alpha_mode == "learned"


# ---------------------------------------------------------------------------------------------------------------
# The syntax-guided layer against a slow reference
# ---------------------------------------------------------------------------------------------------------------


def slow_sg_layer(layer: SyntaxGuidedLayer, h: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 6-8 + FFN, one example and one head at a time, softmax written out over the allowed keys only."""
    B, L, H = h.shape
    nh = layer.num_heads
    d = H // nh
    out = torch.empty_like(h)
    probs = torch.zeros(B, nh, L, L, dtype=h.dtype)
    for b in range(B):
        x = h[b]
        q, k, v = layer.query(x), layer.key(x), layer.value(x)
        heads = []
        for m in range(nh):
            sl = slice(m * d, (m + 1) * d)
            ctx = torch.zeros(L, d, dtype=h.dtype)
            for i in range(L):
                allowed = [j for j in range(L) if mask[b, i, j]]
                s = torch.stack([q[i, sl] @ k[j, sl] for j in allowed]) / math.sqrt(d)
                e = torch.exp(s - s.max())
                p = e / e.sum()
                for p_ij, j in zip(p, allowed):
                    probs[b, m, i, j] = p_ij
                    ctx[i] += p_ij * v[j, sl]
            heads.append(ctx)
        a = layer.attn_norm(x + layer.attn_output(torch.cat(heads, dim=-1)))
        ffn = layer.output(F.gelu(layer.intermediate(a)))
        out[b] = layer.output_norm(a + ffn)
    return out, probs


def test_sg_layer_matches_slow_reference():
    batch = make_batch(seed=1)
    B, L = batch["input_ids"].shape
    torch.manual_seed(0)
    layer = SyntaxGuidedLayer(32, 4, 37).eval()
    h = torch.randn(B, L, 32)
    mask = sdoi_mask(batch["dep_tin"], batch["dep_tout"], batch["syntax_tree"])
    with torch.no_grad():
        fast, _ = layer(h, mask)
        explicit, p = layer(h, mask, output_attentions=True)
        ref, ref_p = slow_sg_layer(layer, h, mask)
    assert torch.allclose(fast, ref, atol=1e-5) and torch.allclose(explicit, ref, atol=1e-5)
    assert torch.allclose(p, ref_p, atol=1e-6)


def test_sg_attention_never_reaches_padding_and_specials_see_only_themselves():
    batch = make_batch(seed=2)
    model = tiny_model(SGNetModel)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    p = out.sg_attentions  # (B, nh, L, L)
    pad = batch["attention_mask"] == 0
    special = batch["syntax_tree"] < 0
    eye = torch.eye(p.shape[-1], dtype=torch.bool)
    off_diag_to_pad = pad[:, None, None, :] & ~eye
    assert p.masked_select(off_diag_to_pad).abs().max() == 0
    rows = p.permute(0, 2, 1, 3)[special]  # (n_special, nh, L)
    assert torch.equal(rows, eye[special.nonzero()[:, 1]][:, None, :].expand_as(rows).float())
    # no real token attends to a special token
    real_rows_to_special = (~special)[:, None, :, None] & special[:, None, None, :]
    assert p.masked_select(real_rows_to_special).abs().max() == 0


def test_sgnet_padding_does_not_change_real_positions():
    batch = make_batch(seed=3)
    model = tiny_model(mask_special_in_aggregation=False)
    pad = batch["attention_mask"] == 0
    changed = dict(batch)
    changed["input_ids"] = torch.where(pad, torch.randint(1, VOCAB, pad.shape), batch["input_ids"])
    # even syntax tensors that claim a padded position belongs to a tree must not let it be attended
    changed["syntax_tree"] = torch.where(pad, 0, batch["syntax_tree"])
    changed["dep_tin"] = torch.where(pad, 0, batch["dep_tin"])
    changed["dep_tout"] = torch.where(pad, 10_000, batch["dep_tout"])
    with torch.no_grad():
        a = model.sgnet(**batch).last_hidden_state
        b = model.sgnet(**changed).last_hidden_state
        la, lb = model(**batch).logits, model(**changed).logits
    assert torch.allclose(a[~pad], b[~pad], atol=1e-6)
    assert torch.allclose(la, lb, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# Model, heads, aggregation
# ---------------------------------------------------------------------------------------------------------------


def test_sgnet_shapes_and_tuple_output():
    batch = make_batch()
    B, L = batch["input_ids"].shape
    model = tiny_model(SGNetModel)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
        tup = model(**batch, return_dict=False)
    assert isinstance(out, SGNetModelOutput)
    for t in (out.last_hidden_state, out.encoder_hidden_state, out.syntax_hidden_state):
        assert t.shape == (B, L, 32)
    assert out.sg_attentions.shape == (B, 4, L, L)
    assert torch.allclose(out.last_hidden_state, 0.5 * out.encoder_hidden_state + 0.5 * out.syntax_hidden_state)
    assert isinstance(tup, tuple) and torch.allclose(tup[0], out.last_hidden_state, atol=1e-5)

    clf = tiny_model(num_labels=5)
    with torch.no_grad():
        res = clf(**batch)
    assert isinstance(res, SequenceClassifierOutput) and res.logits.shape == (B, 5) and res.loss is None


def test_sgnet_loss_only_with_labels():
    batch = make_batch()
    model = tiny_model(num_labels=3)
    assert model(**batch).loss is None
    labels = torch.tensor([0, 2, 1])
    out = model(**batch, labels=labels)
    assert torch.allclose(out.loss, F.cross_entropy(out.logits, labels))


def test_sgnet_regression_and_multi_label():
    batch = make_batch()
    reg = tiny_model(num_labels=1)
    y = torch.tensor([0.5, -1.0, 2.0])
    out = reg(**batch, labels=y)
    assert out.logits.shape == (3, 1) and torch.allclose(out.loss, F.mse_loss(out.logits.squeeze(-1), y))
    multi = tiny_model(num_labels=2, problem_type="multi_label_classification")
    y2 = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    out2 = multi(**batch, labels=y2)
    assert torch.allclose(out2.loss, F.binary_cross_entropy_with_logits(out2.logits, y2))


def test_sgnet_baseline_equals_plain_encoder_and_head(tmp_path):
    torch.manual_seed(0)
    plain = BertForSequenceClassification(tiny_bert(num_labels=3)).eval()
    plain.save_pretrained(tmp_path)
    model = SGNetForSequenceClassification.from_encoder_pretrained(
        str(tmp_path), num_labels=3, use_sg_layer=False, pooling="cls"
    )
    assert model.sgnet.sg_layer is None and not any("sg_layer" in n for n, _ in model.named_parameters())
    model.classifier.load_state_dict(plain.classifier.state_dict())
    batch = make_batch()
    # the baseline needs no syntax
    plain_inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
    with torch.no_grad():
        expected = plain(**plain_inputs).logits
        got = model(**plain_inputs).logits
        got_batch = model(**batch).logits
    assert torch.allclose(got, expected, atol=1e-6) and torch.allclose(got_batch, expected, atol=1e-6)


def test_sgnet_alpha_fixed_has_no_parameter_learned_gets_gradient():
    batch = make_batch()
    fixed = tiny_model(alpha=0.3).train()
    assert not any("alpha" in n for n, _ in fixed.named_parameters())
    with torch.no_grad():
        o = fixed.eval().sgnet(**batch)
    assert torch.allclose(o.last_hidden_state, 0.3 * o.encoder_hidden_state + 0.7 * o.syntax_hidden_state, atol=1e-6)

    learned = tiny_model(alpha=0.3, alpha_mode="learned").train()
    logit = learned.sgnet.aggregation.alpha_logit
    assert torch.allclose(torch.sigmoid(logit), torch.tensor(0.3))
    learned(**batch, labels=torch.tensor([0, 1, 2])).loss.backward()
    assert logit.grad is not None and logit.grad.abs() > 0


def test_sgnet_copy_last_repeats_last_encoder_layer():
    model = tiny_model(SGNetModel, sg_init="copy_last")
    batch = make_batch()
    B, L = batch["input_ids"].shape
    with torch.no_grad():
        h = model(**batch).encoder_hidden_state
        no_mask = torch.ones(B, L, L, dtype=torch.bool)
        mine, _ = model.sg_layer(h, no_mask)
        theirs = model.encoder.encoder.layer[-1](h)
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert torch.allclose(mine, theirs, atol=1e-5)
    with pytest.raises(ValueError, match="sg_num_heads"):
        tiny_model(SGNetModel, sg_init="copy_last", sg_num_heads=2)


def test_sgnet_copy_last_rejects_non_bert_encoder():
    enc = DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=37)
    with pytest.raises(ValueError, match="BERT-like"):
        SGNetModel(SGNetConfig(encoder=enc, sg_init="copy_last"))
    model = SGNetModel(SGNetConfig(encoder=enc)).eval()  # any AutoModel encoder works with a random SG layer
    batch = make_batch()
    batch = {k: v for k, v in batch.items() if k != "token_type_ids"}
    with torch.no_grad():
        assert model(**batch).last_hidden_state.shape == (*batch["input_ids"].shape, 32)


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_sgnet_every_aggregation_runs_forward_backward(aggregation, pooling):
    model = tiny_model(
        aggregation=aggregation,
        pooling=pooling,
        alpha_mode="learned",
        mask_special_in_aggregation=aggregation == "dual",
    ).train()
    batch = make_batch()
    out = model(**batch, labels=torch.tensor([0, 1, 2]))
    out.loss.backward()
    no_grad = [n for n, p in model.named_parameters() if p.grad is None]
    if aggregation != "dual":
        assert not any("alpha" in n for n, _ in model.named_parameters())
    assert no_grad == [], f"parameters without gradient (would break DDP): {no_grad}"


def test_sgnet_vanilla_layer_needs_no_syntax_and_concat_starts_as_dual():
    batch = make_batch()
    vanilla = tiny_model(SGNetModel, aggregation="vanilla_layer")
    with torch.no_grad():
        out = vanilla(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_attentions=True)
    pad = batch["attention_mask"] == 0
    assert out.sg_attentions.masked_select(pad[:, None, None, :]).abs().max() == 0
    assert torch.equal(out.last_hidden_state, out.syntax_hidden_state)

    concat = tiny_model(SGNetModel, aggregation="concat", alpha=0.25)
    with torch.no_grad():
        o = concat(**batch)
    assert torch.allclose(o.last_hidden_state, 0.25 * o.encoder_hidden_state + 0.75 * o.syntax_hidden_state, atol=1e-6)


def test_sgnet_mask_special_in_aggregation_and_mean_pooling():
    batch = make_batch()
    special = batch["syntax_tree"] < 0
    model = tiny_model(mask_special_in_aggregation=True, pooling="mean", classifier_dropout=0.0)
    with torch.no_grad():
        o = model.sgnet(**batch)
        logits = model(**batch).logits
    assert torch.equal(o.last_hidden_state[special], o.encoder_hidden_state[special])
    assert not torch.allclose(o.last_hidden_state[~special], o.encoder_hidden_state[~special])
    keep = (~special).float().unsqueeze(-1)
    pooled = (o.last_hidden_state * keep).sum(1) / keep.sum(1)
    assert torch.allclose(logits, model.classifier(pooled), atol=1e-6)


def test_sgnet_missing_syntax_is_a_clear_error_and_unknown_keys_are_rejected():
    batch = make_batch()
    model = tiny_model()
    with pytest.raises(ValueError, match="dep_tin"):
        model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    with torch.no_grad():
        model(**batch, num_items_in_batch=4)  # collator extras (dep_depth, con_*, ...) and Trainer's count pass
    with pytest.raises(
        InputError,
        match=r"SGNetForSequenceClassification.forward got unexpected keyword arguments "
        r"\['something_else'\]",
    ):
        model(**batch, something_else=1)
    with pytest.raises(InputError, match=r"\['label'\].*'labels'"):
        model(**batch, label=torch.zeros(3, dtype=torch.long))
    with pytest.raises(
        InputError,
        match=r"SGNetModel.forward got unexpected keyword arguments \['labels'\] "
        r"\(labels are read by the task models",
    ):
        model.sgnet(**batch, labels=torch.zeros(3, dtype=torch.long))


@pytest.mark.parametrize("options", [dict(alpha_mode="learned"), dict(sg_init="copy_last", aggregation="concat")])
def test_sgnet_save_load_round_trip_via_auto_classes(tmp_path, options):
    model = tiny_model(num_labels=2, **options)
    with torch.no_grad():  # "trained" weights must survive the round trip (not be re-initialised or re-copied)
        if options.get("alpha_mode") == "learned":
            model.sgnet.aggregation.alpha_logit.fill_(1.234)
        else:
            model.sgnet.aggregation.weight.add_(0.01 * torch.randn_like(model.sgnet.aggregation.weight))
        model.sgnet.sg_layer.query.weight.add_(0.1)
    batch = make_batch()
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, SGNetForSequenceClassification)
    if options.get("alpha_mode") == "learned":
        assert loaded.sgnet.aggregation.alpha_logit.item() == pytest.approx(1.234)
    with torch.no_grad():
        assert torch.equal(model(**batch).logits, loaded(**batch).logits)
    base = AutoModel.from_pretrained(tmp_path)
    assert isinstance(base, SGNetModel)
    sd = model.sgnet.state_dict()
    assert all(torch.equal(v, sd[k]) for k, v in base.state_dict().items())


def test_sgnet_gradient_checkpointing_runs():
    model = tiny_model().train()
    enable_checkpointing(model)
    batch = make_batch()
    model(**batch, labels=torch.tensor([0, 1, 2])).loss.backward()
    assert model.sgnet.encoder.embeddings.word_embeddings.weight.grad is not None


# ---------------------------------------------------------------------------------------------------------------
# The real checkpoint
# ---------------------------------------------------------------------------------------------------------------


def test_sgnet_real_minilm_on_a_collated_batch(minilm_tokenizer):
    from syntaxformer import Sentence
    from syntaxformer.data.align import SyntaxAligner

    path = minilm_path()
    s1 = Sentence(["The", "committee", "approved", "the", "unprecedented", "proposal", "."], [1, 2, -1, 5, 5, 2, 2])
    s2 = Sentence(["It", "rained", "."], [1, -1, 1])
    s3 = Sentence(["Nobody", "objected", "."], [1, -1, 1])
    aligner = SyntaxAligner(minilm_tokenizer, max_length=64)
    windows = aligner(s1) + aligner(s2, s3)
    batch = SyntaxCollator(pad_token_id=minilm_tokenizer.pad_token_id)(windows)
    batch["labels"] = torch.tensor([1, 0])

    model = SGNetForSequenceClassification.from_encoder_pretrained(path, num_labels=2, use_sg_layer=True)
    baseline = SGNetForSequenceClassification.from_encoder_pretrained(path, num_labels=2, use_sg_layer=False)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
        h = model.sgnet(**{k: v for k, v in batch.items() if k != "labels"}).encoder_hidden_state
        h_plain = AutoModel.from_pretrained(path)(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch["token_type_ids"]
        ).last_hidden_state
    assert out.logits.shape == (2, 2) and torch.isfinite(out.loss)
    assert torch.allclose(h, h_plain, atol=1e-5)  # the pretrained weights were loaded, not re-initialised
    # "unprecedented" (a word of several pieces) attends to its head "proposal" and the root "approved" only
    p = out.sg_attentions[0].sum(0)  # (L, L) summed over heads
    allowed = sdoi_mask(batch["dep_tin"], batch["dep_tout"], batch["syntax_tree"])[0]
    assert p.masked_select(~allowed).abs().max() == 0
    extra = sum(p.numel() for p in model.parameters()) - sum(p.numel() for p in baseline.parameters())
    assert extra == sum(p.numel() for p in model.sgnet.sg_layer.parameters())


# -- BERT+POS (Syntax-Infused BERT): a trainable POS embedding added to the token embeddings, off by default, leaving
# the model and its outputs unchanged; on real spaCy parses aligned to a BPE tokenizer (tests/conftest.py fixtures).
def _pos_config(**options) -> SGNetConfig:
    enc = BertConfig(
        vocab_size=300,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    return SGNetConfig(encoder=enc, num_labels=2, pooling="mean", **options)


def _pos_batch(annotator, tokenizers):
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.collate import example_arrays
    from syntaxformer.data.subword_features import subword_feature_ids

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


@pytest.mark.usefixtures("one_thread")
def test_modeling_sgnet_bert_pos_is_off_by_default_and_starts_as_the_plain_model(annotator, tokenizers):
    batch = _pos_batch(annotator, tokenizers)
    torch.manual_seed(0)
    plain = SGNetForSequenceClassification(_pos_config()).eval()
    assert plain.config.pos_embeddings is None and plain.sgnet.pos_embeddings is None
    assert not any("pos_embeddings" in k for k in plain.state_dict())
    with_pos = SGNetForSequenceClassification(_pos_config(pos_embeddings="upos")).eval()
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


@pytest.mark.usefixtures("one_thread")
def test_modeling_sgnet_bert_pos_gradient_reaches_the_pos_embedding(annotator, tokenizers):
    batch = _pos_batch(annotator, tokenizers)
    torch.manual_seed(0)
    model = SGNetForSequenceClassification(_pos_config(pos_embeddings="upos")).train()
    model(**batch).loss.backward()
    grad = model.sgnet.pos_embeddings.weight.grad
    used = torch.unique(batch["pos_ids"].clamp(min=0))
    assert grad is not None and torch.all(grad[used[used > 0]].abs().sum(-1) > 0)
    assert torch.all(grad[0] == 0)  # "no word" (special tokens, padding) stays a zero vector
