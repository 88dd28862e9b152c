"""Batched mask builders: SDOI (ancestor) masks, Syntax-BERT relation groups, random-mask ablations.

All builders take the compact per-position tensors of :func:`syntaxformer.data.collate.encode_syntax` (batched by
the collator, padded with -1) and build masks on the inputs' device. Masks are bool with True = may attend.
"""

from syntaxformer.masks.random import random_like_groups, random_like_mask
from syntaxformer.masks.relations import (
    CHILD,
    PAIRWISE,
    PARENT,
    SIBLING,
    group_id,
    group_name,
    num_groups,
    relation_groups,
    relation_groups_from_features,
)
from syntaxformer.masks.sdoi import sdoi_mask, sdoi_mask_from_features

__all__ = [
    "CHILD",
    "PAIRWISE",
    "PARENT",
    "SIBLING",
    "group_id",
    "group_name",
    "num_groups",
    "random_like_groups",
    "random_like_mask",
    "relation_groups",
    "relation_groups_from_features",
    "sdoi_mask",
    "sdoi_mask_from_features",
]
