"""Configuration of Syntax-BERT (:class:`SyntaxBertConfig`): one documented ``PretrainedConfig``.

The config holds the wrapped encoder's own config (serialised as a nested dict, rebuilt from its ``model_type``), the
options of the sub-network attention (Bai et al., 2021, §3-4; the ablations of Table 5) and LISA; the task-head
options come from :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`.
"""

from typing import Any, Literal

from huggingface_hub.dataclasses import strict
from transformers import PretrainedConfig

from syntaxformer.errors import ConfigError
from syntaxformer.masks.relations import KINDS, num_groups
from syntaxformer.modeling.configuration_common import SyntaxModelConfig, first_set, ordered_syntax_inputs
from syntaxformer.modeling.syntax_attention_core import Implementation, SyntaxAttentionOptions, check_implementation

RELATION_KINDS: tuple[str, ...] = KINDS
TopicalAggregation = Literal["topical", "sum", "mean"]


@strict
class SyntaxBertConfig(SyntaxModelConfig):
    r"""Configuration of a Syntax-BERT model (:class:`~syntaxformer.modeling.SyntaxBertModel` and its task heads).

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
            masks" = False), named as in the paper (§3.2): *parent* = the query token i is the parent or an
            ancestor of the key j; *child* = j is the parent or an ancestor of i
            (:mod:`syntaxformer.masks.relations`). Configs saved before ``relation_names`` existed used the
            opposite names; they load with their old meaning (the two flags are swapped, see :meth:`from_dict`).
        relation_names: ``"paper"``: marks a config whose ``parent_masks`` / ``child_masks`` follow the paper's
            names (every config written now); a saved config without it is read as the old naming. The pairwise mask links the two texts of a pair (§3.2); it is empty for single texts.
        pairwise: what the pairwise sub-network joins: ``"text"`` (default; pairs of tokens in the two different
            texts of a pair) or ``"sentence"`` (the paper, §3.2: pairs of tokens in different *sentences*, also
            inside one passage; the sentence id is ``syntax_tree``, so ``syntax_segment`` is not read).
        self_group: our extension: the token itself (its own pieces' diagonal entry) as one more sub-network
            (group ``"self"``, id 3D+2, in the first partition only). Rows of special tokens and padding get none,
            so they keep their ``empty_rows`` behaviour. The paper's sub-networks exclude the token itself.
        special_keys: our extension: the special-token keys ([CLS], [SEP], ...: ``syntax_tree == -1``, not
            padding) of every non-special row as one more sub-network (group ``"special"``, id 3D+3, in the first
            partition only). In the paper they are unreachable from the sub-networks.
        random_masks: Table 5 "w/o syntax trees": the group ids of each example are shuffled at random among its
            pairs of words (:func:`~syntaxformer.masks.random.random_like_groups`), so every sub-network keeps its
            size but loses the tree. The shuffle of an example is a fixed function of its token ids and
            ``random_masks_seed``, so it is the same in every epoch and at evaluation.
        random_masks_seed: seed of those shuffles.
        aggregation: ``"topical"`` (Eq. 2-3, the paper's model), ``"sum"`` (Table 5 "w/o topical attention": a
            plain summation of the sub-network outputs) or ``"mean"`` (their average).
        topical_projections: ``"shared"`` (default: the topical score reuses each layer's pretrained key
            projection, ``q · (O_g W_O W_K)``, and the values are the sub-network outputs themselves: 9.2K new
            parameters at BERT-base, the task queries) or ``"own"`` (the paper's Eq. 2: topical attention with its
            own key projection ``W_Kt`` (hidden -> heads * d_head, initialised as a copy of the layer's key
            projection) and value projection ``W_Vt`` (identity at initialisation, applied before the layer's
            output projection) per layer; new parameters ``syntax_bert.topical.key_weight`` / ``value_weight``,
            trained at ``new_params_lr``). Only with ``aggregation="topical"``. At initialisation both give the
            same model.
        full_attention_candidate: also aggregate the vanilla (unmasked) attention as one more sub-network. Default
            False: the paper counts M = 90 (92 for pairs) possible sub-networks, all syntactic (§4); per token
            only the non-empty ones are candidates (16.1 on average, at most 44, on STS-B dev).
        empty_rows: rows with no non-empty sub-network ([CLS], [SEP], padding, one-word sentences): ``"full"``
            (default) attend to all non-padding tokens as in the pretrained layer, so a first-token classifier still
            sees the sentence; ``"self"`` attend to themselves only.
        gate: ``"none"`` (default: the paper read literally, each syntax layer attends only within sub-networks),
            ``"layer"`` or ``"head"``: our extension, a zero-initialised scalar ``g`` per layer / per (layer, head)
            with ``ctx = P_full V + g (Σ_g α_g O_g - P_full V)``. At ``g = 0`` the model *is* the pretrained
            encoder (the literal form starts far from it: token cosine ~0.57 to the plain encoder on MiniLM, see
            ``syntaxformer diagnose``); the gates are new parameters (``syntax_bert.gate.weight``, trained at
            ``new_params_lr``). The paper claims to "retain the pre-trained knowledge" but gives no mechanism.
        syntax_layers: indices of the layers that use sub-networks; ``None`` = every layer (the paper). Other
            layers run their ordinary attention (e.g. ``[]`` for a LISA-only baseline).
        implementation: ``"fast"`` (default), ``"exact"``, ``"triton"`` (fused Triton kernels; CUDA, no attention
            dropout) or ``"auto"`` (the table :data:`syntaxformer.modeling.syntax_attention.AUTO`); see
            ``docs/syntax_bert.md``. A saved config with the removed ``"flex"`` is refused, naming these.
        lisa_layer: LISA (Strubell et al., 2018; Syntax-BERT §4 "+ LISA"): index of the layer whose head
            ``lisa_head`` is trained to attend to each token's dependency parent (``None`` = no LISA). That head
            attends to all non-padding tokens (it is not split into sub-networks); the model returns the
            cross-entropy of its attention rows against ``dep_parent`` as ``lisa_loss`` and adds
            ``lisa_loss_weight * lisa_loss`` to the task loss. The head keeps the pretrained dot-product attention
            (the original LISA uses a bi-affine head trained from scratch).
        lisa_head: head index of the LISA head.
        lisa_head_mode: ``"existing"`` (default): head ``lisa_head`` of the pretrained layer is the LISA head (taken
            out of the sub-networks). ``"added"`` (LISA and the paper's "+ LISA" add a head): a new head with its
            own query / key projections (initialised as copies of head ``lisa_head``'s) is supervised by the LISA
            loss, every pretrained head stays as it is, and the new head's attention enters the layer as
            ``ctx_h += m_h P_a V_h`` with zero-initialised mixing weights ``m`` (new parameters
            ``syntax_bert.lisa.*``, trained at ``new_params_lr``); see
            :class:`~syntaxformer.modeling.syntax_attention_core.AddedLisaHead`. Ignored without ``lisa_layer``.
        lisa_loss_weight: weight of the LISA loss in the total loss.
        classifier_dropout: dropout before the heads' output layers; default the encoder's ``classifier_dropout``
            if set, else its hidden dropout.
        pooling, initializer_range, num_labels, problem_type, qa_verifier, verifier_loss_weight, span_loss_weight,
            verifier_beta1, verifier_beta2: the task-head options shared by every system, see
            :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`.

    The batch keys the model reads are :attr:`syntax_inputs`; the LISA loss is added to the loss of every head.

    Example::

        >>> from transformers import BertConfig
        >>> config = SyntaxBertConfig(encoder=BertConfig(hidden_size=32, num_hidden_layers=2,
        ...                           num_attention_heads=4, intermediate_size=37), num_labels=3)
        >>> config.max_distance, config.use_dependency, config.use_constituency, config.aggregation
        (15, True, True, 'topical')
    """

    model_type = "syntax_bert"

    encoder: PretrainedConfig | dict | None = None
    max_distance: int = 15
    use_dependency: bool = True
    use_constituency: bool = True
    parent_masks: bool = True
    child_masks: bool = True
    sibling_masks: bool = True
    pairwise_masks: bool = True
    pairwise: Literal["text", "sentence"] = "text"
    self_group: bool = False
    special_keys: bool = False
    relation_names: Literal["paper"] = "paper"
    random_masks: bool = False
    random_masks_seed: int = 0
    aggregation: TopicalAggregation = "topical"
    topical_projections: Literal["shared", "own"] = "shared"
    full_attention_candidate: bool = False
    empty_rows: Literal["full", "self"] = "full"
    gate: Literal["none", "layer", "head"] = "none"
    syntax_layers: list[int] | None = None
    implementation: Implementation = "fast"
    lisa_layer: int | None = None
    lisa_head: int = 0
    lisa_head_mode: Literal["existing", "added"] = "existing"
    lisa_loss_weight: float | int = 1.0

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """As ``PretrainedConfig.from_dict``. A config saved before the relations were named as in the paper (no
        ``relation_names`` key) had ``parent_masks`` for what the paper calls the child relation and vice versa:
        the two flags are swapped so that the model keeps the sub-networks it was trained with."""
        if config_dict.get("model_type", cls.model_type) == cls.model_type and "relation_names" not in config_dict:
            config_dict = {
                **config_dict,
                "relation_names": "paper",
                "parent_masks": config_dict.get("child_masks", True),
                "child_masks": config_dict.get("parent_masks", True),
            }
        check_implementation(config_dict.get("implementation", "fast"), cls.__name__)
        return super().from_dict(config_dict, **kwargs)

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        enc = self._encoder
        self.lisa_loss_weight = float(self.lisa_loss_weight)
        if self.syntax_layers is not None:
            self.syntax_layers = [int(x) for x in self.syntax_layers]
        self.resolve_head_defaults(
            dropout_fallback=first_set(enc, ("hidden_dropout_prob", "hidden_dropout", "dropout"), 0.1)
        )

    # -- validators (run by ``@strict`` after ``__post_init__``) -------------------------------------------------
    def validate_syntax_options(self) -> None:
        """D in 1..84 (uint8 group ids), at least one tree, LISA head and layers inside the encoder."""
        if not 1 <= self.max_distance <= 84:
            raise ConfigError(f"SyntaxBertConfig.max_distance must be in 1..84 (paper: 15), got {self.max_distance}")
        if not (self.use_dependency or self.use_constituency):
            raise ConfigError(
                "SyntaxBertConfig: use_dependency and use_constituency are both False; keep at least one "
                "tree (or set syntax_layers=[] for a model without sub-networks)"
            )
        if self.topical_projections == "own" and self.aggregation != "topical":
            raise ConfigError(
                f"SyntaxBertConfig.topical_projections='own' needs aggregation='topical' (got "
                f"{self.aggregation!r}); use topical_projections='shared' without topical attention"
            )
        n_layers, n_heads = self.num_hidden_layers, self.num_attention_heads
        for name, layers in (
            ("syntax_layers", self.syntax_layers or []),
            ("lisa_layer", [] if self.lisa_layer is None else [self.lisa_layer]),
        ):
            bad = [x for x in layers if not 0 <= x < n_layers]
            if bad:
                raise ConfigError(f"SyntaxBertConfig.{name}={bad} is outside the encoder's layers 0..{n_layers - 1}")
        if not 0 <= self.lisa_head < n_heads:
            raise ConfigError(
                f"SyntaxBertConfig.lisa_head={self.lisa_head} is outside the encoder's heads 0..{n_heads - 1}"
            )

    def attention_options(self) -> SyntaxAttentionOptions:
        """The options every layer's ``"syntax"`` attention runs with."""
        return SyntaxAttentionOptions(
            aggregation=self.aggregation,
            empty_rows=self.empty_rows,
            full_attention_candidate=self.full_attention_candidate,
            layers=None if self.syntax_layers is None else tuple(self.syntax_layers),
            implementation=self.implementation,
            lisa_layer=self.lisa_layer,
            lisa_head=self.lisa_head,
        )

    @property
    def uses_groups(self) -> bool:
        """True when at least one layer attends within sub-networks (``syntax_layers`` is ``None`` or non-empty)."""
        return self.syntax_layers is None or len(self.syntax_layers) > 0

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax batch keys Syntax-BERT reads with these options.

        With sub-networks (:attr:`uses_groups`): ``syntax_tree``, ``syntax_segment`` (not with
        ``pairwise="sentence"``) and, per tree used, what its
        relation groups are built from (dependency: ``dep_tin``, ``dep_tout``, ``dep_depth``, ``dep_anc_lo``,
        ``dep_anc_hi``, ``dep_anc_head``; constituency: ``con_key``, ``con_depth``, ``con_anc_*``; the ancestor
        tables are ``[L, D]`` with D >= :attr:`max_distance`); ``dep_parent`` with LISA; ``syntax_tree`` for
        ``pooling="mean"``. A model without sub-networks, LISA or mean pooling reads none: ``()``.
        """
        keys: set[str] = set(self.mean_pooling_inputs())
        if self.uses_groups:
            keys |= {"syntax_tree"} if self.pairwise == "sentence" else {"syntax_tree", "syntax_segment"}
            if self.use_dependency:
                keys |= {"dep_tin", "dep_tout", "dep_depth", "dep_anc_lo", "dep_anc_hi", "dep_anc_head"}
            if self.use_constituency:
                keys |= {"con_key", "con_depth", "con_anc_lo", "con_anc_hi", "con_anc_head"}
        if self.lisa_layer is not None:
            keys.add("dep_parent")
        return ordered_syntax_inputs(keys)

    @property
    def num_buckets(self) -> int:
        """Size of the per-group tables of one partition: group ids 0..3D+1, and 3D+2 (``self_group``) /
        3D+3 (``special_keys``) when those are on."""
        extra = 2 if self.special_keys else 1 if self.self_group else 0
        return num_groups(self.max_distance, pairwise=True) + 1 + extra
