"""Syntax-BERT attention (Bai et al., 2021, §3.3) as a Hugging Face attention function named ``"syntax"``.

(One concept over ~1,300 lines, on purpose: the attention function, its fast segmented-softmax autograd path, the
exact path it is checked against, the flex_attention path, and the per-layer parts they share -- topical
attention, the gate, the LISA recorder / added head. Split up, each path would import the others' private
shapes.)

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
(:class:`_PairPasses`). ``"auto"`` picks ``"triton"`` on CUDA when triton is installed and no attention dropout is
active, ``"fast"`` elsewhere; the CUDA choice is pending a GPU measurement (``docs/syntax_bert.md``).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from syntaxformer.errors import ConfigError, InputError

#: Name under which the attention function is registered (``attn_implementation="syntax"``).
SYNTAX_ATTENTION = "syntax"

Aggregation = Literal["topical", "sum", "mean"]
EmptyRows = Literal["full", "self"]
Implementation = Literal["fast", "exact", "flex", "triton", "auto"]

#: Extra "trash" buckets that receive the pairs of no group in the fast path, spread by key position: thousands of
#: consecutive ``scatter_add`` s into one bucket form a dependency chain that makes the scatter ~3x slower.
_TRASH = 8

#: A non-empty group whose share of the full softmax is below this is recomputed exactly (float32 keeps full
#: relative precision down to ~1e-38; this leaves a margin of 1e-13 for the group's smaller entries).
_UNDERFLOW = 1e-25


# ---------------------------------------------------------------------------------------------------------------
# Inputs of the attention function
# ---------------------------------------------------------------------------------------------------------------


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
            is importable and no attention dropout is active, else ``"fast"``; see the module docstring).
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


class TopicalAttention(nn.Module):
    """The task queries of topical attention (Eq. 2), one vector per layer, their folded form and, with
    ``own_projections``, the topical attention's own key and value projections.

    The score of sub-network ``g`` for token ``i`` is ``q_l · (O_g[i] W_O W_K) / sqrt(hidden)``, with ``W_O`` the
    pretrained output projection of layer ``l`` and ``W_K`` either the layer's pretrained key projection
    (``projections="shared"``; bound with :meth:`bind`, not copied: they keep training with the model) or the
    topical attention's own ``W_Kt`` (``"own"``, the paper's Eq. 2; initialised as a copy of the layer's key
    projection, bias-free: biases cancel in the softmax). Since the score is linear in ``O_g``, it equals
    ``O_g[i] · u_l`` with ``u_l = W_O W_K q_l / sqrt(hidden)`` (:meth:`folded`): one vector per layer either way.

    With ``"own"`` the topical values are ``(Σ_g α_g O_g) W_Vt`` with the own value projection ``W_Vt``
    (``dim x dim``, identity at initialisation) applied before the host layer's output projection (Eq. 2's
    ``H W^V`` up to a reparameterisation: ``W_Vt = W_O W^V W_O^-1``), so the layer is unchanged at initialisation.

    Args:
        num_layers: number of layers (one query each).
        dim: size of the concatenated heads (``heads * d_head``; the key projection's output size).
        hidden_size: model width, for the ``1 / sqrt(hidden)`` of Eq. 2 (default ``dim``).
        projections: ``"shared"`` (the layer's ``W_K``, identity values) or ``"own"`` (own ``W_Kt`` and ``W_Vt``
            per layer: ``num_layers * (dim * hidden + dim * dim)`` parameters).

    The queries start at zero, so that training starts from the average of the non-empty sub-networks.
    """

    def __init__(
        self,
        num_layers: int,
        dim: int,
        hidden_size: int | None = None,
        projections: Literal["shared", "own"] = "shared",
    ):
        super().__init__()
        if projections not in ("shared", "own"):
            raise ConfigError(f"TopicalAttention projections must be 'shared' or 'own', got {projections!r}")
        hidden = int(hidden_size or dim)
        self.query = nn.Parameter(torch.zeros(num_layers, dim))
        self.scale = float(hidden) ** -0.5
        if projections == "own":
            # Plain parameters (not nn.Linear): Hugging Face's default init never touches them; see reset_projections.
            self.key_weight = nn.Parameter(torch.zeros(num_layers, dim, hidden))  # W_Kt as nn.Linear weights
            self.value_weight = nn.Parameter(torch.zeros(num_layers, dim, dim))  # W_Vt as nn.Linear weights
        else:
            self.key_weight = None
            self.value_weight = None
        self._sites: list[tuple[nn.Linear, nn.Linear]] = []  # plain list: the host's modules, not registered twice

    @property
    def own_projections(self) -> bool:
        """True when the topical attention has its own key and value projections (``projections="own"``)."""
        return self.key_weight is not None

    def bind(self, sites: Sequence[tuple[nn.Linear, nn.Linear]]) -> None:
        """Attach ``(key projection, output projection)`` of every layer (in layer order); with own projections,
        also initialise them (:meth:`reset_projections`)."""
        if len(sites) != self.query.shape[0]:
            raise InputError(f"TopicalAttention has {self.query.shape[0]} queries but {len(sites)} layers were bound")
        self._sites = list(sites)
        self.reset_projections()

    @torch.no_grad()
    def reset_projections(self) -> None:
        """Own projections only: ``W_Kt`` = a copy of each bound layer's key projection, ``W_Vt`` = identity (the
        model then equals ``projections="shared"`` at initialisation)."""
        if not self.own_projections or not self._sites:
            return
        for layer, (key, _) in enumerate(self._sites):
            self.key_weight[layer].copy_(key.weight)
        self.value_weight.copy_(
            torch.eye(
                self.value_weight.shape[-1], dtype=self.value_weight.dtype, device=self.value_weight.device
            ).expand_as(self.value_weight)
        )

    def site(self, layer: int) -> tuple[nn.Linear, nn.Linear]:
        """The ``(key projection, output projection)`` bound for ``layer``."""
        if not self._sites:
            # internal invariant: the models bind every layer when they are built, before any forward
            raise RuntimeError("TopicalAttention.bind(...) must attach the layers' key and output projections first")
        return self._sites[layer]

    def key_matrix(self, layer: int) -> torch.Tensor:
        """The key projection's weight ``[dim, hidden]`` used by the scores of ``layer`` (own or the layer's)."""
        return self.key_weight[layer] if self.own_projections else self.site(layer)[0].weight

    def folded(self, layer: int) -> torch.Tensor:
        """``u_l`` ``[dim]`` such that the score of a sub-network output ``o`` is ``o · u_l``."""
        _, out = self.site(layer)
        return (self.query[layer] @ self.key_matrix(layer)) @ out.weight * self.scale  # (dim,)

    def scores(self, layer: int, outputs: torch.Tensor) -> torch.Tensor:
        """Eq. 2 as written: ``q_l · key(out(outputs)) / sqrt(hidden)`` for ``outputs`` ``[..., dim]`` -> ``[...]``
        (the key bias, shared projections only, adds the same constant to every score: it cancels in Eq. 3)."""
        key, out = self.site(layer)
        keyed = F.linear(out(outputs), self.key_weight[layer]) if self.own_projections else key(out(outputs))
        return keyed @ self.query[layer] * self.scale

    def values(self, layer: int, context: torch.Tensor) -> torch.Tensor:
        """Own projections: ``context W_Vt`` for ``context`` ``[..., dim]``; shared: ``context`` unchanged."""
        return F.linear(context, self.value_weight[layer]) if self.own_projections else context


class SyntaxGate(nn.Module):
    """Zero-initialised gate from the pretrained attention towards the sub-networks (our extension; not in the paper).

    Per layer ``l`` (and head ``h`` for ``per_head=True``) the context becomes
    ``ctx = P_full V + g_{l,h} (Σ_g α_g O_g - P_full V)``, i.e. the effective attention is
    ``P_full + g (A_syntax - P_full)``. With ``g = 0`` (the initialisation) every layer is exactly the pretrained
    layer, so the model starts from the checkpoint; training moves ``g`` (at the new-parameter learning rate).

    Args:
        num_layers: number of layers (one row each).
        num_heads: number of heads (columns when ``per_head``).
        per_head: one scalar per head (``gate="head"``) instead of one per layer (``gate="layer"``).
    """

    def __init__(self, num_layers: int, num_heads: int, per_head: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(num_layers, num_heads if per_head else 1))

    def value(self, layer: int) -> torch.Tensor:
        """The gate of ``layer`` as ``[1, H | 1, 1, 1]`` (broadcasts over ``[B, H, L, L]``)."""
        return self.weight[layer].view(1, -1, 1, 1)


def gate_probs(probs: torch.Tensor, full: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """``full + gate (probs - full)``: the gated effective attention (``[B, H, L, L]``; ``gate`` broadcasts)."""
    return full + gate.to(probs.dtype) * (probs - full)


class AddedLisaHead(nn.Module):
    """LISA as an *added* head (``lisa_head_mode="added"``; LISA and the paper's "+ LISA" add one): its own query and
    key projections in layer ``layer``, trained by the LISA loss, next to the pretrained heads (none is taken out).

    Its scores are ``S_a = (Q W_Qa)(K W_Ka)ᵀ · scale`` with ``Q``, ``K`` the layer's concatenated queries and keys
    ``[B, L, heads * d_head]`` and ``W_Qa``, ``W_Ka`` ``[d_head, heads * d_head]`` (so they are linear maps of the
    layer input, as a new head's projections are); ``P_a = softmax(S_a)`` over the non-padding keys. Its output
    enters the layer's context as ``ctx_h += m_h P_a V_h`` with one mixing weight ``m_h`` per pretrained head's
    values: zero at initialisation, so the model is unchanged until the task loss moves ``m``; the LISA loss trains
    ``W_Qa`` / ``W_Ka`` (and, through ``Q`` and ``K``, the encoder below, as in LISA).

    Args:
        layer: the LISA layer.
        num_heads: heads of the layer.
        head_dim: size of one head (the added head's too).
        init_head: the added head starts as a copy of this pretrained head's query / key projections.
    """

    def __init__(self, layer: int, num_heads: int, head_dim: int, init_head: int = 0):
        super().__init__()
        if not 0 <= init_head < num_heads:
            raise ConfigError(f"AddedLisaHead init_head={init_head} is outside the layer's heads 0..{num_heads - 1}")
        self.layer, self.num_heads, self.head_dim, self.init_head = layer, num_heads, head_dim, init_head
        self.query_weight = nn.Parameter(torch.zeros(head_dim, num_heads * head_dim))  # W_Qa as an nn.Linear weight
        self.key_weight = nn.Parameter(torch.zeros(head_dim, num_heads * head_dim))  # W_Ka as an nn.Linear weight
        self.mix = nn.Parameter(torch.zeros(num_heads))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """``W_Qa``, ``W_Ka`` select head ``init_head`` (a copy of its pretrained projections); ``m = 0``."""
        d, h = self.head_dim, self.init_head
        for w in (self.query_weight, self.key_weight):
            w.zero_()
            w[:, h * d : (h + 1) * d] = torch.eye(d, dtype=w.dtype, device=w.device)
        self.mix.zero_()

    def scores(self, query: torch.Tensor, key: torch.Tensor, scaling: float) -> torch.Tensor:
        """fp32 scores ``[B, L, L]`` of the added head from the layer's ``query`` / ``key`` ``[B, H, L, d]``."""
        B, H, L, d = query.shape
        qa = F.linear(query.transpose(1, 2).reshape(B, L, H * d), self.query_weight)  # (B, L, d)
        ka = F.linear(key.transpose(1, 2).reshape(B, L, H * d), self.key_weight)  # (B, L, d)
        return torch.matmul(qa * scaling, ka.transpose(-1, -2)).float()


@dataclass
class LisaRecorder:
    """Collects the log attention probabilities of the LISA head (passed as ``syntax_lisa=``).

    After the forward pass, ``log_probs`` is ``[B, L, L]``: row ``i`` is the log-softmax of head ``head`` of layer
    ``layer`` over the non-padding keys (masked keys get a very negative finite value).
    """

    layer: int
    head: int = 0
    log_probs: torch.Tensor | None = field(default=None, repr=False)
    added: AddedLisaHead | None = field(default=None, repr=False)

    def loss(self, parent: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the recorded rows against ``parent`` ``[B, L]`` (key position of each token's
        syntactic parent; rows with ``parent < 0`` — roots, special tokens, padding — are ignored). 0 if no row
        counts."""
        if self.log_probs is None:
            raise ConfigError(
                f"no attention was recorded for the LISA head (layer {self.layer}); is the model "
                f"running attn_implementation='{SYNTAX_ATTENTION}' with at least {self.layer + 1} "
                "layers?"
            )
        parent = parent.to(self.log_probs.device).long()
        logp = self.log_probs.float()
        keep = parent >= 0  # (B, L)
        picked = logp.gather(-1, parent.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, L)
        n = keep.sum()
        return -(picked * keep).sum() / n.clamp(min=1)


@dataclass
class SyntaxAttentionRecorder:
    """Collects, for analysis, what every layer of a forward pass attended to (passed as ``syntax_record=``; the
    Syntax-BERT models take it as ``model(..., syntax_record=recorder)``). Recording never changes the model's
    outputs: the extra tensors are computed beside the layer's own computation, without gradients.

    After the pass, per layer index ``l`` (the keys are the layers that ran):

    * ``attentions[l]``: ``[B, H, L, L]`` the effective attention (what the function returns for a syntax layer:
      ``Σ_g α_g A_g``, gated; for a layer without sub-networks, which runs the host's fused attention and returns
      no weights, the plain softmax of its scores), so no layer is ever missing whatever the implementation.
    * ``topical[l]``: ``[B, L, C]`` syntax layers only: the weight α of each candidate sub-network per query token
      (Eq. 3; the uniform average for ``"mean"``, 1 per non-empty group for ``"sum"``), computed by the exact path.
    * ``candidates[l]``: bool ``[B, L, C]`` which sub-networks are non-empty (candidates) for each query token.

    The ``C`` columns are, in order, the group ids ``0..num_buckets[p]-1`` of each partition ``p`` (dependency
    first, then constituency; id 0 = no sub-network, never a candidate; see
    :func:`syntaxformer.masks.relations.group_name`), then one column for the full attention when
    ``full_attention_candidate`` is on. ``num_buckets`` and ``full_candidate`` record that layout.
    """

    attentions: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    topical: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    candidates: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    num_buckets: tuple[int, ...] = ()
    full_candidate: bool = False


# ---------------------------------------------------------------------------------------------------------------
# The attention function
# ---------------------------------------------------------------------------------------------------------------


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
    groups = prepare_groups(syntax_groups)
    lisa_here = syntax_lisa is not None and layer is not None and layer == syntax_lisa.layer
    use_syntax = groups is not None and opts.uses_syntax(layer)
    if not use_syntax and not lisa_here:
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
    if use_syntax and opts.implementation in ("flex", "triton"):
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
            syntax_lisa if lisa_here else None,
            syntax_gate,
            syntax_record,
            layer,
            passes,
        )
        return out, None
    scores = _scores(query, key, scaling)  # (B, H, L, L) fp32, unmasked
    allowed = _allowed(attention_mask, B, L)  # (B, L, L) or None
    full_heads = None
    added = syntax_lisa.added if lisa_here else None
    if added is not None:  # LISA as an added head: the pretrained heads all stay as they are
        head_mask = None if attention_mask is None else attention_mask[:, 0]
        syntax_lisa.log_probs = torch.log_softmax(_apply_mask(added.scores(query, key, scaling), head_mask), -1)
    elif lisa_here:
        if not 0 <= syntax_lisa.head < H:
            raise ConfigError(f"lisa_head={syntax_lisa.head} but the layer has {H} heads")
        head_mask = None if attention_mask is None else attention_mask[:, 0]
        syntax_lisa.log_probs = torch.log_softmax(_apply_mask(scores[:, syntax_lisa.head], head_mask), -1)  # (B, L, L)
        full_heads = torch.zeros(H, dtype=torch.bool, device=query.device)
        full_heads[syntax_lisa.head] = True

    probs_syntax = full = gate = None
    if not use_syntax:
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

    own_values = (
        use_syntax and syntax_topical is not None and syntax_topical.own_projections and opts.aggregation == "topical"
    )
    if own_values:
        out = _own_value_output(module, probs_syntax, full, value, dropout, syntax_topical, layer, gate)
    else:
        attn = F.dropout(probs, p=dropout, training=module.training) if dropout > 0 else probs
        out = torch.matmul(attn.to(value.dtype), value).transpose(1, 2)  # (B, L, H, d)
    if added is not None:  # ctx_h += m_h P_a V_h
        out = out + _added_head_context(module, added, syntax_lisa, value, dropout)
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


def _added_head_context(
    module: nn.Module, added: AddedLisaHead, lisa: LisaRecorder, value: torch.Tensor, dropout: float
) -> torch.Tensor:
    """``[B, L, H, d]`` what the added LISA head adds to each head's context: ``m_h P_a V_h``."""
    H = value.shape[1]
    p_a = lisa.log_probs.exp()  # (B, L, L)
    p_a = F.dropout(p_a, p=dropout, training=module.training) if dropout > 0 else p_a
    extra = torch.matmul(p_a.unsqueeze(1).to(value.dtype), value) * added.mix.to(value.dtype).view(1, H, 1, 1)
    return extra.transpose(1, 2)  # (B, L, H, d)


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
        base = context(full)  # (B, H, L, d)
        syn = base + gate.to(syn.dtype) * (syn - base)
    return syn.transpose(1, 2).contiguous()


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


def register_syntax_attention() -> None:
    """Register the ``"syntax"`` attention function and its mask builder (SDPA-style bool masks) with
    transformers. Idempotent; runs when this module is imported."""
    AttentionInterface.register(SYNTAX_ATTENTION, syntax_attention_forward)
    AttentionMaskInterface.register(SYNTAX_ATTENTION, sdpa_mask)


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
# Candidates and topical weights (shared by the three implementations)
# ---------------------------------------------------------------------------------------------------------------


def _group_counts(groups: SyntaxGroups, allowed: torch.Tensor | None, fast: bool = False) -> list[torch.Tensor]:
    """Per partition, ``[B, Lq, M+1]`` bool: group g has an allowed key in row i (bucket 0 is never a group).
    ``fast``: over the scatter index, ``[B, Lq, M+1+_TRASH]`` (the trash buckets are never groups either)."""
    out = []
    index = groups.scatter_index if fast else groups.partitions
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


# ---------------------------------------------------------------------------------------------------------------
# Fast path
# ---------------------------------------------------------------------------------------------------------------


def syntax_probs(
    scores: torch.Tensor,
    mask: torch.Tensor | None,
    groups: SyntaxGroups,
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None = None,
) -> torch.Tensor:
    """Effective attention ``A`` ``[B, H, L, L]`` (``output = A V``) of the sub-networks mixed by topical attention.

    Args:
        scores: fp32 ``[B, H, L, L]`` scaled scores, not masked.
        mask: the host's mask (bool or additive, ``[B, 1, L, L]``) or None.
        groups: the partitions.
        w: ``[B, H, L]`` per key ``V_h[k] · u_h`` (topical scores), or None (zero query / no topical attention).
        opts: options (``implementation`` ``"fast"`` or ``"exact"``).
        full_heads: bool ``[H]``: heads that keep full attention (LISA), or None.

    In ``"fast"`` mode, query rows where a non-empty group's share of the full softmax underflows (its best score
    is ~58 nats or more below the row's best; pretrained models have such rows, mostly in the first layer) are
    recomputed with the exact per-group normalisation and spliced in, so no group is ever lost.
    """
    B, H, L, _ = scores.shape
    allowed = _allowed(mask, B, L)
    if opts.implementation != "fast":
        return _exact_probs(
            _apply_mask(scores, mask), allowed, groups, _cached_counts(groups, mask, allowed), w, opts, full_heads
        )
    if groups.scatter_index is None:
        groups = groups._replace(scatter_index=_scatter_index(groups.partitions, groups.num_buckets))
    cands = _cached_counts(groups, mask, allowed, fast=True)
    bad_rows = None
    with torch.no_grad():
        if mask is None:
            p = torch.softmax(scores, dim=-1)  # (B, H, L, L)
        else:  # the masked copy is a fresh tensor: normalise it in place (one [B, H, L, L] allocation, not two)
            p = _apply_mask(scores, mask)
            torch.softmax(p, dim=-1, out=p)  # (B, H, L, L)
        joint = _cached_joint(groups)
        zj = torch.zeros(B, H, L, joint.size, dtype=p.dtype, device=p.device).scatter_add_(
            3, _expand(joint.index, H), p
        )  # (B, H, L, J) sums of P per joint bucket
        zs = [
            torch.zeros(B, H, L, n + _TRASH, dtype=p.dtype, device=p.device).scatter_add_(3, _expand(m, H), zj)
            for m, n in zip(joint.maps, groups.num_buckets)
        ]  # (B, H, L, M+1+_TRASH) per partition
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
    cand, cand_full = _candidates(cands, allowed, opts)
    a = _FastSyntaxProbs.apply(scores, w, p, zs, joint, cands, cand, cand_full is not None, opts, full_heads)
    if opts.empty_rows == "self":
        fallback = ~cand.any(-1)  # (B, L)
        if bool(fallback.any()):
            a = a + _self_fallback(fallback, full_heads, H)
    if bad_rows is not None:
        a = _splice_exact_rows(a, scores, mask, groups, w, opts, full_heads, bad_rows)
    return a


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
    """Replace the query rows ``rows`` (bool ``[B, L]``) of ``a`` by the exact computation (rows are independent:
    topical attention mixes heads and groups within a row only)."""
    B, H, L, _ = a.shape
    bi, li = rows.nonzero(as_tuple=True)
    R = bi.shape[0]
    s_rows = scores[bi, :, li, :].unsqueeze(2)  # (R, H, 1, L)
    m_rows = None if mask is None else mask.expand(B, 1, L, L)[bi, :, li, :].unsqueeze(2)  # (R, 1, 1, L)
    g_rows = SyntaxGroups(tuple(g[bi, li, :].unsqueeze(1) for g in groups.partitions), groups.num_buckets)
    allowed = _allowed(mask, B, L)
    ok_rows = None if allowed is None else allowed[bi, li, :].unsqueeze(1)  # (R, 1, L)
    counts = _group_counts(g_rows, ok_rows)
    w_rows = None if w is None else w[bi]  # (R, H, L)

    def exact_rows(s: torch.Tensor, w_r: torch.Tensor | None) -> torch.Tensor:
        return _exact_probs(_apply_mask(s, m_rows), ok_rows, g_rows, counts, w_r, opts, full_heads)  # (R, H, 1, L)

    if torch.is_grad_enabled() and (s_rows.requires_grad or (w_rows is not None and w_rows.requires_grad)):
        # Recomputed in the backward: the exact path's autograd intermediates of these rows (a dozen [R, H, 1, L]
        # per partition) are not kept; the result is the same (deterministic ops).
        a_rows = checkpoint(exact_rows, s_rows, w_rows, use_reentrant=False)
    else:
        a_rows = exact_rows(s_rows, w_rows)
    heads = torch.arange(H, device=a.device)
    # (bi, h, li) broadcast to (R, H): a contiguous copy of a with those rows replaced (no transposed copies)
    return a.index_put((bi.unsqueeze(1), heads.unsqueeze(0), li.unsqueeze(1)), a_rows.view(R, H, L))


class _JointIndex(NamedTuple):
    """The partitions' scatter buckets combined: pair ``(i, k)`` goes to joint bucket ``index[b, i, k]`` of row
    ``i`` (its tuple of buckets, one per partition, numbered per row), and joint bucket ``j`` of row ``i`` lies in
    bucket ``maps[p][b, i, j]`` of partition ``p``. Every ``[B, H, L, L]`` gather / scatter of the fast path then
    runs once over the joint buckets instead of once per partition; the per-partition tables are small
    ``[B, H, L, J]`` gathers / scatters of them."""

    index: torch.Tensor  # (B, L, L) int64
    maps: tuple[torch.Tensor, ...]  # (B, L, J) int64 each
    size: int  # J: the largest number of joint buckets of a row


def _joint_index(groups: SyntaxGroups) -> _JointIndex:
    """:class:`_JointIndex` of the scatter indices (one sort of ``[B, L, L]``; one host sync for ``J``)."""
    return _joint_buckets(groups.scatter_index, [n + _TRASH for n in groups.num_buckets])


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


def _cached_joint(groups: SyntaxGroups) -> _JointIndex:
    """:func:`_joint_index` once per forward (kept in ``groups.cache``; it depends on the groups only)."""
    if groups.cache is None:
        return _joint_index(groups)
    if "joint" not in groups.cache:
        groups.cache["joint"] = _joint_index(groups)
    return groups.cache["joint"]


def _expand(g: torch.Tensor, H: int) -> torch.Tensor:
    """Group ids ``[B, Lq, Lk]`` as a (stride-0) ``[B, H, Lq, Lk]`` index."""
    return g.unsqueeze(1).expand(g.shape[0], H, *g.shape[1:])


def _candidates(
    cands: list[torch.Tensor], allowed: torch.Tensor | None, opts: SyntaxAttentionOptions
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """All candidates ``[B, Lq, C]`` (partitions' groups, then the full candidate) and the full one ``[B, Lq]``."""
    if not opts.full_attention_candidate:
        return torch.cat(cands, -1), None
    B, Lq, _ = cands[0].shape
    full = allowed.any(-1) if allowed is not None else torch.ones(B, Lq, dtype=torch.bool, device=cands[0].device)
    return torch.cat(cands + [full.unsqueeze(-1)], -1), full


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
        jidx = _expand(joint.index, H)  # (B, H, L, L)
        maps = [_expand(m, H) for m in joint.maps]  # (B, H, L, J) each
        izs = []
        for z, ne in zip(zs, cands):  # zs are scratch tensors of syntax_probs: reuse them in place
            iz = z.clamp_(min=torch.finfo(z.dtype).tiny).reciprocal_().mul_(ne.unsqueeze(1))
            if full_heads is not None:
                iz.mul_((~full_heads).to(iz.dtype).view(1, H, 1, 1))
            izs.append(iz)
        # The only [B, H, L, L] tensor written here is the output ``a`` (P w goes there first): a fresh tensor of
        # that size costs as much as a pass over it (page faults), so none is allocated per pass.
        a = torch.empty_like(p)
        ys, logits = [], None
        if w is not None:
            pw = torch.mul(p, w.unsqueeze(2), out=a)  # (B, H, L, L)
            yj = torch.zeros(B, H, L, joint.size, dtype=p.dtype, device=p.device).scatter_add_(3, jidx, pw)
            logits = []
            for m, iz in zip(maps, izs):
                y = torch.zeros_like(iz).scatter_add_(3, m, yj)  # (B, H, L, M+1)
                ys.append(y)
                logits.append((y * iz).sum(1))  # (B, L, M+1)
            del pw, yj
            if has_full:  # Σ_h Σ_k P w over every key (w is 0 on full heads): the sum of any partition's buckets
                logits.append(ys[0].sum(-1).sum(1).unsqueeze(-1))  # (B, L, 1)
            logits = torch.cat(logits, -1)
        alpha = _topical_weights(logits, cand, opts.aggregation)  # (B, L, C)
        fallback = ~cand.any(-1)  # (B, L)
        phi = _full_weight(alpha[..., -1] if has_full else None, fallback, opts, full_heads, H)  # (B, H, L)
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
        jidx = _expand(joint.index, H)
        maps = [_expand(m, H) for m in joint.maps]
        topical = w is not None and opts.aggregation == "topical"
        scratch = torch.mul(p, da)  # (B, H, L, L) P dA
        wj = torch.zeros(B, H, L, joint.size, dtype=p.dtype, device=p.device).scatter_add_(3, jidx, scratch)
        ws = [torch.zeros_like(iz).scatter_add_(3, m, wj) for m, iz in zip(maps, izs)]  # Σ_{k in g} P dA
        del wj
        q_sum = ws[0].sum(-1)  # (B, H, L): Σ_k P dA
        rho = phi * q_sum  # full part of Σ_k P dP: φ Σ P dA (+ ψ Σ P w below)
        r_tables, dt_tables = [], []
        if topical:
            live = torch.ones(H, dtype=p.dtype, device=p.device) if full_heads is None else (~full_heads).to(p.dtype)
            d_alpha = [(wp * iz).sum(1) for wp, iz in zip(ws, izs)]  # (B, L, M+1) each
            if has_full:
                d_alpha.append((q_sum * live.view(1, H, 1)).sum(1).unsqueeze(-1))  # (B, L, 1)
            d_alpha = torch.cat(d_alpha, -1)
            dt = alpha * (d_alpha - (alpha * d_alpha).sum(-1, keepdim=True))  # (B, L, C) softmax backward
            psi = None
            if has_full:
                psi = dt[..., -1].unsqueeze(1) * live.view(1, H, 1)  # (B, H, L)
                rho = rho + psi * ys[0].sum(-1)
            start = 0
            for j, (iz, wp, y) in enumerate(zip(izs, ws, ys)):
                n = iz.shape[-1]
                a_p, dt_p = alpha[..., start : start + n].unsqueeze(1), dt[..., start : start + n].unsqueeze(1)
                t_dt = iz * dt_p  # (B, H, L, M+1)
                t_r = torch.addcmul(a_p * wp, dt_p, y).mul_(iz).mul_(iz)  # iz_p * Σ_{k in g} P_p dP_p
                if j == 0:
                    t_r += rho.unsqueeze(-1)
                    if psi is not None:
                        t_dt += psi.unsqueeze(-1)
                t_r.neg_()
                dt_tables.append(t_dt)
                r_tables.append(t_r)
                start += n
        else:
            start = 0
            for j, (iz, wp) in enumerate(zip(izs, ws)):
                n = iz.shape[-1]
                t_r = (alpha[..., start : start + n].unsqueeze(1) * wp).mul_(iz).mul_(iz)
                if j == 0:
                    t_r += rho.unsqueeze(-1)
                t_r.neg_()
                r_tables.append(t_r)
                start += n
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
    tables, start = [], 0
    for j, iz in enumerate(izs):
        n = iz.shape[-1]
        f = alpha[..., start : start + n].unsqueeze(1) * iz  # (B, H, L, M+1)
        if j == 0:
            f += phi.unsqueeze(-1)  # a per-row constant rides along in every bucket of the first table
        tables.append(f)
        start += n
    return tables


def _joint_table(tables: list[torch.Tensor], maps: list[torch.Tensor]) -> torch.Tensor:
    """``Σ_p tables[p][maps[p]]``: per-partition ``[B, H, L, M+1]`` tables on the joint buckets, ``[B, H, L, J]``."""
    out = tables[0].gather(3, maps[0])
    for t, m in zip(tables[1:], maps[1:]):
        out.add_(t.gather(3, m))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Exact path (autograd; per-group maximum)
# ---------------------------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------------------------
# Flex path (torch.nn.attention.flex_attention; one fused softmax with a per-(row, bucket) bias)
# ---------------------------------------------------------------------------------------------------------------

#: The flex path's pre-pass and backward passes compute the scores of this many bytes of ``[B, H, rows, L]`` fp32
#: at a time, so they never hold the scores of all rows.
_FLEX_CHUNK_BYTES = 1 << 26

#: Let the compiled flex_attention kernel compute the bias table's gradient itself (Inductor's learnable-bias
#: support, atomic adds) instead of :class:`_FlexBiasGrad`'s chunked pass. Off: that support has open bugs
#: (pytorch#145208, #157677); the GPU tests check both.
_FLEX_BIAS_GRAD_IN_KERNEL = False

#: The joint-bucket tables of the flex path are padded to a multiple of this many buckets, so that the compiled
#: flex_attention sees a handful of table shapes, not one per batch.
_FLEX_PAD = 16


@functools.cache
def _compiled_flex_attention() -> Any:
    """``torch.compile(flex_attention)`` (CUDA), built once per process."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention)


def _flex_check(query: torch.Tensor, dropout: float, module: nn.Module) -> None:
    """Refuse what the flex path cannot run, naming what would work."""
    if query.device.type not in ("cuda", "cpu"):
        raise ConfigError(
            f"implementation='flex' runs on CUDA (and eagerly on the CPU, for tests), not on "
            f"{query.device.type}; use implementation='fast'"
        )
    try:
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError as e:  # pragma: no cover - every torch this package supports has it
        raise ConfigError(
            f"implementation='flex' needs torch.nn.attention.flex_attention (torch >= 2.5); torch "
            f"{torch.__version__} has none: use implementation='fast'"
        ) from e
    if dropout > 0 and module.training:
        raise ConfigError(
            f"implementation='flex' has no attention-probability dropout (flex_attention has none); "
            f"set the encoder's attention_probs_dropout_prob=0 (got {dropout}) or use "
            "implementation='fast'"
        )


def _cached_flex_joint(groups: SyntaxGroups, mask: torch.Tensor | None, allowed: torch.Tensor | None) -> _JointIndex:
    """Joint buckets of the partitions' raw group ids and the mask (a last component: 1 = disallowed pair), ``J``
    padded to ``_FLEX_PAD``; once per forward and mask (kept in ``groups.cache`` with the mask, as the counts)."""
    hit = None if groups.cache is None else groups.cache.get("flex")
    if hit is not None and hit[0] is mask:
        return hit[1]
    index, sizes = list(groups.partitions), list(groups.num_buckets)
    if allowed is not None:
        index.append((~allowed).long())
        sizes.append(2)
    joint = _joint_buckets(index, sizes, pad=_FLEX_PAD)
    if groups.cache is not None:
        groups.cache["flex"] = (mask, joint)
    return joint


def _log_scatter(
    x: torch.Tensor, y: torch.Tensor | None, index: torch.Tensor, n: int, ok: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-sum-exp of ``x`` ``[..., K]`` per bucket ``index`` (``[..., K]``, ids below ``n``), each bucket with its
    own maximum, and the ``exp(x)``-weighted mean of ``y`` per bucket: ``([..., n] with -inf for empty buckets,
    [..., n] or None)``. Entries where ``ok`` is False (or ``x`` is -inf) count in no bucket."""
    fmin = torch.finfo(torch.float32).min
    finite = x > float("-inf") if ok is None else ok & (x > float("-inf"))
    xf = x.masked_fill(~finite, fmin)
    m = torch.full((*x.shape[:-1], n), fmin, device=x.device).scatter_reduce(-1, index, xf.detach(), "amax")
    e = torch.exp(xf - m.gather(-1, index)) * finite
    z = torch.zeros_like(m).scatter_add(-1, index, e)
    live = z > 0
    z_safe = torch.where(live, z, torch.ones_like(z))
    lz = torch.where(live, z_safe.log() + m, torch.full_like(z, float("-inf")))
    mean = None if y is None else torch.zeros_like(m).scatter_add(-1, index, e * y) / z_safe
    return lz, mean


class _FlexPrepass(torch.autograd.Function):
    """Per-(row, joint bucket) tables of the scores ``S = Q Kᵀ · scale``: ``lz[b,h,i,j] = log Σ_{k in j} exp(S_ik)``
    (-inf for empty buckets; each bucket with its own maximum, so nothing underflows) and, with ``w`` ``[B, H, L]``,
    ``Y[b,h,i,j] = Σ_{k in j} π_ik w_k`` with ``π_ik = exp(S_ik - lz_{i,j(k)})`` (softmax within the bucket).

    Over chunks of query rows, ``[B, H, rows, L]`` at a time, and only the ``[B, H, L, J]`` tables are kept: the
    backward recomputes ``S`` and ``π`` per chunk (``π`` from the kept ``lz``: no maximum pass) and applies
    ``dS_ik = π_ik (dlz_j + dY_j (w_k - Y_j))``, ``dw_k = Σ_i π_ik dY_{i,j}`` (the same autocast as the forward).
    """

    @staticmethod
    def forward(ctx, query, key, w, index, size, scaling):  # noqa: D102
        B, H, L, _ = query.shape
        fmin = torch.finfo(torch.float32).min
        lz = torch.empty(B, H, L, size, device=query.device)
        y = None if w is None else torch.empty_like(lz)
        for sl, idx in _row_chunks(index, H):
            s = _scores(query[:, :, sl], key, scaling)  # (B, H, R, L) fp32, finite
            m = torch.full_like(lz[:, :, sl], fmin).scatter_reduce_(3, idx, s, "amax")
            e = s.sub_(m.gather(3, idx)).exp_()  # (B, H, R, L) in place of s
            z = torch.zeros_like(m).scatter_add_(3, idx, e)
            lz[:, :, sl] = z.log().add_(m)  # empty buckets: log 0 + fmin = -inf
            if w is not None:
                y[:, :, sl] = (
                    torch.zeros_like(m)
                    .scatter_add_(3, idx, e.mul_(w.unsqueeze(2)))
                    .div_(z.clamp_(min=torch.finfo(torch.float32).tiny))
                )
        ctx.save_for_backward(query, key, w, index, lz, y)
        ctx.scaling = scaling
        ctx.amp = (
            query.device.type,
            torch.is_autocast_enabled(query.device.type),
            torch.get_autocast_dtype(query.device.type),
        )
        return (lz,) if w is None else (lz, y)

    @staticmethod
    def backward(ctx, d_lz, d_y=None):  # noqa: D102
        query, key, w, index, lz, y = ctx.saved_tensors
        B, H, L, _ = query.shape
        device, amp, amp_dtype = ctx.amp
        a_tab = d_lz if w is None else d_lz - d_y * y.nan_to_num(0.0)  # (B, H, L, J)
        d_q = torch.zeros(B, H, L, query.shape[-1], device=query.device)
        d_k = torch.zeros(B, H, L, key.shape[-1], device=query.device)
        d_w = None if w is None else torch.zeros_like(w)
        with torch.autocast(device, dtype=amp_dtype, enabled=amp):  # S as in the forward
            for sl, idx in _row_chunks(index, H):
                q = query[:, :, sl]
                p = _scores(q, key, ctx.scaling).sub_(lz[:, :, sl].gather(3, idx)).exp_()  # (B, H, R, L) π
                coef = a_tab[:, :, sl].gather(3, idx)
                if w is not None:
                    b = d_y[:, :, sl].gather(3, idx)  # (B, H, R, L)
                    d_w += (p * b).sum(2)
                    coef.addcmul_(b, w.unsqueeze(2))
                ds = p.mul_(coef)  # (B, H, R, L) dS
                d_q[:, :, sl] = torch.matmul(ds, key.float()) * ctx.scaling
                d_k += torch.matmul(ds.transpose(-1, -2), q.float()) * ctx.scaling
        return d_q.to(query.dtype), d_k.to(key.dtype), d_w, None, None, None


def _row_chunks(index: torch.Tensor, H: int):
    """``(rows slice, [B, H, R, L] index)`` over chunks of query rows of ``_FLEX_CHUNK_BYTES`` fp32 scores each."""
    B, L, Lk = index.shape
    rows = max(1, _FLEX_CHUNK_BYTES // max(1, 4 * B * H * Lk))
    for start in range(0, L, rows):
        sl = slice(start, min(L, start + rows))
        yield sl, _expand(index[:, sl], H)


def _flex_prepass(
    query: torch.Tensor, key: torch.Tensor, w: torch.Tensor | None, scaling: float, joint: _JointIndex
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(lz, Y)`` per joint bucket ``[B, H, L, J]`` (:class:`_FlexPrepass`; Y None without w)."""
    out = _FlexPrepass.apply(query, key, w, joint.index, joint.size, scaling)
    return out[0], (out[1] if w is not None else None)


def _log_topical_weights(logits: torch.Tensor | None, cand: torch.Tensor, aggregation: str) -> torch.Tensor:
    """``log α`` ``[B, L, C]`` (as :func:`_topical_weights`), -inf for non-candidates, with finite gradients."""
    c = cand.to(torch.float32)
    if aggregation == "sum":
        lw = torch.zeros_like(c)
    elif aggregation == "mean" or logits is None:
        lw = -c.sum(-1, keepdim=True).clamp(min=1.0).log().expand_as(c)
    else:  # a finite fill keeps rows without candidates finite; they are set to -inf just below
        lw = torch.log_softmax(logits.masked_fill(~cand, torch.finfo(torch.float32).min), -1)
    return lw.masked_fill(~cand, float("-inf"))


def _flex_context(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    bias: torch.Tensor,
    index: torch.Tensor,
    scaling: float,
    lz: torch.Tensor,
) -> torch.Tensor:
    """``softmax_k(S[b,h,i,k] + bias[b,h,i,index[b,i,k]]) V`` ``[B, H, L, d]`` through flex_attention (compiled on
    CUDA; ``lz`` ``[B, H, L, J]`` the log-sum-exp of ``S`` per bucket, for the bias gradient). flex_attention has
    no CPU backward: on the CPU under autograd the same softmax runs densely (tests).

    The gradient of ``bias`` comes from :class:`_FlexBiasGrad` (a chunked pass in the backward): flex_attention
    itself only ever sees a bias that needs no gradient, its most-used form. With ``_FLEX_BIAS_GRAD_IN_KERNEL``
    the compiled kernel computes it instead (Inductor's learnable-bias support: atomic adds into the table)."""
    B, H, L, _ = query.shape
    bias_grad = torch.is_grad_enabled() and bias.requires_grad
    table = bias if _FLEX_BIAS_GRAD_IN_KERNEL else bias.detach()

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[b, h, q_idx, index[b, q_idx, kv_idx]]

    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value, table))
    if query.device.type == "cpu" and grad:
        s = _scores(query, key, scaling) + table.gather(3, _expand(index, H))  # (B, H, L, L), CPU tests only
        out = torch.matmul(torch.softmax(s, -1).to(value.dtype), value)
    elif query.device.type == "cuda":
        out = _compiled_flex_attention()(query, key, value, score_mod=score_mod, scale=scaling)
    else:
        from torch.nn.attention.flex_attention import flex_attention

        with warnings.catch_warnings():  # eager CPU: the "called without torch.compile" advice is for GPUs
            warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
            out = flex_attention(query, key, value, score_mod=score_mod, scale=scaling)
    if bias_grad and not _FLEX_BIAS_GRAD_IN_KERNEL:
        out = _FlexBiasGrad.apply(out, bias, lz.detach(), query.detach(), key.detach(), value.detach(), index, scaling)
    return out


class _FlexBiasGrad(torch.autograd.Function):
    """Identity on the flex output ``O = softmax(S + b[index]) V`` whose backward adds the gradient of the bias
    table, the softmax backward summed per joint bucket: ``db_{ij} = Σ_{k in j} P_ik (dO_i · V_k - dO_i · O_i)``.

    With the pre-pass's ``lz_{ij} = log Σ_{k in j} exp(S_ik)``: ``P_ik = π_ik c_ij`` with ``π_ik = exp(S_ik -
    lz_{ij})`` and the bucket's share ``c_ij = softmax_j(lz_ij + b_ij)``, so ``db_ij = c_ij (Σ_{k in j} π_ik
    dO_i · V_k - dO_i · O_i)``: per chunk of query rows the scores, ``π`` (one gather), ``dO Vᵀ`` and one scatter.
    The gradients of q, k, v flow through the flex output itself."""

    @staticmethod
    def forward(ctx, out, bias, lz, query, key, value, index, scaling):  # noqa: D102
        ctx.save_for_backward(out, bias, lz, query, key, value, index)
        ctx.scaling = scaling
        ctx.amp = (
            query.device.type,
            torch.is_autocast_enabled(query.device.type),
            torch.get_autocast_dtype(query.device.type),
        )
        return out.view_as(out)

    @staticmethod
    def backward(ctx, d_out):  # noqa: D102
        out, bias, lz, query, key, value, index = ctx.saved_tensors
        H = query.shape[1]
        d_out = d_out.float()
        delta = (d_out * out.float()).sum(-1, keepdim=True)  # (B, H, L, 1)
        share = torch.softmax(lz + bias, -1)  # (B, H, L, J) c: each bucket's share of the flex softmax
        v32 = value.float()
        device, amp, amp_dtype = ctx.amp
        t = torch.zeros_like(bias)  # (B, H, L, J) Σ_{k in j} π dO·V
        for sl, idx in _row_chunks(index, H):
            with torch.autocast(device, dtype=amp_dtype, enabled=amp):  # S exactly as the pre-pass computed it
                s = _scores(query[:, :, sl], key, ctx.scaling)  # (B, H, R, L) fp32
            pi = s.sub_(lz[:, :, sl].gather(3, idx)).exp_()
            t[:, :, sl] = torch.zeros_like(t[:, :, sl]).scatter_add_(
                3, idx, pi.mul_(torch.matmul(d_out[:, :, sl], v32.transpose(-1, -2)))
            )
        return d_out.to(out.dtype), share * (t - delta), None, None, None, None, None, None


class _PairPasses(NamedTuple):
    """The two passes over the ``L x L`` pairs of the flex algebra, swappable: PyTorch ops and flex_attention
    (``"flex"``, below) or the fused Triton kernels (``"triton"``,
    :mod:`syntaxformer.modeling.syntax_attention_triton`).
    Everything between them (the ``[B, H, L, J]`` tables' algebra, LISA, gate, recorder) is shared."""

    check: Callable[[torch.Tensor, float, nn.Module], None]  # (query, dropout, module): refuse what cannot run
    # (q, k, w, scaling, joint, cache) -> (lz - c, Y, c): log-sums per joint bucket, shifted by any per-row c
    prepass: Callable[..., tuple[torch.Tensor, torch.Tensor | None, Any]]
    # (q, k, v, bias, joint, scaling, lz, c, cache) -> softmax(S - c + b) V
    context: Callable[..., torch.Tensor]


_FLEX_PASSES = _PairPasses(
    _flex_check,
    lambda query, key, w, scaling, joint, cache: (*_flex_prepass(query, key, w, scaling, joint), None),
    lambda query, key, value, bias, joint, scaling, lz, shift, cache: _flex_context(
        query, key, value, bias, joint.index, scaling, lz
    ),
)


def _flex_syntax_context(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scaling: float,
    groups: SyntaxGroups,
    w: torch.Tensor | None,
    opts: SyntaxAttentionOptions,
    full_heads: torch.Tensor | None,
    passes: _PairPasses = _FLEX_PASSES,
) -> torch.Tensor:
    """``A V`` ``[B, H, L, d]`` for the effective attention ``A`` of :func:`syntax_probs`, never building ``A``.

    Per head h, row i and key k, ``A[h,i,k] = Σ_p α_{i,p,g_p} exp(S_ik - log Z_{p,h,i,g_p}) + φ_{h,i} exp(S_ik -
    lse_{h,i})`` (``g_p = g_p(i, k)`` the pair's group in partition p). The factor of ``exp(S_ik)`` depends on the
    pair only through its joint bucket ``j = (g_1, ..., g_P, disallowed)``, so ``A[h,i,k] = exp(S_ik + b_{h,i,j})``
    with ``b = log(Σ_p α_p / Z_p + φ / Z_full)`` (a log-sum-exp; -inf for pairs of no candidate group, the fp32
    minimum for disallowed pairs) and ``A V = W · softmax_k(S + b) V`` with the row's total weight
    ``W_{h,i} = Σ_{p,g} α_{i,p,g} + φ_{h,i}`` (1 for ``"topical"`` / ``"mean"``, the number of candidates for
    ``"sum"``). ``log Z``, the topical scores ``t_{i,p,g} = Σ_h Y_{p,h,i,g}`` and ``lse`` come from an exact
    pre-pass over chunks of query rows: one scatter of the scores into the joint buckets (each bucket with its
    own maximum: nothing underflows, no host sync), then small ``[B, H, L, J]`` log-sum-exp scatters into each
    partition's groups and the full row; the second pass is one flex_attention call whose ``score_mod``
    gathers ``b``.
    """
    B, H, L, _ = query.shape
    allowed = _allowed(mask, B, L)  # (B, L, L) or None
    joint = _cached_flex_joint(groups, mask, allowed)
    # (B, H, L, J) each: per joint bucket (log-sums shifted by a per-row constant, none for flex)
    lzj, yj, shift = passes.prepass(query, key, w, scaling, joint, groups.cache)
    cands = _cached_counts(groups, mask, allowed)  # (B, L, M+1) per partition
    cand, cand_full = _candidates(cands, allowed, opts)  # (B, L, C)
    fallback = ~cand.any(-1)  # (B, L)
    live = torch.ones(H, dtype=torch.bool, device=query.device) if full_heads is None else ~full_heads  # (H,)

    def bias_and_weight(lzj: torch.Tensor, yj: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The bias per (head, row, joint bucket) ``[B, H, L, J]`` and the row weight ``W`` ``[B, H, L]``."""
        ok = None if allowed is None else ~_expand(joint.maps[-1], H).bool()  # (B, H, L, J) allowed buckets
        logz, ys = [], []  # per partition (B, H, L, M+1): the joint buckets' tables combined by group
        for m, n in zip(joint.maps, groups.num_buckets):
            lz, y = _log_scatter(lzj, yj, _expand(m, H), n, ok)
            logz.append(lz)
            ys.append(y)
        zero = torch.zeros(1, dtype=torch.long, device=query.device).expand(B, H, L, joint.size)
        lse, y_full = _log_scatter(lzj, yj, zero, 1, ok)  # (B, H, L, 1): the full row
        lse, y_full = lse.squeeze(-1), None if y_full is None else y_full.squeeze(-1)  # (B, H, L)
        has_full = cand_full is not None
        logits = None
        if w is not None:
            logits = [y.sum(1) for y in ys] + ([y_full.sum(1).unsqueeze(-1)] if has_full else [])  # (B, L, ·)
            logits = torch.cat(logits, -1)  # (B, L, C)
        log_alpha = _log_topical_weights(logits, cand, opts.aggregation)  # (B, L, C)
        alpha = log_alpha.exp()
        phi = _full_weight(alpha[..., -1] if has_full else None, fallback, opts, full_heads, H)  # (B, H, L)

        neg_inf = torch.tensor(float("-inf"), device=query.device)
        terms, start = [], 0
        for lz, ne, m in zip(logz, cands, joint.maps):
            n = lz.shape[-1]
            valid = ne.unsqueeze(1) & live.view(1, H, 1, 1)  # (B, H, L, M+1)
            la = log_alpha[..., start : start + n].unsqueeze(1).masked_fill(~valid, 0.0)
            t = torch.where(valid, la - lz.masked_fill(~valid, 0.0), neg_inf)  # log(α / Z) (B, H, L, M+1)
            terms.append(t.gather(3, _expand(m, H)))  # (B, H, L, J)
            start += n
        phi_term = torch.where(phi > 0, phi.clamp(min=torch.finfo(phi.dtype).tiny).log() - lse, neg_inf)  # (B, H, L)
        terms.append(phi_term.unsqueeze(-1).expand_as(terms[0]))
        terms = torch.stack(terms, -1)  # (B, H, L, J, P+1)
        some = (terms > float("-inf")).any(-1)  # (B, H, L, J)
        bias = torch.where(some, torch.logsumexp(terms.masked_fill(~some.unsqueeze(-1), 0.0), -1), neg_inf)
        empty = ~some.any(-1, keepdim=True)  # (B, H, L, 1) rows of weight 0 ("self" fallback): any finite bias
        bias = bias.masked_fill(empty, 0.0)
        if allowed is not None:
            bias = bias.masked_fill(_expand(joint.maps[-1], H).bool(), torch.finfo(torch.float32).min)
        weight = alpha[..., :start].sum(-1).unsqueeze(1) * live.view(1, H, 1) + phi  # (B, H, L) W
        return bias, weight

    if torch.is_grad_enabled() and (lzj.requires_grad or (yj is not None and yj.requires_grad)):
        # Recomputed in the backward: the table algebra's two dozen [B, H, L, J]-sized intermediates are not kept
        # (at 128 tokens with J = 32 they would be several [B, H, L, L] tensors' worth); it is cheap to redo.
        bias, weight = checkpoint(bias_and_weight, lzj, yj, use_reentrant=False)
    else:
        bias, weight = bias_and_weight(lzj, yj)
    ctx = passes.context(query, key, value, bias, joint, scaling, lzj, shift, groups.cache)  # (B, H, L, d)
    ctx = ctx * weight.unsqueeze(-1).to(ctx.dtype)
    if opts.empty_rows == "self":
        rows = fallback.unsqueeze(1) & live.view(1, H, 1)  # (B, H, L)
        ctx = torch.where(rows.unsqueeze(-1), value.to(ctx.dtype), ctx)
    return ctx


def _flex_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scaling: float,
    dropout: float,
    groups: SyntaxGroups,
    opts: SyntaxAttentionOptions,
    topical: TopicalAttention | None,
    lisa: LisaRecorder | None,
    gate_module: SyntaxGate | None,
    record: SyntaxAttentionRecorder | None,
    layer: int | None,
    passes: _PairPasses = _FLEX_PASSES,
) -> torch.Tensor:
    """A syntax layer through :func:`_flex_syntax_context`: the same output ``[B, L, H, d]`` as the other
    implementations (LISA heads, topical attention with shared or own projections, gate, recorder), and no
    ``[B, H, L, L]`` tensor except the recorder's (analysis) and the CPU stand-in under autograd (tests)."""
    passes.check(query, dropout, module)
    B, H, L, d = query.shape
    full_heads = None
    added = lisa.added if lisa is not None else None
    head_mask = None if mask is None else mask[:, 0]
    if added is not None:
        lisa.log_probs = torch.log_softmax(_apply_mask(added.scores(query, key, scaling), head_mask), -1)
    elif lisa is not None:
        if not 0 <= lisa.head < H:
            raise ConfigError(f"lisa_head={lisa.head} but the layer has {H} heads")
        h = lisa.head
        s_head = _scores(query[:, h : h + 1], key[:, h : h + 1], scaling)[:, 0]  # (B, L, L) one head only
        lisa.log_probs = torch.log_softmax(_apply_mask(s_head, head_mask), -1)
        full_heads = torch.zeros(H, dtype=torch.bool, device=query.device)
        full_heads[h] = True
    w = _topical_key_values(module, value, groups, opts, topical, layer, full_heads)  # (B, H, L) or None
    syn = _flex_syntax_context(query, key, value, mask, scaling, groups, w, opts, full_heads, passes)  # (B, H, L, d)
    if topical is not None and topical.own_projections and opts.aggregation == "topical":
        flat = topical.values(layer, syn.transpose(1, 2).reshape(B, L, H * d))  # (B, L, H*d)
        syn = flat.view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
    gate = None
    if gate_module is not None:
        if layer is None:
            raise InputError(f"{type(module).__name__} has no layer index; set module.syntax_layer_idx")
        gate = gate_module.value(layer)  # (1, H | 1, 1, 1)
        allowed = _allowed(mask, B, L)  # a bool mask whatever the host's form (SDPA wants bool or q's dtype)
        base = F.scaled_dot_product_attention(
            query, key, value, scale=scaling, attn_mask=None if allowed is None else allowed.unsqueeze(1)
        )
        # base: (B, H, L, d)
        syn = base + gate.to(syn.dtype) * (syn.to(base.dtype) - base)
    if record is not None and layer is not None:
        with torch.no_grad():  # analysis only: the effective attention, densely, by the exact path
            s = _apply_mask(_scores(query, key, scaling), mask)
            allowed = _allowed(mask, B, L)
            probs, alpha, cand = _exact_probs(
                s, allowed, groups, _group_counts(groups, allowed), w, opts, full_heads, with_weights=True
            )
            if gate is not None:
                probs = gate_probs(probs, torch.softmax(s, -1), gate)
        record.attentions[layer] = probs
        record.topical[layer], record.candidates[layer] = alpha, cand
        record.num_buckets = tuple(groups.num_buckets)
        record.full_candidate = opts.full_attention_candidate
    out = syn.to(value.dtype).transpose(1, 2)  # (B, L, H, d)
    if added is not None:
        out = out + _added_head_context(module, added, lisa, value, dropout)
    return out.contiguous()


register_syntax_attention()
