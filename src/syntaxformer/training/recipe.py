"""``train`` as a recipe: :class:`TrainRecipe`, one method per stage, each callable (and testable) on its own, in this
order: ``resolve``, ``check_folder``, ``prepare_data``, ``build_model``, ``featurize``, ``fit``, ``evaluate``, ``save``.
:func:`train` runs them all inside the run folder's lock; nothing in the folder changes before ``prepare_data`` has
read the data. ``evaluate`` / ``predict`` use this module's :func:`training_arguments` and :func:`build_trainer`."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from accelerate import PartialState
from transformers import Seq2SeqTrainingArguments, TrainingArguments
from transformers.integrations import get_available_reporting_integrations
from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

from syntaxformer.errors import ConfigError, DataError, MissingDependencyError, SyntaxformerError
from syntaxformer.secrets import check_hub_push, redact_secrets, redacting_arguments
from syntaxformer.tasks.base import Task, TaskContext
from syntaxformer.training import checkpoints
from syntaxformer.training.blocks import (
    build_context,
    build_model,
    check_encoder,
    count_parameters,
    environment,
    load_data,
    load_tokenizer,
    model_label,
    parts_record,
    system_kind,
    task_record,
)
from syntaxformer.training.config import RunConfig, small_encoder_note
from syntaxformer.training.lock import run_lock
from syntaxformer.training.model_card import write_model_card
from syntaxformer.training.run_folder import (
    DEV_PREDICTIONS_FILE,
    METRICS_FILE,
    RUN_FILE,
    clear_previous_run,
    guard_finished_run,
    resume_checkpoint,
    save_final_model,
    write_run_file,
)
from syntaxformer.utils import disk_full, little_room, readable_outputs, write_json

__all__ = [
    "IGNORE_OUTPUTS",
    "TrainRecipe",
    "build_trainer",
    "check_trainer_options",
    "is_main_process",
    "launched_processes",
    "train",
    "training_arguments",
    "uses_generation",
]

logger = logging.getLogger(__name__)


class TrainRecipe:
    """One training run, stage by stage (module docstring); each stage adds its results to the recipe (``task``,
    ``args``, ``train_data``, ``model``, ``trainer`` ...). ``callbacks``: extra ``transformers.TrainerCallback``s."""

    def __init__(self, config: RunConfig, callbacks: Sequence[Any] = ()) -> None:
        self.config = config
        self.callbacks = list(callbacks)
        self.t0 = time.time()
        self.output_dir = os.path.abspath(config.output_dir)
        self.resume_from: str | None = None
        self.lr_note = False
        self.metrics: dict[str, Any] = {}

    def run(self) -> dict[str, Any]:
        """All stages; returns the content of ``metrics.json``."""
        self.resolve()
        # Several processes: the main one checks the folder, parses and featurizes first (filling the caches); the
        # others wait, then find the caches filled. Only process zero changes output_dir.
        with self.args.main_process_first(desc="run folder checks, parsing and featurization"):
            self.check_folder()
            self.prepare_data()
            self.build_model()
            self.featurize()
        self.fit()
        self.evaluate()
        self.save()
        return self.metrics

    # -- stages -------------------------------------------------------------------------------------------------
    def resolve(self) -> None:
        """The task, the final config (:meth:`~syntaxformer.training.config.RunConfig.for_task`) and the
        ``TrainingArguments``."""
        task = self.config.build_task()
        config = self.config.for_task(task)
        chosen = config.learning_rate != self.config.learning_rate and "learning_rate" not in task.training_defaults()
        self.lr_note = chosen  # announced when training starts, after every check that could refuse the run
        self.config, self.task = config, task
        self.output_dir = os.path.abspath(config.output_dir)
        self.args = training_arguments(
            config, self.output_dir, seq2seq=uses_generation(config, task), label_names=task.label_names
        )
        launched = launched_processes()
        if launched > 1 and self.args.world_size == 1:
            raise ConfigError(
                f"launched as {launched} processes (WORLD_SIZE), but the Trainer sees one: "
                "each would train alone and write the same run folder; on a machine without CUDA keep "
                "use_cpu=true (the default there), else check the launcher's device settings"
            )
        check_trainer_options(self.args)

    def check_folder(self) -> None:
        """Refuse to replace a finished run; find the checkpoint to resume (its options must be this run's); check
        the encoder. Changes nothing on disk."""
        config, output_dir = self.config, self.output_dir
        guard_finished_run(config, output_dir)
        self.resume_from = resume_checkpoint(config, output_dir)
        if self.resume_from:
            checkpoints.check_fingerprint(
                output_dir, checkpoints.run_fingerprint(config.to_dict(), None), check_data=False
            )
        check_encoder(config, self.task)

    def prepare_data(self) -> None:
        """Read the train and dev splits, then prepare the run folder: the run fingerprint written (or, resuming,
        checked), an old run cleared with ``overwrite_output_dir``."""
        config, task, output_dir = self.config, self.task, self.output_dir
        self.t_data = time.time()
        self.train_data = load_data(config, task, "train", config.max_train_samples)
        self.dev_data = load_data(config, task, "dev", config.max_eval_samples)
        if not self.train_data.has_labels or not self.dev_data.has_labels:
            raise DataError(f"{task.title}: training needs labeled train and dev data")
        fingerprint = checkpoints.run_fingerprint(config.to_dict(), self.train_data.fingerprint)
        if self.resume_from:  # before the task rebuilds anything in the folder (translation: its BPE tokenizers)
            checkpoints.check_fingerprint(output_dir, fingerprint)
        os.makedirs(output_dir, exist_ok=True)
        if self.args.should_save:
            checkpoints.remove_orphan_temp_files(output_dir)
            if self.resume_from:
                checkpoints.set_aside_damaged(output_dir, self.resume_from)
            else:
                if config.overwrite_output_dir:
                    clear_previous_run(output_dir)
                checkpoints.write_fingerprint(output_dir, fingerprint)

    def build_model(self) -> None:
        """The tokenizer (the task's own, learned from the training data, or the pretrained model's), the model
        (seeded) and the featurization context."""
        config, task = self.config, self.task
        # what a task that learns its vocabulary prepares (translation: the target tokenizer) travels in `prep`
        prep = TaskContext(
            tokenizer=None, parser=config.parser, parse_cache=config.parse_cache, progress=not config.disable_tqdm
        )
        self.tokenizer = task.build_tokenizer(self.train_data, self.output_dir, prep) or load_tokenizer(
            config.resolved_model()
        )
        transformers.set_seed(int(config.seed))  # the new layers' initialisation depends on it
        self.model = build_model(config, task, context=prep)
        self.model.train()
        self.context = build_context(config, self.tokenizer, self.model.config)
        self.context.extra.update(prep.extra)

    def featurize(self) -> None:
        """The train and dev features."""
        self.train_ds = self.task.featurize(self.train_data, self.context, "train")
        self.dev_ds = self.task.featurize(self.dev_data, self.context, "dev")
        self.train_facts = self.task.feature_facts(self.train_ds)
        self.dev_facts = self.task.feature_facts(self.dev_ds)
        self.data_s = time.time() - self.t_data

    def fit(self) -> None:
        """Train (resuming if asked); the dev scores of the evaluations during training go to :attr:`history`."""
        config, task = self.config, self.task

        def dev_metrics(p: Any) -> dict[str, float]:  # the dev features are in dataset order
            return task.compute_metrics(self.dev_data, task.postprocess(self.dev_data, self.dev_ds, p.predictions))

        # generation tasks report only the validation loss during training (decoding each time costs too much)
        metrics_fn = None if task.head == "seq2seq" else dev_metrics
        self.trainer = build_trainer(
            config,
            task,
            self.model,
            self.tokenizer,
            self.args,
            self.context,
            self.train_ds,
            self.dev_ds,
            metrics_fn,
            self.callbacks,
        )
        self.kind = system_kind(config.model_type, self.model)
        sources = self.train_facts.get("syntax_source") or task.syntax_source(self.train_data, self.context)
        self.sources = sources
        if sources:
            logger.info(
                "syntax: dependency trees: %s; constituency trees: %s", sources["dependency"], sources["constituency"]
            )
            no_trees = sources["constituency"].startswith("none")
            if no_trees and any(k.startswith("con_") for k in self.context.syntax_inputs):
                logger.info(
                    "note: these texts have no constituency trees, so Syntax-BERT's constituency sub-networks are empty"
                )
        if self.lr_note:
            logger.info(small_encoder_note(int(getattr(self.model.config, "hidden_size", 0))))
        logger.info(
            "training %s on %s: %d train / %d dev examples, model %s%s",
            self.kind,
            task.title,
            len(self.train_ds),
            len(self.dev_ds),
            config.resolved_model(),
            f", resuming from {self.resume_from}" if self.resume_from else "",
        )
        t_train = time.time()
        self.result = self.trainer.train(resume_from_checkpoint=self.resume_from)
        self.train_s = time.time() - t_train
        self.history = [
            {k.removeprefix("eval_"): v for k, v in e.items() if k.startswith("eval_") or k in ("epoch", "step")}
            for e in self.trainer.state.log_history
            if "eval_loss" in e
        ]

    def evaluate(self) -> None:
        """Predict the task's evaluation splits: scores in :attr:`evaluations`, the first split's (``dev``) in
        :attr:`dev_scores` and ``dev_predictions.json``; the task's auxiliary models are trained here."""
        config, task, trainer, output_dir = self.config, self.task, self.trainer, self.output_dir
        trainer.compute_metrics = None
        # Every process takes part in prediction (its outputs are gathered onto all of them); one writes the files.
        self.writer = writer = trainer.is_world_process_zero()
        self.evaluations: dict[str, Any] = {}
        self.dev_scores: dict[str, Any] = {}
        self.final: dict[str, Any] = {}
        auxiliary_models = None
        for i, split in enumerate(task.evaluation_splits()):
            if split == "dev":
                data, ds = self.dev_data, self.dev_ds
            else:
                with self.args.main_process_first(desc=f"featurizing {split}"):
                    data = load_data(config, task, split, config.max_eval_samples)
                    ds = task.featurize(data, self.context, split)
            t_eval = time.time()
            out = trainer.predict(ds, ignore_keys=IGNORE_OUTPUTS, metric_key_prefix="eval")
            auxiliary = None
            if split == "dev":
                if auxiliary_models is None:
                    auxiliary_models = _train_auxiliary(
                        config, task, self.context, self.tokenizer, self.train_ds, self.dev_ds, output_dir
                    )
                auxiliary = auxiliary_models or None
            predictions = task.postprocess(data, ds, out.predictions, auxiliary)
            scores = task.compute_metrics(data, predictions)
            self.evaluations[split] = {**scores, "seconds": round(time.time() - t_eval, 2), "n": len(predictions.ids)}
            for name, content in (task.run_files(data, predictions) if writer else {}).items():
                write_run_file(Path(output_dir) / name, content)
            if i == 0:
                self.dev_scores, self.final = scores, out.metrics or {}
            if i == 0 and writer:
                labels = task.feature_facts(ds).get("labels")
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
                        "data_fingerprint": data.fingerprint,
                    },
                )

    def save(self) -> None:
        """The final model (with ``save_model``), then ``run.json`` and ``metrics.json`` (a folder with both holds
        a finished run), then the model card."""
        config, task, output_dir = self.config, self.task, self.output_dir
        if config.save_model:
            save_final_model(self.trainer, output_dir)
            readable_outputs(output_dir)  # model weights are written owner-only (0600) through a temporary file
        self.metrics = self._metrics()
        record = redact_secrets(config.to_dict())  # no access token in the files a run writes
        if self.writer:
            self._write_trainer_files()
            # the run record last: a folder with run.json + metrics.json holds a finished run
            write_json(
                Path(output_dir) / RUN_FILE,
                {
                    "task": task_record(task),
                    **parts_record(config),
                    # where each split came from, as read: a held-out part of the training file says so here
                    "data": self.metrics.get("data"),
                    "config": record,
                },
            )
            write_json(Path(output_dir) / METRICS_FILE, self.metrics)
            if config.save_model:
                write_model_card(
                    output_dir, self.metrics, record, self.model.config, task.head, annotator=self.context.annotator
                )
        logger.info(
            "%s %s dev %s = %.4f  (metrics in %s)",
            self.kind,
            task.title,
            task.main_metric,
            self.dev_scores.get(task.main_metric, float("nan")),
            Path(output_dir) / METRICS_FILE,
        )

    def _write_trainer_files(self) -> None:
        """The files transformers' run_glue example leaves: ``trainer_state.json`` (also under ``save_strategy
        no``), ``train_results.json``, ``eval_results.json`` (the dev scores as ``eval_*``) and ``all_results.json``."""
        folder = Path(self.output_dir)
        write_json(folder / "trainer_state.json", dataclasses.asdict(self.trainer.state))
        train = {**(self.result.metrics or {}), "train_samples": len(self.train_ds)}
        scores = {f"eval_{k}": v for k, v in self.dev_scores.items() if isinstance(v, (int, float))}
        evaluation = {**self.final, **scores, "eval_samples": len(self.dev_ds)}
        for name, content in (("train", train), ("eval", evaluation), ("all", {**train, **evaluation})):
            write_json(folder / f"{name}_results.json", dict(sorted(content.items())), indent=4)

    # -- metrics.json ---------------------------------------------------------------------------------------------
    def _metrics(self) -> dict[str, Any]:
        """The content of ``metrics.json``."""
        config, task = self.config, self.task
        meta, dev_meta = self.train_facts, self.dev_facts
        train_data, dev_data = self.train_data, self.dev_data
        lisa_log = [e["lisa_loss"] for e in self.trainer.state.log_history if "lisa_loss" in e]
        loss = self.trainer.loss_over_all_steps
        return {
            "task": task.name,
            "task_title": task.title,
            "task_options": task.options(),
            "model": config.resolved_model(),
            "model_label": model_label(config.resolved_model()),
            "model_type": self.kind,
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
                "train": len(self.train_ds),
                "train_total": train_data.total,
                "dev": len(self.dev_ds),
                "dev_total": dev_data.total,
            },
            "subsample": {"train": train_data.sample_note, "dev": dev_data.sample_note},
            "data": {"train": train_data.source, "dev": dev_data.source},
            "max_length": config.max_length,
            "parser": meta.get("parser"),
            "parser_noise": config.parser_noise,
            "syntax_source": self.sources,
            "syntax_keys": list(self.context.syntax_inputs),
            "examples": train_data.metadata.get("examples"),
            "truncated": {"train": meta.get("n_truncated"), "dev": dev_meta.get("n_truncated")},
            "features": {"train": meta.get("cache"), "dev": dev_meta.get("cache")},
            "main_metric": task.main_metric,
            "dev": self.dev_scores,
            "dev_loss": self.final.get("eval_loss"),
            "eval": self.evaluations,
            "history": self.history,
            "train": {
                "loss": self.result.training_loss if loss is None else loss,
                "global_step": self.trainer.state.global_step,
                "epochs": self.trainer.state.epoch,
                "runtime_s": round(self.train_s, 2),
                "processes": self.args.world_size,
                "resumed_from": self.resume_from,
                **_best_checkpoint(self.trainer),
            },
            "parameters": count_parameters(self.model),
            **task.describe_run(self.model),
            "lisa": None
            if getattr(self.model.config, "lisa_layer", None) is None
            else {
                "layer": self.model.config.lisa_layer,
                "head": self.model.config.lisa_head,
                "loss_weight": self.model.config.lisa_loss_weight,
                "train_loss_first": lisa_log[0] if lisa_log else None,
                "train_loss_last": lisa_log[-1] if lisa_log else None,
                "train_loss_logged": lisa_log,
                "dev_loss": self.final.get("eval_lisa_loss"),
            },
            "data_prep_s": round(self.data_s, 2),
            "runtime_s": round(time.time() - self.t0, 2),
            "environment": environment(),
        }


def _best_checkpoint(trainer: Any) -> dict[str, Any]:
    """The best checkpoint's step and metric, when the Trainer kept the best model (``load_best_model_at_end``)."""
    best = trainer.state.best_model_checkpoint
    if not best:
        return {}
    return {"best_step": int(str(best).rsplit("-", 1)[1]), "best_metric": trainer.state.best_metric}


def _train_auxiliary(
    config: RunConfig, task: Task, context: TaskContext, tokenizer: Any, train_ds: Any, dev_ds: Any, output_dir: str
) -> dict[str, Any]:
    """Train the task's auxiliary models (:meth:`Task.auxiliary_models`) on the same features, each in
    ``<output_dir>/<name>``; name -> raw dev outputs."""
    out: dict[str, Any] = {}
    for name, changes in task.auxiliary_models().items():
        sub = config.replace(model={**config.model, **changes}, output_dir=str(Path(output_dir) / name))
        transformers.set_seed(int(sub.seed))
        model = build_model(sub, task)
        model.train()
        seq2seq = uses_generation(sub, task)
        args = training_arguments(
            sub, sub.output_dir, seq2seq=seq2seq, label_names=task.label_names, eval_strategy="no"
        )
        trainer = build_trainer(sub, task, model, tokenizer, args, context, train_ds, None)
        logger.info("training the auxiliary model %r of %s", name, task.title)
        trainer.train()
        out[name] = trainer.predict(dev_ds, ignore_keys=IGNORE_OUTPUTS, metric_key_prefix="eval").predictions
        if sub.save_model:
            trainer.save_model(sub.output_dir)
    return out


# -- train ----------------------------------------------------------------------------------------------------
def train(config: RunConfig, *, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Fine-tune, evaluate, save the model, ``run.json`` and ``metrics.json`` (:class:`TrainRecipe`; ``callbacks``:
    extra ``transformers.TrainerCallback`` objects); returns the content of ``metrics.json``. The run folder is locked
    while the run writes it (:func:`~syntaxformer.training.lock.run_lock`). Raises DataError: the disk fills up
    (naming the folder; an earlier finished run there is kept)."""
    output_dir = os.path.abspath(config.output_dir)
    with run_lock(output_dir):
        try:
            return TrainRecipe(config, callbacks).run()
        except Exception as e:
            if not isinstance(e, SyntaxformerError) and (disk_full(e) or little_room(output_dir)):
                raise DataError(
                    f"cannot write the run in {output_dir}: the disk is full ({type(e).__name__}: "
                    f"{' '.join(str(e).split())[:160]}); free some space and train again (an earlier "
                    "finished run there is kept)"
                ) from e
            raise


#: pip names of the reporting integrations whose package is named otherwise.
_REPORTING_PACKAGES = {"azure_ml": "azureml-core", "comet_ml": "comet-ml", "flyte": "flytekit"}


def check_trainer_options(args: Any) -> None:
    """Refuse before any data is read what the Trainer would refuse only once it starts: ``report_to`` an unknown or
    uninstalled integration; ``push_to_hub`` offline or without a token; ``fp16`` on the CPU. Raises ConfigError,
    MissingDependencyError: naming the option and what would be right."""
    for name in args.report_to or ():
        if name not in INTEGRATION_TO_CALLBACK:
            raise ConfigError(
                f"report_to={name!r} is not a reporting integration; choose from {sorted(INTEGRATION_TO_CALLBACK)} or none"
            )
        if name not in get_available_reporting_integrations():
            raise MissingDependencyError(
                f"--report_to {name} needs the {name} package, which is not installed: pip install "
                f"{_REPORTING_PACKAGES.get(name, name)} (or --report_to none)"
            )
    if args.push_to_hub:
        check_hub_push(args.hub_model_id or Path(args.output_dir).name, args.hub_token)
    if args.fp16 and args.device.type == "cpu":
        raise ConfigError(
            "mixed_precision=fp16 (--fp16) needs a GPU, and this run trains on the CPU; leave it out "
            "(mixed_precision auto trains in full precision on the CPU)"
        )


# -- TrainingArguments and the Trainer ------------------------------------------------------------------------
def training_arguments(config: RunConfig, output_dir: str, *, seq2seq: bool = False, **overrides: Any) -> Any:
    """``TrainingArguments`` (``Seq2SeqTrainingArguments`` with ``seq2seq``) from a run config; ``overrides`` and
    then ``config.training_args`` win over the config's own fields."""
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
        kwargs["predict_with_generate"] = bool(config.predict_with_generate)
    if launched_processes() > 1 and not torch.cuda.is_available():
        # Several processes (accelerate launch / torchrun) without CUDA: DDP on the CPU over gloo. Without use_cpu,
        # accelerate would see no device to distribute over and run each process as a separate one-process job.
        kwargs["use_cpu"] = True
    kwargs["train_sampling_strategy"] = "group_by_length" if config.group_by_length else "random"
    kwargs.update({k: getattr(config, k) for k in ("eval_steps", "save_steps") if getattr(config, k) is not None})
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


def launched_processes() -> int:
    """Number of processes the launcher started (``WORLD_SIZE`` of torchrun / accelerate launch; 1 otherwise)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def is_main_process() -> bool:
    """Whether this process writes the output files: the only one, or world process zero of several."""
    if launched_processes() <= 1:
        return True
    return PartialState().is_main_process


def _align_special_tokens(model: Any, tokenizer: Any) -> None:
    """Write the tokenizer's PAD/BOS/EOS ids into the model config where they differ, as the Trainer would, but
    without its warning on every run (our configs often leave them unset)."""
    if tokenizer is None or not hasattr(model, "config"):
        return
    config = model.config
    for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
        value = getattr(tokenizer, name, None)
        if value is not None and getattr(config, name, None) != value:
            logger.debug("model config %s: %s -> %s (the tokenizer's)", name, getattr(config, name, None), value)
            setattr(config, name, value)


def build_trainer(
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
    """The Trainer of a run over ``args``: ``SyntaxSeq2SeqTrainer`` for a seq2seq task evaluated by generation, else
    ``SyntaxTrainer``."""
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
    from syntaxformer.training.trainer import SyntaxSeq2SeqTrainer, SyntaxTrainer

    if uses_generation(config, task):
        # The task saves its own tokenizers (translation: source_tokenizer/ and target_tokenizer/); a
        # processing_class would be written loose beside them. Models trained from scratch have no encoder, so
        # there is no separate learning rate for new parameters.
        return SyntaxSeq2SeqTrainer(**{**kwargs, "processing_class": None})
    return SyntaxTrainer(**kwargs, new_params_lr=config.new_params_lr, gate_lr=config.gate_lr)


def uses_generation(config: RunConfig, task: Task) -> bool:
    """Whether a run evaluates by generating (a seq2seq task with ``predict_with_generate``)."""
    return task.head == "seq2seq" and bool(config.predict_with_generate)


#: Model outputs that are not predictions (losses, attention maps): left out of `Trainer.predict`.
IGNORE_OUTPUTS = [
    "loss", "span_loss", "verifier_loss", "lisa_loss", "hidden_states", "attentions", "sg_attentions",
    "past_key_values", "encoder_last_hidden_state", "encoder_hidden_states", "encoder_attentions",
    "decoder_hidden_states", "decoder_attentions", "cross_attentions",
]  # fmt: skip
