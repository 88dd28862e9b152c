"""The ``"fast"`` backend of the Syntax-BERT attention (``docs/syntax_bert.md``, "Implementations"): the effective
attention ``A = P * (α / Z)[group]`` from one full softmax ``P`` per layer and small per-group tables, with a
hand-written backward; the layer around ``A`` is :func:`~syntaxformer.modeling.syntax_attention_exact.dense_attention`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
from torch.utils.checkpoint import checkpoint

from syntaxformer.modeling.syntax_attention_core import (
    TRASH_BUCKETS,
    SyntaxAttentionOptions,
    SyntaxGroups,
    allowed_keys,
    apply_mask,
    cached_group_counts,
    candidates,
    expand_heads,
    full_weight,
    group_counts,
    joint_buckets,
    per_forward,
    scatter_index_of,
    self_fallback,
    topical_weights,
)
from syntaxformer.modeling.syntax_attention_exact import dense_attention, exact_probs

#: A non-empty group whose share of the full softmax is below this is recomputed exactly (float32 keeps full
#: relative precision down to ~1e-38; this leaves a margin of 1e-13 for the group's smaller entries).
_UNDERFLOW = 1e-25


def fast_syntax_probs(
    scores: torch.Tensor,
    mask: torch.Tensor | None,
    groups: SyntaxGroups,
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None = None,
) -> torch.Tensor:
    """Effective attention ``A`` ``[B, H, L, L]`` (``output = A V``; underflowing rows recomputed exactly); the
    arguments of :func:`~syntaxformer.modeling.syntax_attention_exact.exact_syntax_probs`."""
    B, H, L, _ = scores.shape
    allowed = allowed_keys(mask, B, L)
    index = groups.scatter_index
    if index is None:
        index = scatter_index_of(groups.partitions, groups.num_buckets)
        groups = groups._replace(scatter_index=index)
    cands = cached_group_counts(groups, mask, allowed, fast=True)
    bad_rows = None
    with torch.no_grad():
        if mask is None:
            p = torch.softmax(scores, dim=-1)  # (B, H, L, L)
        else:  # the masked copy is a fresh tensor: normalise it in place (one [B, H, L, L] allocation, not two)
            p = apply_mask(scores, mask)
            torch.softmax(p, dim=-1, out=p)  # (B, H, L, L)
            keyless = per_forward(groups.cache, "keyless", mask, lambda: _keyless_rows(allowed))
            if keyless is not None:  # a row that may attend to no key attends to nothing (and gets no gradient)
                p.masked_fill_(keyless, 0.0)
        sizes = [n + TRASH_BUCKETS for n in groups.num_buckets]  # one sort of [B, L, L], one host sync for J:
        joint = per_forward(groups.cache, "joint", None, lambda: joint_buckets(index, sizes))  # once per forward
        zj = torch.zeros(B, H, L, joint.size, dtype=p.dtype, device=p.device).scatter_add_(
            3, expand_heads(joint.buckets, H), p
        )  # (B, H, L, J) sums of P per joint bucket
        zs = [
            torch.zeros(B, H, L, n + TRASH_BUCKETS, dtype=p.dtype, device=p.device).scatter_add_(
                3, expand_heads(m, H), zj
            )
            for m, n in zip(joint.maps, groups.num_buckets)
        ]  # (B, H, L, M+1+TRASH_BUCKETS) per partition
        del zj
        # One host sync per layer: the smallest share of a non-empty group (empty buckets count as 1).
        if opts.check_underflow and bool(
            torch.stack([torch.where(ne.unsqueeze(1), z, 1.0).amin() for z, ne in zip(zs, cands)]).min() < _UNDERFLOW
        ):
            live = torch.ones(H, dtype=torch.bool, device=p.device) if full_heads is None else ~full_heads
            bad = [
                (z < _UNDERFLOW).logical_and_(ne.unsqueeze(1)).logical_and_(live.view(1, H, 1, 1))
                for z, ne in zip(zs, cands)
            ]  # (B, H, L, M+1) each
            rows = torch.stack([b.any(-1).any(1) for b in bad]).any(0)  # (B, L)
            if bool(rows.any()):  # (only the LISA head's rows can make this False)
                bad_rows = rows
                for z, b in zip(zs, bad):
                    z.masked_fill_(b, float("inf"))  # 1 / Z = 0: those rows stay finite until replaced
    cand, cand_full = candidates(cands, allowed, opts)
    a = _FastSyntaxProbs.apply(scores, w, p, zs, joint, cands, cand, cand_full is not None, opts, full_heads)
    if opts.empty_rows == "self":
        fallback = ~cand.any(-1)  # (B, L)
        if bool(fallback.any()):
            a = a + self_fallback(fallback, full_heads, H)
    if bad_rows is not None:
        a = _splice_exact_rows(a, scores, mask, groups, w, opts, full_heads, bad_rows)
    return a


def _keyless_rows(allowed: torch.Tensor | None) -> torch.Tensor | None:
    """``[B, 1, L, 1]`` bool, True at the query rows that may attend to no key; ``None`` when there are none (one
    host sync, once per forward)."""
    if allowed is None:
        return None
    keyless = ~allowed.any(-1)  # (B, L)
    return keyless[:, None, :, None] if bool(keyless.any()) else None


def _splice_exact_rows(
    a: torch.Tensor,
    scores: torch.Tensor,
    mask: torch.Tensor | None,
    groups: SyntaxGroups,
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    rows: torch.Tensor,
) -> torch.Tensor:
    """Replace the query rows ``rows`` (bool ``[B, L]``) of ``a`` by the exact computation (rows are independent)."""
    B, H, L, _ = a.shape
    bi, li = rows.nonzero(as_tuple=True)
    R = bi.shape[0]
    s_rows = scores[bi, :, li, :].unsqueeze(2)  # (R, H, 1, L)
    m_rows = None if mask is None else mask.expand(B, 1, L, L)[bi, :, li, :].unsqueeze(2)  # (R, 1, 1, L)
    g_rows = SyntaxGroups(tuple(g[bi, li, :].unsqueeze(1) for g in groups.partitions), groups.num_buckets)
    allowed = allowed_keys(mask, B, L)
    ok_rows = None if allowed is None else allowed[bi, li, :].unsqueeze(1)  # (R, 1, L)
    counts = group_counts(g_rows, ok_rows)
    w_rows = None if w is None else w[bi]  # (R, H, L)

    def exact_rows(s: torch.Tensor, w_r: torch.Tensor | None) -> torch.Tensor:
        return exact_probs(apply_mask(s, m_rows), ok_rows, g_rows, counts, w_r, opts, full_heads)[0]  # (R, H, 1, L)

    if torch.is_grad_enabled() and (s_rows.requires_grad or (w_rows is not None and w_rows.requires_grad)):
        # Recomputed in the backward: the exact path's autograd intermediates of these rows (a dozen [R, H, 1, L]
        # per partition) are not kept; the result is the same (deterministic ops).
        a_rows = checkpoint(exact_rows, s_rows, w_rows, use_reentrant=False)
    else:
        a_rows = exact_rows(s_rows, w_rows)
    heads = torch.arange(H, device=a.device)
    # (bi, h, li) broadcast to (R, H): a contiguous copy of a with those rows replaced (no transposed copies)
    return a.index_put((bi.unsqueeze(1), heads.unsqueeze(0), li.unsqueeze(1)), a_rows.view(R, H, L))


class _FastSyntaxProbs(torch.autograd.Function):
    """``A = P * (Σ_p (α_p / Z_p)[group_p] + φ)`` with a hand-written backward (see the module docstring).

    Notation (per batch b, head h, row i, key k; partition p, group g): ``P`` full softmax, ``Z_p`` group sums of
    ``P``, ``iz_p = 1 / Z_p`` on non-empty groups (0 elsewhere and for full heads), ``P_p = P iz_p[g]`` the
    softmax within each group, ``Y_p = Σ_{k in g} P w`` so ``t_p = Σ_h iz_p Y_p`` are the topical scores, φ the
    weight of ``P`` itself (full candidate, fallback rows, LISA head). Small ``[B, H, L, M+1]`` tables carry
    everything per group; each ``[B, H, L, L]`` pass is a gather, a scatter_add or one elementwise op.

    The scores enter only through ``P`` (computed beforehand, without autograd, from the masked scores), so the
    gradient at masked keys is 0 without masking it again.
    """

    @staticmethod
    def forward(ctx, scores, w, p, zs, joint, cands, cand, has_full, opts, full_heads):  # noqa: D102
        B, H, L, _ = p.shape
        jidx = expand_heads(joint.buckets, H)  # (B, H, L, L)
        maps = [expand_heads(m, H) for m in joint.maps]  # (B, H, L, J) each
        izs = []
        for z, ne in zip(zs, cands):  # zs are scratch tensors of fast_syntax_probs: reuse them in place
            iz = z.clamp_(min=torch.finfo(z.dtype).tiny).reciprocal_().mul_(ne.unsqueeze(1))
            if full_heads is not None:
                iz.mul_((~full_heads).to(iz.dtype).view(1, H, 1, 1))
            izs.append(iz)
        # The only [B, H, L, L] tensor written here is the output ``a`` (P w goes there first): a fresh tensor of
        # that size costs as much as a pass over it (page faults), so none is allocated per pass.
        a = torch.empty_like(p)
        ys: list[torch.Tensor] = []
        logits: torch.Tensor | None = None
        if w is not None:
            pw = torch.mul(p, w.unsqueeze(2), out=a)  # (B, H, L, L)
            yj = torch.zeros(B, H, L, joint.size, dtype=p.dtype, device=p.device).scatter_add_(3, jidx, pw)
            parts = []
            for m, iz in zip(maps, izs):
                y = torch.zeros_like(iz).scatter_add_(3, m, yj)  # (B, H, L, M+1)
                ys.append(y)
                parts.append((y * iz).sum(1))  # (B, L, M+1)
            del pw, yj
            if has_full:  # Σ_h Σ_k P w over every key (w is 0 on full heads): the sum of any partition's buckets
                parts.append(ys[0].sum(-1).sum(1).unsqueeze(-1))  # (B, L, 1)
            logits = torch.cat(parts, -1)
        alpha = topical_weights(logits, cand, opts.aggregation)  # (B, L, C)
        fallback = ~cand.any(-1)  # (B, L)
        phi = full_weight(alpha[..., -1] if has_full else None, fallback, opts, full_heads, H)  # (B, H, L)
        torch.gather(_joint_table(_coef_tables(alpha, phi, izs), maps), 3, jidx, out=a)  # coefficients (B, H, L, L)
        a.mul_(p)  # A = P * coef
        # Not saved: A (or coef). The backward gathers coef again: one [B, H, L, L] tensor less per layer.
        ctx.save_for_backward(p, w, alpha, phi, *izs, *ys)
        ctx.meta = (joint, len(izs), opts, full_heads, has_full)
        return a

    @staticmethod
    def backward(ctx, da):  # noqa: D102
        p, w, alpha, phi, *rest = ctx.saved_tensors
        joint, n_parts, opts, full_heads, has_full = ctx.meta
        izs, ys = rest[:n_parts], rest[n_parts:]
        B, H, L, _ = p.shape
        jidx = expand_heads(joint.buckets, H)
        maps = [expand_heads(m, H) for m in joint.maps]
        topical = w is not None and opts.aggregation == "topical"
        scratch = torch.mul(p, da)  # (B, H, L, L) P dA
        wj = torch.zeros(B, H, L, joint.size, dtype=p.dtype, device=p.device).scatter_add_(3, jidx, scratch)
        ws = [torch.zeros_like(iz).scatter_add_(3, m, wj) for m, iz in zip(maps, izs)]  # Σ_{k in g} P dA
        del wj
        q_sum = ws[0].sum(-1)  # (B, H, L): Σ_k P dA
        rho = phi * q_sum  # full part of Σ_k P dP: φ Σ P dA (+ ψ Σ P w below)
        r_tables, dt_tables = [], []
        psi = None
        if topical:
            live = torch.ones(H, dtype=p.dtype, device=p.device) if full_heads is None else (~full_heads).to(p.dtype)
            d_parts = [(wp * iz).sum(1) for wp, iz in zip(ws, izs)]  # (B, L, M+1) each
            if has_full:
                d_parts.append((q_sum * live.view(1, H, 1)).sum(1).unsqueeze(-1))  # (B, L, 1)
            d_alpha = torch.cat(d_parts, -1)
            dt = alpha * (d_alpha - (alpha * d_alpha).sum(-1, keepdim=True))  # (B, L, C) softmax backward
            if has_full:
                psi = dt[..., -1].unsqueeze(1) * live.view(1, H, 1)  # (B, H, L)
                rho = rho + psi * ys[0].sum(-1)
        dts = _per_partition(dt, izs) if topical else ()
        for j, (iz, wp, a_p) in enumerate(zip(izs, ws, _per_partition(alpha, izs))):
            if topical:
                dt_p = dts[j]
                t_dt = iz * dt_p  # (B, H, L, M+1)
                t_r = torch.addcmul(a_p * wp, dt_p, ys[j]).mul_(iz).mul_(iz)  # iz_p * Σ_{k in g} P_p dP_p
                if j == 0 and psi is not None:
                    t_dt += psi.unsqueeze(-1)
                dt_tables.append(t_dt)
            else:
                t_r = (a_p * wp).mul_(iz).mul_(iz)
            if j == 0:
                t_r += rho.unsqueeze(-1)
            r_tables.append(t_r.neg_())
        # dS = P * (dA coef - Σ_p r_p[group_p] + dt[group] w), built in g; scratch holds one gathered term at a time
        g = _joint_table(_coef_tables(alpha, phi, izs), maps).gather(3, jidx).mul_(da)  # (B, H, L, L) dA coef
        g.add_(torch.gather(_joint_table(r_tables, maps), 3, jidx, out=scratch))  # - Σ_p r_p[group_p]
        grad_w = None
        if topical:
            dt_gath = torch.gather(_joint_table(dt_tables, maps), 3, jidx, out=scratch)  # Σ_p (iz_p dt_p)[g_p] + ψ
            g.addcmul_(dt_gath, w.unsqueeze(2))
            grad_w = dt_gath.mul_(p).sum(2)  # (B, H, L): sum over query rows
        elif w is not None:
            grad_w = torch.zeros_like(w)
        del scratch
        grad_scores = g.mul_(p)
        return grad_scores, grad_w, None, None, None, None, None, None, None, None


def _coef_tables(alpha: torch.Tensor, phi: torch.Tensor, izs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Per partition, the coefficient of ``P`` per bucket ``α_g / Z_g`` (``[B, H, L, M+1]``), φ added to the first."""
    tables = [a * iz for a, iz in zip(_per_partition(alpha, izs), izs)]
    tables[0] += phi.unsqueeze(-1)  # a per-row constant rides along in every bucket of the first table
    return tables


def _per_partition(x: torch.Tensor, izs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """``x`` ``[B, L, C]`` as one ``[B, 1, L, M+1]`` slice per partition (without the full candidate's column)."""
    sizes = [iz.shape[-1] for iz in izs]
    return x.unsqueeze(1).split(sizes + [x.shape[-1] - sum(sizes)], -1)[: len(sizes)]


def _joint_table(tables: list[torch.Tensor], maps: list[torch.Tensor]) -> torch.Tensor:
    """``Σ_p tables[p][maps[p]]``: per-partition ``[B, H, L, M+1]`` tables on the joint buckets, ``[B, H, L, J]``."""
    out = tables[0].gather(3, maps[0])
    for t, m in zip(tables[1:], maps[1:]):
        out.add_(t.gather(3, m))
    return out


#: The ``"syntax_fast"`` attention function (``AttentionInterface`` signature; the syntax keyword arguments are those
#: of :func:`syntaxformer.modeling.syntax_attention.syntax_attention_forward`).
fast_attention = functools.partial(dense_attention, fast_syntax_probs)
