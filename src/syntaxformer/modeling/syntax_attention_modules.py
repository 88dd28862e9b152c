"""The learned per-layer parts of the ``"syntax"`` attention: the task queries of topical attention
(:class:`TopicalAttention`), the zero-initialised gate towards the sub-networks (:class:`SyntaxGate`,
:func:`gate_probs`) and LISA as an added head (:class:`AddedLisaHead`).

The models own them and pass them to the attention function as ``syntax_topical=``, ``syntax_gate=`` and (through
:class:`~syntaxformer.modeling.syntax_attention_recorders.LisaRecorder`) ``syntax_lisa=``; see
:mod:`syntaxformer.modeling.syntax_attention` for what each does to the layer. Every name here is re-exported there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from syntaxformer.errors import ConfigError, InputError


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
        self.key_weight: nn.Parameter | None
        self.value_weight: nn.Parameter | None
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
        key_weight, value_weight = self.key_weight, self.value_weight
        if key_weight is None or value_weight is None or not self._sites:  # shared projections, or none bound
            return
        for layer, (key, _) in enumerate(self._sites):
            key_weight[layer].copy_(key.weight)
        value_weight.copy_(
            torch.eye(value_weight.shape[-1], dtype=value_weight.dtype, device=value_weight.device).expand_as(
                value_weight
            )
        )

    def site(self, layer: int) -> tuple[nn.Linear, nn.Linear]:
        """The ``(key projection, output projection)`` bound for ``layer``."""
        if not self._sites:
            # internal invariant: the models bind every layer when they are built, before any forward
            raise RuntimeError("TopicalAttention.bind(...) must attach the layers' key and output projections first")
        return self._sites[layer]

    def key_matrix(self, layer: int) -> torch.Tensor:
        """The key projection's weight ``[dim, hidden]`` used by the scores of ``layer`` (own or the layer's)."""
        return self.key_weight[layer] if self.key_weight is not None else self.site(layer)[0].weight

    def folded(self, layer: int) -> torch.Tensor:
        """``u_l`` ``[dim]`` such that the score of a sub-network output ``o`` is ``o · u_l``."""
        _, out = self.site(layer)
        return (self.query[layer] @ self.key_matrix(layer)) @ out.weight * self.scale  # (dim,)

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
