"""Task heads over every backbone: each (system, head) class builds, trains (forward + backward), computes a loss
only with labels, and round-trips through its Auto class; plus the span-QA / answer-verifier and multiple-choice
behaviour (tiny random models)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMultipleChoice,
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from syntaxformer.errors import SyntaxformerError
from syntaxformer.modeling import (
    HEADS,
    MODEL_CLASSES,
    MultipleChoiceOutput,
    PlainEncoderConfig,
    PlainEncoderModel,
    QuestionAnsweringOutput,
    SequenceClassifierOutput,
    SGNetConfig,
    SGNetForMultipleChoice,
    SGNetForQuestionAnswering,
    SGNetModel,
    SyntaxBertConfig,
    SyntaxBertForMultipleChoice,
    SyntaxBertForQuestionAnswering,
    SyntaxBertModel,
    TokenClassifierOutput,
    model_class,
    span_loss,
)
from tests.modeling.test_modeling_sgnet import make_batch, tiny_bert, tiny_config

torch.set_num_threads(1)

AUTO = {
    "sequence_classification": AutoModelForSequenceClassification,
    "question_answering": AutoModelForQuestionAnswering,
    "multiple_choice": AutoModelForMultipleChoice,
    "token_classification": AutoModelForTokenClassification,
}
OUTPUTS = {
    "sequence_classification": SequenceClassifierOutput,
    "question_answering": QuestionAnsweringOutput,
    "multiple_choice": MultipleChoiceOutput,
    "token_classification": TokenClassifierOutput,
}
#: Options per system for the matrix: SG-Net with its layer; Syntax-BERT with both trees and LISA.
SYSTEM_OPTIONS = {"sgnet": {}, "syntax_bert": {"lisa_layer": 1, "lisa_head": 1, "max_distance": 15}, "plain": {}}
LABEL_KEYS = ("labels", "start_positions", "end_positions", "is_impossible")


def build(system: str, head: str, seed: int = 0, **kw):
    """A tiny random (system, head) model (dropout off, so outputs are deterministic in train mode)."""
    torch.manual_seed(seed)
    config_class = {"sgnet": SGNetConfig, "syntax_bert": SyntaxBertConfig, "plain": PlainEncoderConfig}[system]
    options = {**SYSTEM_OPTIONS[system], "num_labels": 3, **kw}
    enc = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return model_class(system, head)(config_class(encoder=enc, **options))


def head_batch(head: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """A collated batch with the labels of ``head`` (``[B, C, L]`` tensors for multiple choice)."""
    if head == "multiple_choice":
        return mc_batch(seed)
    batch = make_batch(seed)
    B, L = batch["input_ids"].shape
    if head == "sequence_classification":
        batch["labels"] = torch.tensor([0, 2, 1])[:B]
    elif head == "question_answering":
        batch["start_positions"] = torch.tensor([0, 2, 3])[:B]
        batch["end_positions"] = torch.tensor([0, 3, 3])[:B]
    else:
        labels = torch.randint(0, 3, (B, L), generator=torch.Generator().manual_seed(seed))
        batch["labels"] = torch.where(batch["syntax_tree"] >= 0, labels, -100)
    return batch


def main_logits(out) -> torch.Tensor:
    return out.start_logits if isinstance(out, QuestionAnsweringOutput) else out.logits


def test_model_classes_cover_every_system_and_head():
    assert set(MODEL_CLASSES) == {(s, h) for s in ("sgnet", "syntax_bert", "plain") for h in HEADS}
    for (system, head), cls in MODEL_CLASSES.items():
        assert model_class(system, head) is cls
        prefix = {"sgnet": "SGNet", "syntax_bert": "SyntaxBert", "plain": "PlainEncoder"}[system]
        assert cls.__name__ == prefix + "For" + "".join(w.title() for w in head.split("_"))
    with pytest.raises(SyntaxformerError, match="known.*'sgnet', 'multiple_choice'"):
        model_class("sgnet", "summarization")
    with pytest.raises(SyntaxformerError, match="unknown system 'nope'; known systems: plain, sgnet, syntax_bert"):
        model_class("nope", "sequence_classification")


@pytest.mark.parametrize("system", ["sgnet", "syntax_bert", "plain"])
@pytest.mark.parametrize("head", HEADS)
def test_every_system_head_trains_and_round_trips(system, head, tmp_path):
    model = build(system, head).train()
    batch = head_batch(head)
    out = model(**batch)
    assert isinstance(out, OUTPUTS[head]) and out.loss.dim() == 0 and torch.isfinite(out.loss)
    out.loss.backward()
    named = dict(model.named_parameters())
    backbone = system
    assert all(
        k.startswith(backbone + ".") or k.split(".")[0] in ("pooler", "classifier", "qa_outputs") for k in named
    ), sorted(named)
    enc_grad = named[f"{backbone}.encoder.embeddings.word_embeddings.weight"].grad
    assert enc_grad is not None and enc_grad.abs().sum() > 0
    if system == "syntax_bert":  # the LISA loss is part of every head's loss
        assert out.lisa_loss is not None and out.sg_attentions is None
        assert named["syntax_bert.topical.query"].grad.abs().sum() > 0
    else:
        assert out.lisa_loss is None
    # No labels, no loss; same logits.
    model.eval()
    unlabelled = {k: v for k, v in batch.items() if k not in LABEL_KEYS}
    with torch.no_grad():
        a, b = model(**batch), model(**unlabelled)
    assert b.loss is None and torch.equal(main_logits(a), main_logits(b))
    # save_pretrained / the Auto class give the same class and numbers.
    model.save_pretrained(tmp_path)
    config = AutoConfig.from_pretrained(tmp_path)
    assert type(config) is type(model.config) and config.syntax_inputs == model.config.syntax_inputs
    loaded = AUTO[head].from_pretrained(tmp_path).eval()
    assert type(loaded) is type(model)
    with torch.no_grad():
        assert torch.allclose(main_logits(loaded(**unlabelled)), main_logits(b), atol=1e-6)
    base = AutoModel.from_pretrained(tmp_path)
    assert isinstance(base, {"sgnet": SGNetModel, "syntax_bert": SyntaxBertModel, "plain": PlainEncoderModel}[system])


@pytest.mark.parametrize("system", ["sgnet", "syntax_bert"])
def test_lisa_loss_is_added_to_every_head(system):
    if system == "sgnet":
        pytest.skip("SG-Net has no auxiliary loss")
    for head in HEADS:
        model = build(system, head, lisa_loss_weight=0.5).train()
        out = model(**head_batch(head))
        plain = build(system, head, lisa_loss_weight=0.0).train()(**head_batch(head))
        assert torch.allclose(out.loss, plain.loss + 0.5 * out.lisa_loss, atol=1e-6), head


@pytest.mark.parametrize("cls", [SyntaxBertForQuestionAnswering, SyntaxBertForMultipleChoice])
def test_syntax_bert_qa_and_mc_gradients_reach_the_topical_query(cls):
    # Mean pooling for multiple choice: with first-token pooling the last layer's query gets no gradient, since
    # [CLS] has no sub-network and attends as in the pretrained layer (``empty_rows="full"``).
    head = "question_answering" if cls is SyntaxBertForQuestionAnswering else "multiple_choice"
    model = build("syntax_bert", head, lisa_layer=None, qa_verifier=True, pooling="mean").train()
    model.syntax_bert.topical.query.data.normal_(0, 1.0, generator=torch.Generator().manual_seed(3))
    model(**head_batch(head)).loss.backward()
    grad = model.syntax_bert.topical.query.grad
    assert grad is not None and (grad.abs().sum(-1) > 0).all()  # every layer's query


def test_token_classification_ignores_minus_100():
    model = build("sgnet", "token_classification").eval()
    batch = head_batch("token_classification")
    out = model(**batch)
    B, L = batch["input_ids"].shape
    assert out.logits.shape == (B, L, 3)
    keep = batch["labels"] != -100
    assert torch.allclose(out.loss, nn.functional.cross_entropy(out.logits[keep], batch["labels"][keep]))


# ---------------------------------------------------------------------------------------------------------------
# Span QA and the answer verifier
# ---------------------------------------------------------------------------------------------------------------


def qa_batch(seed: int = 0):
    batch = make_batch(seed)
    B, _L = batch["input_ids"].shape
    batch["start_positions"] = torch.tensor([0, 2, 3])[:B]
    batch["end_positions"] = torch.tensor([0, 3, 3])[:B]
    batch["is_impossible"] = (batch["start_positions"] == 0).long()
    return batch


def tiny_qa(seed: int = 0, **kw) -> SGNetForQuestionAnswering:
    torch.manual_seed(seed)
    return SGNetForQuestionAnswering(tiny_config(**kw)).eval()


def test_qa_shapes_and_loss_is_mean_of_start_end_cross_entropy():
    model = tiny_qa()
    batch = qa_batch()
    B, L = batch["input_ids"].shape
    out = model(**batch)
    assert isinstance(out, QuestionAnsweringOutput)
    assert out.start_logits.shape == out.end_logits.shape == (B, L)
    assert out.verifier_logits is None and out.verifier_loss is None
    expected = (
        nn.functional.cross_entropy(out.start_logits, batch["start_positions"])
        + nn.functional.cross_entropy(out.end_logits, batch["end_positions"])
    ) / 2
    assert torch.allclose(out.loss, expected)
    no_labels = {k: v for k, v in batch.items() if k not in ("start_positions", "end_positions")}
    out2 = model(**no_labels)
    assert out2.loss is None and torch.allclose(out2.start_logits, out.start_logits)
    tup = model(**no_labels, return_dict=False)
    assert torch.allclose(tup[0], out.start_logits)


def test_qa_backward_reaches_sg_layer_and_head():
    model = tiny_qa().train()
    out = model(**qa_batch())
    out.loss.backward()
    assert model.qa_outputs.weight.grad is not None and model.qa_outputs.weight.grad.abs().sum() > 0
    sg_grads = [p.grad for p in model.sgnet.sg_layer.parameters() if p.requires_grad]
    assert any(g is not None and g.abs().sum() > 0 for g in sg_grads)


def test_span_loss_ignores_positions_outside_the_sequence():
    s = torch.randn(2, 5)
    e = torch.randn(2, 5)
    full = span_loss(s, e, torch.tensor([1, 99]), torch.tensor([2, 99]))
    one = span_loss(s[:1], e[:1], torch.tensor([1]), torch.tensor([2]))
    assert torch.allclose(full, one)


@pytest.mark.parametrize("weight", [1.0, 0.3])
def test_answer_verifier_joint_loss(weight):
    model = tiny_qa(qa_verifier=True, verifier_loss_weight=weight).train()
    batch = qa_batch()
    out = model(**batch)
    assert out.verifier_logits.shape == (batch["input_ids"].shape[0], 2)
    ce = nn.functional.cross_entropy(out.verifier_logits, batch["is_impossible"])
    assert torch.allclose(out.verifier_loss, ce)
    assert torch.allclose(out.loss, out.span_loss + weight * ce)
    out.loss.backward()
    assert model.verifier.weight.grad.abs().sum() > 0
    # Without is_impossible the target is start_positions == 0.
    model.eval()
    b2 = {k: v for k, v in batch.items() if k != "is_impossible"}
    with torch.no_grad():
        assert torch.allclose(model(**b2).verifier_loss, model(**batch).verifier_loss)
    assert model.no_answer_weights() == (1.0, 1.0)
    assert tiny_qa(qa_verifier=True, verifier_beta1=0.5, verifier_beta2=2.0).no_answer_weights() == (0.5, 2.0)


def test_qa_baseline_without_sg_layer_needs_no_syntax():
    model = tiny_qa(use_sg_layer=False)
    batch = qa_batch()
    plain = {
        k: batch[k]
        for k in ("input_ids", "attention_mask", "token_type_ids", "start_positions", "end_positions")
        if k in batch
    }
    out = model(**plain)
    assert model.sgnet.sg_layer is None and torch.isfinite(out.loss)
    h = model.sgnet.encoder(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch.get("token_type_ids")
    ).last_hidden_state
    assert torch.allclose(out.start_logits, model.qa_outputs(h)[..., 0], atol=1e-6)


def test_qa_auto_model_round_trip(tmp_path):
    model = tiny_qa(qa_verifier=True, verifier_beta2=0.5)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForQuestionAnswering.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, SGNetForQuestionAnswering) and loaded.use_verifier
    assert loaded.no_answer_weights() == (1.0, 0.5)
    batch = qa_batch()
    with torch.no_grad():
        a, b = model(**batch), loaded(**batch)
    assert torch.allclose(a.start_logits, b.start_logits, atol=1e-6)
    assert torch.allclose(a.verifier_logits, b.verifier_logits, atol=1e-6)


def test_parallel_verifier_trains_the_verifier_alone():
    model = tiny_qa(qa_verifier=True, span_loss_weight=0.0).train()
    out = model(**qa_batch())
    assert torch.allclose(out.loss, out.verifier_loss)  # the span loss does not count
    out.loss.backward()
    assert model.verifier.weight.grad.abs().sum() > 0
    assert model.qa_outputs.weight.grad is None or model.qa_outputs.weight.grad.abs().sum() == 0
    with pytest.raises(ValueError, match="nothing to train"):
        tiny_qa(span_loss_weight=0.0)


# ---------------------------------------------------------------------------------------------------------------
# Multiple choice
# ---------------------------------------------------------------------------------------------------------------


def mc_batch(seed: int = 0, B: int = 2, C: int = 3):
    """B questions x C options from random SyntaxCollator sequences (with padding), as [B, C, L] tensors."""
    flat = make_batch(seed, n=B * C)
    batch = {k: v.view(B, C, *v.shape[1:]) for k, v in flat.items()}
    batch["labels"] = torch.tensor([1, 2])[:B]
    return batch


def tiny_mc(seed: int = 0, **kw) -> SGNetForMultipleChoice:
    torch.manual_seed(seed)
    return SGNetForMultipleChoice(tiny_config(**kw)).eval()


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_mc_shapes_loss_and_option_independence(pooling):
    model = tiny_mc(pooling=pooling)
    batch = mc_batch()
    out = model(**batch)
    assert isinstance(out, MultipleChoiceOutput) and out.logits.shape == (2, 3)
    assert torch.allclose(out.loss, nn.functional.cross_entropy(out.logits, batch["labels"]))
    # Each option is scored on its own: permuting the options permutes the logits.
    perm = torch.tensor([2, 0, 1])
    permuted = {k: (v[:, perm] if v.dim() >= 3 else v) for k, v in batch.items() if k != "labels"}
    assert torch.allclose(model(**permuted).logits, out.logits[:, perm], atol=1e-5)
    assert model(**{k: v for k, v in batch.items() if k != "labels"}).loss is None
    with pytest.raises(ValueError, match=r"\[B, C, L\]"):
        model(input_ids=batch["input_ids"][:, 0])


def test_mc_backward_reaches_sg_layer_and_head():
    model = tiny_mc().train()
    model(**mc_batch()).loss.backward()
    assert model.classifier.weight.grad.abs().sum() > 0
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.sgnet.sg_layer.parameters())


def test_mc_baseline_needs_no_syntax_and_auto_round_trip(tmp_path):
    base = tiny_mc(use_sg_layer=False)
    batch = mc_batch()
    plain = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels") if k in batch}
    assert base.sgnet.sg_layer is None and torch.isfinite(base(**plain).loss)
    model = tiny_mc()
    model.save_pretrained(tmp_path)
    loaded = AutoModelForMultipleChoice.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, SGNetForMultipleChoice)
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, loaded(**batch).logits, atol=1e-6)


# -- on CUDA (``gpu`` tests: skipped without a CUDA device) ---------------------------------------------------------
def _to(batch: dict, device) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def check_head_forward_backward_on(device, system: str, head: str, atol: float = 1e-4) -> None:
    """The (system, head) model on ``device`` gives the CPU model's loss, logits and gradients (same weights)."""
    cpu, other = build(system, head).train(), build(system, head).train().to(device)
    batch = head_batch(head)
    out_cpu, out_dev = cpu(**batch), other(**_to(batch, device))
    assert out_dev.loss.device.type == torch.device(device).type and torch.isfinite(out_dev.loss)
    assert torch.allclose(out_dev.loss.cpu(), out_cpu.loss, atol=atol)
    assert torch.allclose(main_logits(out_dev).cpu(), main_logits(out_cpu), atol=atol)
    out_cpu.loss.backward()
    out_dev.loss.backward()
    g_cpu = {n: p.grad for n, p in cpu.named_parameters() if p.grad is not None}
    g_dev = {n: p.grad for n, p in other.named_parameters() if p.grad is not None}
    assert g_cpu and set(g_dev) == set(g_cpu)
    for name, grad in g_cpu.items():
        assert torch.allclose(g_dev[name].cpu(), grad, atol=atol), (name, (g_dev[name].cpu() - grad).abs().max())


@pytest.mark.gpu
@pytest.mark.parametrize("system", ["sgnet", "syntax_bert"])
@pytest.mark.parametrize("head", HEADS)
def test_every_system_head_forward_backward_on_cuda(system, head, cuda_fp32):
    check_head_forward_backward_on(cuda_fp32, system, head)


@pytest.mark.parametrize("head", ["sequence_classification", "multiple_choice", "verifier"])
def test_sgnet_default_pooling_lets_syntax_reach_the_head(head):
    """Under the SDOI mask [CLS] attends only to itself, so with the paper's first-token pooling ("cls") the SG
    layer's W_Q / W_K get no gradient from a sentence head, RACE or the verifier; the default ("mean") does."""
    kw = dict(qa_verifier=True, span_loss_weight=0.0) if head == "verifier" else {}
    name = "question_answering" if head == "verifier" else head
    assert SGNetConfig(encoder=tiny_bert()).pooling == "mean"
    norms = {}
    for pooling in ("mean", "cls"):
        model = build("sgnet", name, pooling=pooling, **kw).train()
        batch = head_batch(name)
        if head == "verifier":
            batch["is_impossible"] = torch.tensor([1, 0, 1])
        model(**batch).loss.backward()
        layer = model.sgnet.sg_layer
        norms[pooling] = [p.grad.norm().item() for p in (layer.query.weight, layer.key.weight, layer.value.weight)]
    # relative to W_V's gradient (a tiny random model has small gradients): ~1e-3 with "mean", ~1e-9 (rounding) with
    # "cls", where W_V still learns and W_Q / W_K do not
    assert min(norms["mean"][:2]) > 1e-5 and min(norms["mean"][:2]) / norms["mean"][2] > 1e-4, norms
    assert norms["cls"][2] > 1e-5 and max(norms["cls"][:2]) / norms["cls"][2] < 1e-7, norms
