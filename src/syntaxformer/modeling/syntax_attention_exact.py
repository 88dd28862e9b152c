"""The ``"exact"`` implementation of the ``"syntax"`` attention: the effective attention ``A`` through autograd,
each group normalised with its own maximum (``scatter_reduce`` amax), so no group ever underflows.

It is the ``"fast"`` path's fallback for the rows where a group's share of the full softmax underflows, and what
the recorder (:class:`~syntaxformer.modeling.syntax_attention_recorders.SyntaxAttentionRecorder`) reads the
topical weights from; see :mod:`syntaxformer.modeling.syntax_attention`.
"""

from __future__ import annotations

from typing import Literal, overload

import torch

from syntaxformer.modeling.syntax_attention_common import (
    _candidates,
    _expand,
    _full_weight,
    _self_fallback,
    _topical_weights,
)
from syntaxformer.modeling.syntax_attention_options import SyntaxAttentionOptions, SyntaxGroups


@overload
def _exact_probs(
    scores: torch.Tensor,
    allowed: torch.Tensor | None,
    groups: SyntaxGroups,
    cands: list[torch.Tensor],
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    with_weights: Literal[False] = False,
) -> torch.Tensor: ...


@overload
def _exact_probs(
    scores: torch.Tensor,
    allowed: torch.Tensor | None,
    groups: SyntaxGroups,
    cands: list[torch.Tensor],
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    with_weights: Literal[True],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...


def _exact_probs(
    scores: torch.Tensor,
    allowed: torch.Tensor | None,
    groups: SyntaxGroups,
    cands: list[torch.Tensor],
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    with_weights: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fast path's algebra through autograd, each group normalised with its own maximum (never underflows).

    With ``with_weights`` also the topical weights α ``[B, L, C]`` and the candidates (bool ``[B, L, C]``)."""
    B, H, L, _ = scores.shape  # L: query rows (may differ from the number of keys)
    live = None if full_heads is None else (~full_heads).float().view(1, H, 1, 1)
    p = torch.softmax(scores, dim=-1)
    ok = allowed.unsqueeze(1) if allowed is not None else None
    cand, cand_full = _candidates(cands, allowed, opts)
    probs_p, logits = [], []
    for g, n, ne in zip(groups.partitions, groups.num_buckets, cands):
        idx = _expand(g, H)
        s = scores.detach()
        m = torch.full((B, H, L, n), float("-inf"), device=s.device).scatter_reduce(3, idx, s, "amax")
        e = torch.exp(scores - m.gather(3, idx))
        if ok is not None:
            e = e * ok
        z = torch.zeros(B, H, L, n, device=s.device).scatter_add(3, idx, e)
        iz = torch.where(ne.unsqueeze(1), 1.0 / z.clamp(min=torch.finfo(z.dtype).tiny), torch.zeros_like(z))
        if live is not None:
            iz = iz * live
        pp = e * iz.gather(3, idx)  # (B, H, L, L) softmax within each group
        probs_p.append((pp, idx, n))
        if w is not None:
            logits.append(torch.zeros(B, H, L, n, device=s.device).scatter_add(3, idx, pp * w.unsqueeze(2)).sum(1))
    if cand_full is not None and w is not None:
        logits.append((p * w.unsqueeze(2)).sum(-1).sum(1).unsqueeze(-1))
    alpha = _topical_weights(torch.cat(logits, -1) if logits else None, cand, opts.aggregation)
    fallback = ~cand.any(-1)
    phi = _full_weight(alpha[..., -1] if cand_full is not None else None, fallback, opts, full_heads, H)
    a = p * phi.unsqueeze(-1)
    start = 0
    for pp, idx, n in probs_p:
        a = a + pp * alpha[..., start : start + n].unsqueeze(1).expand(B, H, L, n).gather(3, idx)
        start += n
    if opts.empty_rows == "self" and bool(fallback.any()):
        a = a + _self_fallback(fallback, full_heads, H)
    return (a, alpha, cand) if with_weights else a
