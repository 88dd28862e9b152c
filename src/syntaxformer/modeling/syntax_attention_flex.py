"""The ``"flex"`` implementation of the ``"syntax"`` attention (GPU; eager on the CPU for tests), and the frame
that the ``"triton"`` implementation plugs its fused passes into (:class:`_PairPasses`).

The effective attention is never built: per (head, row) the mix of per-group softmaxes is one softmax with a
log-weight bias per joint bucket, times the row's total weight, ``A V = W · softmax(S + b[joint bucket]) V``. An
exact pre-pass over chunks of query rows (:class:`_FlexPrepass`) gives the per-bucket log-sums and topical scores;
the ``[B, H, L, J]`` tables' algebra (:func:`_flex_syntax_context`) gives ``b`` and ``W``; the second pass is one
``torch.nn.attention.flex_attention`` call (:func:`_flex_context`) whose bias gradient comes from a chunked pass
(:class:`_FlexBiasGrad`). :func:`_flex_attention_forward` is a whole syntax layer this way (LISA, own value
projections, gate, recorder). The derivation is in :mod:`syntaxformer.modeling.syntax_attention`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from syntaxformer.errors import ConfigError, InputError
from syntaxformer.modeling.syntax_attention_common import (
    _added_head_context,
    _allowed,
    _apply_mask,
    _cached_counts,
    _candidates,
    _expand,
    _full_weight,
    _group_counts,
    _joint_buckets,
    _JointIndex,
    _scores,
    _topical_key_values,
)
from syntaxformer.modeling.syntax_attention_exact import _exact_probs
from syntaxformer.modeling.syntax_attention_modules import SyntaxGate, TopicalAttention, gate_probs
from syntaxformer.modeling.syntax_attention_options import SyntaxAttentionOptions, SyntaxGroups
from syntaxformer.modeling.syntax_attention_recorders import LisaRecorder, SyntaxAttentionRecorder

#: The flex path's pre-pass and backward passes compute the scores of this many bytes of ``[B, H, rows, L]`` fp32
#: at a time, so they never hold the scores of all rows.
_FLEX_CHUNK_BYTES = 1 << 26


#: Let the compiled flex_attention kernel compute the bias table's gradient itself (Inductor's learnable-bias
#: support, atomic adds) instead of :class:`_FlexBiasGrad`'s chunked pass. Off: that support has open bugs
#: (pytorch#145208, #157677); the GPU tests check both.
_FLEX_BIAS_GRAD_IN_KERNEL = False


#: The joint-bucket tables of the flex path are padded to a multiple of this many buckets, so that the compiled
#: flex_attention sees a handful of table shapes, not one per batch.
_FLEX_PAD = 16


@functools.cache
def _compiled_flex_attention() -> Any:
    """``torch.compile(flex_attention)`` (CUDA), built once per process."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention)


def _flex_check(query: torch.Tensor, dropout: float, module: nn.Module) -> None:
    """Refuse what the flex path cannot run, naming what would work."""
    if query.device.type not in ("cuda", "cpu"):
        raise ConfigError(
            f"implementation='flex' runs on CUDA (and eagerly on the CPU, for tests), not on "
            f"{query.device.type}; use implementation='fast'"
        )
    try:
        import torch.nn.attention.flex_attention
    except ImportError as e:  # pragma: no cover - every torch this package supports has it
        raise ConfigError(
            f"implementation='flex' needs torch.nn.attention.flex_attention (torch >= 2.5); torch "
            f"{torch.__version__} has none: use implementation='fast'"
        ) from e
    if dropout > 0 and module.training:
        raise ConfigError(
            f"implementation='flex' has no attention-probability dropout (flex_attention has none); "
            f"set the encoder's attention_probs_dropout_prob=0 (got {dropout}) or use "
            "implementation='fast'"
        )


def _cached_flex_joint(groups: SyntaxGroups, mask: torch.Tensor | None, allowed: torch.Tensor | None) -> _JointIndex:
    """Joint buckets of the partitions' raw group ids and the mask (a last component: 1 = disallowed pair), ``J``
    padded to ``_FLEX_PAD``; once per forward and mask (kept in ``groups.cache`` with the mask, as the counts)."""
    hit = None if groups.cache is None else groups.cache.get("flex")
    if hit is not None and hit[0] is mask:
        return hit[1]
    index, sizes = list(groups.partitions), list(groups.num_buckets)
    if allowed is not None:
        index.append((~allowed).long())
        sizes.append(2)
    joint = _joint_buckets(index, sizes, pad=_FLEX_PAD)
    if groups.cache is not None:
        groups.cache["flex"] = (mask, joint)
    return joint


def _log_scatter(
    x: torch.Tensor, y: torch.Tensor | None, index: torch.Tensor, n: int, ok: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-sum-exp of ``x`` ``[..., K]`` per bucket ``index`` (``[..., K]``, ids below ``n``), each bucket with its
    own maximum, and the ``exp(x)``-weighted mean of ``y`` per bucket: ``([..., n] with -inf for empty buckets,
    [..., n] or None)``. Entries where ``ok`` is False (or ``x`` is -inf) count in no bucket."""
    fmin = torch.finfo(torch.float32).min
    finite = x > float("-inf") if ok is None else ok & (x > float("-inf"))
    xf = x.masked_fill(~finite, fmin)
    m = torch.full((*x.shape[:-1], n), fmin, device=x.device).scatter_reduce(-1, index, xf.detach(), "amax")
    e = torch.exp(xf - m.gather(-1, index)) * finite
    z = torch.zeros_like(m).scatter_add(-1, index, e)
    live = z > 0
    z_safe = torch.where(live, z, torch.ones_like(z))
    lz = torch.where(live, z_safe.log() + m, torch.full_like(z, float("-inf")))
    mean = None if y is None else torch.zeros_like(m).scatter_add(-1, index, e * y) / z_safe
    return lz, mean


class _FlexPrepass(torch.autograd.Function):
    """Per-(row, joint bucket) tables of the scores ``S = Q Kᵀ · scale``: ``lz[b,h,i,j] = log Σ_{k in j} exp(S_ik)``
    (-inf for empty buckets; each bucket with its own maximum, so nothing underflows) and, with ``w`` ``[B, H, L]``,
    ``Y[b,h,i,j] = Σ_{k in j} π_ik w_k`` with ``π_ik = exp(S_ik - lz_{i,j(k)})`` (softmax within the bucket).

    Over chunks of query rows, ``[B, H, rows, L]`` at a time, and only the ``[B, H, L, J]`` tables are kept: the
    backward recomputes ``S`` and ``π`` per chunk (``π`` from the kept ``lz``: no maximum pass) and applies
    ``dS_ik = π_ik (dlz_j + dY_j (w_k - Y_j))``, ``dw_k = Σ_i π_ik dY_{i,j}`` (the same autocast as the forward).
    """

    @staticmethod
    def forward(ctx, query, key, w, index, size, scaling):  # noqa: D102
        B, H, L, _ = query.shape
        fmin = torch.finfo(torch.float32).min
        lz = torch.empty(B, H, L, size, device=query.device)
        y = None if w is None else torch.empty_like(lz)
        for sl, idx in _row_chunks(index, H):
            s = _scores(query[:, :, sl], key, scaling)  # (B, H, R, L) fp32, finite
            m = torch.full_like(lz[:, :, sl], fmin).scatter_reduce_(3, idx, s, "amax")
            e = s.sub_(m.gather(3, idx)).exp_()  # (B, H, R, L) in place of s
            z = torch.zeros_like(m).scatter_add_(3, idx, e)
            lz[:, :, sl] = z.log().add_(m)  # empty buckets: log 0 + fmin = -inf
            if y is not None:  # (set when w is)
                y[:, :, sl] = (
                    torch.zeros_like(m)
                    .scatter_add_(3, idx, e.mul_(w.unsqueeze(2)))
                    .div_(z.clamp_(min=torch.finfo(torch.float32).tiny))
                )
        ctx.save_for_backward(query, key, w, index, lz, y)
        ctx.scaling = scaling
        ctx.amp = (
            query.device.type,
            torch.is_autocast_enabled(query.device.type),
            torch.get_autocast_dtype(query.device.type),
        )
        return (lz,) if w is None else (lz, y)

    @staticmethod
    def backward(ctx, d_lz, d_y=None):  # noqa: D102
        query, key, w, index, lz, y = ctx.saved_tensors
        B, H, L, _ = query.shape
        device, amp, amp_dtype = ctx.amp
        a_tab = d_lz if w is None else d_lz - d_y * y.nan_to_num(0.0)  # (B, H, L, J)
        d_q = torch.zeros(B, H, L, query.shape[-1], device=query.device)
        d_k = torch.zeros(B, H, L, key.shape[-1], device=query.device)
        d_w = None if w is None else torch.zeros_like(w)
        with torch.autocast(device, dtype=amp_dtype, enabled=amp):  # S as in the forward
            for sl, idx in _row_chunks(index, H):
                q = query[:, :, sl]
                p = _scores(q, key, ctx.scaling).sub_(lz[:, :, sl].gather(3, idx)).exp_()  # (B, H, R, L) π
                coef = a_tab[:, :, sl].gather(3, idx)
                if w is not None:
                    b = d_y[:, :, sl].gather(3, idx)  # (B, H, R, L)
                    d_w += (p * b).sum(2)
                    coef.addcmul_(b, w.unsqueeze(2))
                ds = p.mul_(coef)  # (B, H, R, L) dS
                d_q[:, :, sl] = torch.matmul(ds, key.float()) * ctx.scaling
                d_k += torch.matmul(ds.transpose(-1, -2), q.float()) * ctx.scaling
        return d_q.to(query.dtype), d_k.to(key.dtype), d_w, None, None, None


def _row_chunks(index: torch.Tensor, H: int):
    """``(rows slice, [B, H, R, L] index)`` over chunks of query rows of ``_FLEX_CHUNK_BYTES`` fp32 scores each."""
    B, L, Lk = index.shape
    rows = max(1, _FLEX_CHUNK_BYTES // max(1, 4 * B * H * Lk))
    for start in range(0, L, rows):
        sl = slice(start, min(L, start + rows))
        yield sl, _expand(index[:, sl], H)


def _flex_prepass(
    query: torch.Tensor, key: torch.Tensor, w: torch.Tensor | None, scaling: float, joint: _JointIndex
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(lz, Y)`` per joint bucket ``[B, H, L, J]`` (:class:`_FlexPrepass`; Y None without w)."""
    out = _FlexPrepass.apply(query, key, w, joint.buckets, joint.size, scaling)
    return out[0], (out[1] if w is not None else None)


def _log_topical_weights(logits: torch.Tensor | None, cand: torch.Tensor, aggregation: str) -> torch.Tensor:
    """``log α`` ``[B, L, C]`` (as :func:`_topical_weights`), -inf for non-candidates, with finite gradients."""
    c = cand.to(torch.float32)
    if aggregation == "sum":
        lw = torch.zeros_like(c)
    elif aggregation == "mean" or logits is None:
        lw = -c.sum(-1, keepdim=True).clamp(min=1.0).log().expand_as(c)
    else:  # a finite fill keeps rows without candidates finite; they are set to -inf just below
        lw = torch.log_softmax(logits.masked_fill(~cand, torch.finfo(torch.float32).min), -1)
    return lw.masked_fill(~cand, float("-inf"))


def _flex_context(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    bias: torch.Tensor,
    index: torch.Tensor,
    scaling: float,
    lz: torch.Tensor,
) -> torch.Tensor:
    """``softmax_k(S[b,h,i,k] + bias[b,h,i,index[b,i,k]]) V`` ``[B, H, L, d]`` through flex_attention (compiled on
    CUDA; ``lz`` ``[B, H, L, J]`` the log-sum-exp of ``S`` per bucket, for the bias gradient). flex_attention has
    no CPU backward: on the CPU under autograd the same softmax runs densely (tests).

    The gradient of ``bias`` comes from :class:`_FlexBiasGrad` (a chunked pass in the backward): flex_attention
    itself only ever sees a bias that needs no gradient, its most-used form. With ``_FLEX_BIAS_GRAD_IN_KERNEL``
    the compiled kernel computes it instead (Inductor's learnable-bias support: atomic adds into the table)."""
    H = query.shape[1]
    bias_grad = torch.is_grad_enabled() and bias.requires_grad
    table = bias if _FLEX_BIAS_GRAD_IN_KERNEL else bias.detach()

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[b, h, q_idx, index[b, q_idx, kv_idx]]

    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value, table))
    if query.device.type == "cpu" and grad:
        s = _scores(query, key, scaling) + table.gather(3, _expand(index, H))  # (B, H, L, L), CPU tests only
        out = torch.matmul(torch.softmax(s, -1).to(value.dtype), value)
    elif query.device.type == "cuda":
        out = _compiled_flex_attention()(query, key, value, score_mod=score_mod, scale=scaling)
    else:
        from torch.nn.attention.flex_attention import flex_attention

        with warnings.catch_warnings():  # eager CPU: the "called without torch.compile" advice is for GPUs
            warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
            out = flex_attention(query, key, value, score_mod=score_mod, scale=scaling)
    if bias_grad and not _FLEX_BIAS_GRAD_IN_KERNEL:
        out = _FlexBiasGrad.apply(out, bias, lz.detach(), query.detach(), key.detach(), value.detach(), index, scaling)
    return out


class _FlexBiasGrad(torch.autograd.Function):
    """Identity on the flex output ``O = softmax(S + b[index]) V`` whose backward adds the gradient of the bias
    table, the softmax backward summed per joint bucket: ``db_{ij} = Σ_{k in j} P_ik (dO_i · V_k - dO_i · O_i)``.

    With the pre-pass's ``lz_{ij} = log Σ_{k in j} exp(S_ik)``: ``P_ik = π_ik c_ij`` with ``π_ik = exp(S_ik -
    lz_{ij})`` and the bucket's share ``c_ij = softmax_j(lz_ij + b_ij)``, so ``db_ij = c_ij (Σ_{k in j} π_ik
    dO_i · V_k - dO_i · O_i)``: per chunk of query rows the scores, ``π`` (one gather), ``dO Vᵀ`` and one scatter.
    The gradients of q, k, v flow through the flex output itself."""

    @staticmethod
    def forward(ctx, out, bias, lz, query, key, value, index, scaling):  # noqa: D102
        ctx.save_for_backward(out, bias, lz, query, key, value, index)
        ctx.scaling = scaling
        ctx.amp = (
            query.device.type,
            torch.is_autocast_enabled(query.device.type),
            torch.get_autocast_dtype(query.device.type),
        )
        return out.view_as(out)

    @staticmethod
    def backward(ctx, d_out):  # noqa: D102
        out, bias, lz, query, key, value, index = ctx.saved_tensors
        H = query.shape[1]
        d_out = d_out.float()
        delta = (d_out * out.float()).sum(-1, keepdim=True)  # (B, H, L, 1)
        share = torch.softmax(lz + bias, -1)  # (B, H, L, J) c: each bucket's share of the flex softmax
        v32 = value.float()
        device, amp, amp_dtype = ctx.amp
        t = torch.zeros_like(bias)  # (B, H, L, J) Σ_{k in j} π dO·V
        for sl, idx in _row_chunks(index, H):
            with torch.autocast(device, dtype=amp_dtype, enabled=amp):  # S exactly as the pre-pass computed it
                s = _scores(query[:, :, sl], key, ctx.scaling)  # (B, H, R, L) fp32
            pi = s.sub_(lz[:, :, sl].gather(3, idx)).exp_()
            t[:, :, sl] = torch.zeros_like(t[:, :, sl]).scatter_add_(
                3, idx, pi.mul_(torch.matmul(d_out[:, :, sl], v32.transpose(-1, -2)))
            )
        return d_out.to(out.dtype), share * (t - delta), None, None, None, None, None, None


class _PairPasses(NamedTuple):
    """The two passes over the ``L x L`` pairs of the flex algebra, swappable: PyTorch ops and flex_attention
    (``"flex"``, this module) or the fused Triton kernels (``"triton"``,
    :mod:`syntaxformer.modeling.syntax_attention_triton`).
    Everything between them (the ``[B, H, L, J]`` tables' algebra, LISA, gate, recorder) is shared."""

    check: Callable[[torch.Tensor, float, nn.Module], None]  # (query, dropout, module): refuse what cannot run
    # (q, k, w, scaling, joint, cache) -> (lz - c, Y, c): log-sums per joint bucket, shifted by any per-row c
    prepass: Callable[..., tuple[torch.Tensor, torch.Tensor | None, Any]]
    # (q, k, v, bias, joint, scaling, lz, c, cache) -> softmax(S - c + b) V
    context: Callable[..., torch.Tensor]


_FLEX_PASSES = _PairPasses(
    _flex_check,
    lambda query, key, w, scaling, joint, cache: (*_flex_prepass(query, key, w, scaling, joint), None),
    lambda query, key, value, bias, joint, scaling, lz, shift, cache: _flex_context(
        query, key, value, bias, joint.buckets, scaling, lz
    ),
)


def _flex_syntax_context(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scaling: float,
    groups: SyntaxGroups,
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    passes: _PairPasses = _FLEX_PASSES,
) -> torch.Tensor:
    """``A V`` ``[B, H, L, d]`` for the effective attention ``A`` of :func:`syntax_probs`, never building ``A``.

    Per head h, row i and key k, ``A[h,i,k] = Σ_p α_{i,p,g_p} exp(S_ik - log Z_{p,h,i,g_p}) + φ_{h,i} exp(S_ik -
    lse_{h,i})`` (``g_p = g_p(i, k)`` the pair's group in partition p). The factor of ``exp(S_ik)`` depends on the
    pair only through its joint bucket ``j = (g_1, ..., g_P, disallowed)``, so ``A[h,i,k] = exp(S_ik + b_{h,i,j})``
    with ``b = log(Σ_p α_p / Z_p + φ / Z_full)`` (a log-sum-exp; -inf for pairs of no candidate group, the fp32
    minimum for disallowed pairs) and ``A V = W · softmax_k(S + b) V`` with the row's total weight
    ``W_{h,i} = Σ_{p,g} α_{i,p,g} + φ_{h,i}`` (1 for ``"topical"`` / ``"mean"``, the number of candidates for
    ``"sum"``). ``log Z``, the topical scores ``t_{i,p,g} = Σ_h Y_{p,h,i,g}`` and ``lse`` come from an exact
    pre-pass over chunks of query rows: one scatter of the scores into the joint buckets (each bucket with its
    own maximum: nothing underflows, no host sync), then small ``[B, H, L, J]`` log-sum-exp scatters into each
    partition's groups and the full row; the second pass is one flex_attention call whose ``score_mod``
    gathers ``b``.
    """
    B, H, L, _ = query.shape
    allowed = _allowed(mask, B, L)  # (B, L, L) or None
    joint = _cached_flex_joint(groups, mask, allowed)
    # (B, H, L, J) each: per joint bucket (log-sums shifted by a per-row constant, none for flex)
    lzj, yj, shift = passes.prepass(query, key, w, scaling, joint, groups.cache)
    cands = _cached_counts(groups, mask, allowed)  # (B, L, M+1) per partition
    cand, cand_full = _candidates(cands, allowed, opts)  # (B, L, C)
    fallback = ~cand.any(-1)  # (B, L)
    live = torch.ones(H, dtype=torch.bool, device=query.device) if full_heads is None else ~full_heads  # (H,)

    def bias_and_weight(lzj: torch.Tensor, yj: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The bias per (head, row, joint bucket) ``[B, H, L, J]`` and the row weight ``W`` ``[B, H, L]``."""
        ok = None if allowed is None else ~_expand(joint.maps[-1], H).bool()  # (B, H, L, J) allowed buckets
        # per partition (B, H, L, M+1): the joint buckets' tables combined by group (Y only when yj is given)
        logz: list[torch.Tensor] = []
        ys: list[torch.Tensor] = []
        for m, n in zip(joint.maps, groups.num_buckets):
            lz, y = _log_scatter(lzj, yj, _expand(m, H), n, ok)
            logz.append(lz)
            if y is not None:
                ys.append(y)
        zero = torch.zeros(1, dtype=torch.long, device=query.device).expand(B, H, L, joint.size)
        lse, y_full = _log_scatter(lzj, yj, zero, 1, ok)  # (B, H, L, 1): the full row
        lse, y_full = lse.squeeze(-1), None if y_full is None else y_full.squeeze(-1)  # (B, H, L)
        has_full = cand_full is not None
        logits = None
        if w is not None:
            assert y_full is not None  # for the type checker: the pre-pass returns yj (so Y) whenever w is given
            parts = [y.sum(1) for y in ys] + ([y_full.sum(1).unsqueeze(-1)] if has_full else [])  # (B, L, ·)
            logits = torch.cat(parts, -1)  # (B, L, C)
        log_alpha = _log_topical_weights(logits, cand, opts.aggregation)  # (B, L, C)
        alpha = log_alpha.exp()
        phi = _full_weight(alpha[..., -1] if has_full else None, fallback, opts, full_heads, H)  # (B, H, L)

        neg_inf = torch.tensor(float("-inf"), device=query.device)
        terms, start = [], 0
        for lz, ne, m in zip(logz, cands, joint.maps):
            n = lz.shape[-1]
            valid = ne.unsqueeze(1) & live.view(1, H, 1, 1)  # (B, H, L, M+1)
            la = log_alpha[..., start : start + n].unsqueeze(1).masked_fill(~valid, 0.0)
            t = torch.where(valid, la - lz.masked_fill(~valid, 0.0), neg_inf)  # log(α / Z) (B, H, L, M+1)
            terms.append(t.gather(3, _expand(m, H)))  # (B, H, L, J)
            start += n
        phi_term = torch.where(phi > 0, phi.clamp(min=torch.finfo(phi.dtype).tiny).log() - lse, neg_inf)  # (B, H, L)
        terms.append(phi_term.unsqueeze(-1).expand_as(terms[0]))
        stacked = torch.stack(terms, -1)  # (B, H, L, J, P+1)
        some = (stacked > float("-inf")).any(-1)  # (B, H, L, J)
        bias = torch.where(some, torch.logsumexp(stacked.masked_fill(~some.unsqueeze(-1), 0.0), -1), neg_inf)
        empty = ~some.any(-1, keepdim=True)  # (B, H, L, 1) rows of weight 0 ("self" fallback): any finite bias
        bias = bias.masked_fill(empty, 0.0)
        if allowed is not None:
            bias = bias.masked_fill(_expand(joint.maps[-1], H).bool(), torch.finfo(torch.float32).min)
        weight = alpha[..., :start].sum(-1).unsqueeze(1) * live.view(1, H, 1) + phi  # (B, H, L) W
        return bias, weight

    if torch.is_grad_enabled() and (lzj.requires_grad or (yj is not None and yj.requires_grad)):
        # Recomputed in the backward: the table algebra's two dozen [B, H, L, J]-sized intermediates are not kept
        # (at 128 tokens with J = 32 they would be several [B, H, L, L] tensors' worth); it is cheap to redo.
        bias, weight = checkpoint(bias_and_weight, lzj, yj, use_reentrant=False)
    else:
        bias, weight = bias_and_weight(lzj, yj)
    ctx = passes.context(query, key, value, bias, joint, scaling, lzj, shift, groups.cache)  # (B, H, L, d)
    ctx = ctx * weight.unsqueeze(-1).to(ctx.dtype)
    if opts.empty_rows == "self":
        rows = fallback.unsqueeze(1) & live.view(1, H, 1)  # (B, H, L)
        ctx = torch.where(rows.unsqueeze(-1), value.to(ctx.dtype), ctx)
    return ctx


def _flex_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scaling: float,
    dropout: float,
    groups: SyntaxGroups,
    opts: SyntaxAttentionOptions,
    topical: TopicalAttention | None,
    lisa: LisaRecorder | None,
    gate_module: SyntaxGate | None,
    record: SyntaxAttentionRecorder | None,
    layer: int | None,
    passes: _PairPasses = _FLEX_PASSES,
) -> torch.Tensor:
    """A syntax layer through :func:`_flex_syntax_context`: the same output ``[B, L, H, d]`` as the other
    implementations (LISA heads, topical attention with shared or own projections, gate, recorder), and no
    ``[B, H, L, L]`` tensor except the recorder's (analysis) and the CPU stand-in under autograd (tests)."""
    passes.check(query, dropout, module)
    B, H, L, d = query.shape
    full_heads = None
    added = lisa.added if lisa is not None else None
    head_mask = None if mask is None else mask[:, 0]
    if lisa is not None and added is not None:
        lisa.log_probs = torch.log_softmax(_apply_mask(added.scores(query, key, scaling), head_mask), -1)
    elif lisa is not None:
        if not 0 <= lisa.head < H:
            raise ConfigError(f"lisa_head={lisa.head} but the layer has {H} heads")
        h = lisa.head
        s_head = _scores(query[:, h : h + 1], key[:, h : h + 1], scaling)[:, 0]  # (B, L, L) one head only
        lisa.log_probs = torch.log_softmax(_apply_mask(s_head, head_mask), -1)
        full_heads = torch.zeros(H, dtype=torch.bool, device=query.device)
        full_heads[h] = True
    w = _topical_key_values(module, value, groups, opts, topical, layer, full_heads)  # (B, H, L) or None
    syn = _flex_syntax_context(query, key, value, mask, scaling, groups, w, opts, full_heads, passes)  # (B, H, L, d)
    if topical is not None and topical.own_projections and opts.aggregation == "topical":
        assert layer is not None  # for the type checker: _topical_key_values refused a topical layer without one
        flat = topical.values(layer, syn.transpose(1, 2).reshape(B, L, H * d))  # (B, L, H*d)
        syn = flat.view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
    gate = None
    if gate_module is not None:
        if layer is None:
            raise InputError(f"{type(module).__name__} has no layer index; set module.syntax_layer_idx")
        gate = gate_module.value(layer)  # (1, H | 1, 1, 1)
        allowed = _allowed(mask, B, L)  # a bool mask whatever the host's form (SDPA wants bool or q's dtype)
        base = F.scaled_dot_product_attention(
            query, key, value, scale=scaling, attn_mask=None if allowed is None else allowed.unsqueeze(1)
        )
        # base: (B, H, L, d)
        syn = base + gate.to(syn.dtype) * (syn.to(base.dtype) - base)
    if record is not None and layer is not None:
        with torch.no_grad():  # analysis only: the effective attention, densely, by the exact path
            s = _apply_mask(_scores(query, key, scaling), mask)
            allowed = _allowed(mask, B, L)
            probs, alpha, cand = _exact_probs(
                s, allowed, groups, _group_counts(groups, allowed), w, opts, full_heads, with_weights=True
            )
            if gate is not None:
                probs = gate_probs(probs, torch.softmax(s, -1), gate)
        record.attentions[layer] = probs
        record.topical[layer], record.candidates[layer] = alpha, cand
        record.num_buckets = tuple(groups.num_buckets)
        record.full_candidate = opts.full_attention_candidate
    out = syn.to(value.dtype).transpose(1, 2)  # (B, L, H, d)
    if lisa is not None and added is not None:
        out = out + _added_head_context(module, added, lisa, value, dropout)
    return out.contiguous()
