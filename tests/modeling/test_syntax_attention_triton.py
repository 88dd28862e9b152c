"""Syntax-BERT's ``implementation="triton"`` (fused Triton kernels) against the slow float64 reference of
``tests/modeling/reference_syntax_attention.py``: outputs and every gradient (q, k, v, task query, W_K, W_O, own
projections, added LISA head, gate) to 1e-4 in fp32.

Without CUDA the kernels run in Triton's interpreter on CPU tensors: this module sets ``TRITON_INTERPRET=1`` before
the kernels are imported (they are built at import), so these tests execute wherever triton is installed (the
``dev`` extra). With CUDA (and no interpreter) every test of the module runs on the GPU in fp32 (TF32 off) and is
marked ``gpu``; the tests marked ``gpu`` here add bf16 autocast, longer sequences and whole models. On a CUDA
machine, all of them in one command:
``pytest -p no:cacheprovider -q -m gpu tests/modeling/test_syntax_attention_triton.py``
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():  # before the kernels are built (at the import of syntax_attention_triton)
    os.environ.setdefault("TRITON_INTERPRET", "1")

pytest.importorskip("triton", reason="implementation='triton' needs triton (pip install -e '.[dev]')")

from syntaxformer.errors import ConfigError
from syntaxformer.modeling import SyntaxBertConfig
from syntaxformer.modeling import syntax_attention as SA
from syntaxformer.modeling import syntax_attention_fast as SA_fast
from syntaxformer.modeling import syntax_attention_triton as T
from syntaxformer.modeling.syntax_attention import syntax_attention_forward
from syntaxformer.modeling.syntax_attention_core import (
    AddedLisaHead,
    LisaRecorder,
    SyntaxAttentionOptions,
    SyntaxAttentionRecorder,
    SyntaxGate,
    joint_buckets,
    prepare_groups,
)
from tests.modeling.test_modeling_syntax_bert import (
    AttnStub,
    check_fast_matches_reference_on,
    random_setup,
    run_attention,
    tiny_bert,
)

#: On CUDA every test here runs the compiled kernels: all of them are GPU tests there.
pytestmark = [] if T.INTERPRETED else [pytest.mark.gpu]

TOL = 1e-4
#: bf16 autocast: the largest absolute output error against the float64 reference of the same bf16-rounded inputs,
#: and the largest relative (Frobenius) error of each gradient. bf16 keeps 8 significant bits (relative rounding
#: 2^-9 ~ 2e-3 per operation); the scores, probabilities and A V each round once or twice.
BF16_OUT_ATOL = 3e-2
BF16_GRAD_RTOL = 5e-2


@pytest.fixture(scope="module")
def device():
    """Where the kernels run: the CPU under the interpreter, else CUDA in full fp32 (TF32 off)."""
    if T.INTERPRETED:
        yield "cpu"
        return
    if not torch.cuda.is_available():
        pytest.fail(
            "syntax_attention_triton was imported without TRITON_INTERPRET=1 and there is no CUDA device: "
            "import it only after this test module set the variable"
        )
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one intra-op thread avoids thread hand-offs on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _run(impl: str, inputs, topical, parts, mask, **kwargs):
    out, _, grads = run_attention(impl, inputs, topical, parts, mask, **kwargs)
    return out.float(), [x.float() for x in grads]


def _assert_close(got, ref, tol: float = TOL) -> None:
    (out_a, grads_a), (out_b, grads_b) = got, ref
    assert torch.allclose(out_a, out_b, atol=tol, rtol=0), (out_a - out_b).abs().max()
    assert len(grads_a) == len(grads_b)
    for i, (x, y) in enumerate(zip(grads_a, grads_b)):
        assert torch.allclose(x, y, atol=tol, rtol=0), (i, (x - y).abs().max())


def _gate(per_head: bool, H: int = 2, seed: int = 0, device="cpu") -> SyntaxGate:
    gate = SyntaxGate(1, H, per_head=per_head)
    with torch.no_grad():
        gate.weight.uniform_(-0.5, 1.5, generator=torch.Generator().manual_seed(seed))
    return gate.to(device)


# ---------------------------------------------------------------------------------------------------------------
# Against the float64 reference (the CPU interpreter, or CUDA fp32)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "aggregation,empty_rows,full_candidate",
    [("topical", "full", False), ("topical", "self", True), ("sum", "full", True), ("mean", "self", False)],
)
def test_triton_matches_reference_outputs_and_gradients(device, aggregation, empty_rows, full_candidate):
    """Random partitions with empty groups (ids with gaps), rows without any group, padding keys."""
    inputs, topical, parts, mask = random_setup(device=device, seed=len(aggregation) + 3 * full_candidate, H=2)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    ref = _run("reference", inputs, topical, parts, mask, **opts)
    _assert_close(_run("triton", inputs, topical, parts, mask, **opts), ref)
    if aggregation == "topical":
        assert ref[1][3].abs().sum() > 0, "the task query must get a gradient"


@pytest.mark.parametrize(
    "per_head,aggregation,full_candidate", [(False, "topical", False), (True, "topical", True), (True, "sum", False)]
)
def test_triton_gated_matches_reference(device, per_head, aggregation, full_candidate):
    inputs, topical, parts, mask = random_setup(device=device, seed=21 + per_head, H=2)
    opts = dict(aggregation=aggregation, full_attention_candidate=full_candidate)
    gate = _gate(per_head, device=device)
    ref = _run("reference", inputs, topical, parts, mask, gate=gate, **opts)
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=gate, **opts), ref)
    assert ref[1][-1].abs().min() > 0, "every gate gets a gradient"


def test_triton_several_blocks_of_rows_and_keys(device):
    """40 tokens: two 32-wide blocks of rows and keys (the second one partial), head size 20 (padded to 32), a few
    dozen joint buckets per row."""
    inputs, topical, parts, mask = random_setup(device=device, seed=17, H=2, L=40, d=20)
    gate = _gate(True, H=2, device=device)
    opts = dict(full_attention_candidate=True)
    ref = _run("reference", inputs, topical, parts, mask, gate=gate, **opts)
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=gate, **opts), ref)


@pytest.mark.parametrize("sentences", [False, True])
def test_triton_gpu_tiles_and_bucket_loop_match_reference(device, monkeypatch, sentences):
    """What the GPU runs for bf16: the per-bucket sums and maxima as a loop over the buckets up to each tile's
    largest id (the interpreter runs the one-hot form by default) and each kernel's own tile sizes (64 x 64,
    64 x 32, 32 x 32: several and partial blocks at 40 tokens) give the reference too; ``sentences``: relations
    only within tokens 0-31 and 32-39 (two "sentences"), so some tiles hold pairs without any group."""
    inputs, topical, parts, mask = random_setup(device=device, seed=19, H=2, L=40)
    if sentences:
        for p in parts:
            p[:, :32, 32:] = 0
            p[:, 32:, :32] = 0
    monkeypatch.setattr(T, "ONE_HOT", False)
    if T.INTERPRETED:
        monkeypatch.setattr(T, "_config", lambda kernel, d, dtype: (*T._HALF_CONFIGS[kernel][:2], T._pow2(d), {}))
    ref = _run("reference", inputs, topical, parts, mask, gate=_gate(False, H=2, device=device))
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=_gate(False, H=2, device=device)), ref)


def _sentences_setup(device, seed: int = 23):
    """70 tokens (three 32-row blocks under the interpreter, the last one partial) in two "sentences", 0-31 and
    32-69, related only within each: tiles across them hold no related pair. Rows 32-63 against keys 32-63 hold one
    group tuple per row (a uniform tile); rows 0 and 40-43 have no group at all."""
    inputs, topical, parts, mask = random_setup(device=device, seed=seed, H=2, L=70, d=16)
    per_row = torch.tensor([1, 2, 4, 5], device=device).repeat(8)  # (32,) one group per row, never 3 (empty)
    for shift, p in enumerate(parts):
        p[:, :32, 32:] = 0
        p[:, 32:, :32] = 0
        p[:, 32:64, 32:64] = per_row.roll(shift).view(32, 1)
        p[:, 40:44, :] = 0
    return inputs, topical, parts, mask


def _slow_descriptors(parts, joint, allowed, BM: int, BN: int, skip: bool) -> torch.Tensor:
    """:func:`~syntaxformer.modeling.syntax_attention_triton.tile_descriptors`, one tile at a time."""
    B, L, _ = joint.shape
    nq, nk = -(-L // BM), -(-L // BN)
    out = torch.zeros(B, nq, nk, dtype=torch.int8)
    for b in range(B):
        for i in range(nq):
            for j in range(nk):
                rows, keys = slice(i * BM, (i + 1) * BM), slice(j * BN, (j + 1) * BN)
                tile = joint[b, rows, keys]
                uniform = all(len(set(row.tolist())) == 1 for row in tile)
                related = any(((p[b, rows, keys] > 0) & allowed[b, rows, keys]).any() for p in parts)
                out[b, i, j] = T.UNIFORM * uniform + T.SKIP * (skip and not related)
    return out


def test_triton_tile_descriptors_match_a_tile_by_tile_count():
    _inputs, _topical, parts, mask = _sentences_setup("cpu")
    groups = prepare_groups(parts, 6)
    allowed = mask[:, 0]
    joint = joint_buckets([*parts, (~allowed).long()], [6, 6, 2])
    for BM, BN, skip in ((32, 32, True), (64, 32, True), (32, 64, False), (16, 16, True)):
        got = T.tile_descriptors(groups, joint, allowed, BM, BN, skip)
        assert torch.equal(got, _slow_descriptors(parts, joint.buckets, allowed, BM, BN, skip)), (BM, BN, skip)
    got = T.tile_descriptors(groups, joint, allowed, 32, 32, True)
    assert (got & T.SKIP).bool()[:, 0, 1:].all() and (got & T.SKIP).bool()[:, 1:, 0].all(), "across sentences"
    assert not (got & T.SKIP).bool()[:, 1, 1].any() and (got & T.UNIFORM).bool()[:, 1, 1].all()
    cache: dict = {}
    first = T.tile_descriptors(groups, joint, allowed, 32, 32, True, cache)
    assert T.tile_descriptors(groups, joint, allowed, 32, 32, True, cache) is first, "once per forward"


@pytest.mark.parametrize(
    "empty_rows,full_candidate,one_hot", [("full", False, True), ("self", False, False), ("full", True, True)]
)
def test_triton_skipped_and_uniform_tiles_match_reference(device, monkeypatch, empty_rows, full_candidate, one_hot):
    """Tiles without a related pair skipped (not with a full candidate, whose rows read the whole softmax), a
    uniform tile on the per-row path, rows without any group (plain attention for ``empty_rows="full"``): outputs
    and every gradient against the float64 reference, with the bucket sums one-hot and as the GPU's loop."""
    inputs, topical, parts, mask = _sentences_setup(device)
    monkeypatch.setattr(T, "ONE_HOT", one_hot)
    opts = dict(empty_rows=empty_rows, full_attention_candidate=full_candidate)
    gate = _gate(True, device=device)
    ref = _run("reference", inputs, topical, parts, mask, gate=gate, **opts)
    seen = []
    real = T.tile_descriptors

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(T, "tile_descriptors", spy)
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=gate, **opts), ref)
    assert any((d & T.UNIFORM).any() for d in seen), "a uniform tile ran"
    assert any((d & T.SKIP).any() for d in seen) != full_candidate, "tiles were skipped, except with a full candidate"


def test_triton_kernels_read_the_skip_bit(device, monkeypatch):
    """Marking every tile skipped changes the syntax context (the kernels honour the descriptors, so the test
    above exercises skipping): only the rows sent to plain attention keep their output."""
    inputs, topical, parts, mask = _sentences_setup(device)
    want, _ = _run("triton", inputs, topical, parts, mask)
    real = T.tile_descriptors
    monkeypatch.setattr(T, "tile_descriptors", lambda *a, **k: real(*a, **k) | T.SKIP)
    got, _ = _run("triton", inputs, topical, parts, mask)
    changed = (got - want).abs().amax((-1, -2))  # (B, L)
    assert changed[:, 40:44].max() == 0 and changed[:, 44:].min() > 1e-3


def test_triton_sweeps_two_forward_two_backward(device, monkeypatch):
    """Four sweeps over the pairs in all: the statistics and the attention forward, then the row backward and one
    column backward that also gives the statistics' gradients (``dQ`` added atomically across key blocks: 70 tokens
    are three blocks of keys; the reference tests check the sum)."""
    inputs, topical, parts, mask = _sentences_setup(device)
    launched = []
    real = T._launch

    def spy(name, *args, **kwargs):
        launched.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(T, "_launch", spy)
    ref = _run("reference", inputs, topical, parts, mask, full_attention_candidate=True)
    _assert_close(_run("triton", inputs, topical, parts, mask, full_attention_candidate=True), ref)
    assert launched == ["prepass_sum", "attn_fwd", "attn_bwd_rows", "bwd_cols"], launched


@pytest.mark.parametrize("mode,full_candidate", [("existing", False), ("added", True)])
def test_triton_lisa_head_matches_reference(device, mode, full_candidate):
    inputs, topical, parts, mask = random_setup(device=device, seed=7, H=2)
    parent = torch.randint(-1, 6, (2, 9), generator=torch.Generator().manual_seed(0)).to(device)

    def recorder() -> LisaRecorder:
        added = None
        if mode == "added":
            torch.manual_seed(0)
            added = AddedLisaHead(0, 2, 4, init_head=1)
            with torch.no_grad():
                added.mix.normal_(0, 1.0)
            added = added.to(device)
        return LisaRecorder(layer=0, head=1, added=added)

    ref_rec, rec = recorder(), recorder()
    opts = dict(full_attention_candidate=full_candidate)
    gate = _gate(True, device=device)
    ref = _run("reference", inputs, topical, parts, mask, lisa=ref_rec, parent=parent, gate=gate, **opts)
    _assert_close(_run("triton", inputs, topical, parts, mask, lisa=rec, parent=parent, gate=gate, **opts), ref)
    assert torch.allclose(rec.log_probs, ref_rec.log_probs, atol=TOL)


def test_triton_own_topical_projections_match_reference(device):
    inputs, topical, parts, mask = random_setup(device=device, seed=9, own=True, H=2)
    gate = _gate(False, device=device)
    ref = _run("reference", inputs, topical, parts, mask, gate=gate)
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=gate), ref)


@pytest.mark.parametrize("mask_kind,n_parts", [("none", 1), ("bool", 2), ("additive", 2)])
def test_triton_matches_reference_for_every_mask_form(device, mask_kind, n_parts):
    inputs, topical, parts, mask = random_setup(device=device, seed=11, n_parts=n_parts, H=2)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "additive":  # eager-style float mask, [B, 1, 1, L]
        mask = torch.zeros(2, 1, 1, 9, device=device).masked_fill(~mask[:, :, :1, :], torch.finfo(torch.float32).min)
    gate = _gate(True, device=device)
    ref = _run("reference", inputs, topical, parts, mask, gate=gate)
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=gate), ref)


def _min_group_share(q, k, parts, mask, b: int, h: int, i: int) -> float:
    """The smallest share of the full softmax that a non-empty group of row ``i`` holds (float64)."""
    s = (q[b, h, i].double() @ k[b, h].double().T) * q.shape[-1] ** -0.5
    s = s.masked_fill(~mask[b, 0, i], float("-inf"))
    p = torch.softmax(s, -1)
    shares = [
        p[(g[b, i] == j) & mask[b, 0, i]].sum()
        for g in parts
        for j in range(1, int(g.max()) + 1)
        if ((g[b, i] == j) & mask[b, 0, i]).any()
    ]
    return float(min(shares))


@pytest.mark.parametrize("full_candidate", [False, True])
def test_triton_underflowing_rows_match_reference(device, full_candidate):
    """A row where a group's share of the full softmax is ~1e-35 (below the fast path's 1e-25: it recomputes such
    rows exactly) loses no group: every bucket is normalised with its own maximum."""
    inputs, topical, parts, mask = random_setup(device=device, seed=4, H=2)
    q, k, v = inputs
    q = q.clone()
    q[0, 1, 4] *= 80.0
    assert _min_group_share(q, k, parts, mask, 0, 1, 4) < SA_fast._UNDERFLOW, "the row should underflow"
    opts = dict(full_attention_candidate=full_candidate)
    ref = _run("reference", (q, k, v), topical, parts, mask, **opts)
    _assert_close(_run("triton", (q, k, v), topical, parts, mask, **opts), ref)


def test_triton_huge_score_gaps_lose_no_group(device):
    """Score gaps of ~1,000 nats in one row: outputs within 1e-4, gradients within 2e-4 (measured 9e-5 under the
    interpreter; the fast path's own test allows 5e-4 here). The attention pass computes ``(S - c) + b`` with a
    per-row shift ``c``; ``S + b`` unshifted would round at ~6e-5, the ulp of the scores, which ``dK = dSᵀ Q``
    multiplies by the 400x query (adding them unshifted erred by 8.5e-3 here)."""
    inputs, topical, parts, mask = random_setup(device=device, seed=4, H=2)
    q, k, v = inputs
    q = q.clone()
    q[0, 1, 4] *= 400.0
    ref_out, ref_grads = _run("reference", (q, k, v), topical, parts, mask)
    out, grads = _run("triton", (q, k, v), topical, parts, mask)
    assert torch.allclose(out, ref_out, atol=TOL, rtol=0), (out - ref_out).abs().max()
    for i, (x, y) in enumerate(zip(grads, ref_grads)):
        assert torch.allclose(x, y, atol=2e-4, rtol=0), (i, (x - y).abs().max())


def test_triton_model_matches_reference(device):
    """A whole tiny Syntax-BERT classifier (real relation groups of random trees, padding, LISA head, per-head
    gate): last hidden states and every parameter's gradient."""
    check_fast_matches_reference_on(device, dict(implementation="triton", lisa_layer=1, lisa_head=2, gate="head"))


# ---------------------------------------------------------------------------------------------------------------
# What the kernels keep, the index, refusals, options
# ---------------------------------------------------------------------------------------------------------------


def test_triton_keeps_no_float_tensor_of_the_attention_size(device):
    """What the forward keeps for the backward: inputs, the int8 joint index, ``[B, H, L, J]`` tables and per-row
    vectors, never a float ``[B, H, L, L]``."""
    B, H, L, d = 1, 2, 64, 8
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, L, d, generator=g).to(device).requires_grad_() for _ in range(3))
    parts = [torch.randint(0, 3, (B, L, L), generator=g).to(device) for _ in range(2)]
    saved = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append((t.dtype, t.numel()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out, weights = syntax_attention_forward(
            AttnStub(),
            q,
            k,
            v,
            None,
            syntax_groups=prepare_groups(parts, 3),
            syntax_options=SyntaxAttentionOptions(implementation="triton"),
        )
    assert weights is None
    assert saved and all(not (dtype.is_floating_point and n >= B * H * L * L) for dtype, n in saved), saved
    assert (torch.int8, B * L * L) in saved, "the joint index is kept as int8"
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def _reference_group_lse(
    x: torch.Tensor, y: torch.Tensor | None, index: torch.Tensor, n: int, ok: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The slow reference of the table algebra's group log-sum-exp kernel: log-sum-exp of ``x`` ``[..., K]`` per
    bucket ``index`` (``[..., K]``, ids below ``n``), each bucket with its own maximum, and the ``exp(x)``-weighted
    mean of ``y`` per bucket: ``([..., n] with -inf for empty buckets, [..., n] or None)``. Entries where ``ok`` is
    False (or ``x`` is -inf) count in no bucket."""
    fmin = torch.finfo(x.dtype).min
    dead = x == float("-inf") if ok is None else ~ok | (x == float("-inf"))
    xf = x.masked_fill(dead, fmin)
    m = torch.full((*x.shape[:-1], n), fmin, dtype=x.dtype).scatter_reduce(-1, index, xf.detach(), "amax")
    e = torch.exp(xf - m.gather(-1, index)).masked_fill(dead, 0.0)
    z = torch.zeros_like(m).scatter_add(-1, index, e)
    empty = z == 0
    z_safe = z.masked_fill(empty, 1.0)
    lz = (z_safe.log() + m).masked_fill(empty, float("-inf"))
    mean = None if y is None else torch.zeros_like(m).scatter_add(-1, index, e * y) / z_safe
    return lz, mean


@pytest.mark.parametrize("masked,with_y", [(True, True), (False, True), (True, False)])
def test_triton_group_log_sum_exp_matches_a_scatter_reference(device, masked, with_y):
    """The table algebra's per-group log-sum-exp kernel (each joint bucket in one group per partition and in the full
    row; empty buckets, disallowed buckets, empty groups) against scatters in float64: values and gradients."""
    g = torch.Generator().manual_seed(5)
    B, H, L, J, sizes = 2, 2, 5, 20, (4, 3)
    maps = [torch.randint(0, n, (B, L, J), generator=g) for n in sizes]
    index = torch.cat([maps[0], maps[1] + sizes[0], torch.full_like(maps[0], sum(sizes))], -1)  # (B, L, 3 J)
    allowed = torch.rand(B, L, J, generator=g) > 0.2
    ok = allowed.to(torch.int8) if masked else None
    groups = T.GroupIndex(index.to(torch.int32).contiguous().to(device), ok, sum(sizes) + 1)
    if masked:
        groups = groups._replace(ok=ok.to(device))
    x = torch.randn(B, H, L, J, generator=g, dtype=torch.float64) * 3
    x[torch.rand(B, H, L, J, generator=g) < 0.2] = float("-inf")  # empty joint buckets
    y = torch.randn(B, H, L, J, generator=g, dtype=torch.float64)
    w_lz, w_mean = (torch.randn(B, H, L, sum(sizes) + 1, generator=g, dtype=torch.float64) for _ in range(2))

    def loss(lz, mean):
        out = (lz.masked_fill(lz == float("-inf"), 0.0) * w_lz.to(lz)).sum()
        return out + (mean * w_mean.to(mean)).sum() if with_y else out

    xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
    rep = index.unsqueeze(1).expand(B, H, L, 3 * J)
    ok_r = None if not masked else allowed.repeat(1, 1, 3).unsqueeze(1).expand(B, H, L, 3 * J)
    ref = _reference_group_lse(xr.repeat(1, 1, 1, 3), yr.repeat(1, 1, 1, 3) if with_y else None, rep, 8, ok_r)
    loss(*ref).backward()
    xk = x.float().to(device).requires_grad_()
    yk = y.float().to(device).requires_grad_() if with_y else None
    got = T._GroupLogSumExp.apply(xk, yk, groups)
    loss(*got).backward()
    assert torch.equal(got[0].isinf().cpu(), ref[0].isinf()), "the same empty groups"
    assert (ref[0] == float("-inf")).any() and (ref[0] > float("-inf")).any()
    finite = ref[0] > float("-inf")
    assert torch.allclose(got[0].double().cpu()[finite], ref[0][finite], atol=1e-5, rtol=0)
    assert torch.allclose(xk.grad.double().cpu(), xr.grad, atol=1e-5, rtol=0)
    if with_y:
        assert torch.allclose(got[1].double().cpu(), ref[1], atol=1e-5, rtol=0)
        assert torch.allclose(yk.grad.double().cpu(), yr.grad, atol=1e-5, rtol=0)


def _reference_group_bias(terms, index, J: int, disallowed):
    """The slow reference of the table algebra's bias kernel: per joint bucket the log-sum-exp of its groups' terms
    (``index`` ``[B, L, C * J]``), -inf where none is finite, 0 in a row where none is, the fp32 minimum where
    ``disallowed``."""
    B, H, L, _ = terms.shape
    t = terms.gather(3, index.unsqueeze(1).expand(B, H, L, index.shape[-1])).unflatten(3, (-1, J))
    some = (t > float("-inf")).any(3)
    bias = torch.where(some, torch.logsumexp(t.masked_fill(~some.unsqueeze(3), 0.0), 3), float("-inf"))
    bias = bias.masked_fill(~some.any(-1, keepdim=True), 0.0)
    if disallowed is not None:
        bias = bias.masked_fill(disallowed.unsqueeze(1), torch.finfo(torch.float32).min)
    return bias


def _reference_terms(log_alpha, logz, phi, live):
    """The slow reference of the bias kernel's terms ``log(α / Z)`` per group (the partitions' on live heads where
    ``log α`` is finite, the full row's ``log(φ / Z)`` where ``φ > 0``) and the row weight ``Σ α + φ``."""
    H = logz.shape[1]
    valid = (log_alpha > float("-inf")).unsqueeze(1) & live.view(1, H, 1, 1)
    t = (log_alpha.unsqueeze(1) - logz[..., :-1]).masked_fill(~valid, float("-inf"))
    full = (phi.clamp(min=1e-300).log() - logz[..., -1]).masked_fill(phi <= 0, float("-inf"))
    weight = log_alpha.exp().sum(-1).unsqueeze(1) * live.view(1, H, 1) + phi
    return torch.cat([t, full.unsqueeze(-1)], -1), weight


@pytest.mark.parametrize("masked", [True, False])
def test_triton_group_bias_matches_a_gather_reference(device, masked):
    """The table algebra's bias kernel (the terms log(α / Z) of every group, on the live heads, and log(φ / Z) of the
    full row; per joint bucket the log-sum-exp of its group's term in each partition and the full row's; buckets and
    a whole row without any finite term, disallowed buckets; the row weight Σ α + φ) against float64 gathers:
    values and the gradients of log α, log Z and φ."""
    g = torch.Generator().manual_seed(6)
    B, H, L, J, sizes = 2, 3, 5, 20, (4, 3)
    G = sum(sizes) + 1
    maps = [torch.randint(0, n, (B, L, J), generator=g) for n in sizes]
    index = torch.cat([maps[0], maps[1] + sizes[0], torch.full_like(maps[0], sum(sizes))], -1)  # (B, L, 3 J)
    allowed = torch.rand(B, L, J, generator=g) > 0.2
    ok = allowed.to(torch.int8).to(device) if masked else None
    groups = T.GroupIndex(index.to(torch.int32).contiguous().to(device), ok, G)
    log_alpha = torch.randn(B, L, G - 1, generator=g, dtype=torch.float64) - 1
    log_alpha[torch.rand(log_alpha.shape, generator=g) < 0.5] = float("-inf")  # groups that are not candidates
    log_alpha[0, 2] = float("-inf")  # a row without a candidate ...
    logz = torch.randn(B, H, L, G, generator=g, dtype=torch.float64) * 3
    phi = torch.rand(B, H, L, generator=g, dtype=torch.float64)
    phi[torch.rand(phi.shape, generator=g) < 0.3] = 0.0
    phi[0, 1, 2] = 0.0  # ... and of weight 0 on head 1
    live = torch.tensor([True, True, False])  # head 2 reads only the full row (a LISA full head)
    w, w_weight = torch.randn(B, H, L, J, generator=g, dtype=torch.float64), torch.randn(B, H, L, generator=g)

    def loss(bias, weight):
        return (bias.masked_fill(bias == float("-inf"), 0.0) * w.to(bias)).sum() + (weight * w_weight.to(weight)).sum()

    ins = [log_alpha, logz, phi]
    ref_in = [x.clone().requires_grad_() for x in ins]
    terms, ref_w = _reference_terms(*ref_in, live)
    ref = _reference_group_bias(terms, index, J, ~allowed if masked else None)
    loss(ref, ref_w).backward()
    got_in = [x.float().to(device).requires_grad_() for x in ins]
    got, got_w = T._GroupBias.apply(*got_in, live.to(device), groups, J)
    loss(got, got_w).backward()
    assert torch.equal(got.isneginf().cpu(), ref.isneginf()) and ref.isneginf().any()
    assert (got[0, 1, 2] == 0).all() if not masked else (got[0, 1, 2][allowed[0, 2].to(device)] == 0).all()
    finite = ref > float("-inf")
    assert torch.allclose(got.double().cpu()[finite], ref[finite], atol=1e-5, rtol=0)
    assert torch.allclose(got_w.double().cpu(), ref_w, atol=1e-5, rtol=0)
    for x, r in zip(got_in, ref_in):
        assert torch.allclose(x.grad.double().cpu(), r.grad, atol=1e-5, rtol=0)
        assert r.grad.abs().sum() > 0


def test_triton_compact_index_dtype_and_cache():
    index = torch.randint(0, 100, (2, 5, 5))
    cache = {}
    small = T.compact_index(index, 100, cache)
    assert small.dtype == torch.int8 and torch.equal(small.long(), index)
    assert T.compact_index(index, 100, cache) is small, "converted once per forward"
    wide = torch.randint(0, 300, (2, 5, 5))
    assert T.compact_index(wide, 300, {}).dtype == torch.int16
    with pytest.raises(ConfigError, match="joint buckets"):
        T.compact_index(wide, 40000)


def test_triton_refuses_attention_dropout_in_training(device):
    inputs, _topical, parts, mask = random_setup(device=device, seed=0)
    opts = SyntaxAttentionOptions(implementation="triton")
    module = AttnStub().train()
    with pytest.raises(ConfigError, match="attention_probs_dropout_prob=0"):
        syntax_attention_forward(module, *inputs, mask, dropout=0.1, syntax_groups=parts, syntax_options=opts)
    syntax_attention_forward(module.eval(), *inputs, mask, dropout=0.1, syntax_groups=parts, syntax_options=opts)


def test_triton_refuses_other_devices():
    inputs, _topical, parts, _mask = random_setup(seed=0)
    with pytest.raises(ConfigError, match="implementation='fast'"):
        syntax_attention_forward(
            AttnStub(),
            *(x.to("meta") for x in inputs),
            None,
            syntax_options=SyntaxAttentionOptions(implementation="triton"),
            syntax_groups=prepare_groups([p.to("meta") for p in parts], num_buckets=6),
        )


def test_triton_recorder_matches_fast_recorder(device):
    """The recorder of a triton layer (computed beside it, densely) is the fast path's: attention, α, candidates."""
    inputs, topical, parts, mask = random_setup(device=device, seed=6)
    recs = {}
    for impl in ("fast", "triton"):
        recs[impl] = SyntaxAttentionRecorder()
        syntax_attention_forward(
            AttnStub(),
            *inputs,
            mask,
            syntax_groups=parts,
            syntax_topical=topical,
            syntax_options=SyntaxAttentionOptions(implementation=impl),
            syntax_gate=_gate(False, H=3, device=device),
            syntax_record=recs[impl],
        )
    for name in ("attentions", "topical", "candidates"):
        a, b = getattr(recs["fast"], name)[0], getattr(recs["triton"], name)[0]
        assert a.shape == b.shape and torch.allclose(a.float(), b.float(), atol=1e-5), name


def test_triton_on_the_cpu_without_the_interpreter_names_the_alternatives(monkeypatch):
    inputs, _topical, parts, mask = random_setup(seed=0)
    monkeypatch.setattr(T, "INTERPRETED", False)
    with pytest.raises(ConfigError, match="implementation='fast' or 'auto'"):
        syntax_attention_forward(
            AttnStub(),
            *inputs,
            mask,
            syntax_groups=parts,
            syntax_options=SyntaxAttentionOptions(implementation="triton"),
        )


def test_triton_interpreter_refuses_bf16():
    """Triton's CPU interpreter misreads bf16 tensors (silently wrong results): refused; bf16 is tested on CUDA."""
    if not T.INTERPRETED:
        pytest.skip("only the CPU interpreter refuses bf16")
    inputs, _topical, parts, mask = random_setup(seed=0)
    with pytest.raises(ConfigError, match="bf16"):
        syntax_attention_forward(
            AttnStub(),
            *(x.bfloat16() for x in inputs),
            mask,
            syntax_groups=parts,
            syntax_options=SyntaxAttentionOptions(implementation="triton"),
        )


def test_auto_keeps_fast_on_the_cpu_and_when_dropout_is_active():
    inputs, topical, parts, mask = random_setup(seed=2)
    auto = SyntaxAttentionOptions(implementation="auto")
    assert SA.resolve_implementation(auto, inputs[0], 0.0, AttnStub()).implementation == "fast"
    got, probs = syntax_attention_forward(
        AttnStub(), *inputs, mask, syntax_groups=parts, syntax_topical=topical, syntax_options=auto
    )
    want, _ = syntax_attention_forward(
        AttnStub(),
        *inputs,
        mask,
        syntax_groups=parts,
        syntax_topical=topical,
        syntax_options=SyntaxAttentionOptions(implementation="fast"),
    )
    assert probs is not None and torch.equal(got, want), "auto on the CPU is the fast path"
    meta = inputs[0].to("meta")
    assert SA.resolve_implementation(auto, meta, 0.0, AttnStub()).implementation == "fast"
    for impl in ("fast", "exact", "triton"):  # a concrete choice is never changed
        opts = SyntaxAttentionOptions(implementation=impl)
        assert SA.resolve_implementation(opts, inputs[0], 0.0, AttnStub()) is opts


def test_config_accepts_triton_and_auto():
    for impl in ("triton", "auto"):
        assert SyntaxBertConfig(encoder=tiny_bert(), implementation=impl).attention_options().implementation == impl
    with pytest.raises(ConfigError, match="auto"):
        SyntaxAttentionOptions(implementation="cuda")


# ---------------------------------------------------------------------------------------------------------------
# CUDA only
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_auto_picks_triton_on_cuda_without_dropout_or_a_bf16_gate():
    q = torch.zeros(1, 1, 2, 16, device="cuda")
    auto = SyntaxAttentionOptions(implementation="auto")
    assert SA.resolve_implementation(auto, q, 0.0, AttnStub()).implementation == "triton"
    assert SA.resolve_implementation(auto, q, 0.1, AttnStub().train()).implementation == "fast"
    assert SA.resolve_implementation(auto, q, 0.1, AttnStub().eval()).implementation == "triton"
    assert SA.resolve_implementation(auto, q, 0.0, AttnStub(), gated=True).implementation == "triton"
    half = q.bfloat16()
    assert SA.resolve_implementation(auto, half, 0.0, AttnStub()).implementation == "triton"
    assert SA.resolve_implementation(auto, half, 0.0, AttnStub(), gated=True).implementation == "fast"


@pytest.mark.gpu
@pytest.mark.parametrize(
    "aggregation,empty_rows,full_candidate,gated",
    [
        ("topical", "full", False, True),
        ("topical", "self", True, False),
        ("sum", "self", False, True),
        ("mean", "full", True, True),
    ],
)
def test_triton_matches_reference_on_cuda_in_fp32_long_rows(device, aggregation, empty_rows, full_candidate, gated):
    """197 tokens, head size 64: four 64-wide blocks, the last one partial, many joint buckets."""
    inputs, topical, parts, mask = random_setup(seed=31, B=2, H=2, L=197, d=64, device=device)
    opts = dict(aggregation=aggregation, empty_rows=empty_rows, full_attention_candidate=full_candidate)
    gate = _gate(True, H=2, device=device) if gated else None
    ref = _run("reference", inputs, topical, parts, mask, gate=gate, **opts)
    _assert_close(_run("triton", inputs, topical, parts, mask, gate=gate, **opts), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("L,d", [(64, 16), (100, 32)])
def test_triton_under_bf16_autocast_on_cuda_within_tolerance(device, gated, L, d):
    """bf16 q / k / v under autocast against the float64 reference of the same bf16-rounded inputs: outputs within
    ``BF16_OUT_ATOL``, each gradient within ``BF16_GRAD_RTOL`` relative (Frobenius) error."""
    inputs, topical, parts, mask = random_setup(seed=33, L=L, d=d, device=device, H=2)
    inputs = tuple(x.bfloat16() for x in inputs)
    gate = _gate(False, device=device) if gated else None
    ref_out, ref_grads = _run("reference", tuple(x.float() for x in inputs), topical, parts, mask, gate=gate)
    out, grads = _run("triton", inputs, topical, parts, mask, gate=gate, autocast=True)
    assert (out - ref_out).abs().max() <= BF16_OUT_ATOL, (out - ref_out).abs().max()
    for i, (x, y) in enumerate(zip(grads, ref_grads)):
        rel = (x - y).norm() / y.norm().clamp(min=1e-12)
        assert rel <= BF16_GRAD_RTOL, (i, float(rel))


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [dict(), dict(aggregation="sum", empty_rows="self", full_attention_candidate=True)])
def test_triton_model_matches_reference_on_cuda_in_fp32(device, opts):
    check_fast_matches_reference_on(device, dict(implementation="triton", encoder=tiny_bert(hidden_size=64), **opts))


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [dict(), dict(aggregation="sum", empty_rows="self")])
def test_triton_model_under_bf16_autocast_on_cuda(device, opts):
    """The fast path's bf16 model check: hidden-state and gradient errors at most twice the reference's own bf16
    error plus 2e-3."""
    from tests.modeling.test_modeling_syntax_bert import check_fast_under_bf16_autocast_on

    check_fast_under_bf16_autocast_on(device, dict(implementation="triton", **opts))


@pytest.mark.gpu
@pytest.mark.xfail(
    strict=False,
    reason="known weakness: the gate mixes two separately rounded "
    "bf16 outputs, so its gradient loses precision; auto uses fast there",
)
def test_triton_gated_model_under_bf16_autocast_on_cuda(device):
    """The same check with a per-head gate, whose gradient is checked on its own (a small difference)."""
    from tests.modeling.test_modeling_syntax_bert import check_fast_under_bf16_autocast_on

    check_fast_under_bf16_autocast_on(device, dict(implementation="triton", gate="head"))
