"""What every system built around a pretrained encoder shares: loading that encoder, wrapping it
(:class:`WrappedEncoderMixin`, before ``PreTrainedModel`` in a system's base class), and its backbone's ``forward``
(:class:`EncoderBackbone`, before the base class of a system's backbone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

import torch
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import ModelOutput

from syntaxformer.modeling.configuration import SYNTAX_INPUT_KEYS, check_forward_inputs, syntax_forward_signature
from syntaxformer.modeling.heads import ENCODER_KEYS, ContextualStates

__all__ = ["EncoderBackbone", "WrappedEncoderMixin"]

_M = TypeVar("_M", bound="WrappedEncoderMixin")


class WrappedEncoderMixin:
    """Mixin of a system's ``PreTrainedModel`` base class whose backbone holds a pretrained encoder as ``encoder``
    (the class it is mixed with provides ``config_class`` and ``base_model_prefix``)."""

    #: The attention implementation the encoder is always loaded and built with, whatever the caller asks
    #: (Syntax-BERT: ``"syntax"``); ``None``: the caller's choice, else the encoder's default.
    encoder_attn_implementation: ClassVar[str | None] = None
    # The encoder's attention implementation is chosen by (and checked against) the encoder itself (SG-Net's
    # syntax-guided layer always uses torch's scaled_dot_product_attention).
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _supports_attention_backend = True
    #: Per-batch mean losses: ``transformers.Trainer`` must not pass ``num_items_in_batch``.
    accepts_loss_kwargs = False

    if TYPE_CHECKING:  # what the class this is mixed with (a PreTrainedModel subclass) provides
        config_class: Any
        config: Any

        def __init__(self, config: Any, encoder: PreTrainedModel | None = None) -> None: ...

        @property
        def base_model(self) -> nn.Module: ...

    @classmethod
    def from_encoder_pretrained(
        cls: type[_M], name_or_path: str, encoder_kwargs: dict[str, Any] | None = None, **config_overrides: Any
    ) -> _M:
        """Build the model around a pretrained encoder (its weights loaded, the new parts initialised), in evaluation
        mode as ``from_pretrained`` returns models.

        Args:
            name_or_path: a model name or folder ``AutoModel.from_pretrained`` can load.
            encoder_kwargs: extra keyword arguments for ``AutoModel.from_pretrained`` (``dtype``, ``revision`` ...;
                ``attn_implementation`` unless the system sets its own: :attr:`encoder_attn_implementation`).
            **config_overrides: options of the system's config (``num_labels=2``, ``pooling="cls"`` ...).
        """
        kwargs = dict(encoder_kwargs or {})
        if cls.encoder_attn_implementation is not None:
            kwargs["attn_implementation"] = cls.encoder_attn_implementation
        encoder = AutoModel.from_pretrained(name_or_path, **kwargs)
        config = cls.config_class(encoder=encoder.config, **config_overrides)
        # new layers in the encoder's dtype (transformers wraps `to` with functools.wraps, which mypy cannot bind)
        model = cls(config, encoder=encoder).to(dtype=encoder.dtype)  # type: ignore[attr-defined]
        model.eval()
        return cast(_M, model)

    def wrap_encoder(
        self, config: Any, encoder: PreTrainedModel | None, pooler: nn.Module | None = None
    ) -> PreTrainedModel:
        """The encoder a backbone wraps, for its ``__init__`` to store as ``self.encoder``.

        Args:
            encoder: an already built (e.g. pretrained) encoder, whose config object the config then holds; ``None``
                builds ``AutoModel.from_config(config.encoder)`` (with :attr:`encoder_attn_implementation`).
            pooler: what replaces the encoder's pooler, if it has one (default none: heads own their poolers, and an
                unused pooler would leave parameters without gradients, which breaks DDP).
        """
        if encoder is None:
            attn = self.encoder_attn_implementation
            encoder = AutoModel.from_config(config.encoder, **({} if attn is None else {"attn_implementation": attn}))
        else:
            self.config.encoder = encoder.config
        if getattr(encoder, "pooler", None) is not None:
            encoder.pooler = pooler
        return cast(PreTrainedModel, encoder)

    def get_input_embeddings(self) -> nn.Module:
        """The wrapped encoder's token embeddings."""
        return self._wrapped_encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        """Replace the wrapped encoder's token embeddings."""
        self._wrapped_encoder.set_input_embeddings(value)

    @property
    def _wrapped_encoder(self) -> PreTrainedModel:
        """The encoder of ``base_model`` (the backbone itself or the one a task model holds)."""
        return cast(PreTrainedModel, self.base_model.encoder)


class EncoderBackbone:
    """Mixin of a system's backbone (``SGNetModel`` ...), before its base class: its :meth:`forward` (the system's
    own part: :meth:`backbone_output`) and what it hands the task heads (:meth:`contextual_states`). A backbone is
    built as ``Backbone(config, encoder=None)`` (:meth:`WrappedEncoderMixin.wrap_encoder`).
    """

    #: The keyword arguments :meth:`forward` takes besides its parameters: every syntax batch key (those the system
    #: does not read are ignored, so a whole collated batch can be passed).
    syntax_keywords: ClassVar[tuple[str, ...]] = SYNTAX_INPUT_KEYS
    #: Fields of the backbone's output copied into every head output (SG-Net: ``sg_attentions``; Syntax-BERT:
    #: ``lisa_loss``).
    head_extras: ClassVar[tuple[str, ...]] = ()
    encoder: PreTrainedModel

    if TYPE_CHECKING:  # nn.Module and PreTrainedModel provide them

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

        config: Any

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
        **syntax_inputs: Any,
    ) -> Any:
        """Encode a batch: the system's output (:meth:`backbone_output`), with ``last_hidden_state`` ``[B, L, H]``.

        Args:
            input_ids, token_type_ids, position_ids: ``[B, L]`` (or ``inputs_embeds`` ``[B, L, H]``), to the encoder.
            attention_mask: ``[B, L]`` 1 = real token, 0 = padding (padding is never attended).
            output_attentions, output_hidden_states: also return the attention probabilities / per-layer states.
            return_dict: return the backbone's ``ModelOutput`` (default) or a tuple.
            **syntax_inputs: the system's syntax inputs (:meth:`backbone_output`); every key of
                :attr:`syntax_keywords` is accepted, any other keyword raises an ``InputError`` naming it.
        """
        check_forward_inputs(self, syntax_inputs, self.syntax_keywords)
        inputs = dict(zip(ENCODER_KEYS, (input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds)))
        out = self.backbone_output(inputs, bool(output_attentions), bool(output_hidden_states), syntax_inputs)
        return out if (self.config.return_dict if return_dict is None else return_dict) else out.to_tuple()

    def backbone_output(
        self, inputs: dict[str, Any], output_attentions: bool, output_hidden_states: bool, syntax: dict[str, Any]
    ) -> ModelOutput:
        """The system's part of :meth:`forward`: its output for the encoder ``inputs`` and the ``syntax`` keyword
        arguments; by default the encoder's output, syntax ignored (the plain encoder)."""
        enc = self.encode(inputs, output_attentions, output_hidden_states)
        return BaseModelOutput(
            last_hidden_state=enc.last_hidden_state,
            hidden_states=getattr(enc, "hidden_states", None),
            attentions=getattr(enc, "attentions", None),
        )

    def auxiliary_loss(self, output: Any) -> torch.Tensor | None:
        """0-d loss added to every head's loss when the head computes one (default: none)."""
        return None

    def contextual_states(self, input_ids: torch.Tensor | None = None, **inputs: Any) -> ContextualStates:
        """What the task heads read for the :meth:`forward` inputs: ``last_hidden_state`` ``[B, L, H]``, the
        per-layer outputs, the :attr:`head_extras` and the :meth:`auxiliary_loss`."""
        out = self(input_ids, return_dict=True, **{k: v for k, v in inputs.items() if k != "return_dict"})
        return ContextualStates(
            hidden=out.last_hidden_state,
            hidden_states=out.hidden_states,
            attentions=out.attentions,
            extras={k: getattr(out, k) for k in self.head_extras},
            auxiliary_loss=self.auxiliary_loss(out),
        )

    def encode(self, inputs: dict[str, Any], output_attentions: bool, output_hidden_states: bool, **extra: Any) -> Any:
        """The encoder's output for the given ``inputs``, ``output_attentions`` / ``output_hidden_states`` only when
        asked (never False, so the encoder's defaults hold), and ``extra`` (Syntax-BERT's attention arguments)."""
        given = {k: v for k, v in inputs.items() if v is not None or k == "input_ids"}
        if output_attentions:
            given["output_attentions"] = True
        if output_hidden_states:
            given["output_hidden_states"] = True
        return self.encoder(return_dict=True, **given, **extra)
