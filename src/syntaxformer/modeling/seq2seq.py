"""The Syntax-Infused Transformer for translation, trained from random init (``docs/translation.md``):
transformers' own encoder-decoder (``MarianMTModel`` by default) with two optional syntax parts around its encoder,
syntax-infused source embeddings ``[e_m ; f_m]`` (Sundararaman et al.) and SG-Net's syntax-guided layer with dual
aggregation on the encoder output (Zhang et al., TPAMI §3.4.3).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

import numpy as np
import torch
import torch.nn.functional as F
from huggingface_hub.dataclasses import strict
from torch import nn
from transformers import (
    AutoConfig,
    AutoModelForSeq2SeqLM,
    GenerationMixin,
    MarianConfig,
    PretrainedConfig,
    PreTrainedModel,
)
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput

from syntaxformer.data.bpe import BOS_ID, EOS_ID, PAD_ID
from syntaxformer.data.subword_features import FEATURES
from syntaxformer.data.translation_pairs import DEPENDENCY_KEYS, collate_pairs, decode_translations, encode_pairs
from syntaxformer.errors import ConfigError, InputError
from syntaxformer.masks.sdoi import sdoi_mask
from syntaxformer.modeling.configuration import check_forward_inputs, filled, sub_config
from syntaxformer.modeling.embeddings import COMBINE, SyntaxInfusedEmbedding
from syntaxformer.modeling.raw_text import batches, default_max_new_tokens, padded
from syntaxformer.modeling.sg_layer import DualAggregation, SyntaxGuidedLayer
from syntaxformer.utils import progress

#: Transformer sizes. ``cpu``: small enough to train on 2 CPU cores; ``base``: Vaswani et al.'s base model (the
#: papers' setting); ``tiny``: tests.
PRESETS: dict[str, dict[str, Any]] = {
    name: dict(
        d_model=d,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
    )
    for name, d, layers, heads, ffn in (("tiny", 32, 1, 2, 64), ("cpu", 128, 3, 4, 512), ("base", 512, 6, 8, 2048))
}

#: Keyword arguments ``transformers`` passes to a model's ``forward`` besides its named parameters (``generate``,
#: ``Trainer``): forwarded to the wrapped model (``return_dict`` and ``num_items_in_batch`` are dropped).
_TRANSFORMERS_KEYWORDS = frozenset(
    {"output_attentions", "output_hidden_states", "return_dict", "cache_position", "num_items_in_batch"}
)


@strict
class SyntaxInfusedTranslationConfig(PretrainedConfig):
    r"""Configuration of :class:`SyntaxInfusedForConditionalGeneration`.

    Args:
        seq2seq: config of the wrapped encoder-decoder (any ``AutoModelForSeq2SeqLM`` type whose encoder accepts
            ``inputs_embeds``, with ``share_encoder_decoder_embeddings=False``; default a ``MarianConfig``). Its
            special-token ids and ``generation_config`` are this model's.
        features: source-side syntax features among ``upos``, ``xpos``, ``case``, ``subword`` (the paper: POS, case
            and subword position); empty = the baseline.
        feature_dim: ``d``, the feature vector's size beside the ``D - d`` token embedding (paper: 20 of 512).
        feature_combine: ``"sum"`` (each feature ``d`` dims, summed; the paper's best) or ``"concat"``.
        use_sg_layer: add SG-Net's syntax-guided layer and dual aggregation on top of the encoder (§3.4.3).
        sg_mask: ``"sdoi"`` (SG-Net: each token attends to its dependency ancestors and itself) or ``"none"``
            (the same extra layer attending to all non-padding tokens: a control for the added capacity).
        alpha: weight of H in ``alpha H + (1 - alpha) H'`` (Eq. 9; 0.5, §5.2).
        sg_num_heads, sg_intermediate_size, sg_dropout: the layer's heads, feed-forward size and dropout; default
            the encoder's.
        sg_hidden_act: feed-forward activation of the SG layer: ``"gelu"`` (SG-Net §3.2).
    """

    model_type = "syntax_infused_translation"
    # built in ``__post_init__`` by :func:`sub_config` (not ``SubConfigSpec``, which transformers < 5.20 lacks)
    sub_configs: ClassVar[dict[str, Any]] = {"seq2seq": AutoConfig}

    seq2seq: PretrainedConfig | dict | None = None
    features: list | tuple | None = None
    feature_dim: int = 20
    feature_combine: str = "sum"
    use_sg_layer: bool = False
    sg_mask: str = "sdoi"
    alpha: float | int = 0.5
    sg_num_heads: int | None = None
    sg_intermediate_size: int | None = None
    sg_dropout: float | int | None = None
    sg_hidden_act: str = "gelu"

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        """As ``PretrainedConfig.from_dict``; a saved config without ``sg_hidden_act`` keeps the activation it was
        trained with: the wrapped model's ``activation_function``."""
        if config_dict.get("use_sg_layer") and "sg_hidden_act" not in config_dict and "sg_hidden_act" not in kwargs:
            seq2seq = config_dict.get("seq2seq") or {}
            config_dict = {**config_dict, "sg_hidden_act": seq2seq.get("activation_function", "relu")}
        return super().from_dict(config_dict, **kwargs)

    def __post_init__(self, **kwargs: Any) -> None:
        # the default keeps separate source / target embeddings (the syntax-infused ones replace the source side)
        self.seq2seq = sub_config(self.seq2seq, "marian", "seq2seq", {"share_encoder_decoder_embeddings": False})
        super().__post_init__(**kwargs)
        s = self._seq2seq
        self.features = list(self.features or [])
        self.alpha = float(self.alpha)
        if self.sg_num_heads is None:
            self.sg_num_heads = int(s.encoder_attention_heads)
        if self.sg_intermediate_size is None:
            self.sg_intermediate_size = int(s.encoder_ffn_dim)
        if self.sg_dropout is None:
            self.sg_dropout = float(s.dropout)
        self.is_encoder_decoder = True
        # the special tokens are the wrapped model's (generation options such as forced_eos_token_id live in the
        # model's generation_config, copied from the wrapped model's)
        for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
            setattr(self, name, getattr(s, name, None))

    @property
    def _seq2seq(self) -> PretrainedConfig:
        """``seq2seq`` as ``__post_init__`` left it: always a config (a type checker cannot know that)."""
        return cast(PretrainedConfig, self.seq2seq)

    @property
    def _features(self) -> list[str]:
        """``features`` as ``__post_init__`` left it: always a list."""
        return cast(list[str], self.features)

    def get_text_config(self, decoder: bool | None = None, encoder: bool | None = None) -> PretrainedConfig:
        """The wrapped encoder-decoder's config (``generate`` sizes its decoder cache from it)."""
        return self._seq2seq.get_text_config(decoder=decoder, encoder=encoder)

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax batch keys the model reads: ``{feature}_ids`` of its features, the dependency tensors with
        the SDOI-masked SG layer; featurization emits these and nothing else."""
        keys = tuple(f"{f}_ids" for f in self._features)
        if self.use_sg_layer and self.sg_mask == "sdoi":
            keys += DEPENDENCY_KEYS
        return keys

    def validate_options(self) -> None:
        """Known features and combinations, sizes that fit."""
        bad = [f for f in self._features if f not in FEATURES]
        if bad or len(set(self._features)) != len(self._features):
            raise ConfigError(f"features must be distinct names among {FEATURES}, got {self.features}")
        if self.feature_combine not in COMBINE:
            raise ConfigError(f"feature_combine must be one of {COMBINE}, got {self.feature_combine!r}")
        d_model = self._seq2seq.d_model
        if self.features and not 0 < self.feature_dim < d_model:
            raise ConfigError(f"feature_dim must lie in (0, d_model={d_model}), got {self.feature_dim}")
        if self.sg_mask not in ("sdoi", "none"):
            raise ConfigError(f"sg_mask must be 'sdoi' or 'none', got {self.sg_mask!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"alpha must lie in [0, 1], got {self.alpha}")
        if getattr(self.seq2seq, "share_encoder_decoder_embeddings", False):
            raise ConfigError(
                "the source embeddings are replaced by syntax-infused ones; set "
                "share_encoder_decoder_embeddings=False in the seq2seq config"
            )


def build_config(
    preset: str = "cpu",
    source_vocab_size: int = 4000,
    target_vocab_size: int = 4000,
    features: list[str] | tuple[str, ...] = (),
    use_sg_layer: bool = False,
    seq2seq_overrides: dict[str, Any] | None = None,
    **options: Any,
) -> SyntaxInfusedTranslationConfig:
    """A :class:`SyntaxInfusedTranslationConfig` for the syntax options around a ``MarianConfig`` of a preset size
    (:data:`PRESETS`) with our special-token ids, separate source and target vocabularies and ``seq2seq_overrides``
    (any ``MarianConfig`` option)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown model preset {preset!r}; expected one of {', '.join(PRESETS)}")
    marian: dict[str, Any] = dict(
        vocab_size=source_vocab_size,
        decoder_vocab_size=target_vocab_size,
        share_encoder_decoder_embeddings=False,
        tie_word_embeddings=True,
        scale_embedding=True,
        activation_function="relu",
        dropout=0.1,
        attention_dropout=0.1,
        activation_dropout=0.0,
        max_position_embeddings=512,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        decoder_start_token_id=BOS_ID,
        forced_eos_token_id=EOS_ID,
    )
    marian.update(PRESETS[preset])
    marian.update(seq2seq_overrides or {})
    s2s = MarianConfig(**marian)
    return SyntaxInfusedTranslationConfig(seq2seq=s2s, features=list(features), use_sg_layer=use_sg_layer, **options)


class SyntaxInfusedEncoder:
    """The model's encoder as ``generate`` calls it (``get_encoder()``, once per batch): a view on the model's
    :meth:`~SyntaxInfusedForConditionalGeneration.encode`."""

    def __init__(self, model: SyntaxInfusedForConditionalGeneration):
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs: Any
    ) -> BaseModelOutput:
        """:meth:`SyntaxInfusedForConditionalGeneration.encode`."""
        return self.model.encode(input_ids, attention_mask, **kwargs)

    __call__ = forward


class SyntaxInfusedForConditionalGeneration(PreTrainedModel, GenerationMixin):
    """Encoder-decoder Transformer with syntax-infused source embeddings and an optional SG-Net encoder layer.

    Inputs (from :meth:`syntaxformer.tasks.translation.TranslationTask.collator`): ``input_ids`` /
    ``attention_mask`` ``[B, L]``; ``{feature}_ids`` ``[B, L]`` for the configured features (0 or -1 at ``</s>``
    and padding); ``dep_tin`` / ``dep_tout`` / ``syntax_tree`` ``[B, L]`` for the SDOI-masked SG layer (-1 at
    ``</s>`` and padding); ``labels`` ``[B, T]`` target ids, -100 at padding, and/or ``decoder_input_ids``.
    """

    config_class = SyntaxInfusedTranslationConfig
    base_model_prefix = "translation"
    main_input_name = "input_ids"
    _supports_sdpa = True
    _supports_attention_backend = True
    #: A per-batch mean loss: ``transformers.Trainer`` must not pass ``num_items_in_batch``.
    accepts_loss_kwargs = False

    def __init__(self, config: SyntaxInfusedTranslationConfig):
        super().__init__(config)
        s2s = config._seq2seq
        # construction order (seq2seq, source embeddings, SG layer) fixes the random init: keep it
        self.seq2seq = AutoModelForSeq2SeqLM.from_config(s2s)
        encoder = self.seq2seq.get_encoder()
        # The encoder reads our embeddings (inputs_embeds); its own token table would be dead weight.
        if hasattr(encoder, "embed_tokens"):
            encoder.embed_tokens = None
        scale = float(getattr(encoder, "embed_scale", 1.0))
        self.source_embeddings = SyntaxInfusedEmbedding(
            s2s.vocab_size,
            s2s.d_model,
            config._features,
            config.feature_dim,
            config.feature_combine,
            padding_idx=s2s.pad_token_id,
            scale=scale,
            init_std=float(getattr(s2s, "init_std", 0.02)),
        )
        if config.use_sg_layer:
            self.sg_layer: SyntaxGuidedLayer | None = SyntaxGuidedLayer(
                s2s.d_model,
                filled(config.sg_num_heads),
                filled(config.sg_intermediate_size),
                config.sg_hidden_act,
                filled(config.sg_dropout),
                filled(config.sg_dropout),
                layer_norm_eps=1e-5,
            )
            self.aggregation: DualAggregation | None = DualAggregation(config.alpha)
        else:
            self.sg_layer = None
            self.aggregation = None
        self.post_init()
        # generate() defaults (decoder start, forced </s>, pad): exactly those of the wrapped model
        self.generation_config = copy.deepcopy(self.seq2seq.generation_config)

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Our own modules: normal(0, init_std) linears and embeddings (zero rows at padding / "no word")."""
        std = float(getattr(self.config.seq2seq, "init_std", 0.02))
        if isinstance(module, nn.Linear):
            module.weight.normal_(0.0, std)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
        elif isinstance(module, SyntaxInfusedEmbedding):
            module.reset_parameters()

    def get_input_embeddings(self) -> nn.Module:
        """The source token embeddings (the ``D - d`` part)."""
        return self.source_embeddings.tokens

    def get_output_embeddings(self) -> nn.Module:
        """The decoder's output projection."""
        return self.seq2seq.get_output_embeddings()

    def get_encoder(self, modality: str | None = None) -> SyntaxInfusedEncoder:
        """The syntax-aware encoder that ``generate`` runs once per batch."""
        return SyntaxInfusedEncoder(self)

    def get_decoder(self) -> nn.Module:
        """The wrapped Transformer's decoder."""
        return self.seq2seq.get_decoder()

    def encode(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        dep_tin: torch.Tensor | None = None,
        dep_tout: torch.Tensor | None = None,
        syntax_tree: torch.Tensor | None = None,
        **features: Any,
    ) -> BaseModelOutput:
        """Syntax-infused embeddings -> Transformer encoder -> SG layer + aggregation: ``last_hidden_state``
        ``[B, L, D]`` (H̄ with the SG layer, else H) for the inputs of the class docstring (``dep_*`` and
        ``syntax_tree`` needed with the SG layer and ``sg_mask="sdoi"``; other ``features`` keys are ignored)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        embeds = self.source_embeddings(input_ids, features)  # (B, L, D)
        enc = self.seq2seq.get_encoder()(inputs_embeds=embeds, attention_mask=attention_mask, return_dict=True)
        h = enc.last_hidden_state  # (B, L, D)
        if self.sg_layer is None or self.aggregation is None:  # both or neither (use_sg_layer)
            return BaseModelOutput(last_hidden_state=h)
        key_valid = attention_mask.to(h.device) > 0  # (B, L)
        L = h.shape[1]
        eye = torch.eye(L, dtype=torch.bool, device=h.device)
        if self.config.sg_mask == "none":
            mask = key_valid.unsqueeze(1) | eye  # (B, L, L): every token sees every non-padding token
        else:
            if dep_tin is None or dep_tout is None or syntax_tree is None:
                missing = [n for n, t in zip(DEPENDENCY_KEYS, (dep_tin, dep_tout, syntax_tree)) if t is None]
                raise InputError(
                    f"the SG-Net encoder layer needs the batch keys {missing}; featurize the "
                    "sources with syntaxformer.tasks.translation.TranslationTask for this model"
                )
            mask = sdoi_mask(dep_tin.to(h.device), dep_tout.to(h.device), syntax_tree.to(h.device))  # (B, L, L)
            mask = (mask & key_valid.unsqueeze(1)) | eye
        h_sg, _ = self.sg_layer(h, mask)  # (B, L, D)
        return BaseModelOutput(last_hidden_state=self.aggregation(h, h_sg))

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        past_key_values: Any = None,
        labels: torch.Tensor | None = None,
        use_cache: bool | None = None,
        upos_ids: torch.Tensor | None = None,
        xpos_ids: torch.Tensor | None = None,
        case_ids: torch.Tensor | None = None,
        subword_ids: torch.Tensor | None = None,
        dep_tin: torch.Tensor | None = None,
        dep_tout: torch.Tensor | None = None,
        syntax_tree: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> Seq2SeqLMOutput:
        """Teacher-forced decoding of ``labels`` / ``decoder_input_ids``, or one ``generate`` step: ``logits``
        ``[B, T, V]`` and, with labels, the mean cross-entropy ``loss`` over non-padding target tokens.

        Args (the inputs of the class docstring, and):
            decoder_input_ids: ``[B, T]`` decoder input; default ``<s>`` + ``labels`` shifted right.
            decoder_attention_mask, past_key_values, use_cache, **kwargs: passed to the wrapped model (``kwargs``:
                keyword arguments of its ``forward``, e.g. ``cache_position``; any other raises an ``InputError``).
            encoder_outputs: precomputed :meth:`encode` output (``generate`` passes it; ``input_ids`` not needed).
        """
        check_forward_inputs(
            self, kwargs, self.wrapped_keywords(), f"the keyword arguments of {type(self.seq2seq).__name__}.forward"
        )
        if encoder_outputs is None:
            if input_ids is None:
                raise InputError("forward needs input_ids or encoder_outputs")
            values = (upos_ids, xpos_ids, case_ids, subword_ids)
            features = {f"{k}_ids": v for k, v in zip(("upos", "xpos", "case", "subword"), values) if v is not None}
            encoder_outputs = self.encode(input_ids, attention_mask, dep_tin, dep_tout, syntax_tree, **features)
        elif isinstance(encoder_outputs, tuple):
            encoder_outputs = BaseModelOutput(last_hidden_state=encoder_outputs[0])
        if decoder_input_ids is None:
            if labels is None:
                raise InputError("forward needs labels or decoder_input_ids")
            decoder_input_ids = self.seq2seq.prepare_decoder_input_ids_from_labels(labels)
        kwargs.pop("return_dict", None)
        kwargs.pop("num_items_in_batch", None)
        out = self.seq2seq(
            encoder_outputs=encoder_outputs,
            attention_mask=attention_mask,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            past_key_values=past_key_values,
            use_cache=use_cache,
            return_dict=True,
            **kwargs,
        )
        loss = None
        if labels is not None:
            logits = out.logits  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
        return Seq2SeqLMOutput(
            loss=loss,
            logits=out.logits,
            # transformers 5.24 renamed this field to ``cache`` (the old keyword is still taken); 5.4 needs the old one
            past_key_values=out.past_key_values,  # type: ignore[call-arg]
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
        )

    def wrapped_keywords(self) -> frozenset[str]:
        """The keyword arguments :meth:`forward` passes on to the wrapped seq2seq model: the parameters its
        ``forward`` names, and the output / cache options ``transformers`` passes as its ``**kwargs``."""
        named = {
            p.name
            for p in inspect.signature(self.seq2seq.forward).parameters.values()
            if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
        }
        return frozenset(named | _TRANSFORMERS_KEYWORDS)

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        """``<s>`` + ``labels`` shifted right (-100 read as padding)."""
        return self.seq2seq.prepare_decoder_input_ids_from_labels(labels)


@torch.no_grad()
def generate_ids(
    model: Any,
    items: Sequence[Mapping[str, np.ndarray]],
    batch_size: int = 64,
    *,
    show_progress: bool = False,
    desc: str = "translating",
    **generate_options: Any,
) -> np.ndarray:
    """Beam search over encoded sources, in batches of similar length (:func:`~syntaxformer.modeling.raw_text.batches`,
    one ``model.generate`` each): the one decoding path of every translation.

    Args:
        model: a :class:`SyntaxInfusedForConditionalGeneration` (put in eval mode here).
        items: one dict per source as :func:`~syntaxformer.data.translation_pairs.encode_pairs` makes them
            (``labels`` ignored).
        **generate_options: passed to ``generate``; default ``max_new_tokens``: :func:`default_max_new_tokens` of
            the batch's padded source length.

    Returns:
        ``[N, T]`` generated ids in item order (the pad id after a batch's end, -100 after the longest of a batch).
    """
    model.eval()
    device = next(model.parameters()).device
    rows: list[Any] = [None] * len(items)
    with progress(total=len(items), desc=desc, unit="sent", disable=None if show_progress else True) as bar:
        for idx in batches(items, batch_size):
            sources = [{k: v for k, v in items[i].items() if k != "labels"} for i in idx]
            batch = {k: v.to(device) for k, v in collate_pairs(sources, model.config.pad_token_id).items()}
            options = dict(generate_options)
            if "max_new_tokens" not in options and "max_length" not in options:
                options["max_new_tokens"] = default_max_new_tokens(batch["input_ids"].shape[1])
            for i, row in zip(idx, model.generate(**batch, **options).cpu().numpy()):
                rows[int(i)] = row
            bar.update(len(idx))
    return padded(rows, -100, np.int64) if rows else np.zeros((0, 0), dtype=np.int64)


def translate_texts(
    model: Any,
    sources: Sequence[str],
    source_tokenizer: Any,
    target_tokenizer: Any,
    annotator: Any = None,
    max_source_length: int = 256,
    batch_size: int = 64,
    **options: Any,
) -> list[str]:
    """Raw source sentences -> translations in input order: parsed by ``annotator`` when the model reads syntax,
    encoded (up to ``max_source_length`` pieces), translated by :func:`generate_ids` (``options``: its own) and
    detokenised. A blank source gives an empty translation."""
    keep = [i for i, s in enumerate(sources) if s.strip()]
    syntax = tuple(model.config.syntax_inputs)
    items = encode_pairs(
        [sources[i] for i in keep], source_tokenizer, None, annotator, syntax, max_source_length, show_progress=False
    )
    out = [""] * len(sources)
    for i, text in zip(keep, decode_translations(generate_ids(model, items, batch_size, **options), target_tokenizer)):
        out[i] = text
    return out


AutoConfig.register(SyntaxInfusedTranslationConfig.model_type, SyntaxInfusedTranslationConfig, exist_ok=True)
AutoModelForSeq2SeqLM.register(SyntaxInfusedTranslationConfig, SyntaxInfusedForConditionalGeneration, exist_ok=True)
SyntaxInfusedTranslationConfig.register_for_auto_class("AutoConfig")  # saved configs carry auto_map
SyntaxInfusedForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")
