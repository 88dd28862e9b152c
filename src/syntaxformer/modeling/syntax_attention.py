"""Syntax-BERT attention (Bai et al., 2021, §3.3) as Hugging Face attention functions: ``"syntax"`` calls the
backend ``"syntax_<implementation>"`` (``"auto"``: the table :data:`AUTO`) through ``AttentionInterface``:
``"syntax_exact"`` (the readable reference), ``"syntax_fast"`` (the default) and ``"syntax_triton"`` (fused kernels;
CUDA). What they compute: :mod:`syntaxformer.modeling.syntax_attention_core`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from syntaxformer.modeling.syntax_attention_core import (
    SYNTAX_ATTENTION,
    Implementation,
    SyntaxAttentionOptions,
    SyntaxGate,
)
from syntaxformer.modeling.syntax_attention_exact import exact_attention
from syntaxformer.modeling.syntax_attention_fast import fast_attention


@functools.cache
def _triton_importable() -> bool:
    """Whether the triton package is installed (looked up once per process, not imported)."""
    return importlib.util.find_spec("triton") is not None


class AutoRule(NamedTuple):
    """One row of :data:`AUTO`: ``backend`` when ``applies(query, dropout_active, gated)``, for ``reason``."""

    backend: Implementation
    applies: Callable[[torch.Tensor, bool, bool], bool]
    reason: str


#: ``implementation="auto"``: the first row that applies to a call names its backend (the reasons, measured:
#: ``docs/syntax_bert.md``, "Implementations").
AUTO: tuple[AutoRule, ...] = (
    AutoRule("fast", lambda q, drop, gated: q.device.type != "cuda", "not CUDA: the kernels have no CPU backend"),
    AutoRule("fast", lambda q, drop, gated: drop, "attention dropout in training: the kernels have none"),
    AutoRule(
        "fast",
        lambda q, drop, gated: gated and q.dtype in (torch.bfloat16, torch.float16),
        "a gate in 16 bits: the kernels mix two rounded outputs, so the gate's gradient loses its precision",
    ),
    AutoRule("fast", lambda q, drop, gated: not _triton_importable(), "triton is not installed"),
    AutoRule("triton", lambda q, drop, gated: True, "CUDA: the fused kernels (estimated faster; not yet timed)"),
)


def resolve_implementation(
    opts: SyntaxAttentionOptions, query: torch.Tensor, dropout: float, module: nn.Module, gated: bool = False
) -> SyntaxAttentionOptions:
    """``opts`` with ``implementation="auto"`` made concrete for this call (:data:`AUTO`); other choices as given."""
    if opts.implementation != "auto":
        return opts
    active = dropout > 0 and module.training
    return replace(opts, implementation=next(r.backend for r in AUTO if r.applies(query, active, gated)))


def syntax_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    syntax_options: SyntaxAttentionOptions | None = None,
    syntax_gate: SyntaxGate | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention function for ``AttentionInterface`` (registered as ``"syntax"``): runs the backend
    ``"syntax_<implementation>"``; every backend takes these arguments.

    Args:
        module: the calling attention module (its ``layer_idx`` selects the topical query).
        query, key, value: ``[B, H, L, d]``.
        attention_mask: ``None`` (no padding), bool ``[B, 1, L, L]`` (True = may attend) or an additive float mask
            broadcastable to ``[B, 1, L, L]`` (0 = may attend); one mask for all heads.
        scaling, dropout: score scale (default ``d ** -0.5``), attention dropout (when ``module.training``).
        syntax_options: :class:`~syntaxformer.modeling.syntax_attention_core.SyntaxAttentionOptions` (``None``:
            the defaults).
        syntax_gate: ``SyntaxGate`` (``None``: no gate, the paper's literal form).
        **kwargs: ``syntax_groups`` (group ids of one or more partitions, ``[B, L, L]`` each: a tensor, a sequence
            or :class:`~syntaxformer.modeling.syntax_attention_core.SyntaxGroups`; ``None`` = plain attention),
            ``syntax_topical`` (``TopicalAttention`` with the task queries; ``None``: zero query), ``syntax_lisa``
            (``LisaRecorder`` to fill in the LISA layer), ``syntax_record`` (``SyntaxAttentionRecorder`` to fill
            with this layer's attention and topical weights; the outputs are unchanged); other model kwargs are
            ignored.

    Returns:
        ``([B, L, H, d] output, [B, H, L, L] effective attention or None)``: the (gated) effective attention ``A``
        (before an own ``W_Vt``); none from layers without sub-networks (the host's SDPA attention) or ``"triton"``.
    """
    opts = resolve_implementation(
        syntax_options or SyntaxAttentionOptions(), query, dropout, module, gated=syntax_gate is not None
    )
    backend = AttentionInterface()[f"{SYNTAX_ATTENTION}_{opts.implementation}"]
    return backend(
        module,
        query,
        key,
        value,
        attention_mask,
        scaling,
        dropout,
        syntax_options=opts,
        syntax_gate=syntax_gate,
        **kwargs,
    )


def _triton_attention(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``"syntax_triton"``: the kernels are built when their module is first imported (under Triton's interpreter
    if ``TRITON_INTERPRET=1`` is set by then), so it is imported on first use."""
    from syntaxformer.modeling.syntax_attention_triton import triton_attention

    return triton_attention(*args, **kwargs)


def register_syntax_attention() -> None:
    """Register ``"syntax"`` and its backends (``"syntax_fast"``, ...) and their mask builder (SDPA-style bool
    masks) with transformers. Idempotent; runs when this module is imported."""
    functions: list[Callable[..., Any]] = [syntax_attention_forward, exact_attention, fast_attention, _triton_attention]
    for suffix, function in zip(("", "_exact", "_fast", "_triton"), functions):
        AttentionInterface.register(SYNTAX_ATTENTION + suffix, function)
        AttentionMaskInterface.register(SYNTAX_ATTENTION + suffix, sdpa_mask)


register_syntax_attention()
