"""SG-Net (Zhang et al., TPAMI): a pretrained encoder + one syntax-guided self-attention layer + aggregation.

``SGNetModel`` wraps any ``AutoModel`` encoder, builds the SDOI mask from a
:class:`~syntaxformer.data.collate.SyntaxCollator` batch, runs the syntax-guided layer on the encoder's last hidden
states H and combines H and H' into H̄ (§3.2-3.3); the ``SGNetFor...`` task models put their heads on H̄::

    model = SGNetForSequenceClassification.from_encoder_pretrained(default_hf_model(), num_labels=2)
    out = model(**batch)            # a SyntaxCollator batch, plus "labels" for a loss
    model.save_pretrained("run/")   # AutoModelForSequenceClassification.from_pretrained("run/") loads it back
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from syntaxformer.errors import ConfigError, InputError
from syntaxformer.masks.sdoi import sdoi_mask
from syntaxformer.modeling.configuration import SGNetConfig, filled
from syntaxformer.modeling.heads import (
    MultipleChoiceHead,
    QuestionAnsweringHead,
    SequenceClassificationHead,
    TokenClassificationHead,
)
from syntaxformer.modeling.sg_layer import ConcatAggregation, DualAggregation, SyntaxGuidedLayer, build_aggregation
from syntaxformer.modeling.wrapped_encoder import EncoderBackbone, WrappedEncoderMixin


class SGNetPreTrainedModel(WrappedEncoderMixin, PreTrainedModel):
    """Base of the SG-Net models: config class, weight init, loading from a pretrained encoder; task models hold the
    backbone :class:`SGNetModel` as ``self.sgnet``."""

    config_class = SGNetConfig
    config: SGNetConfig
    base_model_prefix = "sgnet"

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Normal(0, ``initializer_range``) linears, unit LayerNorms; alpha at ``logit(alpha)``; concat as dual; the
        POS table at zero (the wrapped encoder initialises its own modules; loaded weights are never re-initialised).
        """
        super()._init_weights(module)
        if isinstance(module, DualAggregation) and module.alpha_logit is not None:
            init.constant_(module.alpha_logit, module.initial_logit())
        elif isinstance(module, ConcatAggregation):
            init.copy_(module.weight, module.identity_init())
            init.zeros_(module.bias)
        elif isinstance(module, PosEmbedding):
            init.zeros_(module.weight)

    def build_backbone(self, config: SGNetConfig, encoder: PreTrainedModel | None) -> SGNetModel:
        """The backbone of the task models: an :class:`SGNetModel` around ``encoder``."""
        return SGNetModel(config, encoder=encoder)


class PosEmbedding(nn.Embedding):
    """BERT+POS's trainable POS embedding (``SGNetConfig.pos_embeddings``); initialised to zero."""


@dataclass
class SGNetModelOutput(ModelOutput):
    """Output of :class:`~syntaxformer.modeling.SGNetModel`.

    Attributes:
        last_hidden_state: ``[B, L, H]`` H̄, what the task heads read (H itself when ``use_sg_layer=False``).
        encoder_hidden_state, syntax_hidden_state: ``[B, L, H]`` H and H' (``None`` without the layer).
        hidden_states, attentions: the encoder's per-layer hidden states / attention probabilities, when asked for.
        sg_attentions: ``[B, sg_num_heads, L, L]`` the syntax-guided layer's attention probabilities, when
            ``output_attentions=True``.
    """

    last_hidden_state: torch.Tensor | None = None
    encoder_hidden_state: torch.Tensor | None = None
    syntax_hidden_state: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


class SGNetModel(EncoderBackbone, SGNetPreTrainedModel):
    """SG-Net without a task head: encoder -> syntax-guided layer -> aggregation."""

    head_extras = ("sg_attentions",)
    encoder: PreTrainedModel
    pos_embeddings: PosEmbedding | None
    sg_layer: SyntaxGuidedLayer | None
    aggregation: nn.Module | None

    def __init__(self, config: SGNetConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        self.encoder = self.wrap_encoder(config, encoder)
        self.pos_embeddings = None
        if self.config.pos_embeddings is not None:
            self.pos_embeddings = PosEmbedding(filled(self.config.pos_vocab_size), config.hidden_size, padding_idx=0)
        self.sg_layer = SyntaxGuidedLayer.from_config(self.config) if self.config.use_sg_layer else None
        self.aggregation = build_aggregation(self.config) if self.config.use_sg_layer else None
        self.post_init()
        if self.config.use_sg_layer and self.config.sg_init == "copy_last":
            self.copy_last_encoder_layer()

    @torch.no_grad()
    def copy_last_encoder_layer(self) -> None:
        """Copy the encoder's last layer into the syntax-guided layer (``sg_init="copy_last"``).

        Raises:
            ConfigError: the encoder is not BERT-like, or the layer's heads or sizes differ from the encoder's.
        """
        try:
            layers = cast(nn.ModuleList, self.encoder.get_submodule("encoder.layer"))
        except AttributeError:
            raise ConfigError(
                f"sg_init='copy_last' supports BERT-like encoders (BERT, RoBERTa, ELECTRA, MiniLM: modules "
                f"encoder.layer[i]); {type(self.encoder).__name__} has no 'encoder.layer'. Use sg_init='random'"
            ) from None
        heads = self.config.num_attention_heads
        if self.sg_layer is None:
            raise ConfigError(
                "sg_init='copy_last' copies the encoder's last layer into the syntax-guided layer: use_sg_layer=True"
            )
        if self.config.sg_num_heads != heads:
            raise ConfigError(
                f"sg_init='copy_last' needs sg_num_heads equal to the encoder's num_attention_heads "
                f"({heads}), got {self.config.sg_num_heads}"
            )
        self.sg_layer.copy_from_bert_layer(layers[-1])

    def backbone_output(
        self, inputs: dict[str, Any], output_attentions: bool, output_hidden_states: bool, syntax: dict[str, Any]
    ) -> SGNetModelOutput:
        """SG-Net's part of ``forward`` (:class:`SGNetModelOutput`). It reads (``[B, L]`` each):

        * ``dep_tin`` / ``dep_tout`` (pre-order entry / subtree exit time of each position's dependency node) and
          ``syntax_tree`` (sentence id; -1 for special tokens and padding), for the SDOI mask of the layer (not
          needed with ``use_sg_layer=False`` or ``aggregation="vanilla_layer"``);
        * ``pos_ids`` (0 = special token / padding) with ``config.pos_embeddings``.
        """
        dep_tin, dep_tout, syntax_tree, pos_ids = (
            syntax.get(k) for k in ("dep_tin", "dep_tout", "syntax_tree", "pos_ids")
        )
        attention_mask = inputs["attention_mask"]
        if self.pos_embeddings is not None:
            if pos_ids is None:
                raise InputError(
                    f"pos_embeddings={self.config.pos_embeddings!r} (BERT+POS) needs 'pos_ids' [B, L] "
                    "in the batch (syntaxformer.data.subword_features.subword_feature_ids)"
                )
            inputs_embeds = inputs["inputs_embeds"]
            if inputs_embeds is None:
                inputs_embeds = self.encoder.get_input_embeddings()(inputs["input_ids"])  # (B, L, H)
                inputs["input_ids"] = None
            pos = self.pos_embeddings(pos_ids.to(inputs_embeds.device).clamp(min=0))
            inputs["inputs_embeds"] = inputs_embeds + pos
        enc = self.encode(inputs, output_attentions, output_hidden_states)
        h = enc.last_hidden_state  # (B, L, H)

        h_sg = probs = None
        h_bar = h
        if self.sg_layer is not None and self.aggregation is not None:  # both or neither (use_sg_layer)
            key_valid = None if attention_mask is None else attention_mask.to(h.device) > 0  # (B, L)
            mask = self.attention_mask_for_sg_layer(h, key_valid, dep_tin, dep_tout, syntax_tree)
            h_sg, probs = self.sg_layer(h, mask, output_attentions=output_attentions)  # (B, L, H)
            h_bar = self.aggregation(h, h_sg, key_valid)  # (B, L, H)
            if self.config.mask_special_in_aggregation:
                if syntax_tree is None:
                    raise InputError(
                        "mask_special_in_aggregation=True needs 'syntax_tree' (-1 marks special "
                        "tokens); pass a SyntaxCollator batch"
                    )
                special = (syntax_tree.to(h.device) < 0).unsqueeze(-1)  # (B, L, 1)
                h_bar = torch.where(special, h, h_bar)

        return SGNetModelOutput(
            last_hidden_state=h_bar,
            encoder_hidden_state=h,
            syntax_hidden_state=h_sg,
            hidden_states=getattr(enc, "hidden_states", None),
            attentions=getattr(enc, "attentions", None),
            sg_attentions=probs,
        )

    def attention_mask_for_sg_layer(
        self,
        hidden: torch.Tensor,
        key_valid: torch.Tensor | None,
        dep_tin: torch.Tensor | None,
        dep_tout: torch.Tensor | None,
        syntax_tree: torch.Tensor | None,
    ) -> torch.Tensor:
        """The bool mask of the extra layer (True = may attend) on ``hidden``'s device: the SDOI mask ``[B, L, L]``
        restricted to non-padding keys (``key_valid`` ``[B, L]``, ``None`` = no padding; the diagonal always kept);
        for ``aggregation="vanilla_layer"`` the key-padding mask ``[B, 1, L]``."""
        B, L, _ = hidden.shape
        device = hidden.device
        if self.config.aggregation == "vanilla_layer":
            if key_valid is None:
                return torch.ones(B, 1, L, dtype=torch.bool, device=device)
            return key_valid.unsqueeze(1)  # (B, 1, L)
        missing = [
            n for n, t in (("dep_tin", dep_tin), ("dep_tout", dep_tout), ("syntax_tree", syntax_tree)) if t is None
        ]
        if dep_tin is None or dep_tout is None or syntax_tree is None:
            raise InputError(
                f"SG-Net's syntax-guided layer needs the batch keys {missing} (built by "
                "syntaxformer.data.collate.SyntaxCollator); pass them (if a Trainer dropped these columns, check that "
                "the data set has them: syntaxformer.hf_datasets.add_syntax_features), or use use_sg_layer=False "
                "for the baseline"
            )
        if dep_tin.shape != (B, L):
            raise InputError(
                f"dep_tin has shape {tuple(dep_tin.shape)} but the input is [B, L] = [{B}, {L}]; "
                "collate the syntax tensors with the same padding as input_ids"
            )
        mask = sdoi_mask(dep_tin.to(device), dep_tout.to(device), syntax_tree.to(device))  # (B, L, L)
        if key_valid is not None:
            # Already true for consistent batches (padding has syntax_tree == -1); guards hand-made inputs.
            eye = torch.eye(L, dtype=torch.bool, device=device)
            mask = (mask & key_valid.unsqueeze(1)) | eye  # (B, L, L)
        return mask


class SGNetForSequenceClassification(SequenceClassificationHead, SGNetPreTrainedModel):
    """SG-Net with a sequence classification / regression head on H̄ (NLI, GLUE-style tasks; §3.4.2)."""


class SGNetForQuestionAnswering(QuestionAnsweringHead, SGNetPreTrainedModel):
    """SG-Net for span question answering on H̄ (SQuAD 2.0, §3.4.1) with the optional answer verifier."""


class SGNetForMultipleChoice(MultipleChoiceHead, SGNetPreTrainedModel):
    """SG-Net for multiple-choice reading comprehension on H̄ (RACE, §3.4.1, Eq. 15; inputs ``[B, C, L]``)."""


class SGNetForTokenClassification(TokenClassificationHead, SGNetPreTrainedModel):
    """SG-Net with a per-token classifier on H̄ (tagging)."""
