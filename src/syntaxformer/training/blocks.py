"""The building blocks of a run, shared by ``train`` (:class:`~syntaxformer.training.recipe.TrainRecipe`),
``evaluate`` and ``predict``: the tokenizer, the model, the featurization context, the data of a split, the parts
``run.json`` records, and the names of what a run trained; re-exported by :mod:`syntaxformer.training.run`."""

from __future__ import annotations

import json
import logging
import platform
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoConfig, AutoTokenizer

from syntaxformer import __version__
from syntaxformer import registry as _registry
from syntaxformer.data.annotators import annotator_origin
from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model
from syntaxformer.errors import ConfigError, DataError
from syntaxformer.modeling import model_class
from syntaxformer.modeling.raw_text import position_limit
from syntaxformer.tasks.base import SplitData, Task, TaskContext
from syntaxformer.training.config import RunConfig
from syntaxformer.training.saved import loading_model, model_folder_problem

__all__ = [
    "build_context",
    "build_model",
    "check_encoder",
    "check_max_length",
    "code_revision",
    "count_parameters",
    "environment",
    "load_data",
    "load_tokenizer",
    "model_label",
    "parts_record",
    "position_limit",
    "saved_system",
    "system_kind",
    "task_record",
]

logger = logging.getLogger(__name__)


# -- the model registry, as this runner uses it ---------------------------------------------------------------
def saved_system(path: str) -> str | None:
    """The system of a folder holding a model trained by this library (from its ``config.json`` ``model_type``),
    else ``None``."""
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        return None
    try:
        model_type = json.loads(cfg.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    spec = _registry.system_for_model_type(model_type)
    return None if spec is None else spec.name


# -- building blocks (public: experiments and tests rebuild a run's tokenizer, model, features with them) -----
def load_tokenizer(path: str) -> Any:
    """The fast tokenizer of a pretrained model or run folder."""
    try:
        tok = AutoTokenizer.from_pretrained(path, use_fast=True)
    except (OSError, ValueError) as e:  # ValueError: a folder with no tokenizer files in it
        raise ConfigError(f"cannot load a tokenizer from {path!r}: {' '.join(str(e).split())[:300]}") from e
    if not getattr(tok, "is_fast", False):
        raise ConfigError(f"the tokenizer of {path!r} is not a fast tokenizer; syntax alignment needs one")
    return tok


def code_revision(package_dir: str | Path | None = None) -> dict[str, Any] | None:
    """``{"commit": "<40 hex>", "modified": bool}`` of the syntaxformer checkout whose ``src/syntaxformer`` is
    ``package_dir`` (default: this package); ``None`` for an installed package, another project or no git."""
    folder = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or folder.resolve() != (Path(top.strip()) / "src" / "syntaxformer").resolve():
        return None
    try:  # tomllib is Python >= 3.11; the project's name line is enough
        pyproject = (Path(top.strip()) / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    commit = git("rev-parse", "--verify", "HEAD")
    if not re.search(r'(?m)^name\s*=\s*"syntaxformer"\s*$', pyproject) or commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return {"commit": commit.strip(), "modified": None if status is None else bool(status.strip())}


def environment() -> dict[str, Any]:
    """Versions and device of this process (for the output files), with ``code`` (:func:`code_revision`) if known."""
    device = f"cuda ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "cpu"
    env: dict[str, Any] = {
        "syntaxformer": __version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": device,
        "cpu_threads": torch.get_num_threads(),
    }
    revision = code_revision()
    if revision is not None:
        env["code"] = revision
    return env


def check_encoder(config: RunConfig, task: Task) -> None:
    """The pretrained model's configuration loads and ``max_length`` fits it (not checked for tasks that build their
    own model). Raises ConfigError: naming the folder or the ``max_length`` and the limit."""
    if type(task).build_model is not Task.build_model:
        return
    path = config.resolved_model()
    if Path(path).is_dir() and not (Path(path) / "config.json").is_file():
        raise ConfigError(
            f"--model {path} is not a model folder (no config.json in it); give a pretrained model "
            "folder or hub name, or a folder written by `syntaxformer train`"
        )
    try:
        model_config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"cannot load the model configuration of {path!r}: {' '.join(str(e).split())[:300]}") from e
    check_max_length(config.max_length, model_config, path)


def check_max_length(max_length: Any, model_config: Any, path: Any) -> None:
    """``max_length`` fits the model's positions (:func:`position_limit`). Raises ConfigError: naming the
    ``max_length``, the model and the limit."""
    limit = position_limit(model_config)
    if limit is not None and max_length is not None and int(max_length) > limit:
        raise ConfigError(
            f"max_length={max_length} is longer than {path} can read "
            f"(max_position_embeddings {limit}); use --max-length {limit} or less"
        )


def build_context(config: RunConfig, tokenizer: Any, model_config: Any) -> TaskContext:
    """The featurization context of a model: the syntax inputs it reads, and a parser only if it reads any."""
    inputs = tuple(model_config.syntax_inputs)  # the batch keys the model reads besides the token arrays
    fc = config.features_cache
    wants_con = any(k.startswith("con_") for k in inputs)
    return TaskContext(
        tokenizer=tokenizer,
        syntax_inputs=inputs,
        parser=config.parser if inputs else None,
        parse_cache=config.parse_cache,
        max_length=int(config.max_length),
        criterion=config.criterion,
        max_distance=int(getattr(model_config, "max_distance", 15) or 15),
        parser_noise=float(config.parser_noise),
        noise_seed=config.resolved_noise_seed,
        syntax=config.syntax,
        constituency="from_dependency" if wants_con and config.constituency_fallback == "dependency" else "given",
        pos_tags=getattr(model_config, "pos_embeddings", None) if "pos_ids" in inputs else None,
        use_cache=bool(fc),
        cache_dir=fc if isinstance(fc, str) else None,
        progress=not config.disable_tqdm,
    )


def build_model(
    config: RunConfig, task: Task, model_options: Mapping[str, Any] | None = None, context: TaskContext | None = None
) -> Any:
    """The task's own model (:meth:`Task.build_model`), else ``model_class(system, task.head)`` around the pretrained
    encoder with the task's and the config's model options, or the saved model of a folder this library trained."""
    options = dict(config.model if model_options is None else model_options)
    own = task.build_model(config.model_type, options, context)  # type: ignore[arg-type]  # None: auxiliary models
    if own is not None:
        return own
    path = config.resolved_model()
    saved = saved_system(path)
    cls: Any = model_class(config.model_type, task.head)
    if saved is not None:
        if saved != config.model_type:
            raise ConfigError(f"model {path} is a saved {saved} model but model_type={config.model_type!r}")
        with loading_model(path):
            model = cls.from_pretrained(path)
        want = task.model_options().get("num_labels")
        if want is not None and model.config.num_labels != want:
            raise ConfigError(f"model {path} has {model.config.num_labels} outputs but {task.title} needs {want}")
        return model
    problem = model_folder_problem(path) if Path(path).is_dir() else None
    if problem:  # not "invalid model options": the folder holds no encoder
        raise DataError(f"cannot load the encoder in {path}: {problem}")
    try:
        return cls.from_encoder_pretrained(path, **task.model_options(), **options)
    except OSError as e:
        raise ConfigError(f"cannot load the encoder {path!r}: {e}") from e
    except Exception as e:  # config validation against the real encoder (LISA head outside it, ...)
        if isinstance(e, ValueError) or type(e).__name__.startswith("StrictDataclass"):
            raise ConfigError(
                f"invalid model options for {config.model_type} on {path!r}: {' '.join(str(e).split())}"
            ) from e
        raise


def load_data(config: RunConfig, task: Task, split: str, max_samples: int | None) -> SplitData:
    """The task's ``split`` as the config names it, subsampled to ``max_samples`` (the subsample logged)."""
    data: SplitData = task.load_split(split, config.data_options(split, max_samples))
    if data.sample_note:
        logger.info("%s %s: %s", task.title, split, data.sample_note)
    return data


def task_record(task: Task) -> dict[str, Any]:
    """What ``run.json`` records of the task: its name, options and the module or entry point that defines it."""
    origin = _registry.TASKS.origin(task.name) if task.name in _registry.TASKS else {}
    return {
        "name": task.name,
        "options": task.options(),
        "module": type(task).__module__,
        "entry_point": origin.get("entry_point"),
    }


def parts_record(config: RunConfig) -> dict[str, Any]:
    """What ``run.json`` records besides the task: the system and the annotator scheme, each with the module or
    entry point that defines it (:meth:`syntaxformer.registry.Registry.origin`)."""
    system = _registry.SYSTEMS.origin(config.model_type)
    spec = _registry.system(config.model_type)
    return {"system": {**system, "model_type": spec.saved_model_type}, "annotator": annotator_origin(config.parser)}


def count_parameters(model: Any) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if p.requires_grad and p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    return n


# -- names of what a run trained (metrics.json, the comparison table) -----------------------------------------
def system_kind(system: str, model: Any) -> str:
    """A short name of what a model is, for tables and ``metrics.json``: the label its system declares
    (:meth:`syntaxformer.registry.SystemSpec.label_for`: ``SG-Net``, ``baseline``, ``Syntax-BERT + LISA`` ...)."""
    return _registry.system(system).label_for(model.config)


def model_label(path: str) -> str:
    """A short readable name of a model path (the offline MiniLM folder is shown as ``all-MiniLM-L6-v2``)."""
    if path in (default_hf_model(), DEFAULT_HF_MODEL_HUB):
        return DEFAULT_HF_MODEL_HUB.split("/")[-1]
    p = Path(path)
    return "/".join(p.parts[-2:]) if p.is_dir() else path
