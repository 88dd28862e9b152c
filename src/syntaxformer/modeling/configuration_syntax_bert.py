"""Configuration of Syntax-BERT (:class:`SyntaxBertConfig`): one documented ``PretrainedConfig``.

The config holds the wrapped encoder's own config (serialised as a nested dict, rebuilt from its ``model_type``), the
options of the sub-network attention (Bai et al., 2021, §3-4; the ablations of Table 5) and LISA; the task-head
options come from :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`.
"""

from typing import Any, Literal

from huggingface_hub.dataclasses import strict
from transformers import PretrainedConfig

from syntaxformer.errors import ConfigError
from syntaxformer.masks.relations import num_groups
from syntaxformer.modeling.configuration_common import SyntaxModelConfig, first_set, ordered_syntax_inputs
from syntaxformer.modeling.syntax_attention_core import Implementation, SyntaxAttentionOptions, check_implementation

TopicalAggregation = Literal["topical", "sum", "mean"]


@strict
class SyntaxBertConfig(SyntaxModelConfig):
    r"""Configuration of a Syntax-BERT model (:class:`~syntaxformer.modeling.SyntaxBertModel` and its task heads):
    a pretrained encoder whose every self-attention head attends within *sub-networks* (tree relations at distance
    1..D, §3.2) that share its weights, mixed per token by *topical attention* (§3.3, Eq. 2-3). What each option
    does and why, with the paper's Table 5 ablations: ``docs/syntax_bert.md``.

    Args:
        encoder: config of the wrapped encoder (a ``PretrainedConfig``, or a dict with ``model_type``): an
            architecture whose attention goes through ``AttentionInterface`` (BERT, RoBERTa, ELECTRA, DistilBERT,
            ...). Default: a ``BertConfig()``.
        max_distance: D, the largest tree distance of a relation (§4: 15); at most the collator's ``max_distance``.
        use_dependency, use_constituency: use the dependency / constituency partition (Table 5 "w/o ... trees").
        parent_masks, child_masks, sibling_masks, pairwise_masks: keep these relation kinds (Table 5 "w/o ...
            masks"), named as in the paper (*parent*: the query token is the parent or an ancestor of the key).
        relation_names: ``"paper"``; a saved config without it used the opposite names for parent and child and
            loads with the two flags swapped (:meth:`from_dict`).
        pairwise: ``"text"`` (the pairwise mask joins the two texts of a pair) or ``"sentence"`` (the paper, §3.2:
            different sentences, read from ``syntax_tree``).
        self_group: our extension: the token itself as one more sub-network (id 3D+2, first partition).
        special_keys: our extension: the special-token keys of every word row as one more sub-network (id 3D+3).
        random_masks: Table 5 "w/o syntax trees": each example's group ids shuffled among its pairs of words, a fixed
            function of its token ids and ``random_masks_seed``.
        random_masks_seed: seed of those shuffles.
        aggregation: ``"topical"`` (Eq. 2-3), ``"sum"`` (Table 5 "w/o topical attention") or ``"mean"``.
        topical_projections: ``"shared"`` (the layer's pretrained ``W_K``, no ``W^V``; only the task queries are
            new) or ``"own"`` (the paper's own ``W_Kt`` / ``W_Vt`` per layer); the same model at initialisation.
        full_attention_candidate: also aggregate the vanilla attention as one more sub-network (the paper: no).
        empty_rows: rows with no non-empty sub-network: ``"full"`` (attend as the pretrained layer) or ``"self"``.
        gate: ``"none"`` (the paper, literal), ``"layer"`` or ``"head"``: our zero-initialised gate
            ``ctx = P_full V + g (Σ_g α_g O_g - P_full V)``, so the model starts as the pretrained encoder.
        syntax_layers: indices of the layers with sub-networks (``None`` = all, the paper; ``[]`` = none).
        implementation: ``"fast"`` (default), ``"exact"``, ``"triton"`` (CUDA, no attention dropout) or ``"auto"``
            (:data:`syntaxformer.modeling.syntax_attention.AUTO`); a saved ``"flex"`` is refused, naming these.
        lisa_layer: LISA (Strubell et al., 2018; the paper's "+ LISA"): the layer whose head ``lisa_head`` is
            trained to attend to each token's dependency parent (``None`` = no LISA); ``lisa_loss_weight *
            lisa_loss`` is added to the task loss.
        lisa_head: head index of the LISA head.
        lisa_head_mode: ``"existing"`` (that pretrained head, taken out of the sub-networks) or ``"added"`` (a new
            head, :class:`~syntaxformer.modeling.syntax_attention_core.AddedLisaHead`).
        lisa_loss_weight: weight of the LISA loss in the total loss.
        classifier_dropout, pooling, initializer_range, num_labels, problem_type, qa_verifier,
            verifier_loss_weight, span_loss_weight, verifier_beta1, verifier_beta2: the task-head options of every
            system (:class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`).

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
    def group_inputs(self) -> tuple[str, ...]:
        """The batch keys the relation groups are built from: ``syntax_tree``, ``syntax_segment`` (not with
        ``pairwise="sentence"``) and per tree used its node keys, depths and ``[L, D]`` ancestor tables
        (D >= :attr:`max_distance`)."""
        keys: tuple[str, ...] = ("syntax_tree",) if self.pairwise == "sentence" else ("syntax_tree", "syntax_segment")
        if self.use_dependency:
            keys += ("dep_tin", "dep_tout", "dep_depth", "dep_anc_lo", "dep_anc_hi", "dep_anc_head")
        if self.use_constituency:
            keys += ("con_key", "con_depth", "con_anc_lo", "con_anc_hi", "con_anc_head")
        return keys

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax batch keys Syntax-BERT reads with these options: :attr:`group_inputs` with sub-networks
        (:attr:`uses_groups`), ``dep_parent`` with LISA, ``syntax_tree`` for ``pooling="mean"``; else ``()``."""
        keys = set(self.mean_pooling_inputs()) | set(self.group_inputs if self.uses_groups else ())
        if self.lisa_layer is not None:
            keys.add("dep_parent")
        return ordered_syntax_inputs(keys)

    @property
    def num_buckets(self) -> int:
        """Size of the per-group tables of one partition: group ids 0..3D+1, and 3D+2 (``self_group``) /
        3D+3 (``special_keys``) when those are on."""
        extra = 2 if self.special_keys else 1 if self.self_group else 0
        return num_groups(self.max_distance, pairwise=True) + 1 + extra
