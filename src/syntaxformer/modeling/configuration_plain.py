"""Configuration of the plain encoder (:class:`PlainEncoderConfig`): the baseline every syntax system is compared
with, a pretrained encoder under the same task heads and pooling, with no syntax at all."""

from typing import Any

from huggingface_hub.dataclasses import strict
from transformers import PretrainedConfig

from syntaxformer.modeling.configuration_common import Pooling, SyntaxModelConfig, first_set

__all__ = ["PlainEncoderConfig"]


@strict
class PlainEncoderConfig(SyntaxModelConfig):
    r"""Configuration of the plain-encoder baseline (:class:`~syntaxformer.modeling.PlainEncoderModel` and its task
    heads): the wrapped encoder and the task-head options shared by every system.

    It is what SG-Net is without its syntax-guided layer (configs saved before this system existed made the baseline
    as ``SGNetConfig(use_sg_layer=False)``, and still load as such): same heads, same pooling, no new parameters
    besides the head's, so a comparison with a syntax system differs only by the syntax.

    Args:
        encoder: config of the wrapped encoder (a ``PretrainedConfig`` or a dict with a ``model_type`` key); default
            a ``BertConfig()``.
        pooling: sentence representation of the sequence-level heads; default ``"mean"`` (over non-special tokens,
            as SG-Net's default, so that the baseline of an SG-Net comparison pools the same way; it reads
            ``syntax_tree`` only to find the special tokens). ``"cls"``: the first token through a dense+tanh pooler.
        classifier_dropout: default the encoder's ``classifier_dropout``, else its hidden dropout.
        initializer_range, num_labels, problem_type, qa_verifier, verifier_loss_weight, span_loss_weight,
            verifier_beta1, verifier_beta2: see :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`.

    Example::

        >>> from transformers import BertConfig
        >>> config = PlainEncoderConfig(encoder=BertConfig(hidden_size=32, num_hidden_layers=2,
        ...                             num_attention_heads=4, intermediate_size=37), num_labels=2)
        >>> config.syntax_inputs, PlainEncoderConfig(encoder=config.encoder, pooling="cls").syntax_inputs
        (('syntax_tree',), ())
    """

    model_type = "plain_encoder"
    #: As SG-Net: the encoder runs with the attention implementation it was loaded with.
    keeps_encoder_attn_implementation = True

    encoder: PretrainedConfig | dict | None = None
    pooling: Pooling = "mean"

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        hidden_dropout = float(first_set(self._encoder, ("hidden_dropout_prob", "hidden_dropout", "dropout"), 0.1))
        self.resolve_head_defaults(dropout_fallback=hidden_dropout)

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """``("syntax_tree",)`` for mean pooling (it marks the special tokens), else ``()``: nothing is parsed."""
        return self.mean_pooling_inputs()
