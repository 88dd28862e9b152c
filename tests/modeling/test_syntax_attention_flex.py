"""Syntax-BERT's ``implementation="flex"`` (flex_attention with a per-(row, joint bucket) bias) against the slow
float64 reference of ``tests/modeling/reference_syntax_attention.py``: outputs and gradients, on the CPU (eager
flex_attention without autograd; under autograd its dense stand-in) and, marked ``gpu``, on CUDA with the compiled
flex_attention in fp32 and under bf16 autocast.

The GPU tests in one command (on a machine with CUDA):
``pytest -p no:cacheprovider -q -m gpu tests/modeling/test_syntax_attention_flex.py``
"""

from __future__ import annotations

import itertools

import pytest
import torch

from syntaxformer.errors import ConfigError
from syntaxformer.modeling import SyntaxBertConfig
from syntaxformer.modeling.syntax_attention import (
    AddedLisaHead,
    LisaRecorder,
    SyntaxAttentionOptions,
    SyntaxAttentionRecorder,
    SyntaxGate,
    prepare_groups,
    syntax_attention_forward,
)
from tests.modeling.reference_syntax_attention import reference_syntax_attention
from tests.modeling.test_modeling_syntax_bert import (
    AttnStub,
    check_fast_matches_reference_on,
    random_setup,
    run_attention,
    tiny_bert,
)

TOL = 1e-4
#: bf16 autocast: the largest absolute output error against the float64 reference of the same (bf16-rounded)
#: inputs, and the largest relative (Frobenius) error of each gradient. bf16 keeps 8 significant bits (relative
#: rounding 2^-9 ~ 2e-3 per operation); the scores, probabilities and A V each round once or twice.
BF16_OUT_ATOL = 3e-2
BF16_GRAD_RTOL = 5e-2


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one intra-op thread avoids thread hand-offs on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _run(impl: str, inputs, topical, parts, mask, **kwargs):
    """Output and gradients, in fp32, of :func:`run_attention` (the Syntax-BERT tests' runner: a fixed random
    linear loss, + the LISA loss; ``autocast=True`` under bf16)."""
    out, _, grads = run_attention(impl, inputs, topical, parts, mask, **kwargs)
    return out.float(), [x.float() for x in grads]


def _assert_close(got, ref, tol: float = TOL) -> None:
    (out_a, grads_a), (out_b, grads_b) = got, ref
    assert torch.allclose(out_a, out_b, atol=tol, rtol=0), (out_a - out_b).abs().max()
    assert len(grads_a) == len(grads_b)
    for i, (x, y) in enumerate(zip(grads_a, grads_b)):
        assert torch.allclose(x, y, atol=tol, rtol=0), (i, (x - y).abs().max())


def _gate(per_head: bool, H: int = 3, seed: int = 0, device: str | torch.device = "cpu") -> SyntaxGate:
    gate = SyntaxGate(1, H, per_head=per_head)
    with torch.no_grad():
        gate.weight.uniform_(-0.5, 1.5, generator=torch.Generator().manual_seed(seed))
    return gate.to(device)


OPTION_GRID = list(itertools.product(["topical", "sum", "mean"], ["full", "self"], [False, True]))


# ---------------------------------------------------------------------------------------------------------------
# CPU
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("aggregation,empty_rows,full_candidate", OPTION_GRID)
def test_flex_matches_reference_outputs_and_gradients(aggregation, empty_rows, full_candidate):
    inputs, topical, parts, mask = random_setup(seed=len(aggregation) + 3 * full_candidate)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    ref = _run("reference", inputs, topical, parts, mask, **opts)
    _assert_close(_run("flex", inputs, topical, parts, mask, **opts), ref)
    if aggregation == "topical":
        assert ref[1][3].abs().sum() > 0, "the task query must get a gradient"


@pytest.mark.parametrize("per_head", [False, True])
@pytest.mark.parametrize(
    "aggregation,empty_rows,full_candidate",
    [("topical", "full", False), ("mean", "self", True), ("sum", "full", False)],
)
def test_flex_gated_matches_reference(per_head, aggregation, empty_rows, full_candidate):
    inputs, topical, parts, mask = random_setup(seed=21 + per_head)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    ref = _run("reference", inputs, topical, parts, mask, gate=_gate(per_head), **opts)
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=_gate(per_head), **opts), ref)
    assert ref[1][-1].abs().min() > 0, "every gate gets a gradient"


@pytest.mark.parametrize("mode", ["existing", "added"])
@pytest.mark.parametrize("full_candidate", [False, True])
def test_flex_lisa_head_matches_reference(mode, full_candidate):
    inputs, topical, parts, mask = random_setup(seed=7)
    parent = torch.randint(-1, 6, (2, 9), generator=torch.Generator().manual_seed(0))

    def recorder() -> LisaRecorder:
        added = None
        if mode == "added":
            torch.manual_seed(0)
            added = AddedLisaHead(0, 3, 4, init_head=1)
            with torch.no_grad():
                added.mix.normal_(0, 1.0)
        return LisaRecorder(layer=0, head=1, added=added)

    ref_rec, rec = recorder(), recorder()
    opts = dict(full_attention_candidate=full_candidate)
    ref = _run("reference", inputs, topical, parts, mask, lisa=ref_rec, parent=parent, gate=_gate(True), **opts)
    _assert_close(_run("flex", inputs, topical, parts, mask, lisa=rec, parent=parent, gate=_gate(True), **opts), ref)
    assert torch.allclose(rec.log_probs, ref_rec.log_probs, atol=TOL)


def test_flex_own_topical_projections_match_reference():
    inputs, topical, parts, mask = random_setup(seed=9, own=True)
    ref = _run("reference", inputs, topical, parts, mask, gate=_gate(False))
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=_gate(False)), ref)


@pytest.mark.parametrize("mask_kind", ["none", "bool", "additive"])
@pytest.mark.parametrize("n_parts", [1, 2])
def test_flex_matches_reference_for_every_mask_form(mask_kind, n_parts):
    inputs, topical, parts, mask = random_setup(seed=11, n_parts=n_parts)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "additive":  # eager-style float mask, [B, 1, 1, L]
        mask = torch.zeros(2, 1, 1, 9).masked_fill(~mask[:, :, :1, :], torch.finfo(torch.float32).min)
    ref = _run("reference", inputs, topical, parts, mask, gate=_gate(True))
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=_gate(True)), ref)


def test_flex_without_autograd_runs_flex_attention_and_matches_reference(monkeypatch):
    """Without gradients the CPU runs the real (eager) flex_attention with the bias ``score_mod``."""
    import torch.nn.attention.flex_attention as fa

    calls = []
    real = fa.flex_attention
    monkeypatch.setattr(fa, "flex_attention", lambda *a, **kw: calls.append(kw.get("score_mod")) or real(*a, **kw))
    inputs, topical, parts, mask = random_setup(seed=13)
    with torch.no_grad():
        for opts in (dict(), dict(aggregation="sum", empty_rows="self", full_attention_candidate=True)):
            ref, _ = reference_syntax_attention(
                AttnStub(),
                *inputs,
                mask,
                syntax_groups=parts,
                syntax_topical=topical,
                syntax_options=SyntaxAttentionOptions(**opts),
            )
            got, weights = syntax_attention_forward(
                AttnStub(),
                *inputs,
                mask,
                syntax_groups=parts,
                syntax_topical=topical,
                syntax_options=SyntaxAttentionOptions(implementation="flex", **opts),
            )
            assert weights is None, "flex returns no attention weights (as SDPA)"
            assert torch.allclose(got, ref, atol=TOL), (got - ref).abs().max()
    assert len(calls) == 2 and all(c is not None for c in calls)


def test_flex_large_score_gaps_lose_no_group():
    """A group ~hundreds of nats below the row's best (the fast path's underflow case) keeps its weight: the
    pre-pass normalises every group with its own maximum (a lost group moves the output by ~0.1).

    Gradients are looser here than in the other tests: at scores of ~400 the fp32 sum ``S + b`` rounds at
    ~3e-5 (its ulp), so ``dS`` errs by ~2e-5 and ``dK = dSᵀ Q`` by that times the 400x query (measured 8.5e-3 for
    dK; 6e-6 for the fast / exact paths, which subtract each group's own maximum from ``S`` exactly)."""
    inputs, topical, parts, mask = random_setup(seed=4)
    q, k, v = inputs
    q = q.clone()
    q[0, 1, 4] *= 400.0
    ref_out, ref_grads = _run("reference", (q, k, v), topical, parts, mask)
    out, grads = _run("flex", (q, k, v), topical, parts, mask)
    assert torch.allclose(out, ref_out, atol=TOL, rtol=0), (out - ref_out).abs().max()
    for i, (x, y) in enumerate(zip(grads, ref_grads)):
        assert torch.allclose(x, y, atol=2e-2, rtol=0), (i, (x - y).abs().max())


def test_flex_pre_pass_in_row_chunks_is_the_same(monkeypatch):
    """Chunks of a few query rows (each checkpointed) give the same outputs and gradients as one chunk."""
    import syntaxformer.modeling.syntax_attention_flex as SF

    inputs, topical, parts, mask = random_setup(seed=5)
    whole = _run("flex", inputs, topical, parts, mask, gate=_gate(True))
    monkeypatch.setattr(SF, "_FLEX_CHUNK_BYTES", 4 * 2 * 3 * 9 * 2)  # two rows per chunk
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=_gate(True)), whole, tol=1e-6)


def test_flex_bias_gradient_pass_equals_autograd_through_the_bias(monkeypatch):
    """The bias table's gradient from ``_FlexBiasGrad``'s chunked pass equals autograd through the bias (what the
    compiled kernel computes with ``_FLEX_BIAS_GRAD_IN_KERNEL``), also with chunks of a few rows."""
    import syntaxformer.modeling.syntax_attention_flex as SF

    inputs, topical, parts, mask = random_setup(seed=14)
    opts = dict(full_attention_candidate=True)
    passes = _run("flex", inputs, topical, parts, mask, gate=_gate(True), **opts)
    monkeypatch.setattr(SF, "_FLEX_CHUNK_BYTES", 4 * 2 * 3 * 9 * 3)  # three rows per chunk
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=_gate(True), **opts), passes, tol=1e-6)
    monkeypatch.setattr(SF, "_FLEX_BIAS_GRAD_IN_KERNEL", True)
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=_gate(True), **opts), passes, tol=1e-5)


def test_flex_passes_keep_no_float_tensor_of_the_attention_size():
    """What the pre-pass and the bias-gradient pass keep for the backward: the inputs, the joint index and
    ``[B, H, L, J]`` tables, never a float ``[B, H, L, L]`` (on the GPU the flex kernel keeps q, k, v, out, lse)."""
    import syntaxformer.modeling.syntax_attention_flex as SF

    B, H, L, d = 2, 3, 40, 4
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, L, d, generator=g, requires_grad=True) for _ in range(3))
    w = torch.randn(B, H, L, generator=g, requires_grad=True)
    parts = [torch.randint(0, 4, (B, L, L), generator=g) for _ in range(2)]
    groups = prepare_groups(parts, 4)
    joint = SF._cached_flex_joint(groups, None, None)
    assert joint.size < L, "the test needs fewer joint buckets than keys"
    saved = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append((t.dtype, t.numel()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        lz, y = SF._flex_prepass(q, k, w, 0.5, joint)
        bias = (lz.nan_to_num(0.0, 0.0, 0.0) + y).requires_grad_()
        out = SF._FlexBiasGrad.apply(
            torch.randn(B, H, L, d, requires_grad=True),
            bias,
            lz.detach(),
            q.detach(),
            k.detach(),
            v.detach(),
            joint.buckets,
            0.5,
        )
    assert saved and all(not (dtype.is_floating_point and n >= B * H * L * L) for dtype, n in saved), saved
    (out.sum() + lz.nan_to_num(0.0, 0.0, 0.0).sum() + y.sum()).backward()
    assert q.grad is not None and w.grad is not None


def test_flex_recorder_matches_fast_recorder():
    inputs, topical, parts, mask = random_setup(seed=6)
    recs = {}
    for impl in ("fast", "flex"):
        recs[impl] = SyntaxAttentionRecorder()
        syntax_attention_forward(
            AttnStub(),
            *inputs,
            mask,
            syntax_groups=parts,
            syntax_topical=topical,
            syntax_options=SyntaxAttentionOptions(implementation=impl),
            syntax_gate=_gate(False),
            syntax_record=recs[impl],
        )
    for name in ("attentions", "topical", "candidates"):
        a, b = getattr(recs["fast"], name)[0], getattr(recs["flex"], name)[0]
        assert a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-5), name


def test_flex_refuses_attention_dropout_in_training_and_other_devices():
    inputs, _topical, parts, mask = random_setup(seed=0)
    opts = SyntaxAttentionOptions(implementation="flex")
    module = AttnStub().train()
    with pytest.raises(ConfigError, match="attention_probs_dropout_prob=0"):
        syntax_attention_forward(module, *inputs, mask, dropout=0.1, syntax_groups=parts, syntax_options=opts)
    syntax_attention_forward(module.eval(), *inputs, mask, dropout=0.1, syntax_groups=parts, syntax_options=opts)
    meta = [x.to("meta") for x in inputs]
    with pytest.raises(ConfigError, match="implementation='fast'"):
        syntax_attention_forward(
            AttnStub(),
            *meta,
            None,
            syntax_options=opts,
            syntax_groups=prepare_groups([p.to("meta") for p in parts], num_buckets=6),
        )


def test_config_accepts_flex_and_names_the_allowed_values():
    assert SyntaxBertConfig(encoder=tiny_bert(), implementation="flex").attention_options().implementation == "flex"
    with pytest.raises(ConfigError, match="flex"):
        SyntaxAttentionOptions(implementation="cuda")


@pytest.mark.parametrize(
    "opts",
    [
        dict(),
        dict(lisa_layer=1, lisa_head=2, gate="head"),
        dict(aggregation="sum", empty_rows="self", full_attention_candidate=True),
    ],
)
def test_flex_model_matches_reference(opts):
    """A whole tiny Syntax-BERT classifier: last hidden states and every parameter's gradient."""
    check_fast_matches_reference_on("cpu", dict(implementation="flex", **opts))


# ---------------------------------------------------------------------------------------------------------------
# CUDA (compiled flex_attention); head size 16, the smallest the compiled kernel takes
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize(
    "aggregation,empty_rows,full_candidate",
    [("topical", "full", False), ("topical", "self", True), ("sum", "self", False), ("mean", "full", True)],
)
@pytest.mark.parametrize("gated", [False, True])
def test_flex_matches_reference_on_cuda_in_fp32(aggregation, empty_rows, full_candidate, gated, cuda_fp32):
    _check_flex_matches_reference_on(cuda_fp32, aggregation, empty_rows, full_candidate, gated)


def _check_flex_matches_reference_on(device, aggregation: str, empty_rows: str, full_candidate: bool, gated: bool):
    inputs, topical, parts, mask = random_setup(seed=31, L=37, d=16, device=device)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    gate = _gate(True, device=device) if gated else None
    ref = _run("reference", inputs, topical, parts, mask, gate=gate, **opts)
    _assert_close(_run("flex", inputs, topical, parts, mask, gate=gate, **opts), ref)


@pytest.mark.gpu
def test_flex_bias_gradient_in_kernel_matches_reference_on_cuda_in_fp32(monkeypatch, cuda_fp32):
    """The alternative ``_FLEX_BIAS_GRAD_IN_KERNEL`` (Inductor computes the bias table's gradient with atomic adds):
    if this fails and the test above passes, keep the default (the chunked pass)."""
    import syntaxformer.modeling.syntax_attention_flex as SF

    monkeypatch.setattr(SF, "_FLEX_BIAS_GRAD_IN_KERNEL", True)
    _check_flex_matches_reference_on(cuda_fp32, "topical", "full", True, True)


@pytest.mark.gpu
def test_flex_lisa_matches_reference_on_cuda_in_fp32(cuda_fp32):
    inputs, topical, parts, mask = random_setup(seed=32, L=37, d=16, device=cuda_fp32)
    parent = torch.randint(-1, 37, (2, 37), generator=torch.Generator().manual_seed(0)).to(cuda_fp32)
    ref = _run("reference", inputs, topical, parts, mask, lisa=LisaRecorder(0, 1), parent=parent)
    _assert_close(_run("flex", inputs, topical, parts, mask, lisa=LisaRecorder(0, 1), parent=parent), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("gated", [False, True])
def test_flex_under_bf16_autocast_on_cuda_within_tolerance(gated, cuda_fp32):
    """bf16 q / k / v under autocast against the float64 reference of the same bf16-rounded inputs: outputs within
    ``BF16_OUT_ATOL``, each gradient within ``BF16_GRAD_RTOL`` relative (Frobenius) error."""
    inputs, topical, parts, mask = random_setup(seed=33, L=64, d=16, device=cuda_fp32)
    inputs = tuple(x.bfloat16() for x in inputs)
    gate = _gate(False, device=cuda_fp32) if gated else None
    ref_out, ref_grads = _run("reference", tuple(x.float() for x in inputs), topical, parts, mask, gate=gate)
    out, grads = _run("flex", inputs, topical, parts, mask, gate=gate, autocast=True)
    assert (out - ref_out).abs().max() <= BF16_OUT_ATOL, (out - ref_out).abs().max()
    for i, (x, y) in enumerate(zip(grads, ref_grads)):
        rel = (x - y).norm() / y.norm().clamp(min=1e-12)
        assert rel <= BF16_GRAD_RTOL, (i, float(rel))


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [dict(), dict(lisa_layer=1, lisa_head=2, gate="head")])
def test_flex_model_matches_reference_on_cuda_in_fp32(opts, cuda_fp32):
    check_fast_matches_reference_on(cuda_fp32, dict(implementation="flex", encoder=tiny_bert(hidden_size=64), **opts))
