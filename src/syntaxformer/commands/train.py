"""``syntaxformer train``: train SG-Net, Syntax-BERT (or a plain-encoder baseline) on any registered task, or the
Syntax-Infused Transformer on translation.

Every run option is a flag (dashes or underscores), built from one description, as ``transformers.HfArgumentParser``
builds flags from dataclass fields: the :class:`syntaxformer.training.RunConfig` fields, their Hugging Face spellings,
the tasks' and systems' options, then every other ``TrainingArguments`` field. A flag not given stays out of the
parsed arguments (:func:`explicit_options`). Flags win over ``--config`` with its ``--set`` overrides, which win over
a command's presets, the task's defaults and the library's (:func:`config_from_args`; docs/architecture.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import tempfile
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from transformers import PretrainedConfig

from syntaxformer.errors import ConfigError
from syntaxformer.registry import TASKS
from syntaxformer.sharing import check_hub_push, export_model
from syntaxformer.tasks.base import task_names, task_option_names, task_option_types
from syntaxformer.tasks.custom import task_for_data
from syntaxformer.training import run as training_run  # called through the module: tests replace its train
from syntaxformer.training.config import (
    BOOLEAN_WORDS,
    HF_SPELLINGS,
    SHORTHANDS,
    SYSTEMS,
    RunConfig,
    config_data,
    field_types,
    merge_options,
    model_config_class,
    model_option_names,
    parse_scalar,
    training_argument_fields,
)

#: The option groups of ``--help``, in order: ours first, the Trainer's last.
TASK_GROUP, MODEL_GROUP = "your own data and the tasks' options", "model options (any other: --set model.NAME=VALUE)"
TRAINER_GROUP = "other Hugging Face TrainingArguments (passed to the Trainer as they are)"
GROUPS = ("task and data", "training", "model", "syntax and features", "output", TASK_GROUP, MODEL_GROUP, TRAINER_GROUP)
#: Options of the user's own data (task options of `custom` / `custom-mc`) -> their flags.
_COLUMN_FLAGS = {
    "text_column": "--text-column",
    "text_pair_column": "--text-pair-column",
    "label_column": "--label-column",
    "id_column": "--id-column",
}
#: The namespace attribute that lists the run options a parser has (set by :func:`add_config_arguments`).
_NAMES = "_run_option_names"


def add_config_arguments(parser: argparse.ArgumentParser, *, training: bool = True) -> None:
    """``--config``, ``--set`` and a flag for every run option (module docstring), in :data:`GROUPS`; without
    ``training`` only the options an evaluation may change (the :class:`RunConfig` fields marked ``evaluate``, and
    their Hugging Face spellings). Options the user does not give stay out of the parsed namespace."""
    g = parser.add_argument_group("configuration")
    g.add_argument("--config", metavar="FILE", help="JSON or YAML file of RunConfig options")
    g.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one option (repeatable; dotted keys reach model.*, task_options.*, "
        "training_args.*), e.g. --set alpha=0.3 --set training_args.optim=adamw_torch",
    )
    if training and parser.usage is None:  # the option list is long: the usage line names the main ones
        parser.usage = (
            "%(prog)s [--config FILE] [--set KEY=VALUE ...] [--task TASK] [--learning-rate X] [--epochs X] "
            "[--OPTION VALUE ...]"
        )
    groups = {title: parser.add_argument_group(title) for title in GROUPS}
    names: list[str] = []
    for name, hint, text, group, flags, switches in _options(training):
        spellings = [f"--{name.replace('_', '-')}", f"--{name}", *flags]
        strings = [s for s in dict.fromkeys(spellings) if s not in parser._option_string_actions]
        if not strings:
            continue
        kwargs = _argparse_kwargs(hint)
        help_ = text.replace("%", "%%")
        groups[group].add_argument(*strings, dest=name, default=argparse.SUPPRESS, help=help_, **kwargs)
        for switch in switches:
            groups[group].add_argument(
                switch,
                dest=name,
                action="store_const",
                const=True,
                default=argparse.SUPPRESS,
                help=f"= {strings[0]} true",
            )
        names.append(name)
    parser.set_defaults(**{_NAMES: tuple(names)})


#: The options of ``syntaxformer train``: every run option.
add_arguments = add_config_arguments


def explicit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The run options given on the command line (those not given are absent); the data files named there as
    absolute paths, so that `evaluate` / `predict` find them from any folder."""
    out = {name: getattr(args, name) for name in getattr(args, _NAMES, ()) if hasattr(args, name)}
    for key in ("train_file", "dev_file", "test_file", "validation_file"):
        if isinstance(out.get(key), str) and os.path.exists(out[key]):
            out[key] = os.path.abspath(out[key])
    return out


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """What the user gave: the flags over ``--config`` with its ``--set`` overrides (not yet routed)."""
    return config_data(args.config, args.overrides, **explicit_options(args))


def config_from_args(
    args: argparse.Namespace,
    defaults: Mapping[str, Any] | None = None,
    *,
    check: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
) -> RunConfig:
    """The :class:`~syntaxformer.training.RunConfig` of a command line (module docstring) over ``defaults`` (a
    command's presets; they count as given, so the task's defaults do not replace them). ``check`` is called with
    what the user gave and returns options to add at the flags' rank (the task inferred from ``--train-file``). Task
    option values naming existing files are made absolute, so ``run.json`` finds them from any folder."""
    user = given_options(args)
    if check is not None:
        user = merge_options(user, check(user))
    data = merge_options(defaults, user)
    for key in [*task_option_names(str(data.get("task", RunConfig.task))), "task_options"]:
        if key in data:
            data[key] = _absolute_files(data[key])
    return RunConfig.from_dict(data)


def summary(metrics: Mapping[str, Any], output_dir: str) -> dict[str, Any]:
    """What the command prints: the task, the system, the headline scores (flat numbers only) and the folder."""
    flat = {k: v for k, v in metrics["dev"].items() if isinstance(v, (int, float, str)) and k != "verbose"}
    return {"task": metrics["task"], "model_type": metrics["model_type"], "dev": flat, "output_dir": output_dir}


def task_or_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """``train`` needs a task (``--task``, or ``task:`` in ``--config`` / ``--set``) or the user's own data
    (``--train-file`` / ``--dataset`` without a task: :func:`syntaxformer.tasks.custom.task_for_data` picks ``custom``,
    ``custom-qa`` or ``custom-mc``): no silent SST-2 default. Column flags with a task that reads its own columns are an
    error. Arguments: data: the options the user gave (flags over the config file). Returns the options to add to the
    config (``{"task": ...}`` when it was inferred), else ``{}``."""
    task = data.get("task")
    extra: dict[str, Any] = {}
    given = [k for k in _COLUMN_FLAGS if data.get(k) is not None]
    if not task:
        if not (data.get("train_file") or data.get("dataset")):
            raise ConfigError(
                f"no task given: pass --task NAME (one of {', '.join(task_names())}, or a task you "
                "registered with syntaxformer.tasks.register_task), `task:` in --config, or your own "
                "data: --train-file FILE (CSV / TSV / JSON / JSONL) --text-column C --label-column C"
            )
        task = extra["task"] = task_for_data(data.get("train_file"), data.get("dataset"), given)
    takes = set(task_option_names(str(task)))
    wrong = [_COLUMN_FLAGS[k] for k in given if k not in takes]
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)} do(es) not apply to --task {task}, which reads its own columns; "
            "column options are for your own data: --task custom (or --train-file without --task)"
        )
    return extra


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args, check=task_or_data)
    if config.output_dir == RunConfig.output_dir and "output_dir" not in (config.given or ()):
        # the library default, given by no flag and no config file: say where the run goes
        logging.getLogger(__name__).warning(
            "no --output-dir given: the run goes to %s (the default)", config.output_dir
        )
    hub = _hub_push(config)
    metrics = training_run.train(config)
    print(json.dumps(summary(metrics, config.output_dir), indent=2))
    if hub is not None and os.environ.get("RANK", "0") == "0":  # one push, from the main process
        with tempfile.TemporaryDirectory() as tmp:
            export_model(config.output_dir, Path(tmp) / Path(config.output_dir).name, push_to_hub=hub[0], token=hub[1])
    return 0


def _hub_push(config: RunConfig) -> tuple[str, str] | None:
    """``--push_to_hub``: the hub repository (``--hub_model_id``, else the run folder's name) and the token, checked
    before any work. The Trainer is kept from pushing the run folder (which needs syntaxformer installed): after
    training, the run is exported to a temporary folder and that self-contained folder is pushed."""
    args = config.training_args
    if not args.get("push_to_hub"):
        return None
    if not config.save_model:
        raise ConfigError("--push_to_hub pushes the exported model: it needs the model saved (drop save_model=false)")
    repo = str(args.get("hub_model_id") or Path(config.output_dir).name)
    token = check_hub_push(repo, args.get("hub_token"))
    config.training_args = {k: v for k, v in args.items() if k != "push_to_hub"}
    return repo, token


# -- the flags, from the one description ------------------------------------------------------------------------
_Option = tuple[str, Any, str, str, tuple[str, ...], tuple[str, ...]]  # name, hint, help, group, flags, switches


def _options(training: bool) -> list[_Option]:
    """Every run option once (the first source of a name wins): the :class:`RunConfig` fields, their Hugging Face
    spellings, the shorthands, the tasks' options, the systems' model options, the other ``TrainingArguments``."""
    hints = field_types(RunConfig)
    out: dict[str, _Option] = {}
    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    for f in fields.values():
        meta = f.metadata
        if typing.get_origin(hints[f.name]) is dict or not (training or meta["evaluate"]):
            continue  # nested sections: --set section.name=value
        hint = typing.Literal[meta["choices"]()] if meta.get("choices") else hints[f.name]
        out[f.name] = (f.name, hint, meta["help"], meta["group"], meta["flags"], meta.get("switches", ()))
    for hf, ours in HF_SPELLINGS.items():
        if ours in fields and (training or fields[ours].metadata["evaluate"]):
            hint = bool if hf in ("bf16", "fp16") else float if hf == "warmup_ratio" else hints[ours]
            text = f"Hugging Face spelling of --{ours.replace('_', '-')}" + (f" {hf}" if hf in ("bf16", "fp16") else "")
            out.setdefault(hf, (hf, hint, text, fields[ours].metadata["group"], (), ()))
        elif training:
            out.setdefault(hf, (hf, str, f"Hugging Face spelling of --{ours.replace('_', '-')}", TASK_GROUP, (), ()))
    if not training:
        return list(out.values())
    for name, (hint, text) in SHORTHANDS.items():
        out.setdefault(name, (name, hint, text, MODEL_GROUP, (), ()))
    for name, (hint, text) in {**_task_options(), **_model_options()}.items():
        out.setdefault(name, (name, hint, text, TASK_GROUP if "task option" in text else MODEL_GROUP, (), ()))
    for f in training_argument_fields():
        text = " ".join(str(f.metadata.get("help", "")).split())
        end = text.find(". ")
        out.setdefault(f.name, (f.name, f.type, text[: end + 1] if end > 0 else text, TRAINER_GROUP, (), ()))
    return list(out.values())


def _task_options() -> dict[str, tuple[Any, str]]:
    """Option name -> (annotation, help) over the registered tasks' constructors."""
    found: dict[str, Any] = {}
    users: dict[str, list[str]] = {}
    for name in task_names():
        options = task_option_types(name)
        if None in options.values():  # an annotation that does not resolve: --set still gives it
            continue
        for option, hint in options.items():  # an entry point that cannot be loaded has none: no flags
            users.setdefault(option, []).append(f"{name} ({getattr(TASKS.get(name), '__qualname__', name)})")
            found.setdefault(option, hint)
    return {k: (hint, f"task option of {', '.join(users[k])}") for k, hint in found.items()}


def _model_options() -> dict[str, tuple[Any, str]]:
    """Option name -> (annotation, help) of the systems' own config fields (not the ``PretrainedConfig`` ones)."""
    base = {f.name for f in dataclasses.fields(PretrainedConfig)}
    out: dict[str, tuple[Any, str]] = {}
    for system in tuple(SYSTEMS):
        try:
            cls = model_config_class(system)
        except ConfigError as e:  # a plugin that cannot be loaded blocks no other system (warned once)
            SYSTEMS.report(str(e))
            continue
        hints = field_types(cls)
        for name in model_option_names(system):
            if name not in base and name not in out:
                out[name] = (hints.get(name), f"model option of {cls.__name__} (model_type={system}; see its docs)")
    return out


def _bool(text: str) -> bool:
    value = BOOLEAN_WORDS.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")
    return value


def _argparse_kwargs(hint: Any) -> dict[str, Any]:
    """``add_argument`` keywords for an option of annotation ``hint``: booleans take an optional value
    (``--bf16`` = ``--bf16 true``), ``Literal`` its choices, numbers their type, lists one or more values; other
    values are read as YAML scalars, as ``--set`` reads them, and checked when the config is built."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = [a for a in typing.get_args(hint) if a is not type(None)] if union else [hint]
    if len(args) == 1 and typing.get_origin(args[0]) is typing.Literal:
        choices = typing.get_args(args[0])
        if all(isinstance(c, str) for c in choices):
            return {"choices": choices}
    if args == [bool]:
        return {"type": _bool, "nargs": "?", "const": True, "metavar": "BOOL"}
    if args == [int]:
        return {"type": int, "metavar": "N"}
    if set(args) in ({float}, {float, int}):
        return {"type": float, "metavar": "X"}
    if args == [str]:
        return {"metavar": "TEXT"}
    if bool in args and str in args:  # a switch or a path (resume, parse_cache)
        return {"type": parse_scalar, "nargs": "?", "const": True}
    if any(typing.get_origin(a) is list for a in args) and all(typing.get_origin(a) is list or a is str for a in args):
        return {"nargs": "+", "metavar": "VALUE"}
    return {"type": parse_scalar, "metavar": "VALUE"}


def _absolute_files(value: Any) -> Any:
    """``value`` with every relative path of an existing file made absolute (``train_source=train.en`` ...), so the
    run folder's ``run.json`` finds them from any working folder; other values unchanged."""
    if isinstance(value, str):
        return os.path.abspath(value) if value and not os.path.isabs(value) and os.path.isfile(value) else value
    if isinstance(value, list):
        return [_absolute_files(v) for v in value]
    if isinstance(value, dict):
        return {k: _absolute_files(v) for k, v in value.items()}
    return value
