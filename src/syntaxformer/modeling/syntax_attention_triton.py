"""The ``"triton"`` backend of the Syntax-BERT attention: fused Triton kernels that never write a ``[B, H, L, L]``
tensor (CUDA; on the CPU only under Triton's interpreter, ``TRITON_INTERPRET=1`` set before this module is
imported, for tests). The algebra, the sweeps and their costs: ``docs/syntax_bert.md`` ("Implementations") and
``docs/benchmarks.md``.

In short, ``A V = W · softmax_k(S - c + b[j]) V`` with one bias ``b`` per (head, row, joint bucket ``j``) and the
row weight ``W``: a statistics sweep gives the log-sums and topical sums per joint bucket, the table algebra
(:func:`_syntax_context`) turns them into ``b`` and ``W``, an attention sweep applies them; the backward takes a
row sweep and a column sweep (:class:`_TritonSyntaxContext`). Tiles without a related pair are skipped where no
row reads the full softmax (:func:`tile_descriptors`). The kernels are in
:mod:`syntaxformer.modeling.syntax_attention_triton_forward` and
:mod:`syntaxformer.modeling.syntax_attention_triton_backward`; this module checks the inputs, picks the tiles,
launches the kernels and wraps them in autograd functions.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from syntaxformer.errors import ConfigError
from syntaxformer.modeling.syntax_attention_core import (
    JointIndex,
    SyntaxCall,
    SyntaxGroups,
    added_head_context,
    allowed_keys,
    attention_scores,
    cached_group_counts,
    candidates,
    full_weight,
    joint_buckets,
    layer_gate,
    per_forward,
    plain_attention,
    read_call,
    topical_key_values,
)
from syntaxformer.modeling.syntax_attention_exact import exact_attention, record_syntax_layer

try:  # triton is optional (the ``dev`` extra installs it; CUDA builds of torch ship it)
    import triton
except ImportError:  # pragma: no cover - exercised where triton is absent
    triton = None

if triton is not None:  # the kernels are built here, at import (under the interpreter with TRITON_INTERPRET=1)
    from syntaxformer.modeling.syntax_attention_triton_backward import (
        attn_bwd_rows_kernel,
        bwd_cols_kernel,
        group_bias_bwd_kernel,
        group_lse_bwd_kernel,
    )
    from syntaxformer.modeling.syntax_attention_triton_forward import (
        attn_fwd_kernel,
        group_bias_kernel,
        group_lse_kernel,
        prepass_sum_kernel,
    )


#: The kernels were built for Triton's CPU interpreter (``TRITON_INTERPRET=1`` when this module was imported).
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"

#: How the kernels sum (and take the maximum of) a tile per joint bucket: one ``[BM, BN, JP]`` one-hot comparison
#: (True: the interpreter, where each operation costs the same whatever its size) or a loop over the buckets
#: (False: the GPU, where a ``[BM, BN, JP]`` tile would not fit in registers). Both are exact; the tests run the
#: loop under the interpreter too.
ONE_HOT = INTERPRETED

#: The joint-bucket tables are padded to a multiple of this many buckets (a handful of table shapes, not one per
#: batch).
_PAD = 16


def triton_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The ``"syntax_triton"`` attention function (``AttentionInterface`` signature; the syntax keyword arguments
    are those of :func:`syntaxformer.modeling.syntax_attention.syntax_attention_forward`): the same output
    ``[B, L, H, d]`` as the dense backends and no attention weights (as SDPA; the LISA layer outside the syntax
    layers runs densely); no ``[B, H, L, L]`` tensor except the recorder's (analysis)."""
    call = read_call(module, query, key, scaling, **kwargs)
    if call.plain:
        return plain_attention(module, query, key, value, attention_mask, dropout, call)
    if call.groups is None:  # the LISA layer outside the syntax layers: every head attends as usual, densely
        return exact_attention(module, query, key, value, attention_mask, scaling, dropout, **kwargs)
    check(query, dropout, module)
    B, H, L, d = query.shape
    scaling = call.scaling
    full_heads = None if call.lisa is None else call.lisa.record(query, key, attention_mask, scaling)
    w = topical_key_values(module, value, call, full_heads)  # (B, H, L) or None
    syn = _syntax_context(query, key, value, attention_mask, call, w, full_heads)  # (B, H, L, d)
    topical = call.topical
    if topical is not None and topical.own_projections and call.opts.aggregation == "topical":
        assert call.layer is not None  # for the type checker: topical_key_values refused a layer without one
        flat = topical.values(call.layer, syn.transpose(1, 2).reshape(B, L, H * d))  # (B, L, H*d)
        syn = flat.view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
    gate = layer_gate(module, call)
    if gate is not None:
        allowed = allowed_keys(attention_mask, B, L)  # a bool mask whatever the host's form (SDPA: bool or q's dtype)
        base = F.scaled_dot_product_attention(
            query, key, value, scale=scaling, attn_mask=None if allowed is None else allowed.unsqueeze(1)
        )  # (B, H, L, d)
        syn = base + gate.to(syn.dtype) * (syn.to(base.dtype) - base)
    if call.record is not None and call.layer is not None:
        record_syntax_layer(call, attention_scores(query, key, scaling), attention_mask, w, full_heads, gate=gate)
    out = syn.to(value.dtype).transpose(1, 2)  # (B, L, H, d)
    if call.lisa is not None and call.lisa.added is not None:
        out = out + added_head_context(module, call.lisa, value, dropout)
    return out.contiguous(), None


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


def _joint_with_mask(groups: SyntaxGroups, mask: torch.Tensor | None, allowed: torch.Tensor | None) -> JointIndex:
    """Joint buckets of the partitions' raw group ids and the mask (a last component: 1 = disallowed pair), ``J``
    padded to ``_PAD``; once per forward and mask (:func:`~syntaxformer.modeling.syntax_attention_core.per_forward`)."""

    def compute() -> JointIndex:
        index, sizes = list(groups.partitions), list(groups.num_buckets)
        if allowed is not None:
            index.append((~allowed).long())
            sizes.append(2)
        return joint_buckets(index, sizes, pad=_PAD)

    return per_forward(groups.cache, "pairs", mask, compute)


#: Tile descriptor bits (:func:`tile_descriptors`): the kernels skip a tile with ``SKIP`` and read one bucket id per
#: row (a per-row scalar instead of a per-pair index; one reduction instead of a bucket loop) in a ``UNIFORM`` one.
SKIP, UNIFORM = 1, 2


def tile_descriptors(
    groups: SyntaxGroups,
    joint: JointIndex,
    allowed: torch.Tensor | None,
    BM: int,
    BN: int,
    skip: bool,
    cache: dict | None = None,
) -> torch.Tensor:
    """Per (example, block of ``BM`` query rows, block of ``BN`` keys) an int8 of :data:`SKIP` / :data:`UNIFORM`
    bits ``[B, ceil(L / BM), ceil(L / BN)]``, contiguous; once per forward, tile shape and ``skip`` with a ``cache``
    (the groups' per-forward memo). ``SKIP`` (only when ``skip``): no allowed pair of the tile has a group in any
    partition (such pairs only feed the full softmax, which a layer run with ``skip`` never reads). ``UNIFORM``:
    every row of the tile holds one joint bucket (over its keys below ``L``)."""

    def compute() -> torch.Tensor:
        buckets = compact_index(joint.buckets, joint.size, cache)  # int8 / int16: the padded copies below stay small
        B, L, _ = buckets.shape
        nq, nk = -(-L // BM), -(-L // BN)
        grid = (B, nq, BM, nk, BN)
        hi = buckets.new_full((B, nq * BM, nk * BN), -1)
        hi[:, :L, :L] = buckets
        lo = buckets.new_full((B, nq * BM, nk * BN), torch.iinfo(buckets.dtype).max)
        lo[:, :L, :L] = buckets
        top, bottom = hi.view(grid).amax(4), lo.view(grid).amin(4)  # (B, nq, BM, nk) per row of each tile
        uniform = ((top == bottom) | (top < 0)).all(2)  # (B, nq, nk); rows beyond L hold no pair
        desc = uniform.to(torch.int8) * UNIFORM
        if skip:
            related = torch.zeros(B, nq * BM, nk * BN, dtype=torch.bool, device=buckets.device)
            inner = related[:, :L, :L]
            for g in groups.partitions:
                inner |= g > 0
            if allowed is not None:
                inner &= allowed
            desc = desc | (~related.view(grid).any(4).any(2)).to(torch.int8) * SKIP
        return desc.contiguous()

    return per_forward(cache, ("tiles", BM, BN, skip), joint.buckets, compute)


def _plain_rows(
    context: torch.Tensor,
    rows: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    allowed: torch.Tensor | None,
    scaling: float,
    cache: dict | None,
    source: object,
) -> torch.Tensor:
    """``context`` ``[B, H, L, d]`` with the rows ``rows`` (``[B, L]`` bool; zero in ``context``) set to plain
    attention over their allowed keys: SDPA on those rows only, gathered and padded to the largest count of an
    example (one host sync per forward with a ``cache``, keyed with ``source``, what ``rows`` derive from)."""
    index = per_forward(cache, "plain_rows", source, lambda: _row_index(rows))
    B, H, L, d = context.shape
    n = index.shape[1]
    if n == 0:
        return context
    safe = index.clamp(max=L - 1)
    q = query.gather(2, safe.view(B, 1, n, 1).expand(B, H, n, query.shape[-1]))
    mask = None if allowed is None else allowed.gather(1, safe.unsqueeze(-1).expand(B, n, L)).unsqueeze(1)
    out = F.scaled_dot_product_attention(q, key.to(q.dtype), value.to(q.dtype), attn_mask=mask, scale=scaling)
    out = out.to(context.dtype) * (index < L).view(B, 1, n, 1)  # the padding adds 0 (to row L - 1)
    return context.scatter_add(2, safe.view(B, 1, n, 1).expand(B, H, n, d), out)


def _row_index(rows: torch.Tensor) -> torch.Tensor:
    """``[B, n]`` each example's rows of ``rows`` (``[B, L]`` bool) in order, padded with ``L`` (a dummy row beyond
    the sequence) to the largest count ``n`` (one host sync)."""
    L = rows.shape[1]
    n = int(rows.sum(-1).max()) if rows.numel() else 0
    return torch.where(rows, torch.arange(L, device=rows.device), L).sort(-1).values[:, :n]


class GroupIndex(NamedTuple):
    """Per row, each joint bucket's group in every partition, numbered across the partitions (partition ``p``'s
    groups after those of the partitions before it), then the full row (one group, the last), the partitions'
    copies of the ``J`` buckets side by side (:func:`group_index`)."""

    compact: torch.Tensor  # (B, L, (P+1) J) int32, contiguous
    ok: torch.Tensor | None  # (B, L, J) int8: 1 = an allowed bucket; None without a mask
    size: int  # the number of groups, the full row's included


def group_index(groups: SyntaxGroups, joint: JointIndex, allowed: torch.Tensor | None) -> GroupIndex:
    """:class:`GroupIndex` of a forward's joint buckets, once per forward (kept in ``groups.cache`` with the joint
    index)."""
    return per_forward(groups.cache, "group_index", joint.buckets, lambda: _group_index(groups, joint, allowed))


def _group_index(groups: SyntaxGroups, joint: JointIndex, allowed: torch.Tensor | None) -> GroupIndex:
    parts, start = [], 0
    for m, n in zip(joint.maps, groups.num_buckets):
        parts.append(m + start)
        start += n
    parts.append(torch.full_like(joint.maps[0], start))
    ok = None if allowed is None else (joint.maps[-1] == 0).to(torch.int8).contiguous()
    return GroupIndex(torch.cat(parts, -1).to(torch.int32).contiguous(), ok, start + 1)


class _GroupLogSumExp(torch.autograd.Function):
    """``(log Z, mean)`` ``[B, H, L, G]`` per group of the joint buckets' log-sums ``x`` and means ``y``
    ``[B, H, L, J]`` (:func:`group_lse_kernel`; ``mean`` empty without ``y``)."""

    @staticmethod
    def forward(ctx, x, y, groups):  # noqa: D102
        B, H, L, J = x.shape
        G = groups.size
        x = x.float().contiguous()
        y = None if y is None else y.float().contiguous()
        lz = torch.empty(B, H, L, G, device=x.device, dtype=torch.float32)
        mean = torch.empty_like(lz) if y is not None else torch.zeros(0, device=x.device)
        copies = groups.compact.shape[-1] // J
        ok = groups.ok if groups.ok is not None else groups.compact
        meta = dict(HAS_Y=y is not None, HAS_OK=groups.ok is not None, COPIES=copies, JP=_pow2(J, 1))
        args = (x, y if y is not None else x, groups.compact, ok)
        group_lse_kernel[(B * H * L,)](*args, lz, mean if y is not None else lz, H, L, J, G, GP=_pow2(G, 1), **meta)
        ctx.save_for_backward(x, y, lz, mean if y is not None else None)
        ctx.groups, ctx.meta = groups, meta
        return lz, mean

    @staticmethod
    def backward(ctx, d_lz, d_mean):  # noqa: D102
        x, y, lz, mean = ctx.saved_tensors
        groups = ctx.groups
        B, H, L, J = x.shape
        G = groups.size
        d_lz = torch.zeros_like(lz) if d_lz is None else d_lz.float().contiguous()
        has_y = y is not None and d_mean is not None and d_mean.numel() > 0
        meta = {**ctx.meta, "HAS_Y": has_y}
        dx = torch.empty_like(x)
        dy = torch.empty_like(x) if has_y else None
        ok = groups.ok if groups.ok is not None else groups.compact
        ys = (y, mean, d_mean.float().contiguous(), dy) if has_y else (x, lz, d_lz, dx)
        group_lse_bwd_kernel[(B * H * L,)](
            x, ys[0], groups.compact, ok, lz, ys[1], d_lz, ys[2], dx, ys[3], H, L, J, G, **meta
        )
        grad_y = None if y is None else (dy if dy is not None else torch.zeros_like(y))
        return dx, grad_y, None


class _GroupBias(torch.autograd.Function):
    """The bias ``[B, H, L, J]`` per joint bucket and the row weight ``W`` ``[B, H, L]`` from the groups' weights and
    log-sums (:func:`group_bias_kernel`): per bucket the log-sum-exp of its groups' terms ``log(α / Z)`` in every
    partition and the full row's ``log(φ / Z_full)``; ``W = Σ α + φ``. Inputs: ``log α`` ``[B, L, G - 1]`` of the
    partitions' groups (-inf: not a candidate), ``log Z`` ``[B, H, L, G]`` (the full row last), ``φ`` ``[B, H, L]``
    and the heads that read the groups, ``live`` ``[H]`` (bool)."""

    @staticmethod
    def forward(ctx, log_alpha, logz, phi, live, groups, size):  # noqa: D102
        B, H, L, G = logz.shape
        J = int(size)
        args = (log_alpha.float().contiguous(), logz.float().contiguous(), phi.float().contiguous())
        live8 = live.to(torch.int8)
        bias = torch.empty(B, H, L, J, device=logz.device, dtype=torch.float32)
        weight = torch.empty(B, H, L, device=logz.device, dtype=torch.float32)
        copies = groups.compact.shape[-1] // J
        meta = dict(HAS_OK=groups.ok is not None, COPIES=copies, JP=_pow2(J, 1), GP=_pow2(G, 1))
        ok = groups.ok if groups.ok is not None else groups.compact
        group_bias_kernel[(B * H * L,)](*args, live8, groups.compact, ok, bias, weight, H, L, J, G, **meta)
        ctx.save_for_backward(*args, live8, bias)
        ctx.groups, ctx.meta = groups, meta
        return bias, weight

    @staticmethod
    def backward(ctx, d_bias, d_weight):  # noqa: D102
        log_alpha, logz, phi, live8, bias = ctx.saved_tensors
        groups = ctx.groups
        B, H, L, G = logz.shape
        J = bias.shape[-1]
        d_bias = torch.zeros_like(bias) if d_bias is None else d_bias.float().contiguous()
        d_weight = torch.zeros_like(phi) if d_weight is None else d_weight.float().contiguous()
        d_la, d_lz, d_phi = torch.zeros_like(log_alpha), torch.empty_like(logz), torch.empty_like(phi)
        ok = groups.ok if groups.ok is not None else groups.compact
        grads = (d_la, d_lz, d_phi)
        group_bias_bwd_kernel[(B * H * L,)](
            log_alpha, logz, phi, live8, groups.compact, ok, bias, d_bias, d_weight, *grads, H, L, J, G, **ctx.meta
        )
        return d_la, d_lz, d_phi, None, None, None


def _log_topical_weights(logits: torch.Tensor | None, cand: torch.Tensor, aggregation: str) -> torch.Tensor:
    """``log α`` ``[B, L, C]`` (as :func:`~syntaxformer.modeling.syntax_attention_core.topical_weights`), -inf for
    non-candidates, with finite gradients."""
    c = cand.to(torch.float32)
    if aggregation == "sum":
        lw = torch.zeros_like(c)
    elif aggregation == "mean" or logits is None:
        lw = -c.sum(-1, keepdim=True).clamp(min=1.0).log().expand_as(c)
    else:  # a finite fill keeps rows without candidates finite; they are set to -inf just below
        lw = torch.log_softmax(logits.masked_fill(~cand, torch.finfo(torch.float32).min), -1)
    return lw.masked_fill(~cand, float("-inf"))


def _syntax_context(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    call: SyntaxCall,
    w: torch.Tensor | None,
    full_heads: torch.Tensor | None,
) -> torch.Tensor:
    """``A V`` ``[B, H, L, d]`` for the effective attention ``A`` of the dense backends, never building ``A``: the
    statistics pass gives ``log Z`` per joint bucket and the topical sums, small ``[B, H, L, J]`` log-sum-exp
    scatters give each partition's groups and the full row, then the bias ``b`` and weight ``W`` (module
    docstring), and the attention pass ``W · softmax(S - c + b) V``."""
    groups, opts, scaling = call.groups, call.opts, call.scaling
    assert groups is not None  # for the type checker: a syntax layer
    B, H, L, _ = query.shape
    allowed = allowed_keys(mask, B, L)  # (B, L, L) or None
    joint = _joint_with_mask(groups, mask, allowed)
    cands = cached_group_counts(groups, mask, allowed)  # (B, L, M+1) per partition
    cand, cand_full = candidates(cands, allowed, opts)  # (B, L, C)
    fallback = ~cand.any(-1)  # (B, L)
    live = torch.ones(H, dtype=torch.bool, device=query.device) if full_heads is None else ~full_heads  # (H,)
    # Tiles without a related pair are skipped where no row reads the full softmax: no full candidate, no LISA full
    # head, and the rows without any group (which attend to all keys with empty_rows="full") sent to plain attention
    skip = cand_full is None and full_heads is None
    plain = fallback if skip and opts.empty_rows == "full" else None  # (B, L)
    tiles = Tiles(groups, joint, allowed, skip)

    by_group = group_index(groups, joint, allowed)
    n_groups = sum(groups.num_buckets)  # the partitions' groups; the full row is group n_groups

    def bias_and_weight(lzj: torch.Tensor, yj: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The bias per (head, row, joint bucket) ``[B, H, L, J]`` and the row weight ``W`` ``[B, H, L]`` from the
        statistics sweep's tables (per joint bucket the log-sums shifted by a per-row constant, and Y)."""
        # per group of every partition, the full row last (B, H, L, n_groups + 1); yj (so y) is given with w
        logz, y = _GroupLogSumExp.apply(lzj, yj, by_group)
        has_full = cand_full is not None
        logits = None if w is None else (y if has_full else y[..., :-1]).sum(1)  # (B, L, C)
        log_alpha = _log_topical_weights(logits, cand, opts.aggregation)  # (B, L, C)
        phi = full_weight(log_alpha[..., -1].exp() if has_full else None, fallback, opts, full_heads, H)  # (B, H, L)
        if plain is not None:  # those rows get plain attention below; weight 0 here
            phi = phi.masked_fill(plain.unsqueeze(1), 0.0)

        return _GroupBias.apply(log_alpha[..., :n_groups], logz, phi, live, by_group, joint.size)

    index = compact_index(joint.buckets, joint.size, groups.cache)
    # one dtype for the tiles (tl.dot takes equal operand types); under autocast q, k, v are all bf16 already
    kv = key.to(query.dtype), value.to(query.dtype)
    # the table algebra runs between the sweeps; it is recomputed in the backward (its two dozen [B, H, L, J]-sized
    # intermediates are not kept: at 128 tokens with J = 32 they would be several [B, H, L, L] tensors' worth)
    ctx = _TritonSyntaxContext.apply(query, *kv, w, index, joint.size, scaling, tiles, bias_and_weight)
    if plain is not None:
        ctx = _plain_rows(ctx, plain, query, key, value, allowed, scaling, groups.cache, cands)
    if opts.empty_rows == "self":
        rows = fallback.unsqueeze(1) & live.view(1, H, 1)  # (B, H, L)
        ctx = torch.where(rows.unsqueeze(-1), value.to(ctx.dtype), ctx)
    return ctx


def compact_index(index: torch.Tensor, size: int, cache: dict | None = None) -> torch.Tensor:
    """The ``[B, L, L]`` joint-bucket index as int8 (at most 127 buckets) or int16, contiguous; once per forward
    when ``cache`` (the groups' per-forward memo) is given."""
    if size > torch.iinfo(torch.int16).max:
        raise ConfigError(
            f"implementation='triton' takes at most {torch.iinfo(torch.int16).max} joint buckets per "
            f"row, got {size}; use implementation='fast'"
        )
    dtype = torch.int8 if size <= torch.iinfo(torch.int8).max else torch.int16
    return per_forward(cache, "triton", index, lambda: index.to(dtype).contiguous())


# ---------------------------------------------------------------------------------------------------------------
# Launch helpers and autograd functions
# ---------------------------------------------------------------------------------------------------------------


def _pow2(n: int, least: int = 16) -> int:
    return max(least, 1 << max(0, int(n) - 1).bit_length())


#: Tiles and launch settings per kernel for 16-bit inputs with head size <= 64: ``(BM, BN, num_warps, num_stages)``
#: (BM: query rows, BN: keys), the largest tiles without register spill in ptxas' sm_90 report
#: (``experiments/triton_compile_report.py``, ``docs/benchmarks.md``); not yet timed on a GPU. Anything else:
#: ``_SMALL_CONFIG``.
_HALF_CONFIGS = {
    "prepass_sum": (64, 64, 8, 2),
    "attn_fwd": (64, 32, 4, 2),
    "attn_bwd_rows": (32, 32, 8, 2),
    "bwd_cols": (32, 64, 8, 2),
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


class Tiles(NamedTuple):
    """What :func:`tile_descriptors` needs, passed to the kernel launches (each picks its own tile shape)."""

    groups: SyntaxGroups
    joint: JointIndex
    allowed: torch.Tensor | None
    skip: bool  # the layer's rows never read the full softmax: tiles without a related pair may be skipped

    def descriptors(self, BM: int, BN: int) -> torch.Tensor:
        return tile_descriptors(self.groups, self.joint, self.allowed, BM, BN, self.skip, self.groups.cache)


def _launch(name: str, kernel: Any, query: torch.Tensor, tiles: Tiles, *args: Any, **meta: Any) -> None:
    """Launch ``kernel`` with the tiles of ``name`` (:func:`_config`), their descriptors and ``tl.dot``'s precision
    for ``query``: one program per (block of query rows, or of keys for a ``..._cols`` kernel, batch * head)."""
    B, H, L, d = query.shape
    BM, BN, BD, launch = _config(name, d, query.dtype)
    grid = (triton.cdiv(L, BN if name.endswith("_cols") else BM), B * H)
    desc = tiles.descriptors(BM, BN)
    kernel[grid](desc, *args, BM=BM, BN=BN, BD=BD, PREC=_precision(query), **meta, **launch)


def _unpad(x: torch.Tensor, d: int) -> torch.Tensor:
    """``[B, H, L, BD]`` kernel output -> ``[B, H, L, d]``."""
    return x if x.shape[-1] == d else x[..., :d]


class _TritonSyntaxContext(torch.autograd.Function):
    """``W · softmax_k(S - c + b[joint]) V`` ``[B, H, L, d]`` with ``(b, W) = algebra(lz - c, Y)``: the statistics
    sweep (the tables ``lz - c`` and ``Y`` ``[B, H, L, J]`` per joint bucket, the per-row shift ``c``), the table
    algebra (``algebra``, PyTorch ops on ``[B, H, L, J]`` tables), the attention sweep; gradients for q, k, v and
    ``w`` in two backward sweeps.

    The shift keeps ``(S - c) + b`` at the size of the score gaps (the table algebra is shift-equivariant, so the
    result is unchanged). Backward: the row sweep gives the attention's ``dQ`` and the bias gradient ``db``; the
    algebra, recomputed, turns ``db`` and ``dW`` into the tables' gradients ``dlz``, ``dY``; the column sweep gives
    ``dK``, ``dV``, ``dw`` and adds the statistics' ``dQ``."""

    @staticmethod
    def forward(ctx, query, key, value, w, index, size, scaling, tiles, algebra):  # noqa: D102
        B, H, L, d = query.shape
        J, BD = int(size), _pow2(d)
        dev = query.device
        lz = torch.empty(B, H, L, J, device=dev, dtype=torch.float32)
        shift = torch.empty(B, H, L, device=dev, dtype=torch.float32)
        y = torch.empty_like(lz) if w is not None else None  # the statistics sweep writes every row
        wc = w.float().contiguous() if w is not None else None
        qk = (*query.stride(), *key.stride())
        w_arg, y_arg = wc if wc is not None else lz, y if y is not None else lz
        sums = (query, key, w_arg, index, lz, y_arg, shift, *qk, H, L, J, d, float(scaling))
        meta = dict(HAS_W=w is not None, JP=_pow2(J, 1), ONE_HOT=ONE_HOT)
        _launch("prepass_sum", prepass_sum_kernel, query, tiles, *sums, **meta)
        bias, weight = algebra(lz, y)  # (B, H, L, J), (B, H, L)
        bias, weight = bias.float().contiguous(), weight.float().contiguous()
        out, result = (torch.empty(B, H, L, BD, device=dev, dtype=value.dtype) for _ in range(2))
        lse = torch.empty(B, H, L, device=dev, dtype=torch.float32)
        args = (out, lse, weight, result, *qk, *value.stride(), H, L, J, d, float(scaling))
        _launch("attn_fwd", attn_fwd_kernel, query, tiles, query, key, value, index, bias, shift, *args)
        ctx.save_for_backward(query, key, value, wc, index, lz, y, shift, out, lse)
        ctx.scaling, ctx.tiles, ctx.algebra = float(scaling), tiles, algebra
        return _unpad(result, d)  # W · O

    @staticmethod
    def backward(ctx, d_ctx):  # noqa: D102
        query, key, value, w, index, lz, y, shift, out, lse = ctx.saved_tensors
        B, H, L, d = query.shape
        J, BD = lz.shape[-1], _pow2(d)
        with torch.enable_grad():  # the table algebra again, to differentiate it (its intermediates were not kept)
            lz_in = lz.detach().requires_grad_()
            y_in = None if y is None else y.detach().requires_grad_()
            bias_graph, weight_graph = ctx.algebra(lz_in, y_in)
        bias = bias_graph.detach().float().contiguous()
        weight = weight_graph.detach().float().contiguous()
        # the rows kernel writes dO = d_ctx W (fp32, for the column sweep), D_i = dO_i · O_i and dW_i = d_ctx_i · O_i
        do = torch.empty(B, H, L, BD, device=query.device, dtype=torch.float32)
        delta, d_weight = torch.empty_like(weight), torch.empty_like(weight)
        dq = torch.empty(B, H, L, BD, device=query.device, dtype=torch.float32)
        dk, dv = torch.empty_like(dq), torch.empty_like(dq)
        db = torch.empty_like(bias)
        qkv = (*query.stride(), *key.stride(), *value.stride())
        grad_in = (d_ctx, out, weight, do, delta, d_weight)
        rows = (query, key, value, index, bias, shift, lse, *grad_in, dq, db, *qkv, *d_ctx.stride(), H, L, J, d)
        meta = dict(JP=_pow2(J, 1), ONE_HOT=ONE_HOT)
        _launch("attn_bwd_rows", attn_bwd_rows_kernel, query, ctx.tiles, *rows, ctx.scaling, **meta)
        # the tables' gradients through the algebra
        tables = [lz_in] if y_in is None else [lz_in, y_in]
        pairs = [(t, g.to(t.dtype)) for t, g in ((bias_graph, db), (weight_graph, d_weight)) if t.requires_grad]
        grads: tuple[torch.Tensor | None, ...] = (None, None)
        if pairs:  # (with "sum" / "mean" and no full candidate the weight is constant)
            grads = torch.autograd.grad([t for t, _ in pairs], tables, [g for _, g in pairs], allow_unused=True)
        d_lz = torch.zeros_like(lz) if grads[0] is None else grads[0].float()
        d_y = grads[1] if len(grads) > 1 and w is not None else None
        a = d_lz if d_y is None or y is None else d_lz - d_y.float() * y  # dS_stat = π (a_j + dY_j w_k)
        a = torch.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0).contiguous()  # empty buckets: no pair reads them
        has_w_grad = d_y is not None
        dw = torch.empty(B, H, L, device=query.device, dtype=torch.float32) if has_w_grad else None
        cols_in = (query, key, value, w if has_w_grad else lz, index, bias, lz, shift, lse, do, delta, a)
        cols_out = (d_y.float().contiguous() if d_y is not None else lz, dq, dk, dv, dw if dw is not None else lz)
        cols = (*cols_in, *cols_out, *qkv, H, L, J, d, ctx.scaling)
        _launch("bwd_cols", bwd_cols_kernel, query, ctx.tiles, *cols, HAS_W=has_w_grad)
        grad_w = None if w is None else (dw if dw is not None else torch.zeros_like(w))
        grads_qkv = _unpad(dq, d).to(query.dtype), _unpad(dk, d).to(key.dtype), _unpad(dv, d).to(value.dtype)
        return (*grads_qkv, grad_w, None, None, None, None, None)
