"""Syntax-BERT attention as fused Triton kernels (``SyntaxAttentionOptions(implementation="triton")``).

The algebra is the ``"flex"`` path's (see :mod:`syntaxformer.modeling.syntax_attention`, "A third, flex"): per query
row, the weighted mix of per-group softmaxes is one softmax with a per-(head, row, joint bucket) log-weight bias,
times the row's total weight. This module supplies the two passes over the ``L x L`` pairs that the flex path runs
with PyTorch ops and ``flex_attention``, as Triton kernels that never write a ``[B, H, L, L]`` tensor:

* **statistics pass** (:class:`_TritonPrepass`): per (batch, head, block of query rows) two sweeps over the key
  blocks, ``S = Q Kᵀ · scale`` recomputed in each: the per-(row, joint bucket) maximum, then the sums
  ``z_j = Σ_{k in j} exp(S_ik - max_j)`` and ``Σ_{k in j} exp(S_ik - max_j) w_k`` (``w_k = V_h[k] · u_h``, the
  topical scores are linear in the group outputs). Out come ``lz = log z + max - c`` and ``Y = Σ π w`` per joint
  bucket (``[B, H, L, J]``; each bucket with its own maximum, so no group underflows) and the per-row shift ``c``
  (the row's largest score). Backward: a row kernel (``dQ``) and a column kernel (``dK`` and ``dw``) with
  ``dS_ik = π_ik (dlz_j + dY_j (w_k - Y_j))``, ``π_ik = exp(S_ik - c_i - lz_j)``.
* **attention pass** (:class:`_TritonBiasedAttention`): flash-attention forward of ``softmax(S - c + b[joint]) V``
  (the bias gathered per pair from the row's ``J`` entries), keeping ``lse`` per row. The shift keeps ``S - c + b``
  at the size of the score gaps: ``S + b`` would round at the ulp of the scores themselves. Backward flash-style: a row
  kernel for ``dQ`` and the bias gradient ``db_ij = Σ_{k in j} P_ik (dO_i · V_k - D_i)`` (the per-row ``D`` of
  flash attention, summed per bucket), a column kernel for ``dK`` and ``dV``.

Between the two passes the ``[B, H, L, J]`` tables go through the flex path's PyTorch algebra (log-sum-exp per
group, topical weights, the bias), with autograd.

**Relation ids: a compact table, not recomputed per pair.** The kernels read the joint-bucket index of every pair
(``[B, L, L]``; int8 when there are at most 127 joint buckets per row, else int16), built once per forward from the
partitions and the padding mask and shared by every layer. The alternative, recomputing each pair's groups from the
per-token tree features (``dep_*`` / ``con_*``, O(L·D) inputs), costs about ``4 (D + 1)`` integer comparisons per
pair and partition per sweep (the ancestor-interval test of :func:`syntaxformer.masks.relations.relation_groups`,
D = 15), then the joint combination of the partitions, in each of the seven sweeps; it would also tie the kernels
to one relation definition, while the attention takes any ``[B, L, L]`` partitions (the tests use random ones). One
byte per pair read per sweep is ``B·L²`` bytes (8 MB at 32 x 512), against the ``B·H·L²`` fp32 entries that the
``fast`` path writes and reads per pass. This choice is argued, not measured: the table against on-the-fly ids can
only be timed on a GPU (the CPU interpreter's timings say nothing about GPU speed).

**Cost** (argued from the structure; no GPU has timed it): seven sweeps over the pairs per layer forward + backward
(flash attention: three), each with one ``Q Kᵀ`` tile product on the tensor cores. The per-bucket reductions (both
statistics sweeps and the attention backward's row kernel) loop over the joint buckets of a tile on the GPU (a
``[BM, BN, J]`` one-hot tile does not fit in registers) up to the tile's largest bucket id, about 3 simple
operations per pair and bucket: one iteration for a tile without any relation (ids rank "no group" first), up to
``J`` (~48-64) near the diagonal, where they, not the matrix products, are expected to dominate. Tile sizes per
kernel were chosen by compiling for sm_90 without a GPU and reading ptxas' register / spill report
(:data:`_HALF_CONFIGS`).

The kernels themselves are in :mod:`syntaxformer.modeling.syntax_attention_triton_forward` and
:mod:`syntaxformer.modeling.syntax_attention_triton_backward`; this module checks the inputs, picks the tiles,
launches the kernels and wraps them in autograd functions (:func:`prepass`, :func:`context`).

Not supported (refused with :class:`~syntaxformer.errors.ConfigError`): attention-probability dropout in training.
Everything else of the ``fast`` path (aggregations, empty-row modes, ``full_attention_candidate``, gate per layer or
head, LISA existing or added, padding, any partitions) runs through the flex path's wrapper, which this module
plugs into. On the CPU the kernels run only under Triton's interpreter (``TRITON_INTERPRET=1`` set before this
module is imported; the tests do), which is for correctness only.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import torch
from torch import nn

from syntaxformer.errors import ConfigError

try:  # triton is optional (the ``dev`` extra installs it; CUDA builds of torch ship it)
    import triton
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = None

if triton is not None:  # the kernels are built here, at import (under the interpreter with TRITON_INTERPRET=1)
    from syntaxformer.modeling.syntax_attention_triton_backward import (
        _attn_bwd_cols_kernel,
        _attn_bwd_rows_kernel,
        _prepass_bwd_cols_kernel,
        _prepass_bwd_rows_kernel,
    )
    from syntaxformer.modeling.syntax_attention_triton_forward import (
        _attn_fwd_kernel,
        _prepass_max_kernel,
        _prepass_sum_kernel,
    )


#: The kernels were built for Triton's CPU interpreter (``TRITON_INTERPRET=1`` when this module was imported).
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"

#: How the kernels sum (and take the maximum of) a tile per joint bucket: one ``[BM, BN, JP]`` one-hot comparison
#: (True: the interpreter, where each operation costs the same whatever its size) or a loop over the buckets
#: (False: the GPU, where a ``[BM, BN, JP]`` tile would not fit in registers). Both are exact; the tests run the
#: loop under the interpreter too.
ONE_HOT = INTERPRETED


def available() -> bool:
    """Whether triton can be imported (the fused kernels exist)."""
    return triton is not None


def check(query: torch.Tensor, dropout: float, module: nn.Module) -> None:
    """Refuse what the Triton path cannot run, naming what would work."""
    if triton is None:
        raise ConfigError(
            "implementation='triton' needs the triton package (pip install triton, or the dev extra "
            "of syntaxformer; CUDA builds of torch ship it); use implementation='fast' or 'auto'"
        )
    if query.device.type == "cpu" and not INTERPRETED:
        raise ConfigError(
            "implementation='triton' runs on CUDA; on the CPU only under Triton's interpreter "
            "(TRITON_INTERPRET=1 set before syntaxformer.modeling.syntax_attention_triton is imported; "
            "for tests, slow); use implementation='fast' or 'auto' on the CPU"
        )
    if query.device.type == "cpu" and query.dtype not in (torch.float32, torch.float64):
        raise ConfigError(
            f"implementation='triton' in Triton's CPU interpreter takes fp32 inputs, got {query.dtype} "
            "(the interpreter misreads bf16 tensors); run bf16 on CUDA or use implementation='fast'"
        )
    if query.device.type not in ("cuda", "cpu"):
        raise ConfigError(
            f"implementation='triton' runs on CUDA, not on {query.device.type}; use implementation='fast'"
        )
    if dropout > 0 and module.training:
        raise ConfigError(
            f"implementation='triton' has no attention-probability dropout; set the encoder's "
            f"attention_probs_dropout_prob=0 (got {dropout}) or use implementation='fast'"
        )


class _Compact(NamedTuple):
    """The joint-bucket index of a forward in the kernels' dtype (kept in ``SyntaxGroups.cache``)."""

    source: torch.Tensor  # the int64 index it was made from (identity = cache key)
    compact: torch.Tensor  # (B, L, L) int8 / int16, contiguous


def compact_index(index: torch.Tensor, size: int, cache: dict | None = None) -> torch.Tensor:
    """The ``[B, L, L]`` joint-bucket index as int8 (at most 127 buckets) or int16, contiguous; once per forward
    when ``cache`` (the groups' per-forward memo) is given."""
    hit = None if cache is None else cache.get("triton")
    if hit is not None and hit.source is index:
        return hit.compact
    if size > torch.iinfo(torch.int16).max:
        raise ConfigError(
            f"implementation='triton' takes at most {torch.iinfo(torch.int16).max} joint buckets per "
            f"row, got {size}; use implementation='fast'"
        )
    dtype = torch.int8 if size <= torch.iinfo(torch.int8).max else torch.int16
    out = index.to(dtype).contiguous()
    if cache is not None:
        cache["triton"] = _Compact(index, out)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Launch helpers and autograd functions
# ---------------------------------------------------------------------------------------------------------------


def _pow2(n: int, least: int = 16) -> int:
    return max(least, 1 << max(0, int(n) - 1).bit_length())


#: Tiles and launch settings per kernel for 16-bit inputs with head size <= 64: ``(BM, BN, num_warps, num_stages)``
#: (BM: query rows, BN: keys). Chosen without a GPU, by compiling every kernel for sm_90 here and reading ptxas'
#: register / spill report (bf16, head size 32 and 64, 64 joint-bucket columns;
#: ``experiments/triton_compile_report.py``): the largest tiles that spill no register. Whether they are the fastest
#: is for a GPU run to tell. fp32 tiles (FMA dot products, or TF32), larger heads and anything else use 32 x 32
#: tiles with 8 warps and 2 stages (no spill at head size <= 64).
_HALF_CONFIGS = {
    "prepass_max": (64, 64, 8, 2),
    "prepass_sum": (64, 64, 8, 2),
    "prepass_bwd_rows": (32, 32, 8, 2),
    "prepass_bwd_cols": (64, 64, 8, 2),
    "attn_fwd": (64, 32, 4, 2),
    "attn_bwd_rows": (32, 32, 8, 2),
    "attn_bwd_cols": (64, 64, 8, 2),
}
_SMALL_CONFIG = (32, 32, 8, 2)


def _config(kernel: str, d: int, dtype: torch.dtype) -> tuple[int, int, int, dict]:
    """``(BM, BN, BD, launch kwargs)`` of ``kernel``; 32 x 32 tiles in the interpreter (its cost is per operation,
    not per element)."""
    BD = _pow2(d)
    if INTERPRETED:
        return 32, 32, BD, {}
    half = dtype in (torch.bfloat16, torch.float16) and BD <= 64
    BM, BN, warps, stages = _HALF_CONFIGS[kernel] if half else _SMALL_CONFIG
    return BM, BN, BD, {"num_warps": warps, "num_stages": stages}


def _precision(x: torch.Tensor) -> str:
    """``tl.dot``'s input precision: fp32 tiles go through the tensor cores as TF32 only where torch's matmuls may
    (full fp32, ``"ieee"``, by default and always on the CPU); 16-bit tiles get Triton's default (``"tf32"``, which
    only concerns fp32 operands)."""
    if x.dtype != torch.float32:
        return "tf32"
    if x.device.type == "cuda" and torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return "ieee"


def _strides(x: torch.Tensor) -> tuple[int, int, int, int]:
    s0, s1, s2, s3 = (int(s) for s in x.stride())
    return s0, s1, s2, s3


def _unpad(x: torch.Tensor, d: int) -> torch.Tensor:
    """``[B, H, L, BD]`` kernel output -> ``[B, H, L, d]``."""
    return x if x.shape[-1] == d else x[..., :d]


class _TritonPrepass(torch.autograd.Function):
    """``(lz - c, Y, c)``: the flex pre-pass's tables ``[B, H, L, J]`` per joint bucket from the statistics kernels,
    the log-sums shifted by a per-row constant ``c`` ``[B, H, L]`` (the row's largest score; no gradient).

    The shift keeps the attention pass exact at large scores: it computes ``(S - c) + b`` with ``b`` built from
    the shifted log-sums, all of the size of the score *gaps*, where ``S + b`` would add two numbers of the size of
    the scores (and their rounding). The flex algebra between the passes is shift-equivariant (log-sum-exps and
    differences of them), and the attention pass subtracts the same ``c``, so the result is unchanged."""

    @staticmethod
    def forward(ctx, query, key, w, index, size, scaling):  # noqa: D102
        B, H, L, d = query.shape
        J = int(size)
        JP = _pow2(J, 1)
        prec = _precision(query)
        dev = query.device
        mx = torch.empty(B, H, L, J, device=dev, dtype=torch.float32)
        lz = torch.empty_like(mx)
        shift = torch.empty(B, H, L, device=dev, dtype=torch.float32)
        y = torch.zeros_like(mx) if w is not None else None
        wc = w.float().contiguous() if w is not None else None
        args = (*_strides(query), *_strides(key), H, L, J, d, float(scaling))
        BM, BN, BD, launch = _config("prepass_max", d, query.dtype)
        _prepass_max_kernel[(triton.cdiv(L, BM), B * H)](
            query, key, index, mx, *args, BM=BM, BN=BN, BD=BD, JP=JP, PREC=prec, ONE_HOT=ONE_HOT, **launch
        )
        BM, BN, BD, launch = _config("prepass_sum", d, query.dtype)
        _prepass_sum_kernel[(triton.cdiv(L, BM), B * H)](
            query,
            key,
            wc if wc is not None else mx,
            index,
            mx,
            lz,
            y if y is not None else mx,
            shift,
            *args,
            HAS_W=w is not None,
            BM=BM,
            BN=BN,
            BD=BD,
            JP=JP,
            PREC=prec,
            ONE_HOT=ONE_HOT,
            **launch,
        )
        ctx.save_for_backward(query, key, wc, index, lz, y, shift)
        ctx.scaling = float(scaling)
        ctx.mark_non_differentiable(shift)
        return lz, (y if y is not None else torch.zeros(0, device=dev)), shift

    @staticmethod
    def backward(ctx, d_lz, d_y, d_shift):  # noqa: D102
        query, key, w, index, lz, y, shift = ctx.saved_tensors
        B, H, L, d = query.shape
        J = lz.shape[-1]
        BD = _pow2(d)
        prec = _precision(query)
        has_w = w is not None
        d_lz = torch.zeros_like(lz) if d_lz is None else d_lz.float()
        has_w_grad = has_w and d_y is not None and d_y.numel() > 0
        if has_w_grad:
            d_y = d_y.float().contiguous()
            a = d_lz - d_y * y  # dS = π (a_j + dY_j w_k)
        else:
            a = d_lz
        a = torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0).contiguous()  # empty buckets: no pair reads them
        dq = torch.empty(B, H, L, BD, device=query.device, dtype=torch.float32)
        dk = torch.empty_like(dq)
        dw = torch.empty(B, H, L, device=query.device, dtype=torch.float32) if has_w_grad else None
        args = (*_strides(query), *_strides(key), H, L, J, d, ctx.scaling)
        w_arg = w if has_w_grad else lz
        dy_arg = d_y if has_w_grad else lz
        BM, BN, BD, launch = _config("prepass_bwd_rows", d, query.dtype)
        _prepass_bwd_rows_kernel[(triton.cdiv(L, BM), B * H)](
            query,
            key,
            w_arg,
            index,
            lz,
            shift,
            a,
            dy_arg,
            dq,
            *args,
            HAS_W=has_w_grad,
            BM=BM,
            BN=BN,
            BD=BD,
            PREC=prec,
            **launch,
        )
        BM, BN, BD, launch = _config("prepass_bwd_cols", d, query.dtype)
        _prepass_bwd_cols_kernel[(triton.cdiv(L, BN), B * H)](
            query,
            key,
            w_arg,
            index,
            lz,
            shift,
            a,
            dy_arg,
            dk,
            dw if dw is not None else lz,
            *args,
            HAS_W=has_w_grad,
            BM=BM,
            BN=BN,
            BD=BD,
            PREC=prec,
            **launch,
        )
        grad_w = None
        if has_w:
            grad_w = dw if dw is not None else torch.zeros_like(w)
        return (_unpad(dq, d).to(query.dtype), _unpad(dk, d).to(key.dtype), grad_w, None, None, None)


def prepass(
    query: torch.Tensor,
    key: torch.Tensor,
    w: torch.Tensor | None,
    scaling: float,
    joint: Any,
    cache: dict | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """``(lz - c, Y, c)``: the flex path's ``_flex_prepass`` tables ``[B, H, L, J]`` (Y None without ``w``), fused,
    with the log-sums shifted by the per-row ``c`` ``[B, H, L]`` that :func:`context` takes back
    (:class:`_TritonPrepass`). ``joint`` is the flex path's joint index (its int64 index is converted once per
    forward, kept in ``cache``, the groups' per-forward memo)."""
    index = compact_index(joint.buckets, joint.size, cache)
    lz, y, shift = _TritonPrepass.apply(query, key.to(query.dtype), w, index, joint.size, scaling)
    return lz, (y if w is not None else None), shift


class _TritonBiasedAttention(torch.autograd.Function):
    """``softmax(S + bias[b, h, i, index[b, i, k]]) V`` ``[B, H, L, d]`` with gradients for q, k, v and the bias."""

    @staticmethod
    def forward(ctx, query, key, value, bias, shift, index, scaling):  # noqa: D102
        B, H, L, d = query.shape
        J = bias.shape[-1]
        BM, BN, BD, launch = _config("attn_fwd", d, query.dtype)
        prec = _precision(query)
        bias_c = bias.float().contiguous()
        out = torch.empty(B, H, L, BD, device=query.device, dtype=value.dtype)
        lse = torch.empty(B, H, L, device=query.device, dtype=torch.float32)
        _attn_fwd_kernel[(triton.cdiv(L, BM), B * H)](
            query,
            key,
            value,
            index,
            bias_c,
            shift,
            out,
            lse,
            *_strides(query),
            *_strides(key),
            *_strides(value),
            H,
            L,
            J,
            d,
            float(scaling),
            BM=BM,
            BN=BN,
            BD=BD,
            PREC=prec,
            **launch,
        )
        ctx.save_for_backward(query, key, value, index, bias_c, shift, out, lse)
        ctx.scaling = float(scaling)
        return _unpad(out, d)

    @staticmethod
    def backward(ctx, d_out):  # noqa: D102
        query, key, value, index, bias, shift, out, lse = ctx.saved_tensors
        B, H, L, d = query.shape
        J = bias.shape[-1]
        BD = _pow2(d)
        prec = _precision(query)
        do = torch.zeros(B, H, L, BD, device=query.device, dtype=torch.float32)
        do[..., :d] = d_out
        delta = (do * out.float()).sum(-1).contiguous()  # (B, H, L) D_i = dO_i · O_i
        dq = torch.empty(B, H, L, BD, device=query.device, dtype=torch.float32)
        dk, dv = torch.empty_like(dq), torch.empty_like(dq)
        db = torch.empty_like(bias)
        args = (*_strides(query), *_strides(key), *_strides(value), H, L, J, d, ctx.scaling)
        BM, BN, BD, launch = _config("attn_bwd_rows", d, query.dtype)
        _attn_bwd_rows_kernel[(triton.cdiv(L, BM), B * H)](
            query,
            key,
            value,
            index,
            bias,
            shift,
            lse,
            do,
            delta,
            dq,
            db,
            *args,
            BM=BM,
            BN=BN,
            BD=BD,
            JP=_pow2(J, 1),
            PREC=prec,
            ONE_HOT=ONE_HOT,
            **launch,
        )
        BM, BN, BD, launch = _config("attn_bwd_cols", d, query.dtype)
        _attn_bwd_cols_kernel[(triton.cdiv(L, BN), B * H)](
            query,
            key,
            value,
            index,
            bias,
            shift,
            lse,
            do,
            delta,
            dk,
            dv,
            *args,
            BM=BM,
            BN=BN,
            BD=BD,
            PREC=prec,
            **launch,
        )
        return (
            _unpad(dq, d).to(query.dtype),
            _unpad(dk, d).to(key.dtype),
            _unpad(dv, d).to(value.dtype),
            db,
            None,
            None,
            None,
        )


def context(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    bias: torch.Tensor,
    joint: Any,
    scaling: float,
    lz: torch.Tensor,
    shift: torch.Tensor,
    cache: dict | None = None,
) -> torch.Tensor:
    """``softmax_k(S[b,h,i,k] - c[b,h,i] + bias[b,h,i,index[b,i,k]]) V`` ``[B, H, L, d]`` (the flex path's
    ``_flex_context``, fused; ``c`` = ``shift`` from :func:`prepass`, a per-row constant that cancels in the
    softmax; ``lz`` is not needed: the bias gradient comes from the attention kernel's own backward)."""
    compact = compact_index(joint.buckets, joint.size, cache)
    # one dtype for the tiles (tl.dot takes equal operand types); under autocast q, k, v are all bf16 already
    return _TritonBiasedAttention.apply(
        query, key.to(query.dtype), value.to(query.dtype), bias, shift, compact, scaling
    )
