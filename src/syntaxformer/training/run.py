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
import dataclasses
import json
import logging
import os
import platform
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError, DataError, FormatError, MissingDependencyError, SyntaxformerError
from syntaxformer.tasks.base import Task, TaskContext, get_task
from syntaxformer.training.config import RunConfig
from syntaxformer.training.saved import loading_model, model_folder_problem
from syntaxformer.utils import atomic_write, disk_full, little_room, readable_outputs, write_json

__all__ = [
    "train",
    "evaluate",
    "predict",
    "load_run",
    "build_context",
    "build_model",
    "load_tokenizer",
    "training_arguments",
    "resume_checkpoint",
    "check_encoder",
    "environment",
    "system_kind",
    "model_label",
    "count_parameters",
    "METRICS_FILE",
    "DEV_PREDICTIONS_FILE",
    "RUN_FILE",
]

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
#: Per-example dev predictions of the final model (for paired significance tests).
DEV_PREDICTIONS_FILE = "dev_predictions.json"
#: The task definition and the run config of a run folder.
RUN_FILE = "run.json"


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


def training_arguments(config: Any, output_dir: str, *, seq2seq: bool = False, **overrides: Any) -> Any:
    """``TrainingArguments`` (``Seq2SeqTrainingArguments`` with ``seq2seq``) from a run config; ``overrides`` and
    then ``config.training_args`` win over the config's own fields."""
    import torch
    from transformers import Seq2SeqTrainingArguments, TrainingArguments

    from syntaxformer.training.trainer import precision_flags

    args_class = Seq2SeqTrainingArguments if seq2seq else TrainingArguments
    kwargs: dict[str, Any] = dict(
        output_dir=output_dir,
        learning_rate=float(config.learning_rate),
        num_train_epochs=float(config.num_train_epochs),
        max_steps=int(config.max_steps),
        per_device_train_batch_size=int(config.per_device_train_batch_size),
        per_device_eval_batch_size=int(config.per_device_eval_batch_size),
        gradient_accumulation_steps=int(config.gradient_accumulation_steps),
        weight_decay=float(config.weight_decay),
        warmup_steps=float(config.warmup_steps),
        lr_scheduler_type=config.lr_scheduler_type,
        max_grad_norm=float(config.max_grad_norm),
        seed=int(config.seed),
        data_seed=config.resolved_data_seed,
        eval_strategy=config.eval_strategy,
        save_strategy=config.save_strategy,
        save_total_limit=config.save_total_limit,
        logging_steps=int(config.logging_steps),
        dataloader_num_workers=int(config.dataloader_num_workers),
        report_to="none",
        label_names=["labels"],
        remove_unused_columns=False,
        dataloader_pin_memory=torch.cuda.is_available(),
        **precision_flags(config.mixed_precision),
    )
    if seq2seq:
        kwargs["predict_with_generate"] = bool(getattr(config, "predict_with_generate", True))
    if _launched_processes() > 1 and not torch.cuda.is_available():
        # Several processes (accelerate launch / torchrun) without CUDA: DDP on the CPU over gloo. Without use_cpu,
        # accelerate would see no device to distribute over and run each process as a separate one-process job.
        kwargs["use_cpu"] = True
    fields = {f.name for f in dataclasses.fields(args_class)}
    if "train_sampling_strategy" in fields:  # transformers 5
        kwargs["train_sampling_strategy"] = "group_by_length" if config.group_by_length else "random"
    else:  # transformers 4
        kwargs["group_by_length"] = bool(config.group_by_length)
    if "warmup_ratio" in fields and 0 < kwargs["warmup_steps"] < 1:  # transformers 4 takes a ratio separately
        kwargs["warmup_ratio"] = kwargs.pop("warmup_steps")
    if config.eval_steps is not None:
        kwargs["eval_steps"] = config.eval_steps
    if config.save_steps is not None:
        kwargs["save_steps"] = config.save_steps
    if config.disable_tqdm is not None:
        kwargs["disable_tqdm"] = bool(config.disable_tqdm)
    elif os.environ.get("SYNTAXFORMER_NO_PROGRESS", "") not in ("", "0"):  # the library-wide switch (CI, logs)
        kwargs["disable_tqdm"] = True
    kwargs.update(config.training_args)
    kwargs.update(overrides)
    try:
        return args_class(**kwargs)
    except (TypeError, ValueError) as e:
        named = [f"{k}={v!r}" for k, v in kwargs.items() if isinstance(v, str) and len(v) > 1 and v in str(e)]
        raise ConfigError(
            f"invalid training arguments{' (' + ', '.join(named) + ')' if named else ''}: {' '.join(str(e).split())}"
        ) from e


def _launched_processes() -> int:
    """Number of processes the launcher started (``WORLD_SIZE`` of torchrun / accelerate launch; 1 otherwise)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def _is_main_process() -> bool:
    """Whether this process writes the output files: the only one, or world process zero of several (the
    distributed state the Trainer set up, ``accelerate.PartialState``)."""
    if _launched_processes() <= 1:
        return True
    from accelerate import PartialState

    return PartialState().is_main_process


def resume_checkpoint(config: Any, output_dir: str) -> str | None:
    """The checkpoint to resume from (``config.resume``), or ``None``; refuses to mix runs in one folder unless
    ``config.overwrite_output_dir`` (the old checkpoints are removed when training starts: :func:`train`).

    ``resume=True`` takes the newest *intact* checkpoint (:func:`~syntaxformer.training.checkpoints.
    checkpoint_problems`), falling back past damaged or partial ones with a warning; a checkpoint given by path must
    be intact.

    Raises:
        DataError: the given checkpoint is missing or not intact; no checkpoint is intact; checkpoints of another
            run are there and neither ``resume`` nor ``overwrite_output_dir`` is set.
    """
    from syntaxformer.training.checkpoints import checkpoint_problems, latest_intact_checkpoint, list_checkpoints

    if isinstance(config.resume, str) and config.resume not in ("", "true", "True"):
        if not Path(config.resume).is_dir():
            raise DataError(f"resume checkpoint {config.resume} not found")
        problems = checkpoint_problems(config.resume)
        if problems:
            raise DataError(
                f"cannot resume from {config.resume}: {'; '.join(problems)}. Resume from an earlier "
                "checkpoint, or start again with --overwrite-output-dir"
            )
        return config.resume
    found = list_checkpoints(output_dir)
    if config.resume:
        if not found:
            logger.info("resume: no checkpoint in %s; starting from scratch", output_dir)
            return None
        intact, skipped = latest_intact_checkpoint(output_dir)
        for path, problems in skipped:
            logger.warning(
                "checkpoint %s cannot be resumed (%s)%s",
                path.name,
                "; ".join(problems),
                f"; falling back to {intact.name}" if intact is not None else "",
            )
        if intact is None:
            raise DataError(
                f"{output_dir}: no checkpoint can be resumed exactly ("
                + "; ".join(f"{p.name}: {', '.join(pr)}" for p, pr in skipped)
                + "). Start again with --overwrite-output-dir"
            )
        return str(intact)
    if found and not config.overwrite_output_dir:
        raise DataError(
            f"{output_dir} already holds checkpoints (last: {found[0].name}); use --resume to continue that run "
            "or --overwrite-output-dir to start again there"
        )
    return None


def _clear_previous_run(output_dir: str) -> None:
    """Starting again with ``overwrite_output_dir``: the old run's checkpoints and result files go (a later
    ``--resume`` would mistake the checkpoints for this run's; the folder must never show another run's scores)."""
    import shutil

    from syntaxformer.training.checkpoints import list_checkpoints

    old = list_checkpoints(output_dir)
    results = [Path(output_dir) / n for n in _RESULT_FILES if (Path(output_dir) / n).is_file()]
    if old or results:
        logger.info(
            "overwrite_output_dir: removing %d old checkpoint folder(s) and %d result file(s) in %s",
            len(old),
            len(results),
            output_dir,
        )
    for p in old:
        shutil.rmtree(p)
    for p in results:
        p.unlink(missing_ok=True)


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


def _data_fingerprint(data: Any) -> str | None:
    """The content fingerprint of a split (``TaskData.fingerprint``; for parallel corpora a hash of the pairs)."""
    fp = getattr(data, "fingerprint", None)
    if isinstance(fp, str):
        return fp
    sources, targets = getattr(data, "sources", None), getattr(data, "targets", None)
    if isinstance(sources, list):
        from syntaxformer.data.examples import content_fingerprint

        return content_fingerprint(zip(sources, targets or [None] * len(sources)))
    return None


def _training_loss(trainer: Any, result: Any) -> float:
    """The mean training loss over all steps of the run, resumed or not (``SyntaxTrainer.loss_over_all_steps``)."""
    loss = getattr(trainer, "loss_over_all_steps", None)
    return result.training_loss if loss is None else loss


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
    own = task.build_model(config.model_type, options, context)
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
    kwargs = dict(
        model=model,
        args=args,
        data_collator=task.collator(context),
        train_dataset=train_ds,
        eval_dataset=eval_ds,
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
        callbacks=list(callbacks) or None,
    )
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
    """``config`` with the task's training defaults for the options it was not given (:attr:`RunConfig.given`;
    a config constructed directly: those still at their global defaults)."""
    defaults = task.training_defaults()
    if not defaults:
        return config
    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    changes = {}
    extra = dict(config.training_args)
    for key, value in defaults.items():
        if key not in fields:  # a TrainingArguments field the run config does not name: under training_args
            extra.setdefault(key, value)
            continue
        if config.given is not None:
            if key not in config.given:
                changes[key] = value
            continue
        f = fields[key]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        if getattr(config, key) == default:
            changes[key] = value
    if extra != config.training_args:
        changes["training_args"] = extra
    return config.replace(**changes) if changes else config


def _load_data(config: RunConfig, task: Task, split: str, max_samples: int | None) -> Any:
    data = task.load_split(split, config.data_options(split, max_samples))
    note = getattr(data, "sample_note", None)
    if note:
        logger.info("%s %s: %s", task.title, split, note)
    return data


def _has_labels(data: Any) -> bool:
    return bool(getattr(data, "has_labels", True))


def _strip(metrics: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {k[len(prefix) :] if k.startswith(prefix) else k: v for k, v in metrics.items()}


def _metrics_fn(task: Task, data: Any, features: Any) -> Callable[[Any], dict[str, float]]:
    """``compute_metrics`` for the Trainer's evaluations on ``features`` (of ``data``, in dataset order)."""

    def compute(eval_pred: Any) -> dict[str, float]:
        return task.compute_metrics(data, task.postprocess(data, features, eval_pred.predictions))

    return compute


def _reject_unused_options(config: RunConfig, task: Task) -> None:
    """A run option the task ignores (:attr:`Task.unused_options`) set to anything but its default is an error."""
    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    for name, instead in task.unused_options.items():
        f = fields[name]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        if getattr(config, name) != default:
            raise ConfigError(f"{task.name} does not use {name}={getattr(config, name)!r}: {instead}")


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


#: Result files of a finished run (removed when a run is started again there with overwrite_output_dir).
_RESULT_FILES = (METRICS_FILE, RUN_FILE, DEV_PREDICTIONS_FILE, "run_fingerprint.json")


def _guard_finished_run(config: RunConfig, output_dir: str) -> None:
    """A finished run (``metrics.json`` in ``output_dir``) is never replaced silently: ``resume`` has nothing to
    continue and is refused; a new run there needs ``overwrite_output_dir``. Nothing is removed here: the old run's
    files go only once the new run has read its data (:func:`_clear_previous_run`), so a run that fails on its
    options or files leaves the folder as it was."""
    folder = Path(output_dir)
    if not (folder / METRICS_FILE).is_file():
        return
    if config.resume:
        raise DataError(
            f"{output_dir} holds a finished run ({METRICS_FILE}); there is nothing to resume. Use "
            "`syntaxformer evaluate` on it, or --overwrite-output-dir to train again there"
        )
    if not config.overwrite_output_dir:
        raise DataError(
            f"{output_dir} already holds a finished run ({METRICS_FILE}); choose another --output-dir "
            "or pass --overwrite-output-dir to replace it"
        )


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
            return _train(config, callbacks=callbacks)
        except Exception as e:
            if not isinstance(e, SyntaxformerError) and (disk_full(e) or little_room(output_dir)):
                raise DataError(
                    f"cannot write the run in {output_dir}: the disk is full ({type(e).__name__}: "
                    f"{' '.join(str(e).split())[:160]}); free some space and train again (an earlier "
                    "finished run there is kept)"
                ) from e
            raise


def _train(config: RunConfig, *, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """:func:`train` inside the run folder's lock."""
    import numpy as np
    import transformers

    from syntaxformer.training import checkpoints

    t0 = time.time()
    task = config.build_task()
    _reject_unused_options(config, task)
    config = _with_task_defaults(config, task)
    output_dir = os.path.abspath(config.output_dir)
    args = training_arguments(config, output_dir, seq2seq=_uses_generation(config, task), label_names=task.label_names)
    if _launched_processes() > 1 and args.world_size == 1:
        raise ConfigError(
            f"launched as {_launched_processes()} processes (WORLD_SIZE), but the Trainer sees one: "
            "each would train alone and write the same run folder; on a machine without CUDA keep "
            "use_cpu=true (the default there), else check the launcher's device settings"
        )
    # Several processes (accelerate launch / torchrun): the main process of each machine checks the run folder,
    # parses and featurizes first, filling the parse and features caches; the others wait, then find both filled.
    # Everything that can be refused is checked before anything in output_dir changes, and only process zero
    # changes it.
    with args.main_process_first(desc="run folder checks, parsing and featurization"):
        _guard_finished_run(config, output_dir)
        resume_from = resume_checkpoint(config, output_dir)
        if resume_from:
            checkpoints.check_fingerprint(
                output_dir, checkpoints.run_fingerprint(config.to_dict(), None), check_data=False
            )
        model_path = config.resolved_model()
        check_encoder(config, task)

        t_data = time.time()
        train_data = _load_data(config, task, "train", config.max_train_samples)
        dev_data = _load_data(config, task, "dev", config.max_eval_samples)
        if not _has_labels(train_data) or not _has_labels(dev_data):
            raise DataError(f"{task.title}: training needs labeled train and dev data")
        fingerprint = checkpoints.run_fingerprint(config.to_dict(), _data_fingerprint(train_data))
        if resume_from:  # before the task rebuilds anything in the folder (translation: its BPE tokenizers)
            checkpoints.check_fingerprint(output_dir, fingerprint)
        os.makedirs(output_dir, exist_ok=True)
        if args.should_save:
            checkpoints.remove_orphan_temp_files(output_dir)
            if resume_from:
                checkpoints.set_aside_damaged(output_dir, resume_from)
            else:
                if config.overwrite_output_dir:
                    _clear_previous_run(output_dir)
                checkpoints.write_fingerprint(output_dir, fingerprint)
        # Tasks that learn their vocabulary (translation) build the tokenizer and the model from scratch; what
        # they prepare (e.g. the target tokenizer) travels in `prep` to the featurization context.
        prep = TaskContext(
            tokenizer=None, parser=config.parser, parse_cache=config.parse_cache, progress=not config.disable_tqdm
        )
        tokenizer = task.build_tokenizer(train_data, output_dir, prep) or load_tokenizer(model_path)

        transformers.set_seed(int(config.seed))  # the new layers' initialisation depends on it
        model = build_model(config, task, context=prep)
        model.train()
        context = build_context(config, tokenizer, model.config)
        context.extra.update(prep.extra)
        train_ds = task.featurize(train_data, context, "train")
        dev_ds = task.featurize(dev_data, context, "dev")
        data_s = time.time() - t_data

    # Evaluations during training report the task's metrics; generation tasks only the validation loss (decoding
    # every evaluation would multiply the cost), their metrics come after training.
    metrics_fn = None if task.head == "seq2seq" else _metrics_fn(task, dev_data, dev_ds)
    trainer = _trainer(config, task, model, tokenizer, args, context, train_ds, dev_ds, metrics_fn, callbacks)
    kind = system_kind(config.model_type, model)
    meta = getattr(train_ds, "meta", {})
    sources = meta.get("syntax_source") or task.syntax_source(train_data, context)
    if sources:
        logger.info(
            "syntax: dependency trees: %s; constituency trees: %s", sources["dependency"], sources["constituency"]
        )
        if any(k.startswith("con_") for k in context.syntax_inputs) and sources["constituency"].startswith("none"):
            logger.info(
                "note: these texts have no constituency trees, so Syntax-BERT's constituency sub-networks are empty"
            )
    logger.info(
        "training %s on %s: %d train / %d dev examples, model %s%s",
        kind,
        task.title,
        len(train_ds),
        len(dev_ds),
        model_path,
        f", resuming from {resume_from}" if resume_from else "",
    )
    t_train = time.time()
    result = trainer.train(resume_from_checkpoint=resume_from)
    train_s = time.time() - t_train

    history = [
        dict(_strip({k: v for k, v in e.items() if k.startswith("eval_") or k in ("epoch", "step")}, "eval_"))
        for e in trainer.state.log_history
        if "eval_loss" in e
    ]
    # Final pass over the evaluation splits through `predict`, so the per-example predictions are kept (paired
    # significance tests). The first split is the headline (`dev`).
    trainer.compute_metrics = None
    ignore = _IGNORE_OUTPUTS
    # Every process takes part in prediction (its outputs are gathered onto all of them); one writes the files.
    writer = trainer.is_world_process_zero()
    evaluations: dict[str, Any] = {}
    dev_scores: dict[str, Any] = {}
    final: dict[str, Any] = {}
    auxiliary_models = None
    for i, split in enumerate(task.evaluation_splits()):
        data, ds = (dev_data, dev_ds) if split == "dev" else (None, None)
        if data is None:
            with args.main_process_first(desc=f"featurizing {split}"):
                data = _load_data(config, task, split, config.max_eval_samples)
                ds = task.featurize(data, context, split)
        t_eval = time.time()
        out = trainer.predict(ds, ignore_keys=ignore, metric_key_prefix="eval")
        auxiliary = None
        if split == "dev":
            if auxiliary_models is None:
                auxiliary_models = _train_auxiliary(config, task, context, tokenizer, train_ds, dev_ds, output_dir)
            auxiliary = auxiliary_models or None
        predictions = task.postprocess(data, ds, out.predictions, auxiliary)
        scores = task.compute_metrics(data, predictions)
        evaluations[split] = {**scores, "seconds": round(time.time() - t_eval, 2), "n": len(predictions.ids)}
        for name, content in (task.run_files(data, predictions) if writer else {}).items():
            _write_file(Path(output_dir) / name, content)
        if i == 0:
            dev_scores, final = scores, out.metrics or {}
            labels = getattr(ds, "labels", None)
        if i == 0 and writer:
            write_json(
                Path(output_dir) / DEV_PREDICTIONS_FILE,
                {
                    "task": task.name,
                    "split": split,
                    "seed": config.seed,
                    "order": "dataset",
                    "ids": list(predictions.ids),
                    "predictions": list(predictions.values),
                    **({"labels": np.asarray(labels).tolist()} if labels is not None else {}),
                    "data_fingerprint": _data_fingerprint(data),
                },
            )
    if config.save_model:
        _save_model(trainer, output_dir)
        readable_outputs(output_dir)  # model weights are written owner-only (0600) through a temporary file

    lisa_log = [e["lisa_loss"] for e in trainer.state.log_history if "lisa_loss" in e]
    dev_meta = getattr(dev_ds, "meta", {})
    metrics: dict[str, Any] = {
        "task": task.name,
        "task_title": task.title,
        "task_options": task.options(),
        "model": model_path,
        "model_label": model_label(model_path),
        "model_type": kind,
        "model_family": config.model_type,
        "model_options": {
            **{k: v for k, v in task.model_options().items() if k not in ("id2label", "label2id")},
            **config.model,
        },
        "new_params_lr": config.new_params_lr,
        "gate_lr": config.gate_lr,
        "learning_rate": config.learning_rate,
        "num_train_epochs": config.num_train_epochs,
        "batch_size": config.per_device_train_batch_size,
        "seed": config.seed,
        "data_seed": config.resolved_data_seed,
        "sizes": {
            "train": len(train_ds),
            "train_total": getattr(train_data, "total", len(train_ds)),
            "dev": len(dev_ds),
            "dev_total": getattr(dev_data, "total", len(dev_ds)),
        },
        "subsample": {"train": getattr(train_data, "sample_note", None), "dev": getattr(dev_data, "sample_note", None)},
        "data": {"train": getattr(train_data, "source", None), "dev": getattr(dev_data, "source", None)},
        "max_length": config.max_length,
        "parser": meta.get("parser"),
        "parser_noise": config.parser_noise,
        "syntax_source": sources,
        "syntax_keys": list(context.syntax_inputs),
        "examples": getattr(train_data, "metadata", {}).get("examples"),
        "truncated": {"train": meta.get("n_truncated"), "dev": dev_meta.get("n_truncated")},
        "features": {"train": meta.get("cache"), "dev": dev_meta.get("cache")},
        "main_metric": task.main_metric,
        "dev": dev_scores,
        "dev_loss": final.get("eval_loss"),
        "eval": evaluations,
        "history": history,
        "train": {
            "loss": _training_loss(trainer, result),
            "global_step": trainer.state.global_step,
            "epochs": trainer.state.epoch,
            "runtime_s": round(train_s, 2),
            "processes": args.world_size,
            "resumed_from": resume_from,
            **_best_checkpoint(trainer),
        },
        "parameters": count_parameters(model),
        **task.describe_run(model),
        "lisa": None
        if getattr(model.config, "lisa_layer", None) is None
        else {
            "layer": model.config.lisa_layer,
            "head": model.config.lisa_head,
            "loss_weight": model.config.lisa_loss_weight,
            "train_loss_first": lisa_log[0] if lisa_log else None,
            "train_loss_last": lisa_log[-1] if lisa_log else None,
            "train_loss_logged": lisa_log,
            "dev_loss": final.get("eval_lisa_loss"),
        },
        "data_prep_s": round(data_s, 2),
        "runtime_s": round(time.time() - t0, 2),
        "environment": environment(),
    }
    # The run record last: a folder with run.json + metrics.json holds a finished run (evaluate / predict read it).
    if writer:
        write_json(
            Path(output_dir) / RUN_FILE,
            {"task": _task_record(task), **_parts_record(config), "config": config.to_dict()},
        )
        write_json(Path(output_dir) / METRICS_FILE, metrics)
    if writer and config.save_model:  # the model card beside the saved model (README.md)
        from syntaxformer.training.model_card import write_model_card

        write_model_card(output_dir, metrics, config.to_dict(), model.config, task.head, annotator=context.annotator)
    main = dev_scores.get(task.main_metric, float("nan"))
    logger.info(
        "%s %s dev %s = %.4f  (metrics in %s)",
        kind,
        task.title,
        task.main_metric,
        main,
        Path(output_dir) / METRICS_FILE,
    )
    return metrics


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


def _write_file(path: Path, content: Any) -> None:
    """A run file: text as it is, anything else as JSON (atomically)."""
    if isinstance(content, str):
        with atomic_write(path) as f:
            f.write(content)
    else:
        write_json(path, content)


def _save_model(trainer: Any, output_dir: str) -> None:
    """``trainer.save_model`` into a temporary folder beside the run's files, then each file renamed into place: a
    kill while saving leaves the previous files or the new ones, never a truncated weights file (the temporary
    folder, ``.tmp-model-*``, is removed when a run starts there again)."""
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(dir=output_dir, prefix=".tmp-model-")
    try:
        trainer.save_model(tmp)
        for name in sorted(os.listdir(tmp)):
            target = os.path.join(output_dir, name)
            if os.path.isdir(os.path.join(tmp, name)) and os.path.isdir(target):
                shutil.rmtree(target)
            os.replace(os.path.join(tmp, name), target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _best_checkpoint(trainer: Any) -> dict[str, Any]:
    """The best checkpoint's step and metric, when the Trainer kept the best model (``load_best_model_at_end``)."""
    best = trainer.state.best_model_checkpoint
    if not best:
        return {}
    return {"best_step": int(str(best).rsplit("-", 1)[1]), "best_metric": trainer.state.best_metric}


def count_parameters(model: Any) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if p.requires_grad and p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    return n


def _train_auxiliary(
    config: RunConfig, task: Task, context: TaskContext, tokenizer: Any, train_ds: Any, dev_ds: Any, output_dir: str
) -> dict[str, Any]:
    """Train the task's auxiliary models (:meth:`Task.auxiliary_models`) on the same features, each in
    ``<output_dir>/<name>``; name -> raw dev outputs."""
    import transformers

    out: dict[str, Any] = {}
    for name, changes in task.auxiliary_models().items():
        sub = config.replace(model={**config.model, **changes}, output_dir=str(Path(output_dir) / name))
        transformers.set_seed(int(sub.seed))
        model = build_model(sub, task)
        model.train()
        args = training_arguments(
            sub,
            str(Path(output_dir) / name),
            seq2seq=_uses_generation(sub, task),
            label_names=task.label_names,
            eval_strategy="no",
        )
        trainer = _trainer(sub, task, model, tokenizer, args, context, train_ds, None)
        logger.info("training the auxiliary model %r of %s", name, task.title)
        trainer.train()
        out[name] = trainer.predict(dev_ds, ignore_keys=_IGNORE_OUTPUTS, metric_key_prefix="eval").predictions
        if sub.save_model:
            trainer.save_model(str(Path(output_dir) / name))
    return out


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


def evaluate(
    run_dir: str | os.PathLike,
    split: str = "dev",
    *,
    changes: Mapping[str, Any] | None = None,
    output_dir: str | None = None,
) -> dict[str, Any]:
    """Score the model of a run folder on a labeled split; writes ``eval_<split>.json``.

    Args:
        run_dir: a folder written by :func:`train`.
        split: the split to score.
        changes: run-config changes (e.g. ``{"parser_noise": 0.4}``, ``{"dev_file": "my.tsv"}``).
        output_dir: where ``eval_<split>.json`` goes (default ``run_dir``).

    Returns:
        ``{"task", "model", "split", "size", "total", "subsample", "data", "scores", "loss", "runtime_s", ...}``.
    """
    t0 = time.time()
    split = _split_name(split)
    config, task, data, features, (out, auxiliary), out_dir = _run_split(
        run_dir, split, changes, output_dir, "max_eval_samples"
    )
    if not _has_labels(data):
        raise DataError(
            f"{task.title} {split} data ({getattr(data, 'source', split)}) has no labels; use `predict` instead"
        )
    predictions = task.postprocess(data, features, out.predictions, auxiliary)
    result = {
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
) -> dict[str, Any]:
    """Predict a split with the model of a run folder; writes ``predictions_<split>.tsv`` (``index``, ``id``,
    ``prediction``: label strings, or values for regression) and ``predictions_<split>.jsonl`` (the task's full
    records). If the split has labels, scores are reported too."""
    t0 = time.time()
    split = _split_name(split)
    config, task, data, features, (out, auxiliary), out_dir = _run_split(
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
