"""Syntax-BERT sub-network relations as one partition of the L x L pairs ("relation groups").

Syntax-BERT (section 3.2) defines parent, child and sibling masks at every tree distance d = 1..D (D = 15 in the
paper) for a dependency and a constituency tree, plus a pairwise mask across the two texts of a pair. For one tree
these masks are disjoint, so instead of M dense masks we build one ``uint8 [B, L, L]`` tensor of *group ids*
(see ``ARCHITECTURE.md``, "The fast Syntax-BERT attention"): the attention layer normalises within each group.

Definition (query row ``i``, key column ``j``; both from :func:`syntaxformer.data.collate.encode_syntax`):

* Every position has a *key* (``dep_tin`` for dependency, ``con_key`` = word index for constituency), a depth,
  its own interval ``A_0`` (its Euler interval ``[dep_tin, dep_tout]``; ``[con_key, con_key]`` for a
  constituency leaf) and the intervals ``A_k`` and head keys of its ancestors k = 1..D
  (``*_anc_lo / *_anc_hi / *_anc_head``). Ancestor 0 is the node itself, whose head key is its own key.
* ``k_ij`` = the smallest k in 0..D such that ``A_k(i)`` covers ``key[j]``, i.e. the number of steps from i up
  to the lowest common ancestor (LCA) of i and j. Two positions of the same node (pieces of one word under the
  ``"share"`` criterion) have ``k = 0`` and distance 0: no relation.
* ``dist = k_ij + (depth[j] - depth[i] + k_ij)``: the path length i -> LCA -> j. No relation if no k covers
  ``key[j]`` (different trees, or LCA more than D steps up) or ``dist > D``.
* The *kind* compares the LCA's head key (``anc_head[i, k_ij]``) with the two positions' keys, named as in the
  paper (§3.2: "In the parent mask ... M^p_{i,j,d} = 1 if and only if the node i is the parent or ancestor of
  node j"; "In the child mask ... node j is the parent or ancestor of node i"):
  ``== key[j]``: **child** (i is the child side: for dependency trees, j is i's ancestor at distance ``dist``);
  else ``== key[i]``: **parent** (i is the head side: i is j's ancestor, j its descendant); else **sibling**.

  For dependency trees this is exactly Syntax-BERT's parent / child / sibling with the exact tree distance. For
  constituency trees it is the leaf-to-leaf path length through the phrase tree (a word and its pre-terminal
  count as one node), and "child" means that j is the lexical head of the smallest phrase containing both.
* **pairwise**: i and j both non-special and in different segments (texts) of a pair. Trees never span two
  texts, so this group is disjoint from the tree relations.

Group ids (``D`` = ``max_distance``): 0 = no sub-network; child at distance d = ``d`` (the row attends to its
head side, like LISA's parent head); parent = ``D + d``; sibling = ``2D + d``; pairwise = ``3D + 1``. So there
are M = 3D + 1 sub-networks per tree kind (Syntax-BERT: "(15 x 3 + 1) x 2 = 92" for pair tasks), and dependency
and constituency give two partitions.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from syntaxformer.errors import ConfigError, InputError

PARENT = "parent"
CHILD = "child"
SIBLING = "sibling"
PAIRWISE = "pairwise"
#: Optional sub-networks outside the paper (Syntax-BERT options ``self_group`` / ``special_keys``): the token
#: itself (id 3D+2) and the special-token keys of a non-special row (id 3D+3).
SELF = "self"
SPECIAL = "special"
#: In group-id order: child (ids 1..D), parent (D+1..2D), sibling (2D+1..3D), pairwise (3D+1).
KINDS = (CHILD, PARENT, SIBLING, PAIRWISE)
_UNDISTANCED = (PAIRWISE, SELF, SPECIAL)  # ids 3D+1, 3D+2, 3D+3


def num_groups(max_distance: int = 15, pairwise: bool = True) -> int:
    """Number of sub-networks M (group ids 1..M; id 0 means "no sub-network"): 3D (+1 with pairwise)."""
    return 3 * max_distance + (1 if pairwise else 0)


def group_id(kind: str, distance: int = 1, max_distance: int = 15) -> int:
    """Group id of a relation ``kind`` (``"child"``, ``"parent"``, ``"sibling"``, ``"pairwise"``) at ``distance``;
    also the optional groups ``"self"`` (3D+2) and ``"special"`` (3D+3)."""
    if kind in _UNDISTANCED:
        return 3 * max_distance + 1 + _UNDISTANCED.index(kind)
    if kind not in KINDS:
        raise InputError(f"unknown relation kind {kind!r}; expected one of {KINDS}")
    if not 1 <= distance <= max_distance:
        raise InputError(f"distance must be in 1..{max_distance}, got {distance}")
    return KINDS.index(kind) * max_distance + distance


def group_name(group: int, max_distance: int = 15) -> tuple[str, int]:
    """Inverse of :func:`group_id`: ``(kind, distance)``; ``("none", 0)`` for 0, ``("pairwise", 0)``,
    ``("self", 0)`` and ``("special", 0)``."""
    D = max_distance
    if group == 0:
        return "none", 0
    if 3 * D < group <= 3 * D + 3:
        return _UNDISTANCED[group - 3 * D - 1], 0
    if not 1 <= group <= 3 * D:
        raise InputError(f"group id {group} is out of range 0..{3 * D + 3} for max_distance={D}")
    return KINDS[(group - 1) // D], (group - 1) % D + 1


def relation_groups(
    key: torch.Tensor,
    depth: torch.Tensor,
    anc_lo: torch.Tensor,
    anc_hi: torch.Tensor,
    anc_head: torch.Tensor,
    tree: torch.Tensor,
    segment: torch.Tensor,
    max_distance: int = 15,
    pairwise: bool = True,
    key_hi: torch.Tensor | None = None,
) -> torch.Tensor:
    """Relation group id of every pair of positions, for a batch (see the module docstring).

    Args:
        key: ``[B, L]`` key of each position (``dep_tin`` or ``con_key``); unbatched ``[L]`` inputs (and
            ``[L, D']`` tables) give an ``[L, L]`` result.
        depth: ``[B, L]`` depth of each position's node (``dep_depth`` or ``con_depth``).
        anc_lo: ``[B, L, D']`` interval start of ancestors 1..D' (D' >= ``max_distance``); empty = lo > hi.
        anc_hi: ``[B, L, D']`` interval end (inclusive).
        anc_head: ``[B, L, D']`` head key of each ancestor. Heads must percolate: a position that heads an
            ancestor heads every lower one too (true for dependency trees, head rules, and the lexical heads of
            :func:`~syntaxformer.data.collate.encode_syntax`).
        tree: ``[B, L]`` sentence id; -1 for special tokens and padding.
        segment: ``[B, L]`` text id; -1 for special tokens and padding.
        max_distance: D, the largest tree distance; it fixes the group layout, so it must match the model.
        pairwise: add the pairwise group ``3D + 1`` (pairs from different segments).
        key_hi: ``[B, L]`` end of each position's own interval (``dep_tout`` for dependency trees); ``None``
            means the node is a leaf whose interval is ``[key, key]`` (constituency).

    Returns:
        uint8 ``[B, L, L]`` group ids (0 = no sub-network), on the inputs' device. Rows and columns of special
        tokens and padding are 0.
    """
    D = int(max_distance)
    if not 1 <= D <= 84:
        raise ConfigError(f"max_distance must be in 1..84 (group ids are uint8), got {max_distance}")
    if anc_lo.shape[-1] < D:
        raise InputError(
            f"the ancestor tables have {anc_lo.shape[-1]} columns but max_distance={D}; encode with max_distance >= {D}"
        )
    if key.dim() == 1:  # one unbatched example
        k, d, lo, hi, head, t, seg = (x[None] for x in (key, depth, anc_lo, anc_hi, anc_head, tree, segment))
        own_hi = None if key_hi is None else key_hi[None]
        return relation_groups(k, d, lo, hi, head, t, seg, max_distance, pairwise, own_hi)[0]
    B, L = key.shape
    device = key.device
    valid = tree >= 0
    key = key.to(torch.int32)
    key_hi = key if key_hi is None else key_hi.to(torch.int32)
    anc_lo, anc_hi, anc_head = (a[..., :D].to(torch.int32) for a in (anc_lo, anc_hi, anc_head))
    # intervals of ancestors 0..D: the node itself, then the table
    lo = torch.cat([key.unsqueeze(-1), anc_lo], -1)  # (B, L, D+1)
    hi = torch.cat([key_hi.unsqueeze(-1), anc_hi], -1)  # (B, L, D+1)
    nonempty = (lo <= hi) & valid.unsqueeze(-1)  # a prefix k = 0..n_anc-1 of nested intervals
    n_anc = nonempty.sum(-1, dtype=torch.int16)  # (B, L)
    # proj[i]: how many ancestors (k = 1, 2, ...) in a row have i's own key as head. The phrases a word heads
    # form such a prefix (head percolation; also heads taken from a dependency tree), so "the LCA is headed by
    # j" is "j climbs at most proj[j] steps to the LCA", and no [B, L, L] gather of heads is needed. For a
    # dependency tree proj = 0: the LCA is j itself iff j climbs 0 steps.
    heads_self = (anc_head == key.unsqueeze(-1)) & nonempty[..., 1:]  # (B, L, D)
    proj = heads_self.to(torch.int16).cumprod(-1).sum(-1, dtype=torch.int16)  # (B, L)

    # Coordinate-compress the keys of each example (rank in sorted order; special tokens get a sentinel that
    # sorts last and that no interval reaches). Then, for every row, the number of its intervals covering each
    # rank is a difference array + cumsum: c(i, j) = n_anc(i) - k_ij when covered, 0 otherwise. That is a few
    # L x L passes instead of 2(D+1) comparisons per pair.
    big = torch.iinfo(torch.int32).max
    kq = torch.where(valid, key, big)
    sorted_keys = torch.sort(kq, dim=-1).values  # (B, L)
    rank = torch.searchsorted(sorted_keys, kq)  # (B, L) first rank of each key
    lo_r = torch.searchsorted(sorted_keys, lo.reshape(B, -1)).reshape(B, L, D + 1)
    hi_r = torch.searchsorted(sorted_keys, hi.reshape(B, -1), right=True).reshape(B, L, D + 1)
    lo_r = torch.where(nonempty, lo_r, 0)
    hi_r = torch.where(nonempty, torch.maximum(hi_r, lo_r), 0)
    ones = torch.ones_like(lo_r, dtype=torch.int16)
    diff = torch.zeros(B, L, L + 1, dtype=torch.int16, device=device)
    diff.scatter_add_(-1, lo_r, ones)
    diff.scatter_add_(-1, hi_r, -ones)
    cover = diff.cumsum(-1, dtype=torch.int16)  # (B, L, L+1): intervals of row i covering rank r
    c = cover.gather(-1, rank.unsqueeze(-2).expand(B, L, L))  # (B, L, L)
    k = n_anc.unsqueeze(-1) - c  # (B, L, L) steps from i up to the LCA (meaningful where c > 0)

    depth16 = depth.to(torch.int16)
    up_j = k + (depth16.unsqueeze(-2) - depth16.unsqueeze(-1))  # (B, L, L) steps from j up to the LCA
    dist = k + up_j
    rel = (c > 0) & (dist >= 1) & (dist <= D)
    not_parent = up_j > proj.unsqueeze(-2)  # j is not on i's head side (not the paper's "child" relation)
    sibling = not_parent & (k > proj.unsqueeze(-1))
    groups = dist.to(torch.uint8)
    groups += not_parent.to(torch.uint8) * D
    groups += sibling.to(torch.uint8) * D
    groups.masked_fill_(~rel, 0)
    if pairwise:
        seg_ok = valid & (segment >= 0)
        cross = seg_ok.unsqueeze(-1) & seg_ok.unsqueeze(-2) & (segment.unsqueeze(-1) != segment.unsqueeze(-2))
        groups.masked_fill_(cross, 3 * D + 1)
    return groups


def relation_groups_from_features(
    features: Mapping[str, torch.Tensor], max_distance: int = 15, pairwise: bool = True, constituency: bool = True
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(dependency_groups, constituency_groups)``, uint8 ``[B, L, L]`` each, of :func:`relation_groups` from a
    collated batch of :func:`~syntaxformer.data.collate.encode_syntax` arrays (``syntax_tree``, ``syntax_segment``,
    ``dep_*`` and, for ``constituency``, ``con_*``; else the second is ``None``)."""

    def partition(prefix: str, key: str, key_hi: torch.Tensor | None) -> torch.Tensor:
        depth, lo, hi, head = (features[f"{prefix}_{name}"] for name in ("depth", "anc_lo", "anc_hi", "anc_head"))
        tree, segment = features["syntax_tree"], features["syntax_segment"]
        return relation_groups(features[key], depth, lo, hi, head, tree, segment, max_distance, pairwise, key_hi)

    dep = partition("dep", "dep_tin", features["dep_tout"])
    if not constituency:
        return dep, None
    if "con_key" not in features:
        raise InputError("constituency relation groups need the con_* arrays; encode with constituency=True")
    return dep, partition("con", "con_key", None)
