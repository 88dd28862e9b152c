"""SG-Net for span question answering (SQuAD 2.0, §3.4.1), with the optional answer verifier (Eq. 13-14).

* Span head (Eq. 10-11): ``start_logits, end_logits = Linear(H̄)`` (one ``H -> 2`` linear layer over every
  position); the loss is the mean of the start and end cross-entropies (BERT's convention; positions outside
  the sequence are ignored). The null answer is position 0 ([CLS]).
* Answer verifier (``config.qa_verifier=True``): the first token h̄_0 of H̄ through a dense+tanh pooler
  (initialised from the encoder's pooler when it has one), dropout and ``Linear(H, 2)`` gives
  ``verifier_logits`` = (logit_ans, logit_na). By default it is trained jointly with the span head (a shared
  encoder) with cross-entropy on ``is_impossible`` (Eq. 13, written there as the binary cross-entropy of the
  softmax; identical for two classes), weighted by ``config.verifier_loss_weight`` (default 1.0):
  ``loss = span_loss_weight * (CE_start + CE_end) / 2 + w * CE_verifier``. The paper's *parallel* verifier (a
  second SG-Net trained only for answerability) is the same class with ``span_loss_weight=0``: its verifier
  logits are combined with the span logits of a separately trained span model at decoding time
  (:func:`syntaxformer.training.qa.run_squad` with ``verifier="parallel"`` does both).
  The combination of Eq. 14 is done at decoding time, by
  :func:`syntaxformer.tasks.squad.postprocess_predictions`: ``score_diff = score_null - score_has`` (Eq. 12;
  null minimised, span maximised over windows), ``score_ext = logit_na - logit_ans``, and the no-answer score is
  ``beta1 * score_diff + beta2 * score_ext`` (``config.verifier_beta1`` / ``verifier_beta2``, default 1.0 / 1.0,
  also given by :meth:`SGNetForQuestionAnswering.no_answer_weights`); the question is answered ``""`` when that
  score exceeds the threshold δ chosen on development data (``best_f1_thresh``). The paper writes "predicts the
  span if score_final > δ"; with its own sign of ``score_ext`` (larger = unanswerable) the consistent reading is
  the one implemented: larger final score = no answer.
* ``use_sg_layer=False`` gives the plain-encoder baseline with the same heads.

Importing this module registers the model with ``AutoModelForQuestionAnswering`` (model type ``"syntaxformer"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoModelForQuestionAnswering, PreTrainedModel
from transformers.utils import ModelOutput

from syntaxformer.modeling.configuration import SyntaxConfig
from syntaxformer.modeling.heads import FirstTokenPooler
from syntaxformer.modeling.modeling_sgnet import SGNetModel, _SyntaxPreTrainedModel


@dataclass
class SGNetQuestionAnsweringOutput(ModelOutput):
    """Output of :class:`SGNetForQuestionAnswering`.

    Attributes:
        loss: 0-d total loss (when start/end positions are given).
        start_logits, end_logits: ``[B, L]``.
        verifier_logits: ``[B, 2]`` (answerable, unanswerable) when ``config.qa_verifier``, else ``None``.
        span_loss, verifier_loss: the two parts of ``loss`` (``verifier_loss`` unweighted; ``None`` when absent).
        hidden_states, attentions, sg_attentions: as in :class:`SGNetModelOutput`.
    """

    loss: torch.Tensor | None = None
    start_logits: torch.Tensor | None = None
    end_logits: torch.Tensor | None = None
    verifier_logits: torch.Tensor | None = None
    span_loss: torch.Tensor | None = None
    verifier_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    sg_attentions: torch.Tensor | None = None


def span_loss(start_logits: torch.Tensor, end_logits: torch.Tensor, start_positions: torch.Tensor,
              end_positions: torch.Tensor) -> torch.Tensor:
    """Mean of the start and end cross-entropies; positions outside ``[0, L)`` are ignored (BERT's clamp)."""
    L = start_logits.size(1)
    sp = start_positions.to(start_logits.device).view(-1).clamp(0, L)
    ep = end_positions.to(end_logits.device).view(-1).clamp(0, L)
    ce = nn.CrossEntropyLoss(ignore_index=L)
    return (ce(start_logits.float(), sp) + ce(end_logits.float(), ep)) / 2


class SGNetForQuestionAnswering(_SyntaxPreTrainedModel):
    """SG-Net with a span head and an optional answer verifier (see the module doc for the exact equations).

    Config options read here (all optional, stored in :class:`SyntaxConfig` as extra attributes):
        qa_verifier (bool, default False): add the [CLS] answerability classifier.
        verifier_loss_weight (float, default 1.0): weight of its cross-entropy in the loss.
        span_loss_weight (float, default 1.0): weight of the span loss; 0 trains the verifier alone (the paper's
            parallel verifier model; needs ``qa_verifier=True``).
        verifier_beta1, verifier_beta2 (float, default 1.0): the weights β1, β2 of Eq. 14 (used at decoding).

    Args:
        config: the model's :class:`SyntaxConfig`.
        encoder: an already built (e.g. pretrained) encoder to wrap.
    """

    def __init__(self, config: SyntaxConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        encoder_pooler = getattr(encoder, "pooler", None) if encoder is not None else None
        self.sgnet = SGNetModel(config, encoder=encoder)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self.use_verifier = bool(getattr(config, "qa_verifier", False))
        if self.use_verifier:
            self.verifier_pooler = FirstTokenPooler(config.hidden_size)
            self.verifier_dropout = nn.Dropout(config.classifier_dropout)
            self.verifier = nn.Linear(config.hidden_size, 2)
        self.span_loss_weight = float(getattr(config, "span_loss_weight", 1.0))
        if self.span_loss_weight == 0 and not self.use_verifier:
            raise ValueError("span_loss_weight=0 leaves nothing to train without the verifier (qa_verifier=True)")
        self.post_init()
        if self.use_verifier:
            self.verifier_pooler.copy_from(encoder_pooler)

    def no_answer_weights(self) -> tuple[float, float]:
        """(β1, β2) of Eq. 14 from the config (default 1.0, 1.0)."""
        return (float(getattr(self.config, "verifier_beta1", 1.0)), float(getattr(self.config, "verifier_beta2", 1.0)))

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        dep_tin: torch.Tensor | None = None,
        dep_tout: torch.Tensor | None = None,
        syntax_tree: torch.Tensor | None = None,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
        is_impossible: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **unused: Any,
    ) -> SGNetQuestionAnsweringOutput | tuple[torch.Tensor, ...]:
        """Span logits (and verifier logits) for a batch; a loss when ``start_positions``/``end_positions`` are given.

        Args:
            input_ids ... syntax_tree, position_ids, inputs_embeds, output_*: as in :meth:`SGNetModel.forward`.
            start_positions, end_positions: ``[B]`` gold token positions (0 = [CLS] null answer).
            is_impossible: ``[B]`` 1 = no answer in this window (verifier target). If the verifier is on and this
                is not given, it is taken as ``start_positions == 0``.
            **unused: other batch keys are ignored.
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        out = self.sgnet(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, dep_tin=dep_tin,
                         dep_tout=dep_tout, syntax_tree=syntax_tree, position_ids=position_ids,
                         inputs_embeds=inputs_embeds, output_attentions=output_attentions,
                         output_hidden_states=output_hidden_states, return_dict=True)
        h_bar = out.last_hidden_state  # (B, L, H)
        logits = self.qa_outputs(h_bar)  # (B, L, 2)
        start_logits, end_logits = logits[..., 0].contiguous(), logits[..., 1].contiguous()  # (B, L) each
        verifier_logits = None
        if self.use_verifier:
            verifier_logits = self.verifier(self.verifier_dropout(self.verifier_pooler(h_bar)))  # (B, 2)

        loss = s_loss = v_loss = None
        if start_positions is not None and end_positions is not None:
            s_loss = span_loss(start_logits, end_logits, start_positions, end_positions)
            loss = s_loss if self.span_loss_weight == 1.0 else self.span_loss_weight * s_loss
            if verifier_logits is not None:
                target = is_impossible if is_impossible is not None else (start_positions == 0)
                target = target.to(verifier_logits.device).view(-1).long()
                v_loss = nn.functional.cross_entropy(verifier_logits.float(), target)
                loss = loss + float(getattr(self.config, "verifier_loss_weight", 1.0)) * v_loss
        result = SGNetQuestionAnsweringOutput(
            loss=loss, start_logits=start_logits, end_logits=end_logits, verifier_logits=verifier_logits,
            span_loss=s_loss, verifier_loss=v_loss, hidden_states=out.hidden_states, attentions=out.attentions,
            sg_attentions=out.sg_attentions)
        return result if return_dict else result.to_tuple()


AutoModelForQuestionAnswering.register(SyntaxConfig, SGNetForQuestionAnswering, exist_ok=True)
