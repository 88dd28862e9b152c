"""Typed outputs of the syntax models (``transformers.utils.ModelOutput`` dataclasses).

One output class per backbone (:class:`SGNetModelOutput`, :class:`SyntaxBertModelOutput`) and one per task head,
shared by every system (:class:`SequenceClassifierOutput`, :class:`QuestionAnsweringOutput`,
:class:`MultipleChoiceOutput`, :class:`TokenClassifierOutput`); a head output's system-specific fields
(``sg_attentions`` for SG-Net, ``lisa_loss`` for Syntax-BERT) stay ``None`` for the other systems.
:class:`ContextualStates` is what a backbone hands to the heads.

Like every ``ModelOutput``, the outputs can be indexed by name or position (fields left at ``None`` are skipped) and
turned into a tuple with ``.to_tuple()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from transformers.utils import ModelOutput


@dataclass
class ContextualStates:
    """What a backbone gives its task heads (:meth:`SGNetModel.contextual_states`,
    :meth:`SyntaxBertModel.contextual_states`).

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


@dataclass
class SequenceClassifierOutput(ModelOutput):
    """Output of the ``...ForSequenceClassification`` models.

    Attributes:
        loss: 0-d loss, only when ``labels`` were given (cross-entropy, MSE or BCE-with-logits by problem type,
            plus the backbone's auxiliary loss, e.g. Syntax-BERT's weighted LISA loss).
        logits: ``[B, num_labels]`` scores before softmax / sigmoid (``[B, 1]`` for regression).
        lisa_loss: Syntax-BERT: 0-d LISA cross-entropy (with ``lisa_layer`` and ``dep_parent``), also without
            labels; ``None`` otherwise.
        hidden_states: the encoder's per-layer hidden states, when ``output_hidden_states=True``.
        attentions: the encoder's per-layer attention probabilities, when ``output_attentions=True``.
        sg_attentions: SG-Net: ``[B, sg_num_heads, L, L]`` syntax-guided attention probabilities, when
            ``output_attentions=True``; ``None`` otherwise.
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    lisa_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


@dataclass
class QuestionAnsweringOutput(ModelOutput):
    """Output of the ``...ForQuestionAnswering`` models (span head and optional answer verifier).

    Attributes:
        loss: 0-d total loss (when start/end positions are given):
            ``span_loss_weight * span_loss + verifier_loss_weight * verifier_loss`` plus the backbone's auxiliary
            loss.
        start_logits, end_logits: ``[B, L]``.
        verifier_logits: ``[B, 2]`` (answerable, unanswerable) when ``config.qa_verifier``, else ``None``.
        span_loss, verifier_loss: the two task parts of ``loss`` (unweighted; ``None`` when absent).
        lisa_loss, hidden_states, attentions, sg_attentions: as in :class:`SequenceClassifierOutput`.
    """

    loss: torch.Tensor | None = None
    start_logits: torch.Tensor | None = None
    end_logits: torch.Tensor | None = None
    verifier_logits: torch.Tensor | None = None
    span_loss: torch.Tensor | None = None
    verifier_loss: torch.Tensor | None = None
    lisa_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


@dataclass
class MultipleChoiceOutput(ModelOutput):
    """Output of the ``...ForMultipleChoice`` models.

    Attributes:
        loss: 0-d cross-entropy over the options (when ``labels`` are given), plus the backbone's auxiliary loss.
        logits: ``[B, C]`` one score per option (softmax over ``C`` gives the option probabilities).
        lisa_loss, hidden_states, attentions, sg_attentions: as in :class:`SequenceClassifierOutput`, for the
            ``B * C`` flattened sequences.
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    lisa_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


@dataclass
class TokenClassifierOutput(ModelOutput):
    """Output of the ``...ForTokenClassification`` models.

    Attributes:
        loss: 0-d cross-entropy over the labelled tokens (labels ``-100`` ignored), when ``labels`` are given,
            plus the backbone's auxiliary loss.
        logits: ``[B, L, num_labels]``.
        lisa_loss, hidden_states, attentions, sg_attentions: as in :class:`SequenceClassifierOutput`.
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    lisa_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None
