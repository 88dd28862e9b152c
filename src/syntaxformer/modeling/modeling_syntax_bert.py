"""Syntax-BERT (Bai et al., 2021): masked sub-network attention in every layer of a pretrained encoder, mixed per
token by topical attention; LISA-style parent head as an option. :class:`SyntaxBertModel` runs any ``AutoModel``
encoder whose attention goes through ``AttentionInterface`` with ``attn_implementation="syntax"``.
"""

import zlib
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from syntaxformer.errors import ConfigError, InputError
from syntaxformer.masks.random import random_like_groups
from syntaxformer.masks.relations import CHILD, PAIRWISE, PARENT, SELF, SIBLING, SPECIAL, group_id, relation_groups
from syntaxformer.modeling.configuration import SYNTAX_INPUT_KEYS, SyntaxBertConfig
from syntaxformer.modeling.heads import (
    MultipleChoiceHead,
    QuestionAnsweringHead,
    SequenceClassificationHead,
    TokenClassificationHead,
)
from syntaxformer.modeling.syntax_attention import syntax_attention_forward  # noqa: F401 (registers "syntax")
from syntaxformer.modeling.syntax_attention_core import (
    SYNTAX_ATTENTION,
    AddedLisaHead,
    LisaRecorder,
    SyntaxGate,
    SyntaxGroups,
    TopicalAttention,
    prepare_groups,
)
from syntaxformer.modeling.wrapped_encoder import EncoderBackbone, WrappedEncoderMixin


def attention_sites(encoder: nn.Module) -> list[tuple[nn.Module, nn.Linear, nn.Linear]]:
    """The self-attention modules of ``encoder`` in layer order, each with its key and output projections: BERT-style
    ``...attention.self`` (``query/key/value``) with the sibling ``...attention.output.dense`` (BERT, RoBERTa,
    ELECTRA, ERNIE, MiniLM, ...) or DistilBERT-style modules (``q_lin/k_lin/v_lin/out_lin``).

    Raises:
        ConfigError: no such module per layer (e.g. ALBERT shares one module across layers; DeBERTa, MPNet and
            others do not call ``AttentionInterface``).
    """
    sites = []
    for name, module in encoder.named_modules():
        if "cross" in type(module).__name__.lower():
            continue
        key = out = None
        if isinstance(getattr(module, "query", None), nn.Linear) and isinstance(
            getattr(module, "key", None), nn.Linear
        ):
            parent = encoder.get_submodule(name.rpartition(".")[0]) if "." in name else encoder
            out = getattr(getattr(parent, "output", None), "dense", None)
            key = module.key
        elif isinstance(getattr(module, "k_lin", None), nn.Linear):
            key, out = module.k_lin, getattr(module, "out_lin", None)
        if key is not None and isinstance(out, nn.Linear):
            sites.append((module, key, out))
    n_layers = getattr(getattr(encoder, "config", None), "num_hidden_layers", None)
    if not sites or (n_layers is not None and len(sites) != n_layers):
        raise ConfigError(
            f"Syntax-BERT found {len(sites)} self-attention modules in {type(encoder).__name__} "
            f"(expected one per layer, {n_layers}); supported are encoders with BERT-style "
            "'attention.self' + 'attention.output.dense' (BERT, RoBERTa, ELECTRA, ...) or DistilBERT-style modules"
        )
    return sites


class SyntaxBertPreTrainedModel(WrappedEncoderMixin, PreTrainedModel):
    """Base of the Syntax-BERT models: config class, weight init, loading from a pretrained encoder; task models
    hold the backbone :class:`SyntaxBertModel` as ``self.syntax_bert``."""

    config_class = SyntaxBertConfig
    config: SyntaxBertConfig
    base_model_prefix = "syntax_bert"
    _supports_flash_attn = False  # the encoder always runs the "syntax" attention
    _supports_flex_attn = False
    #: The encoder is loaded and built with the ``"syntax"`` attention, whatever ``encoder_kwargs`` say.
    encoder_attn_implementation = SYNTAX_ATTENTION

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Hugging Face's default init, then the new parts at their starting points."""
        super()._init_weights(module)
        if isinstance(module, TopicalAttention):
            init.zeros_(module.query)
            module.reset_projections()  # own W_Kt = the layer's key projection, W_Vt = identity
        if isinstance(module, AddedLisaHead):
            module.reset_parameters()  # a copy of head lisa_head's projections, mixing weights 0
        if isinstance(module, SyntaxGate):
            init.zeros_(module.weight)  # g = 0: the pretrained layer at initialisation

    def post_init(self) -> None:
        """Hugging Face's post-init, then make sure the encoder runs the ``"syntax"`` attention."""
        super().post_init()
        backbone = self.base_model
        if isinstance(backbone, SyntaxBertModel) and hasattr(backbone, "encoder"):
            backbone.use_syntax_attention()

    def build_backbone(self, config: SyntaxBertConfig, encoder: PreTrainedModel | None) -> "SyntaxBertModel":
        """The backbone of the task models: a :class:`SyntaxBertModel` around ``encoder``."""
        return SyntaxBertModel(config, encoder=encoder)


@dataclass
class SyntaxBertModelOutput(ModelOutput):
    """Output of :class:`~syntaxformer.modeling.SyntaxBertModel`.

    Attributes:
        last_hidden_state: ``[B, L, H]`` the encoder's last hidden states.
        lisa_loss: 0-d LISA cross-entropy (only with ``lisa_layer`` set and ``dep_parent`` given).
        hidden_states, attentions: per-layer hidden states / effective attention ``[B, heads, L, L]``, when asked for.
        lisa_log_probs: ``[B, L, L]`` log attention of the LISA head (row = token, column = candidate parent).
    """

    last_hidden_state: torch.Tensor | None = None
    lisa_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None
    lisa_log_probs: torch.Tensor | None = None


class SyntaxBertModel(EncoderBackbone, SyntaxBertPreTrainedModel):
    """Syntax-BERT without a task head: a pretrained encoder whose every attention layer runs on sub-networks."""

    #: Besides every syntax batch key, precomputed ``syntax_groups`` and an analysis ``syntax_record``
    #: (:meth:`backbone_output`).
    syntax_keywords = SYNTAX_INPUT_KEYS + ("syntax_groups", "syntax_record")
    head_extras = ("lisa_loss",)
    encoder: PreTrainedModel
    topical: TopicalAttention | None
    lisa: AddedLisaHead | None
    gate: SyntaxGate | None

    def __init__(self, config: SyntaxBertConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        # a stand-in for the pooler: some encoders (LayoutLM) call their pooler unconditionally
        self.encoder = encoder = self.wrap_encoder(config, encoder, pooler=_NoPooler())
        sites = attention_sites(encoder)
        for i, (module, _, _) in enumerate(sites):
            # the layer's topical query (architectures without layer_idx need it); torch types Module attributes
            module.syntax_layer_idx = i  # type: ignore[assignment]
        dim, heads = sites[0][1].out_features, config.num_attention_heads
        self.topical = None
        if config.aggregation == "topical":
            self.topical = TopicalAttention(len(sites), dim, config.hidden_size, config.topical_projections)
            self.topical.bind([(key, out) for _, key, out in sites])
        self.lisa = None
        if config.lisa_layer is not None and config.lisa_head_mode == "added":
            self.lisa = AddedLisaHead(config.lisa_layer, heads, dim // heads, config.lisa_head)
        self.gate = None if config.gate == "none" else SyntaxGate(len(sites), heads, per_head=config.gate == "head")
        self.post_init()

    def use_syntax_attention(self) -> None:
        """Switch the encoder (back) to ``attn_implementation="syntax"`` (the base class dispatches the outer model's
        implementation to the encoder's config, e.g. when a head is built around it)."""
        if self.encoder.config._attn_implementation != SYNTAX_ATTENTION:
            self.encoder.config._attn_implementation = SYNTAX_ATTENTION

    def auxiliary_loss(self, output: SyntaxBertModelOutput) -> torch.Tensor | None:
        """``lisa_loss_weight * lisa_loss`` (when LISA is on and ``dep_parent`` is given)."""
        return None if output.lisa_loss is None else self.config.lisa_loss_weight * output.lisa_loss

    def build_groups(
        self, features: dict[str, torch.Tensor], device: torch.device, input_ids: torch.Tensor | None = None
    ) -> SyntaxGroups:
        """Relation groups of a collated batch, with the configured ablations, ready for every layer: one int64
        ``[B, L, L]`` tensor per tree kind (0 = no sub-network), built on ``device`` from the collator ``features``
        (:attr:`SyntaxBertConfig.group_inputs`); ``input_ids`` ``[B, L]`` seed the random-mask ablation per example.
        """
        c = self.config
        missing = [k for k in c.group_inputs if features.get(k) is None]
        if missing:
            raise InputError(
                f"Syntax-BERT needs the batch keys {missing} (built by "
                "syntaxformer.data.collate.SyntaxCollator; constituency needs constituency=True), or "
                "precomputed syntax_groups=...; if a Trainer dropped these columns, check that the "
                "data set has them (syntaxformer.hf_datasets.add_syntax_features) or pass "
                "TrainingArguments(remove_unused_columns=False)"
            )
        f = {k: v.to(device) for k, v in features.items() if isinstance(v, torch.Tensor)}
        tree = f["syntax_tree"]
        segment = tree if c.pairwise == "sentence" else f["syntax_segment"]  # pairwise joins sentences / texts
        parts = []
        for kind, key, on in (("dep", "tin", c.use_dependency), ("con", "key", c.use_constituency)):
            if on:
                k, depth, lo, hi, head = (f[f"{kind}_{n}"] for n in (key, "depth", "anc_lo", "anc_hi", "anc_head"))
                key_hi = f["dep_tout"] if kind == "dep" else None
                parts.append(
                    relation_groups(k, depth, lo, hi, head, tree, segment, c.max_distance, c.pairwise_masks, key_hi)
                )
        keep = self._kept_groups(device)
        out = []
        for j, g in enumerate(parts):
            g = g.long()
            if keep is not None:
                g = keep[g]
            if c.random_masks:
                g = _random_groups(g, tree >= 0, input_ids, c.random_masks_seed + 7919 * j)
            out.append(g)
        if c.self_group or c.special_keys:
            out[0] = self._extra_groups(out[0], tree)
        groups = prepare_groups(out, c.num_buckets)
        if groups is None:  # validate_syntax_options keeps at least one tree
            raise ConfigError("SyntaxBertConfig: no tree to build groups from (use_dependency and use_constituency)")
        return groups

    def _extra_groups(self, groups: torch.Tensor, tree: torch.Tensor) -> torch.Tensor:
        """Add the optional ``self`` / ``special`` sub-networks to one partition ``[B, L, L]`` (rows of words only;
        padding keys, also -1 in ``tree``, are excluded later by the attention mask)."""
        c, D = self.config, self.config.max_distance
        word = tree >= 0  # (B, L)
        if c.special_keys:
            special = word.unsqueeze(-1) & ~word.unsqueeze(-2)  # (B, L, L) word row, special-or-padding key
            groups = groups.masked_fill(special, group_id(SPECIAL, max_distance=D))
        if c.self_group:
            L = tree.shape[-1]
            eye = torch.eye(L, dtype=torch.bool, device=tree.device).unsqueeze(0) & word.unsqueeze(-1)
            groups = groups.masked_fill(eye, group_id(SELF, max_distance=D))
        return groups

    def _kept_groups(self, device: torch.device) -> torch.Tensor | None:
        """Lookup table group id -> itself or 0 for the relation kinds switched off (None if all are kept)."""
        c = self.config
        flags = {PARENT: c.parent_masks, CHILD: c.child_masks, SIBLING: c.sibling_masks, PAIRWISE: c.pairwise_masks}
        if all(flags.values()):
            return None
        D = c.max_distance
        table = torch.arange(c.num_buckets, device=device)
        for kind, on in flags.items():
            if not on:  # drop the ids of all distances of this kind
                table[group_id(kind, 1, D) : group_id(kind, D, D) + 1] = 0
        return table

    def backbone_output(
        self, inputs: dict[str, Any], output_attentions: bool, output_hidden_states: bool, syntax: dict[str, Any]
    ) -> SyntaxBertModelOutput:
        """Syntax-BERT's part of ``forward`` (:class:`SyntaxBertModelOutput`). It reads the collator keys of
        :attr:`SyntaxBertConfig.group_inputs` (:meth:`build_groups`) or precomputed ``syntax_groups``; ``dep_parent``
        ``[B, L]`` (each token's parent position, -1: none) for the LISA loss; a ``syntax_record``
        (``SyntaxAttentionRecorder``, analysis) to fill with every layer's effective attention and topical weights.
        """
        self.use_syntax_attention()
        syntax_groups = syntax.get("syntax_groups")
        if syntax_groups is None and self.config.uses_groups:
            device = cast(torch.Tensor, self.encoder.get_input_embeddings().weight).device
            syntax_groups = self.build_groups(syntax, device, inputs["input_ids"])
        recorder = None
        if self.config.lisa_layer is not None:
            recorder = LisaRecorder(self.config.lisa_layer, self.config.lisa_head, added=self.lisa)
        enc = self.encode(
            inputs,
            output_attentions,
            output_hidden_states,
            syntax_groups=syntax_groups,
            syntax_options=self.config.attention_options(),
            syntax_topical=self.topical,
            syntax_lisa=recorder,
            syntax_gate=self.gate,
            syntax_record=syntax.get("syntax_record"),
        )
        dep_parent = syntax.get("dep_parent")
        return SyntaxBertModelOutput(
            last_hidden_state=enc.last_hidden_state,
            lisa_loss=None if recorder is None or dep_parent is None else recorder.loss(dep_parent),
            hidden_states=getattr(enc, "hidden_states", None),
            attentions=getattr(enc, "attentions", None),
            lisa_log_probs=None if recorder is None else recorder.log_probs,
        )


class _NoPooler(nn.Module):
    """Stands in for a removed encoder pooler: no parameters, returns ``None``."""

    def forward(self, hidden_states: torch.Tensor) -> None:  # noqa: D102
        return None


def _random_groups(
    groups: torch.Tensor, valid: torch.Tensor, input_ids: torch.Tensor | None, seed: int
) -> torch.Tensor:
    """Shuffle each example's group ids with a generator seeded by its token ids (fixed per example)."""
    out = torch.empty_like(groups)
    ids = None if input_ids is None else input_ids.detach().cpu()
    for b in range(groups.shape[0]):
        token_seed = 0 if ids is None else zlib.crc32(ids[b][valid[b].cpu()].numpy().tobytes())
        gen = torch.Generator(device=groups.device).manual_seed(
            (seed * 1_000_003 + token_seed + b * (ids is None)) % (2**63)
        )
        out[b] = random_like_groups(groups[b : b + 1], valid[b : b + 1], generator=gen)[0]
    return out


class SyntaxBertForSequenceClassification(SequenceClassificationHead, SyntaxBertPreTrainedModel):
    """Syntax-BERT with a sequence classification / regression head (GLUE, SST, NLI; §4)."""


class SyntaxBertForQuestionAnswering(QuestionAnsweringHead, SyntaxBertPreTrainedModel):
    """Syntax-BERT for span question answering (SQuAD 2.0) with the optional answer verifier."""


class SyntaxBertForMultipleChoice(MultipleChoiceHead, SyntaxBertPreTrainedModel):
    """Syntax-BERT for multiple choice (RACE; inputs ``[B, C, L, ...]``)."""


class SyntaxBertForTokenClassification(TokenClassificationHead, SyntaxBertPreTrainedModel):
    """Syntax-BERT with a per-token classifier (tagging)."""
