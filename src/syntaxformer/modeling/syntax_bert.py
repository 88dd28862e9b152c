"""Syntax-BERT (Bai et al., 2021): masked sub-network attention in every layer of a pretrained encoder, mixed per
token by topical attention; LISA-style parent head as an option.

``SyntaxBertModel`` wraps any ``AutoModel`` encoder whose attention goes through transformers' ``AttentionInterface``
(BERT, RoBERTa, ELECTRA, ... — see ``docs/syntax_bert.md``) and runs it with ``attn_implementation="syntax"``
(:mod:`syntaxformer.modeling.syntax_attention`): never a copy of its code. Per forward pass it builds the relation
groups of a :class:`~syntaxformer.data.collate.SyntaxCollator` batch once
(:func:`~syntaxformer.masks.relations.relation_groups_from_features`), applies the ablations of the paper's Table 5,
and hands them to every layer through the model call's keyword arguments.

Typical use::

    from syntaxformer.defaults import default_hf_model
    model = SyntaxBertForSequenceClassification.from_encoder_pretrained(default_hf_model(), num_labels=2)
    out = model(**batch)            # a SyntaxCollator batch, plus "labels" for a loss
    model.save_pretrained("run/")   # AutoModelForSequenceClassification.from_pretrained("run/") loads it back
"""


import zlib
from dataclasses import dataclass
from typing import Any, Literal, get_args

import torch
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, PretrainedConfig, PreTrainedModel
from transformers import initialization as init
from transformers.configuration_utils import SubConfigSpec
from transformers.utils import ModelOutput

from syntaxformer.masks.random import random_like_groups
from syntaxformer.masks.relations import KINDS, group_id, num_groups, relation_groups
from syntaxformer.modeling.configuration import EncoderViewsMixin, first_set
from syntaxformer.modeling.heads import FirstTokenPooler, mean_pool, sequence_classification_loss
from syntaxformer.modeling.syntax_attention import (
    SYNTAX_ATTENTION,
    LisaRecorder,
    SyntaxAttentionOptions,
    SyntaxGroups,
    TopicalAttention,
    prepare_groups,
    register_syntax_attention,
)

#: Relation kinds that the ablations can remove (Table 5, "w/o parent / child / sibling / pairwise masks").
RELATION_KINDS: tuple[str, ...] = KINDS
TopicalAggregation = Literal["topical", "sum", "mean"]
TOPICAL_AGGREGATIONS: tuple[str, ...] = get_args(TopicalAggregation)


# ---------------------------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------------------------


@strict
class SyntaxBertConfig(EncoderViewsMixin, PretrainedConfig):
    r"""Configuration of a Syntax-BERT model (:class:`SyntaxBertModel` and its task heads).

    Syntax-BERT (Bai et al., 2021, §3) keeps a pretrained encoder and changes only the flow of information inside
    every self-attention layer: each head attends within *sub-networks* (parent / child / sibling relations at exact
    tree distance 1..D in a dependency and a constituency tree, plus a pairwise mask across the two texts of a pair,
    §3.2) that share the pretrained weights, and a *topical attention* with a learned query per layer mixes the
    sub-network outputs per token (§3.3, Eq. 2-3). The only new parameters are those queries (one vector per layer).

    Args:
        encoder: config of the wrapped encoder: a ``PretrainedConfig``, or a dict with a ``model_type`` key
            (``config.json`` stores it this way). It must be an architecture whose attention goes through
            ``AttentionInterface`` and that forwards the model call's keyword arguments to it (BERT, RoBERTa,
            XLM-RoBERTa, CamemBERT, ELECTRA, ERNIE, Data2VecText, DistilBERT, ...). Default: a ``BertConfig()``.
        max_distance: D, the largest tree distance of a relation (§4: 15). Must not exceed the ``max_distance`` the
            batch was collated with.
        use_dependency: use the dependency-tree partition (Table 5 "w/o dependency trees" = False).
        use_constituency: use the constituency-tree partition (Table 5 "w/o constituency trees" = False; needs the
            ``con_*`` batch keys). Paper default: both trees (§4), M = 3D (+1) sub-networks each.
        parent_masks, child_masks, sibling_masks, pairwise_masks: keep these relation kinds (Table 5, "w/o ...
            masks" = False). The pairwise mask links the two texts of a pair (§3.2); it is empty for single texts.
        random_masks: Table 5 "w/o syntax trees": the group ids of each example are shuffled at random among its
            pairs of words (:func:`~syntaxformer.masks.random.random_like_groups`), so every sub-network keeps its
            size but loses the tree. The shuffle of an example is a fixed function of its token ids and
            ``random_masks_seed``, so it is the same in every epoch and at evaluation.
        random_masks_seed: seed of those shuffles.
        aggregation: ``"topical"`` (Eq. 2-3, the paper's model), ``"sum"`` (Table 5 "w/o topical attention": a
            plain summation of the sub-network outputs) or ``"mean"`` (their average).
        full_attention_candidate: also aggregate the vanilla (unmasked) attention as one more sub-network. Default
            False: the paper counts M = 90 (92 for pairs) sub-networks, all syntactic (§4).
        empty_rows: rows with no non-empty sub-network ([CLS], [SEP], padding, one-word sentences): ``"full"``
            (default) attend to all non-padding tokens as in the pretrained layer, so a first-token classifier still
            sees the sentence; ``"self"`` attend to themselves only.
        syntax_layers: indices of the layers that use sub-networks; ``None`` = every layer (the paper). Other
            layers run their ordinary attention (e.g. ``[]`` for a LISA-only baseline).
        implementation: ``"fast"`` (default), ``"exact"`` or ``"reference"`` (slow loop, for checks); see
            :mod:`syntaxformer.modeling.syntax_attention`.
        lisa_layer: LISA (Strubell et al., 2018; Syntax-BERT §4 "+ LISA"): index of the layer whose head
            ``lisa_head`` is trained to attend to each token's dependency parent (``None`` = no LISA). That head
            attends to all non-padding tokens (it is not split into sub-networks); the model returns the
            cross-entropy of its attention rows against ``dep_parent`` as ``lisa_loss`` and adds
            ``lisa_loss_weight * lisa_loss`` to the task loss. The head keeps the pretrained dot-product attention
            (the original LISA uses a bi-affine head trained from scratch).
        lisa_head: head index of the LISA head.
        lisa_loss_weight: weight of the LISA loss in the total loss.
        pooling: sentence representation for sequence-level heads: ``"cls"`` (first token through a dense+tanh
            pooler, initialised from the encoder's pooler when it has one) or ``"mean"`` (mean over non-special
            tokens, ``syntax_tree >= 0``; over ``attention_mask`` without syntax).
        classifier_dropout: dropout before the classifier; default the encoder's ``classifier_dropout`` if set, else
            its hidden dropout.
        initializer_range: std of the normal init of new weights (classifier, pooler); default the encoder's.
        num_labels, problem_type: as in ``PretrainedConfig`` (regression when ``num_labels == 1``).

    Example::

        >>> from transformers import BertConfig
        >>> config = SyntaxBertConfig(encoder=BertConfig(hidden_size=32, num_hidden_layers=2,
        ...                           num_attention_heads=4, intermediate_size=37), num_labels=3)
        >>> config.max_distance, config.use_dependency, config.use_constituency, config.aggregation
        (15, True, True, 'topical')
    """

    model_type = "syntaxformer-syntax-bert"
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    encoder: PretrainedConfig | dict | None = None
    max_distance: int = 15
    use_dependency: bool = True
    use_constituency: bool = True
    parent_masks: bool = True
    child_masks: bool = True
    sibling_masks: bool = True
    pairwise_masks: bool = True
    random_masks: bool = False
    random_masks_seed: int = 0
    aggregation: TopicalAggregation = "topical"
    full_attention_candidate: bool = False
    empty_rows: Literal["full", "self"] = "full"
    syntax_layers: list[int] | None = None
    implementation: Literal["fast", "exact", "reference"] = "fast"
    lisa_layer: int | None = None
    lisa_head: int = 0
    lisa_loss_weight: float | int = 1.0
    pooling: Literal["cls", "mean"] = "cls"
    classifier_dropout: float | int | None = None
    initializer_range: float | int | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        enc = self.encoder
        self.lisa_loss_weight = float(self.lisa_loss_weight)
        if self.syntax_layers is not None:
            self.syntax_layers = [int(x) for x in self.syntax_layers]
        if self.classifier_dropout is None:
            drop = getattr(enc, "classifier_dropout", None)
            if drop is None:
                drop = first_set(enc, ("hidden_dropout_prob", "hidden_dropout", "dropout"), 0.1)
            self.classifier_dropout = float(drop)
        if self.initializer_range is None:
            self.initializer_range = float(first_set(enc, ("initializer_range",), 0.02))

    # -- validators (run by ``@strict`` after ``__post_init__``) -------------------------------------------------
    def validate_syntax_options(self) -> None:
        """D in 1..84 (uint8 group ids), at least one tree, LISA head and layers inside the encoder."""
        if not 1 <= self.max_distance <= 84:
            raise ValueError(f"SyntaxBertConfig.max_distance must be in 1..84 (paper: 15), got {self.max_distance}")
        if not (self.use_dependency or self.use_constituency):
            raise ValueError("SyntaxBertConfig: use_dependency and use_constituency are both False; keep at least one "
                             "tree (or set syntax_layers=[] for a model without sub-networks)")
        n_layers, n_heads = self.encoder.num_hidden_layers, self.encoder.num_attention_heads
        for name, layers in (("syntax_layers", self.syntax_layers or []),
                             ("lisa_layer", [] if self.lisa_layer is None else [self.lisa_layer])):
            bad = [x for x in layers if not 0 <= x < n_layers]
            if bad:
                raise ValueError(f"SyntaxBertConfig.{name}={bad} is outside the encoder's layers 0..{n_layers - 1}")
        if not 0 <= self.lisa_head < n_heads:
            raise ValueError(f"SyntaxBertConfig.lisa_head={self.lisa_head} is outside the encoder's heads "
                             f"0..{n_heads - 1}")
        if not 0.0 <= self.classifier_dropout < 1.0:
            raise ValueError(f"SyntaxBertConfig.classifier_dropout must lie in [0, 1), got {self.classifier_dropout}")

    def attention_options(self) -> SyntaxAttentionOptions:
        """The options every layer's ``"syntax"`` attention runs with."""
        return SyntaxAttentionOptions(
            aggregation=self.aggregation, empty_rows=self.empty_rows,
            full_attention_candidate=self.full_attention_candidate,
            layers=None if self.syntax_layers is None else tuple(self.syntax_layers),
            implementation=self.implementation, lisa_layer=self.lisa_layer, lisa_head=self.lisa_head)

    @property
    def num_buckets(self) -> int:
        """Size of the per-group tables of one partition: group ids 0..3D+1."""
        return num_groups(self.max_distance, pairwise=True) + 1


# ---------------------------------------------------------------------------------------------------------------
# Outputs
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class SyntaxBertModelOutput(ModelOutput):
    """Output of :class:`SyntaxBertModel`.

    Attributes:
        last_hidden_state: ``[B, L, H]`` the encoder's last hidden states.
        lisa_loss: 0-d LISA cross-entropy (only with ``lisa_layer`` set and ``dep_parent`` given).
        hidden_states: per-layer hidden states (``[B, L, H]`` each), when ``output_hidden_states=True``.
        attentions: per-layer effective attention (``[B, heads, L, L]`` each: ``Σ_g α_g A_g``, the full softmax
            in non-syntax layers), when ``output_attentions=True``.
        lisa_log_probs: ``[B, L, L]`` log attention of the LISA head (row = token, column = candidate parent).
    """

    last_hidden_state: torch.FloatTensor | None = None
    lisa_loss: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None
    lisa_log_probs: torch.FloatTensor | None = None


@dataclass
class SyntaxBertSequenceClassifierOutput(ModelOutput):
    """Output of :class:`SyntaxBertForSequenceClassification`.

    Attributes:
        loss: 0-d total loss (task loss + ``lisa_loss_weight * lisa_loss``), only when ``labels`` are given.
        logits: ``[B, num_labels]`` scores before softmax (``[B, 1]`` for regression).
        lisa_loss: 0-d LISA cross-entropy (with ``lisa_layer`` and ``dep_parent``), also without labels.
        hidden_states: per-layer hidden states, when ``output_hidden_states=True``.
        attentions: per-layer effective attention, when ``output_attentions=True``.
    """

    loss: torch.FloatTensor | None = None
    logits: torch.FloatTensor | None = None
    lisa_loss: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Finding the attention layers of a host model
# ---------------------------------------------------------------------------------------------------------------


def attention_sites(encoder: nn.Module) -> list[tuple[nn.Module, nn.Linear, nn.Linear]]:
    """The self-attention modules of ``encoder`` in layer order, each with its key and output projections.

    Recognised layouts: BERT-style ``...attention.self`` with ``query/key/value`` and the sibling
    ``...attention.output.dense`` (BERT, RoBERTa, XLM-RoBERTa, CamemBERT, ELECTRA, ERNIE, Data2VecText, MiniLM,
    ...), and DistilBERT-style modules with ``q_lin/k_lin/v_lin/out_lin``.

    Raises:
        ValueError: no such module per layer (e.g. ALBERT shares one module across layers; DeBERTa, MPNet and
            others do not call ``AttentionInterface``).
    """
    sites = []
    for name, module in encoder.named_modules():
        if "cross" in type(module).__name__.lower():
            continue
        key = out = None
        if isinstance(getattr(module, "query", None), nn.Linear) and isinstance(getattr(module, "key", None),
                                                                                  nn.Linear):
            parent = encoder.get_submodule(name.rpartition(".")[0]) if "." in name else encoder
            out = getattr(getattr(parent, "output", None), "dense", None)
            key = module.key
        elif isinstance(getattr(module, "k_lin", None), nn.Linear):
            key, out = module.k_lin, getattr(module, "out_lin", None)
        if key is not None and isinstance(out, nn.Linear):
            sites.append((module, key, out))
    n_layers = getattr(getattr(encoder, "config", None), "num_hidden_layers", None)
    if not sites or (n_layers is not None and len(sites) != n_layers):
        raise ValueError(
            f"Syntax-BERT found {len(sites)} self-attention modules in {type(encoder).__name__} "
            f"(expected one per layer, {n_layers}); supported are encoders with BERT-style "
            "'attention.self' + 'attention.output.dense' (BERT, RoBERTa, ELECTRA, ...) or DistilBERT-style modules")
    return sites


# ---------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------


class _SyntaxBertPreTrainedModel(PreTrainedModel):
    """Shared base of the Syntax-BERT models: config class, weight init, loading from a pretrained encoder."""

    config_class = SyntaxBertConfig
    base_model_prefix = "syntax_bert"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_attention_backend = True

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Hugging Face's default init (normal linears, unit LayerNorms); topical queries at zero (start from the
        average of the non-empty sub-networks). Loaded weights are never re-initialised."""
        super()._init_weights(module)
        if isinstance(module, TopicalAttention):
            init.zeros_(module.query)

    @classmethod
    def from_encoder_pretrained(cls, name_or_path: str, encoder_kwargs: dict[str, Any] | None = None,
                                **config_overrides: Any) -> "_SyntaxBertPreTrainedModel":
        """Build the model around a pretrained encoder: its weights are loaded, the new parts are initialised.

        Args:
            name_or_path: a Hugging Face model name or folder ``AutoModel.from_pretrained`` can load (e.g.
                :func:`syntaxformer.defaults.default_hf_model`).
            encoder_kwargs: extra keyword arguments for ``AutoModel.from_pretrained`` (``dtype``, ``revision`` ...;
                the attention implementation is always ``"syntax"``).
            **config_overrides: :class:`SyntaxBertConfig` options (``num_labels=2``, ``aggregation="sum"`` ...).

        Returns:
            the model in evaluation mode (as ``from_pretrained`` returns models); call ``.train()`` to fine-tune.
        """
        kwargs = dict(encoder_kwargs or {})
        kwargs["attn_implementation"] = SYNTAX_ATTENTION
        encoder = AutoModel.from_pretrained(name_or_path, **kwargs)
        config = SyntaxBertConfig(encoder=encoder.config, **config_overrides)
        model = cls(config, encoder=encoder).to(dtype=encoder.dtype)
        model.eval()
        return model

    def get_input_embeddings(self) -> nn.Module:
        """The wrapped encoder's token embeddings."""
        return self.base_model.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        """Replace the wrapped encoder's token embeddings."""
        self.base_model.encoder.set_input_embeddings(value)


class SyntaxBertModel(_SyntaxBertPreTrainedModel):
    """Syntax-BERT without a task head: a pretrained encoder whose every attention layer runs on sub-networks.

    Args:
        config: the model's :class:`SyntaxBertConfig`.
        encoder: an already built (e.g. pretrained) encoder to wrap; ``None`` builds
            ``AutoModel.from_config(config.encoder)``. It is switched to ``attn_implementation="syntax"``. Its
            pooler, if any, is removed (heads own their poolers; an unused pooler would break DDP).
    """

    def __init__(self, config: SyntaxBertConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        if encoder is None:
            encoder = AutoModel.from_config(config.encoder, attn_implementation=SYNTAX_ATTENTION)
        else:
            self.config.encoder = encoder.config  # one config object, so changes to either are seen by both
        if getattr(encoder, "pooler", None) is not None:
            encoder.pooler = _NoPooler()  # some encoders (LayoutLM) call their pooler unconditionally
        self.encoder = encoder
        sites = attention_sites(encoder)
        for i, (module, _, _) in enumerate(sites):
            module.syntax_layer_idx = i  # the layer's topical query (architectures without layer_idx need it)
        if config.aggregation == "topical":
            self.topical = TopicalAttention(len(sites), sites[0][1].out_features, config.hidden_size)
            self.topical.bind([(key, out) for _, key, out in sites])
        else:
            self.topical = None
        self.post_init()
        self._use_syntax_attention()

    def _use_syntax_attention(self) -> None:
        # The base class dispatches the outer model's implementation to the encoder's config (a sub-config).
        if self.encoder.config._attn_implementation != SYNTAX_ATTENTION:
            self.encoder.config._attn_implementation = SYNTAX_ATTENTION

    def build_groups(self, features: dict[str, torch.Tensor], device: torch.device,
                     input_ids: torch.Tensor | None = None) -> SyntaxGroups:
        """Relation groups of a collated batch, with the configured ablations, ready for every layer.

        Args:
            features: collator keys (``syntax_tree``, ``syntax_segment``, ``dep_*`` and, for the constituency
                partition, ``con_*``), ``[B, L]`` / ``[B, L, D']``.
            device: where to build them (the model's device).
            input_ids: ``[B, L]`` token ids, to seed the random-mask ablation per example.

        Returns:
            :class:`SyntaxGroups` with one int64 ``[B, L, L]`` tensor per tree kind (0 = no sub-network).
        """
        c = self.config
        D = c.max_distance
        missing = [k for k in ("syntax_tree", "syntax_segment") if features.get(k) is None]
        kinds = (["dep"] if c.use_dependency else []) + (["con"] if c.use_constituency else [])
        for kind in kinds:
            missing += [f"{kind}_{n}" for n in (("tin", "tout", "depth") if kind == "dep" else ("key", "depth"))
                        + ("anc_lo", "anc_hi", "anc_head") if features.get(f"{kind}_{n}") is None]
        if missing:
            raise ValueError(f"Syntax-BERT needs the batch keys {missing} (built by "
                             "syntaxformer.data.collate.SyntaxCollator; constituency needs constituency=True), or "
                             "precomputed syntax_groups=...")
        f = {k: v.to(device) for k, v in features.items() if isinstance(v, torch.Tensor)}
        tree, segment = f["syntax_tree"], f["syntax_segment"]
        parts = []
        if c.use_dependency:
            parts.append(relation_groups(f["dep_tin"], f["dep_depth"], f["dep_anc_lo"], f["dep_anc_hi"],
                                         f["dep_anc_head"], tree, segment, D, c.pairwise_masks, key_hi=f["dep_tout"]))
        if c.use_constituency:
            parts.append(relation_groups(f["con_key"], f["con_depth"], f["con_anc_lo"], f["con_anc_hi"],
                                         f["con_anc_head"], tree, segment, D, c.pairwise_masks))
        keep = self._kept_groups(device)
        out = []
        for j, g in enumerate(parts):
            g = g.long()
            if keep is not None:
                g = keep[g]
            if c.random_masks:
                g = _random_groups(g, tree >= 0, input_ids, c.random_masks_seed + 7919 * j)
            out.append(g)
        return prepare_groups(out, c.num_buckets)

    def _kept_groups(self, device: torch.device) -> torch.Tensor | None:
        """Lookup table group id -> itself or 0 for the relation kinds switched off (None if all are kept)."""
        c = self.config
        flags = (c.parent_masks, c.child_masks, c.sibling_masks, c.pairwise_masks)
        if all(flags):
            return None
        D = c.max_distance
        table = torch.arange(c.num_buckets, device=device)
        for kind, on in zip(RELATION_KINDS, flags):
            if not on:
                lo, hi = group_id(kind, 1, D), group_id(kind, D, D)  # the ids of all distances of this kind
                table[lo:hi + 1] = 0
        return table

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        dep_parent: torch.Tensor | None = None,
        syntax_groups: SyntaxGroups | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **features: Any,
    ) -> SyntaxBertModelOutput | tuple[torch.Tensor, ...]:
        """Encode a batch.

        Args:
            input_ids: ``[B, L]`` token ids (or give ``inputs_embeds`` ``[B, L, H]``).
            attention_mask: ``[B, L]`` 1 = real token, 0 = padding (padding is never attended).
            token_type_ids: ``[B, L]`` segment ids, for encoders that use them.
            position_ids: ``[B, L]`` passed to the encoder.
            inputs_embeds: ``[B, L, H]`` passed to the encoder instead of ``input_ids``.
            dep_parent: ``[B, L]`` key position of each token's dependency parent (-1: none), for the LISA loss.
            syntax_groups: precomputed groups (:class:`~syntaxformer.modeling.syntax_attention.SyntaxGroups`);
                default: built from ``features``.
            output_attentions: also return every layer's effective attention ``[B, heads, L, L]``.
            output_hidden_states: also return every layer's hidden states.
            return_dict: return a :class:`SyntaxBertModelOutput` (default) or a tuple.
            **features: the other collator keys: ``syntax_tree``, ``syntax_segment`` ``[B, L]`` (-1 for special
                tokens and padding), ``dep_tin``, ``dep_tout``, ``dep_depth`` ``[B, L]``, ``dep_anc_*``
                ``[B, L, D']``, and with constituency ``con_key``, ``con_depth``, ``con_anc_*``. Other keys
                (``labels`` ...) are ignored, so a collated batch can be passed as ``model(**batch)``.

        Returns:
            :class:`SyntaxBertModelOutput` with ``last_hidden_state`` ``[B, L, H]`` and ``lisa_loss``.
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        self._use_syntax_attention()
        device = self.encoder.get_input_embeddings().weight.device
        uses_syntax = self.config.syntax_layers is None or len(self.config.syntax_layers) > 0
        if syntax_groups is None and uses_syntax:
            syntax_groups = self.build_groups(features, device, input_ids)
        recorder = None
        if self.config.lisa_layer is not None:
            recorder = LisaRecorder(self.config.lisa_layer, self.config.lisa_head)
        enc_inputs = {"attention_mask": attention_mask, "token_type_ids": token_type_ids,
                      "position_ids": position_ids, "inputs_embeds": inputs_embeds}
        enc_inputs = {k: v for k, v in enc_inputs.items() if v is not None}
        if output_attentions:
            enc_inputs["output_attentions"] = True
        if output_hidden_states:
            enc_inputs["output_hidden_states"] = True
        enc = self.encoder(input_ids=input_ids, return_dict=True, syntax_groups=syntax_groups,
                           syntax_options=self.config.attention_options(), syntax_topical=self.topical,
                           syntax_lisa=recorder, **enc_inputs)
        lisa_loss = None
        if recorder is not None and dep_parent is not None:
            lisa_loss = recorder.loss(dep_parent)
        out = SyntaxBertModelOutput(
            last_hidden_state=enc.last_hidden_state,
            lisa_loss=lisa_loss,
            hidden_states=getattr(enc, "hidden_states", None),
            attentions=getattr(enc, "attentions", None),
            lisa_log_probs=None if recorder is None else recorder.log_probs,
        )
        return out if return_dict else out.to_tuple()


class _NoPooler(nn.Module):
    """Stands in for a removed encoder pooler: no parameters, returns ``None``."""

    def forward(self, hidden_states: torch.Tensor) -> None:  # noqa: D102
        return None


def _random_groups(groups: torch.Tensor, valid: torch.Tensor, input_ids: torch.Tensor | None, seed: int
                   ) -> torch.Tensor:
    """Shuffle each example's group ids with a generator seeded by its token ids (fixed per example)."""
    out = torch.empty_like(groups)
    ids = None if input_ids is None else input_ids.detach().cpu()
    for b in range(groups.shape[0]):
        token_seed = 0 if ids is None else zlib.crc32(ids[b][valid[b].cpu()].numpy().tobytes())
        gen = torch.Generator(device=groups.device).manual_seed((seed * 1_000_003 + token_seed + b * (ids is None))
                                                                 % (2 ** 63))
        out[b] = random_like_groups(groups[b:b + 1], valid[b:b + 1], generator=gen)[0]
    return out


class SyntaxBertForSequenceClassification(_SyntaxBertPreTrainedModel):
    """Syntax-BERT with a sequence classification / regression head (GLUE, SST, NLI; §4).

    ``logits = W Dropout(pool(H)) + b`` with the first-token dense+tanh pooler (``pooling="cls"``, initialised from
    the encoder's pooler when it has one) or the mean over non-special tokens (``pooling="mean"``).

    Args:
        config: the model's :class:`SyntaxBertConfig` (``num_labels``, ``problem_type``, ``pooling`` ...).
        encoder: an already built (e.g. pretrained) encoder to wrap; ``None`` builds one from ``config.encoder``.
    """

    def __init__(self, config: SyntaxBertConfig, encoder: PreTrainedModel | None = None):
        super().__init__(config)
        encoder_pooler = getattr(encoder, "pooler", None) if encoder is not None else None
        self.num_labels = config.num_labels
        self.syntax_bert = SyntaxBertModel(config, encoder=encoder)
        self.pooler = FirstTokenPooler(config.hidden_size) if config.pooling == "cls" else None
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()
        self.syntax_bert._use_syntax_attention()
        if self.pooler is not None:
            self.pooler.copy_from(encoder_pooler)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        dep_parent: torch.Tensor | None = None,
        syntax_groups: SyntaxGroups | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **features: Any,
    ) -> SyntaxBertSequenceClassifierOutput | tuple[torch.Tensor, ...]:
        """Classify (or regress on) a batch.

        Args:
            input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, dep_parent, syntax_groups,
                output_attentions, output_hidden_states, **features: as in :meth:`SyntaxBertModel.forward`.
            labels: ``[B]`` class indices (single-label), ``[B]`` / ``[B, 1]`` floats (regression,
                ``num_labels == 1``) or ``[B, num_labels]`` 0/1 floats (multi-label). Loss only when given.
            return_dict: return a :class:`SyntaxBertSequenceClassifierOutput` (default) or a tuple.

        Returns:
            :class:`SyntaxBertSequenceClassifierOutput` with ``logits`` ``[B, num_labels]``, ``loss`` and
            ``lisa_loss``.
        """
        return_dict = self.config.return_dict if return_dict is None else return_dict
        out = self.syntax_bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                               position_ids=position_ids, inputs_embeds=inputs_embeds, dep_parent=dep_parent,
                               syntax_groups=syntax_groups, output_attentions=output_attentions,
                               output_hidden_states=output_hidden_states, return_dict=True, **features)
        h = out.last_hidden_state  # (B, L, H)
        if self.pooler is not None:
            pooled = self.pooler(h)  # (B, H)
        else:
            tree = features.get("syntax_tree")
            if tree is not None:
                keep = tree.to(h.device) >= 0
            elif attention_mask is not None:
                keep = attention_mask.to(h.device) > 0
            else:
                keep = torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)
            pooled = mean_pool(h, keep)  # (B, H)
        logits = self.classifier(self.dropout(pooled))  # (B, num_labels)
        loss = None
        if labels is not None:
            loss = sequence_classification_loss(logits, labels, self.num_labels, self.config.problem_type)
            if out.lisa_loss is not None:
                loss = loss + self.config.lisa_loss_weight * out.lisa_loss
        result = SyntaxBertSequenceClassifierOutput(loss=loss, logits=logits, lisa_loss=out.lisa_loss,
                                                    hidden_states=out.hidden_states, attentions=out.attentions)
        return result if return_dict else result.to_tuple()


register_syntax_attention()
AutoConfig.register(SyntaxBertConfig.model_type, SyntaxBertConfig, exist_ok=True)
AutoModel.register(SyntaxBertConfig, SyntaxBertModel, exist_ok=True)
AutoModelForSequenceClassification.register(SyntaxBertConfig, SyntaxBertForSequenceClassification, exist_ok=True)
