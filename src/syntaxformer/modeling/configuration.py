"""The configurations of the built-in systems, one documented ``PretrainedConfig`` each, and what they share.

:class:`PlainEncoderConfig`, :class:`SGNetConfig` and :class:`SyntaxBertConfig` derive from
:class:`SyntaxModelConfig`: the wrapped encoder's config, its flat views, the task-head options (declared once for
every system) and the batch keys a model reads (:attr:`SyntaxModelConfig.syntax_inputs`).

A model's ``forward`` takes its syntax tensors as keyword arguments named like the batch keys
(:data:`SYNTAX_INPUT_KEYS`), so ``model(**batch)`` works (:func:`check_forward_inputs`,
:func:`syntax_forward_signature`).
"""

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, cast, get_args

import torch
from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PretrainedConfig

from syntaxformer.data.collate import CONSTITUENCY_KEYS, DEPENDENCY_KEYS
from syntaxformer.data.sentence import on_demand
from syntaxformer.errors import ConfigError, InputError
from syntaxformer.masks.relations import num_groups
from syntaxformer.modeling.raw_text import LABEL_KEYS
from syntaxformer.modeling.syntax_attention_core import Implementation, SyntaxAttentionOptions, check_implementation

#: Ways to build the sentence representation of sequence-level heads (see :class:`SyntaxModelConfig`).
Pooling = Literal["cls", "mean"]


def _encoder_view(name: str, doc: str) -> Any:
    """A property that reads and writes ``self.encoder.<name>``."""
    return property(
        lambda self: getattr(self._encoder, name), lambda self, value: setattr(self._encoder, name, value), doc=doc
    )


class EncoderViewsMixin:
    """Flat views of a wrapper config's ``encoder`` sub-config (``hidden_size``, ``num_attention_heads``,
    ``num_hidden_layers``, ``vocab_size``), for code that expects a plain text config (e.g.
    ``resize_token_embeddings``)."""

    # The constructor takes a config, a dict or None; ``__post_init__`` makes a config of it (:func:`sub_config`).
    encoder: PretrainedConfig | dict | None

    @property
    def _encoder(self) -> PretrainedConfig:
        """``encoder`` as ``__post_init__`` left it: always a config (a type checker cannot know that)."""
        return cast(PretrainedConfig, self.encoder)

    hidden_size = _encoder_view("hidden_size", "The encoder's hidden size (every head reads states of this size).")
    num_attention_heads = _encoder_view("num_attention_heads", "The encoder's number of attention heads.")
    num_hidden_layers = _encoder_view(
        "num_hidden_layers", "The encoder's number of layers (an extra syntax layer is not counted)."
    )
    vocab_size = _encoder_view("vocab_size", "The encoder's vocabulary size.")


_T = TypeVar("_T")


def filled(value: _T | None) -> _T:
    """A config option that ``__post_init__`` fills in when it is left at ``None``, typed without the ``None``."""
    assert value is not None, "a config option read before __post_init__ filled it in"
    return value


def first_set(config: PretrainedConfig, names: tuple[str, ...], default: Any) -> Any:
    """The first attribute of ``config`` among ``names`` that is set (not ``None``, not a bool), else ``default``."""
    for name in names:
        value = getattr(config, name, None)
        if value is not None and not isinstance(value, bool):
            return value
    return default


#: The encoder config attributes that may hold its hidden dropout, first set first (BERT, DistilBERT, BART ...).
HIDDEN_DROPOUT: tuple[str, ...] = ("hidden_dropout_prob", "hidden_dropout", "dropout")

#: Every batch key a syntax model may read, in the order :attr:`SyntaxModelConfig.syntax_inputs` lists them.
SYNTAX_INPUT_KEYS: tuple[str, ...] = DEPENDENCY_KEYS + CONSTITUENCY_KEYS + ("pos_ids",)


def ordered_syntax_inputs(keys: set[str]) -> tuple[str, ...]:
    """``keys`` (each one of :data:`SYNTAX_INPUT_KEYS`) in the order of :data:`SYNTAX_INPUT_KEYS`."""
    unknown = keys - set(SYNTAX_INPUT_KEYS)
    if unknown:
        raise ConfigError(f"unknown syntax inputs {sorted(unknown)}; known are {SYNTAX_INPUT_KEYS}")
    return tuple(k for k in SYNTAX_INPUT_KEYS if k in keys)


def sub_config(
    value: PretrainedConfig | dict | None, default_model_type: str, name: str, defaults: dict[str, Any] | None = None
) -> PretrainedConfig:
    """A wrapped model's config (a *sub-config*) from what a composite config was given (transformers'
    ``SubConfigSpec`` exists only from 5.20 on).

    Args:
        value: a ``PretrainedConfig`` (kept as it is), a dict as ``config.json`` stores it (rebuilt by its
            ``model_type``, else ``default_model_type``) or ``None`` (the default config of ``default_model_type``,
            with ``defaults``).
        name: the option's name, for the error message.

    Raises:
        ConfigError: the dict names a ``model_type`` transformers does not know.
    """
    if isinstance(value, PretrainedConfig):
        return value
    values = dict(defaults or {}) if value is None else dict(value)
    model_type = values.pop("model_type", None) or default_model_type
    try:
        return AutoConfig.for_model(model_type, **values)
    except ValueError as e:
        raise ConfigError(
            f"{name} config has model_type {model_type!r}, which this transformers does not know; "
            f"give the model type of an installed architecture (e.g. {default_model_type!r})"
        ) from e


@strict
class SyntaxModelConfig(EncoderViewsMixin, PretrainedConfig):
    r"""Base of the systems' configs: the task-head options every system accepts. Subclasses add their own options,
    call :meth:`resolve_head_defaults` from ``__post_init__`` and implement :attr:`syntax_inputs`.

    Args:
        pooling: sentence representation for sequence-level heads and the QA answer verifier: ``"cls"`` (default;
            the first token through a dense+tanh pooler, initialised from the encoder's pooler when it has one;
            SG-Net §3.4.2, BERT) or ``"mean"`` (the mean over non-special tokens: ``syntax_tree >= 0``, else
            ``attention_mask``).
        classifier_dropout: dropout before every head's output layer; default the encoder's ``classifier_dropout``
            if set, else the system's hidden dropout (BERT's convention).
        initializer_range: std of the normal init of new weights (heads, poolers); default the encoder's (0.02 if
            it has none).
        qa_verifier: span QA only: add the answer verifier, an answerability classifier on the first token
            (SG-Net §3.4.1, Eq. 13-14; see :class:`~syntaxformer.modeling.heads.QuestionAnsweringHead`).
        verifier_loss_weight, span_loss_weight: weights of the verifier's cross-entropy and of the span loss in the
            QA loss (default 1.0 each); ``span_loss_weight=0`` trains the verifier alone (the paper's *parallel*
            verifier; needs ``qa_verifier=True``).
        verifier_beta1, verifier_beta2: the weights β1 (span score difference) and β2 (verifier score) of Eq. 14,
            used when decoding answers (default 1.0, 1.0).
        num_labels, problem_type: as in ``PretrainedConfig`` (sequence and token classification; regression when
            ``num_labels == 1``).
    """

    # The wrapped encoder (BERT by default), built in ``__post_init__`` by :func:`sub_config`.
    sub_configs: ClassVar[dict[str, Any]] = {"encoder": AutoConfig}
    #: Keep the attention implementation a given encoder config carries (``PretrainedConfig.__post_init__`` would
    #: reset it on every sub-config, e.g. sdpa -> eager). Syntax-BERT does not: its model sets ``"syntax"`` itself.
    keeps_encoder_attn_implementation: ClassVar[bool] = False
    #: Older ``model_type`` spellings -> the model type they load as (the system's
    #: :class:`~syntaxformer.registry.SystemSpec` ``aliases``, set here by the registry).
    older_model_types: ClassVar[dict[str, str]] = {}

    pooling: Pooling = "cls"
    classifier_dropout: float | int | None = None
    initializer_range: float | int | None = None
    qa_verifier: bool = False
    verifier_loss_weight: float | int = 1.0
    span_loss_weight: float | int = 1.0
    verifier_beta1: float | int = 1.0
    verifier_beta2: float | int = 1.0

    def __post_init__(self, **kwargs: Any) -> None:
        enc_attn = None
        if self.keeps_encoder_attn_implementation:
            enc_attn = getattr(self.encoder, "_attn_implementation_internal", None)
        self.encoder = sub_config(self.encoder, "bert", "encoder")
        super().__post_init__(**kwargs)
        if enc_attn is not None and kwargs.get("attn_implementation") is None:
            self._encoder._attn_implementation_internal = enc_attn

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """``PretrainedConfig.from_dict``; a config saved under an older ``model_type`` of this system
        (:attr:`older_model_types`, e.g. ``"syntaxformer"`` for SG-Net) is read as one of this class's own."""
        if cls.older_model_types.get(config_dict.get("model_type", "")) == cls.model_type:
            config_dict = {**config_dict, "model_type": cls.model_type}
        return super().from_dict(config_dict, **kwargs)

    def resolve_head_defaults(self, dropout_fallback: float | None = None) -> None:
        """Fill the head options left at ``None`` from the encoder (``dropout_fallback``: ``classifier_dropout`` when
        the encoder sets none; default the encoder's hidden dropout, else 0.1) and turn the weights into floats."""
        enc = self._encoder
        if self.classifier_dropout is None:
            fallback = first_set(enc, HIDDEN_DROPOUT, 0.1) if dropout_fallback is None else dropout_fallback
            self.classifier_dropout = float(first_set(enc, ("classifier_dropout",), fallback))
        if self.initializer_range is None:
            self.initializer_range = float(first_set(enc, ("initializer_range",), 0.02))
        for name in ("verifier_loss_weight", "span_loss_weight", "verifier_beta1", "verifier_beta2"):
            setattr(self, name, float(getattr(self, name)))

    # -- validators (run by ``@strict`` after ``__post_init__``) -------------------------------------------------
    def validate_task_head_options(self) -> None:
        """Dropout in [0, 1); QA loss weights non-negative (runs after the system's own validators, which are
        named so that they sort first: a bad ``sg_dropout`` is reported as such, not as the classifier dropout
        derived from it)."""
        name = type(self).__name__
        if not 0.0 <= filled(self.classifier_dropout) < 1.0:
            raise ConfigError(f"{name}.classifier_dropout must lie in [0, 1), got {self.classifier_dropout}")
        for option in ("verifier_loss_weight", "span_loss_weight"):
            if getattr(self, option) < 0:
                raise ConfigError(f"{name}.{option} must be >= 0, got {getattr(self, option)}")

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax batch keys the model reads with its options (:data:`SYNTAX_INPUT_KEYS`); featurization needs to
        produce only these (besides ``input_ids``, ``attention_mask``, ``token_type_ids`` and the labels)."""
        # for authors of a new model config (a programming error, not user input): every subclass overrides it
        raise NotImplementedError(f"{type(self).__name__} does not declare its syntax_inputs")

    def mean_pooling_inputs(self) -> tuple[str, ...]:
        """``("syntax_tree",)`` when ``pooling="mean"`` (it marks the special tokens to leave out), else ``()``."""
        return ("syntax_tree",) if self.pooling == "mean" else ()


#: Keyword arguments the ``transformers`` machinery may pass that the syntax models accept and ignore.
TOLERATED_KEYWORDS: frozenset[str] = frozenset({"num_items_in_batch"})

F = TypeVar("F", bound=Callable[..., Any])

_SYNTAX_KEYS_DESCRIPTION = (
    "the syntax batch keys (syntax_tree, dep_tin, ...: syntaxformer.modeling.configuration.SYNTAX_INPUT_KEYS)"
)


def syntax_forward_signature(forward: F) -> F:
    """Decorator: the signature of ``forward`` with its ``**kwargs`` replaced by one keyword-only parameter (default
    ``None``) per syntax batch key (:data:`SYNTAX_INPUT_KEYS`) it does not already name. Only what
    ``inspect.signature`` reports (what ``transformers.Trainer`` reads to keep columns) changes, not the function."""
    signature = inspect.signature(forward)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    named = {p.name for p in params}
    params += [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=torch.Tensor | None)
        for k in SYNTAX_INPUT_KEYS
        if k not in named
    ]
    forward.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return forward


def check_forward_inputs(
    model: Any,
    extra: Mapping[str, Any],
    accepted: Iterable[str] = SYNTAX_INPUT_KEYS,
    accepted_description: str = _SYNTAX_KEYS_DESCRIPTION,
) -> None:
    """Raise if ``extra`` (the ``**kwargs`` ``model.forward`` received) has a key that is not a syntax input.

    Args:
        accepted, accepted_description: the extra keys it accepts (default: every syntax batch key;
            :data:`TOLERATED_KEYWORDS` always) and how the message names them.

    Raises:
        InputError: naming the unknown keys, the accepted ones, and what to do about the usual causes.
    """
    allowed = set(accepted) | TOLERATED_KEYWORDS
    unknown = sorted(k for k in extra if k not in allowed)
    if not unknown:
        return
    name = type(model).__name__
    params = [
        p for p in inspect.signature(type(model).forward).parameters if p != "self" and p not in SYNTAX_INPUT_KEYS
    ]
    hint = ""
    if "label" in unknown or "label_ids" in unknown:
        hint = " (the label key is 'labels': SyntaxCollator renames 'label' and 'label_ids' to it)"
    elif any(k in unknown for k in LABEL_KEYS) and not any(k in params for k in LABEL_KEYS):
        hint = " (labels are read by the task models, SGNetFor... / SyntaxBertFor..., not by a backbone)"
    raise InputError(
        f"{name}.forward got unexpected keyword arguments {unknown}{hint}; it accepts {params} and "
        f"{accepted_description}. Remove the other columns from the batch (e.g. a data set's text columns: "
        "ds.remove_columns([...]))"
    )


@strict
class PlainEncoderConfig(SyntaxModelConfig):
    r"""Configuration of the plain-encoder baseline (:class:`~syntaxformer.modeling.PlainEncoderModel` and its task
    heads): what SG-Net is without its syntax-guided layer (same heads, same pooling, no new parameters besides the
    head's), so a comparison with a syntax system differs only by the syntax.

    Args:
        encoder: config of the wrapped encoder (as :class:`SGNetConfig`'s).
        pooling: default ``"mean"``, as SG-Net's (it reads ``syntax_tree`` only to find the special tokens).
        classifier_dropout, qa_verifier, ...: the task-head options of :class:`SyntaxModelConfig`.

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
        self.resolve_head_defaults()

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """``("syntax_tree",)`` for mean pooling (it marks the special tokens), else ``()``: nothing is parsed."""
        return self.mean_pooling_inputs()


#: Ways to combine the encoder output H and the syntax-guided output H' (see :class:`SGNetConfig`).
Aggregation = Literal["dual", "syntax_only", "concat", "vanilla_layer", "biattention"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)


@strict
class SGNetConfig(SyntaxModelConfig):
    r"""Configuration of an SG-Net model (:class:`~syntaxformer.modeling.SGNetModel` and its task heads): a
    pretrained encoder whose last hidden states H feed one extra *syntax-guided* self-attention layer under the SDOI
    mask (Zhang et al., TPAMI §3.2, Eq. 6-8), its output H' combined with H into the H̄ the heads read (§3.3). What
    each option does and why, with the paper's Table 6 ablations: ``docs/sgnet.md``. Options left at ``None`` take
    the encoder's value when the config is built, so a saved config holds concrete numbers.

    Args:
        encoder: config of the wrapped encoder (a ``PretrainedConfig``, or a dict with ``model_type``; any
            architecture ``AutoModel`` can build). Default: a ``BertConfig()``.
        use_sg_layer: add the syntax-guided layer (default ``True``); ``False`` is the plain-encoder baseline.
        alpha: weight of H in the dual aggregation ``alpha * H + (1 - alpha) * H'`` (Eq. 9; paper: 0.5), in [0, 1].
        alpha_mode: ``"fixed"`` (the paper) or ``"learned"`` (``sigmoid(a)``, ``a`` initialised at ``logit(alpha)``);
            ``aggregation="dual"`` only.
        sg_init: ``"random"`` (the official code) or ``"copy_last"``: a copy of the encoder's last layer (a BERT-like
            encoder, ``encoder.layer[i]``; ``sg_num_heads`` / ``sg_intermediate_size`` equal to the encoder's).
        aggregation: H̄ from H and H' (Table 6): ``"dual"`` (Eq. 9, default), ``"syntax_only"`` (H'),
            ``"vanilla_layer"`` (H' of the layer without the SDOI mask: the capacity control), ``"concat"``
            (``[H; H'] W + b``, initialised as dual) or ``"biattention"`` (``LayerNorm(H + MultiHead(Q=H, K=H',
            V=H'))``, our reading of the paper's row).
        sg_num_heads, sg_intermediate_size, sg_hidden_act: heads (also of the bi-attention), feed-forward size and
            activation of the layer; default the encoder's (4 x hidden, GELU when it has none).
        sg_dropout, sg_attention_dropout, sg_layer_norm_eps: the layer's hidden and attention dropout and LayerNorm
            epsilon; default the encoder's.
        pooling: default ``"mean"``, our deviation from the paper's ``"cls"``: under the SDOI mask [CLS] attends only
            to itself, so with ``"cls"`` no syntax reaches a sequence-level head and W_Q / W_K get no gradient.
        mask_special_in_aggregation: footnote 11: special tokens (``syntax_tree < 0``) take H only (``H̄_i = H_i``),
            for every aggregation. Default ``False``.
        classifier_dropout: default the encoder's ``classifier_dropout``, else ``sg_dropout``.
        pos_embeddings: BERT+POS (Sundararaman et al.): ``"upos"`` or ``"xpos"`` adds a trainable, zero-initialised
            POS embedding to the token embeddings; the batch then needs ``pos_ids`` ``[B, L]``
            (:mod:`syntaxformer.data.subword_features`). ``None`` (default): none.
        pos_vocab_size: rows of the POS table; default the tag set's
            (:func:`syntaxformer.data.subword_features.feature_vocab_size`).
        initializer_range, qa_verifier, ...: the task-head options of :class:`SyntaxModelConfig`.

    Example::

        >>> from transformers import BertConfig
        >>> config = SGNetConfig(encoder=BertConfig(hidden_size=32, num_hidden_layers=2,
        ...                       num_attention_heads=4, intermediate_size=37), num_labels=3)
        >>> config.sg_num_heads, config.alpha, config.aggregation
        (4, 0.5, 'dual')
    """

    model_type = "sgnet"
    #: The encoder runs with the attention implementation it was loaded with (not reset by ``__post_init__``).
    keeps_encoder_attn_implementation = True

    encoder: PretrainedConfig | dict | None = None
    pooling: Pooling = "mean"
    use_sg_layer: bool = True
    alpha: float | int = 0.5
    alpha_mode: Literal["fixed", "learned"] = "fixed"
    sg_init: Literal["random", "copy_last"] = "random"
    aggregation: Aggregation = "dual"
    sg_num_heads: int | None = None
    sg_intermediate_size: int | None = None
    sg_hidden_act: str | None = None
    sg_dropout: float | int | None = None
    sg_attention_dropout: float | int | None = None
    sg_layer_norm_eps: float | int | None = None
    mask_special_in_aggregation: bool = False
    pos_embeddings: Literal["upos", "xpos"] | None = None
    pos_vocab_size: int | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        enc = self._encoder
        self.alpha = float(self.alpha)
        hidden = enc.hidden_size
        if self.sg_num_heads is None:
            self.sg_num_heads = int(enc.num_attention_heads)
        if self.sg_intermediate_size is None:
            self.sg_intermediate_size = int(getattr(enc, "intermediate_size", None) or 4 * hidden)
        if self.sg_hidden_act is None:
            act = getattr(enc, "hidden_act", None)
            self.sg_hidden_act = act if isinstance(act, str) else "gelu"
        if self.sg_dropout is None:
            self.sg_dropout = float(first_set(enc, HIDDEN_DROPOUT, 0.1))
        if self.sg_attention_dropout is None:
            self.sg_attention_dropout = float(
                first_set(enc, ("attention_probs_dropout_prob", "attention_dropout"), self.sg_dropout)
            )
        if self.sg_layer_norm_eps is None:
            self.sg_layer_norm_eps = float(first_set(enc, ("layer_norm_eps", "layer_norm_epsilon"), 1e-12))
        self.resolve_head_defaults(dropout_fallback=self.sg_dropout)
        if self.pos_embeddings is not None and self.pos_vocab_size is None:
            self.pos_vocab_size = on_demand("subword_features").feature_vocab_size(self.pos_embeddings)

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax batch keys SG-Net reads with these options (``aggregation="vanilla_layer"``: its extra layer
        is unmasked, no tree keys but for ``mask_special_in_aggregation`` and ``pooling="mean"``)."""
        keys: set[str] = set(self.mean_pooling_inputs())
        if self.use_sg_layer and self.aggregation != "vanilla_layer":
            keys |= {"syntax_tree", "dep_tin", "dep_tout"}
        if self.use_sg_layer and self.mask_special_in_aggregation:
            keys.add("syntax_tree")
        if self.pos_embeddings is not None:
            keys.add("pos_ids")
        return ordered_syntax_inputs(keys)

    # -- validators (run by ``@strict`` after ``__post_init__``) -------------------------------------------------
    def validate_alpha(self) -> None:
        """``alpha`` is a mixing weight in [0, 1]."""
        if not 0.0 <= self.alpha <= 1.0:  # NaN too
            raise ConfigError(f"SGNetConfig.alpha must lie in [0, 1] (paper: 0.5), got {self.alpha}")

    def validate_sg_shapes(self) -> None:
        """Heads must divide the hidden size; sizes and rates must be positive / in [0, 1)."""
        hidden, heads = self.hidden_size, filled(self.sg_num_heads)
        if heads <= 0 or hidden % heads:
            raise ConfigError(
                f"SGNetConfig.sg_num_heads={self.sg_num_heads} must divide the encoder's hidden size {hidden}"
            )
        if filled(self.sg_intermediate_size) <= 0:
            raise ConfigError(f"SGNetConfig.sg_intermediate_size must be positive, got {self.sg_intermediate_size}")
        for name in ("sg_dropout", "sg_attention_dropout"):
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ConfigError(f"SGNetConfig.{name} must lie in [0, 1), got {p}")


@strict
class SyntaxBertConfig(SyntaxModelConfig):
    r"""Configuration of a Syntax-BERT model (:class:`~syntaxformer.modeling.SyntaxBertModel` and its task heads):
    a pretrained encoder whose every self-attention head attends within *sub-networks* (tree relations at distance
    1..D, §3.2) that share its weights, mixed per token by *topical attention* (§3.3, Eq. 2-3). What each option
    does and why, with the paper's Table 5 ablations: ``docs/syntax_bert.md``.

    Args:
        encoder: config of the wrapped encoder (as :class:`SGNetConfig`'s), whose attention goes through
            ``AttentionInterface`` (BERT, RoBERTa, ELECTRA, DistilBERT, ...).
        max_distance: D, the largest tree distance of a relation (§4: 15); at most the collator's ``max_distance``.
        use_dependency, use_constituency: use the dependency / constituency partition (Table 5 "w/o ... trees").
        parent_masks, child_masks, sibling_masks, pairwise_masks: keep these relation kinds (Table 5 "w/o ...
            masks"), named as in the paper (*parent*: the query token is the parent or an ancestor of the key).
        relation_names: ``"paper"``; a saved config without it named parent and child the other way round and loads
            with ``parent_masks`` / ``child_masks`` swapped (:meth:`from_dict`).
        pairwise: the pairwise mask joins the two texts of a pair (``"text"``) or, as in the paper (§3.2), different
            sentences (``"sentence"``, read from ``syntax_tree``).
        self_group: our extension: the token itself as one more sub-network (id 3D+2, first partition).
        special_keys: our extension: the special-token keys of every word row as one more sub-network (id 3D+3).
        random_masks, random_masks_seed: Table 5 "w/o syntax trees": each example's group ids shuffled among its
            pairs of words, a fixed function of its token ids and the seed.
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
        lisa_layer, lisa_head: LISA (Strubell et al., 2018; the paper's "+ LISA"): the layer and head trained to
            attend to each token's dependency parent (``None`` = no LISA); ``lisa_loss_weight * lisa_loss`` is added
            to the task loss.
        lisa_head_mode: ``"existing"`` (that pretrained head, taken out of the sub-networks) or ``"added"`` (a new
            head, :class:`~syntaxformer.modeling.syntax_attention_core.AddedLisaHead`).
        classifier_dropout, pooling, qa_verifier, ...: the task-head options of :class:`SyntaxModelConfig`.

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
    aggregation: Literal["topical", "sum", "mean"] = "topical"
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
        self.lisa_loss_weight = float(self.lisa_loss_weight)
        if self.syntax_layers is not None:
            self.syntax_layers = [int(x) for x in self.syntax_layers]
        self.resolve_head_defaults()

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
