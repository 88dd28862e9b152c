"""Experiments: fine-tune, evaluate, predict, and compare the baseline, SG-Net and Syntax-BERT on one task.

These are the library functions behind ``syntaxformer train | evaluate | predict | compare``; they take an
:class:`~syntaxformer.training.config.ExperimentConfig` and return plain dicts (also written as JSON).

Files in ``output_dir`` after :func:`run_experiment`:

* ``experiment.json``: the resolved config (``evaluate`` / ``predict`` read it to rebuild the same features);
* ``metrics.json``: task, model, seed, data sizes and subsampling, where the syntax came from, dev scores (per
  epoch and final), the LISA loss (Syntax-BERT with LISA), runtime;
* the final model and tokenizer (``config.json``, ``model.safetensors``, ``tokenizer.json`` ...);
* ``checkpoint-<step>/`` folders from the Trainer (``resume`` continues from the last one).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.data import TaskData, load_split, subsample
from syntaxformer.tasks.features import FeatureDataset, FeatureOptions, build_features, syntax_source
from syntaxformer.tasks.registry import TaskSpec, get_task
from syntaxformer.training.config import ExperimentConfig
from syntaxformer.utils import atomic_write

__all__ = ["run_experiment", "evaluate_model", "predict", "compare", "load_experiment_config", "format_comparison",
           "SYSTEMS", "resolve_systems"]

METRICS_FILE = "metrics.json"
#: Per-example dev predictions of the final model (for paired significance tests).
DEV_PREDICTIONS_FILE = "dev_predictions.json"
CONFIG_FILE = "experiment.json"


def _say(message: str) -> None:
    print(f"[syntaxformer] {message}", file=sys.stderr, flush=True)


def _write_json(path: str | os.PathLike, data: dict[str, Any]) -> None:
    with atomic_write(path) as f:
        json.dump(data, f, indent=2, sort_keys=False, default=_json_default)
        f.write("\n")


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


# -- data ------------------------------------------------------------------------------------------------
def _split_source(config: ExperimentConfig, split: str) -> dict[str, Any]:
    out = {"data_dir": config.data_dir, "data_file": getattr(config, f"{split}_file"),
           "dataset": config.dataset, "dataset_config": config.dataset_config}
    if config.sst_phrases and split == "train":  # phrases are training examples only (dev / test: sentences)
        out["phrases"] = True
    return out


def load_task_split(config: ExperimentConfig, split: str, max_samples: int | None = None) -> TaskData:
    """Read one split as the config says, subsampled (seeded by ``data_seed``) when ``max_samples`` is set."""
    task = get_task(config.task)
    data = load_split(task, split, **_split_source(config, split))
    if not data.examples:
        raise SyntaxformerError(f"{task.title} {split} data from {data.source} is empty")
    return subsample(data, max_samples, config.resolved_data_seed)


def feature_options(config: ExperimentConfig) -> FeatureOptions:
    """The :class:`FeatureOptions` a config implies: the syntax arrays are the model config's ``syntax_inputs``
    (:func:`model_config`), the ancestor tables with D = its ``max_distance``, ``pos_ids`` with its POS tag set."""
    model = model_config(config)
    keys = model.syntax_inputs
    extra: dict[str, Any] = {"syntax_keys": keys}
    if any(k.startswith("dep_anc") or k.startswith("con_") for k in keys):
        extra["max_distance"] = int(model.max_distance)
    if any(k.startswith("con_") for k in keys) and config.constituency_fallback == "dependency":
        extra["constituency"] = "from_dependency"
    if "pos_ids" in keys:  # BERT+POS
        extra["pos_tags"] = str(model.pos_embeddings)
    return FeatureOptions(max_length=int(config.max_length), criterion=config.criterion, parser=config.parser,
                          syntax=config.syntax, parser_noise=float(config.parser_noise),
                          noise_seed=config.resolved_noise_seed, **extra)


def _features(config: ExperimentConfig, task: TaskSpec, data: TaskData, tokenizer: Any,
              split: str) -> FeatureDataset:
    fc = config.features_cache
    return build_features(task, data, tokenizer, feature_options(config), split=split,
                          cache_dir=fc if isinstance(fc, str) else None, use_cache=bool(fc),
                          parse_cache=config.parse_cache, progress=not config.disable_tqdm, log=_say)


# -- model -----------------------------------------------------------------------------------------------
def _model_options(config: ExperimentConfig, task: TaskSpec) -> dict[str, Any]:
    """The model config options of the experiment (``SGNetConfig`` or ``SyntaxBertConfig`` keyword arguments)."""
    labels = task.labels or ("score",)
    common = {
        "num_labels": task.num_labels,
        "problem_type": "regression" if task.is_regression else "single_label_classification",
        "id2label": dict(enumerate(labels)), "label2id": {label: i for i, label in enumerate(labels)},
    }
    return {**common, **system_options(config)}


def system_options(config: ExperimentConfig) -> dict[str, Any]:
    """The model config options of the experiment that do not depend on the task (no labels)."""
    if config.model_type == "syntax_bert":
        return {"pooling": config.pooling, **syntax_bert_model_options(config)}
    return {
        "pooling": config.pooling,
        "use_sg_layer": bool(config.use_sg_layer), "alpha": float(config.alpha), "alpha_mode": config.alpha_mode,
        "sg_init": config.sg_init, "aggregation": config.aggregation,
        **config.model_kwargs,
    }


def model_config(config: ExperimentConfig) -> Any:
    """The model config (``SGNetConfig`` / ``SyntaxBertConfig``, without labels) of the model a run builds: a saved
    model's own config, else the encoder's config with the experiment's options. Tells which syntax inputs the
    features need (``.syntax_inputs``)."""
    from transformers import AutoConfig

    from syntaxformer.modeling import SYSTEMS

    path = config.resolved_model()
    try:
        loaded = AutoConfig.from_pretrained(path)
    except OSError as e:
        raise SyntaxformerError(f"cannot load the config of the model {path!r}: {e}") from e
    if _saved_model_type(path) is not None:
        return loaded
    try:
        return SYSTEMS[config.model_type](encoder=loaded, **system_options(config))
    except Exception as e:  # config validation (LISA head outside the encoder, bad aggregation ...)
        if isinstance(e, ValueError) or type(e).__name__.startswith("StrictDataclass"):
            raise SyntaxformerError(f"invalid model options for {config.model_type} on {path!r}: {e}") from e
        raise


def syntax_bert_model_options(config: ExperimentConfig) -> dict[str, Any]:
    """The ``SyntaxBertConfig`` options of a ``model_type: syntax_bert`` experiment (without labels / pooling).

    ``use_syntax: false`` gives ``syntax_layers=[]`` (no sub-networks) and, unless set, ``aggregation="mean"``
    (no topical query, which would get no gradient without sub-networks).
    """
    out: dict[str, Any] = {
        "use_dependency": config.trees in ("both", "dependency"),
        "use_constituency": config.trees in ("both", "constituency"),
        "lisa_layer": None if config.lisa_layer is None else int(config.lisa_layer),
        "lisa_head": int(config.lisa_head), "lisa_loss_weight": float(config.lisa_loss_weight),
    }
    if not config.use_syntax:
        out["syntax_layers"] = []
        out["aggregation"] = "mean"
    options = dict(config.syntax_bert_options)
    if not config.use_syntax:
        options.pop("syntax_layers", None)
    out.update(options)
    return out


#: ``config.json`` model types of the saved models this library trains, and their family (``model_type``).
_SAVED_TYPES = {"syntaxformer": "sgnet", "syntaxformer-syntax-bert": "syntax_bert"}


def _saved_model_type(path: str) -> str | None:
    """``"sgnet"`` / ``"syntax_bert"`` for a folder holding a model trained by this library, else ``None``."""
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        return None
    try:
        return _SAVED_TYPES.get(json.loads(cfg.read_text(encoding="utf-8")).get("model_type"))
    except (OSError, ValueError):
        return None


def _is_syntax_model(path: str) -> bool:
    return _saved_model_type(path) is not None


def _model_class(model_type: str) -> Any:
    from syntaxformer.modeling import model_class

    return model_class(model_type, "sequence_classification")


def build_model(config: ExperimentConfig, task: TaskSpec) -> Any:
    """SG-Net / Syntax-BERT (or a baseline) around the pretrained encoder, by ``config.model_type``; a saved
    syntaxformer model is loaded as it is (it must be of the configured model type)."""
    path = config.resolved_model()
    saved = _saved_model_type(path)
    if saved is not None:
        if saved != config.model_type:
            raise SyntaxformerError(f"model {path} is a saved {saved} model but model_type={config.model_type!r}")
        model = _model_class(saved).from_pretrained(path)
        if model.config.num_labels != task.num_labels:
            raise SyntaxformerError(f"model {path} has {model.config.num_labels} outputs but {task.title} needs "
                                    f"{task.num_labels}")
        return model
    try:
        return _model_class(config.model_type).from_encoder_pretrained(path, **_model_options(config, task))
    except OSError as e:
        raise SyntaxformerError(f"cannot load the encoder {path!r}: {e}") from e
    except Exception as e:  # config validation (SyntaxBertConfig: LISA head outside the encoder, bad aggregation ...)
        if isinstance(e, ValueError) or type(e).__name__.startswith("StrictDataclass"):
            raise SyntaxformerError(f"invalid model options for {config.model_type} on {path!r}: {e}") from e
        raise


def system_kind(model: Any) -> str:
    """A short name of what a model is: ``SG-Net``, ``baseline``, ``Syntax-BERT``, ``Syntax-BERT + LISA``,
    ``LISA`` (LISA head, no sub-networks) or ``baseline (Syntax-BERT head)``."""
    c = model.config
    if getattr(c, "model_type", None) != "syntaxformer-syntax-bert":
        return "SG-Net" if c.use_sg_layer else "baseline"
    sub = c.syntax_layers is None or len(c.syntax_layers) > 0
    lisa = c.lisa_layer is not None
    if sub:
        return "Syntax-BERT + LISA" if lisa else "Syntax-BERT"
    return "LISA" if lisa else "baseline (Syntax-BERT head)"


def model_label(path: str) -> str:
    """A short readable name of a model path (the offline MiniLM folder is shown as ``all-MiniLM-L6-v2``)."""
    from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model

    if path in (default_hf_model(), DEFAULT_HF_MODEL_HUB):
        return DEFAULT_HF_MODEL_HUB.split("/")[-1]
    p = Path(path)
    return "/".join(p.parts[-2:]) if p.is_dir() else path


def _load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path, use_fast=True)
    except OSError as e:
        raise SyntaxformerError(f"cannot load a tokenizer from {path!r}: {e}") from e
    if not getattr(tok, "is_fast", False):
        raise SyntaxformerError(f"the tokenizer of {path!r} is not a fast tokenizer; syntax alignment needs one")
    return tok


# -- trainer ---------------------------------------------------------------------------------------------
def _training_arguments(config: ExperimentConfig, output_dir: str, **overrides: Any) -> Any:
    import dataclasses

    import torch
    from transformers import TrainingArguments

    from syntaxformer.training.trainer import precision_flags

    kwargs: dict[str, Any] = dict(
        output_dir=output_dir, learning_rate=float(config.learning_rate),
        num_train_epochs=float(config.num_train_epochs), max_steps=int(config.max_steps),
        per_device_train_batch_size=int(config.per_device_train_batch_size),
        per_device_eval_batch_size=int(config.per_device_eval_batch_size),
        gradient_accumulation_steps=int(config.gradient_accumulation_steps),
        weight_decay=float(config.weight_decay), warmup_steps=float(config.warmup_steps),
        lr_scheduler_type=config.lr_scheduler_type, max_grad_norm=float(config.max_grad_norm),
        seed=int(config.seed), data_seed=config.resolved_data_seed,
        eval_strategy=config.eval_strategy, save_strategy=config.save_strategy,
        save_total_limit=config.save_total_limit, logging_steps=int(config.logging_steps),
        dataloader_num_workers=int(config.dataloader_num_workers), report_to="none",
        label_names=["labels"], remove_unused_columns=False,
        dataloader_pin_memory=torch.cuda.is_available(),
        **precision_flags(config.mixed_precision),
    )
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
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
    kwargs.update(config.training_args)
    kwargs.update(overrides)
    try:
        return TrainingArguments(**kwargs)
    except (TypeError, ValueError) as e:
        raise SyntaxformerError(f"invalid training arguments: {e}") from e


def _make_trainer(config: ExperimentConfig, task: TaskSpec, model: Any, tokenizer: Any, args: Any,
                  train_ds: FeatureDataset | None, eval_ds: FeatureDataset | None,
                  callbacks: Sequence[Any] = ()) -> Any:
    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.training.trainer import SyntaxTrainer, make_compute_metrics

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return SyntaxTrainer(model=model, args=args, data_collator=SyntaxCollator(pad_token_id=pad),
                         train_dataset=train_ds, eval_dataset=eval_ds, processing_class=tokenizer,
                         compute_metrics=make_compute_metrics(task), callbacks=list(callbacks) or None,
                         new_params_lr=config.new_params_lr)


def _strip(metrics: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in metrics.items()}


def _task_scores(task: TaskSpec, metrics: dict[str, Any], prefix: str = "eval_") -> dict[str, float]:
    names = list(task.metrics) + (["combined_score"] if len(task.metrics) > 1 else [])
    return {n: float(metrics[prefix + n]) for n in names if prefix + n in metrics}


def _environment() -> dict[str, Any]:
    import torch
    import transformers

    from syntaxformer import __version__

    device = "cpu"
    if torch.cuda.is_available():
        device = f"cuda ({torch.cuda.get_device_name(0)})"
    return {"syntaxformer": __version__, "transformers": transformers.__version__, "torch": torch.__version__,
            "python": platform.python_version(), "device": device, "cpu_threads": torch.get_num_threads()}


def _resume_checkpoint(config: ExperimentConfig, output_dir: str) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    if isinstance(config.resume, str) and config.resume not in ("", "true", "True"):
        if not Path(config.resume).is_dir():
            raise SyntaxformerError(f"resume checkpoint {config.resume} not found")
        return config.resume
    last = get_last_checkpoint(output_dir) if Path(output_dir).is_dir() else None
    if config.resume:
        if last is None:
            _say(f"resume: no checkpoint in {output_dir}; starting from scratch")
        return last
    if last is not None and not config.overwrite_output_dir:
        raise SyntaxformerError(
            f"{output_dir} already holds checkpoints (last: {Path(last).name}); use --resume to continue that run "
            "or --overwrite-output-dir to start again there")
    if last is not None:  # starting again: old checkpoints would be mistaken for this run's by a later --resume
        import shutil

        old = sorted(p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir())
        _say(f"overwrite_output_dir: removing {len(old)} old checkpoint folder(s) in {output_dir}")
        for p in old:
            shutil.rmtree(p)
    return None


def run_experiment(config: ExperimentConfig, *, callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Fine-tune on the task's train split, evaluate on dev, save the model and ``metrics.json``.

    Args:
        config: the experiment.
        callbacks: extra ``transformers.TrainerCallback`` objects.

    Returns:
        The content of ``metrics.json``: ``task``, ``model``, ``seed``, ``sizes``, ``subsample``, ``dev`` (final
        scores), ``main_metric``, ``history`` (dev scores per evaluation), ``train`` (loss, steps, runtime),
        ``runtime_s`` (whole run incl. data preparation), ``features`` (cache hits), ``environment``.
    """
    import numpy as np
    import transformers

    from syntaxformer.training.trainer import logits_to_predictions

    t0 = time.time()
    task = get_task(config.task)
    output_dir = os.path.abspath(config.output_dir)
    resume_from = _resume_checkpoint(config, output_dir)
    os.makedirs(output_dir, exist_ok=True)
    config.save(Path(output_dir) / CONFIG_FILE)
    model_path = config.resolved_model()
    tokenizer = _load_tokenizer(model_path)

    t_data = time.time()
    train_data = load_task_split(config, "train", config.max_train_samples)
    dev_data = load_task_split(config, "dev", config.max_eval_samples)
    for name, data in (("train", train_data), ("dev", dev_data)):
        if data.sample_note:
            _say(f"{task.title} {name}: {data.sample_note}")
    train_ds = _features(config, task, train_data, tokenizer, "train")
    dev_ds = _features(config, task, dev_data, tokenizer, "dev")
    if train_ds.labels is None or dev_ds.labels is None:
        raise SyntaxformerError(f"{task.title}: training needs labeled train and dev data")
    data_s = time.time() - t_data

    transformers.set_seed(int(config.seed))  # the new layers' initialisation depends on it
    model = build_model(config, task)
    model.train()
    args = _training_arguments(config, output_dir)
    trainer = _make_trainer(config, task, model, tokenizer, args, train_ds, dev_ds, callbacks)
    kind = system_kind(model)
    options = feature_options(config)
    sources = syntax_source(train_data, options)
    _say(f"syntax: dependency trees: {sources['dependency']}; constituency trees: {sources['constituency']}")
    if config.uses_syntax_bert_groups and config.trees != "dependency" and sources["constituency"].startswith("none"):
        _say("note: these texts have no constituency trees, so Syntax-BERT's constituency sub-networks are empty"
             + ("; with trees=constituency no layer sees any syntax" if config.trees == "constituency" else ""))
    _say(f"training {kind} on {task.title}: {len(train_ds)} train / {len(dev_ds)} dev examples, "
         f"model {model_path}" + (f", resuming from {resume_from}" if resume_from else ""))
    t_train = time.time()
    result = trainer.train(resume_from_checkpoint=resume_from)
    train_s = time.time() - t_train

    history = [dict(_strip({k: v for k, v in e.items() if k.startswith("eval_") or k in ("epoch", "step")},
                           "eval_")) for e in trainer.state.log_history if "eval_loss" in e]
    # Final dev pass through `predict`, so the per-example predictions are kept for paired significance tests.
    dev_out = trainer.predict(dev_ds, metric_key_prefix="eval")
    final = dev_out.metrics
    dev_scores = _task_scores(task, final)
    _write_json(Path(output_dir) / DEV_PREDICTIONS_FILE, {
        "task": task.name, "seed": config.seed, "order": "dataset", "ids": list(dev_ds.guids),
        "predictions": np.asarray(logits_to_predictions(task, dev_out.predictions)).tolist(),
        "labels": np.asarray(dev_ds.labels).tolist()})
    if config.save_model:
        trainer.save_model(output_dir)

    lisa_log = [e["lisa_loss"] for e in trainer.state.log_history if "lisa_loss" in e]
    metrics: dict[str, Any] = {
        "task": task.name, "task_title": task.title, "model": model_path, "model_label": model_label(model_path),
        "model_type": kind, "model_family": config.model_type,
        "model_options": {k: v for k, v in _model_options(config, task).items() if k not in ("id2label", "label2id")},
        "new_params_lr": config.new_params_lr, "learning_rate": config.learning_rate,
        "num_train_epochs": config.num_train_epochs, "batch_size": config.per_device_train_batch_size,
        "seed": config.seed, "data_seed": config.resolved_data_seed,
        "sizes": {"train": len(train_ds), "train_total": train_data.total, "dev": len(dev_ds),
                  "dev_total": dev_data.total},
        "subsample": {"train": train_data.sample_note, "dev": dev_data.sample_note},
        "data": {"train": train_data.source, "dev": dev_data.source},
        "max_length": config.max_length, "parser": train_ds.meta.get("parser"),
        "parser_noise": config.parser_noise,
        "syntax_source": sources, "syntax_keys": list(options.syntax_keys or ()),
        "examples": train_data.metadata.get("examples"),
        "truncated": {"train": train_ds.meta.get("n_truncated"), "dev": dev_ds.meta.get("n_truncated")},
        "features": {"train": train_ds.meta.get("cache"), "dev": dev_ds.meta.get("cache")},
        "main_metric": task.main_metric, "dev": dev_scores, "dev_loss": final.get("eval_loss"),
        "history": history,
        "train": {"loss": result.training_loss, "global_step": trainer.state.global_step,
                  "epochs": trainer.state.epoch, "runtime_s": round(train_s, 2),
                  "resumed_from": resume_from},
        "lisa": None if getattr(model.config, "lisa_layer", None) is None else {
            "layer": model.config.lisa_layer, "head": model.config.lisa_head,
            "loss_weight": model.config.lisa_loss_weight,
            "train_loss_first": lisa_log[0] if lisa_log else None,
            "train_loss_last": lisa_log[-1] if lisa_log else None, "train_loss_logged": lisa_log,
            "dev_loss": final.get("eval_lisa_loss")},
        "data_prep_s": round(data_s, 2), "runtime_s": round(time.time() - t0, 2),
        "environment": _environment(),
    }
    _write_json(Path(output_dir) / METRICS_FILE, metrics)
    main = dev_scores.get(task.main_metric, float("nan"))
    _say(f"{kind} {task.title} dev {task.main_metric} = {main:.4f}  (metrics in {Path(output_dir) / METRICS_FILE})")
    return metrics


# -- evaluate / predict -----------------------------------------------------------------------------------
def load_experiment_config(model_dir: str | os.PathLike, overrides: dict[str, Any] | None = None
                           ) -> ExperimentConfig:
    """The config saved with a trained model (``experiment.json``), with changes; defaults if there is none."""
    path = Path(model_dir) / CONFIG_FILE
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    saved = _saved_model_type(str(model_dir))
    if saved is not None and "model_type" not in data:  # no (or an older) experiment.json: trust the model
        data["model_type"] = saved
    data.update(overrides or {})
    data["model_name_or_path"] = str(model_dir)
    return ExperimentConfig.from_dict(data)


def _load_trained(config: ExperimentConfig) -> tuple[Any, Any]:
    path = config.resolved_model()
    saved = _saved_model_type(path)
    if saved is None:
        raise SyntaxformerError(f"{path} is not a trained syntaxformer model (no config.json with model_type "
                                f"{' or '.join(map(repr, _SAVED_TYPES))}); train one with `syntaxformer train` first")
    return _model_class(saved).from_pretrained(path), _load_tokenizer(path)


def evaluate_model(config: ExperimentConfig, split: str = "dev", output_dir: str | None = None) -> dict[str, Any]:
    """Score a trained model (``config.model_name_or_path``) on a labeled split; writes ``eval_<split>.json``.

    Returns:
        ``{"task", "model", "split", "size", "subsample", "scores", "loss", "runtime_s", ...}``.
    """
    t0 = time.time()
    task = get_task(config.task)
    model, tokenizer = _load_trained(config)
    data = load_task_split(config, split, config.max_eval_samples)
    ds = _features(config, task, data, tokenizer, split)
    if ds.labels is None:
        raise SyntaxformerError(f"{task.title} {split} data ({data.source}) has no labels; use `predict` instead")
    out_dir = os.path.abspath(output_dir or config.resolved_model())
    args = _training_arguments(config, out_dir, eval_strategy="no", save_strategy="no")
    trainer = _make_trainer(config, task, model, tokenizer, args, None, None)
    metrics = trainer.evaluate(eval_dataset=ds, metric_key_prefix="eval")
    result = {
        "task": task.name, "model": config.resolved_model(), "split": split, "size": len(ds),
        "total": data.total, "subsample": data.sample_note, "data": data.source,
        "parser_noise": config.parser_noise, "main_metric": task.main_metric,
        "scores": _task_scores(task, metrics), "loss": metrics.get("eval_loss"),
        "runtime_s": round(time.time() - t0, 2), "environment": _environment(),
    }
    os.makedirs(out_dir, exist_ok=True)
    _write_json(Path(out_dir) / f"eval_{split}.json", result)
    _say(f"{task.title} {split} {task.main_metric} = {result['scores'].get(task.main_metric, float('nan')):.4f} "
         f"({Path(out_dir) / f'eval_{split}.json'})")
    return result


def predict(config: ExperimentConfig, split: str = "test", output_dir: str | None = None) -> dict[str, Any]:
    """Predict a split with a trained model; writes ``predictions_<split>.tsv`` (``index``, ``id``, ``prediction``).

    Predictions are label strings (classification) or values (regression). If the split has labels, scores are
    reported too.
    """
    import numpy as np

    from syntaxformer.training.trainer import logits_to_predictions

    t0 = time.time()
    task = get_task(config.task)
    model, tokenizer = _load_trained(config)
    data = load_task_split(config, split, config.max_predict_samples)
    ds = _features(config, task, data, tokenizer, split)
    out_dir = os.path.abspath(output_dir or config.resolved_model())
    args = _training_arguments(config, out_dir, eval_strategy="no", save_strategy="no")
    trainer = _make_trainer(config, task, model, tokenizer, args, None, None)
    if ds.labels is None:
        trainer.compute_metrics = None
    out = trainer.predict(ds, metric_key_prefix="test")
    preds = logits_to_predictions(task, out.predictions)
    os.makedirs(out_dir, exist_ok=True)
    path = Path(out_dir) / f"predictions_{split}.tsv"
    with atomic_write(path) as f:
        f.write("index\tid\tprediction\n")
        for i, (guid, p) in enumerate(zip(ds.guids, preds)):
            value = f"{float(p):.4f}" if task.is_regression else task.labels[int(p)]
            f.write(f"{i}\t{guid}\t{value}\n")
    result = {"task": task.name, "model": config.resolved_model(), "split": split, "size": len(ds),
              "subsample": data.sample_note, "predictions_file": str(path),
              "scores": _task_scores(task, out.metrics or {}, "test_") if ds.labels is not None else None,
              "runtime_s": round(time.time() - t0, 2)}
    if not task.is_regression:
        result["predicted_distribution"] = {task.labels[k]: int(c) for k, c in
                                            zip(*np.unique(preds, return_counts=True))}
    _say(f"wrote {len(ds)} predictions to {path}")
    return result


# -- compare ----------------------------------------------------------------------------------------------
#: The systems ``compare`` knows by name: config changes (a function of the shared config, for the LISA layer).
#: Each one sets every model option it depends on, so options meant for one system do not leak into another.
_SGNET_RESET = {"model_type": "sgnet", "use_syntax": True, "trees": "both", "lisa_layer": None, "lisa_head": 0,
                "lisa_loss_weight": 1.0, "syntax_bert_options": {}}


def _default_lisa_layer(config: ExperimentConfig) -> int:
    """``config.lisa_layer``, else the encoder's middle layer (``num_hidden_layers // 2``; the paper does not say
    which layer its LISA head is in)."""
    if config.lisa_layer is not None:
        return int(config.lisa_layer)
    from transformers import AutoConfig

    enc = AutoConfig.from_pretrained(config.resolved_model())
    n = getattr(enc, "num_hidden_layers", None) or getattr(getattr(enc, "encoder", None), "num_hidden_layers", 2)
    return int(n) // 2


SYSTEMS: dict[str, Callable[[ExperimentConfig], dict[str, Any]]] = {
    "baseline": lambda c: {**_SGNET_RESET, "use_sg_layer": False},
    "sgnet": lambda c: {**_SGNET_RESET, "use_sg_layer": True},
    "syntax_bert": lambda c: {"model_type": "syntax_bert", "use_syntax": True, "lisa_layer": None,
                              "model_kwargs": {}},
    "syntax_bert_lisa": lambda c: {"model_type": "syntax_bert", "use_syntax": True,
                                   "lisa_layer": _default_lisa_layer(c), "model_kwargs": {}},
    "syntax_bert_baseline": lambda c: {"model_type": "syntax_bert", "use_syntax": False, "lisa_layer": None,
                                       "model_kwargs": {}},
    "lisa": lambda c: {"model_type": "syntax_bert", "use_syntax": False, "lisa_layer": _default_lisa_layer(c),
                       "model_kwargs": {}},
}


def resolve_systems(config: ExperimentConfig, systems: Sequence[str | tuple[str, dict[str, Any]]] | str | None
                    ) -> list[tuple[str, dict[str, Any]]]:
    """``(name, config changes)`` pairs from system names (:data:`SYSTEMS`, or a comma-separated string of them)
    and / or explicit pairs; ``None`` = ``baseline,sgnet``.

    Raises:
        SyntaxformerError: an unknown or repeated name.
    """
    if systems is None:
        systems = ["baseline", "sgnet"]
    if isinstance(systems, str):
        systems = [x.strip() for x in systems.split(",") if x.strip()]
    out: list[tuple[str, dict[str, Any]]] = []
    for item in systems:
        if isinstance(item, str):
            if item not in SYSTEMS:
                raise SyntaxformerError(f"unknown system {item!r}; known systems: {', '.join(SYSTEMS)}")
            out.append((item, SYSTEMS[item](config)))
        else:
            name, changes = item
            out.append((str(name), dict(changes)))
    names = [n for n, _ in out]
    if not out or len(set(names)) != len(names):
        raise SyntaxformerError(f"systems must be distinct names, got {names}")
    return out


def compare(config: ExperimentConfig, *, systems: Sequence[str | tuple[str, dict[str, Any]]] | str | None = None,
            print_fn: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Fine-tune several systems (default: the plain-encoder baseline and SG-Net) with the same seed and data;
    report their dev scores side by side.

    Each system runs :func:`run_experiment` in ``<output_dir>/<name>`` (features are built once per kind of
    features and shared through the features cache). Writes ``<output_dir>/comparison.json`` and prints a table.

    Args:
        config: the shared experiment settings.
        systems: names from :data:`SYSTEMS` (``baseline``, ``sgnet``, ``syntax_bert``, ``syntax_bert_lisa``,
            ``syntax_bert_baseline``, ``lisa``; a list or a comma-separated string) and / or ``(name, config
            changes)`` pairs; default ``baseline,sgnet``. The LISA systems use ``config.lisa_layer``, else the
            encoder's middle layer; Syntax-BERT systems take the shared ``trees`` / ``syntax_bert_options``.
        print_fn: where the table goes (``None``: not printed).

    Returns:
        ``{"task", "seed", "main_metric", "sizes", "subsample", "systems": {name: metrics.json content},
        "table": the printed text, "runtime_s"}``.
    """
    t0 = time.time()
    resolved = resolve_systems(config, systems)
    results: dict[str, dict[str, Any]] = {}
    for name, changes in resolved:
        sub = config.replace(output_dir=str(Path(config.output_dir) / name), **changes)
        results[name] = run_experiment(sub)
    task = get_task(config.task)
    first = next(iter(results.values()))
    summary = {"task": task.name, "seed": config.seed, "main_metric": task.main_metric,
               "sizes": first["sizes"], "subsample": first["subsample"], "systems": results,
               "runtime_s": round(time.time() - t0, 2)}
    summary["table"] = format_comparison(summary)
    os.makedirs(config.output_dir, exist_ok=True)
    _write_json(Path(config.output_dir) / "comparison.json", summary)
    if print_fn is not None:
        print_fn(summary["table"])
    return summary


def format_comparison(summary: dict[str, Any]) -> str:
    """The side-by-side text table of a :func:`compare` result."""
    systems = summary["systems"]
    names = list(systems)
    metric_names: list[str] = []
    for m in systems.values():
        metric_names += [k for k in m["dev"] if k not in metric_names]
    first = systems[names[0]]
    sizes = first["sizes"]
    lines = [f"{first['task_title']}: {first['model_label']} fine-tuned on {sizes['train']} of "
             f"{sizes['train_total']} train examples, scored on {sizes['dev']} of {sizes['dev_total']} dev "
             f"examples; seed {summary['seed']}, {first['num_train_epochs']:g} epoch(s), batch {first['batch_size']}, "
             f"lr {first['learning_rate']:g} (new layers {first['new_params_lr'] or first['learning_rate']:g}), "
             f"max length {first['max_length']}" + (f", parser noise {first['parser_noise']:g}"
                                                    if first["parser_noise"] else "")]
    if first["subsample"]["train"] or first["subsample"]["dev"]:
        lines.append("subsample: " + "; ".join(f"{k}: {v}" for k, v in first["subsample"].items() if v))
    source = first.get("syntax_source")
    if source and any(m.get("model_family") == "syntax_bert" for m in systems.values()):
        lines.append(f"syntax: dependency trees: {source['dependency']}; constituency trees: "
                     f"{source['constituency']}")
    w = max(10, *(len(n) for n in metric_names))
    nw = max(10, *(len(n) for n in names))
    lines.append(f"{'system':<{nw}} " + " ".join(f"{n:>{w}}" for n in metric_names) + f" {'train_s':>9}")
    for name in names:
        m = systems[name]
        vals = " ".join(f"{m['dev'].get(n, math.nan):>{w}.4f}" for n in metric_names)
        lines.append(f"{name:<{nw}} {vals} {m['train']['runtime_s']:>9.1f}")
    if len(names) >= 2:
        a = systems[names[0]]["dev"].get(summary["main_metric"], math.nan)
        for other in names[1:]:
            b = systems[other]["dev"].get(summary["main_metric"], math.nan)
            lines.append(f"difference ({other} - {names[0]}) in {summary['main_metric']}: {b - a:+.4f}")
    return "\n".join(lines)
