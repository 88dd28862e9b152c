"""What the ``"syntax"`` attention function is asked to do: its name, its options
(:class:`SyntaxAttentionOptions`) and its group ids (:class:`SyntaxGroups`, :func:`prepare_groups`).

The semantics of the options are described in :mod:`syntaxformer.modeling.syntax_attention`, which re-exports
every public name of this module; import them from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch

from syntaxformer.errors import ConfigError, InputError

#: Name under which the attention function is registered (``attn_implementation="syntax"``).
SYNTAX_ATTENTION = "syntax"

Aggregation = Literal["topical", "sum", "mean"]
EmptyRows = Literal["full", "self"]
Implementation = Literal["fast", "exact", "flex", "triton", "auto"]

#: Extra "trash" buckets that receive the pairs of no group in the fast path, spread by key position: thousands of
#: consecutive ``scatter_add`` s into one bucket form a dependency chain that makes the scatter ~3x slower.
_TRASH = 8


@dataclass(frozen=True)
class SyntaxAttentionOptions:
    """How the ``"syntax"`` attention function combines the sub-networks (passed as ``syntax_options=``).

    Args:
        aggregation: ``"topical"`` (Eq. 2-3; needs ``syntax_topical``, else the query counts as zero, i.e.
            ``"mean"``), ``"sum"`` (Table 5, "w/o topical attention") or ``"mean"``.
        empty_rows: what a row with no non-empty sub-network attends to: ``"full"`` (all non-padding keys, as the
            pretrained layer) or ``"self"`` (itself only).
        full_attention_candidate: also aggregate the vanilla (unmasked) attention as one more sub-network.
        layers: indices of the layers that use sub-networks (``None`` = all, as in the paper); the others run
            plain attention.
        implementation: ``"fast"``, ``"exact"``, ``"flex"``, ``"triton"`` (fused kernels,
            :mod:`syntaxformer.modeling.syntax_attention_triton`) or ``"auto"`` (``"triton"`` on CUDA when triton
            is importable and no attention dropout is active, else ``"fast"``; see :mod:`syntaxformer.modeling.syntax_attention`).
        lisa_layer: layer of the LISA head (``None`` = no LISA head).
        lisa_head: head index of the LISA head in ``lisa_layer``.
        check_underflow: let ``"fast"`` detect underflowing groups and switch to ``"exact"`` (one host sync per
            layer; switch off only when scores are known to be moderate, e.g. under CUDA graphs).
    """

    aggregation: Aggregation = "topical"
    empty_rows: EmptyRows = "full"
    full_attention_candidate: bool = False
    layers: tuple[int, ...] | None = None
    implementation: Implementation = "fast"
    lisa_layer: int | None = None
    lisa_head: int = 0
    check_underflow: bool = True

    def __post_init__(self) -> None:
        for name, allowed in (
            ("aggregation", ("topical", "sum", "mean")),
            ("empty_rows", ("full", "self")),
            ("implementation", ("fast", "exact", "flex", "triton", "auto")),
        ):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"SyntaxAttentionOptions.{name} must be one of {allowed}, got {getattr(self, name)!r}"
                )
        if self.layers is not None:
            object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))

    def uses_syntax(self, layer: int | None) -> bool:
        """Whether layer ``layer`` uses sub-networks (``None``: a module without a layer index -> all)."""
        return self.layers is None or layer is None or layer in self.layers


class SyntaxGroups(NamedTuple):
    """Group ids of the partitions, ready for the attention function (build once per forward, share by layers).

    Attributes:
        partitions: one int64 ``[B, L, L]`` tensor per partition (0 = no sub-network).
        num_buckets: per partition, ``1 + the largest group id`` that may occur (the size of the per-group
            tables); ids above it are an error.
        scatter_index: the fast path's index per partition (computed by :func:`prepare_groups`; built on the fly
            when ``None``): id 0 is replaced by one of ``_TRASH`` extra buckets ``num_buckets + (key % _TRASH)``.
        cache: per-forward memo of what depends only on the groups and the host's mask (the candidate groups of
            every row), filled by the first layer and reused by the others (``None``: recomputed per layer).
    """

    partitions: tuple[torch.Tensor, ...]
    num_buckets: tuple[int, ...]
    scatter_index: tuple[torch.Tensor, ...] | None = None
    cache: dict | None = None


def prepare_groups(
    groups: torch.Tensor | Sequence[torch.Tensor | None] | SyntaxGroups | None,
    num_buckets: int | Sequence[int] | None = None,
) -> SyntaxGroups | None:
    """Turn ``[B, L, L]`` group ids (one tensor, or one per partition; ``None`` entries are skipped) into
    :class:`SyntaxGroups`.

    Args:
        groups: integer group ids (e.g. the uint8 output of
            :func:`~syntaxformer.masks.relations.relation_groups_from_features`).
        num_buckets: table size per partition (``3 * D + 2`` for relation groups with max distance D); ``None``
            reads ``max + 1`` from the tensors (one host sync each).

    Returns:
        :class:`SyntaxGroups`, or ``None`` when there is no partition at all.
    """
    if groups is None or isinstance(groups, SyntaxGroups):
        return groups
    parts = [groups] if isinstance(groups, torch.Tensor) else [g for g in groups if g is not None]
    if not parts:
        return None
    for g in parts:
        if g.dim() != 3 or g.shape[-1] != g.shape[-2] or g.dtype.is_floating_point:
            raise InputError(f"syntax_groups must be integer [B, L, L] tensors, got {g.dtype} {tuple(g.shape)}")
    longs = tuple(g.long() for g in parts)
    if num_buckets is None:
        sizes = tuple(int(g.max()) + 1 if g.numel() else 1 for g in longs)
    elif isinstance(num_buckets, int):
        sizes = (int(num_buckets),) * len(longs)
    else:
        sizes = tuple(int(n) for n in num_buckets)
    return SyntaxGroups(longs, sizes, _scatter_index(longs, sizes), {})


def _scatter_index(partitions: Sequence[torch.Tensor], sizes: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """Group ids with id 0 spread over ``_TRASH`` extra buckets after ``sizes[p]`` (see ``_TRASH``)."""
    out = []
    for g, n in zip(partitions, sizes):
        trash = n + torch.arange(g.shape[-1], device=g.device) % _TRASH  # (Lk,)
        out.append(torch.where(g == 0, trash, g))
    return tuple(out)
