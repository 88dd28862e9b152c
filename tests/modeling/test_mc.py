"""SGNetForMultipleChoice: shapes, softmax cross-entropy over options, per-option independence, baseline, Auto."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers import AutoModelForMultipleChoice

from syntaxformer.modeling.modeling_mc import SGNetForMultipleChoice, SGNetMultipleChoiceOutput
from tests.modeling.test_sgnet import make_batch, tiny_config

torch.set_num_threads(1)


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
    assert isinstance(out, SGNetMultipleChoiceOutput) and out.logits.shape == (2, 3)
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
