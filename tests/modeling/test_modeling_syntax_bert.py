"""Syntax-BERT: the "syntax" attention function (fast / exact vs. a loop over sub-networks), its integration in
Hugging Face encoders, the Table 5 ablations, LISA, the classification head and save / load."""

from __future__ import annotations

import itertools
import random
from contextlib import nullcontext

import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, BertConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.models.bert.modeling_bert import BertLayer

import syntaxformer.modeling.syntax_attention_fast as SA_fast
from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.masks import relation_groups_from_features
from syntaxformer.masks.relations import CHILD, PARENT, SIBLING, group_id
from syntaxformer.modeling import (
    SequenceClassifierOutput,
    SyntaxBertConfig,
    SyntaxBertForSequenceClassification,
    SyntaxBertModel,
    SyntaxBertModelOutput,
)
from syntaxformer.modeling.modeling_syntax_bert import attention_sites
from syntaxformer.modeling.syntax_attention import syntax_attention_forward
from syntaxformer.modeling.syntax_attention_core import (
    AddedLisaHead,
    LisaRecorder,
    SyntaxAttentionOptions,
    SyntaxGate,
    SyntaxGroups,
    TopicalAttention,
    prepare_groups,
)
from tests.conftest import enable_checkpointing, minilm_path
from tests.masks.reference import random_example
from tests.modeling.reference_syntax_attention import (
    reference_attention,
    reference_option_groups,
    reference_syntax_attention,
)

VOCAB = 100
TOL = 1e-4


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one intra-op thread avoids thread hand-offs that dominate on a busy 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_bert(**kw) -> BertConfig:
    """Tiny random BERT: hidden 32, 2 layers, 4 heads (intermediate 37 so no size coincides by accident)."""
    args = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=512,
        attention_probs_dropout_prob=0.0,
        hidden_dropout_prob=0.0,
    )
    args.update(kw)
    return BertConfig(**args)


def make_batch(seed: int = 0, n: int = 3, max_words: int = 6, pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """A SyntaxCollator batch of random trees (special tokens, several sentences, pairs, padding), random ids."""
    rng = random.Random(seed)
    batch = SyntaxCollator(pad_token_id=pad_token_id)([random_example(rng, max_words=max_words) for _ in range(n)])
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, batch["input_ids"].shape, generator=g)
    batch["input_ids"] = torch.where(batch["attention_mask"] > 0, ids, pad_token_id)
    assert (batch["attention_mask"] == 0).any(), "the batch should contain padding"
    return batch


def tiny_model(cls=SyntaxBertForSequenceClassification, seed: int = 0, query_std: float = 1.0, encoder=None, **kw):
    torch.manual_seed(seed)
    kw.setdefault("num_labels", 3)
    model = cls(SyntaxBertConfig(encoder=encoder or tiny_bert(), **kw)).eval()
    base = model if isinstance(model, SyntaxBertModel) else model.syntax_bert
    if base.topical is not None:
        with torch.no_grad():
            base.topical.query.normal_(0, query_std)  # a non-trivial task query (the init is zero)
    return model


# ---------------------------------------------------------------------------------------------------------------
# The attention function against the loop over sub-networks
# ---------------------------------------------------------------------------------------------------------------


class AttnStub(nn.Module):
    """Stand-in for a host attention module: a layer index and train/eval mode."""

    def __init__(self, layer_idx: int = 0):
        super().__init__()
        self.layer_idx = layer_idx


def random_setup(
    seed: int,
    B: int = 2,
    H: int = 3,
    L: int = 9,
    d: int = 4,
    n_parts: int = 2,
    own: bool = False,
    device: str | torch.device = "cpu",
):
    """Random q / k / v, a topical module bound to random projections, two random partitions with empty groups
    (ids with gaps, rows and columns without any group) and a padding mask (padding keys in example 1)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, L, d, generator=g) for _ in range(3))
    q = q * 2  # peakier scores
    topical = TopicalAttention(1, H * d, H * d, projections="own" if own else "shared")
    torch.manual_seed(seed)
    # the bound projections are not submodules of the topical module: they go to the device themselves
    topical.bind([(nn.Linear(H * d, H * d).to(device), nn.Linear(H * d, H * d).to(device))])
    with torch.no_grad():
        topical.query.normal_(0, 3.0, generator=g)
        if own:
            topical.value_weight.add_(0.3 * torch.randn(topical.value_weight.shape, generator=g))
    parts = []
    for j in range(n_parts):
        ids = torch.randint(0, 6, (B, L, L), generator=g)
        ids[ids == 3] = 5  # group 3 never occurs: an empty group inside the id range
        ids[:, 0] = 0  # row 0 ([CLS]-like) has no sub-network
        ids[:, :, 0] = 0
        ids[:, 2 + j] = 0  # another empty row, different per partition
        parts.append(ids.to(device))
    mask = torch.ones(B, 1, L, L, dtype=torch.bool)
    mask[1, :, :, L - 3 :] = False
    return tuple(x.to(device) for x in (q, k, v)), topical.to(device), parts, mask.to(device)


def run_attention(
    impl: str,
    inputs,
    topical,
    parts,
    mask,
    lisa: LisaRecorder | None = None,
    parent=None,
    gate: SyntaxGate | None = None,
    autocast: bool = False,
    **opts,
):
    """Output, effective attention (``None`` where the path returns none) and gradients (q, k, v, task query, W_K,
    W_O[, own projections, added LISA head, gate]) of a fixed random linear loss (+ the LISA loss); ``autocast``:
    under bf16 autocast (also used by the triton tests)."""
    q, k, v = (x.detach().clone().requires_grad_() for x in inputs)
    params = [topical.query] + [m.weight for m in topical.site(0)]
    if topical.own_projections:
        params += [topical.key_weight, topical.value_weight]
    if lisa is not None and lisa.added is not None:
        params += [lisa.added.query_weight, lisa.added.key_weight, lisa.added.mix]
    if gate is not None:
        params.append(gate.weight)
    for p in params:
        p.grad = None
    if impl == "reference":
        attention, options = reference_syntax_attention, SyntaxAttentionOptions(**opts)
    else:
        attention, options = syntax_attention_forward, SyntaxAttentionOptions(implementation=impl, **opts)
    with torch.autocast(q.device.type, dtype=torch.bfloat16, enabled=autocast):
        out, probs = attention(
            AttnStub(),
            q,
            k,
            v,
            mask,
            syntax_groups=parts,
            syntax_topical=topical,
            syntax_options=options,
            syntax_lisa=lisa,
            syntax_gate=gate,
        )
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(out.device)
    loss = (out.float() * weights).sum()
    if lisa is not None:
        loss = loss + lisa.loss(parent)
    loss.backward()
    grads = [q.grad, k.grad, v.grad] + [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in params]
    return out.detach(), None if probs is None else probs.detach(), grads


def _assert_close(a, b, tol=TOL):
    out_a, probs_a, grads_a = a
    out_b, probs_b, grads_b = b
    assert torch.allclose(out_a, out_b, atol=tol, rtol=0), (out_a - out_b).abs().max()
    probs_a, probs_b = probs_a.double(), probs_b.double()  # the reference returns float32 weights
    assert torch.allclose(probs_a, probs_b, atol=tol, rtol=0), (probs_a - probs_b).abs().max()
    for i, (x, y) in enumerate(zip(grads_a, grads_b)):
        assert torch.allclose(x, y, atol=tol, rtol=0), (i, (x - y).abs().max())


OPTION_GRID = list(itertools.product(["topical", "sum", "mean"], ["full", "self"], [False, True]))


@pytest.mark.parametrize("impl", ["fast", "exact"])
@pytest.mark.parametrize("aggregation,empty_rows,full_candidate", OPTION_GRID)
def test_attention_fast_and_exact_match_reference_outputs_and_gradients(impl, aggregation, empty_rows, full_candidate):
    inputs, topical, parts, mask = random_setup(seed=len(aggregation) + 3 * full_candidate)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    ref = run_attention("reference", inputs, topical, parts, mask, **opts)
    _assert_close(run_attention(impl, inputs, topical, parts, mask, **opts), ref)
    if aggregation == "topical":
        assert ref[2][3].abs().sum() > 0, "the task query must get a gradient"


def _gate(per_head: bool, H: int = 3, seed: int = 0) -> SyntaxGate:
    gate = SyntaxGate(1, H, per_head=per_head)
    with torch.no_grad():
        gate.weight.uniform_(-0.5, 1.5, generator=torch.Generator().manual_seed(seed))
    return gate


@pytest.mark.parametrize("impl", ["fast", "exact"])
@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize(
    "aggregation,empty_rows,full_candidate",
    [("topical", "full", False), ("mean", "self", True), ("sum", "full", False)],
)
def test_gated_attention_fast_and_exact_match_reference(impl, per_head, aggregation, empty_rows, full_candidate):
    """ctx = P_full V + g (Σ α O_g - P_full V) with g != 0: outputs and gradients (incl. the gate's)."""
    inputs, topical, parts, mask = random_setup(seed=21 + per_head)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    ref = run_attention("reference", inputs, topical, parts, mask, gate=_gate(per_head), **opts)
    got = run_attention(impl, inputs, topical, parts, mask, gate=_gate(per_head), **opts)
    _assert_close(got, ref)
    assert ref[2][-1].abs().min() > 0, "every gate gets a gradient"


def test_gated_attention_with_lisa_matches_reference():
    inputs, topical, parts, mask = random_setup(seed=7)
    parent = torch.randint(-1, 6, (2, 9), generator=torch.Generator().manual_seed(0))
    ref_rec, rec = LisaRecorder(layer=0, head=1), LisaRecorder(layer=0, head=1)
    ref = run_attention("reference", inputs, topical, parts, mask, lisa=ref_rec, parent=parent, gate=_gate(True))
    _assert_close(run_attention("fast", inputs, topical, parts, mask, lisa=rec, parent=parent, gate=_gate(True)), ref)


def test_zero_gate_is_the_pretrained_attention_and_one_is_ungated():
    inputs, topical, parts, mask = random_setup(seed=8)
    q, k, v = inputs
    vanilla, _ = sdpa_attention_forward(AttnStub(), q, k, v, mask, is_causal=False)
    out0, _, grads = run_attention("fast", inputs, topical, parts, mask, gate=SyntaxGate(1, 3, per_head=True))
    assert torch.allclose(out0, vanilla, atol=1e-6)
    assert grads[-1].abs().min() > 0, "the zero gate still gets a gradient"
    one = SyntaxGate(1, 3)
    with torch.no_grad():
        one.weight.fill_(1.0)
    _assert_close(
        run_attention("fast", inputs, topical, parts, mask, gate=one)[:2] + ([],),
        run_attention("fast", inputs, topical, parts, mask)[:2] + ([],),
    )


@pytest.mark.parametrize("mask_kind", ["none", "bool", "additive"])
@pytest.mark.parametrize("n_parts", [1, 2])
def test_attention_fast_matches_reference_for_every_mask_form(mask_kind, n_parts):
    inputs, topical, parts, mask = random_setup(seed=11, n_parts=n_parts)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "additive":  # eager-style float mask, [B, 1, 1, L] (LayoutLM-style broadcast)
        mask = torch.zeros(2, 1, 1, 9).masked_fill(~mask[:, :, :1, :], torch.finfo(torch.float32).min)
    ref = run_attention("reference", inputs, topical, parts, mask)
    _assert_close(run_attention("fast", inputs, topical, parts, mask), ref)


@pytest.mark.parametrize("impl", ["fast", "exact"])
def test_prepared_groups_shared_by_calls_with_other_masks(impl):
    """What the first layer memoises in prepared groups (candidates, joint buckets) is never reused for another
    mask: one SyntaxGroups object used with two masks gives the results of fresh groups for each."""
    inputs, topical, parts, mask = random_setup(seed=12)
    other = mask.clone()
    other[0, :, :, 5:] = False  # padding keys in example 0 as well
    shared = prepare_groups(parts)
    for m in (mask, other, mask):
        got = run_attention(impl, inputs, topical, shared, m)
        _assert_close(got, run_attention(impl, inputs, topical, prepare_groups(parts), m), tol=0)
        _assert_close(got, run_attention("reference", inputs, topical, parts, m))


def test_attention_group_sums_and_empty_groups():
    """Effective attention: rows sum to 1 (topical), no weight on padding keys or on pairs outside every group."""
    inputs, topical, parts, mask = random_setup(seed=5)
    _, probs, _ = run_attention("fast", inputs, topical, parts, mask)
    assert torch.allclose(probs.sum(-1), torch.ones_like(probs.sum(-1)), atol=1e-5)
    assert (probs[1, :, :, -3:] == 0).all(), "padding keys get no attention"
    outside = (parts[0] == 0) & (parts[1] == 0)  # (B, L, L)
    has_group = ((parts[0] > 0) | (parts[1] > 0)).any(-1)  # rows with a sub-network use only grouped keys
    sel = (outside & has_group.unsqueeze(-1)).unsqueeze(1).expand_as(probs)
    assert (probs[sel] == 0).all()


@pytest.mark.parametrize("empty_rows", ["full", "self"])
def test_attention_rows_without_groups_fall_back(empty_rows):
    """A row with no non-empty sub-network (row 0 here) attends like vanilla attention, or to itself."""
    inputs, topical, parts, mask = random_setup(seed=2)
    q, k, v = inputs
    out, _, _ = run_attention("fast", inputs, topical, parts, mask, empty_rows=empty_rows)  # out: (B, L, H, d)
    scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    vanilla = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v  # (B, H, L, d)
    expected = vanilla[:, :, 0] if empty_rows == "full" else v[:, :, 0]
    assert torch.allclose(out[:, 0], expected, atol=1e-5)


def _hand_built_tree_groups(L: int = 9, D: int = 15) -> torch.Tensor:
    """Dependency relation groups ``[1, L, L]`` of one hand-built sentence, ``[CLS] w0 .. w4 [SEP] pad pad``, with
    heads ``w0 <- root, w1 <- w0, w2 <- w0, w3 <- w1, w4 <- w1`` (child / parent / sibling at the tree distance)."""
    heads = [-1, 0, 0, 1, 1]

    def ancestors(i: int) -> list[int]:  # i, its head, ..., the root
        chain = [i]
        while heads[chain[-1]] >= 0:
            chain.append(heads[chain[-1]])
        return chain

    ids = torch.zeros(1, L, L, dtype=torch.long)
    for i in range(5):
        for j in range(5):
            up_i, up_j = ancestors(i), ancestors(j)
            lca = next(a for a in up_i if a in up_j)
            dist = up_i.index(lca) + up_j.index(lca)
            if i == j:
                continue
            kind = CHILD if lca == j else PARENT if lca == i else SIBLING
            ids[0, i + 1, j + 1] = group_id(kind, dist, D)
    return ids


@pytest.mark.parametrize("empty_rows", ["full", "self"])
@pytest.mark.parametrize("extra", ["none", "gate", "lisa", "added_lisa", "full_candidate"])
def test_attention_rows_without_any_allowed_key_match_reference(empty_rows, extra):
    """A query row whose mask allows no key at all (a hand-made mask: row 7 attends to nothing; row 1, the root,
    has no child group either) attends to nothing with ``empty_rows="full"`` (output 0, no gradient through its
    scores; nor does an added LISA head add to it) and to itself with ``"self"``: fast, exact and the reference
    agree, outputs and gradients, in float64."""
    inputs, topical, _, _ = random_setup(seed=9)
    inputs = tuple(x[:1].double() for x in inputs)
    parts = [_hand_built_tree_groups()]
    mask = torch.ones(1, 1, 9, 9, dtype=torch.bool)
    mask[..., 7:] = False  # padding keys
    mask[0, 0, 7, :] = False  # a row that may attend to nothing
    kw: dict = dict(empty_rows=empty_rows, full_attention_candidate=extra == "full_candidate")
    if extra == "gate":
        kw["gate"] = _gate(True)
    results = {}
    for impl in ("reference", "exact", "fast"):
        lisa = {"lisa": LisaRecorder(layer=0, head=1), "added_lisa": _added_lisa(2)}.get(extra)
        if lisa is not None and lisa.added is not None:
            lisa.added.double()  # the float64 layer's projections
        parent = torch.tensor([[-1, -1, 1, 1, 2, 2, -1, -1, -1]]) if lisa is not None else None
        results[impl] = run_attention(impl, inputs, topical, parts, mask, lisa=lisa, parent=parent, **kw)
    ref = results["reference"]
    if empty_rows == "full" and extra in ("none", "lisa", "full_candidate"):
        assert (ref[0][0, 7] == 0).all(), "the reference: a row without keys attends to nothing"
    for impl in ("exact", "fast"):
        _assert_close(results[impl], ref)


def test_attention_one_group_covering_all_pairs_is_vanilla_attention():
    inputs, topical, _, mask = random_setup(seed=3)
    q, k, v = inputs
    ones = torch.ones(2, 9, 9, dtype=torch.long)
    out, _, _ = run_attention("fast", inputs, topical, [ones], mask)
    vanilla, _ = sdpa_attention_forward(AttnStub(), q, k, v, mask, is_causal=False)
    assert torch.allclose(out, vanilla, atol=1e-5)


@pytest.mark.parametrize("impl", ["fast", "exact"])
@pytest.mark.parametrize("full_candidate", [False, True])
def test_attention_lisa_head_matches_reference(impl, full_candidate):
    inputs, topical, parts, mask = random_setup(seed=7)
    parent = torch.randint(-1, 6, (2, 9), generator=torch.Generator().manual_seed(0))
    ref_rec, rec = LisaRecorder(layer=0, head=1), LisaRecorder(layer=0, head=1)
    ref = run_attention(
        "reference", inputs, topical, parts, mask, lisa=ref_rec, parent=parent, full_attention_candidate=full_candidate
    )
    _assert_close(
        run_attention(
            impl, inputs, topical, parts, mask, lisa=rec, parent=parent, full_attention_candidate=full_candidate
        ),
        ref,
    )
    # the LISA head attends like vanilla attention, to every non-padding key
    q, k, _ = inputs
    scores = (q @ k.transpose(-1, -2))[:, 1] / q.shape[-1] ** 0.5
    expected = torch.log_softmax(scores.masked_fill(~mask[:, 0], torch.finfo(torch.float32).min), -1)
    assert torch.allclose(rec.log_probs, expected, atol=1e-5)
    assert torch.allclose(ref[1][:, 1], expected.exp(), atol=1e-5)


def test_lisa_loss_ignores_rows_without_parent():
    logp = torch.log_softmax(torch.randn(2, 4, 4), -1)
    rec = LisaRecorder(layer=0, head=0, log_probs=logp)
    parent = torch.tensor([[-1, 0, 3, -1], [2, -1, -1, -1]])
    expected = -(logp[0, 1, 0] + logp[0, 2, 3] + logp[1, 0, 2]) / 3
    assert torch.allclose(rec.loss(parent), expected)
    assert rec.loss(torch.full((2, 4), -1)) == 0


@pytest.mark.parametrize("full_candidate", [False, True])
def test_attention_fast_recomputes_underflowing_rows_exactly(monkeypatch, full_candidate):
    """A group whose scores are far below the row's best (its share of the full softmax underflows) must not be
    lost: the fast path detects such rows and recomputes them with a per-group maximum."""
    inputs, topical, parts, mask = random_setup(seed=4)
    q, k, v = inputs
    q = q.clone()
    q[0, 1, 4] *= 400.0  # row 4 of head 1: score gaps of hundreds of nats
    calls = []
    exact = SA_fast.exact_probs  # the fast path's own reference to the exact path
    monkeypatch.setattr(SA_fast, "exact_probs", lambda *a, **kw: calls.append(a[0].shape) or exact(*a, **kw))
    opts = dict(full_attention_candidate=full_candidate)
    ref = run_attention("reference", (q, k, v), topical, parts, mask, **opts)
    _assert_close(run_attention("fast", (q, k, v), topical, parts, mask, **opts), ref, tol=5e-4)
    assert calls and calls[-1][0] < 2 * 9, "only the affected rows go through the exact path"


@pytest.mark.parametrize("impl", ["fast", "exact"])
def test_each_backend_is_an_attention_function_of_its_own(impl):
    """``"syntax_<impl>"`` is registered with transformers' AttentionInterface and, called directly, gives what
    ``"syntax"`` gives with ``implementation=impl`` (outputs and effective attention, bit for bit)."""
    from transformers import AttentionInterface

    inputs, topical, parts, mask = random_setup(seed=13)
    gate = _gate(True)
    kwargs = dict(syntax_groups=parts, syntax_topical=topical, syntax_gate=gate)
    opts = SyntaxAttentionOptions(implementation=impl)
    direct = AttentionInterface()[f"syntax_{impl}"](AttnStub(), *inputs, mask, syntax_options=opts, **kwargs)
    via = syntax_attention_forward(AttnStub(), *inputs, mask, syntax_options=opts, **kwargs)
    assert torch.equal(direct[0], via[0]) and torch.equal(direct[1], via[1])
    assert "syntax_triton" in AttentionInterface()._global_mapping


def test_attention_without_groups_is_the_hosts_attention():
    inputs, _, _, mask = random_setup(seed=1)
    q, k, v = inputs
    out, weights = syntax_attention_forward(AttnStub(), q, k, v, mask)
    vanilla, _ = sdpa_attention_forward(AttnStub(), q, k, v, mask, is_causal=False)
    assert weights is None and torch.equal(out, vanilla)


def test_attention_skips_layers_not_selected():
    inputs, _topical, parts, mask = random_setup(seed=1)
    q, k, v = inputs
    out, _ = syntax_attention_forward(
        AttnStub(layer_idx=0), q, k, v, mask, syntax_groups=parts, syntax_options=SyntaxAttentionOptions(layers=(1,))
    )
    vanilla, _ = sdpa_attention_forward(AttnStub(), q, k, v, mask, is_causal=False)
    assert torch.equal(out, vanilla)


def test_prepare_groups_and_bad_inputs():
    g = torch.tensor([[[0, 2], [1, 0]]], dtype=torch.uint8)
    prepared = prepare_groups([g, None])
    assert isinstance(prepared, SyntaxGroups) and prepared.num_buckets == (3,)
    assert prepared.partitions[0].dtype == torch.long
    assert prepare_groups(None) is None and prepare_groups([None]) is None
    with pytest.raises(ValueError, match="integer"):
        prepare_groups(torch.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="aggregation"):
        SyntaxAttentionOptions(aggregation="max")


def test_topical_folded_vector_equals_explicit_score():
    """q · (o W_O W_K) / sqrt(hidden) == o · u (biases cancel in the softmax over sub-networks)."""
    torch.manual_seed(0)
    top = TopicalAttention(2, 12, 16)
    key, out = nn.Linear(16, 12), nn.Linear(12, 16)
    top.bind([(key, out), (key, out)])
    with torch.no_grad():
        top.query.normal_()
    o = torch.randn(5, 12)
    explicit = top.scores(1, o)
    folded = o @ top.folded(1)
    const = top.scores(1, torch.zeros(1, 12))  # the bias terms
    assert torch.allclose(explicit - const, folded, atol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# A host layer: gradients w.r.t. inputs and Q / K / V / O weights
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_parts", [1, 2])
def test_bert_layer_fast_matches_reference_including_weight_gradients(n_parts):
    cfg = tiny_bert()
    cfg._attn_implementation = "syntax"
    torch.manual_seed(0)
    layer = BertLayer(cfg, layer_idx=0).eval()
    topical = TopicalAttention(1, 32, 32)
    topical.bind([(layer.attention.self.key, layer.attention.output.dense)])
    with torch.no_grad():
        topical.query.normal_(0, 2.0)
    _, _, parts, mask = random_setup(seed=9, L=9, n_parts=n_parts)
    x0 = torch.randn(2, 9, 32, generator=torch.Generator().manual_seed(2))

    def grads(impl):
        layer.zero_grad()
        topical.zero_grad()
        x = x0.clone().requires_grad_()
        with reference_attention() if impl == "reference" else nullcontext():
            y = layer(
                x,
                mask,
                syntax_groups=parts,
                syntax_topical=topical,
                syntax_options=SyntaxAttentionOptions(implementation="fast" if impl == "reference" else impl),
            )
        (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        named = {n: p.grad.clone() for n, p in layer.named_parameters() if p.grad is not None}
        named["x"], named["query"] = x.grad, topical.query.grad.clone()
        return y.detach(), named

    y_ref, g_ref = grads("reference")
    y_fast, g_fast = grads("fast")
    assert torch.allclose(y_fast, y_ref, atol=TOL)
    assert set(g_fast) == set(g_ref) and "attention.self.query.weight" in g_fast
    for name in g_ref:
        assert torch.allclose(g_fast[name], g_ref[name], atol=TOL), (name, (g_fast[name] - g_ref[name]).abs().max())


# ---------------------------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------------------------


def test_config_defaults_follow_the_paper():
    c = SyntaxBertConfig(encoder=tiny_bert())
    assert (c.max_distance, c.use_dependency, c.use_constituency, c.aggregation) == (15, True, True, "topical")
    assert (c.parent_masks, c.child_masks, c.sibling_masks, c.pairwise_masks, c.random_masks) == (True,) * 4 + (False,)
    assert (c.empty_rows, c.full_attention_candidate, c.syntax_layers, c.lisa_layer) == ("full", False, None, None)
    assert c.num_buckets == 47 and c.hidden_size == 32 and c.implementation == "fast"
    assert c.gate == "none", "the paper read literally (no gate) stays the default until the sweep decides"


@pytest.mark.parametrize(
    "bad",
    [
        dict(max_distance=0),
        dict(use_dependency=False, use_constituency=False),
        dict(lisa_layer=2),
        dict(lisa_head=4),
        dict(syntax_layers=[0, 5]),
        dict(aggregation="max"),
        dict(empty_rows="none"),
        dict(implementation="slow"),
        dict(gate="token"),
        dict(topical_projections="separate"),
        dict(topical_projections="own", aggregation="sum"),
        dict(lisa_head_mode="new"),
    ],
)
def test_config_rejects_bad_options(bad):
    with pytest.raises(Exception) as err:
        SyntaxBertConfig(encoder=tiny_bert(), **bad)
    assert any(name in str(err.value) for name in bad)


def test_config_saved_with_the_old_relation_names_keeps_its_meaning(tmp_path):
    """Before 2026-11-23 ``parent_masks`` named the paper's child relation: an old config (no ``relation_names``)
    with ``parent_masks=False`` dropped ids 1..D, which are now ``child_masks``."""
    c = SyntaxBertConfig(encoder=tiny_bert(), child_masks=False)
    c.save_pretrained(tmp_path)
    assert AutoConfig.from_pretrained(tmp_path).child_masks is False  # new configs round-trip as they are
    import json

    data = json.loads((tmp_path / "config.json").read_text())
    data.pop("relation_names")
    data["parent_masks"], data["child_masks"] = False, True  # the old meaning: drop ids 1..D
    (tmp_path / "config.json").write_text(json.dumps(data))
    old = AutoConfig.from_pretrained(tmp_path)
    assert (old.parent_masks, old.child_masks, old.relation_names) == (True, False, "paper")
    batch = make_batch(seed=5)
    g = SyntaxBertModel(old).build_groups(batch, torch.device("cpu")).partitions[0]
    full = tiny_model(SyntaxBertModel).build_groups(batch, torch.device("cpu")).partitions[0]
    dropped = (full >= 1) & (full <= 15)
    assert dropped.any() and (g[dropped] == 0).all() and torch.equal(g[~dropped], full[~dropped])


def test_config_json_round_trip(tmp_path):
    c = SyntaxBertConfig(encoder=tiny_bert(), aggregation="sum", syntax_layers=[1], lisa_layer=0, num_labels=4)
    c.save_pretrained(tmp_path)
    c2 = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(c2, SyntaxBertConfig) and isinstance(c2.encoder, BertConfig)
    assert (c2.aggregation, c2.syntax_layers, c2.lisa_layer, c2.num_labels) == ("sum", [1], 0, 4)


# ---------------------------------------------------------------------------------------------------------------
# Model on collated batches
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opts",
    [
        dict(),
        dict(lisa_layer=1, lisa_head=2),
        dict(full_attention_candidate=True),
        dict(use_constituency=False, aggregation="sum"),
    ],
)
def test_model_fast_matches_reference_on_real_relation_groups(opts):
    batch = make_batch(seed=1, n=2, max_words=4)
    batch["labels"] = torch.tensor([0, 2])
    fast = tiny_model(**opts)
    ref = tiny_model(**opts)
    ref.load_state_dict(fast.state_dict())

    def run(model):
        model.zero_grad()
        with reference_attention() if model is ref else nullcontext():
            out = model(**batch, output_hidden_states=True)
        probe = torch.linspace(-1, 1, out.logits.numel()).view_as(out.logits)
        h = out.hidden_states[-1]  # every token's state, not only the pooled one
        (out.loss + (out.logits * probe).sum() + h.square().mean()).backward()
        return h.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    h_fast, g_fast = run(fast)
    h_ref, g_ref = run(ref)
    assert torch.allclose(h_fast, h_ref, atol=TOL)
    assert set(g_fast) == set(g_ref)
    for name in g_ref:
        assert torch.allclose(g_fast[name], g_ref[name], atol=TOL), (name, (g_fast[name] - g_ref[name]).abs().max())
    if fast.syntax_bert.topical is not None:
        assert g_fast["syntax_bert.topical.query"].abs().sum() > 0


def check_fast_matches_reference_on(device, opts: dict, atol: float = TOL) -> None:
    """The fast ``"syntax"`` attention on ``device`` (fp32) against the float64 reference on the same device: every
    token's last hidden state and every parameter's gradient of a whole model."""
    batch = {k: v.to(device) for k, v in make_batch(seed=1, n=2, max_words=4).items()}
    batch["labels"] = torch.tensor([0, 2], device=device)
    fast = tiny_model(**opts).to(device)
    ref = tiny_model(**opts).to(device)
    ref.load_state_dict(fast.state_dict())

    def run(model):
        model.zero_grad()
        with reference_attention() if model is ref else nullcontext():
            out = model(**batch, output_hidden_states=True)
        assert out.logits.dtype == torch.float32 and out.logits.device.type == torch.device(device).type
        probe = torch.linspace(-1, 1, out.logits.numel(), device=device).view_as(out.logits)
        h = out.hidden_states[-1]
        (out.loss + (out.logits * probe).sum() + h.square().mean()).backward()
        return h.detach().cpu(), {n: p.grad.cpu() for n, p in model.named_parameters() if p.grad is not None}

    h_fast, g_fast = run(fast)
    h_ref, g_ref = run(ref)
    assert torch.allclose(h_fast, h_ref, atol=atol), (h_fast - h_ref).abs().max()
    assert set(g_fast) == set(g_ref)
    for name in g_ref:
        assert torch.allclose(g_fast[name], g_ref[name], atol=atol), (name, (g_fast[name] - g_ref[name]).abs().max())


@pytest.mark.gpu
@pytest.mark.parametrize(
    "opts",
    [
        dict(),
        dict(lisa_layer=1, lisa_head=2),
        dict(full_attention_candidate=True),
        dict(aggregation="sum", empty_rows="self"),
    ],
)
def test_model_fast_matches_reference_on_cuda_in_fp32(opts, cuda_fp32):
    check_fast_matches_reference_on(cuda_fp32, opts)


def check_fast_under_bf16_autocast_on(device, opts: dict) -> tuple[float, float]:
    """Under bf16 autocast the fast path is as close to the fp32 reference as the reference itself is under bf16:
    its error (last hidden states; gradients, relative Frobenius norm over all parameters) is at most twice the
    reference's own bf16 error plus 2e-3. Returns the two hidden-state errors (fast, reference)."""
    batch = {k: v.to(device) for k, v in make_batch(seed=1, n=2, max_words=4).items()}
    batch["labels"] = torch.tensor([0, 2], device=device)
    fast = tiny_model(**opts).to(device)
    if fast.syntax_bert.gate is not None:
        with torch.no_grad():
            fast.syntax_bert.gate.weight.fill_(0.5)  # a gate half open (0 at init would hide the syntax path)
    ref = tiny_model(**opts).to(device)
    ref.load_state_dict(fast.state_dict())

    def run(model, bf16: bool):
        model.zero_grad()
        with (
            reference_attention() if model is ref else nullcontext(),
            torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=bf16),
        ):
            out = model(**batch, output_hidden_states=True)
        h = out.hidden_states[-1].float()
        (out.loss.float() + h.square().mean()).backward()
        named = sorted((n, p) for n, p in model.named_parameters() if p.grad is not None)
        grads = {"all": torch.cat([p.grad.float().flatten() for _, p in named])}
        grads.update({n: p.grad.float().flatten() for n, p in named if n.endswith("gate.weight")})
        return h.detach(), grads

    h_exact, g_exact = run(ref, False)
    h_fast, g_fast = run(fast, True)
    h_ref, g_ref = run(ref, True)
    assert torch.isfinite(h_fast).all() and torch.isfinite(g_fast["all"]).all()
    err_fast, err_ref = (h_fast - h_exact).abs().max().item(), (h_ref - h_exact).abs().max().item()
    assert err_fast <= 2 * err_ref + 2e-3, (err_fast, err_ref)
    for name in g_exact:  # all gradients together, and the gate's alone (its gradient is a small difference)
        rel = lambda g, name=name: ((g[name] - g_exact[name]).norm() / g_exact[name].norm()).item()
        assert rel(g_fast) <= 2 * rel(g_ref) + 2e-3, (name, rel(g_fast), rel(g_ref))
    return err_fast, err_ref


@pytest.mark.parametrize("opts", [dict(), dict(gate="head")])
def test_model_fast_under_bf16_autocast_on_cpu(opts):
    _, err_ref = check_fast_under_bf16_autocast_on("cpu", opts)
    assert err_ref > 0  # autocast did round: the test compares something


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [dict(), dict(aggregation="sum", empty_rows="self"), dict(gate="head")])
def test_model_fast_under_bf16_autocast_on_cuda(opts, cuda_fp32):
    check_fast_under_bf16_autocast_on(cuda_fp32, opts)


def test_model_output_differs_from_vanilla_and_uses_every_layer(monkeypatch):
    batch = make_batch(seed=2)
    model = tiny_model(SyntaxBertModel)
    layers = []
    folded = TopicalAttention.folded
    monkeypatch.setattr(TopicalAttention, "folded", lambda self, layer: layers.append(layer) or folded(self, layer))
    h = model(**batch).last_hidden_state
    assert layers == [0, 1]
    vanilla = AutoModel.from_config(tiny_bert(), attn_implementation="sdpa", add_pooling_layer=False).eval()
    vanilla.load_state_dict(model.encoder.state_dict())
    hv = vanilla(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    assert not torch.allclose(h, hv, atol=1e-3)
    model.config.syntax_layers = []  # no syntax layer: exactly the host model
    h0 = model(**batch).last_hidden_state
    assert torch.allclose(h0, hv, atol=1e-5)


ARCHITECTURES = ["bert", "roberta", "electra", "xlm-roberta", "distilbert"]


@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_architectures_receive_groups_in_every_layer(model_type, monkeypatch):
    """The kwargs of the model call reach the attention function of every layer (transformers 5.x)."""
    cfg = AutoConfig.for_model(
        model_type,
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=128,
        pad_token_id=1,
        attention_probs_dropout_prob=0.0,
        hidden_dropout_prob=0.0,
    )
    batch = make_batch(seed=3, n=2, max_words=4, pad_token_id=1)
    model = tiny_model(SyntaxBertModel, encoder=cfg)
    assert len(attention_sites(model.encoder)) == 2
    layers = []
    probs = SA_fast._FastSyntaxProbs.apply  # the fast path's autograd function, once per syntax layer
    monkeypatch.setattr(
        SA_fast._FastSyntaxProbs, "apply", lambda *a, **kw: layers.append(a[0].shape) or probs(*a, **kw)
    )
    h = model(**batch).last_hidden_state
    assert len(layers) == 2
    with reference_attention():
        assert torch.allclose(model(**batch).last_hidden_state, h, atol=TOL)


@pytest.mark.parametrize("gate", ["layer", "head"])
@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_gated_model_at_init_is_the_plain_encoder(model_type, gate):
    """g = 0 at init: every hidden state equals the plain encoder's (<= 1e-5), for every supported architecture;
    with g != 0 the fast path matches the reference (hidden states and gradients)."""
    cfg = AutoConfig.for_model(
        model_type,
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=128,
        pad_token_id=1,
        attention_probs_dropout_prob=0.0,
        hidden_dropout_prob=0.0,
    )
    batch = make_batch(seed=3, n=2, max_words=4, pad_token_id=1)
    model = tiny_model(SyntaxBertModel, encoder=cfg, gate=gate)
    assert model.gate.weight.shape == (2, 4 if gate == "head" else 1) and (model.gate.weight == 0).all()
    plain = AutoModel.from_config(cfg, attn_implementation="sdpa").eval()
    plain.load_state_dict(model.encoder.state_dict(), strict=False)
    enc = {k: batch[k] for k in ("input_ids", "attention_mask")}
    hp = plain(**enc, output_hidden_states=True).hidden_states
    hg = model(**batch, output_hidden_states=True).hidden_states
    assert len(hp) == len(hg)
    for a, b in zip(hg, hp):
        assert (a - b).abs().max() <= 1e-5
    ungated = tiny_model(SyntaxBertModel, encoder=cfg)
    assert not torch.allclose(ungated(**batch).last_hidden_state, hp[-1], atol=1e-3), "the literal form moves"

    with torch.no_grad():
        model.gate.weight.uniform_(0.2, 0.9, generator=torch.Generator().manual_seed(0))

    def run(ref: bool):
        model.zero_grad()
        with reference_attention() if ref else nullcontext():
            h = model(**batch).last_hidden_state
        (h * torch.linspace(-1, 1, h.numel()).view_as(h)).sum().backward()
        return h.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    h_fast, g_fast = run(False)
    h_ref, g_ref = run(True)
    assert torch.allclose(h_fast, h_ref, atol=TOL)
    assert "gate.weight" in g_fast and g_fast["gate.weight"].abs().min() > 0
    for name in g_ref:
        assert torch.allclose(g_fast[name], g_ref[name], atol=TOL), (name, (g_fast[name] - g_ref[name]).abs().max())
    model.config.implementation = "exact"
    h_exact, g_exact = run(False)
    assert torch.allclose(h_exact, h_ref, atol=TOL)
    for name in g_ref:
        assert torch.allclose(g_exact[name], g_ref[name], atol=TOL), name


def test_gate_is_a_new_parameter_and_round_trips(tmp_path):
    from syntaxformer.training.trainer import new_parameter_names

    model = tiny_model(gate="head")
    assert "syntax_bert.gate.weight" in new_parameter_names(model)
    with torch.no_grad():
        model.syntax_bert.gate.weight.fill_(0.25)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path)
    assert loaded.config.gate == "head" and torch.equal(loaded.syntax_bert.gate.weight, model.syntax_bert.gate.weight)
    assert tiny_model().syntax_bert.gate is None, "gate='none' (the paper) has no gate parameters"


def test_precomputed_groups_and_missing_keys():
    batch = make_batch(seed=4)
    model = tiny_model(SyntaxBertModel)
    groups = model.build_groups(batch, torch.device("cpu"), batch["input_ids"])
    h = model(**batch).last_hidden_state
    only_ids = {k: batch[k] for k in ("input_ids", "attention_mask")}
    assert torch.allclose(model(**only_ids, syntax_groups=groups).last_hidden_state, h)
    with pytest.raises(ValueError, match="dep_tin"):
        model(**only_ids)


# ---------------------------------------------------------------------------------------------------------------
# Ablations (Table 5)
# ---------------------------------------------------------------------------------------------------------------


def test_ablation_groups_match_relation_groups_and_drop_kinds():
    batch = make_batch(seed=5)
    dep, con = relation_groups_from_features(batch, 15)
    full = tiny_model(SyntaxBertModel).build_groups(batch, torch.device("cpu"))
    assert torch.equal(full.partitions[0], dep.long()) and torch.equal(full.partitions[1], con.long())
    assert full.num_buckets == (47, 47)
    D = 15
    kinds = {
        "child_masks": (1, D),
        "parent_masks": (D + 1, 2 * D),
        "sibling_masks": (2 * D + 1, 3 * D),
        "pairwise_masks": (3 * D + 1, 3 * D + 1),
    }
    for flag, (lo, hi) in kinds.items():
        g = tiny_model(SyntaxBertModel, **{flag: False}).build_groups(batch, torch.device("cpu"))
        for part, orig in zip(g.partitions, (dep.long(), con.long())):
            dropped = (orig >= lo) & (orig <= hi)
            assert dropped.any(), flag
            assert (part[dropped] == 0).all() and torch.equal(part[~dropped], orig[~dropped])
    dep_only = tiny_model(SyntaxBertModel, use_constituency=False).build_groups(batch, torch.device("cpu"))
    con_only = tiny_model(SyntaxBertModel, use_dependency=False).build_groups(batch, torch.device("cpu"))
    assert len(dep_only.partitions) == 1 and torch.equal(dep_only.partitions[0], dep.long())
    assert len(con_only.partitions) == 1 and torch.equal(con_only.partitions[0], con.long())


def test_ablation_random_masks_keep_group_sizes_and_are_fixed_per_example():
    batch = make_batch(seed=6)
    model = tiny_model(SyntaxBertModel, random_masks=True)
    real = tiny_model(SyntaxBertModel).build_groups(batch, torch.device("cpu"))
    g1 = model.build_groups(batch, torch.device("cpu"), batch["input_ids"])
    g2 = model.build_groups(batch, torch.device("cpu"), batch["input_ids"])
    assert all(torch.equal(a, b) for a, b in zip(g1.partitions, g2.partitions)), "same example -> same masks"
    for rand, orig in zip(g1.partitions, real.partitions):
        assert not torch.equal(rand, orig)
        for b in range(rand.shape[0]):
            assert torch.equal(
                torch.bincount(rand[b].flatten(), minlength=47), torch.bincount(orig[b].flatten(), minlength=47)
            )
    # the example's masks do not depend on the rest of the batch
    single = {k: v[1:2] for k, v in batch.items()}
    g_single = model.build_groups(single, torch.device("cpu"), single["input_ids"])
    assert torch.equal(g_single.partitions[0][0], g1.partitions[0][1])


def test_sum_aggregation_has_no_topical_parameters():
    model = tiny_model(aggregation="sum")
    assert model.syntax_bert.topical is None
    assert not any("topical" in n for n, _ in model.named_parameters())
    assert torch.isfinite(model(**make_batch(seed=7)).logits).all()


# ---------------------------------------------------------------------------------------------------------------
# LISA
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("syntax_layers", [None, []])
def test_lisa_loss_trains_the_chosen_head(syntax_layers):
    """Syntax-BERT + LISA, and LISA alone (no sub-networks): the LISA loss reaches that layer's Q and K."""
    batch = make_batch(seed=8)
    batch["labels"] = torch.tensor([1, 0, 2])
    model = tiny_model(lisa_layer=1, lisa_head=3, syntax_layers=syntax_layers, lisa_loss_weight=0.5)
    out = model(**batch)
    assert out.lisa_loss is not None and torch.isfinite(out.lisa_loss) and out.lisa_loss > 0
    task = model(**{k: v for k, v in batch.items() if k != "dep_parent"}).loss
    assert torch.allclose(out.loss, task + 0.5 * out.lisa_loss)
    model.zero_grad()
    out.lisa_loss.backward()
    q1 = model.syntax_bert.encoder.encoder.layer[1].attention.self.query.weight.grad
    q0 = model.syntax_bert.encoder.encoder.layer[0].attention.self.query.weight.grad
    head = slice(3 * 8, 4 * 8)  # rows of head 3 in the query projection
    assert q1[head].abs().sum() > 0 and q1[: head.start].abs().sum() == 0
    assert q0.abs().sum() > 0  # through the hidden states
    no_labels = model(**{k: v for k, v in batch.items() if k != "labels"})
    assert no_labels.loss is None and no_labels.lisa_loss is not None


# ---------------------------------------------------------------------------------------------------------------
# Classification head, save / load, pretrained encoder
# ---------------------------------------------------------------------------------------------------------------


def test_classifier_loss_only_with_labels_and_regression():
    batch = make_batch(seed=9)
    model = tiny_model()
    out = model(**batch)
    assert isinstance(out, SequenceClassifierOutput) and out.loss is None
    assert out.logits.shape == (3, 3)
    assert model(**batch, labels=torch.tensor([0, 1, 2])).loss.ndim == 0
    reg = tiny_model(num_labels=1, pooling="mean")
    out = reg(**batch, labels=torch.tensor([0.5, 1.0, -2.0]))
    assert out.logits.shape == (3, 1) and out.loss > 0
    tup = model(**batch, return_dict=False)
    assert isinstance(tup, tuple) and tup[0].shape == (3, 3)


def test_model_outputs_attentions_and_hidden_states():
    batch = make_batch(seed=10)
    model = tiny_model(SyntaxBertModel)
    out = model(**batch, output_attentions=True, output_hidden_states=True)
    assert isinstance(out, SyntaxBertModelOutput)
    L = batch["input_ids"].shape[1]
    assert len(out.attentions) == 2 and out.attentions[0].shape == (3, 4, L, L)
    assert len(out.hidden_states) == 3
    pad = batch["attention_mask"] == 0
    assert (out.attentions[1].permute(0, 3, 1, 2)[pad] == 0).all(), "padding keys get no attention"


def test_save_and_auto_load_round_trip(tmp_path):
    batch = make_batch(seed=11)
    model = tiny_model(lisa_layer=0, aggregation="topical")
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, SyntaxBertForSequenceClassification)
    assert loaded.syntax_bert.encoder.config._attn_implementation == "syntax"
    assert torch.equal(loaded.syntax_bert.topical.query, model.syntax_bert.topical.query)
    a, b = model(**batch), loaded(**batch)
    assert torch.allclose(a.logits, b.logits, atol=1e-6)
    assert isinstance(AutoModel.from_pretrained(tmp_path), SyntaxBertModel)


def test_gradient_checkpointing_gives_the_same_gradients():
    batch = make_batch(seed=12)
    batch["labels"] = torch.tensor([0, 1, 2])
    grads = []
    for ckpt in (False, True):
        model = tiny_model(lisa_layer=1).train()
        if ckpt:
            enable_checkpointing(model)
        model(**batch).loss.backward()
        grads.append(model.syntax_bert.topical.query.grad.clone())
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_bfloat16_runs_close_to_float32():
    batch = make_batch(seed=13)
    model = tiny_model(SyntaxBertModel)
    h32 = model(**batch).last_hidden_state
    h16 = model.to(torch.bfloat16)(**batch).last_hidden_state
    assert h16.dtype == torch.bfloat16 and (h16.float() - h32).abs().max() < 0.1


def test_from_encoder_pretrained_minilm():
    model = SyntaxBertForSequenceClassification.from_encoder_pretrained(minilm_path(), num_labels=2, lisa_layer=5)
    encoder = model.syntax_bert.encoder
    assert encoder.config._attn_implementation == "syntax" and not list(encoder.pooler.parameters())
    assert model.syntax_bert.topical.query.shape == (6, 384) and (model.syntax_bert.topical.query == 0).all()
    batch = make_batch(seed=14)
    batch["input_ids"] = torch.where(batch["attention_mask"] > 0, batch["input_ids"] + 1000, 0)
    out = model(**batch, labels=torch.tensor([0, 1, 1]))
    assert torch.isfinite(out.loss) and torch.isfinite(out.lisa_loss)
    # the pooler starts from MiniLM's
    vanilla = AutoModel.from_pretrained(minilm_path())
    assert torch.equal(model.pooler.dense.weight, vanilla.pooler.dense.weight)


# ---------------------------------------------------------------------------------------------------------------
# Options outside the paper's literal form: pairwise by sentence, self group, reachable special keys
# ---------------------------------------------------------------------------------------------------------------

OPTION_SETS = [
    dict(pairwise="sentence"),
    dict(self_group=True),
    dict(special_keys=True),
    dict(pairwise="sentence", self_group=True, special_keys=True),
]


def _reference_groups(batch: dict, opts: dict, **model_kw) -> SyntaxGroups:
    """The option groups from :func:`reference_option_groups` on top of the model's groups without pairwise."""
    base = tiny_model(SyntaxBertModel, pairwise_masks=False, **model_kw).build_groups(batch, torch.device("cpu"))
    parts = reference_option_groups(
        list(base.partitions),
        batch["syntax_tree"],
        batch["syntax_segment"],
        15,
        opts.get("pairwise", "text"),
        opts.get("self_group", False),
        opts.get("special_keys", False),
    )
    return SyntaxGroups(tuple(parts), (SyntaxBertConfig(encoder=tiny_bert(), **opts).num_buckets,) * len(parts))


@pytest.mark.parametrize("opts", OPTION_SETS + [dict()])
def test_option_groups_match_their_definition(opts):
    batch = make_batch(seed=7)
    got = tiny_model(SyntaxBertModel, **opts).build_groups(batch, torch.device("cpu"))
    ref = _reference_groups(batch, opts)
    assert got.num_buckets == ref.num_buckets
    for a, b in zip(got.partitions, ref.partitions):
        assert torch.equal(a, b)


def test_pairwise_by_sentence_joins_sentences_of_one_text():
    batch = make_batch(seed=7)
    text = tiny_model(SyntaxBertModel).build_groups(batch, torch.device("cpu")).partitions[0]
    sent = tiny_model(SyntaxBertModel, pairwise="sentence").build_groups(batch, torch.device("cpu")).partitions[0]
    assert ((sent == 46) & (text != 46)).any(), "the batch should have a text with several sentences"
    assert ((text == 46) <= (sent == 46)).all(), "pairs across texts are pairs across sentences"
    tree, seg = batch["syntax_tree"], batch["syntax_segment"]
    same_text = (seg.unsqueeze(-1) == seg.unsqueeze(-2)) & (tree.unsqueeze(-1) != tree.unsqueeze(-2))
    assert (sent[same_text & (tree.unsqueeze(-1) >= 0) & (tree.unsqueeze(-2) >= 0)] == 46).all()


@pytest.mark.parametrize("opts", OPTION_SETS)
def test_options_fast_and_exact_match_reference_outputs_and_gradients(opts):
    batch = make_batch(seed=1, n=2, max_words=4)
    batch["labels"] = torch.tensor([0, 2])
    ref_groups = _reference_groups(batch, opts)
    models = {
        impl: tiny_model(implementation="exact" if impl == "exact" else "fast", **opts)
        for impl in ("fast", "exact", "reference")
    }
    for m in models.values():
        m.load_state_dict(models["fast"].state_dict())

    def run(impl):
        model = models[impl]
        model.zero_grad()
        extra = {"syntax_groups": ref_groups} if impl == "reference" else {}
        with reference_attention() if impl == "reference" else nullcontext():
            out = model(**batch, output_hidden_states=True, **extra)
        probe = torch.linspace(-1, 1, out.logits.numel()).view_as(out.logits)
        h = out.hidden_states[-1]
        (out.loss + (out.logits * probe).sum() + h.square().mean()).backward()
        return h.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    h_ref, g_ref = run("reference")
    for impl in ("fast", "exact"):
        h, g = run(impl)
        assert torch.allclose(h, h_ref, atol=TOL), (impl, (h - h_ref).abs().max())
        assert set(g) == set(g_ref)
        for name in g_ref:
            assert torch.allclose(g[name], g_ref[name], atol=TOL), (impl, name, (g[name] - g_ref[name]).abs().max())
    plain = tiny_model()
    plain.load_state_dict(models["fast"].state_dict())
    assert not torch.allclose(plain(**batch, output_hidden_states=True).hidden_states[-1], h_ref, atol=1e-4), (
        "the option should change the model"
    )


def test_options_round_trip(tmp_path):
    c = SyntaxBertConfig(encoder=tiny_bert(), pairwise="sentence", self_group=True, special_keys=True)
    c.save_pretrained(tmp_path)
    c2 = AutoConfig.from_pretrained(tmp_path)
    assert (c2.pairwise, c2.self_group, c2.special_keys, c2.num_buckets) == ("sentence", True, True, 49)
    d = SyntaxBertConfig(encoder=tiny_bert())
    assert (d.pairwise, d.self_group, d.special_keys, d.num_buckets) == ("text", False, False, 47)
    assert SyntaxBertConfig(encoder=tiny_bert(), self_group=True).num_buckets == 48
    with pytest.raises(Exception, match="pairwise"):
        SyntaxBertConfig(encoder=tiny_bert(), pairwise="paragraph")


# ---------------------------------------------------------------------------------------------------------------
# topical_projections="own": the paper's topical attention with its own key and value projections
# ---------------------------------------------------------------------------------------------------------------


def _own_topical(seed: int, dim: int, site: tuple[nn.Linear, nn.Linear]) -> TopicalAttention:
    """Own-projection topical attention bound to ``site``, with random W_Kt and W_Vt (away from their init)."""
    top = TopicalAttention(1, dim, site[1].out_features, projections="own")
    top.bind([site])
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        top.query.normal_(0, 3.0, generator=g)
        top.key_weight.normal_(0, 0.5, generator=g)
        top.value_weight.add_(torch.randn(top.value_weight.shape, generator=g) * 0.3)
    return top


@pytest.mark.parametrize("impl", ["fast", "exact"])
@pytest.mark.parametrize(
    "empty_rows,full_candidate,gated",
    [("full", False, False), ("self", True, False), ("full", True, True), ("self", False, True)],
)
def test_own_projections_fast_and_exact_match_reference(impl, empty_rows, full_candidate, gated):
    """Outputs, effective attention and gradients incl. W_Kt and W_Vt (and the gate) match the paper's loop."""
    inputs, shared, parts, mask = random_setup(seed=21 + full_candidate)
    top = _own_topical(5, 12, shared.site(0))
    opts = dict(aggregation="topical", empty_rows=empty_rows, full_attention_candidate=full_candidate)
    gate = (lambda: _gate(True)) if gated else (lambda: None)
    ref = run_attention("reference", inputs, top, parts, mask, gate=gate(), **opts)
    got = run_attention(impl, inputs, top, parts, mask, gate=gate(), **opts)
    _assert_close(got, ref)
    key_grad, value_grad = ref[2][6], ref[2][7]
    assert key_grad.abs().sum() > 0 and value_grad.abs().sum() > 0, "W_Kt and W_Vt get gradients"
    assert ref[2][5].abs().sum() > 0, "W_O still gets a gradient through the scores"
    assert ref[2][4].abs().sum() == 0, "the layer's W_K takes no part in the own-projection scores"
    assert not torch.allclose(ref[0], run_attention("reference", inputs, shared, parts, mask, **opts)[0], atol=1e-3)


def test_own_projections_with_lisa_match_reference():
    inputs, shared, parts, mask = random_setup(seed=23)
    top = _own_topical(6, 12, shared.site(0))
    parent = torch.randint(-1, 9, (2, 9), generator=torch.Generator().manual_seed(4))
    ref_rec, rec = LisaRecorder(layer=0, head=1), LisaRecorder(layer=0, head=1)
    ref = run_attention("reference", inputs, top, parts, mask, lisa=ref_rec, parent=parent)
    _assert_close(run_attention("fast", inputs, top, parts, mask, lisa=rec, parent=parent), ref)


def test_own_projections_folded_vector_equals_explicit_score():
    """q · (o W_O W_Kt) / sqrt(hidden) == o · u with the own key projection (bias-free: no constant)."""
    torch.manual_seed(0)
    key, out = nn.Linear(16, 12), nn.Linear(12, 16)
    top = _own_topical(1, 12, (key, out))
    o = torch.randn(5, 12)
    const = top.scores(0, torch.zeros(1, 12))  # W_O's bias through W_Kt
    assert torch.allclose(top.scores(0, o) - const, o @ top.folded(0), atol=1e-5)
    assert top.key_weight.shape == (1, 12, 16) and top.value_weight.shape == (1, 12, 12)


def test_own_projections_start_as_shared_and_match_reference_in_the_model():
    """At init W_Kt = the layer's W_K and W_Vt = I: the model equals the shared one (same seed); with moved
    projections, fast == exact == reference on hidden states and every gradient (W_Kt, W_Vt included)."""
    batch = make_batch(seed=13)
    own = tiny_model(SyntaxBertModel, topical_projections="own")
    shared = tiny_model(SyntaxBertModel)
    top = own.topical
    assert top.own_projections and shared.topical.key_weight is None
    for layer, (_, key, _) in enumerate(attention_sites(own.encoder)):
        assert torch.equal(top.key_weight[layer], key.weight)
        assert torch.equal(top.value_weight[layer], torch.eye(32))
    assert torch.allclose(own(**batch).last_hidden_state, shared(**batch).last_hidden_state, atol=1e-6)
    with torch.no_grad():
        g = torch.Generator().manual_seed(3)
        top.key_weight.add_(torch.randn(top.key_weight.shape, generator=g) * 0.3)
        top.value_weight.add_(torch.randn(top.value_weight.shape, generator=g) * 0.2)

    def run(ref: bool):
        own.zero_grad()
        with reference_attention() if ref else nullcontext():
            h = own(**batch).last_hidden_state
        (h * torch.linspace(-1, 1, h.numel()).view_as(h)).sum().backward()
        return h.detach(), {n: p.grad.clone() for n, p in own.named_parameters() if p.grad is not None}

    h_ref, g_ref = run(True)
    for impl in ("fast", "exact"):
        own.config.implementation = impl
        h, grads = run(False)
        assert torch.allclose(h, h_ref, atol=TOL), impl
        assert set(grads) == set(g_ref)
        for name in g_ref:
            assert torch.allclose(grads[name], g_ref[name], atol=TOL), (impl, name)
    for name in ("topical.key_weight", "topical.value_weight", "topical.query"):
        assert (g_ref[name].flatten(1).abs().sum(-1) > 0).all(), f"{name}: every layer gets a gradient"


def test_own_projections_are_new_parameters_and_round_trip(tmp_path):
    from syntaxformer.training.trainer import new_parameter_names

    batch = make_batch(seed=14)
    model = tiny_model(topical_projections="own", gate="layer")
    names = new_parameter_names(model)
    assert {"syntax_bert.topical.key_weight", "syntax_bert.topical.value_weight", "syntax_bert.topical.query"} <= names
    assert not any(n.startswith("syntax_bert.encoder.") for n in names)
    with torch.no_grad():
        model.syntax_bert.topical.key_weight.mul_(1.5)
        model.syntax_bert.topical.value_weight.add_(0.05)
        model.syntax_bert.gate.weight.fill_(0.5)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert loaded.config.topical_projections == "own"
    for name in ("key_weight", "value_weight", "query"):
        assert torch.equal(getattr(loaded.syntax_bert.topical, name), getattr(model.syntax_bert.topical, name)), name
    assert torch.allclose(model(**batch).logits, loaded(**batch).logits, atol=1e-6)
    n_shared = sum(p.numel() for p in tiny_model().parameters())
    n_own = sum(p.numel() for p in tiny_model(topical_projections="own").parameters())
    assert n_own - n_shared == 2 * (32 * 32 + 32 * 32), "W_Kt [dim, hidden] and W_Vt [dim, dim] per layer"


# ---------------------------------------------------------------------------------------------------------------
# lisa_head_mode="added": LISA as a new head with its own query / key projections
# ---------------------------------------------------------------------------------------------------------------


def _added_lisa(seed: int, H: int = 3, d: int = 4) -> LisaRecorder:
    head = AddedLisaHead(0, H, d, init_head=1)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        head.query_weight.add_(torch.randn(head.query_weight.shape, generator=g) * 0.5)
        head.key_weight.add_(torch.randn(head.key_weight.shape, generator=g) * 0.5)
        head.mix.normal_(0, 1.0, generator=g)
    return LisaRecorder(layer=0, head=1, added=head)


@pytest.mark.parametrize("impl", ["fast", "exact"])
@pytest.mark.parametrize("own,gated", [(False, False), (True, True)])
def test_added_lisa_head_matches_reference(impl, own, gated):
    """Outputs, attention, LISA log-probabilities and every gradient (W_Qa, W_Ka, m included) match the loop."""
    inputs, top, parts, mask = random_setup(seed=31)
    if own:
        top = _own_topical(7, 12, top.site(0))
    parent = torch.randint(-1, 9, (2, 9), generator=torch.Generator().manual_seed(5))
    gate = (lambda: _gate(True)) if gated else (lambda: None)
    ref_rec, rec = _added_lisa(2), _added_lisa(2)
    ref = run_attention("reference", inputs, top, parts, mask, lisa=ref_rec, parent=parent, gate=gate())
    got = run_attention(impl, inputs, top, parts, mask, lisa=rec, parent=parent, gate=gate())
    _assert_close(got, ref)
    keep = mask[:, 0].expand(2, 9, 9)
    assert torch.allclose(rec.log_probs[keep], ref_rec.log_probs[keep], atol=TOL)
    n = len(ref[2]) - (1 if gated else 0)
    for grad in ref[2][n - 3 : n]:
        assert grad.abs().sum() > 0, "W_Qa, W_Ka and m get gradients"
    # the pretrained heads stay in the sub-networks: with m = 0 the output is the no-LISA output
    zero = _added_lisa(2)
    with torch.no_grad():
        zero.added.mix.zero_()
    plain = run_attention("reference", inputs, top, parts, mask, gate=gate())
    assert torch.allclose(
        run_attention(impl, inputs, top, parts, mask, lisa=zero, parent=parent, gate=gate())[0], plain[0], atol=TOL
    )


def test_added_lisa_head_starts_as_a_copy_and_leaves_the_model_unchanged():
    """At init: hidden states equal the model without LISA; the added head's attention is head lisa_head's."""
    batch = make_batch(seed=15)
    added = tiny_model(SyntaxBertModel, lisa_layer=0, lisa_head=2, lisa_head_mode="added")
    existing = tiny_model(SyntaxBertModel, lisa_layer=0, lisa_head=2)
    none = tiny_model(SyntaxBertModel)
    assert existing.lisa is None and none.lisa is None and (added.lisa.mix == 0).all()
    out_a, out_e = added(**batch), existing(**batch)
    assert torch.allclose(out_a.last_hidden_state, none(**batch).last_hidden_state, atol=1e-6)
    keep = batch["attention_mask"].bool().unsqueeze(1).expand(-1, batch["attention_mask"].shape[1], -1)
    assert torch.allclose(out_a.lisa_log_probs[keep], out_e.lisa_log_probs[keep], atol=1e-5)


def test_added_lisa_head_is_trained_by_the_lisa_loss_and_round_trips(tmp_path):
    from syntaxformer.training.trainer import new_parameter_names

    batch = make_batch(seed=16)
    model = tiny_model(lisa_layer=1, lisa_head=0, lisa_head_mode="added").train()
    names = new_parameter_names(model)
    assert {"syntax_bert.lisa.query_weight", "syntax_bert.lisa.key_weight", "syntax_bert.lisa.mix"} <= names
    out = model(**batch)
    assert out.lisa_loss is not None and out.lisa_loss > 0
    out.lisa_loss.backward()
    lisa = model.syntax_bert.lisa
    assert lisa.query_weight.grad.abs().sum() > 0 and lisa.key_weight.grad.abs().sum() > 0
    model.zero_grad()
    model(**batch, labels=torch.tensor([0, 1, 2])).loss.backward()
    assert lisa.mix.grad.abs().sum() > 0, "the task loss reaches the mixing weights"
    model.eval()
    with torch.no_grad():
        lisa.mix.fill_(0.3)
        lisa.query_weight.mul_(1.2)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert loaded.config.lisa_head_mode == "added"
    for name in ("query_weight", "key_weight", "mix"):
        assert torch.equal(getattr(loaded.syntax_bert.lisa, name), getattr(lisa, name)), name
    assert torch.allclose(model(**batch).logits, loaded(**batch).logits, atol=1e-6)
