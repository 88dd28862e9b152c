"""Typed outputs of the syntax models (``transformers.utils.ModelOutput`` dataclasses).

One output class per backbone (:class:`SGNetModelOutput`, :class:`SyntaxBertModelOutput`) and one per task head,
shared by every system (:class:`SequenceClassifierOutput`, :class:`QuestionAnsweringOutput`,
:class:`MultipleChoiceOutput`, :class:`TokenClassifierOutput`); a head output's system-specific fields
(``sg_attentions`` for SG-Net, ``lisa_loss`` for Syntax-BERT) stay ``None`` for the other systems. Every head
output ends with ``lisa_loss`` (0-d LISA cross-entropy, with ``lisa_layer`` and ``dep_parent``, also without
targets), ``hidden_states`` / ``attentions`` (the encoder's per-layer outputs, when asked for) and
``sg_attentions`` (``[B, sg_num_heads, L, L]`` syntax-guided attention probabilities, with
``output_attentions=True``).
:class:`ContextualStates` is what a backbone hands to the heads.

Like every ``ModelOutput``, the outputs can be indexed by name or position (fields left at ``None`` are skipped) and
turned into a tuple with ``.to_tuple()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import Any

import torch
from transformers.utils import ModelOutput


@dataclass
class ContextualStates:
    """What a backbone gives its task heads
    (:meth:`~syntaxformer.modeling.wrapped_encoder.EncoderBackbone.contextual_states`).

    Attributes:
        hidden: ``[B, L, H]`` the contextual states the heads read (SG-Net: H̄; Syntax-BERT: the last layer).
        hidden_states: the encoder's per-layer hidden states, when asked for.
        attentions: the encoder's per-layer attention probabilities, when asked for.
        extras: system-specific output fields copied into every head output (``{"sg_attentions": ...}``,
            ``{"lisa_loss": ...}``); each must be a field of the head outputs.
        auxiliary_loss: 0-d loss added to every head's loss when the head computes one (Syntax-BERT:
            ``lisa_loss_weight * lisa_loss``), or ``None``.
    """

    hidden: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    extras: dict[str, torch.Tensor | None] = field(default_factory=dict)
    auxiliary_loss: torch.Tensor | None = None


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

    last_hidden_state: torch.Tensor | None = None
    encoder_hidden_state: torch.Tensor | None = None
    syntax_hidden_state: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


@dataclass
class SyntaxBertModelOutput(ModelOutput):
    """Output of :class:`~syntaxformer.modeling.SyntaxBertModel`.

    Attributes:
        last_hidden_state: ``[B, L, H]`` the encoder's last hidden states.
        lisa_loss: 0-d LISA cross-entropy (only with ``lisa_layer`` set and ``dep_parent`` given).
        hidden_states: per-layer hidden states (``[B, L, H]`` each), when ``output_hidden_states=True``.
        attentions: per-layer effective attention (``[B, heads, L, L]`` each: ``Σ_g α_g A_g``, the full softmax
            in non-syntax layers), when ``output_attentions=True``.
        lisa_log_probs: ``[B, L, L]`` log attention of the LISA head (row = token, column = candidate parent).
    """

    last_hidden_state: torch.Tensor | None = None
    lisa_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    lisa_log_probs: torch.Tensor | None = None


def _head_output(name: str, doc: str, *fields: str) -> type[ModelOutput]:
    """A task head's output class: ``loss``, the head's ``fields`` (tensors), then the fields every head output has
    (module docstring)."""
    tensor, per_layer = torch.Tensor | None, tuple[torch.Tensor, ...] | None
    spec: list[tuple[str, Any, None]] = [(n, tensor, None) for n in ("loss", *fields, "lisa_loss")]
    spec += [("hidden_states", per_layer, None), ("attentions", per_layer, None), ("sg_attentions", tensor, None)]
    return make_dataclass(name, spec, bases=(ModelOutput,), namespace={"__doc__": doc, "__module__": __name__})


SequenceClassifierOutput = _head_output(
    "SequenceClassifierOutput",
    """Output of the ``...ForSequenceClassification`` models: ``loss`` (0-d, only with ``labels``: cross-entropy,
    MSE or BCE-with-logits by problem type, plus the backbone's auxiliary loss, e.g. Syntax-BERT's weighted LISA
    loss), ``logits`` ``[B, num_labels]`` (before softmax / sigmoid; ``[B, 1]`` for regression), then
    ``lisa_loss``, ``hidden_states``, ``attentions``, ``sg_attentions`` (as every head output).""",
    "logits",
)
QuestionAnsweringOutput = _head_output(
    "QuestionAnsweringOutput",
    """Output of the ``...ForQuestionAnswering`` models (span head and optional answer verifier): ``loss`` (0-d,
    with start/end positions: ``span_loss_weight * span_loss + verifier_loss_weight * verifier_loss`` plus the
    backbone's auxiliary loss), ``start_logits`` / ``end_logits`` ``[B, L]``, ``verifier_logits`` ``[B, 2]``
    (answerable, unanswerable; with ``config.qa_verifier``), ``span_loss`` / ``verifier_loss`` (the two task parts
    of ``loss``, unweighted), then ``lisa_loss``, ``hidden_states``, ``attentions``, ``sg_attentions`` (as every
    head output).""",
    "start_logits",
    "end_logits",
    "verifier_logits",
    "span_loss",
    "verifier_loss",
)
MultipleChoiceOutput = _head_output(
    "MultipleChoiceOutput",
    """Output of the ``...ForMultipleChoice`` models: ``loss`` (0-d cross-entropy over the options, with
    ``labels``, plus the backbone's auxiliary loss), ``logits`` ``[B, C]`` (one score per option), then
    ``lisa_loss``, ``hidden_states``, ``attentions``, ``sg_attentions`` (as every head output, for the ``B * C``
    flattened sequences).""",
    "logits",
)
TokenClassifierOutput = _head_output(
    "TokenClassifierOutput",
    """Output of the ``...ForTokenClassification`` models: ``loss`` (0-d cross-entropy over the labelled tokens,
    labels ``-100`` ignored, plus the backbone's auxiliary loss), ``logits`` ``[B, L, num_labels]``, then
    ``lisa_loss``, ``hidden_states``, ``attentions``, ``sg_attentions`` (as every head output).""",
    "logits",
)
