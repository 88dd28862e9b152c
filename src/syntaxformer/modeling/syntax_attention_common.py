"""The pieces of the ``"syntax"`` attention that every implementation shares (internal to the
``syntax_attention*`` modules): scores and masks, the candidate groups of each row and their topical weights, the
joint buckets of the partitions, the keys' topical values and the added LISA head's context.

The notation (``S``, ``P``, ``Z``, ``α``, ``φ``, joint buckets) is the one of
:mod:`syntaxformer.modeling.syntax_attention`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from syntaxformer.errors import InputError
from syntaxformer.modeling.syntax_attention_modules import AddedLisaHead, TopicalAttention
from syntaxformer.modeling.syntax_attention_options import _TRASH, SyntaxAttentionOptions, SyntaxGroups
from syntaxformer.modeling.syntax_attention_recorders import LisaRecorder


def _scores(query: torch.Tensor, key: torch.Tensor, scaling: float) -> torch.Tensor:
    """fp32 scores ``[B, H, L, L]`` (the scale is applied to the queries, the smaller tensor)."""
    return torch.matmul(query * scaling, key.transpose(-1, -2)).float()


def _allowed(mask: torch.Tensor | None, B: int, L: int) -> torch.Tensor | None:
    """Head-independent allowed keys ``[B, L, L]`` from the host's mask (None = everything allowed)."""
    if mask is None:
        return None
    if mask.dim() != 4 or mask.shape[1] != 1:
        raise InputError(f"the syntax attention needs one mask for all heads, [B, 1, L, L]; got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        return mask[:, 0].expand(B, L, L)
    return (mask[:, 0] > torch.finfo(mask.dtype).min / 2).expand(B, L, L)


def _apply_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Scores with disallowed keys at the fp32 minimum (bool mask) or plus an additive float mask."""
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, torch.finfo(torch.float32).min)
    return (scores + mask.float()).clamp(min=torch.finfo(torch.float32).min)


# ---------------------------------------------------------------------------------------------------------------
# Candidates and topical weights (shared by the implementations)
# ---------------------------------------------------------------------------------------------------------------


def _group_counts(groups: SyntaxGroups, allowed: torch.Tensor | None, fast: bool = False) -> list[torch.Tensor]:
    """Per partition, ``[B, Lq, M+1]`` bool: group g has an allowed key in row i (bucket 0 is never a group).
    ``fast``: over the scatter index, ``[B, Lq, M+1+_TRASH]`` (the trash buckets are never groups either)."""
    out = []
    if fast:
        assert groups.scatter_index is not None  # for the type checker: syntax_probs builds it before the fast path
        index = groups.scatter_index
    else:
        index = groups.partitions
    sizes = [n + _TRASH for n in groups.num_buckets] if fast else groups.num_buckets
    for g, n, real in zip(index, sizes, groups.num_buckets):
        B, Lq, Lk = g.shape
        if allowed is not None:
            src = allowed.float()
        else:
            src = torch.ones(1, 1, 1, dtype=torch.float32, device=g.device).expand(B, Lq, Lk)
        cnt = torch.zeros(B, Lq, n, dtype=torch.float32, device=g.device).scatter_add_(2, g, src)
        ne = cnt > 0
        ne[..., 0] = False
        ne[..., real:] = False
        out.append(ne)
    return out


def _cached_counts(
    groups: SyntaxGroups, mask: torch.Tensor | None, allowed: torch.Tensor | None, fast: bool = False
) -> list[torch.Tensor]:
    """:func:`_group_counts` computed once per forward: the layers of one forward share the groups and the host's
    mask object, so the first layer's result is kept in ``groups.cache`` (with the mask itself, so that a cached
    entry can never be taken for another mask)."""
    if groups.cache is None:
        return _group_counts(groups, allowed, fast)
    hit = groups.cache.get(fast)
    if hit is not None and hit[0] is mask:
        return hit[1]
    counts = _group_counts(groups, allowed, fast)
    groups.cache[fast] = (mask, counts)
    return counts


def _topical_weights(logits: torch.Tensor | None, cand: torch.Tensor, aggregation: str) -> torch.Tensor:
    """α ``[B, L, C]`` over candidates ``cand`` (bool ``[B, L, C]``); 0 for non-candidates and candidate-less rows."""
    c = cand.to(torch.float32)
    if aggregation == "sum":
        return c
    if aggregation == "mean" or logits is None:
        return c / c.sum(-1, keepdim=True).clamp(min=1.0)
    x = logits.masked_fill(~cand, float("-inf"))
    mx = x.amax(-1, keepdim=True)
    mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
    e = torch.exp(x - mx) * c
    return e / e.sum(-1, keepdim=True).clamp(min=torch.finfo(torch.float32).tiny)


def _full_weight(
    alpha_full: torch.Tensor | None,
    fallback: torch.Tensor,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    H: int,
) -> torch.Tensor:
    """φ ``[B, H, L]``: weight of the full softmax P in the effective attention (the full candidate's α, plus 1 on
    fallback rows for ``empty_rows="full"``; 1 for full (LISA) heads)."""
    phi = torch.zeros_like(fallback, dtype=torch.float32)
    if alpha_full is not None:
        phi = phi + alpha_full
    if opts.empty_rows == "full":
        phi = phi + fallback.float()
    phi = phi.unsqueeze(1).expand(-1, H, -1)
    if full_heads is not None:
        phi = torch.where(full_heads.view(1, H, 1), torch.ones_like(phi), phi)
    return phi


def _self_fallback(fallback: torch.Tensor, full_heads: torch.Tensor | None, H: int) -> torch.Tensor:
    """``[B, H, L, L]`` (broadcast) one-hot on the diagonal of fallback rows for ``empty_rows="self"``."""
    B, L = fallback.shape
    eye = torch.eye(L, dtype=torch.float32, device=fallback.device)
    rows = fallback.float().view(B, 1, L, 1)
    if full_heads is not None:
        rows = rows * (~full_heads).float().view(1, H, 1, 1)
    return rows * eye  # (B, 1|H, L, L)


def _candidates(
    cands: list[torch.Tensor], allowed: torch.Tensor | None, opts: SyntaxAttentionOptions
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """All candidates ``[B, Lq, C]`` (partitions' groups, then the full candidate) and the full one ``[B, Lq]``."""
    if not opts.full_attention_candidate:
        return torch.cat(cands, -1), None
    B, Lq, _ = cands[0].shape
    full = allowed.any(-1) if allowed is not None else torch.ones(B, Lq, dtype=torch.bool, device=cands[0].device)
    return torch.cat(cands + [full.unsqueeze(-1)], -1), full


# ---------------------------------------------------------------------------------------------------------------
# Joint buckets: the partitions' groups of a pair combined into one id per row
# ---------------------------------------------------------------------------------------------------------------


class _JointIndex(NamedTuple):
    """The partitions' scatter buckets combined: pair ``(i, k)`` goes to joint bucket ``buckets[b, i, k]`` of row
    ``i`` (its tuple of buckets, one per partition, numbered per row), and joint bucket ``j`` of row ``i`` lies in
    bucket ``maps[p][b, i, j]`` of partition ``p``. Every ``[B, H, L, L]`` gather / scatter of the fast path then
    runs once over the joint buckets instead of once per partition; the per-partition tables are small
    ``[B, H, L, J]`` gathers / scatters of them."""

    buckets: torch.Tensor  # (B, L, L) int64
    maps: tuple[torch.Tensor, ...]  # (B, L, J) int64 each
    size: int  # J: the largest number of joint buckets of a row


def _joint_buckets(index: Sequence[torch.Tensor], sizes: Sequence[int], pad: int = 1) -> _JointIndex:
    """:class:`_JointIndex` of bucket ids ``index`` (``[B, L, L]`` each, ids below ``sizes``); ``J`` rounded up to a
    multiple of ``pad`` (the extra slots decode to bucket 0 everywhere and no pair is in them)."""
    code = index[0].clone()  # (B, L, L) mixed-radix code of the tuple of buckets
    for g, n in zip(index[1:], sizes[1:]):
        code.mul_(n).add_(g)
    srt, perm = code.sort(dim=-1)
    new = torch.ones_like(srt, dtype=torch.bool)
    new[..., 1:] = srt[..., 1:] != srt[..., :-1]
    rank = new.cumsum(-1).sub_(1)  # (B, L, L) joint bucket of each sorted pair
    J = int(rank[..., -1].max()) + 1 if rank.numel() else 1
    J = -(-J // pad) * pad
    joint = torch.empty_like(rank).scatter_(-1, perm, rank)
    vals = torch.zeros(*rank.shape[:-1], J, dtype=code.dtype, device=code.device).scatter_(-1, rank, srt)
    maps = []
    for n in reversed(sizes[1:]):  # unused slots decode to bucket 0 (no group): never gathered, sum to 0
        maps.append(vals % n)
        vals = vals.div_(n, rounding_mode="floor")
    maps.append(vals)
    return _JointIndex(joint, tuple(reversed(maps)), J)


def _expand(g: torch.Tensor, H: int) -> torch.Tensor:
    """Group ids ``[B, Lq, Lk]`` as a (stride-0) ``[B, H, Lq, Lk]`` index."""
    return g.unsqueeze(1).expand(g.shape[0], H, *g.shape[1:])


# ---------------------------------------------------------------------------------------------------------------
# Per-layer inputs and outputs shared by the dense and the flex / triton paths
# ---------------------------------------------------------------------------------------------------------------


def _topical_key_values(
    module: nn.Module,
    value: torch.Tensor,
    groups: SyntaxGroups,
    opts: SyntaxAttentionOptions,
    topical: TopicalAttention | None,
    layer: int | None,
    full_heads: torch.Tensor | None,
) -> torch.Tensor | None:
    """Checks the groups against the layer's ``[B, L]`` and returns ``w = V_h[k] · u_h`` ``[B, H, L]`` (each key's
    value along the folded task query ``u``; the LISA head, if any, takes no part), or ``None`` without topical
    attention. Shared by the fast / exact and flex paths."""
    B, H, L, d = value.shape
    for g in groups.partitions:
        if g.shape != (B, L, L):
            raise InputError(
                f"syntax_groups has shape {tuple(g.shape)} but the layer sees [B, L, L] = "
                f"[{B}, {L}, {L}]; build the groups from the same padded batch"
            )
    if opts.aggregation != "topical" or topical is None:
        return None
    if layer is None:
        raise InputError(f"{type(module).__name__} has no layer index; set module.syntax_layer_idx")
    u = topical.folded(layer).view(H, d)  # (H, d)
    if full_heads is not None:
        u = u * (~full_heads).to(u.dtype).unsqueeze(-1)
    return torch.einsum("bhkd,hd->bhk", value.float(), u.float())  # (B, H, L)


def _added_head_context(
    module: nn.Module, added: AddedLisaHead, lisa: LisaRecorder, value: torch.Tensor, dropout: float
) -> torch.Tensor:
    """``[B, L, H, d]`` what the added LISA head adds to each head's context: ``m_h P_a V_h``."""
    H = value.shape[1]
    assert lisa.log_probs is not None  # for the type checker: the caller recorded them in this forward
    p_a = lisa.log_probs.exp()  # (B, L, L)
    p_a = F.dropout(p_a, p=dropout, training=module.training) if dropout > 0 else p_a
    extra = torch.matmul(p_a.unsqueeze(1).to(value.dtype), value) * added.mix.to(value.dtype).view(1, H, 1, 1)
    return extra.transpose(1, 2)  # (B, L, H, d)
