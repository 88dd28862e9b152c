"""Task heads, written once and composed over any system's backbone.

A backbone gives the heads its :class:`ContextualStates`; a system base class says which backbone it builds
(``build_backbone``) and under which attribute (``base_model_prefix``), so a task model is one line::

    class SGNetForQuestionAnswering(QuestionAnsweringHead, SGNetPreTrainedModel): ...

The heads are mixins that build their layers on the model itself (Hugging Face parameter names: ``classifier.*``,
``pooler.*``, ``qa_outputs.*``). Every head output ends with ``lisa_loss`` (Syntax-BERT), ``hidden_states``,
``attentions`` and ``sg_attentions`` (SG-Net); another system's fields stay ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from transformers.utils import ModelOutput

from syntaxformer.errors import ConfigError, InputError
from syntaxformer.modeling.configuration import TOLERATED_KEYWORDS, check_forward_inputs, syntax_forward_signature
from syntaxformer.modeling.raw_text import raw_text_hint

#: The encoder inputs of every ``forward`` (:meth:`TaskHead.run_backbone`, ``EncoderBackbone.encode``).
ENCODER_KEYS: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids", "position_ids", "inputs_embeds")


@dataclass
class ContextualStates:
    """What a backbone gives its task heads (``EncoderBackbone.contextual_states``).

    Attributes:
        hidden: ``[B, L, H]`` the contextual states the heads read (SG-Net: H̄; Syntax-BERT: the last layer).
        hidden_states, attentions: the encoder's per-layer hidden states / attention probabilities, when asked for.
        extras: system-specific output fields copied into every head output (each a field of the head outputs).
        auxiliary_loss: 0-d loss added to every head's loss when the head computes one, or ``None``.
    """

    hidden: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    extras: dict[str, torch.Tensor | None] = field(default_factory=dict)
    auxiliary_loss: torch.Tensor | None = None


def _head_output(name: str, doc: str, *fields: str) -> type[ModelOutput]:
    """A task head's output class: ``loss``, the head's ``fields``, then the fields every head output has."""
    tensor, per_layer = torch.Tensor | None, tuple[torch.Tensor, ...] | None
    spec: list[tuple[str, Any, None]] = [(n, tensor, None) for n in ("loss", *fields, "lisa_loss")]
    spec += [("hidden_states", per_layer, None), ("attentions", per_layer, None), ("sg_attentions", tensor, None)]
    return make_dataclass(name, spec, bases=(ModelOutput,), namespace={"__doc__": doc, "__module__": __name__})


SequenceClassifierOutput = _head_output(
    "SequenceClassifierOutput",
    """Output of the ``...ForSequenceClassification`` models: ``loss`` (0-d, with ``labels``), ``logits``
    ``[B, num_labels]``, then the fields every head output has.""",
    "logits",
)
QuestionAnsweringOutput = _head_output(
    "QuestionAnsweringOutput",
    """Output of the ``...ForQuestionAnswering`` models: ``loss`` (0-d, with start/end positions:
    ``span_loss_weight * span_loss + verifier_loss_weight * verifier_loss``), ``start_logits`` / ``end_logits``
    ``[B, L]``, ``verifier_logits`` ``[B, 2]`` (answerable, unanswerable; with ``config.qa_verifier``), ``span_loss``
    / ``verifier_loss`` (unweighted), then the fields every head output has.""",
    "start_logits",
    "end_logits",
    "verifier_logits",
    "span_loss",
    "verifier_loss",
)
MultipleChoiceOutput = _head_output(
    "MultipleChoiceOutput",
    """Output of the ``...ForMultipleChoice`` models: ``loss`` (0-d, with ``labels``), ``logits`` ``[B, C]``, then
    the fields every head output has (for the ``B * C`` flattened sequences).""",
    "logits",
)
TokenClassifierOutput = _head_output(
    "TokenClassifierOutput",
    """Output of the ``...ForTokenClassification`` models: ``loss`` (0-d, with ``labels``), ``logits``
    ``[B, L, num_labels]``, then the fields every head output has.""",
    "logits",
)


class FirstTokenPooler(nn.Module):
    """First-token pooler: ``tanh(W h_0 + b)`` (BERT's pooler; SG-Net §3.4.2 feeds h̄_0 to the classifier)."""

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
    """Mean of ``hidden_states`` ``[B, L, H]`` over the positions where ``keep`` ``[B, L]`` is True -> ``[B, H]``
    (a zero vector for a row with nothing to keep)."""
    w = keep.to(hidden_states.dtype).unsqueeze(-1)  # (B, L, 1)
    return (hidden_states * w).sum(1) / w.sum(1).clamp(min=1.0)


def sequence_classification_loss(
    logits: torch.Tensor, labels: torch.Tensor, num_labels: int, problem_type: str | None = None
) -> torch.Tensor:
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


def span_loss(
    start_logits: torch.Tensor, end_logits: torch.Tensor, start_positions: torch.Tensor, end_positions: torch.Tensor
) -> torch.Tensor:
    """Mean of the start and end cross-entropies; positions outside ``[0, L)`` are ignored (BERT's clamp)."""
    L = start_logits.size(1)
    sp = start_positions.to(start_logits.device).view(-1).clamp(0, L)
    ep = end_positions.to(end_logits.device).view(-1).clamp(0, L)
    ce = nn.CrossEntropyLoss(ignore_index=L)
    return (ce(start_logits.float(), sp) + ce(end_logits.float(), ep)) / 2


def pool(
    pooler: FirstTokenPooler | None,
    hidden: torch.Tensor,
    syntax_tree: torch.Tensor | None,
    attention_mask: torch.Tensor | None,
) -> torch.Tensor:
    """``[B, L, H]`` -> ``[B, H]``: ``pooler`` (``pooling="cls"``), or without one the mean over the words
    (``syntax_tree >= 0``, never a padding position of ``attention_mask``), else over ``attention_mask``."""
    if pooler is not None:
        return pooler(hidden)  # (B, H)
    keep = torch.ones(hidden.shape[:2], dtype=torch.bool, device=hidden.device)  # (B, L)
    if syntax_tree is not None:
        keep = syntax_tree.to(hidden.device) >= 0
    if attention_mask is not None:
        keep = keep & (attention_mask.to(hidden.device) > 0)
    return mean_pool(hidden, keep)  # (B, H)


def flatten_choices(x: Any) -> Any:
    """``[B, C, L, ...]`` -> ``[B * C, L, ...]`` for a tensor; anything else (``None``, precomputed groups) as is."""
    return x.reshape(-1, *x.shape[2:]) if isinstance(x, torch.Tensor) else x


class TaskHead:
    """Base of the head mixins: builds the backbone under ``base_model_prefix``, runs it, makes the output. A task
    model is built as ``Model(config, encoder=None)``: ``encoder`` an already built (e.g. pretrained) encoder to
    wrap, ``None`` builds one from ``config.encoder``."""

    base_model_prefix: str
    config: Any
    #: The head's output class (one of the outputs above).
    output_class: type

    if TYPE_CHECKING:  # what the class a head is mixed with (a system's PreTrainedModel subclass) provides

        def __init__(self, config: Any) -> None: ...

        def post_init(self) -> None: ...

        def build_backbone(self, config: Any, encoder: Any) -> Any: ...

    #: The heads return per-batch mean losses: ``transformers.Trainer`` must not pass ``num_items_in_batch`` and
    #: divides the loss by the gradient accumulation steps itself.
    accepts_loss_kwargs = False

    def attach_backbone(self, config: Any, encoder: nn.Module | None) -> nn.Module | None:
        """Build the backbone around ``encoder`` (``None``: a new encoder from ``config.encoder``), store it as
        ``self.<base_model_prefix>`` and return the encoder's pooler (to initialise a head pooler from), if any."""
        encoder_pooler = getattr(encoder, "pooler", None) if encoder is not None else None
        setattr(self, self.base_model_prefix, self.build_backbone(config, encoder))
        return encoder_pooler

    def run_backbone(
        self,
        encoder_inputs: dict[str, Any],
        syntax_inputs: dict[str, Any],
        output_attentions: bool | None,
        output_hidden_states: bool | None,
    ) -> ContextualStates:
        """The backbone's :class:`ContextualStates` for a batch (``encoder_inputs``: :data:`ENCODER_KEYS`).

        Raises:
            InputError: a key that is not a syntax input of the backbone, or one it needs is missing (with none at
                all, the message names the pipeline for raw text).
        """
        backbone = getattr(self, self.base_model_prefix)
        check_forward_inputs(self, syntax_inputs, backbone.syntax_keywords)
        syntax_inputs = {k: v for k, v in syntax_inputs.items() if k not in TOLERATED_KEYWORDS}
        try:
            return backbone.contextual_states(
                output_attentions=output_attentions,
                output_hidden_states=output_hidden_states,
                **encoder_inputs,
                **syntax_inputs,
            )
        except InputError as e:  # token ids alone (a pipeline that never parses): say which pipeline parses
            if any(v is not None for v in syntax_inputs.values()):
                raise
            raise InputError(f"{e}. {raw_text_hint(type(self).__name__)}") from e

    def head_output(self, return_dict: bool | None, states: ContextualStates, loss: Any, **fields: Any) -> Any:
        """``output_class`` with ``loss`` plus the backbone's auxiliary loss, the head's ``fields`` and the
        backbone's per-layer outputs and extras (a tuple when ``return_dict``, or the config's default, is false)."""
        if loss is not None and states.auxiliary_loss is not None:  # e.g. Syntax-BERT's weighted LISA loss
            loss = loss + states.auxiliary_loss
        result = self.output_class(
            loss=loss, hidden_states=states.hidden_states, attentions=states.attentions, **fields, **states.extras
        )
        return result if (self.config.return_dict if return_dict is None else return_dict) else result.to_tuple()


class LabelledHead(TaskHead):
    """A head with one target, ``labels``: its ``forward`` is this one; the head gives :meth:`logits`, :meth:`loss`
    and ``output_class``."""

    #: Inputs ``[B, C, L, ...]``, one sequence per option: flattened to ``B * C`` sequences, logits ``[B, C]``.
    one_sequence_per_choice = False

    def logits(
        self, hidden: torch.Tensor, syntax_tree: torch.Tensor | None, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """The head's scores from the backbone's states ``hidden`` ``[B, L, H]``."""
        raise NotImplementedError

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The head's loss (0-d) for ``labels``."""
        raise NotImplementedError

    @syntax_forward_signature
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **syntax_inputs: Any,
    ) -> Any:
        """The head's ``logits`` for a batch and, when ``labels`` (the head's targets) are given, its ``loss``.

        Args: as in :meth:`~syntaxformer.modeling.wrapped_encoder.EncoderBackbone.forward` (multiple choice: every
        tensor ``[B, C, ...]``), plus ``labels``.

        Raises:
            InputError: multiple choice inputs that are not ``[B, C, L]``; see :meth:`run_backbone`.
        """
        inputs = dict(zip(ENCODER_KEYS, (input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds)))
        choices = None
        if self.one_sequence_per_choice:
            ref = input_ids if input_ids is not None else inputs_embeds
            if ref is None or ref.dim() < 3:
                raise InputError(
                    f"{type(self).__name__} expects input_ids [B, C, L] (or inputs_embeds [B, C, L, H]): "
                    "one sequence per option"
                )
            choices = ref.shape[1]
            inputs = {k: flatten_choices(v) for k, v in inputs.items()}
            syntax_inputs = {k: flatten_choices(v) for k, v in syntax_inputs.items()}
        states = self.run_backbone(inputs, syntax_inputs, output_attentions, output_hidden_states)
        logits = self.logits(states.hidden, syntax_inputs.get("syntax_tree"), inputs["attention_mask"])
        logits = logits if choices is None else logits.view(-1, choices)  # (B, C) for multiple choice
        loss = None if labels is None else self.loss(logits, labels)
        return self.head_output(return_dict, states, loss, logits=logits)


class PooledScorer(LabelledHead):
    """Shared layers of the sequence-level heads: pooler (``"cls"``) or mean, dropout, ``Linear(H, n)``."""

    pooler: FirstTokenPooler | None

    def build_pooled_scorer(self, config: Any, encoder: nn.Module | None, num_outputs: int) -> None:
        """The rest of the head's ``__init__``: the backbone, ``pooler`` (``pooling="cls"``; else ``None``),
        ``dropout`` and ``classifier`` (``H -> num_outputs``), ``post_init``, the pooler copied from the encoder's."""
        encoder_pooler = self.attach_backbone(config, encoder)
        self.pooler = FirstTokenPooler(config.hidden_size) if config.pooling == "cls" else None
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.hidden_size, num_outputs)
        self.post_init()
        if self.pooler is not None:
            self.pooler.copy_from(encoder_pooler)

    def logits(
        self, hidden: torch.Tensor, syntax_tree: torch.Tensor | None, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """``W Dropout(pool(hidden)) + b``, ``[B, num_outputs]``."""
        return self.classifier(self.dropout(pool(self.pooler, hidden, syntax_tree, attention_mask)))


class SequenceClassificationHead(PooledScorer):
    """Sequence classification / regression (GLUE, SST, NLI; SG-Net §3.4.2): ``logits = W Dropout(pool(H)) + b``
    ``[B, num_labels]``; the loss by problem type (:func:`sequence_classification_loss`)."""

    output_class = SequenceClassifierOutput

    def __init__(self, config: Any, encoder: nn.Module | None = None):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.build_pooled_scorer(config, encoder, config.num_labels)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """:func:`sequence_classification_loss` with the config's ``problem_type``."""
        return sequence_classification_loss(logits, labels, self.num_labels, self.config.problem_type)


class QuestionAnsweringHead(TaskHead):
    """Span question answering (SQuAD 2.0, SG-Net §3.4.1) with the optional answer verifier (Eq. 13-14;
    ``docs/sgnet.md``, ``docs/reading_comprehension.md``).

    * Span head (Eq. 10-11): ``start_logits, end_logits = Linear(H, 2)`` at every position; the null answer is
      position 0 ([CLS]).
    * Answer verifier (``config.qa_verifier=True``): ``Linear(H, 2)`` of the dropped-out pooled sequence gives
      ``verifier_logits`` (logit_ans, logit_na), trained with cross-entropy on ``is_impossible``.
    * Eq. 14 is applied when decoding (:func:`syntaxformer.tasks.squad.postprocess_predictions`), with the weights
      of :meth:`no_answer_weights`.

    Raises:
        ConfigError: ``span_loss_weight=0`` without the verifier (nothing to train).
    """

    output_class = QuestionAnsweringOutput

    def __init__(self, config: Any, encoder: nn.Module | None = None):
        super().__init__(config)
        encoder_pooler = self.attach_backbone(config, encoder)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.use_verifier = bool(config.qa_verifier)
        self.verifier_pooler = None
        if self.use_verifier:
            self.verifier_pooler = FirstTokenPooler(config.hidden_size) if config.pooling == "cls" else None
            self.verifier_dropout = nn.Dropout(config.classifier_dropout)
            self.verifier = nn.Linear(config.hidden_size, 2)
        self.span_loss_weight = float(config.span_loss_weight)
        if self.span_loss_weight == 0 and not self.use_verifier:
            raise ConfigError("span_loss_weight=0 leaves nothing to train without the verifier (qa_verifier=True)")
        self.post_init()
        if self.verifier_pooler is not None:
            self.verifier_pooler.copy_from(encoder_pooler)

    def no_answer_weights(self) -> tuple[float, float]:
        """(β1, β2) of Eq. 14 from the config (default 1.0, 1.0)."""
        return float(self.config.verifier_beta1), float(self.config.verifier_beta2)

    @syntax_forward_signature
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        is_impossible: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **syntax_inputs: Any,
    ) -> Any:
        """Span logits (and verifier logits) for a batch; a loss when ``start_positions``/``end_positions`` are given.

        Args (the others as in :meth:`LabelledHead.forward`):
            start_positions, end_positions: ``[B]`` gold token positions (0 = [CLS] null answer).
            is_impossible: ``[B]`` 1 = no answer in this window (verifier target; default ``start_positions == 0``).
        """
        inputs = dict(zip(ENCODER_KEYS, (input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds)))
        states = self.run_backbone(inputs, syntax_inputs, output_attentions, output_hidden_states)
        hidden = states.hidden  # (B, L, H)
        logits = self.qa_outputs(hidden)  # (B, L, 2)
        start_logits, end_logits = logits[..., 0].contiguous(), logits[..., 1].contiguous()  # (B, L) each
        verifier_logits = None
        if self.use_verifier:
            pooled = pool(self.verifier_pooler, hidden, syntax_inputs.get("syntax_tree"), attention_mask)  # (B, H)
            verifier_logits = self.verifier(self.verifier_dropout(pooled))  # (B, 2)

        loss = s_loss = v_loss = None
        if start_positions is not None and end_positions is not None:
            s_loss = span_loss(start_logits, end_logits, start_positions, end_positions)
            loss = s_loss if self.span_loss_weight == 1.0 else self.span_loss_weight * s_loss
            if verifier_logits is not None:
                target = is_impossible if is_impossible is not None else (start_positions == 0)
                target = target.to(verifier_logits.device).view(-1).long()
                v_loss = nn.functional.cross_entropy(verifier_logits.float(), target)
                loss = loss + float(self.config.verifier_loss_weight) * v_loss
        return self.head_output(
            return_dict,
            states,
            loss,
            start_logits=start_logits,
            end_logits=end_logits,
            verifier_logits=verifier_logits,
            span_loss=s_loss,
            verifier_loss=v_loss,
        )


class MultipleChoiceHead(PooledScorer):
    """One score per option (RACE, SG-Net §3.4.1, Eq. 15): each (passage || question, option) pair is one sequence
    (inputs ``[B, C, L]``), scored by ``Linear(H, 1)`` of its dropped-out pooled representation; logits ``[B, C]``,
    ``labels`` ``[B]`` the right option."""

    output_class = MultipleChoiceOutput
    one_sequence_per_choice = True

    def __init__(self, config: Any, encoder: nn.Module | None = None):
        super().__init__(config)
        self.build_pooled_scorer(config, encoder, 1)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the option scores ``[B, C]`` with the right option ``[B]``."""
        return nn.functional.cross_entropy(logits.float(), labels.to(logits.device).view(-1).long())


class TokenClassificationHead(LabelledHead):
    """Token classification (tagging): ``logits = W Dropout(H) + b`` at every position, ``[B, L, num_labels]``;
    ``labels`` ``[B, L]``, ``-100`` where no loss is wanted (special tokens, padding, non-first subwords)."""

    output_class = TokenClassifierOutput

    def __init__(self, config: Any, encoder: nn.Module | None = None):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.attach_backbone(config, encoder)
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def logits(
        self, hidden: torch.Tensor, syntax_tree: torch.Tensor | None, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        """``W Dropout(hidden) + b``, ``[B, L, num_labels]``."""
        return self.classifier(self.dropout(hidden))

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Cross-entropy over the positions whose label is not ``-100``."""
        labels = labels.to(logits.device).view(-1).long()
        return nn.functional.cross_entropy(logits.float().view(-1, self.num_labels), labels, ignore_index=-100)
