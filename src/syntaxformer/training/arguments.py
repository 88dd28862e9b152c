"""``transformers.TrainingArguments`` of a run: :func:`training_arguments` turns a
:class:`~syntaxformer.training.config.RunConfig` into them, and the launcher's process count decides whether this
process writes the run's files."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from syntaxformer.errors import ConfigError
from syntaxformer.secrets import redact_secrets, redacting_arguments

__all__ = ["training_arguments"]


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
        return redacting_arguments(args_class(**kwargs))  # training_args.bin is saved without tokens
    except (TypeError, ValueError) as e:
        named = [f"{k}={v!r}" for k, v in kwargs.items() if isinstance(v, str) and len(v) > 1 and v in str(e)]
        message = (
            f"invalid training arguments{' (' + ', '.join(named) + ')' if named else ''}: {' '.join(str(e).split())}"
        )
        raise ConfigError(redact_secrets(message)) from e


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
