"""The runner: ``train`` / ``evaluate`` / ``predict`` for every task and every syntax system (``compare``, several
systems side by side, is :mod:`syntaxformer.training.comparison`).

The head of every function is generic; everything task-specific goes through the :class:`~syntaxformer.tasks.Task`
interface::

    task = get_task(config.task, **config.task_options)
    train / dev = task.load_split(...)                        # subsampled as the config says
    config <- task.training_defaults() (explicit config values win)
    tokenizer = task.build_tokenizer(...) or the pretrained model's
    model = task.build_model(...) or model_class(system, task.head).from_encoder_pretrained(path, **options)
    context = TaskContext(tokenizer, syntax_inputs=<what the model reads>, parser=<only if it reads syntax>, ...)
    features = task.featurize(split, context); SyntaxTrainer (SyntaxSeq2SeqTrainer for seq2seq + generation)
    train -> predict dev -> task.postprocess (+ auxiliary models' raw outputs) -> task.compute_metrics

:func:`train` runs :class:`~syntaxformer.training.recipe.TrainRecipe`, one method per stage (resolve, check the
folder, prepare data, build the model, featurize, fit, evaluate, save); the run folder's files and checks are in
:mod:`syntaxformer.training.run_folder`, the ``TrainingArguments`` in :mod:`syntaxformer.training.arguments`.

Files in ``output_dir`` after :func:`train`:

* ``run.json``: the task definition (name, options, defining module or entry point), the system and the
  annotator scheme (each with its defining module or entry point: :mod:`syntaxformer.registry`) and the resolved
  run config, so that :func:`evaluate` / :func:`predict` rebuild the same task, model and features from the folder
  alone, in a fresh process too;
* ``metrics.json``: task, model, seed, data sizes and subsampling, where the syntax came from, dev scores (per
  evaluation and final), the LISA loss (Syntax-BERT with LISA), runtime;
* ``dev_predictions.json``: the final model's dev predictions in dataset order (paired significance tests);
* the final model and tokenizer, and the model card ``README.md`` (:mod:`syntaxformer.training.model_card`);
  ``checkpoint-<step>/`` folders from the Trainer (``resume`` continues from the newest intact one:
  :mod:`syntaxformer.training.checkpoints`); ``run_fingerprint.json``: the options and training data a ``resume``
  must find unchanged.

Nothing in ``output_dir`` changes before the run's options, model and data have been checked and read: a run that
is refused or fails on a missing file leaves the folder as it was.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import platform
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError, DataError, FormatError, MissingDependencyError, SyntaxformerError
from syntaxformer.tasks.base import Task, TaskContext, get_task
from syntaxformer.training.arguments import _is_main_process, training_arguments
from syntaxformer.training.config import RunConfig
from syntaxformer.training.run_folder import DEV_PREDICTIONS_FILE, METRICS_FILE, RUN_FILE, resume_checkpoint
from syntaxformer.training.saved import loading_model, model_folder_problem
from syntaxformer.utils import atomic_write, disk_full, little_room, write_json

__all__ = [
    "DEV_PREDICTIONS_FILE",
    "METRICS_FILE",
    "RUN_FILE",
    "build_context",
    "build_model",
    "check_encoder",
    "count_parameters",
    "environment",
    "evaluate",
    "load_run",
    "load_tokenizer",
    "model_label",
    "predict",
    "resume_checkpoint",
    "system_kind",
    "train",
    "training_arguments",
]

logger = logging.getLogger(__name__)


# -- the model registry, as this runner uses it ---------------------------------------------------------------
def _model_class(system: str, head: str) -> Any:
    """The ``XForY`` class of a syntax system under a head (:func:`syntaxformer.modeling.model_class`)."""
    from syntaxformer.modeling import model_class

    return model_class(system, head)


def _syntax_inputs(model_config: Any) -> tuple[str, ...]:
    """The batch keys a model reads besides the token arrays (the model config declares them)."""
    return tuple(model_config.syntax_inputs)


def _saved_system(path: str) -> str | None:
    """The system of a folder holding a model trained by this library (its ``config.json`` ``model_type``, or an
    older spelling of it: :func:`syntaxformer.registry.system_for_model_type`), else ``None``."""
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
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path, use_fast=True)
    except (OSError, ValueError) as e:  # ValueError: a folder with no tokenizer files in it
        raise ConfigError(f"cannot load a tokenizer from {path!r}: {' '.join(str(e).split())[:300]}") from e
    if not getattr(tok, "is_fast", False):
        raise ConfigError(f"the tokenizer of {path!r} is not a fast tokenizer; syntax alignment needs one")
    return tok


def environment() -> dict[str, Any]:
    """Versions and device of this process (for the output files)."""
    import torch
    import transformers

    from syntaxformer import __version__

    device = "cpu"
    if torch.cuda.is_available():
        device = f"cuda ({torch.cuda.get_device_name(0)})"
    return {
        "syntaxformer": __version__,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": device,
        "cpu_threads": torch.get_num_threads(),
    }


def check_encoder(config: RunConfig, task: Task) -> None:
    """Before any data is prepared: the pretrained model (``model_name_or_path``) is a model whose configuration
    loads, and ``max_length`` fits its position embeddings. Tasks that build their own model are not checked.

    Raises:
        ConfigError: naming the folder or the ``max_length`` and the limit.
    """
    if type(task).build_model is not Task.build_model:
        return
    path = config.resolved_model()
    if Path(path).is_dir() and not (Path(path) / "config.json").is_file():
        raise ConfigError(
            f"--model {path} is not a model folder (no config.json in it); give a pretrained model "
            "folder or hub name, or a folder written by `syntaxformer train`"
        )
    from transformers import AutoConfig

    import syntaxformer.modeling  # noqa: F401  (registers the syntax configs with the Auto classes)

    try:
        model_config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError, KeyError) as e:
        raise ConfigError(f"cannot load the model configuration of {path!r}: {' '.join(str(e).split())[:300]}") from e
    check_max_length(config.max_length, model_config, path)


def position_limit(model_config: Any) -> int | None:
    """The longest input (tokens) a model's encoder can read: its ``max_position_embeddings`` (RoBERTa-style
    encoders: less the two positions before the padding index), or ``None`` when the config has no such limit."""
    encoder = getattr(model_config, "encoder", None) or model_config
    encoder = encoder if isinstance(encoder, Mapping) else vars(encoder)
    limit = encoder.get("max_position_embeddings")
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None
    if "roberta" in str(encoder.get("model_type", "")):  # positions start after the padding index
        limit -= 2
    return limit


def check_max_length(max_length: Any, model_config: Any, path: Any) -> None:
    """``max_length`` fits the model's positions (:func:`position_limit`); checked by ``train`` before any data is
    read, and by ``evaluate`` / ``predict`` / :class:`~syntaxformer.inference.Predictor` before any input is read.

    Raises:
        ConfigError: naming the ``max_length``, the model and the limit.
    """
    limit = position_limit(model_config)
    if limit is not None and max_length is not None and int(max_length) > limit:
        raise ConfigError(
            f"max_length={max_length} is longer than {path} can read "
            f"(max_position_embeddings {limit}); use --max-length {limit} or less"
        )


def build_context(config: RunConfig, tokenizer: Any, model_config: Any) -> TaskContext:
    """The featurization context of a model: the syntax inputs it reads, and a parser only if it reads any."""
    inputs = _syntax_inputs(model_config)
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
    encoder with the task's and the config's model options; a folder holding a model trained by this library is
    loaded as it is (it must be of the configured system)."""
    options = dict(config.model if model_options is None else model_options)
    own = task.build_model(config.model_type, options, context)  # type: ignore[arg-type]  # None: auxiliary models
    if own is not None:
        return own
    path = config.resolved_model()
    saved = _saved_system(path)
    cls = _model_class(config.model_type, task.head)
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


def _align_special_tokens(model: Any, tokenizer: Any) -> None:
    """Write the tokenizer's PAD/BOS/EOS ids into the model config where they differ, as the Trainer would, but
    quietly: our configs are built from the encoder's, which often leaves them unset, and the Trainer's warning
    about it on every run says nothing a user can act on."""
    if tokenizer is None or not hasattr(model, "config"):
        return
    config = model.config
    for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None and getattr(config, name, None) != value:
            logger.debug("model config %s: %s -> %s (the tokenizer's)", name, getattr(config, name, None), value)
            setattr(config, name, value)


def _trainer(
    config: RunConfig,
    task: Task,
    model: Any,
    tokenizer: Any,
    args: Any,
    context: TaskContext,
    train_ds: Any = None,
    eval_ds: Any = None,
    compute_metrics: Callable | None = None,
    callbacks: Sequence[Any] = (),
) -> Any:
    _align_special_tokens(model, tokenizer)
    kwargs = {
        "model": model,
        "args": args,
        "data_collator": task.collator(context),
        "train_dataset": train_ds,
        "eval_dataset": eval_ds,
        "processing_class": tokenizer,
        "compute_metrics": compute_metrics,
        "callbacks": list(callbacks) or None,
    }
    if _uses_generation(config, task):
        # The task saves its own tokenizers (translation: source_tokenizer/ and target_tokenizer/); a
        # processing_class would be written loose beside them. Models trained from scratch have no encoder, so
        # there is no separate learning rate for new parameters.
        kwargs["processing_class"] = None
        try:
            from syntaxformer.training.trainer import SyntaxSeq2SeqTrainer
        except ImportError as e:
            raise MissingDependencyError(
                f"{task.title} is a seq2seq task: training it with predict_with_generate needs "
                "syntaxformer.training.trainer.SyntaxSeq2SeqTrainer, which this version lacks "
                "(translation runs need it)"
            ) from e
        return SyntaxSeq2SeqTrainer(**kwargs)
    from syntaxformer.training.trainer import SyntaxTrainer

    return SyntaxTrainer(**kwargs, new_params_lr=config.new_params_lr, gate_lr=config.gate_lr)


def _uses_generation(config: RunConfig, task: Task) -> bool:
    return task.head == "seq2seq" and bool(config.predict_with_generate)


def _with_task_defaults(config: RunConfig, task: Task) -> RunConfig:
    """:func:`syntaxformer.training.options.with_task_defaults`."""
    from syntaxformer.training.options import with_task_defaults

    return with_task_defaults(config, task)


def _load_data(config: RunConfig, task: Task, split: str, max_samples: int | None) -> Any:
    data = task.load_split(split, config.data_options(split, max_samples))
    note = getattr(data, "sample_note", None)
    if note:
        logger.info("%s %s: %s", task.title, split, note)
    return data


def _has_labels(data: Any) -> bool:
    return bool(getattr(data, "has_labels", True))


def _split_name(split: str) -> str:
    """``validation`` (Hugging Face's name) is the ``dev`` split."""
    return "dev" if split in ("validation", "valid") else split


def _task_record(task: Task) -> dict[str, Any]:
    origin = _registry.TASKS.origin(task.name) if task.name in _registry.TASKS else {}
    return {
        "name": task.name,
        "options": task.options(),
        "module": type(task).__module__,
        "entry_point": origin.get("entry_point"),
    }


def _parts_record(config: RunConfig) -> dict[str, Any]:
    """What ``run.json`` records besides the task: the system and the annotator scheme, each with the module or
    entry point that defines it (:meth:`syntaxformer.registry.Registry.origin`), so that a fresh process finds
    parts added from outside the package again."""
    from syntaxformer.data.annotators import annotator_origin

    system = _registry.SYSTEMS.origin(config.model_type)
    spec = _registry.system(config.model_type)
    return {"system": {**system, "model_type": spec.saved_model_type}, "annotator": annotator_origin(config.parser)}


# -- train ----------------------------------------------------------------------------------------------------
def train(config: RunConfig, *, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Fine-tune on the task's train split, evaluate on dev, save the model, ``run.json`` and ``metrics.json``.

    The run folder is locked while the run writes it (:class:`~syntaxformer.training.lock.RunLock`): a second
    ``train`` into the same folder is refused at once, and a lock left by a killed run is taken over. A disk that
    fills up while the run writes ends in one :class:`~syntaxformer.errors.DataError` naming the folder (the files
    of an earlier finished run there stay as they were until the new run's own are complete).

    Args:
        config: the run.
        callbacks: extra ``transformers.TrainerCallback`` objects.

    Returns:
        The content of ``metrics.json``: ``task``, ``model``, ``seed``, ``sizes``, ``subsample``, ``dev`` (final
        scores), ``main_metric``, ``history`` (dev scores per evaluation), ``train`` (loss, steps, runtime),
        ``runtime_s`` (whole run incl. data preparation), ``features`` (cache hits), ``environment``.
    """
    from syntaxformer.training.lock import RunLock

    output_dir = os.path.abspath(config.output_dir)
    # one lock per run: world process zero (RANK, set by torchrun / accelerate launch) takes it for all of them
    lock = RunLock(output_dir) if os.environ.get("RANK", "0") in ("", "0") else contextlib.nullcontext()
    with lock:
        try:
            from syntaxformer.training.recipe import TrainRecipe

            return TrainRecipe(config, callbacks).run()
        except Exception as e:
            if not isinstance(e, SyntaxformerError) and (disk_full(e) or little_room(output_dir)):
                raise DataError(
                    f"cannot write the run in {output_dir}: the disk is full ({type(e).__name__}: "
                    f"{' '.join(str(e).split())[:160]}); free some space and train again (an earlier "
                    "finished run there is kept)"
                ) from e
            raise


#: Model outputs that are not predictions (losses, attention maps): left out of `Trainer.predict`.
_IGNORE_OUTPUTS = [
    "loss",
    "span_loss",
    "verifier_loss",
    "lisa_loss",
    "hidden_states",
    "attentions",
    "sg_attentions",
    "past_key_values",
    "encoder_last_hidden_state",
    "encoder_hidden_states",
    "encoder_attentions",
    "decoder_hidden_states",
    "decoder_attentions",
    "cross_attentions",
]


def count_parameters(model: Any) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if p.requires_grad and p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    return n


# -- evaluate / predict -----------------------------------------------------------------------------------------
def load_run(run_dir: str | os.PathLike, changes: Mapping[str, Any] | None = None) -> tuple[RunConfig, Task]:
    """The run config (with ``changes``) and the task of a run folder written by :func:`train`.

    The task is rebuilt from its name and options; a task registered outside the package is found by importing
    the module that defined it, when that module is importable.

    Raises:
        DataError: the folder has no ``run.json``. FormatError: its ``run.json`` is not the JSON ``train`` wrote.
    """
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise DataError(f"{run_dir} is not a run folder of `syntaxformer train` (no {RUN_FILE})")
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        record = saved["task"]
        saved["config"]
    except (ValueError, KeyError, TypeError) as e:  # not UTF-8, not JSON, or not a run record
        raise FormatError(
            f"not the run record `syntaxformer train` writes ({type(e).__name__}: {e}); train again into a new folder",
            source=str(path),
        ) from None
    # Parts registered in code outside the package (task, system, annotator scheme) are found by importing the
    # module that defined them; entry points are found without it.
    parts: list[tuple[str, Any, _registry.Registry]] = [
        ("task", record, _registry.TASKS),
        ("system", saved.get("system"), _registry.SYSTEMS),
        ("annotator", saved.get("annotator"), _registry.ANNOTATORS),
    ]
    for kind, part, known in parts:
        _registry.import_origin(part, kind)
        name = part.get("name") if isinstance(part, Mapping) else None
        if isinstance(name, str) and name not in known:
            where = part.get("entry_point") or part.get("module") or "code that is not importable here"
            raise ConfigError(
                f"{run_dir} was trained with the {kind} {name!r} defined by {where}, which is not available in this "
                f"Python environment; install the package that provides it (known {kind}s: {', '.join(known)})"
            )
    changes = dict(changes or {})
    data = {**saved["config"], **changes}
    # The task as it was trained: the recorded options include what the task fixed while reading the training
    # data (the labels and columns of a custom task), which the config's own task_options may lack.
    if isinstance(record.get("options"), Mapping) and "task" not in changes:
        data["task_options"] = {**saved["config"].get("task_options", {}), **record["options"]}
    for section in ("model", "task_options", "training_args"):  # nested sections are merged, not replaced
        if isinstance(changes.get(section), Mapping):
            data[section] = {**data.get(section, {}), **changes[section]}
    data["model_name_or_path"] = str(run_dir)
    config = RunConfig.from_dict(data)
    task = get_task(config.task, **config.task_options)
    return config, task


def _trained(run_dir: str, config: RunConfig, task: Task, prep: TaskContext) -> tuple[Any, Any]:
    """The model and tokenizer saved in a run folder (``prep`` receives what the task loads besides, e.g. the
    target tokenizer of a translation model)."""
    if task.head == "seq2seq":
        from transformers import AutoModelForSeq2SeqLM

        import syntaxformer.modeling  # noqa: F401  (registers the syntax models with the Auto classes)

        if not (Path(run_dir) / "config.json").is_file():
            raise DataError(f"{run_dir} holds no trained model (no config.json); was it trained with save_model=false?")
        with loading_model(run_dir):
            model = AutoModelForSeq2SeqLM.from_pretrained(run_dir)
        return model, task.load_tokenizer(run_dir, prep) or load_tokenizer(run_dir)
    saved = _saved_system(run_dir)
    if saved is None:
        raise DataError(
            f"{run_dir} holds no trained syntaxformer model (no config.json with model_type "
            f"{' or '.join(map(repr, _registry.model_types()))}); was it trained with save_model=false?"
        )
    with loading_model(run_dir):
        model = _model_class(saved, task.head).from_pretrained(run_dir)
    return model, task.load_tokenizer(run_dir, prep) or load_tokenizer(run_dir)


def _run_split(
    run_dir: str | os.PathLike,
    split: str,
    changes: Mapping[str, Any] | None,
    output_dir: str | None,
    max_samples_field: str,
) -> tuple[RunConfig, Task, Any, Any, Any, str]:
    config, task = load_run(run_dir, changes)
    config = _with_task_defaults(config, task)
    prep = TaskContext(
        tokenizer=None, parser=config.parser, parse_cache=config.parse_cache, progress=not config.disable_tqdm
    )
    model, tokenizer = _trained(str(run_dir), config, task, prep)
    if task.head != "seq2seq":
        check_max_length(config.max_length, model.config, run_dir)
    data = _load_data(config, task, split, getattr(config, max_samples_field))
    context = build_context(config, tokenizer, model.config)
    context.extra.update(prep.extra)
    out_dir = os.path.abspath(output_dir or str(run_dir))
    args = training_arguments(
        config,
        out_dir,
        seq2seq=_uses_generation(config, task),
        label_names=task.label_names,
        eval_strategy="no",
        save_strategy="no",
        load_best_model_at_end=False,
    )
    with args.main_process_first(desc=f"featurizing {split}"):  # several processes: one parses, the others wait
        features = task.featurize(data, context, split)
    trainer = _trainer(config, task, model, tokenizer, args, context)
    out = trainer.predict(features, ignore_keys=_IGNORE_OUTPUTS, metric_key_prefix="eval")
    auxiliary = {}
    for name in task.auxiliary_models():  # e.g. SQuAD's parallel verifier, saved in <run_dir>/<name>
        sub_dir = Path(run_dir) / name
        if not (sub_dir / "config.json").is_file():
            raise DataError(
                f"{run_dir}: the auxiliary model {name!r} is missing ({sub_dir}); it is saved "
                "there by `train` with save_model=true"
            )
        sub_model, _ = _trained(str(sub_dir), config, task, prep)
        sub = _trainer(config, task, sub_model, tokenizer, args, context)
        auxiliary[name] = sub.predict(features, ignore_keys=_IGNORE_OUTPUTS, metric_key_prefix="eval").predictions
    os.makedirs(out_dir, exist_ok=True)
    return config, task, data, features, (out, auxiliary or None), out_dir


def _split_outputs(
    run_dir: str | os.PathLike, output_dir: str | None, names: Sequence[str], overwrite: bool
) -> contextlib.AbstractContextManager[Any]:
    """Before any work is done for :func:`evaluate` / :func:`predict`: the files they would write are refused if
    they exist (unless ``overwrite``), and the folder they go to is locked (:class:`RunLock`) while it is written, so
    that a ``train`` or another ``evaluate`` writing the same folder is refused at once."""
    from syntaxformer.training.lock import RunLock

    load_run(run_dir)  # first, what is wrong with the folder itself (not a run, a part that is not installed)
    out_dir = Path(os.path.abspath(output_dir or str(run_dir)))
    existing = [str(out_dir / name) for name in names if (out_dir / name).exists()]
    if existing and not overwrite:
        raise DataError(
            f"{' and '.join(existing)} already exist{'s' if len(existing) == 1 else ''} (an earlier result); pass "
            "--overwrite (overwrite=True) to replace it, or choose another --output-dir"
        )
    # world process zero takes the lock for all (RANK is set by torchrun / accelerate launch; the distributed state
    # is not set up yet here), as train does
    return RunLock(out_dir) if os.environ.get("RANK", "0") in ("", "0") else contextlib.nullcontext()


def evaluate(
    run_dir: str | os.PathLike,
    split: str = "dev",
    *,
    changes: Mapping[str, Any] | None = None,
    output_dir: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Score the model of a run folder on a labeled split; writes ``eval_<split>.json``.

    Args:
        run_dir: a folder written by :func:`train`.
        split: the split to score.
        changes: run-config changes (e.g. ``{"parser_noise": 0.4}``, ``{"dev_file": "my.tsv"}``).
        output_dir: where ``eval_<split>.json`` goes (default ``run_dir``).
        overwrite: replace an existing ``eval_<split>.json`` (default: refuse before anything is computed).

    Returns:
        ``{"task", "model", "split", "size", "total", "subsample", "data", "scores", "loss", "runtime_s", ...}``.

    Raises:
        DataError: ``eval_<split>.json`` exists and ``overwrite`` is false; the output folder is being written by
            another process (its lock is held).
    """
    split = _split_name(split)
    with _split_outputs(run_dir, output_dir, [f"eval_{split}.json"], overwrite):
        return _evaluate(run_dir, split, changes, output_dir)


def _evaluate(
    run_dir: str | os.PathLike, split: str, changes: Mapping[str, Any] | None, output_dir: str | None
) -> dict[str, Any]:
    t0 = time.time()
    config, task, data, features, (out, auxiliary), out_dir = _run_split(
        run_dir, split, changes, output_dir, "max_eval_samples"
    )
    if not _has_labels(data):
        raise DataError(
            f"{task.title} {split} data ({getattr(data, 'source', split)}) has no labels; use `predict` instead"
        )
    predictions = task.postprocess(data, features, out.predictions, auxiliary)
    result: dict[str, Any] = {
        "task": task.name,
        "model": str(run_dir),
        "split": split,
        "size": len(features),
        "total": getattr(data, "total", len(features)),
        "subsample": getattr(data, "sample_note", None),
        "data": getattr(data, "source", None),
        "parser_noise": config.parser_noise,
        "main_metric": task.main_metric,
        "scores": task.compute_metrics(data, predictions),
        "loss": (out.metrics or {}).get("eval_loss"),
        "runtime_s": round(time.time() - t0, 2),
        "environment": environment(),
    }
    if _is_main_process():
        write_json(Path(out_dir) / f"eval_{split}.json", result)
    logger.info(
        "%s %s %s = %.4f (%s)",
        task.title,
        split,
        task.main_metric,
        result["scores"].get(task.main_metric, float("nan")),
        Path(out_dir) / f"eval_{split}.json",
    )
    return result


def predict(
    run_dir: str | os.PathLike,
    split: str = "test",
    *,
    changes: Mapping[str, Any] | None = None,
    output_dir: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Predict a split with the model of a run folder; writes ``predictions_<split>.tsv`` (``index``, ``id``,
    ``prediction``: label strings, or values for regression) and ``predictions_<split>.jsonl`` (the task's full
    records). If the split has labels, scores are reported too. Existing prediction files are replaced only with
    ``overwrite`` (refused before anything is computed), and the output folder is locked while it is written."""
    split = _split_name(split)
    names = [f"predictions_{split}.tsv", f"predictions_{split}.jsonl"]
    with _split_outputs(run_dir, output_dir, names, overwrite):
        return _predict(run_dir, split, changes, output_dir)


def _predict(
    run_dir: str | os.PathLike, split: str, changes: Mapping[str, Any] | None, output_dir: str | None
) -> dict[str, Any]:
    t0 = time.time()
    _, task, data, features, (out, auxiliary), out_dir = _run_split(
        run_dir, split, changes, output_dir, "max_predict_samples"
    )
    predictions = task.postprocess(data, features, out.predictions, auxiliary)
    records = task.prediction_records(data, predictions)
    path = Path(out_dir) / f"predictions_{split}.tsv"
    if _is_main_process():
        with atomic_write(path) as f:
            f.write("index\tid\tprediction\n")
            for i, r in enumerate(records):
                f.write(f"{i}\t{r['id']}\t{r['prediction']}\n")
        with atomic_write(path.with_suffix(".jsonl")) as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    result: dict[str, Any] = {
        "task": task.name,
        "model": str(run_dir),
        "split": split,
        "size": len(records),
        "subsample": getattr(data, "sample_note", None),
        "predictions_file": str(path),
        "scores": task.compute_metrics(data, predictions) if _has_labels(data) else None,
        "runtime_s": round(time.time() - t0, 2),
    }
    values = [r["prediction"] for r in records]
    if values and all(isinstance(v, str) for v in values):
        result["predicted_distribution"] = dict(sorted(Counter(values).items()))
    logger.info("wrote %d predictions to %s", len(records), path)
    return result


# -- names of what a run trained (metrics.json, the comparison table) -----------------------------------------
def system_kind(system: str, model: Any) -> str:
    """A short name of what a model is, for tables and ``metrics.json``: the label its system declares
    (:meth:`syntaxformer.registry.SystemSpec.label_for`): ``SG-Net``, ``baseline`` (the plain encoder, or an
    SG-Net config saved without its layer), ``Syntax-BERT``, ``Syntax-BERT + LISA``, ``LISA`` (LISA head, no
    sub-networks), ``baseline (Syntax-BERT head)``, or an outside system's own."""
    return _registry.system(system).label_for(model.config)


def model_label(path: str) -> str:
    """A short readable name of a model path (the offline MiniLM folder is shown as ``all-MiniLM-L6-v2``)."""
    from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model

    if path in (default_hf_model(), DEFAULT_HF_MODEL_HUB):
        return DEFAULT_HF_MODEL_HUB.split("/")[-1]
    p = Path(path)
    return "/".join(p.parts[-2:]) if p.is_dir() else path
