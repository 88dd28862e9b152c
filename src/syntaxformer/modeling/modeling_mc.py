"""SG-Net for multiple-choice reading comprehension (RACE, TPAMI §3.4.1, Eq. 15).

Each (passage || question, option) pair is one sequence; the first token h̄_0 of H̄ (dense+tanh pooler,
initialised from the encoder's pooler when it has one; or the mean over non-special tokens with
``pooling="mean"``) goes through dropout and ``Linear(H, 1)`` to one score per option; the scores of a question's
options are its logits, the softmax over them its option probabilities, and the loss the cross-entropy with the
right option (Eq. 15). ``use_sg_layer=False`` gives the plain-encoder baseline with the same head.

Importing this module registers the model with ``AutoModelForMultipleChoice`` (model type ``"syntaxformer"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoModelForMultipleChoice, PreTrainedModel
from transformers.utils import ModelOutput

from syntaxformer.modeling.configuration import SyntaxConfig
from syntaxformer.modeling.heads import FirstTokenPooler, mean_pool
from syntaxformer.modeling.modeling_sgnet import SGNetModel, _SyntaxPreTrainedModel


@dataclass
class SGNetMultipleChoiceOutput(ModelOutput):
    """Output of :class:`SGNetForMultipleChoice`.

    Attributes:
        loss: 0-d cross-entropy over the options (when ``labels`` are given).
        logits: ``[B, C]`` one score per option (softmax over ``C`` gives the option probabilities).
        hidden_states, attentions, sg_attentions: as in :class:`SGNetModelOutput`, for the ``B * C`` sequences.
    """

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


def _flat(x: torch.Tensor | None) -> torch.Tensor | None:
    """``[B, C, L, ...]`` -> ``[B * C, L, ...]``."""
    return None if x is None else x.reshape(-1, *x.shape[2:])


class SGNetForMultipleChoice(_SyntaxPreTrainedModel):
    """SG-Net with a one-score-per-option head (RACE).

    Args:
        config: the model's :class:`SyntaxConfig` (``pooling``, ``classifier_dropout``, ``use_sg_layer`` ...).
        encoder: an already built (e.g. pretrained) encoder to wrap; ``None`` builds one from ``config.encoder``.
    """

    def __init__(self, config: SyntaxConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        encoder_pooler = getattr(encoder, "pooler", None) if encoder is not None else None
        self.sgnet = SGNetModel(config, encoder=encoder)
        self.pooler = FirstTokenPooler(config.hidden_size) if config.pooling == "cls" else None
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.post_init()
        if self.pooler is not None:
            self.pooler.copy_from(encoder_pooler)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        dep_tin: torch.Tensor | None = None,
        dep_tout: torch.Tensor | None = None,
        syntax_tree: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **unused: Any,
    ) -> SGNetMultipleChoiceOutput | tuple[torch.Tensor, ...]:
        """Score the options of a batch of questions.

        Args:
            input_ids: ``[B, C, L]`` token ids of the ``C`` option sequences of each question (or
                ``inputs_embeds`` ``[B, C, L, H]``).
            attention_mask, token_type_ids, dep_tin, dep_tout, syntax_tree, position_ids: ``[B, C, L]``, meaning
                as in :meth:`SGNetModel.forward` (the SDOI mask, True = may attend, is built per sequence).
            labels: ``[B]`` index of the right option; the loss is computed only when given.
            output_attentions, output_hidden_states, return_dict: as in :meth:`SGNetModel.forward`.
            **unused: other batch keys are ignored.

        Returns:
            :class:`SGNetMultipleChoiceOutput` with ``logits`` ``[B, C]``.
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        ref = input_ids if input_ids is not None else inputs_embeds
        if ref is None or ref.dim() < 3:
            raise ValueError("SGNetForMultipleChoice expects input_ids [B, C, L] (or inputs_embeds [B, C, L, H]): "
                             "one sequence per option")
        B, C = ref.shape[:2]
        out = self.sgnet(_flat(input_ids), attention_mask=_flat(attention_mask),
                         token_type_ids=_flat(token_type_ids), dep_tin=_flat(dep_tin), dep_tout=_flat(dep_tout),
                         syntax_tree=_flat(syntax_tree), position_ids=_flat(position_ids),
                         inputs_embeds=_flat(inputs_embeds), output_attentions=output_attentions,
                         output_hidden_states=output_hidden_states, return_dict=True)
        h_bar = out.last_hidden_state  # (B*C, L, H)
        if self.pooler is not None:
            pooled = self.pooler(h_bar)  # (B*C, H)
        else:
            st, am = _flat(syntax_tree), _flat(attention_mask)
            keep = (st.to(h_bar.device) >= 0) if st is not None else (
                am.to(h_bar.device) > 0 if am is not None else torch.ones(h_bar.shape[:2], dtype=torch.bool,
                                                                          device=h_bar.device))
            pooled = mean_pool(h_bar, keep)  # (B*C, H)
        logits = self.classifier(self.dropout(pooled)).view(B, C)  # (B, C)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.float(), labels.to(logits.device).view(-1).long())
        result = SGNetMultipleChoiceOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                           attentions=out.attentions, sg_attentions=out.sg_attentions)
        return result if return_dict else result.to_tuple()


AutoModelForMultipleChoice.register(SyntaxConfig, SGNetForMultipleChoice, exist_ok=True)
