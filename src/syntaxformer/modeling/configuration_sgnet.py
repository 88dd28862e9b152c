"""Configuration of SG-Net (:class:`SGNetConfig`): one documented ``PretrainedConfig``.

The config holds the wrapped encoder's own config (any ``AutoConfig`` model type, serialised as a nested dict and
rebuilt from its ``model_type``, like ``EncoderDecoderConfig`` does) plus every option of the syntax layer, each
with its paper default and the section it comes from; the task-head options come from
:class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`.
"""

import math
from typing import Any, Literal, get_args

from huggingface_hub.dataclasses import strict
from transformers import PretrainedConfig

from syntaxformer.data.sentence import on_demand
from syntaxformer.errors import ConfigError
from syntaxformer.modeling.configuration_common import (
    Pooling,
    SyntaxModelConfig,
    filled,
    first_set,
    ordered_syntax_inputs,
)

#: Ways to combine the encoder output H and the syntax-guided output H' (see :class:`SGNetConfig`).
Aggregation = Literal["dual", "syntax_only", "concat", "vanilla_layer", "biattention"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)


@strict
class SGNetConfig(SyntaxModelConfig):
    r"""Configuration of an SG-Net model (:class:`~syntaxformer.modeling.SGNetModel` and its task heads).

    SG-Net (Zhang et al., TPAMI, section 3) runs a pretrained encoder, feeds its last hidden states H to one
    extra *syntax-guided* self-attention layer whose attention is restricted by the SDOI mask (each token attends
    to its dependency ancestors and itself, Eq. 6-8), and combines the two: ``H̄ = alpha * H + (1 - alpha) * H'``
    (dual context aggregation, Eq. 9). Task heads read H̄.

    Options left at ``None`` take the wrapped encoder's value when the config is built, so a saved config always
    holds concrete numbers.

    Args:
        encoder: config of the wrapped encoder: a ``PretrainedConfig``, or a dict with a ``model_type`` key
            (``config.json`` stores it this way); any architecture ``AutoModel`` can build. Default: a
            ``BertConfig()``.
        use_sg_layer: add the syntax-guided layer (SG-Net). ``False`` gives the plain-encoder baseline with the
            same task heads and pooling (no extra parameters; it reads no parse except ``syntax_tree`` for the default
            mean pooling). Default ``True``.
        alpha: weight of the encoder output H in the dual aggregation ``alpha * H + (1 - alpha) * H'``
            (Eq. 9); the paper fixes it to 0.5 (section 5.2). Must lie in [0, 1].
        alpha_mode: ``"fixed"`` (paper, §5.2: a constant, no parameter) or ``"learned"``: ``sigmoid(a)`` of a
            learned scalar ``a`` initialised so that ``sigmoid(a) = alpha`` (the official code learns its
            weights; REFERENCE-NOTES). Only used by ``aggregation="dual"``.
        sg_init: initialisation of the syntax-guided layer. ``"random"`` (the official code; §3.2 does not say)
            or ``"copy_last"``: copy the query/key/value/output, feed-forward and LayerNorm weights of the
            encoder's last layer, so that without a mask the layer would repeat that layer. ``"copy_last"`` needs
            a BERT-like encoder (modules ``encoder.layer[-1].attention.self.query`` ..., as in BERT, RoBERTa,
            ELECTRA, MiniLM) and ``sg_num_heads`` / ``sg_intermediate_size`` equal to the encoder's.
        aggregation: how H and H' are combined into H̄ (Table 6 of the paper, §7.3):

            * ``"dual"``: ``alpha * H + (1 - alpha) * H'`` (Eq. 9, the paper's SG-Net; default).
            * ``"syntax_only"``: ``H̄ = H'`` ("+ syntax-guided attention only").
            * ``"vanilla_layer"``: the extra layer *without* the SDOI mask (it attends to every non-padding
              token) and ``H̄ = H'`` ("+ vanilla attention only": extra parameters, no syntax).
            * ``"concat"``: ``H̄ = [H; H'] W + b`` with ``W`` of shape ``[2 * hidden, hidden]``, initialised to
              ``[alpha * I; (1 - alpha) * I]`` (so training starts from the dual aggregation) ("concatenation").
            * ``"biattention"``: ``H̄ = LayerNorm(H + MultiHead(Q=H, K=H', V=H'))``: every token of H attends to
              all non-padding tokens of H' through one extra multi-head attention (``sg_num_heads`` heads, output
              projection, dropout, residual). This is our reading of the paper's "Bi-attention" row, which cites
              BiDAF (Seo et al.) but gives no formula: BiDAF's two directions collapse to one here because H and
              H' are aligned token by token over the same sequence.
        sg_num_heads: attention heads of the syntax-guided layer (and of the bi-attention); default the
            encoder's ``num_attention_heads`` ("the same as that for BERT", §5.2).
        sg_intermediate_size: feed-forward size of the syntax-guided layer; default the encoder's
            ``intermediate_size`` (4 x hidden if it has none).
        sg_hidden_act: feed-forward activation of the layer; default the encoder's ``hidden_act`` (GELU in the
            paper, §3.2; needed to match the encoder for ``sg_init="copy_last"``).
        sg_dropout: dropout on the layer's attention-output and feed-forward projections; default the encoder's
            ``hidden_dropout_prob``.
        sg_attention_dropout: dropout on the layer's attention probabilities; default the encoder's
            ``attention_probs_dropout_prob``.
        sg_layer_norm_eps: LayerNorm epsilon of the layer; default the encoder's ``layer_norm_eps``.
        pooling: sentence representation for the sequence-level heads (sequence classification, multiple choice)
            and the QA answer verifier (a head option, see
            :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`). Default ``"mean"`` (the mean of
            H̄ over non-special tokens), our documented deviation; ``"cls"`` is the paper's h̄₀ (§3.4.2: the first
            token of H̄ through a dense+tanh pooler). **Why the default is not the paper's:** under the SDOI mask
            ``[CLS]`` attends only to itself in the syntax-guided layer, so ``h'_0`` is a function of ``h_0`` alone
            (a per-token feed-forward transform): with ``"cls"`` no syntax reaches a sentence classifier, a RACE
            scorer or the verifier through H', and the layer's W_Q / W_K get no gradient (MiniLM on STS-B,
            ``syntaxformer diagnose --system sgnet --set pooling=cls``: ~1e-8, rounding, against W_V's 3.0; with
            ``"mean"`` W_Q / W_K get 0.086). With
            ``mask_special_in_aggregation=True`` the ``"cls"`` classifier input is exactly the baseline's. The
            default applies to the plain-encoder baseline (``use_sg_layer=False``) too, so that the comparison
            differs only by the syntax layer; mean pooling reads ``syntax_tree`` (it marks the special tokens).
            Span QA heads are per token and unaffected. Configs saved before this default store ``pooling``
            explicitly and load unchanged.
        mask_special_in_aggregation: footnote 11 of the paper: special tokens ([CLS], [SEP], padding; positions
            with ``syntax_tree < 0``) attend only to themselves in the SG layer "and we will mask these weights
            in the following aggregation layer". If True, those positions take H only (``H̄_i = H_i``), for every
            aggregation. Default ``False`` (plain Eq. 9 everywhere).
        classifier_dropout: dropout before the heads' output layers; default the encoder's ``classifier_dropout``
            if set, else ``sg_dropout`` (itself the encoder's ``hidden_dropout_prob`` by default).
        pos_embeddings: BERT+POS (Sundararaman et al., "Syntax-infused BERT"): ``"upos"`` (coarse) or ``"xpos"``
            (fine) adds a trainable POS embedding of size H to the token embeddings (``h'_m = e_m + f^P_m``, passed
            to the encoder as ``inputs_embeds``); the batch then needs ``pos_ids`` ``[B, L]`` (ids of
            :mod:`syntaxformer.data.subword_features`: 0 = no word, each subword its word's tag). The table starts
            at zero, so training starts from the pretrained encoder. ``None`` (default): no POS embedding.
        pos_vocab_size: rows of the POS table; default the size of the tag set's ids
            (:func:`syntaxformer.data.subword_features.feature_vocab_size`), filled in when the config is built.
        initializer_range, num_labels, problem_type, qa_verifier, verifier_loss_weight, span_loss_weight,
            verifier_beta1, verifier_beta2: the task-head options shared by every system, see
            :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`.

    The batch keys the model reads are :attr:`syntax_inputs`.

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
            self.sg_dropout = float(first_set(enc, ("hidden_dropout_prob", "hidden_dropout", "dropout"), 0.1))
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
        """The syntax batch keys SG-Net reads with these options.

        ``syntax_tree``, ``dep_tin``, ``dep_tout`` for the SDOI mask of the syntax-guided layer (``use_sg_layer``,
        except ``aggregation="vanilla_layer"``, whose extra layer is unmasked); ``syntax_tree`` also for
        ``mask_special_in_aggregation`` and ``pooling="mean"`` (it marks the special tokens); ``pos_ids`` for
        ``pos_embeddings``. The plain-encoder baseline with first-token pooling reads none: ``()``.
        """
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
        if not 0.0 <= self.alpha <= 1.0 or math.isnan(self.alpha):
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
