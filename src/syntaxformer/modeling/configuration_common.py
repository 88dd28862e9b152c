"""What the configs of every syntax system share: the wrapped encoder's flat views, the task-head options and the
declaration of the batch keys a model reads (:attr:`SyntaxModelConfig.syntax_inputs`).

:class:`SyntaxModelConfig` is the base of :class:`~syntaxformer.modeling.SGNetConfig` and
:class:`~syntaxformer.modeling.SyntaxBertConfig`: the options of the heads in :mod:`syntaxformer.modeling.heads`
(pooling, classifier dropout, the SQuAD 2.0 answer verifier, the QA loss weights) are declared here once, with the
same names, defaults and meaning for every system.

The keyword arguments a syntax model's ``forward`` accepts (:func:`check_forward_inputs`,
:func:`syntax_forward_signature`), and what happens to the others: the models take their syntax tensors as keyword arguments named like the batch keys of
:class:`~syntaxformer.data.collate.SyntaxCollator` (:data:`SYNTAX_INPUT_KEYS`), so ``model(**batch)`` works. Two
rules follow:

* A keyword argument that is neither a parameter of ``forward`` nor a syntax batch key is a mistake (a misspelt key,
  ``label`` for ``labels``, a column of the user's data set): :func:`check_forward_inputs` raises an
  :class:`~syntaxformer.errors.InputError` that names it, instead of ignoring it. Syntax keys a model does not read
  (a collated batch has them all) are accepted and ignored; so is ``num_items_in_batch``, which a ``Trainer`` may
  pass (the models return per-batch mean losses and say so with ``accepts_loss_kwargs = False``).
* ``transformers.Trainer`` keeps only the data set columns that ``inspect.signature(model.forward)`` names
  (``remove_unused_columns=True``, its default). :func:`syntax_forward_signature` gives a ``forward`` that receives
  its syntax tensors as ``**kwargs`` a signature naming every syntax batch key, so a plain ``Trainer`` keeps them.
"""

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, cast

import torch
from huggingface_hub.dataclasses import strict
from transformers import AutoConfig, PretrainedConfig

from syntaxformer.data.collate import CONSTITUENCY_KEYS, DEPENDENCY_KEYS
from syntaxformer.errors import ConfigError, InputError

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
    """A wrapped model's config (a *sub-config*) from what a composite config was given.

    Our composite configs build their sub-configs here rather than through transformers' ``SubConfigSpec``, which
    exists only from transformers 5.20 on; every 5.x release since configs became dataclasses (5.4) saves, loads
    and dispatches a sub-config listed in the class's ``sub_configs``.

    Args:
        value: a ``PretrainedConfig`` (kept as it is), a dict as ``config.json`` stores it (rebuilt by its
            ``model_type`` through ``AutoConfig``; ``default_model_type`` when it names none) or ``None`` (the
            default config of ``default_model_type``).
        default_model_type: the model type used when ``value`` names none (``"bert"``, ``"marian"``).
        name: the option's name, for the error message.
        defaults: options of the default config built for ``value=None``.

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
    r"""Base of the syntax models' configs: the task-head options every system accepts.

    Subclasses add the wrapped ``encoder`` sub-config and their own options, call
    :meth:`resolve_head_defaults` from ``__post_init__`` and implement :attr:`syntax_inputs`.

    Args:
        pooling: sentence representation for sequence-level heads (sequence classification, multiple choice) and
            the QA answer verifier (default ``"cls"``; SG-Net overrides it to ``"mean"``, see
            :class:`~syntaxformer.modeling.configuration_sgnet.SGNetConfig`):
            ``"cls"`` (the first token through a dense+tanh pooler, initialised from the encoder's pooler when it
            has one; SG-Net §3.4.2, BERT) or ``"mean"`` (the mean of the contextual states over non-special tokens:
            positions with ``syntax_tree >= 0``, over ``attention_mask`` when the batch has no ``syntax_tree``).
        classifier_dropout: dropout before every head's output layer; default the encoder's ``classifier_dropout``
            if set, else the system's hidden dropout (BERT's convention).
        initializer_range: std of the normal init of new weights (heads, poolers); default the encoder's (0.02 if
            it has none).
        qa_verifier: span QA only: add the answer verifier, an answerability classifier on the first token
            (SG-Net §3.4.1, Eq. 13-14; see :class:`~syntaxformer.modeling.heads.QuestionAnsweringHead`).
        verifier_loss_weight: weight of the verifier's cross-entropy in the QA loss (default 1.0).
        span_loss_weight: weight of the span loss in the QA loss (default 1.0); 0 trains the verifier alone (the
            paper's *parallel* verifier; needs ``qa_verifier=True``).
        verifier_beta1, verifier_beta2: the weights β1 (span score difference) and β2 (verifier score) of Eq. 14,
            used when decoding answers (default 1.0, 1.0).
        num_labels, problem_type: as in ``PretrainedConfig`` (sequence and token classification; regression when
            ``num_labels == 1``).
    """

    # The wrapped encoder (any ``AutoConfig`` model type, BERT by default), built in ``__post_init__`` by
    # :func:`sub_config` (not ``SubConfigSpec``, which transformers < 5.20 lacks).
    sub_configs: ClassVar[dict[str, Any]] = {"encoder": AutoConfig}
    #: Keep the attention implementation a given encoder config carries (``PretrainedConfig.__post_init__`` sets
    #: ``attn_implementation``, ``None`` unless given, on every sub-config, which would silently reset the
    #: implementation a loaded encoder runs with, e.g. sdpa -> eager fallback). SG-Net and the plain encoder keep
    #: it; Syntax-BERT does not (its model switches the encoder to the ``"syntax"`` attention itself).
    keeps_encoder_attn_implementation: ClassVar[bool] = False
    #: Older ``model_type`` spellings -> the model type they now load as (the :class:`~syntaxformer.registry.SystemSpec`
    #: ``aliases`` of the system, which the registry sets here when it loads the class): a config saved under one is
    #: read as one of this class's own.
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

    def resolve_head_defaults(self, dropout_fallback: float) -> None:
        """Fill the head options left at ``None`` from the encoder and turn the weights into floats.

        Args:
            dropout_fallback: ``classifier_dropout`` when the encoder sets none (the system's hidden dropout).
        """
        enc = self._encoder
        if self.classifier_dropout is None:
            self.classifier_dropout = float(first_set(enc, ("classifier_dropout",), dropout_fallback))
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
        """The syntax batch keys the model reads (names of :func:`syntaxformer.data.collate.encode_syntax`'s arrays,
        plus ``pos_ids``), as a function of its options; featurization needs to produce only these (besides
        ``input_ids``, ``attention_mask``, ``token_type_ids`` and the labels)."""
        # for authors of a new model config (a programming error, not user input): every subclass overrides it
        raise NotImplementedError(f"{type(self).__name__} does not declare its syntax_inputs")

    def mean_pooling_inputs(self) -> tuple[str, ...]:
        """``("syntax_tree",)`` when ``pooling="mean"`` (it marks the special tokens to leave out), else ``()``."""
        return ("syntax_tree",) if self.pooling == "mean" else ()


#: Keyword arguments the ``transformers`` machinery may pass that the syntax models accept and ignore.
TOLERATED_KEYWORDS: frozenset[str] = frozenset({"num_items_in_batch"})

F = TypeVar("F", bound=Callable[..., Any])

_SYNTAX_KEYS_DESCRIPTION = (
    "the syntax batch keys (syntax_tree, dep_tin, ...: syntaxformer.modeling.configuration_common.SYNTAX_INPUT_KEYS)"
)


def syntax_forward_signature(forward: F) -> F:
    """Decorator: the signature of ``forward`` with its ``**kwargs`` replaced by one keyword-only parameter (default
    ``None``) per syntax batch key (:data:`SYNTAX_INPUT_KEYS`) it does not already name.

    The function itself is unchanged (the syntax tensors still arrive in its ``**kwargs``); only what
    ``inspect.signature`` reports changes, which is what ``transformers.Trainer`` reads to decide which data set
    columns to keep.
    """
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
    """Raise if ``extra`` (the ``**kwargs`` a ``forward`` received) has a key that is not a syntax input.

    Args:
        model: the model whose ``forward`` was called (named in the message).
        extra: the keyword arguments ``forward`` did not name.
        accepted: the extra keys it accepts (default: every syntax batch key); :data:`TOLERATED_KEYWORDS` are always
            accepted.
        accepted_description: how the message names ``accepted``.

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
    elif any(k in unknown for k in _LABEL_KEYS) and not any(k in params for k in _LABEL_KEYS):
        hint = " (labels are read by the task models, SGNetFor... / SyntaxBertFor..., not by a backbone)"
    raise InputError(
        f"{name}.forward got unexpected keyword arguments {unknown}{hint}; it accepts {params} and "
        f"{accepted_description}. Remove the other columns from the batch (e.g. a data set's text columns: "
        "ds.remove_columns([...]))"
    )


#: Target keys of the task heads (named in the hint when a backbone is given one).
_LABEL_KEYS = ("labels", "start_positions", "end_positions", "is_impossible")
