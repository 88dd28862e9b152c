"""The plain encoder under syntaxformer's task heads: the baseline system (``plain``), exactly the syntax systems'
task models without the syntax (``compare``'s ``baseline``).
"""

from __future__ import annotations

from transformers import PreTrainedModel

from syntaxformer.modeling.configuration import PlainEncoderConfig
from syntaxformer.modeling.heads import (
    MultipleChoiceHead,
    QuestionAnsweringHead,
    SequenceClassificationHead,
    TokenClassificationHead,
)
from syntaxformer.modeling.wrapped_encoder import EncoderBackbone, WrappedEncoderMixin


class PlainEncoderPreTrainedModel(WrappedEncoderMixin, PreTrainedModel):
    """Base of the plain-encoder models: config class, weight init (the heads'; the encoder initialises its own),
    loading from a pretrained encoder (:class:`~syntaxformer.modeling.wrapped_encoder.WrappedEncoderMixin`)."""

    config_class = PlainEncoderConfig
    base_model_prefix = "plain"

    def build_backbone(self, config: PlainEncoderConfig, encoder: PreTrainedModel | None) -> PlainEncoderModel:
        """The backbone of the task models: a :class:`PlainEncoderModel` around ``encoder``."""
        return PlainEncoderModel(config, encoder=encoder)


class PlainEncoderModel(EncoderBackbone, PlainEncoderPreTrainedModel):
    """The wrapped encoder, without a head (built as :class:`~syntaxformer.modeling.wrapped_encoder.EncoderBackbone`
    says); its ``forward`` returns the encoder's output, syntax batch keys accepted and ignored."""

    def __init__(self, config: PlainEncoderConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        self.encoder = self.wrap_encoder(config, encoder)
        self.post_init()


class PlainEncoderForSequenceClassification(SequenceClassificationHead, PlainEncoderPreTrainedModel):
    """The plain encoder with a sequence classification / regression head."""


class PlainEncoderForQuestionAnswering(QuestionAnsweringHead, PlainEncoderPreTrainedModel):
    """The plain encoder for span question answering (with the optional answer verifier)."""


class PlainEncoderForMultipleChoice(MultipleChoiceHead, PlainEncoderPreTrainedModel):
    """The plain encoder for multiple choice (inputs ``[B, C, L]``)."""


class PlainEncoderForTokenClassification(TokenClassificationHead, PlainEncoderPreTrainedModel):
    """The plain encoder with a per-token classifier."""
