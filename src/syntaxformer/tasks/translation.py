"""Translation (English→German Multi30k by default) with the Syntax-Infused Transformer, trained from scratch:
the task builds the BPE vocabularies (:meth:`TranslationTask.build_tokenizer`) and the model of one of the
:data:`ARMS` (:meth:`TranslationTask.build_model`). Scores: sacreBLEU BLEU + signature.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from syntaxformer.data.bpe import BOS_ID, load_tokenizers, save_tokenizers, train_bpe
from syntaxformer.data.readers.parallel import ParallelCorpus, corpus_fraction, multi30k, read_corpus
from syntaxformer.data.subword_features import N_RESERVED, SUBWORD_VALUES, UPOS_TAGS
from syntaxformer.data.translation_pairs import (  # shared with exported model folders
    DEPENDENCY_KEYS,
    PAD_VALUES,
    collate_pairs,
    decode_translations,
    encode_pairs,
)
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.modeling.raw_text import padded
from syntaxformer.modeling.seq2seq import PRESETS, SyntaxInfusedForConditionalGeneration, build_config
from syntaxformer.tasks.base import Predictions, Task, TaskContext, constructor_options, register_task
from syntaxformer.tasks.featurize import annotator_for, annotator_identity
from syntaxformer.tasks.metrics import corpus_bleu

__all__ = ["ARMS", "PAD_VALUES", "TAG_CONTROLS", "TranslationTask", "collate_pairs", "control_tags", "encode_pairs"]

logger = logging.getLogger(__name__)

#: The experiment's arms: model options per arm name.
ARMS: dict[str, dict[str, Any]] = {
    "baseline": {"features": [], "use_sg_layer": False},
    "syntax": {"features": ["upos", "case", "subword"], "use_sg_layer": False},
    "sgnet": {"features": [], "use_sg_layer": True},
    "both": {"features": ["upos", "case", "subword"], "use_sg_layer": True},
    # controls: the extra layer without the SDOI mask (capacity without syntax); fine POS tags
    "vanilla_layer": {"features": [], "use_sg_layer": True, "sg_mask": "none"},
    "syntax_xpos": {"features": ["xpos", "case", "subword"], "use_sg_layer": False},
    # controls of the syntax arm: the same features, the UPOS tags carrying no syntax (control_tags)
    "shuffled_tags": {"features": ["upos", "case", "subword"], "use_sg_layer": False, "tag_control": "shuffle"},
    "random_tags": {"features": ["upos", "case", "subword"], "use_sg_layer": False, "tag_control": "random"},
}

#: Values of the ``tag_control`` option: what replaces each sentence's UPOS tags (``None`` = the parser's tags).
TAG_CONTROLS = ("shuffle", "random")


class TranslationTask(Task[ParallelCorpus]):
    """Sentence-level translation with the Syntax-Infused Transformer (any parallel text; Multi30k by default).

    Options:
        arm: a key of :data:`ARMS` setting ``features`` / ``use_sg_layer`` / ``sg_mask`` / ``tag_control``;
            ``None`` = those options as given.
        tag_control, tag_seed: ``"shuffle"`` / ``"random"`` UPOS tags (:func:`control_tags`), seeded by
            ``tag_seed``, the split and the sentence's index; ``None`` = the parser's.
        features, feature_dim, feature_combine, use_sg_layer, sg_mask, alpha: model options
            (:class:`~syntaxformer.modeling.seq2seq.SyntaxInfusedTranslationConfig`); ``feature_dim`` ``None`` =
            the paper's share of the width (20 of 512) at the preset's ``d_model``.
        preset, seq2seq_overrides: Transformer size (:data:`~syntaxformer.modeling.seq2seq.PRESETS`) and any
            ``MarianConfig`` option on top.
        train_source, train_target, valid_source, valid_target: parallel plain-text (or ``.sgm``) files; ``None``
            = Multi30k train / val under ``data_dir``.
        eval_sets: name -> ``[source, reference]`` files translated after training (default: Multi30k
            ``test2016``); split ``"test"`` is the first of them.
        fraction, data_seed: seeded, nested subsample of the training pairs.
        tokenizer_dir: a folder with ``source_tokenizer/`` and ``target_tokenizer/`` to reuse (or to write, when
            empty); ``None`` = learn BPE for this run only.
        source_vocab_size, target_vocab_size: BPE vocabulary sizes.
        max_source_length, max_target_length: pieces kept per training / validation sentence;
            max_eval_source_length: source pieces kept when translating the evaluation sets.
        data_dir: the Multi30k folder (default ``../shared/data/multi30k``).
    """

    name = "translation"
    title = "Translation"
    head = "seq2seq"
    metric_names = ("bleu",)
    splits = ("train", "dev", "test")
    unused_options: ClassVar[Mapping[str, str]] = {
        "model_name_or_path": "the translation model is trained from scratch (its size: --set preset=NAME)",
        "model_type": "the arm chooses the model (--set arm=baseline|syntax|sgnet|both)",
        "max_length": "use --set max_source_length=N / max_target_length=N / max_eval_source_length=N",
        "max_train_samples": "use --set fraction=F (a seeded share of the training pairs)",
        "max_eval_samples": "the evaluation sets are translated whole",
        "num_train_epochs": "it trains for max_steps updates (default 400): use --max-steps N",
        "train_file": "use --set train_source=FILE --set train_target=FILE (parallel text, one sentence a line)",
        "dev_file": "use --set valid_source=FILE --set valid_target=FILE",
        "test_file": "use --set eval_sets='{name: [SOURCE, REFERENCE]}'",
        "dataset": "use parallel text files (--set train_source=... train_target=...)",
    }

    def __init__(
        self,
        arm: str | None = None,
        features: Sequence[str] | str = (),
        feature_dim: int | None = None,
        feature_combine: str = "sum",
        use_sg_layer: bool = False,
        sg_mask: str = "sdoi",
        tag_control: str | None = None,
        tag_seed: int = 0,
        alpha: float = 0.5,
        preset: str = "cpu",
        seq2seq_overrides: Mapping[str, Any] | None = None,
        fraction: float = 1.0,
        data_seed: int = 0,
        train_source: str | None = None,
        train_target: str | None = None,
        valid_source: str | None = None,
        valid_target: str | None = None,
        eval_sets: Mapping[str, Sequence[str]] | None = None,
        tokenizer_dir: str | None = None,
        source_vocab_size: int = 4000,
        target_vocab_size: int = 4000,
        max_source_length: int = 64,
        max_target_length: int = 64,
        max_eval_source_length: int = 256,
        data_dir: str | None = None,
    ):
        if isinstance(features, str):
            features = [f for f in features.split(",") if f]
        model: dict[str, Any] = {
            "features": list(features),
            "use_sg_layer": bool(use_sg_layer),
            "sg_mask": sg_mask,
            "tag_control": tag_control,
        }
        if arm is not None:
            if arm not in ARMS:
                raise ConfigError(f"unknown translation arm {arm!r}; expected one of {', '.join(ARMS)}")
            model.update({k: list(v) if isinstance(v, list) else v for k, v in ARMS[arm].items()})
        if preset not in PRESETS:
            raise ConfigError(f"unknown model preset {preset!r}; expected one of {', '.join(PRESETS)}")
        if feature_dim is None:  # the paper's share of the width (20 of 512) at this preset's d_model
            d_model = int((seq2seq_overrides or {}).get("d_model", PRESETS[preset]["d_model"]))
            feature_dim = max(1, round(20 * d_model / 512))
        if not 0.0 < float(fraction) <= 1.0:
            raise ConfigError(f"fraction must lie in (0, 1], got {fraction}")
        for side, src, tgt in (("train", train_source, train_target), ("valid", valid_source, valid_target)):
            if bool(src) != bool(tgt):
                raise ConfigError(f"{side}_source and {side}_target go together; got only one of them")
        # your own parallel files are never scored against Multi30k
        if train_source and not valid_source:
            raise ConfigError(
                f"training on your own files (train_source={train_source!r}) needs your validation "
                "files too: --set valid_source=FILE --set valid_target=FILE (Multi30k's validation set "
                "stands in only when training on Multi30k)"
            )
        default_sets: dict[str, Any] = {} if train_source else {"test2016": None}  # Multi30k's, when training on it
        sets = default_sets if eval_sets is None else dict(eval_sets)
        for name, files in sets.items():
            if files is not None and len(files) != 2:
                raise ConfigError(f"eval set {name!r}: expected [source, reference] files, got {files}")
        self.arm = arm
        self.features: list[str] = model["features"]
        self.use_sg_layer: bool = model["use_sg_layer"]
        self.sg_mask: str = model["sg_mask"]
        self.tag_control: str | None = _check_tag_control(model["tag_control"], self.features)
        self.tag_seed = int(tag_seed)
        self.feature_dim = int(feature_dim)
        self.feature_combine = feature_combine
        self.alpha = float(alpha)
        self.preset = preset
        self.seq2seq_overrides = dict(seq2seq_overrides or {})
        self.fraction = float(fraction)
        self.data_seed = int(data_seed)
        self.train_source, self.train_target = train_source, train_target
        self.valid_source, self.valid_target = valid_source, valid_target
        self.eval_sets = {k: (list(v) if v is not None else None) for k, v in sets.items()}
        self.tokenizer_dir = tokenizer_dir
        self.source_vocab_size, self.target_vocab_size = int(source_vocab_size), int(target_vocab_size)
        self.max_source_length, self.max_target_length = int(max_source_length), int(max_target_length)
        self.max_eval_source_length = int(max_eval_source_length)
        self.data_dir = data_dir
        self.source_tokenizer: Any = None  # set by build_tokenizer / load_tokenizer
        self.target_tokenizer: Any = None
        self.parser: str | None = None  # of the last featurized sources (feature_facts)

    def options(self) -> dict[str, Any]:
        return constructor_options(self)

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax keys this task's model reads (as its config's ``syntax_inputs``)."""
        keys = tuple(f"{f}_ids" for f in self.features)
        return keys + (DEPENDENCY_KEYS if self.use_sg_layer and self.sg_mask == "sdoi" else ())

    # -- data ------------------------------------------------------------------------------------------
    def eval_set_names(self) -> list[str]:
        """Names of the evaluation sets translated after training."""
        return list(self.eval_sets)

    def load_split(self, split: str, data: Mapping[str, Any] | None = None) -> ParallelCorpus:
        """``"train"`` (subsampled), ``"dev"`` (validation), ``"test"`` (the first eval set) or an eval set name;
        ``data["data_dir"]``: the Multi30k folder."""
        data_dir = (data or {}).get("data_dir") or self.data_dir
        if split == "train":
            if self.train_source:
                corpus = read_corpus(self.train_source, self.train_target)
            else:
                logger.info("translation: no train_source given, training on Multi30k train (English→German)")
                corpus = multi30k("train", data_dir)
            return corpus_fraction(corpus, self.fraction, self.data_seed)
        if split in ("dev", "valid", "validation"):
            return read_corpus(self.valid_source, self.valid_target) if self.valid_source else multi30k("val", data_dir)
        if split == "test":
            if not self.eval_sets:
                raise ConfigError(
                    "this translation run has no evaluation sets, so no 'test' split: name your test "
                    "files with --set eval_sets='{\"test\": [SOURCE, REFERENCE]}'"
                )
            split = next(iter(self.eval_sets))
        if split not in self.eval_sets:
            raise ConfigError(
                f"unknown translation split {split!r}; expected train, dev, test or an eval set "
                f"({', '.join(self.eval_sets) or 'none configured'})"
            )
        files = self.eval_sets[split]
        corpus = multi30k("test2016", data_dir) if files is None else read_corpus(files[0], files[1])  # None: test2016
        corpus.name = split
        return corpus

    def inference_data(self, inputs: Sequence[Mapping[str, Any]]) -> ParallelCorpus:
        """Source sentences (mappings with ``text``) as a corpus without references."""
        return ParallelCorpus(
            [str(r["text"]) for r in inputs],
            None,
            [str(r.get("id", f"input-{i}")) for i, r in enumerate(inputs)],
            "inputs",
        )

    def raw_records(
        self,
        inputs: Sequence[Mapping[str, Any]],
        data: ParallelCorpus,
        features: Any,
        outputs: Mapping[str, Sequence[Any]],
        model_config: Any,
        options: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """Per source sentence: its ``translation``."""
        texts = self.postprocess(data, features, padded(outputs["ids"], -100, np.int64)).values
        return [
            {**({"id": r["id"]} if "id" in r else {}), "text": r["text"], "translation": t}
            for r, t in zip(inputs, texts)
        ]

    def featurize(self, data: ParallelCorpus, context: TaskContext, split: str) -> list[dict[str, np.ndarray]]:
        """Per-pair arrays (:func:`encode_pairs`) with ``context.syntax_inputs``; evaluation sets keep up to
        ``max_eval_source_length`` source pieces."""
        target = context.extra.get("target_tokenizer", self.target_tokenizer)
        max_source = self.max_source_length if split in ("train", "dev", "valid") else self.max_eval_source_length
        syntax = tuple(context.syntax_inputs)
        annotator = annotator_for(context) if syntax else None
        self.parser = annotator_identity(context) if syntax else "none"
        items = encode_pairs(
            data,
            context.tokenizer,
            target,
            annotator,
            syntax,
            max_source,
            self.max_target_length,
            show_progress=context.progress,
        )
        if self.tag_control is not None and "upos_ids" in syntax:
            for i, item in enumerate(items):
                rng = np.random.default_rng([self.tag_seed, zlib.crc32(split.encode()), i])
                item["upos_ids"] = control_tags(item["upos_ids"], item["subword_ids"], self.tag_control, rng)
        return items

    def feature_facts(self, features: Any) -> dict[str, Any]:
        """``parser``: the identity of the annotator that parsed the sources (``"none"`` without syntax)."""
        return {"parser": self.parser}

    def collator(self, context: TaskContext) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
        """:func:`collate_pairs` with the source pad id and the decoder start id (``<s>``)."""
        pad = context.pad_token_id
        return lambda items: collate_pairs(items, pad, BOS_ID)

    # -- runner hooks ----------------------------------------------------------------------------------
    def training_defaults(self) -> dict[str, Any]:
        """The papers' recipe at the ``cpu`` preset's budget (``Seq2SeqTrainingArguments`` names)."""
        return {
            "max_steps": 400,
            "per_device_train_batch_size": 128,
            "per_device_eval_batch_size": 64,
            "learning_rate": 1.5e-3,
            "warmup_steps": 100,
            "lr_scheduler_type": "inverse_sqrt",
            "optim": "adamw_torch",
            "adam_beta1": 0.9,
            "adam_beta2": 0.98,
            "adam_epsilon": 1e-8,
            "weight_decay": 0.0,
            "max_grad_norm": 1.0,
            "label_smoothing_factor": 0.1,
            "eval_strategy": "steps",
            "eval_steps": 50,
            "save_strategy": "steps",
            "save_steps": 50,
            "logging_steps": 50,
            "save_total_limit": 1,
            "load_best_model_at_end": True,
            "metric_for_best_model": "loss",
            "greater_is_better": False,
            "predict_with_generate": True,
            "generation_num_beams": 5,
            "report_to": [],
        }

    def build_tokenizer(self, train_data: ParallelCorpus, output_dir: str, context: TaskContext) -> Any:
        """BPE learned on the training split (or read from ``tokenizer_dir``), saved in ``output_dir``; returns the
        source tokenizer (the target one goes to ``context.extra["target_tokenizer"]``)."""
        shared = Path(self.tokenizer_dir) if self.tokenizer_dir else None
        if shared is not None and (shared / "source_tokenizer" / "tokenizer.json").is_file():
            src, tgt = load_tokenizers(shared)
        else:
            if train_data.targets is None:
                raise DataError(
                    f"the training data {train_data.name!r} has no target sentences to train a tokenizer on"
                )
            src = train_bpe(train_data.sources, self.source_vocab_size)
            tgt = train_bpe(train_data.targets, self.target_vocab_size)
            if shared is not None:
                save_tokenizers(src, tgt, shared)
        save_tokenizers(src, tgt, output_dir)
        self._use_tokenizers(src, tgt, context)
        return src

    def _use_tokenizers(self, src: Any, tgt: Any, context: TaskContext | None) -> None:
        self.source_tokenizer, self.target_tokenizer = src, tgt
        if context is not None:
            context.tokenizer = src
            context.extra["target_tokenizer"] = tgt

    def build_model(self, system: str | None, model_options: Mapping[str, Any], context: TaskContext) -> Any:
        """A :class:`~syntaxformer.modeling.seq2seq.SyntaxInfusedForConditionalGeneration` from random init.

        Args:
            system: an arm name (used when the task has no ``arm``), or anything else = the task's options.
            model_options: config options on top.
            context: brings the tokenizers (vocabulary sizes).

        The random init uses torch's global generator (``transformers.set_seed``).
        """
        names = ("features", "use_sg_layer", "sg_mask", "feature_dim", "feature_combine", "alpha", "preset")
        options: dict[str, Any] = {k: v for k, v in self.options().items() if k in names or k == "seq2seq_overrides"}
        if self.arm is None and system in ARMS:
            options.update(ARMS[system])
        options.update(model_options)
        if "tag_control" in options:  # a data option: featurize (after this) reads it from the task
            self.tag_control = _check_tag_control(options.pop("tag_control"), options["features"])
        src = context.tokenizer or self.source_tokenizer
        tgt = context.extra.get("target_tokenizer", self.target_tokenizer)
        if src is None or tgt is None:
            raise InputError("build the tokenizers (build_tokenizer / load_tokenizer) before the model")
        preset = options.pop("preset")
        config = build_config(preset, len(src), len(tgt), **options)
        model = SyntaxInfusedForConditionalGeneration(config)
        context.syntax_inputs = config.syntax_inputs
        return model

    # -- predictions -----------------------------------------------------------------------------------
    def postprocess(
        self, data: ParallelCorpus, features: Any, raw: Any, auxiliary: Mapping[str, Any] | None = None
    ) -> Predictions:
        """Generated ids ``[N, T]`` (-100 / pad padded; or a ``PredictionOutput``) -> detokenised translations."""
        if self.target_tokenizer is None:
            raise InputError("postprocess needs the target tokenizer (build_tokenizer / load_tokenizer)")
        ids = getattr(raw, "predictions", raw)
        ids = np.asarray(ids[0] if isinstance(ids, (tuple, list)) else ids)
        texts = decode_translations(ids, self.target_tokenizer)
        if len(texts) != len(data):
            raise InputError(f"{len(texts)} translations for the {len(data)} sentences of {data.name!r}")
        return Predictions(ids=list(data.ids), values=texts)

    def compute_metrics(self, data: ParallelCorpus, predictions: Predictions) -> dict[str, Any]:
        """sacreBLEU corpus BLEU against the references: ``{"bleu", "signature", "verbose"}``."""
        if data.targets is None:
            raise DataError(f"{data.name or 'the corpus'} has no references to score BLEU against")
        return corpus_bleu(predictions.values, data.targets)

    def evaluation_splits(self) -> tuple[str, ...]:
        """The ``eval_sets`` translated after training (without any: ``dev``, your validation files)."""
        if self.train_source and not self.eval_sets:
            return ("dev",)
        return tuple(self.eval_sets)

    def load_tokenizer(self, run_dir: str, context: TaskContext) -> Any:
        """Both BPE vocabularies of a model folder, also set on the task and ``context`` (the source one is
        returned)."""
        src, tgt = load_tokenizers(run_dir)
        self._use_tokenizers(src, tgt, context)
        return src

    def describe_run(self, model: Any) -> dict[str, Any]:
        """The arm, its features and layer, the training fraction and the vocabulary sizes."""
        arm = self.arm or "custom"
        return {
            "model_type": f"Syntax-Infused Transformer ({arm} arm)",
            "model_family": "translation",
            "arm": self.arm,
            "features": list(self.features),
            "use_sg_layer": self.use_sg_layer,
            "sg_mask": self.sg_mask if self.use_sg_layer else None,
            "tag_control": self.tag_control,
            "fraction": self.fraction,
            "preset": self.preset,
            "vocab": {
                "source": len(self.source_tokenizer) if self.source_tokenizer is not None else None,
                "target": len(self.target_tokenizer) if self.target_tokenizer is not None else None,
            },
        }

    def run_files(self, data: ParallelCorpus, predictions: Predictions) -> dict[str, Any]:
        """``hyp.<set>.txt``: the translations, one per line (``<set>``: the corpus name's last part)."""
        return {f"hyp.{Path(data.name).name}.txt": "".join(v + "\n" for v in predictions.values)}

    def prediction_records(self, data: ParallelCorpus, predictions: Predictions) -> list[dict[str, Any]]:
        """Per sentence, named as ``predict --input`` names them, and ``reference`` when known."""
        targets: list[str | None] = [None] * len(predictions.values) if data.targets is None else list(data.targets)
        return [
            {"id": i, "text": s, "translation": v, **({"reference": t} if t is not None else {})}
            for i, s, v, t in zip(predictions.ids, data.sources, predictions.values, targets)
        ]


def _check_tag_control(tag_control: str | None, features: Sequence[str]) -> str | None:
    if tag_control is None:
        return None
    if tag_control not in TAG_CONTROLS:
        raise ConfigError(f"unknown tag_control {tag_control!r}; expected one of {', '.join(TAG_CONTROLS)} or None")
    if not {"upos", "subword"} <= set(features):
        raise ConfigError(
            f"tag_control={tag_control!r} replaces the UPOS tags and finds words by the subword feature: it needs "
            f"features upos and subword, got {list(features)}"
        )
    return tag_control


def control_tags(upos_ids: np.ndarray, subword_ids: np.ndarray, control: str, rng: np.random.Generator) -> np.ndarray:
    """One sentence's UPOS ids ``[L]`` with the tags replaced word by word (every piece of a word keeps one tag).

    Args:
        upos_ids: ``[L]`` tag ids per piece (0 at special tokens).
        subword_ids: ``[L]`` B/M/E/O ids per piece: a word starts at ``B`` or ``O``.
        control: ``"shuffle"``: the sentence's word tags permuted; ``"random"``: drawn uniformly from the UPOS tags.
        rng: the generator of this sentence.
    """
    starts = np.isin(subword_ids, [N_RESERVED + SUBWORD_VALUES.index(v) for v in ("B", "O")])
    visible = subword_ids > 0
    word = np.cumsum(starts) - 1  # [L] word number of each piece (-1 before the first word)
    inside = visible & (word >= 0)
    first = np.flatnonzero(starts & visible)
    tags = upos_ids[first]  # [W] one tag per word
    if control == "shuffle":
        new = rng.permutation(tags)
    else:
        new = rng.integers(N_RESERVED, N_RESERVED + len(UPOS_TAGS), size=len(tags))
    out = upos_ids.copy()
    out[inside] = new[word[inside]]
    return out


register_task(TranslationTask)
