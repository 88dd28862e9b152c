"""The plain encoder under syntaxformer's task heads: the baseline system (``plain``).

``PlainEncoderModel`` runs any ``AutoModel`` encoder and hands its last hidden states to the heads of
:mod:`syntaxformer.modeling.heads`, so ``PlainEncoderFor{SequenceClassification, QuestionAnswering,
MultipleChoice, TokenClassification}`` are exactly the syntax systems' task models without the syntax: the
reference every system is compared with (``compare``'s ``baseline``).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from syntaxformer.modeling.configuration import (
    SYNTAX_INPUT_KEYS,
    PlainEncoderConfig,
    check_forward_inputs,
    syntax_forward_signature,
)
from syntaxformer.modeling.heads import (
    MultipleChoiceHead,
    QuestionAnsweringHead,
    SequenceClassificationHead,
    TokenClassificationHead,
)
from syntaxformer.modeling.wrapped_encoder import EncoderBackbone, WrappedEncoderMixin

__all__ = [
    "PlainEncoderForMultipleChoice",
    "PlainEncoderForQuestionAnswering",
    "PlainEncoderForSequenceClassification",
    "PlainEncoderForTokenClassification",
    "PlainEncoderModel",
    "PlainEncoderPreTrainedModel",
]


class PlainEncoderPreTrainedModel(WrappedEncoderMixin, PreTrainedModel):
    """Base of the plain-encoder models: config class, weight init (the heads'; the encoder initialises its own),
    loading from a pretrained encoder (:class:`~syntaxformer.modeling.wrapped_encoder.WrappedEncoderMixin`)."""

    config_class = PlainEncoderConfig
    base_model_prefix = "plain"

    def build_backbone(self, config: PlainEncoderConfig, encoder: PreTrainedModel | None) -> PlainEncoderModel:
        """The backbone of the task models: a :class:`PlainEncoderModel` around ``encoder``."""
        return PlainEncoderModel(config, encoder=encoder)


class PlainEncoderModel(EncoderBackbone, PlainEncoderPreTrainedModel):
    """The wrapped encoder, without a head; syntax batch keys are accepted and ignored.

    Args:
        config: the model's :class:`PlainEncoderConfig`.
        encoder: an already built encoder to wrap; ``None`` builds ``AutoModel.from_config(config.encoder)``. Its
            pooler, if any, is removed (the heads own their poolers).
    """

    #: Every syntax batch key is accepted (and ignored), so a whole collated batch can be passed.
    syntax_keywords: tuple[str, ...] = SYNTAX_INPUT_KEYS

    def __init__(self, config: PlainEncoderConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        self.encoder = self.wrap_encoder(config, encoder)
        self.post_init()

    @syntax_forward_signature
    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **other_syntax: Any,
    ) -> BaseModelOutput | tuple[torch.Tensor, ...]:
        """Encode a batch: the encoder's output (``last_hidden_state`` ``[B, L, H]``, per-layer states and
        attentions when asked). Syntax batch keys are ignored; any other keyword raises an ``InputError``."""
        check_forward_inputs(self, other_syntax, self.syntax_keywords)
        return_dict = self.config.return_dict if return_dict is None else return_dict
        enc = self.encode(
            input_ids,
            attention_mask,
            token_type_ids,
            position_ids,
            inputs_embeds,
            output_attentions,
            output_hidden_states,
        )
        out = BaseModelOutput(
            last_hidden_state=enc.last_hidden_state,
            hidden_states=getattr(enc, "hidden_states", None),
            attentions=getattr(enc, "attentions", None),
        )
        return out if return_dict else out.to_tuple()


class PlainEncoderForSequenceClassification(SequenceClassificationHead, PlainEncoderPreTrainedModel):
    """The plain encoder with a sequence classification / regression head."""


class PlainEncoderForQuestionAnswering(QuestionAnsweringHead, PlainEncoderPreTrainedModel):
    """The plain encoder for span question answering (with the optional answer verifier)."""


class PlainEncoderForMultipleChoice(MultipleChoiceHead, PlainEncoderPreTrainedModel):
    """The plain encoder for multiple choice (inputs ``[B, C, L]``)."""


class PlainEncoderForTokenClassification(TokenClassificationHead, PlainEncoderPreTrainedModel):
    """The plain encoder with a per-token classifier."""
