"""Feature embeddings of the Syntax-Infused Transformer (POS, case, subword position; "Model" section, Fig. 1):
the feature vector ``f_m = f^P ⊕ f^c ⊕ f^s ∈ R^d`` of each subword (:class:`SyntaxFeatureEmbedding`; ``⊕`` a
sum, the paper's best with d = 20, or a concatenation) and the encoder input ``h'_m = [e_m; f_m] ∈ R^D``
(:class:`SyntaxInfusedEmbedding`; paper: 492 + 20 = 512).

Feature ids follow :mod:`syntaxformer.data.subword_features`: 0 = no word (special tokens, padding; a zero row),
1 = unknown value, 2.. = values; negative ids (the generic collator pads with -1) are read as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from syntaxformer.data.subword_features import FEATURES, feature_vocab_size
from syntaxformer.errors import ConfigError, InputError

COMBINE = ("sum", "concat")


def split_dim(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal positive sizes (the first ones one larger): 20, 3 -> [7, 7, 6]."""
    if parts < 1 or total < parts:
        raise ConfigError(f"cannot split a feature size of {total} over {parts} features (need >= 1 each)")
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


class SyntaxFeatureEmbedding(nn.Module):
    """``f_m`` ``[B, L, dim]`` from per-subword feature ids.

    Args:
        features: feature names among ``upos``, ``xpos``, ``case``, ``subword`` (order matters for ``concat``).
        combine: ``"sum"`` (each feature embedded in ``dim`` dims and summed) or ``"concat"`` (sizes from
            :func:`split_dim`).
        init_std: std of the normal initialisation (row 0, "no word", is zero).
    """

    def __init__(self, features: Sequence[str], dim: int = 20, combine: str = "sum", init_std: float = 0.02):
        super().__init__()
        features = tuple(features)
        if not features:
            raise ConfigError("SyntaxFeatureEmbedding needs at least one feature")
        bad = [f for f in features if f not in FEATURES]
        if bad or len(set(features)) != len(features):
            raise ConfigError(f"features must be distinct names among {FEATURES}, got {list(features)}")
        if combine not in COMBINE:
            raise ConfigError(f"combine must be one of {COMBINE}, got {combine!r}")
        self.features = features
        self.dim = int(dim)
        self.combine = combine
        sizes = [self.dim] * len(features) if combine == "sum" else split_dim(self.dim, len(features))
        self.embeddings = nn.ModuleDict(
            {f: nn.Embedding(feature_vocab_size(f), size, padding_idx=0) for f, size in zip(features, sizes)}
        )
        self.init_std = init_std
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Normal(0, ``init_std``) rows, row 0 zero."""
        for emb in self.embeddings.values():
            assert isinstance(emb, nn.Embedding)  # for the type checker: ModuleDict holds nn.Module
            emb.weight.normal_(0.0, self.init_std)
            emb.weight[0].zero_()

    def forward(self, feature_ids: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """``{f"{name}_ids": [B, L]}`` -> ``[B, L, d]``.

        Raises:
            InputError: a configured feature is missing from ``feature_ids``.
        """
        parts = []
        for name in self.features:
            ids = feature_ids.get(f"{name}_ids")
            if ids is None:
                raise InputError(
                    f"the model uses the syntax feature {name!r} but the batch has no '{name}_ids'; build the "
                    f"batch with the same features ({', '.join(self.features)})"
                )
            parts.append(self.embeddings[name](ids.clamp(min=0)))  # (B, L, d_f)
        if self.combine == "sum":
            return torch.stack(parts, dim=0).sum(dim=0)  # (B, L, d)
        return torch.cat(parts, dim=-1)  # (B, L, d)


class SyntaxInfusedEmbedding(nn.Module):
    """Encoder input ``[scale * E x_m ; scale * f_m]`` of size ``D`` (token part ``D - d``, feature part ``d``);
    with no features (the baseline) a plain ``scale * E x_m`` of size ``D``.

    Args:
        features, feature_dim, combine: as :class:`SyntaxFeatureEmbedding`'s (no features for the baseline).
        scale: multiplier of both parts (``sqrt(D)`` for Transformers that scale their embeddings).
        init_std: normal init std of the token embedding.
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        features: Sequence[str] = (),
        feature_dim: int = 20,
        combine: str = "sum",
        padding_idx: int | None = None,
        scale: float = 1.0,
        init_std: float = 0.02,
    ):
        super().__init__()
        features = tuple(features)
        d = int(feature_dim) if features else 0
        if features and not 0 < d < hidden_size:
            raise ConfigError(f"feature_dim must lie in (0, hidden_size={hidden_size}), got {feature_dim}")
        self.hidden_size = hidden_size
        self.token_dim = hidden_size - d
        self.scale = float(scale)
        self.padding_idx = padding_idx
        self.tokens = nn.Embedding(vocab_size, self.token_dim, padding_idx=padding_idx)
        self.features = SyntaxFeatureEmbedding(features, d, combine, init_std) if features else None
        self.init_std = init_std
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Normal(0, ``init_std``) token rows (pad row zero); feature tables as in :class:`SyntaxFeatureEmbedding`."""
        self.tokens.weight.normal_(0.0, self.init_std)
        if self.padding_idx is not None:
            self.tokens.weight[self.padding_idx].zero_()
        if self.features is not None:
            self.features.reset_parameters()

    def forward(self, input_ids: torch.Tensor, feature_ids: Mapping[str, torch.Tensor] | None = None) -> torch.Tensor:
        """``input_ids`` ``[B, L]`` (+ feature ids ``[B, L]`` each) -> ``[B, L, D]``."""
        e = self.tokens(input_ids) * self.scale  # (B, L, D - d)
        if self.features is None:
            return e
        # the feature vector gets the same scale as the token part: both are initialised with the same std and
        # trained at the same rate, so neither half of [e ; f] starts (or stays) an order of magnitude weaker
        return torch.cat([e, self.features(feature_ids or {}) * self.scale], dim=-1)  # (B, L, D)
