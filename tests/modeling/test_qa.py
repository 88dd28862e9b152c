"""SGNetForQuestionAnswering: span loss, answer verifier, baseline, Auto registration (tiny random models)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers import AutoModelForQuestionAnswering

from syntaxformer.modeling.modeling_qa import SGNetForQuestionAnswering, SGNetQuestionAnsweringOutput, span_loss
from tests.modeling.test_sgnet import make_batch, tiny_config

torch.set_num_threads(1)


def qa_batch(seed: int = 0):
    batch = make_batch(seed)
    B, L = batch["input_ids"].shape
    batch["start_positions"] = torch.tensor([0, 2, 3])[:B]
    batch["end_positions"] = torch.tensor([0, 3, 3])[:B]
    batch["is_impossible"] = (batch["start_positions"] == 0).long()
    return batch


def tiny_qa(seed: int = 0, **kw) -> SGNetForQuestionAnswering:
    torch.manual_seed(seed)
    return SGNetForQuestionAnswering(tiny_config(**kw)).eval()


def test_shapes_and_loss_is_mean_of_start_end_cross_entropy():
    model = tiny_qa()
    batch = qa_batch()
    B, L = batch["input_ids"].shape
    out = model(**batch)
    assert isinstance(out, SGNetQuestionAnsweringOutput)
    assert out.start_logits.shape == out.end_logits.shape == (B, L)
    assert out.verifier_logits is None and out.verifier_loss is None
    expected = (nn.functional.cross_entropy(out.start_logits, batch["start_positions"])
                + nn.functional.cross_entropy(out.end_logits, batch["end_positions"])) / 2
    assert torch.allclose(out.loss, expected)
    no_labels = {k: v for k, v in batch.items() if k not in ("start_positions", "end_positions")}
    out2 = model(**no_labels)
    assert out2.loss is None and torch.allclose(out2.start_logits, out.start_logits)
    tup = model(**no_labels, return_dict=False)
    assert torch.allclose(tup[0], out.start_logits)


def test_backward_reaches_sg_layer_and_head():
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


def test_baseline_without_sg_layer_needs_no_syntax():
    model = tiny_qa(use_sg_layer=False)
    batch = qa_batch()
    plain = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids", "start_positions",
                                   "end_positions") if k in batch}
    out = model(**plain)
    assert model.sgnet.sg_layer is None and torch.isfinite(out.loss)
    h = model.sgnet.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            token_type_ids=batch.get("token_type_ids")).last_hidden_state
    assert torch.allclose(out.start_logits, model.qa_outputs(h)[..., 0], atol=1e-6)


def test_auto_model_round_trip(tmp_path):
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
