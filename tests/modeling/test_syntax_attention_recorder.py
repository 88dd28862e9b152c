"""SyntaxAttentionRecorder: what the viewer reads (every layer's attention, topical weights), recorded without
changing a single output; the topical weights checked against Eq. 2-3 written as a loop over the sub-networks."""

from __future__ import annotations

import torch
from torch import nn

from syntaxformer.modeling.syntax_attention import syntax_attention_forward
from syntaxformer.modeling.syntax_attention_core import (
    SyntaxAttentionOptions,
    SyntaxAttentionRecorder,
    SyntaxGate,
    TopicalAttention,
)


class _Attn(nn.Module):
    def __init__(self, layer_idx: int = 0):
        super().__init__()
        self.layer_idx = layer_idx


def _setup(seed: int = 0, B: int = 2, H: int = 2, L: int = 7, d: int = 4):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, L, d, generator=g) for _ in range(3))
    topical = TopicalAttention(1, H * d, H * d)
    torch.manual_seed(seed)
    topical.bind([(nn.Linear(H * d, H * d), nn.Linear(H * d, H * d))])
    with torch.no_grad():
        topical.query.normal_(0, 3.0, generator=g)
    ids = torch.randint(0, 5, (B, L, L), generator=g)
    ids[:, 0] = 0  # a row without sub-networks
    mask = torch.ones(B, 1, L, L, dtype=torch.bool)
    mask[1, :, :, L - 2 :] = False  # padding keys in example 1
    return (q, k, v), topical, ids, mask


def _slow_topical_weights(q, k, v, ids, mask, topical) -> torch.Tensor:
    """α ``[B, L, n_groups]`` of Eq. 3, one row and one group at a time (0 where a group is empty)."""
    B, H, L, d = q.shape
    n = int(ids.max()) + 1
    alpha = torch.zeros(B, L, n, dtype=torch.float64)
    for b in range(B):
        for i in range(L):
            scores, groups = [], []
            for grp in range(1, n):
                keys = [j for j in range(L) if int(ids[b, i, j]) == grp and bool(mask[b, 0, i, j])]
                if not keys:
                    continue
                heads = []
                for h in range(H):
                    s = torch.stack([q[b, h, i].double() @ k[b, h, j].double() for j in keys]) * d**-0.5
                    p = torch.softmax(s, 0)
                    heads.append(sum(p[m] * v[b, h, j].double() for m, j in enumerate(keys)))
                o = torch.cat(heads)  # O_g[i]: heads concatenated
                key, out = topical.site(0)
                keyed = out.weight.double() @ o + out.bias.double()
                keyed = key.weight.double() @ keyed + key.bias.double()
                scores.append(keyed @ topical.query[0].double() * topical.scale)
                groups.append(grp)
            if scores:
                w = torch.softmax(torch.stack(scores), 0)
                for grp, x in zip(groups, w):
                    alpha[b, i, grp] = x
    return alpha


def test_recorder_topical_weights_follow_eq3_and_outputs_are_unchanged():
    (q, k, v), topical, ids, mask = _setup()
    gate = SyntaxGate(1, 2, per_head=True)
    with torch.no_grad():
        gate.weight.copy_(torch.tensor([[0.3, 0.8]]))
    for impl in ("fast", "exact"):
        opts = SyntaxAttentionOptions(implementation=impl)
        kwargs = dict(syntax_groups=[ids], syntax_topical=topical, syntax_options=opts, syntax_gate=gate)
        out, probs = syntax_attention_forward(_Attn(), q, k, v, mask, **kwargs)
        rec = SyntaxAttentionRecorder()
        out_rec, probs_rec = syntax_attention_forward(_Attn(), q, k, v, mask, syntax_record=rec, **kwargs)
        assert torch.equal(out, out_rec) and torch.equal(probs, probs_rec)
        assert torch.equal(rec.attentions[0], probs.detach())  # the effective (gated) attention
        n = int(ids.max()) + 1
        assert rec.num_buckets == (n,) and not rec.full_candidate
        alpha = rec.topical[0]  # (B, L, n)
        expected = _slow_topical_weights(q, k, v, ids, mask, topical)
        torch.testing.assert_close(alpha.double(), expected, atol=1e-5, rtol=1e-5)
        assert torch.equal(rec.candidates[0], expected > 0)
        assert not rec.candidates[0][:, 0].any() and not rec.candidates[0][..., 0].any()  # id 0: no sub-network


def test_recorder_fills_layers_without_sub_networks_with_their_softmax():
    (q, k, v), _topical, ids, mask = _setup(seed=1)
    opts = SyntaxAttentionOptions(layers=(1,))  # layer 0 runs the host's fused attention (no weights returned)
    out, weights = syntax_attention_forward(_Attn(0), q, k, v, mask, syntax_groups=[ids], syntax_options=opts)
    rec = SyntaxAttentionRecorder()
    out_rec, weights_rec = syntax_attention_forward(
        _Attn(0), q, k, v, mask, syntax_groups=[ids], syntax_options=opts, syntax_record=rec
    )
    assert weights is None and weights_rec is None and torch.equal(out, out_rec)
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    torch.testing.assert_close(rec.attentions[0], expected)
    assert 0 not in rec.topical


def test_syntax_bert_model_records_every_layer_without_changing_outputs(tiny_model, minilm_tokenizer):
    from syntaxformer.data import Sentence
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.modeling import SyntaxBertModel

    torch.manual_seed(0)
    model = SyntaxBertModel.from_encoder_pretrained(tiny_model, gate="layer", syntax_layers=[1])
    with torch.no_grad():
        model.gate.weight.fill_(0.5)
        model.topical.query.normal_()
    s = Sentence(words=["the", "cat", "sat", "on", "the", "mat"], heads=[1, 2, -1, 2, 5, 3])
    batch = SyntaxCollator(pad_token_id=0)(SyntaxAligner(minilm_tokenizer)(s))
    with torch.no_grad():
        plain = model(**batch, output_attentions=True)
        rec = SyntaxAttentionRecorder()
        recorded = model(**batch, output_attentions=True, syntax_record=rec)
    assert torch.equal(plain.last_hidden_state, recorded.last_hidden_state)
    assert sorted(rec.attentions) == [0, 1] and sorted(rec.topical) == [1]
    torch.testing.assert_close(rec.attentions[1], plain.attentions[-1])
    rows = rec.attentions[0].sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows))
