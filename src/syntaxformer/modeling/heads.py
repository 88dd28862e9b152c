"""Pieces shared by the task heads of every syntax model: pooling, pooler initialisation, the HF-style loss."""

from __future__ import annotations

import torch
from torch import nn


class FirstTokenPooler(nn.Module):
    """First-token pooler: ``tanh(W h_0 + b)`` (BERT's pooler; SG-Net §3.4.2 feeds h̄_0 to the classifier).

    Args:
        hidden_size: H.
    """

    def __init__(self, hidden_size: int):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """``[B, L, H]`` -> ``[B, H]``."""
        return self.activation(self.dense(hidden_states[:, 0]))

    @torch.no_grad()
    def copy_from(self, pooler: nn.Module | None) -> None:
        """Initialise from a BERT-style encoder pooler (``dense`` + tanh) when it has one of the same shape."""
        dense = getattr(pooler, "dense", None)
        if isinstance(dense, nn.Linear) and dense.weight.shape == self.dense.weight.shape:
            self.dense.weight.copy_(dense.weight)
            self.dense.bias.copy_(dense.bias)


def mean_pool(hidden_states: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Mean of ``hidden_states`` ``[B, L, H]`` over the positions where ``keep`` ``[B, L]`` is True -> ``[B, H]``.

    A row with nothing to keep gives a zero vector.
    """
    w = keep.to(hidden_states.dtype).unsqueeze(-1)  # (B, L, 1)
    return (hidden_states * w).sum(1) / w.sum(1).clamp(min=1.0)


def sequence_classification_loss(logits: torch.Tensor, labels: torch.Tensor, num_labels: int,
                                 problem_type: str | None = None) -> torch.Tensor:
    """Hugging Face's sequence-classification loss for ``logits`` ``[B, num_labels]``.

    ``problem_type`` if set; else regression (MSE) when ``num_labels == 1``, single-label classification
    (cross-entropy) for integer labels, multi-label (BCE with logits) otherwise.
    """
    labels = labels.to(logits.device)
    if problem_type is None:
        if num_labels == 1:
            problem_type = "regression"
        elif labels.dtype in (torch.long, torch.int, torch.int16, torch.int8, torch.uint8):
            problem_type = "single_label_classification"
        else:
            problem_type = "multi_label_classification"
    if problem_type == "regression":
        if num_labels == 1:
            return nn.functional.mse_loss(logits.squeeze(-1), labels.squeeze(-1).to(logits.dtype))
        return nn.functional.mse_loss(logits, labels.to(logits.dtype))
    if problem_type == "single_label_classification":
        return nn.functional.cross_entropy(logits.view(-1, num_labels), labels.view(-1).long())
    return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
