"""SG-Net's SDOI (syntactic dependency of interest) mask, built batched from Euler-tour intervals (``docs/sgnet.md``).

Row ``i`` may attend to ``j`` iff ``j``'s node is an ancestor-or-self of ``i``'s in the same dependency tree. Special
tokens and padding (``tree == -1``) attend to themselves only and nobody attends to them, so no row is empty and
padding is never attended (unlike the official code, whose all-zero rows fall back to attending everywhere).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch


def sdoi_mask(tin: torch.Tensor, tout: torch.Tensor, tree: torch.Tensor) -> torch.Tensor:
    """Ancestor-or-self mask of every position: bool ``[B, L, L]`` (``[L, L]`` for unbatched input) on the inputs'
    device, True = the row position may attend to the column position.

    Args:
        tin: ``[B, L]`` (or ``[L]``) pre-order entry time of each position's node (``dep_tin``).
        tout: ``[B, L]`` subtree exit time, inclusive (``dep_tout``).
        tree: ``[B, L]`` sentence id; -1 for special tokens and padding (the collator pads with -1).
    """
    valid = tree >= 0
    L = tin.shape[-1]
    # Give invalid positions a distinct negative key and the one-point interval [key, key]: they then cover
    # exactly themselves, and no valid position (keys >= 0) covers them or is covered by them. This folds the
    # validity test and the diagonal into the two comparisons.
    own = -1 - torch.arange(L, device=tin.device, dtype=tin.dtype)
    key = torch.where(valid, tin, own)
    hi = torch.where(valid, tout, own)
    q = key.unsqueeze(-1)  # (..., L, 1): rows
    return (key.unsqueeze(-2) <= q) & (q <= hi.unsqueeze(-2))


def sdoi_mask_from_features(features: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """:func:`sdoi_mask` from a collated batch (keys ``dep_tin``, ``dep_tout``, ``syntax_tree``)."""
    return sdoi_mask(features["dep_tin"], features["dep_tout"], features["syntax_tree"])
