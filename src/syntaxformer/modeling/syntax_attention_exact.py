"""The ``"exact"`` backend of the Syntax-BERT attention, the readable reference: the effective attention ``A``
``[B, H, L, L]`` through autograd, each group normalised with its own maximum (no group ever underflows); and the
layer around a dense ``A`` (LISA, gate, recorder, own value projection), which ``"fast"`` shares. Notation:
:mod:`syntaxformer.modeling.syntax_attention_core`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from syntaxformer.modeling.syntax_attention_core import (
    SyntaxAttentionOptions,
    SyntaxCall,
    SyntaxGroups,
    added_head_context,
    allowed_keys,
    apply_mask,
    attention_scores,
    cached_group_counts,
    candidates,
    expand_heads,
    full_softmax,
    full_weight,
    gate_probs,
    group_counts,
    layer_gate,
    plain_attention,
    read_call,
    self_fallback,
    topical_key_values,
    topical_weights,
    without_keyless_rows,
)

#: ``(scores, mask, groups, w, opts, full_heads) -> A``: how a dense backend computes the effective attention.
SyntaxProbs = Callable[..., torch.Tensor]


def exact_syntax_probs(
    scores: torch.Tensor,
    mask: torch.Tensor | None,
    groups: SyntaxGroups,
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None = None,
) -> torch.Tensor:
    """Effective attention ``A`` ``[B, H, L, L]`` from the unmasked fp32 ``scores``, the host's ``mask`` (bool or
    additive, ``[B, 1, L, L]``, or None), the keys' topical values ``w = V_h[k] · u_h`` ``[B, H, L]`` (None: zero
    query / no topical attention) and ``full_heads`` bool ``[H]`` (heads that keep full attention: LISA) or None."""
    allowed = allowed_keys(mask, scores.shape[0], scores.shape[2])
    counts = cached_group_counts(groups, mask, allowed)
    return exact_probs(apply_mask(scores, mask), allowed, groups, counts, w, opts, full_heads)[0]


def exact_probs(
    scores: torch.Tensor,
    allowed: torch.Tensor | None,
    groups: SyntaxGroups,
    cands: list[torch.Tensor],
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(A, α, candidates)`` from masked ``scores`` ``[B, H, L, Lk]``, the allowed keys and the candidate groups
    ``cands`` of every row (:func:`~syntaxformer.modeling.syntax_attention_core.group_counts`; ``L`` may be a
    subset of the rows): the effective attention, the topical weights ``[B, L, C]`` and the candidates (bool
    ``[B, L, C]``)."""
    B, H, L, _ = scores.shape
    live = None if full_heads is None else (~full_heads).float().view(1, H, 1, 1)
    p = without_keyless_rows(torch.softmax(scores, dim=-1), allowed)
    ok = allowed.unsqueeze(1) if allowed is not None else None
    cand, cand_full = candidates(cands, allowed, opts)
    probs_p, logits = [], []
    for g, n, ne in zip(groups.partitions, groups.num_buckets, cands):
        idx = expand_heads(g, H)
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
    alpha = topical_weights(torch.cat(logits, -1) if logits else None, cand, opts.aggregation)
    fallback = ~cand.any(-1)
    phi = full_weight(alpha[..., -1] if cand_full is not None else None, fallback, opts, full_heads, H)
    a = p * phi.unsqueeze(-1)
    start = 0
    for pp, idx, n in probs_p:
        a = a + pp * alpha[..., start : start + n].unsqueeze(1).expand(B, H, L, n).gather(3, idx)
        start += n
    if opts.empty_rows == "self" and bool(fallback.any()):
        a = a + self_fallback(fallback, full_heads, H)
    return a, alpha, cand


def record_syntax_layer(
    call: SyntaxCall,
    scores: torch.Tensor,
    mask: torch.Tensor | None,
    w: torch.Tensor | None,
    full_heads: torch.Tensor | None,
    probs: torch.Tensor | None = None,
    gate: torch.Tensor | None = None,
) -> None:
    """Fill ``call.record`` for a syntax layer: the effective attention (``probs``, or computed here from the
    unmasked fp32 ``scores``, gated with ``gate``) and the topical weights, by the exact path, without gradients."""
    record, groups = call.record, call.groups
    assert record is not None and groups is not None and call.layer is not None  # the callers check
    with torch.no_grad():
        s = apply_mask(scores, mask)
        allowed = allowed_keys(mask, s.shape[0], s.shape[2])
        exact, alpha, cand = exact_probs(s, allowed, groups, group_counts(groups, allowed), w, call.opts, full_heads)
        if probs is None:
            probs = (
                exact if gate is None else gate_probs(exact, without_keyless_rows(torch.softmax(s, -1), allowed), gate)
            )
    record.attentions[call.layer] = probs.detach()
    record.topical[call.layer], record.candidates[call.layer] = alpha, cand
    record.num_buckets = tuple(groups.num_buckets)
    record.full_candidate = call.opts.full_attention_candidate


def dense_attention(
    syntax_probs: SyntaxProbs,
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A layer whose effective attention ``A`` ``[B, H, L, L]`` is built by ``syntax_probs`` (exact or fast):
    ``([B, L, H, d] output, A)``, with LISA, the gate on ``A``, own value projections and the recorder."""
    call = read_call(module, query, key, scaling, **kwargs)
    if call.plain:
        return plain_attention(module, query, key, value, attention_mask, dropout, call)
    scores = attention_scores(query, key, call.scaling)  # (B, H, L, L) fp32, unmasked
    full_heads = None if call.lisa is None else call.lisa.record(query, key, attention_mask, call.scaling, scores)
    probs_syntax: torch.Tensor | None = None
    full: torch.Tensor | None = None
    gate: torch.Tensor | None = None
    if call.groups is None:  # the LISA layer outside the syntax layers
        probs = full_softmax(scores, attention_mask)  # (B, H, L, L)
        if call.record is not None and call.layer is not None:
            call.record.attentions[call.layer] = probs.detach()
    else:
        w = topical_key_values(module, value, call, full_heads)  # (B, H, L) or None
        probs = probs_syntax = syntax_probs(scores, attention_mask, call.groups, w, call.opts, full_heads)
        gate = layer_gate(module, call)
        if gate is not None:
            full = full_softmax(scores, attention_mask)  # (B, H, L, L), with autograd
            probs = gate_probs(probs, full, gate)
        if call.record is not None and call.layer is not None:
            record_syntax_layer(call, scores, attention_mask, w, full_heads, probs=probs)

    topical = call.topical
    if (
        probs_syntax is not None
        and topical is not None
        and topical.own_projections
        and call.opts.aggregation == "topical"
    ):
        assert call.layer is not None  # for the type checker: topical_key_values refused a layer without one
        out = _own_value_output(module, probs_syntax, full, value, dropout, topical.values, call.layer, gate)
    else:
        attn = F.dropout(probs, p=dropout, training=module.training) if dropout > 0 else probs
        out = torch.matmul(attn.to(value.dtype), value).transpose(1, 2)  # (B, L, H, d)
    if call.lisa is not None and call.lisa.added is not None:  # ctx_h += m_h P_a V_h
        out = out + added_head_context(module, call.lisa, value, dropout)
    return out.contiguous(), probs.to(value.dtype)


def _own_value_output(
    module: nn.Module,
    probs: torch.Tensor,
    full: torch.Tensor | None,
    value: torch.Tensor,
    dropout: float,
    values: Callable[[int, torch.Tensor], torch.Tensor],
    layer: int,
    gate: torch.Tensor | None,
) -> torch.Tensor:
    """``[B, L, H, d]`` context of a syntax layer with the topical attention's own value projection ``values``:
    ``(A V) W_Vt``, gated as ``P_full V + g ((A V) W_Vt - P_full V)`` (``gate`` ``[1, H | 1, 1, 1]`` or None)."""
    B, H, L, d = value.shape

    def context(p: torch.Tensor) -> torch.Tensor:
        p = F.dropout(p, p=dropout, training=module.training) if dropout > 0 else p
        return torch.matmul(p.to(value.dtype), value)  # (B, H, L, d)

    syn = context(probs).transpose(1, 2).reshape(B, L, H * d)  # (B, L, H*d)
    syn = values(layer, syn).view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
    if gate is not None:
        assert full is not None  # for the type checker: the caller computes the full softmax with the gate
        base = context(full)  # (B, H, L, d)
        syn = base + gate.to(syn.dtype) * (syn - base)
    return syn.transpose(1, 2).contiguous()


#: The ``"syntax_exact"`` attention function (``AttentionInterface`` signature; the syntax keyword arguments are those
#: of :func:`syntaxformer.modeling.syntax_attention.syntax_attention_forward`).
exact_attention = functools.partial(dense_attention, exact_syntax_probs)
