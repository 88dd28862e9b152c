"""Typed outputs of the syntax-aware models (``transformers.utils.ModelOutput`` dataclasses).

Like every ``ModelOutput``, they can be indexed by name or position (fields left at ``None`` are skipped) and
turned into a tuple with ``.to_tuple()``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers.utils import ModelOutput


@dataclass
class SGNetModelOutput(ModelOutput):
    """Output of :class:`~syntaxformer.modeling.SGNetModel`.

    Attributes:
        last_hidden_state: ``[B, L, H]`` H̄, the aggregated representation task heads read (Eq. 9 by default; H
            itself when ``use_sg_layer=False``).
        encoder_hidden_state: ``[B, L, H]`` H, the encoder's last hidden states.
        syntax_hidden_state: ``[B, L, H]`` H', the syntax-guided layer's output (``None`` when
            ``use_sg_layer=False``).
        hidden_states: the encoder's per-layer hidden states (each ``[B, L, H]``), when
            ``output_hidden_states=True``.
        attentions: the encoder's per-layer attention probabilities (each ``[B, heads, L, L]``), when
            ``output_attentions=True`` (and the encoder's attention implementation can return them).
        sg_attentions: ``[B, sg_num_heads, L, L]`` attention probabilities of the syntax-guided layer, when
            ``output_attentions=True``; zero wherever the SDOI mask forbids attention.
    """

    last_hidden_state: torch.FloatTensor | None = None
    encoder_hidden_state: torch.FloatTensor | None = None
    syntax_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None
    sg_attentions: torch.FloatTensor | None = None


@dataclass
class SGNetSequenceClassifierOutput(ModelOutput):
    """Output of :class:`~syntaxformer.modeling.SGNetForSequenceClassification` (``SequenceClassifierOutput`` plus
    the syntax-guided attentions).

    Attributes:
        loss: 0-d loss, only when ``labels`` were given (cross-entropy, MSE or BCE-with-logits by problem type).
        logits: ``[B, num_labels]`` scores before softmax / sigmoid (``[B, 1]`` for regression).
        hidden_states: the encoder's per-layer hidden states, when ``output_hidden_states=True``.
        attentions: the encoder's per-layer attention probabilities, when ``output_attentions=True``.
        sg_attentions: ``[B, sg_num_heads, L, L]`` syntax-guided attention probabilities, when
            ``output_attentions=True``.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None
    sg_attentions: torch.FloatTensor | None = None
