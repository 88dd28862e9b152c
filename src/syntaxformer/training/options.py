"""Every option of a run in one place: where a name goes, which value wins, and the command-line flags.

**Where a name goes** (:func:`syntaxformer.training.config.route_options` applies it to every config, whether it
comes from a file, ``--set``, the flags or a Python dict), first match wins:

1. a field of :class:`~syntaxformer.training.config.RunConfig` (``learning_rate``, ``max_length``, ``eval_strategy``);
2. a Hugging Face spelling of one (:data:`HF_SPELLINGS`: ``max_seq_length``, ``validation_file``, ``warmup_ratio``,
   ``bf16`` / ``fp16`` -> ``mixed_precision``, ``resume_from_checkpoint`` -> ``resume`` ...), converted by
   :func:`from_hf_spellings`;
3. the shorthands ``trees``, ``use_syntax``, ``sst_phrases`` (:data:`SHORTHANDS`);
4. an option of the task (``doc_stride``, ``max_answer_length``, ``text_column`` ...: ``task_options``);
5. an option of a system's model config (``alpha``, ``lisa_layer`` ...: ``model``);
6. any other field of ``transformers.Seq2SeqTrainingArguments`` (``report_to``, ``push_to_hub``, ``optim``,
   ``logging_strategy`` ...): passed to the Trainer as it is (``training_args``).

**Which value wins** (:func:`resolve_config`): the command line > the config file (with ``--set`` applied to it) >
a command's presets (``compare``) > the task's training defaults (SQuAD's ``max_length`` 384) > the library
defaults (the :class:`RunConfig` field defaults).

**The flags** (:func:`add_run_options`) are generated from the same sources, each under its own name with
underscores (the Hugging Face spelling, ``--warmup_ratio``) and with dashes (``--warmup-ratio``), plus the short
spellings a :class:`RunConfig` field lists in its metadata (``--epochs``, ``--batch-size``, ``--model``,
``--no-progress``); the help text is each option's docstring entry. A flag the user did not
give is absent from the parsed arguments (``argparse.SUPPRESS``), so :func:`given_options` is exactly what the
command line set, and the precedence needs no list of names.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import logging
import os
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError
from syntaxformer.training.config import (
    RunConfig,
    _system_choices,
    apply_overrides,
    model_config_class,
    model_option_names,
    read_config_file,
    route_options,
)
from syntaxformer.training.spellings import (
    HF_SPELLINGS,
    _training_argument_fields,
    from_hf_spellings,
    merge_options,
    training_argument_names,
)
from syntaxformer.training.values import BOOLEAN_WORDS, _field_types, _parse_scalar

__all__ = [
    "HF_SPELLINGS",
    "SHORTHANDS",
    "add_run_options",
    "from_hf_spellings",
    "given_options",
    "merge_options",
    "resolve_config",
    "training_argument_names",
    "with_task_defaults",
]

#: Shorthand options (:func:`~syntaxformer.training.config.route_options`) -> (type, help).
SHORTHANDS: dict[str, tuple[Any, str]] = {
    "trees": (
        typing.Literal["both", "dependency", "constituency"],
        "Syntax-BERT: trees of the sub-networks (sets model.use_dependency / model.use_constituency)",
    ),
    "use_syntax": (
        bool,
        "Syntax-BERT: sub-networks in every layer (true) or the plain encoder with the Syntax-BERT head (false)",
    ),
    "sst_phrases": (
        bool,
        (
            "SST tree tasks: also train on every phrase of more than 3 words (the paper's setting; default false: "
            "sentences only)"
        ),
    ),
}
#: The data files a flag names: recorded as absolute paths, so `evaluate` / `predict` find them from any folder.
_FILES = ("train_file", "dev_file", "test_file")
#: The namespace attribute that lists the run options a parser has (set by :func:`add_run_options`).
_NAMES = "_run_option_names"

logger = logging.getLogger(__name__)


# -- which value wins -------------------------------------------------------------------------------------------
def resolve_config(
    cli: Mapping[str, Any] | None = None,
    *,
    config_file: str | os.PathLike | None = None,
    overrides: Iterable[str] = (),
    presets: Mapping[str, Any] | None = None,
    check: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
    task_defaults: bool = True,
) -> Any:
    """The run config of a command: **command line > config file (``--set`` applied to it) > presets > task
    defaults > library defaults**, routed and validated once, with the task built once.

    Args:
        cli: the options given as flags (:func:`given_options`).
        config_file: a JSON / YAML file of options, or ``None``.
        overrides: ``key=value`` strings (``--set``), applied to the file's options.
        presets: a command's own defaults (``compare``'s quick settings); they count as given, so the task's
            defaults do not replace them.
        check: called with what the user gave (command line over the file, before the presets); returns options to
            add at the command line's rank (e.g. the task inferred from ``--train-file``).
        task_defaults: fill the options nobody gave from the task's training defaults.

    Returns:
        A :class:`~syntaxformer.training.config.RunConfig` whose :attr:`given` names the options set by a layer
        above the library defaults; its task is built (``config.build_task()`` returns that one).

    Raises:
        ConfigError: an unknown option, an invalid value, or an option the task ignores (even at its default).
    """
    file_layer = apply_overrides(read_config_file(config_file) if config_file is not None else {}, overrides)
    user = merge_options(file_layer, cli)
    if check is not None:
        user = merge_options(user, check(user))
    data = route_options(merge_options(presets, user))
    given: frozenset[str] = frozenset(data)
    data["task_options"] = _absolute_files(data.get("task_options") or {})
    task_name = data.get("task", RunConfig.task)
    from syntaxformer.tasks import get_task

    task = get_task(task_name, **data["task_options"])
    for name, instead in task.unused_options.items():
        if name in user:
            raise ConfigError(f"{task_name} does not use {name}={user[name]!r}: {instead}")
    if task_defaults:
        fields = {f.name for f in dataclasses.fields(RunConfig)}
        for key, value in task.training_defaults().items():
            if key not in fields:  # a TrainingArguments field the run config does not name: under training_args
                data["training_args"] = {key: value, **(data.get("training_args") or {})}
            elif key not in given:
                data[key] = value
        given = given | set(task.training_defaults())
    config = RunConfig.from_dict(data, task=task)
    config.given = given
    return config


def with_task_defaults(config: Any, task: Any) -> Any:
    """``config`` with the task's training defaults for the options it was not given (:attr:`RunConfig.given`; a
    config constructed directly: those still at their global defaults). The same config when nothing changes (a
    config from :func:`resolve_config` has them already)."""
    defaults = task.training_defaults()
    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    changes = {}
    extra = dict(config.training_args)
    for key, value in defaults.items():
        if key not in fields:  # a TrainingArguments field the run config does not name: under training_args
            extra.setdefault(key, value)
            continue
        if config.given is not None:
            if key not in config.given and getattr(config, key) != value:
                changes[key] = value
            continue
        f = fields[key]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[operator]
        if getattr(config, key) == default and default != value:
            changes[key] = value
    if extra != config.training_args:
        changes["training_args"] = extra
    return config.replace(**changes) if changes else config


#: The learning rate of a run on a small pretrained encoder (hidden size at most :data:`SMALL_ENCODER_HIDDEN`) when
#: nobody chose one (command line, config file, task defaults): the library default 2e-5 is the BERT-base setting,
#: and on all-MiniLM-L6-v2 (hidden 384) it leaves CoLA nearly untrained (dev MCC 0.04 after 3 epochs); 1e-4 is
#: measured in docs/results.md ("Do the defaults give a usable model?").
SMALL_ENCODER_LEARNING_RATE = 1e-4
SMALL_ENCODER_HIDDEN = 512


def _encoder_hidden_size(path: str) -> int | None:
    """The hidden size of the encoder a run starts from (a model name or folder), or ``None`` if unknown."""
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError):  # the model stage reports an encoder that cannot be loaded
        return None
    size = getattr(config, "hidden_size", None) or getattr(config, "d_model", None)
    return int(size) if isinstance(size, int) and size > 0 else None


def with_encoder_defaults(config: Any, *, announce: bool = True) -> Any:
    """``config`` with the learning rate for small encoders (:data:`SMALL_ENCODER_LEARNING_RATE`) when the run was
    given none (:attr:`RunConfig.given`, which includes the task's training defaults; a config constructed directly:
    a learning rate still at the library default) and its encoder's hidden size is at most
    :data:`SMALL_ENCODER_HIDDEN`; announced in one log line (``announce``; :class:`TrainRecipe` announces it when
    training starts, after every check of the run could refuse it). The same config otherwise."""
    if config.given is not None and "learning_rate" in config.given:
        return config
    if config.given is None and config.learning_rate != RunConfig.learning_rate:
        return config
    hidden = _encoder_hidden_size(config.resolved_model())
    if hidden is None or hidden > SMALL_ENCODER_HIDDEN:
        return config
    if announce:
        logger.info(small_encoder_note(hidden))
    return config.replace(learning_rate=SMALL_ENCODER_LEARNING_RATE)


def small_encoder_note(hidden: int) -> str:
    """The log line that announces the small-encoder learning rate."""
    return (
        f"learning rate {SMALL_ENCODER_LEARNING_RATE:g}: the default for small encoders (hidden size {hidden} <= "
        f"{SMALL_ENCODER_HIDDEN}; --learning-rate sets another)"
    )


def _absolute_files(value: Any) -> Any:
    """Task options with every relative path of an existing file made absolute (``train_source=train.en`` ...),
    so the run folder's ``run.json`` finds them from any working folder; other values unchanged."""
    if isinstance(value, str):
        return os.path.abspath(value) if value and not os.path.isabs(value) and os.path.isfile(value) else value
    if isinstance(value, list):
        return [_absolute_files(v) for v in value]
    if isinstance(value, dict):
        return {k: _absolute_files(v) for k, v in value.items()}
    return value


# -- the flags --------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class _Option:
    """One run option as the command line offers it."""

    name: str
    hint: Any
    help: str
    group: str
    flags: tuple[str, ...] = ()  # extra spellings (a RunConfig field's metadata)
    switches: tuple[str, ...] = ()  # flags that set the option to true and take no value (--no-progress)


def add_run_options(parser: argparse.ArgumentParser, *, training: bool = True) -> None:
    """Add every run option to ``parser`` (module docstring), in groups; without ``training`` only the options an
    evaluation may change (the :class:`RunConfig` fields marked ``evaluate`` in their metadata, and their Hugging
    Face spellings). Options the user does not give stay out of the parsed namespace."""
    if training and parser.usage is None:  # the option list is long: the usage line names the main ones
        parser.usage = "%(prog)s [--config FILE] [--set KEY=VALUE ...] [--task TASK] [--OPTION VALUE ...]"
    groups: dict[str, Any] = {}
    names: list[str] = []
    for option in _options(training):
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        group = groups[option.group]
        spellings = [f"--{option.name.replace('_', '-')}", f"--{option.name}", *option.flags]
        strings = [s for s in dict.fromkeys(spellings) if s not in parser._option_string_actions]
        if not strings:
            continue
        kwargs = _argparse_kwargs(option.hint)
        group.add_argument(*strings, dest=option.name, default=argparse.SUPPRESS, help=_escape(option.help), **kwargs)
        for switch in option.switches:
            group.add_argument(
                switch,
                dest=option.name,
                action="store_const",
                const=True,
                default=argparse.SUPPRESS,
                help=f"= {strings[0]} true",
            )
        names.append(option.name)
    parser.set_defaults(**{_NAMES: tuple(names)})


def given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The run options given on the command line (those not given are absent); the data files named there as
    absolute paths."""
    out = {name: getattr(args, name) for name in getattr(args, _NAMES, ()) if hasattr(args, name)}
    for key in (*_FILES, "validation_file"):
        if isinstance(out.get(key), str) and os.path.exists(out[key]):
            out[key] = os.path.abspath(out[key])
    return out


def _options(training: bool) -> list[_Option]:
    """The run options, in the order of the module docstring (a name appears once: the first source wins)."""
    out: dict[str, _Option] = {}
    hints = _field_types(RunConfig)
    helps = _docstring_entries(RunConfig)
    evaluate_fields = set()
    for f in dataclasses.fields(RunConfig):
        meta = f.metadata.get("cli", {})
        if meta.get("evaluate"):
            evaluate_fields.add(f.name)
        if typing.get_origin(hints[f.name]) is dict or hints[f.name] is dict:
            continue  # nested sections: --set section.name=value
        if not training and f.name not in evaluate_fields:
            continue
        text, group = helps.get(f.name, ("", "options"))
        hint = typing.Literal[meta["choices"]()] if meta.get("choices") else hints[f.name]
        out[f.name] = _Option(f.name, hint, text, group, meta.get("flags", ()), meta.get("switches", ()))
    for hf, ours in HF_SPELLINGS.items():
        if training or ours in evaluate_fields:
            hint = bool if hf in ("bf16", "fp16") else float if hf == "warmup_ratio" else hints.get(ours, str)
            out.setdefault(hf, _Option(hf, hint, f"Hugging Face spelling of --{ours.replace('_', '-')}", "data"))
    if not training:
        return list(out.values())
    own = "your own data and the tasks' options"
    for name, (hint, text) in SHORTHANDS.items():
        out.setdefault(name, _Option(name, hint, text, "model options (any other: --set model.NAME=VALUE)"))
    for name, (hint, text) in _task_options().items():
        out.setdefault(name, _Option(name, hint, text, own))
    for name, (hint, text) in _model_options().items():
        out.setdefault(name, _Option(name, hint, text, "model options (any other: --set model.NAME=VALUE)"))
    for f in _training_argument_fields():
        text = _short(" ".join(str(f.metadata.get("help", "")).split()))
        out.setdefault(f.name, _Option(f.name, f.type, text, "other Hugging Face TrainingArguments"))
    return list(out.values())


def _task_options() -> dict[str, tuple[Any, str]]:
    """Option name -> (annotation, help) over the built-in tasks' constructors (:func:`task_option_names`)."""
    from syntaxformer.errors import SyntaxformerError
    from syntaxformer.registry import TASKS
    from syntaxformer.tasks import task_names

    found: dict[str, tuple[Any, str]] = {}
    users: dict[str, list[str]] = {}
    for name in task_names():
        try:
            factory: Any = TASKS.get(name)
        except SyntaxformerError:  # an entry point that cannot be loaded: its options are not offered as flags
            continue
        target = factory.__init__ if isinstance(factory, type) else factory  # type: ignore[misc]
        try:
            params = inspect.signature(target).parameters
            hints = typing.get_type_hints(target)
        except (NameError, TypeError, ValueError):  # an annotation that does not resolve: --set still gives it
            continue
        docs = _docstring_entries(factory)
        for p in params.values():
            if p.name == "self" or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                continue
            users.setdefault(p.name, []).append(name)
            if p.name not in found:
                found[p.name] = (hints.get(p.name, str), docs.get(p.name, ("", ""))[0])
    return {
        k: (hint, f"{text + ' ' if text else ''}(task option of {', '.join(users[k])})")
        for k, (hint, text) in found.items()
    }


def _model_options() -> dict[str, tuple[Any, str]]:
    """Option name -> (annotation, help) of the systems' own config fields (not the ``PretrainedConfig`` ones)."""
    from transformers import PretrainedConfig

    base = (
        {f.name for f in dataclasses.fields(PretrainedConfig)} if dataclasses.is_dataclass(PretrainedConfig) else set()
    )
    out: dict[str, tuple[Any, str]] = {}
    for system in _system_choices():
        try:
            cls = model_config_class(system)
        except ConfigError as e:  # a plugin that cannot be loaded blocks no other system (warned once)
            _registry.SYSTEMS.report(str(e))
            continue
        hints, docs = _field_types(cls), _docstring_entries(cls)
        for name in model_option_names(system):
            if name not in base and name not in out:
                out[name] = (hints.get(name), f"{docs.get(name, ('', ''))[0]} ({cls.__name__})".strip())
    return out


def _bool(text: str) -> bool:
    value = BOOLEAN_WORDS.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")
    return value


def _value(text: str) -> Any:
    """A flag value read as a YAML scalar (``null``, ``false``, ``[1, 2]``), as ``--set`` reads it."""
    return _parse_scalar(text)


def _argparse_kwargs(hint: Any) -> dict[str, Any]:
    """``add_argument`` keywords for an option of annotation ``hint``: booleans take an optional value
    (``--bf16`` = ``--bf16 true``), ``Literal`` its choices, numbers their type, lists one or more values; other
    values are read as YAML scalars and checked when the config is built."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] if _is_union(hint) else [hint]
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
        return {"type": _value, "nargs": "?", "const": True}
    if any(typing.get_origin(a) is list for a in args) and all(typing.get_origin(a) is list or a is str for a in args):
        return {"nargs": "+", "metavar": "VALUE"}
    return {"type": _value, "metavar": "VALUE"}


def _is_union(hint: Any) -> bool:
    import types

    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _short(text: str, limit: int = 320) -> str:
    """``text`` up to ``limit`` characters, cut after a whole sentence where it is longer."""
    if len(text) <= limit:
        return text
    end = text.rfind(". ", 0, limit)
    return text[: end + 1] if end > 40 else text[:limit].rsplit(" ", 1)[0] + " ..."


def _escape(text: str) -> str:
    return text.replace("%", "%%")


_ENTRY = re.compile(r"^(?P<names>[a-z_][a-z0-9_]*(?:\s*(?:\([^)]*\))?\s*,\s*[a-z_][a-z0-9_]*)*)\s*(?:\([^)]*\))?:\s")


def _docstring_entries(obj: Any) -> dict[str, tuple[str, str]]:
    """``name -> (text, section)`` of the Google-style entries (``name: text``, continuation lines
    indented deeper; ``a, b: text`` documents several names) in ``obj``'s docstring."""
    doc = inspect.cleandoc(obj.__doc__ or "")
    out: dict[str, tuple[str, str]] = {}
    section, entry, base = "options", "", None
    entries: list[tuple[str, str]] = []
    for line in doc.splitlines() + [""]:
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if stripped and indent == 0 and stripped.endswith(":"):
            if entry:
                entries.append((entry, section))
            entry, base = "", None
            section = re.sub(r"\s*\(.*\)", "", stripped[:-1]).strip().lower()
            continue
        if stripped and (base is None or indent == base) and indent > 0:
            if entry:
                entries.append((entry, section))
            entry, base = stripped, indent
        elif stripped and base is not None and indent > base:
            entry += " " + stripped
        elif not stripped and entry:
            entries.append((entry, section))
            entry = ""
    for text, sec in entries:
        _, sep, rest = text.partition(": ")
        match = _ENTRY.match(text)
        if not sep or not match:
            continue
        sentence = _short(re.sub(r":[a-z]+:`~?([^`]*)`", r"\1", rest).replace("``", ""))
        for name in re.findall(r"[a-z_][a-z0-9_]*", re.sub(r"\([^)]*\)", "", match.group("names"))):
            out.setdefault(name, (sentence, sec))
    return out
