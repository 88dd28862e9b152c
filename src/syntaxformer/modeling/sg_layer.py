"""SG-Net's syntax-guided self-attention layer (TPAMI §3.2, Eq. 6-8) and the ways to aggregate its output with the
encoder's (§3.3; :class:`~syntaxformer.modeling.SGNetConfig` ``aggregation``). Attention runs through
:func:`torch.nn.functional.scaled_dot_product_attention`, never looping over examples or heads; the probabilities
are computed explicitly only when asked for (analysis).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN

from syntaxformer.errors import ConfigError
from syntaxformer.modeling.configuration import SGNetConfig, filled


def multi_head_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor,
    num_heads: int,
    dropout_p: float = 0.0,
    need_weights: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Scaled dot-product attention over ``num_heads`` heads with a bool mask.

    Args:
        q, k, v: ``[B, Lq, D]``, ``[B, Lk, D]``, ``[B, Lk, D]`` projected queries, keys and values (all heads
            concatenated, ``D = num_heads * head_dim``).
        mask: bool, broadcastable to ``[B, Lq, Lk]``; True = may attend. No row may be entirely False (NaN).
        dropout_p: dropout on the attention probabilities (pass 0 at evaluation).
        need_weights: also return the probabilities (computed explicitly; slower, for analysis).

    Returns:
        ``([B, Lq, D] context, [B, num_heads, Lq, Lk] probabilities or None)``.
    """
    B, Lq, D = q.shape
    Lk = k.shape[1]
    hd = D // num_heads
    q = q.view(B, Lq, num_heads, hd).transpose(1, 2)  # (B, nh, Lq, hd)
    k = k.view(B, Lk, num_heads, hd).transpose(1, 2)  # (B, nh, Lk, hd)
    v = v.view(B, Lk, num_heads, hd).transpose(1, 2)  # (B, nh, Lk, hd)
    m = mask.unsqueeze(1)  # (B, 1, Lq or 1, Lk): the same mask for every head
    if need_weights:
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd)  # (B, nh, Lq, Lk)
        probs = torch.softmax(scores.masked_fill(~m, float("-inf")), dim=-1)
        ctx = torch.matmul(F.dropout(probs, dropout_p, training=dropout_p > 0), v)  # (B, nh, Lq, hd)
    else:
        probs = None
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=dropout_p)  # (B, nh, Lq, hd)
    return ctx.transpose(1, 2).reshape(B, Lq, D), probs  # (B, Lq, nh * hd)


class ProjectedAttention(nn.Module):
    """Multi-head attention with its own ``H -> H`` projections and output dropout: the attention block of
    :class:`SyntaxGuidedLayer` and :class:`BiAttentionAggregation`.

    Raises:
        ConfigError: ``num_heads`` does not divide ``hidden_size``.
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float, attention_dropout: float):
        super().__init__()
        if hidden_size % num_heads:
            raise ConfigError(f"num_heads={num_heads} must divide hidden_size={hidden_size}")
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.attn_output = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)

    def attend(
        self, h: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(Dropout(MultiHead(Q=h, K=kv, V=kv; mask) W_O) [B, L, H], probabilities or None)``
        (:func:`multi_head_attention`; attention dropout in training only)."""
        p = self.attention_dropout if self.training else 0.0
        ctx, probs = multi_head_attention(
            self.query(h), self.key(kv), self.value(kv), mask, self.num_heads, p, need_weights
        )
        return self.dropout(self.attn_output(ctx)), probs


class SyntaxGuidedLayer(ProjectedAttention):
    """One post-LN self-attention + feed-forward layer with a restricted (e.g. SDOI) attention mask.

    ``A = LayerNorm(H + Dropout(MultiHead(H; mask) W_O))`` (Eq. 7-8, heads concatenated), then
    ``H' = LayerNorm(A + Dropout(W_2 act(W_1 A + b_1) + b_2))`` (§3.2; a BERT layer's structure:
    :meth:`copy_from_bert_layer`).

    Args:
        hidden_act: feed-forward activation (a ``transformers.activations.ACT2FN`` name).
        dropout, attention_dropout: dropout on the attention-output and feed-forward projections / on the attention
            probabilities.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        intermediate_size: int,
        hidden_act: str = "gelu",
        dropout: float = 0.1,
        attention_dropout: float = 0.1,
        layer_norm_eps: float = 1e-12,
    ):
        super().__init__(hidden_size, num_heads, dropout, attention_dropout)
        self.attn_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.intermediate = nn.Linear(hidden_size, intermediate_size)
        self.act = ACT2FN[hidden_act]
        self.output = nn.Linear(intermediate_size, hidden_size)
        self.output_norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    @classmethod
    def from_config(cls, config: SGNetConfig) -> SyntaxGuidedLayer:
        """The layer described by a :class:`SGNetConfig` (``sg_*`` options)."""
        return cls(
            config.hidden_size,
            filled(config.sg_num_heads),
            filled(config.sg_intermediate_size),
            filled(config.sg_hidden_act),
            filled(config.sg_dropout),
            filled(config.sg_attention_dropout),
            filled(config.sg_layer_norm_eps),
        )

    def forward(
        self, hidden_states: torch.Tensor, mask: torch.Tensor, output_attentions: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``([B, L, H] H', [B, num_heads, L, L] attention probabilities or None)`` for ``hidden_states`` H
        ``[B, L, H]`` and a bool ``mask`` broadcastable to ``[B, L, L]`` (True = may attend; no row all False)."""
        attended, probs = self.attend(hidden_states, hidden_states, mask, output_attentions)
        a = self.attn_norm(hidden_states + attended)  # (B, L, H)
        out = self.output_norm(a + self.dropout(self.output(self.act(self.intermediate(a)))))  # (B, L, H)
        return out, probs

    @torch.no_grad()
    def copy_from_bert_layer(self, layer: nn.Module) -> None:
        """Copy the weights of a layer with ``transformers``' ``BertLayer`` layout (BERT, RoBERTa, ELECTRA ...).

        Raises:
            ConfigError: the layer does not have that layout, or its shapes differ from this layer's.
        """
        pairs = {
            "query": "attention.self.query",
            "key": "attention.self.key",
            "value": "attention.self.value",
            "attn_output": "attention.output.dense",
            "attn_norm": "attention.output.LayerNorm",
            "intermediate": "intermediate.dense",
            "output": "output.dense",
            "output_norm": "output.LayerNorm",
        }
        for mine, theirs in pairs.items():
            try:
                src = layer.get_submodule(theirs)
            except AttributeError:
                raise ConfigError(
                    f"sg_init='copy_last' needs a BERT-like encoder layer with a submodule {theirs!r}; "
                    f"{type(layer).__name__} has none. Use sg_init='random' for this encoder"
                ) from None
            dst = getattr(self, mine)
            for name in ("weight", "bias"):
                s, d = getattr(src, name, None), getattr(dst, name)
                if s is None or s.shape != d.shape:
                    raise ConfigError(
                        f"sg_init='copy_last': {theirs}.{name} of {type(layer).__name__} has shape "
                        f"{None if s is None else tuple(s.shape)}, the syntax-guided layer's {mine}.{name} has "
                        f"{tuple(d.shape)}; set sg_intermediate_size to the encoder's intermediate_size"
                    )
                d.copy_(s)
        eps = getattr(layer.get_submodule("output.LayerNorm"), "eps", None)
        if eps is not None:
            self.attn_norm.eps = self.output_norm.eps = eps


# --- Aggregations: (H [B, L, H], H' [B, L, H], key_valid [B, L] bool) -> H̄ [B, L, H] ---


class DualAggregation(nn.Module):
    """Dual context aggregation (Eq. 9): ``H̄ = alpha * H + (1 - alpha) * H'`` (paper: alpha 0.5, fixed, §5.2);
    ``learned``: ``alpha = sigmoid(alpha_logit)``, initialised at ``logit(alpha)`` (clamped to +-10)."""

    def __init__(self, alpha: float = 0.5, learned: bool = False):
        super().__init__()
        self.init_alpha = float(alpha)
        self.alpha_logit = nn.Parameter(torch.tensor(_logit(alpha))) if learned else None

    @property
    def alpha(self) -> torch.Tensor | float:
        """The current weight of H (a 0-d tensor when learned)."""
        return self.init_alpha if self.alpha_logit is None else torch.sigmoid(self.alpha_logit)

    def initial_logit(self) -> float:
        """``logit(alpha)`` of the configured alpha: the learned parameter's initial value."""
        return _logit(self.init_alpha)

    def reset_parameters(self) -> None:
        """Set the learned logit back to ``logit(alpha)``."""
        if self.alpha_logit is not None:
            with torch.no_grad():
                self.alpha_logit.fill_(self.initial_logit())

    def forward(self, h: torch.Tensor, h_sg: torch.Tensor, key_valid: torch.Tensor | None = None) -> torch.Tensor:
        """``[B, L, H]`` x 2 -> ``[B, L, H]`` (``key_valid`` is unused)."""
        if self.alpha_logit is None:
            return self.init_alpha * h + (1.0 - self.init_alpha) * h_sg
        return torch.lerp(h_sg, h, torch.sigmoid(self.alpha_logit).to(h.dtype))  # h_sg + alpha * (h - h_sg)


class SyntaxOnlyAggregation(nn.Module):
    """``H̄ = H'`` (Table 6's "syntax-guided attention only" / "vanilla attention only")."""

    def forward(self, h: torch.Tensor, h_sg: torch.Tensor, key_valid: torch.Tensor | None = None) -> torch.Tensor:
        """``[B, L, H]`` x 2 -> ``[B, L, H]``."""
        return h_sg


class ConcatAggregation(nn.Module):
    """``H̄ = [H; H'] W^T + b`` (Table 6's "concatenation"), ``W``: ``[H, 2H]`` (plain parameters, untouched by the
    generic init of linears), initialised as the dual aggregation of weight ``alpha``: ``[alpha I, (1 - alpha) I]``,
    ``b = 0``."""

    def __init__(self, hidden_size: int, alpha: float = 0.5):
        super().__init__()
        self.init_alpha = float(alpha)
        self.weight = nn.Parameter(torch.empty(hidden_size, 2 * hidden_size))
        self.bias = nn.Parameter(torch.empty(hidden_size))
        self.reset_parameters()

    def identity_init(self) -> torch.Tensor:
        """``[alpha I, (1 - alpha) I]``: the weight that makes this aggregation equal to the dual one."""
        H = self.weight.shape[0]
        eye = torch.eye(H, dtype=self.weight.dtype, device=self.weight.device)
        return torch.cat([self.init_alpha * eye, (1.0 - self.init_alpha) * eye], dim=1)

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """``W = [alpha I, (1 - alpha) I]``, ``b = 0``."""
        if self.weight.device.type != "meta":
            self.weight.copy_(self.identity_init())
            self.bias.zero_()

    def forward(self, h: torch.Tensor, h_sg: torch.Tensor, key_valid: torch.Tensor | None = None) -> torch.Tensor:
        """``[B, L, H]`` x 2 -> ``[B, L, 2H]`` -> ``[B, L, H]``."""
        return F.linear(torch.cat([h, h_sg], dim=-1), self.weight, self.bias)


class BiAttentionAggregation(ProjectedAttention):
    """``H̄ = LayerNorm(H + Dropout(MultiHead(Q=H, K=H', V=H') W_O))`` (our reading of Table 6's "Bi-attention"):
    every token of H attends to every non-padding token of H'. Arguments as :class:`SyntaxGuidedLayer`'s."""

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.1,
        layer_norm_eps: float = 1e-12,
    ):
        super().__init__(hidden_size, num_heads, dropout, attention_dropout)
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)

    def forward(self, h: torch.Tensor, h_sg: torch.Tensor, key_valid: torch.Tensor | None = None) -> torch.Tensor:
        """``h``, ``h_sg``: ``[B, L, H]``; ``key_valid``: bool ``[B, L]`` (False = padding, never attended)."""
        B, L, _ = h.shape
        if key_valid is None:
            key_valid = torch.ones(B, L, dtype=torch.bool, device=h.device)
        attended, _ = self.attend(h, h_sg, key_valid.unsqueeze(1))  # (B, 1, L) mask: every row sees the same keys
        return self.norm(h + attended)


def build_aggregation(config: SGNetConfig) -> nn.Module:
    """The aggregation module named by ``config.aggregation``."""
    kind = config.aggregation
    if kind == "dual":
        return DualAggregation(config.alpha, learned=config.alpha_mode == "learned")
    if kind in ("syntax_only", "vanilla_layer"):
        return SyntaxOnlyAggregation()
    if kind == "concat":
        return ConcatAggregation(config.hidden_size, config.alpha)
    if kind == "biattention":
        return BiAttentionAggregation(
            config.hidden_size,
            filled(config.sg_num_heads),
            filled(config.sg_dropout),
            filled(config.sg_attention_dropout),
            filled(config.sg_layer_norm_eps),
        )
    raise ConfigError(
        f"unknown aggregation {kind!r}; expected one of dual, syntax_only, concat, vanilla_layer, biattention"
    )


def _logit(p: float, bound: float = 10.0) -> float:
    """``log(p / (1 - p))`` clamped to ``[-bound, bound]``."""
    return max(-bound, min(bound, math.log(p / (1.0 - p)))) if 0.0 < p < 1.0 else math.copysign(bound, p - 0.5)
