"""What the Syntax-BERT attention (Bai et al., 2021, §3.3) computes, whichever backend runs it: its options, group
ids, learned parts, recorders and the algebra the backends share (``docs/syntax_bert.md``, "Semantics").

Notation, per layer, head ``h`` and query row ``i`` (``S = Q Kᵀ / sqrt(d_head)``, masked keys excluded everywhere):
a sub-network is a (partition, group ``g``) of the L x L pairs (:mod:`syntaxformer.masks.relations`);
``A_g[h, i, :] = softmax(S[h, i, k] over the keys k of group g)`` (a group with no key in row i is *empty*, never a
candidate); ``O_g[i] = concat_h(Σ_k A_g[h, i, k] V_h[k])``; topical score ``t_{i,g} = Σ_h Σ_{k in g} A_g[h,i,k]
w_{h,k}`` with ``w_{h,k} = V_h[k] · u_h`` and ``u = W_O W_K q / sqrt(hidden)`` folded once per layer (Eq. 2,
:func:`topical_key_values`); ``α_i = softmax_g(t_{i,g})`` over the non-empty sub-networks; the effective attention
``A = Σ_g α_g A_g + φ P`` (``P`` the full softmax, ``φ`` its weight: the full candidate's α, 1 on fallback rows
for ``empty_rows="full"``, 1 for a LISA head) and the output ``A V``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from syntaxformer.errors import ConfigError, InputError

#: Name under which the attention function is registered (``attn_implementation="syntax"``); each backend is
#: registered as ``"syntax_<implementation>"`` too.
SYNTAX_ATTENTION = "syntax"

Aggregation = Literal["topical", "sum", "mean"]
EmptyRows = Literal["full", "self"]
Implementation = Literal["fast", "exact", "triton", "auto"]
#: The values of ``implementation`` (a removed ``"flex"`` is refused by name: :func:`check_implementation`).
IMPLEMENTATIONS: tuple[str, ...] = ("fast", "exact", "triton", "auto")

#: Extra "trash" buckets that receive the pairs of no group in the fast path, spread by key position: thousands of
#: consecutive ``scatter_add`` s into one bucket form a dependency chain that makes the scatter ~3x slower.
TRASH_BUCKETS = 8


def check_implementation(value: str, owner: str = "SyntaxAttentionOptions") -> None:
    """Refuse an ``implementation`` outside :data:`IMPLEMENTATIONS` (``owner`` names where it was set)."""
    if value == "flex":
        raise ConfigError(
            f"{owner}.implementation='flex' was removed (measured slower than 'fast' at every shape on an H100); "
            f"choose one of {IMPLEMENTATIONS} ('triton' computes the same biased softmax with fused kernels)"
        )
    if value not in IMPLEMENTATIONS:
        raise ConfigError(f"{owner}.implementation must be one of {IMPLEMENTATIONS}, got {value!r}")


@dataclass(frozen=True)
class SyntaxAttentionOptions:
    """How the ``"syntax"`` attention function combines the sub-networks (passed as ``syntax_options=``).

    Args:
        aggregation, empty_rows, full_attention_candidate, implementation, lisa_layer, lisa_head, layers: as the
            :class:`~syntaxformer.modeling.SyntaxBertConfig` options of those names (``layers``: ``syntax_layers``);
            ``"topical"`` without ``syntax_topical`` counts the query as zero, i.e. ``"mean"``.
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
        for name, allowed in (("aggregation", ("topical", "sum", "mean")), ("empty_rows", ("full", "self"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"SyntaxAttentionOptions.{name} must be one of {allowed}, got {getattr(self, name)!r}"
                )
        check_implementation(self.implementation)
        if self.layers is not None:
            object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))

    def uses_syntax(self, layer: int | None) -> bool:
        """Whether layer ``layer`` uses sub-networks (``None``: a module without a layer index -> all)."""
        return self.layers is None or layer is None or layer in self.layers


class SyntaxGroups(NamedTuple):
    """Group ids of the partitions, ready for the attention function (build once per forward, share by layers).

    Attributes:
        partitions: one int64 ``[B, L, L]`` tensor per partition (0 = no sub-network).
        num_buckets: per partition, ``1 + the largest group id`` that may occur (the size of the per-group tables).
        scatter_index: the fast path's index per partition (:func:`scatter_index_of`; built on the fly when ``None``).
        cache: per-forward memo of what depends only on the groups and the host's mask (:func:`per_forward`;
            ``None``: recomputed per layer).
    """

    partitions: tuple[torch.Tensor, ...]
    num_buckets: tuple[int, ...]
    scatter_index: tuple[torch.Tensor, ...] | None = None
    cache: dict | None = None


def prepare_groups(
    groups: torch.Tensor | Sequence[torch.Tensor | None] | SyntaxGroups | None,
    num_buckets: int | Sequence[int] | None = None,
) -> SyntaxGroups | None:
    """Integer ``[B, L, L]`` group ids (one tensor, or one per partition; ``None`` entries are skipped) as
    :class:`SyntaxGroups` (``None`` when there is no partition at all). ``num_buckets``: table size per partition
    (``3 * D + 2`` for relation groups with max distance D); ``None`` reads ``max + 1`` from the tensors."""
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
    return SyntaxGroups(longs, sizes, scatter_index_of(longs, sizes), {})


def scatter_index_of(partitions: Sequence[torch.Tensor], sizes: Sequence[int]) -> tuple[torch.Tensor, ...]:
    """Group ids with id 0 spread over :data:`TRASH_BUCKETS` extra buckets after ``sizes[p]``."""
    out = []
    for g, n in zip(partitions, sizes):
        trash = n + torch.arange(g.shape[-1], device=g.device) % TRASH_BUCKETS  # (Lk,)
        out.append(torch.where(g == 0, trash, g))
    return tuple(out)


class TopicalAttention(nn.Module):
    """The task queries of topical attention (Eq. 2), one per layer (zero at initialisation), their folded form
    ``u_l = W_O W_K q_l / sqrt(hidden)`` (:meth:`folded`) and, with ``projections="own"``, the paper's own ``W_Kt``
    and ``W_Vt`` (``docs/syntax_bert.md``).

    Args:
        dim: size of the concatenated heads (``heads * d_head``; the key projection's output size).
        hidden_size: model width, for the ``1 / sqrt(hidden)`` of Eq. 2 (default ``dim``).
        projections: ``"shared"`` (the layer's ``W_K``, bound with :meth:`bind`, no ``W_Vt``) or ``"own"``.
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
        own = projections == "own"
        # Plain parameters (not nn.Linear): Hugging Face's default init never touches them; see reset_projections.
        self.key_weight = nn.Parameter(torch.zeros(num_layers, dim, hidden)) if own else None  # W_Kt, nn.Linear-style
        self.value_weight = nn.Parameter(torch.zeros(num_layers, dim, dim)) if own else None  # W_Vt, nn.Linear-style
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
        key_weight, value_weight = self.key_weight, self.value_weight
        if key_weight is None or value_weight is None or not self._sites:  # shared projections, or none bound
            return
        for layer, (key, _) in enumerate(self._sites):
            key_weight[layer].copy_(key.weight)
        eye = torch.eye(value_weight.shape[-1], dtype=value_weight.dtype, device=value_weight.device)
        value_weight.copy_(eye.expand_as(value_weight))

    def site(self, layer: int) -> tuple[nn.Linear, nn.Linear]:
        """The ``(key projection, output projection)`` bound for ``layer``."""
        if not self._sites:
            # internal invariant: the models bind every layer when they are built, before any forward
            raise RuntimeError("TopicalAttention.bind(...) must attach the layers' key and output projections first")
        return self._sites[layer]

    def folded(self, layer: int) -> torch.Tensor:
        """``u_l`` ``[dim]`` such that the score of a sub-network output ``o`` is ``o · u_l``."""
        key, out = self.site(layer)
        w_k = self.key_weight[layer] if self.key_weight is not None else key.weight  # (dim, hidden), own or the layer's
        return (self.query[layer] @ w_k) @ out.weight * self.scale  # (dim,)

    def scores(self, layer: int, outputs: torch.Tensor) -> torch.Tensor:
        """Eq. 2 as written: ``q_l · key(out(outputs)) / sqrt(hidden)`` for ``outputs`` ``[..., dim]`` -> ``[...]``
        (the key bias, shared projections only, adds the same constant to every score: it cancels in Eq. 3)."""
        key, out = self.site(layer)
        keyed = F.linear(out(outputs), self.key_weight[layer]) if self.key_weight is not None else key(out(outputs))
        return keyed @ self.query[layer] * self.scale

    def values(self, layer: int, context: torch.Tensor) -> torch.Tensor:
        """Own projections: ``context W_Vt`` for ``context`` ``[..., dim]``; shared: ``context`` unchanged."""
        return F.linear(context, self.value_weight[layer]) if self.value_weight is not None else context


class SyntaxGate(nn.Module):
    """Zero-initialised gate towards the sub-networks (our extension): the effective attention of layer ``l`` is
    ``P_full + g_{l(,h)} (A_syntax - P_full)``; ``per_head``: one scalar per head instead of one per layer."""

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
    """LISA as an *added* head (``lisa_head_mode="added"``): own projections ``W_Qa``, ``W_Ka`` ``[d_head, heads *
    d_head]`` of the layer's concatenated queries / keys, scores ``S_a = (Q W_Qa)(K W_Ka)ᵀ · scale``, ``P_a =
    softmax(S_a)`` over the non-padding keys, and ``ctx_h += m_h P_a V_h`` with mixing weights ``m`` (zero at
    initialisation; ``docs/syntax_bert.md``). ``init_head``: the added head starts as a copy of this pretrained
    head's query / key projections."""

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
    """Collects the log attention probabilities of the LISA head (passed as ``syntax_lisa=``): after the forward
    pass, ``log_probs`` ``[B, L, L]``, row ``i`` the log-softmax of head ``head`` of layer ``layer``."""

    layer: int
    head: int = 0
    log_probs: torch.Tensor | None = field(default=None, repr=False)
    added: AddedLisaHead | None = field(default=None, repr=False)
    #: ``[B, L]`` bool, False at the query rows whose mask allows no key (the added head adds nothing there);
    #: ``None``: every row has keys.
    rows_with_keys: torch.Tensor | None = field(default=None, repr=False)

    def loss(self, parent: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the recorded rows against ``parent`` ``[B, L]`` (key position of each token's
        syntactic parent; rows with ``parent < 0`` are ignored; 0 if no row counts)."""
        if self.log_probs is None:
            raise ConfigError(
                f"no attention was recorded for the LISA head (layer {self.layer}); is the model "
                f"running attn_implementation='{SYNTAX_ATTENTION}' with at least {self.layer + 1} "
                "layers?"
            )
        parent = parent.to(self.log_probs.device).long()
        keep = parent >= 0  # (B, L)
        picked = self.log_probs.float().gather(-1, parent.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, L)
        return -(picked * keep).sum() / keep.sum().clamp(min=1)

    def record(
        self, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float, scores=None
    ) -> torch.Tensor | None:
        """Fill :attr:`log_probs` from a layer's ``query`` / ``key`` ``[B, H, L, d]`` (``scores``: the layer's
        fp32 ``[B, H, L, L]`` scores when already computed). Returns the bool ``[H]`` heads that keep full
        attention (the LISA head taken out of the sub-networks), or ``None`` with an added head."""
        B, H, L, _ = query.shape
        head_mask = None if mask is None else mask[:, 0]
        allowed = allowed_keys(mask, B, L)
        self.rows_with_keys = None if allowed is None else allowed.any(-1)  # (B, L)
        if self.added is not None:
            self.log_probs = torch.log_softmax(apply_mask(self.added.scores(query, key, scaling), head_mask), -1)
            return None
        if not 0 <= self.head < H:
            raise ConfigError(f"lisa_head={self.head} but the layer has {H} heads")
        h = self.head
        if scores is None:  # one head only
            scores = attention_scores(query[:, h : h + 1], key[:, h : h + 1], scaling)
            h = 0
        self.log_probs = torch.log_softmax(apply_mask(scores[:, h], head_mask), -1)  # (B, L, L)
        full_heads = torch.zeros(H, dtype=torch.bool, device=query.device)
        full_heads[self.head] = True
        return full_heads


@dataclass
class SyntaxAttentionRecorder:
    """Collects, for analysis, what every layer of a forward pass attended to (``model(..., syntax_record=recorder)``),
    computed beside the layer without gradients. Per layer index ``l`` that ran: ``attentions[l]`` ``[B, H, L, L]``
    the effective attention (gated; the plain softmax for a layer without sub-networks); syntax layers only, by the
    exact path: ``topical[l]`` ``[B, L, C]`` the weight α of each candidate sub-network per query token and
    ``candidates[l]`` bool ``[B, L, C]``. The ``C`` columns are the group ids ``0..num_buckets[p]-1`` of each
    partition ``p`` in order (:func:`syntaxformer.masks.relations.group_name`), then the full attention when
    ``full_candidate``."""

    attentions: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    topical: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    candidates: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    num_buckets: tuple[int, ...] = ()
    full_candidate: bool = False


def layer_index(module: nn.Module) -> int | None:
    """``module``'s ``syntax_layer_idx`` (set by the syntax models), else its own ``layer_idx``."""
    idx = getattr(module, "syntax_layer_idx", None)
    return getattr(module, "layer_idx", None) if idx is None else idx


@dataclass
class SyntaxCall:
    """The syntax keyword arguments of one layer's attention call, read once (:func:`read_call`)."""

    layer: int | None
    opts: SyntaxAttentionOptions
    groups: SyntaxGroups | None  # None: not a syntax layer
    lisa: LisaRecorder | None  # the LISA recorder in the LISA layer, else None
    topical: TopicalAttention | None
    gate: SyntaxGate | None
    record: SyntaxAttentionRecorder | None
    scaling: float

    @property
    def plain(self) -> bool:
        """Whether the layer attends as usual (no sub-networks, no LISA head)."""
        return self.groups is None and self.lisa is None


def read_call(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    scaling: float | None,
    syntax_groups: Any = None,
    syntax_options: SyntaxAttentionOptions | None = None,
    syntax_topical: TopicalAttention | None = None,
    syntax_lisa: LisaRecorder | None = None,
    syntax_gate: SyntaxGate | None = None,
    syntax_record: SyntaxAttentionRecorder | None = None,
    **kwargs: Any,
) -> SyntaxCall:
    """The :class:`SyntaxCall` of a backend's keyword arguments (other model kwargs are ignored); refuses a
    syntax layer that is not bidirectional self-attention."""
    opts = syntax_options or SyntaxAttentionOptions()
    layer = layer_index(module)
    prepared = prepare_groups(syntax_groups)
    call = SyntaxCall(
        layer=layer,
        opts=opts,
        groups=prepared if prepared is not None and opts.uses_syntax(layer) else None,
        lisa=syntax_lisa if syntax_lisa is not None and layer is not None and layer == syntax_lisa.layer else None,
        topical=syntax_topical,
        gate=syntax_gate,
        record=syntax_record,
        scaling=query.shape[-1] ** -0.5 if scaling is None else scaling,
    )
    if not call.plain and (key.shape[2] != query.shape[2] or getattr(module, "is_causal", False)):
        raise ConfigError(
            f"the syntax attention is bidirectional self-attention (encoders); {type(module).__name__} "
            f"has {query.shape[2]} queries, {key.shape[2]} keys, is_causal={getattr(module, 'is_causal', False)}"
        )
    return call


def plain_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    dropout: float,
    call: SyntaxCall,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A layer without sub-networks or LISA head: the host's usual (fused) attention; the recorder gets the plain
    softmax beside it."""
    out, weights = sdpa_attention_forward(
        module, query, key, value, mask, dropout=dropout, scaling=call.scaling, is_causal=False
    )
    if call.record is not None and call.layer is not None:
        with torch.no_grad():
            s = attention_scores(query, key, call.scaling)
            call.record.attentions[call.layer] = torch.softmax(apply_mask(s, mask), dim=-1)
    return out, weights


def attention_scores(query: torch.Tensor, key: torch.Tensor, scaling: float) -> torch.Tensor:
    """fp32 scores ``[B, H, L, L]`` (the scale is applied to the queries, the smaller tensor)."""
    return torch.matmul(query * scaling, key.transpose(-1, -2)).float()


def allowed_keys(mask: torch.Tensor | None, B: int, L: int) -> torch.Tensor | None:
    """Head-independent allowed keys ``[B, L, L]`` from the host's mask (None = everything allowed)."""
    if mask is None:
        return None
    if mask.dim() != 4 or mask.shape[1] != 1:
        raise InputError(f"the syntax attention needs one mask for all heads, [B, 1, L, L]; got {tuple(mask.shape)}")
    if mask.dtype == torch.bool:
        return mask[:, 0].expand(B, L, L)
    return (mask[:, 0] > torch.finfo(mask.dtype).min / 2).expand(B, L, L)


def apply_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Scores with disallowed keys at the fp32 minimum (bool mask) or plus an additive float mask."""
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, torch.finfo(torch.float32).min)
    return (scores + mask.float()).clamp(min=torch.finfo(torch.float32).min)


def without_keyless_rows(p: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """``p`` ``[B, H, Lq, Lk]`` with the rows whose ``allowed`` ``[B, Lq, Lk]`` keys are none set to 0 (the masked
    softmax of such a row would spread over the disallowed keys)."""
    return p if allowed is None else p * allowed.any(-1)[:, None, :, None].to(p.dtype)


def full_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``P`` ``[B, H, L, L]``: the softmax of the unmasked fp32 ``scores`` over the keys the host's ``mask`` allows
    (:func:`without_keyless_rows`)."""
    allowed = allowed_keys(mask, scores.shape[0], scores.shape[2])
    return without_keyless_rows(torch.softmax(apply_mask(scores, mask), -1), allowed)


def group_counts(groups: SyntaxGroups, allowed: torch.Tensor | None, fast: bool = False) -> list[torch.Tensor]:
    """Per partition, ``[B, Lq, M+1]`` bool: group g has an allowed key in row i (bucket 0 is never a group).
    ``fast``: over the scatter index, ``[B, Lq, M+1+TRASH_BUCKETS]`` (the trash buckets are never groups either)."""
    index = groups.scatter_index if fast else groups.partitions
    assert index is not None  # for the type checker: the fast path builds it first
    out = []
    for g, real in zip(index, groups.num_buckets):
        B, Lq, Lk = g.shape
        ones = torch.ones(1, 1, 1, dtype=torch.float32, device=g.device)
        src = allowed.float() if allowed is not None else ones.expand(B, Lq, Lk)
        n = real + TRASH_BUCKETS if fast else real
        ne = torch.zeros(B, Lq, n, dtype=torch.float32, device=g.device).scatter_add_(2, g, src) > 0
        ne[..., 0] = False
        ne[..., real:] = False
        out.append(ne)
    return out


def per_forward(cache: dict | None, name: Any, key: object, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per forward: the first layer's result is kept in the groups' ``cache[name]`` with ``key``
    (the host's mask, or what the result derives from: an entry is never taken for another key)."""
    if cache is None:
        return compute()
    hit = cache.get(name)
    if hit is None or hit[0] is not key:
        hit = cache[name] = (key, compute())
    return hit[1]


def cached_group_counts(
    groups: SyntaxGroups, mask: torch.Tensor | None, allowed: torch.Tensor | None, fast: bool = False
) -> list[torch.Tensor]:
    """:func:`group_counts` once per forward (:func:`per_forward`)."""
    return per_forward(groups.cache, fast, mask, lambda: group_counts(groups, allowed, fast))


def topical_weights(logits: torch.Tensor | None, cand: torch.Tensor, aggregation: str) -> torch.Tensor:
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


def full_weight(
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


def self_fallback(fallback: torch.Tensor, full_heads: torch.Tensor | None, H: int) -> torch.Tensor:
    """``[B, H, L, L]`` (broadcast) one-hot on the diagonal of fallback rows for ``empty_rows="self"``."""
    B, L = fallback.shape
    eye = torch.eye(L, dtype=torch.float32, device=fallback.device)
    rows = fallback.float().view(B, 1, L, 1)
    if full_heads is not None:
        rows = rows * (~full_heads).float().view(1, H, 1, 1)
    return rows * eye  # (B, 1|H, L, L)


def candidates(
    cands: list[torch.Tensor], allowed: torch.Tensor | None, opts: SyntaxAttentionOptions
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """All candidates ``[B, Lq, C]`` (partitions' groups, then the full candidate) and the full one ``[B, Lq]``."""
    if not opts.full_attention_candidate:
        return torch.cat(cands, -1), None
    B, Lq, _ = cands[0].shape
    full = allowed.any(-1) if allowed is not None else torch.ones(B, Lq, dtype=torch.bool, device=cands[0].device)
    return torch.cat(cands + [full.unsqueeze(-1)], -1), full


# --- Joint buckets: the partitions' groups of a pair combined into one id per row, built once per forward, so one
# [B, H, L, L] scatter or gather serves every partition ---


class JointIndex(NamedTuple):
    """The partitions' buckets combined: pair ``(i, k)`` goes to joint bucket ``buckets[b, i, k]`` of row ``i``
    (its tuple of buckets, one per partition, numbered per row), and joint bucket ``j`` of row ``i`` lies in
    bucket ``maps[p][b, i, j]`` of partition ``p``."""

    buckets: torch.Tensor  # (B, L, L) int64
    maps: tuple[torch.Tensor, ...]  # (B, L, J) int64 each
    size: int  # J: the largest number of joint buckets of a row


def joint_buckets(index: Sequence[torch.Tensor], sizes: Sequence[int], pad: int = 1) -> JointIndex:
    """:class:`JointIndex` of bucket ids ``index`` (``[B, L, L]`` each, ids below ``sizes``); ``J`` rounded up to a
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
    return JointIndex(joint, tuple(reversed(maps)), J)


def expand_heads(g: torch.Tensor, H: int) -> torch.Tensor:
    """Group ids ``[B, Lq, Lk]`` as a (stride-0) ``[B, H, Lq, Lk]`` index."""
    return g.unsqueeze(1).expand(g.shape[0], H, *g.shape[1:])


def topical_key_values(
    module: nn.Module, value: torch.Tensor, call: SyntaxCall, full_heads: torch.Tensor | None
) -> torch.Tensor | None:
    """Checks the groups against the layer's ``[B, L]`` and returns ``w = V_h[k] · u_h`` ``[B, H, L]`` (the LISA
    head takes no part), or ``None`` without topical attention."""
    B, H, L, d = value.shape
    assert call.groups is not None  # for the type checker: a syntax layer
    for g in call.groups.partitions:
        if g.shape != (B, L, L):
            raise InputError(
                f"syntax_groups has shape {tuple(g.shape)} but the layer sees [B, L, L] = "
                f"[{B}, {L}, {L}]; build the groups from the same padded batch"
            )
    if call.opts.aggregation != "topical" or call.topical is None:
        return None
    u = call.topical.folded(_layer(module, call)).view(H, d)  # (H, d)
    if full_heads is not None:
        u = u * (~full_heads).to(u.dtype).unsqueeze(-1)
    return torch.einsum("bhkd,hd->bhk", value.float(), u.float())  # (B, H, L)


def layer_gate(module: nn.Module, call: SyntaxCall) -> torch.Tensor | None:
    """The gate of a syntax layer ``[1, H | 1, 1, 1]``, or ``None`` without one."""
    return None if call.gate is None else call.gate.value(_layer(module, call))


def _layer(module: nn.Module, call: SyntaxCall) -> int:
    """The layer index of a syntax layer that needs one (its topical query, its gate)."""
    if call.layer is None:
        raise InputError(f"{type(module).__name__} has no layer index; set module.syntax_layer_idx")
    return call.layer


def added_head_context(module: nn.Module, lisa: LisaRecorder, value: torch.Tensor, dropout: float) -> torch.Tensor:
    """``[B, L, H, d]`` what the added LISA head adds to each head's context: ``m_h P_a V_h``."""
    H = value.shape[1]
    assert lisa.log_probs is not None and lisa.added is not None  # for the type checker: recorded in this forward
    p_a = lisa.log_probs.exp()  # (B, L, L)
    if lisa.rows_with_keys is not None:  # a row that may attend to no key attends to nothing
        p_a = p_a * lisa.rows_with_keys.unsqueeze(-1).to(p_a.dtype)
    p_a = F.dropout(p_a, p=dropout, training=module.training) if dropout > 0 else p_a
    extra = torch.matmul(p_a.unsqueeze(1).to(value.dtype), value) * lisa.added.mix.to(value.dtype).view(1, H, 1, 1)
    return extra.transpose(1, 2)  # (B, L, H, d)
