"""Syntax-BERT attention (Bai et al., 2021, §3.3) as a Hugging Face attention function named ``"syntax"``.

This module is the attention function itself (:func:`syntax_attention_forward`: which implementation runs, the
layers without sub-networks, LISA, the gate and the recorder around the dense paths) and the public face of the
``syntax_attention*`` modules beside it, each with one job, every public name re-exported here:

* :mod:`~syntaxformer.modeling.syntax_attention_options`: the name ``"syntax"``, :class:`SyntaxAttentionOptions`,
  :class:`SyntaxGroups` / :func:`prepare_groups`;
* :mod:`~syntaxformer.modeling.syntax_attention_modules`: the learned parts, :class:`TopicalAttention`,
  :class:`SyntaxGate`, :class:`AddedLisaHead`;
* :mod:`~syntaxformer.modeling.syntax_attention_recorders`: :class:`LisaRecorder`,
  :class:`SyntaxAttentionRecorder`;
* :mod:`~syntaxformer.modeling.syntax_attention_common`: what every implementation shares (masks, candidates,
  topical weights, joint buckets);
* one module per implementation: :mod:`~syntaxformer.modeling.syntax_attention_fast`,
  :mod:`~syntaxformer.modeling.syntax_attention_exact`, :mod:`~syntaxformer.modeling.syntax_attention_flex` and
  :mod:`~syntaxformer.modeling.syntax_attention_triton` (with its kernels in ``syntax_attention_triton_forward`` /
  ``syntax_attention_triton_backward``).

Every self-attention layer of the host model is split into *sub-networks*: for each relation group ``g`` of a
partition of the L x L pairs (see :mod:`syntaxformer.masks.relations`; dependency and constituency trees are two
partitions, so a sub-network is a pair (partition, group)), the pretrained heads attend only to the keys ``j``
with ``groups[i, j] == g``. The sub-networks share the pretrained Q / K / V / O weights. *Topical attention*
(Eq. 2-3) mixes them per token with a learned task query ``q`` per layer.

Per layer, head ``h`` and query token ``i`` (``S = Q Kᵀ / sqrt(d_head)``, masked keys excluded everywhere):

* ``A_g[h, i, :] = softmax(S[h, i, k] over keys k with group g)``; a group with no key in row ``i`` is *empty*:
  it contributes nothing and is not a candidate of the topical softmax.
* ``O_g[i] = concat_h(Σ_k A_g[h, i, k] V_h[k])`` (one vector of size ``heads * d_head``).
* score ``t_{i,g} = q · (O_g[i] W_O W_K) / sqrt(hidden)`` with the layer's own output projection ``W_O`` and key
  projection ``W_K`` (Eq. 2 with H_j = (A_1,j ⊕ ... ⊕ A_k,j) W^O, keys H W^K; biases cancel in the softmax).
* ``α_i = softmax_g(t_{i,g})`` over the non-empty sub-networks; the output is ``Σ_g α_{i,g} O_g[i]``; the host
  layer then applies its output projection, dropout, residual and LayerNorm as usual (outside this function).
  The topical *values* are the sub-network outputs themselves: applying ``W^V`` of Eq. 2 on top of ``W^O`` would
  feed the layer a second value projection that no pretrained layer expects.

Choices (documented in ``docs/syntax_bert.md``):

* ``empty_rows="full"`` (default): a row with no non-empty sub-network (``[CLS]``, ``[SEP]``, padding, one-word
  sentences) falls back to ordinary attention over the non-padding keys, i.e. to the pretrained layer. ``"self"``
  makes it attend to itself only. With ``"self"`` the ``[CLS]`` state never sees the sentence, so a first-token
  pooler would get a constant input: that is why ``"full"`` is the default.
* ``full_attention_candidate=False`` (default, the paper: M = 90 / 92 possible sub-networks, §4; per token only
  the non-empty ones are candidates, 16.1 on average on STS-B dev): vanilla attention is
  not one of the aggregated candidates; ``True`` adds it as one more sub-network.
* ``projections`` of :class:`TopicalAttention`: ``"shared"`` (default; the score above) or ``"own"`` (the
  paper's own ``W_Kt`` in place of ``W_K`` in the score, still folded into one vector per layer, and an own value
  projection ``W_Vt`` applied to the layer's context before ``W_O``: one more matmul).
* ``aggregation``: ``"topical"`` (Eq. 2-3), ``"sum"`` (Table 5 "w/o topical attention": a plain summation of the
  non-empty sub-networks) or ``"mean"`` (their average; what ``"topical"`` computes with a zero query).
* ``syntax_gate`` (:class:`SyntaxGate`, our extension): ``ctx = P_full V + g (Σ_g α_g O_g - P_full V)`` with a
  zero-initialised scalar ``g`` per layer or per head, so the model is exactly the pretrained encoder at init. It
  is applied on top of either implementation (one more autograd softmax ``P_full`` per layer).
* LISA (Strubell et al., 2018): in layer ``lisa_layer`` head ``lisa_head`` is taken out of the decomposition and
  attends to all non-padding keys; its log attention probabilities are recorded so that the model can add a
  cross-entropy loss against the parse (see :class:`LisaRecorder`). With :class:`AddedLisaHead` (the recorder's
  ``added``) a new head with its own query / key projections is supervised instead and every pretrained head
  stays as it is.

Two implementations compute the same thing (both are checked against a slow loop over the sub-networks written
from the paper, ``tests/modeling/reference_syntax_attention.py``):

* ``"fast"``: never builds ``[B, H, M, L, L]`` or ``[B, L, M, d]``. One full softmax ``P`` per layer; per
  partition the group sums ``Z`` are a ``scatter_add`` of ``P`` into ``[B, H, L, M+1]``, so ``P / Z[group]`` is
  the softmax within each group (the full normaliser cancels). The topical scores are linear in the sub-network
  outputs: ``t_{i,g} = Σ_h Σ_{k in g} A_g[h,i,k] (V_h[k] · u_h)`` with ``u = W_O W_K q / sqrt(hidden)`` folded
  once per layer, a ``scatter_add`` into ``[B, H, L, M+1]``. The output is one ordinary ``A V`` product with
  ``A = P * (α / Z)[group]``. The partitions are combined into *joint buckets* per row (the tuple of a pair's
  groups; a few dozen per row; built once per forward), so each ``[B, H, L, L]`` scatter or gather runs once for
  all partitions and the per-partition tables are small gathers of it. A hand-written backward reuses the same
  tables; only ``P`` is kept (the coefficients are gathered again), so memory is ~1 extra ``[B, H, L, L]`` per
  layer, and each pass writes into one of two ``[B, H, L, L]`` buffers (fresh memory costs as much as a pass).
* ``"exact"``: the same algebra through autograd, normalising each group with its own maximum
  (``scatter_reduce`` amax). ``"fast"`` uses it by itself for the query rows where a non-empty group's share of
  the full softmax underflows (a group whose best score is ~58 nats below the row's best; pretrained MiniLM has
  such rows in its first layer) and splices them in, so no group is ever lost.

A third, ``"flex"`` (GPU; eager on the CPU for tests), never builds the effective attention ``A`` either: since
``A[h,i,k] = Σ_p α_{i,p,g_p(i,k)} exp(S_ik - log Z_{p,h,i,g_p(i,k)}) + φ_{h,i} P[h,i,k]``, the coefficient of
``exp(S_ik)`` depends on the pair only through its joint bucket, so ``A V = W · softmax(S + b[joint bucket]) V``
with one bias ``b = log(Σ_p α_p / Z_p + φ / Z_full)`` per (head, row, joint bucket) and the row's total weight
``W = Σ α + φ`` (1 for ``"topical"`` / ``"mean"``). An exact pre-pass over chunks of query rows (one scatter of
the scores into the joint buckets, each with its own maximum; a hand-written backward that keeps only the
``[B, H, L, J]`` tables) gives ``log Z`` and the topical scores per (row, group); the second pass is one
``torch.nn.attention.flex_attention`` call (compiled on CUDA) whose ``score_mod`` gathers ``b``; the gradient of
``b`` is a chunked pass in the backward (the kernel sees a bias without gradient). The gate's ``P_full V`` is one
more fused SDPA call. Memory: no ``[B, H, L, L]`` tensor is kept for the backward; the passes hold one chunk of
``[B, H, rows, L]`` scores at a time. No attention dropout (refused with a ConfigError); the function returns
no attention weights (as SDPA). ``flex_attention`` has no CPU backward: there, under autograd, the same biased
softmax runs densely (a test stand-in, not a fast path).

A fourth, ``"triton"`` (:mod:`syntaxformer.modeling.syntax_attention_triton`), runs the flex algebra with its two
passes over the pairs as fused Triton kernels (statistics pass, biased flash attention, flash-style backward;
CUDA, or Triton's interpreter on the CPU for tests); everything between and around the passes is the flex path's
(``_PairPasses`` in :mod:`~syntaxformer.modeling.syntax_attention_flex`). ``"auto"`` picks ``"triton"`` on CUDA
when triton is installed and no attention dropout is active, ``"fast"`` elsewhere; the CUDA choice is pending a GPU
measurement (``docs/syntax_bert.md``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from syntaxformer.errors import ConfigError, InputError
from syntaxformer.modeling.syntax_attention_common import (
    _added_head_context,
    _allowed,
    _apply_mask,
    _group_counts,
    _scores,
    _topical_key_values,
)
from syntaxformer.modeling.syntax_attention_exact import _exact_probs
from syntaxformer.modeling.syntax_attention_fast import syntax_probs
from syntaxformer.modeling.syntax_attention_flex import _FLEX_PASSES, _flex_attention_forward, _PairPasses
from syntaxformer.modeling.syntax_attention_modules import AddedLisaHead, SyntaxGate, TopicalAttention, gate_probs
from syntaxformer.modeling.syntax_attention_options import (
    SYNTAX_ATTENTION,
    Aggregation,
    EmptyRows,
    Implementation,
    SyntaxAttentionOptions,
    SyntaxGroups,
    prepare_groups,
)
from syntaxformer.modeling.syntax_attention_recorders import LisaRecorder, SyntaxAttentionRecorder

__all__ = [
    "SYNTAX_ATTENTION",
    "AddedLisaHead",
    "Aggregation",
    "EmptyRows",
    "Implementation",
    "LisaRecorder",
    "SyntaxAttentionOptions",
    "SyntaxAttentionRecorder",
    "SyntaxGate",
    "SyntaxGroups",
    "TopicalAttention",
    "gate_probs",
    "layer_index",
    "prepare_groups",
    "register_syntax_attention",
    "syntax_attention_forward",
    "syntax_probs",
]


def layer_index(module: nn.Module) -> int | None:
    """The layer index the syntax attention uses for ``module``: ``syntax_layer_idx`` (set by the syntax models
    for architectures without one), else the module's own ``layer_idx``."""
    idx = getattr(module, "syntax_layer_idx", None)
    return getattr(module, "layer_idx", None) if idx is None else idx


def syntax_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    syntax_groups: Any = None,
    syntax_options: SyntaxAttentionOptions | None = None,
    syntax_topical: TopicalAttention | None = None,
    syntax_lisa: LisaRecorder | None = None,
    syntax_gate: SyntaxGate | None = None,
    syntax_record: SyntaxAttentionRecorder | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention function for ``AttentionInterface`` (registered as ``"syntax"``).

    Args:
        module: the calling attention module (its ``layer_idx`` selects the topical query; ``training`` gates
            dropout).
        query, key, value: ``[B, H, L, d]``.
        attention_mask: ``None`` (no padding), bool ``[B, 1, L, L]`` (True = may attend) or an additive float mask
            broadcastable to ``[B, 1, L, L]`` (0 = may attend); one mask for all heads.
        scaling: score scale (default ``d ** -0.5``).
        dropout: attention-probability dropout (used when ``module.training``).
        syntax_groups: group ids of one or more partitions, ``[B, L, L]`` each (a tensor, a sequence, or
            :class:`SyntaxGroups`); ``None`` = plain attention.
        syntax_options: :class:`SyntaxAttentionOptions` (default options if ``None``).
        syntax_topical: :class:`TopicalAttention` with the task queries (``None``: zero query).
        syntax_lisa: :class:`LisaRecorder` to fill in the LISA layer.
        syntax_gate: :class:`SyntaxGate` (``None``: no gate, the paper's literal form): the effective attention of
            a syntax layer becomes ``P_full + g (Σ_g α_g A_g - P_full)``.
        syntax_record: :class:`SyntaxAttentionRecorder` to fill with this layer's attention and topical weights
            (analysis; the outputs are unchanged).
        **kwargs: other model kwargs, ignored.

    Returns:
        ``([B, L, H, d] output, [B, H, L, L] effective attention or None)``. The effective attention of a row is
        ``Σ_g α_g A_g`` (it sums to 1 for ``"topical"`` / ``"mean"``). With the topical attention's own value
        projection (``syntax_topical.own_projections``) a syntax layer's output is ``(A V) W_Vt`` (gated:
        ``P_full V + g ((A V) W_Vt - P_full V)``), every row and head of the layer; the returned attention is
        still the effective ``A`` (gated as above), before ``W_Vt``.
    """
    opts = _resolve_implementation(
        syntax_options or SyntaxAttentionOptions(), query, dropout, module, gated=syntax_gate is not None
    )
    layer = layer_index(module)
    prepared = prepare_groups(syntax_groups)
    # the groups of a syntax layer (None: the layer attends as usual) and the LISA recorder of the LISA layer
    groups = prepared if prepared is not None and opts.uses_syntax(layer) else None
    lisa = syntax_lisa if syntax_lisa is not None and layer is not None and layer == syntax_lisa.layer else None
    if groups is None and lisa is None:
        # Not a syntax layer: the host's usual (fused) attention.
        out, weights = sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=False
        )
        if syntax_record is not None and layer is not None:
            with torch.no_grad():  # the fused kernel returns no weights: the plain softmax, beside it
                s = _scores(query, key, query.shape[-1] ** -0.5 if scaling is None else scaling)
                syntax_record.attentions[layer] = torch.softmax(_apply_mask(s, attention_mask), dim=-1)
        return out, weights

    B, H, L, d = query.shape
    if key.shape[2] != L or getattr(module, "is_causal", False):
        raise ConfigError(
            f"the syntax attention is bidirectional self-attention (encoders); {type(module).__name__} "
            f"has {L} queries, {key.shape[2]} keys, is_causal={getattr(module, 'is_causal', False)}"
        )
    scaling = d**-0.5 if scaling is None else scaling
    if groups is not None and opts.implementation in ("flex", "triton"):
        passes = _triton_passes() if opts.implementation == "triton" else _FLEX_PASSES
        out = _flex_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            scaling,
            dropout,
            groups,
            opts,
            syntax_topical,
            lisa,
            syntax_gate,
            syntax_record,
            layer,
            passes,
        )
        return out, None
    scores = _scores(query, key, scaling)  # (B, H, L, L) fp32, unmasked
    allowed = _allowed(attention_mask, B, L)  # (B, L, L) or None
    full_heads = None
    added = lisa.added if lisa is not None else None
    if lisa is not None and added is not None:  # LISA as an added head: the pretrained heads all stay as they are
        head_mask = None if attention_mask is None else attention_mask[:, 0]
        lisa.log_probs = torch.log_softmax(_apply_mask(added.scores(query, key, scaling), head_mask), -1)
    elif lisa is not None:
        if not 0 <= lisa.head < H:
            raise ConfigError(f"lisa_head={lisa.head} but the layer has {H} heads")
        head_mask = None if attention_mask is None else attention_mask[:, 0]
        lisa.log_probs = torch.log_softmax(_apply_mask(scores[:, lisa.head], head_mask), -1)  # (B, L, L)
        full_heads = torch.zeros(H, dtype=torch.bool, device=query.device)
        full_heads[lisa.head] = True

    probs_syntax: torch.Tensor | None = None
    full: torch.Tensor | None = None
    gate: torch.Tensor | None = None
    if groups is None:
        probs = torch.softmax(_apply_mask(scores, attention_mask), dim=-1)  # (B, H, L, L)
    else:
        w = _topical_key_values(module, value, groups, opts, syntax_topical, layer, full_heads)  # (B, H, L)
        probs = syntax_probs(scores, attention_mask, groups, w, opts, full_heads)  # (B, H, L, L)
        probs_syntax = probs
        if syntax_gate is not None:
            if layer is None:
                raise InputError(f"{type(module).__name__} has no layer index; set module.syntax_layer_idx")
            full = torch.softmax(_apply_mask(scores, attention_mask), dim=-1)  # (B, H, L, L), with autograd
            gate = syntax_gate.value(layer)
            probs = gate_probs(probs, full, gate)
        if syntax_record is not None and layer is not None:
            with torch.no_grad():
                _, alpha, cand = _exact_probs(
                    _apply_mask(scores, attention_mask),
                    allowed,
                    groups,
                    _group_counts(groups, allowed),
                    w,
                    opts,
                    full_heads,
                    with_weights=True,
                )
            syntax_record.topical[layer], syntax_record.candidates[layer] = alpha, cand
            syntax_record.num_buckets = tuple(groups.num_buckets)
            syntax_record.full_candidate = opts.full_attention_candidate
    if syntax_record is not None and layer is not None:
        syntax_record.attentions[layer] = probs.detach()

    if (
        probs_syntax is not None  # a syntax layer
        and syntax_topical is not None
        and syntax_topical.own_projections
        and opts.aggregation == "topical"
    ):
        assert layer is not None  # for the type checker: _topical_key_values refused a topical layer without one
        out = _own_value_output(module, probs_syntax, full, value, dropout, syntax_topical, layer, gate)
    else:
        attn = F.dropout(probs, p=dropout, training=module.training) if dropout > 0 else probs
        out = torch.matmul(attn.to(value.dtype), value).transpose(1, 2)  # (B, L, H, d)
    if lisa is not None and added is not None:  # ctx_h += m_h P_a V_h
        out = out + _added_head_context(module, added, lisa, value, dropout)
    return out.contiguous(), probs.to(value.dtype)


def _resolve_implementation(
    opts: SyntaxAttentionOptions, query: torch.Tensor, dropout: float, module: nn.Module, gated: bool = False
) -> SyntaxAttentionOptions:
    """``implementation="auto"`` made concrete for this call: ``"triton"`` on CUDA when triton is importable, no
    attention dropout is active (the fused kernels have none) and the layer is not gated in 16-bit precision,
    ``"fast"`` everywhere else (the CPU: the fused kernels run there only in Triton's interpreter). A gate in bf16
    goes to ``"fast"`` because the triton path, like flex, mixes two separately rounded outputs
    (``P_full V + g (syn - P_full V)``): the gate's gradient is a small difference of bf16 products (flex: 75 %
    relative error in a tiny model against 1.0 % for ``"fast"``, which mixes fp32 probabilities). The CUDA choice
    is pending a GPU measurement of the fused kernels against ``"fast"`` (docs/syntax_bert.md)."""
    if opts.implementation != "auto":
        return opts
    half = query.dtype in (torch.bfloat16, torch.float16)
    fused = (
        query.device.type == "cuda"
        and not (dropout > 0 and module.training)
        and not (gated and half)
        and _triton_importable()
    )
    return replace(opts, implementation="triton" if fused else "fast")


@functools.cache
def _triton_importable() -> bool:
    """Whether the triton package is installed (looked up once per process, not imported)."""
    import importlib.util

    return importlib.util.find_spec("triton") is not None


def _triton_passes() -> _PairPasses:
    """The fused kernels' passes (:mod:`syntaxformer.modeling.syntax_attention_triton`, imported on first use)."""
    from syntaxformer.modeling.syntax_attention_triton import check, context, prepass

    return _PairPasses(check, prepass, context)


def _own_value_output(
    module: nn.Module,
    probs: torch.Tensor,
    full: torch.Tensor | None,
    value: torch.Tensor,
    dropout: float,
    topical: TopicalAttention,
    layer: int,
    gate: torch.Tensor | None,
) -> torch.Tensor:
    """``[B, L, H, d]`` context of a syntax layer with the topical attention's own value projection:
    ``(A V) W_Vt``, gated as ``P_full V + g ((A V) W_Vt - P_full V)`` (``gate`` ``[1, H | 1, 1, 1]`` or None)."""
    B, H, L, d = value.shape

    def context(p: torch.Tensor) -> torch.Tensor:
        p = F.dropout(p, p=dropout, training=module.training) if dropout > 0 else p
        return torch.matmul(p.to(value.dtype), value)  # (B, H, L, d)

    syn = context(probs).transpose(1, 2).reshape(B, L, H * d)  # (B, L, H*d)
    syn = topical.values(layer, syn).view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
    if gate is not None:
        assert full is not None  # for the type checker: the caller computes the full softmax with the gate
        base = context(full)  # (B, H, L, d)
        syn = base + gate.to(syn.dtype) * (syn - base)
    return syn.transpose(1, 2).contiguous()


def register_syntax_attention() -> None:
    """Register the ``"syntax"`` attention function and its mask builder (SDPA-style bool masks) with
    transformers. Idempotent; runs when this module is imported."""
    AttentionInterface.register(SYNTAX_ATTENTION, syntax_attention_forward)
    AttentionMaskInterface.register(SYNTAX_ATTENTION, sdpa_mask)


register_syntax_attention()
