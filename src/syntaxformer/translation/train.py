"""Train one translation model on ``SyntaxSeq2SeqTrainer``: the runner's data flow for the ``translation`` task.

:func:`train_translation` is what ``syntaxformer train --task translation`` and ``experiments/translation.py``
call; it does exactly the runner's steps (:mod:`syntaxformer.tasks.base`) for this one task, with
:class:`~syntaxformer.tasks.translation.TranslationTask` and
:class:`~syntaxformer.training.trainer.SyntaxSeq2SeqTrainer`, and disappears into the one runner
(``syntaxformer.training.run``) when that lands.

Output folder::

    config.json, model.safetensors       the best model by validation loss (AutoModelForSeq2SeqLM.from_pretrained)
    generation_config.json
    source_tokenizer/, target_tokenizer/ the BPE vocabularies learned on the training data
    translation.json                     the options: {"task": ..., "training": ..., "eval_sets": ...}
    metrics.json                         sizes, times, losses, BLEU of the evaluation sets (with signatures)
    hyp.<set>.txt                        the translations of each evaluation set
    checkpoint-<step>/                   Trainer checkpoints (resume; removed with keep_checkpoints=False)
"""

from __future__ import annotations

import inspect
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any, Mapping

from syntaxformer.errors import SyntaxformerError
from syntaxformer.utils import atomic_write

__all__ = ["train_translation", "split_options", "write_json", "count_parameters", "DRIVER_OPTIONS"]

logger = logging.getLogger(__name__)

#: Options of the driver itself (not of the task or the Trainer).
DRIVER_OPTIONS = ("threads", "keep_checkpoints", "show_progress", "output_dir")

#: Short names of Trainer options (the former TranslationConfig's) -> ``Seq2SeqTrainingArguments`` names.
_ALIASES = {"batch_size": "per_device_train_batch_size", "eval_batch_size": "per_device_eval_batch_size",
            "num_beams": "generation_num_beams", "label_smoothing": "label_smoothing_factor"}


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename)."""
    with atomic_write(path) as f:
        json.dump(data, f, indent=1, ensure_ascii=False)


def count_parameters(model: Any) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if p.requires_grad and p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    return n


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Flat options -> ``(task options, Seq2SeqTrainingArguments options, driver options)``.

    Task options are the keyword arguments of :class:`~syntaxformer.tasks.translation.TranslationTask`; driver
    options are :data:`DRIVER_OPTIONS`; ``eval_every`` sets ``eval_steps`` and ``save_steps``, ``adam_betas``
    ``adam_beta1`` / ``adam_beta2``, and the short names ``batch_size``, ``eval_batch_size``, ``num_beams``,
    ``label_smoothing`` their Trainer names; everything else must be a ``Seq2SeqTrainingArguments`` field.

    Raises:
        SyntaxformerError: an option that is none of these (named, with where the known ones are listed).
    """
    from transformers import Seq2SeqTrainingArguments

    from syntaxformer.tasks.translation import TranslationTask

    task_keys = set(inspect.signature(TranslationTask.__init__).parameters) - {"self"}
    trainer_keys = set(inspect.signature(Seq2SeqTrainingArguments.__init__).parameters) - {"self"}
    task, training, driver = {}, {}, {}
    for key, value in options.items():
        if key in task_keys:
            task[key] = value
        elif key in DRIVER_OPTIONS:
            driver[key] = value
        elif key == "eval_every":
            training["eval_steps"] = training["save_steps"] = training["logging_steps"] = int(value)
        elif key == "adam_betas":
            training["adam_beta1"], training["adam_beta2"] = (float(v) for v in value)
        elif _ALIASES.get(key, key) in trainer_keys:
            training[_ALIASES.get(key, key)] = value
        elif key != "task":
            raise SyntaxformerError(f"unknown translation option {key!r}: expected a TranslationTask option "
                                    f"({', '.join(sorted(task_keys))}), one of {', '.join(DRIVER_OPTIONS)}, or a "
                                    "transformers Seq2SeqTrainingArguments field")
    return task, training, driver


def train_translation(options: Mapping[str, Any], annotator: Any = None) -> dict[str, Any]:
    """Train (or resume) one model, keep the best by validation loss, translate the evaluation sets.

    Args:
        options: flat options (see :func:`split_options`), ``output_dir`` included (default
            ``runs/translation``). Trainer options default to :meth:`TranslationTask.training_defaults`.
        annotator: the parser of the sources (default :func:`syntaxformer.tasks.translation.source_annotator`).

    Returns:
        the metrics written to ``metrics.json``. A finished run (``metrics.json`` present) is not retrained: its
        metrics are returned. A folder with ``checkpoint-*`` resumes from the last one.
    """
    import torch
    from transformers import Seq2SeqTrainingArguments, set_seed

    from syntaxformer.tasks.base import TaskContext
    from syntaxformer.tasks.translation import TranslationTask, source_annotator
    from syntaxformer.training.trainer import SyntaxSeq2SeqTrainer

    task_options, training_options, driver = split_options(options)
    out = Path(driver.get("output_dir", "runs/translation"))
    if (out / "metrics.json").is_file():
        return json.loads((out / "metrics.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    show_progress = bool(driver.get("show_progress", True))
    if driver.get("threads"):
        torch.set_num_threads(int(driver["threads"]))
    task = TranslationTask(**task_options)
    training = {**task.training_defaults(), **training_options}
    write_json(out / "translation.json", {"task": task.options(), "training": training,
                                          "eval_sets": _eval_set_files(task)})
    t_start = time.time()
    context = TaskContext(tokenizer=None, annotator=annotator, progress=show_progress)
    if task.features or task.use_sg_layer and task.sg_mask == "sdoi":
        source_annotator(context)
    train, valid = task.load_split("train"), task.load_split("dev")
    task.build_tokenizer(train, str(out), context)
    set_seed(int(training["seed"]))
    model = task.build_model(None, {}, context)
    train_features = task.featurize(train, context, "train")
    valid_features = task.featurize(valid, context, "dev")
    prep_s = time.time() - t_start

    args = Seq2SeqTrainingArguments(output_dir=str(out), disable_tqdm=not show_progress, **training)
    trainer = SyntaxSeq2SeqTrainer(model=model, args=args, train_dataset=train_features,
                                   eval_dataset=valid_features, data_collator=task.collator(context))
    resume = any(out.glob("checkpoint-*"))
    result = trainer.train(resume_from_checkpoint=True if resume else None)
    trainer.save_model(str(out))
    history = _history(trainer.state.log_history)
    best = trainer.state.best_model_checkpoint
    evaluations: dict[str, Any] = {}
    for name in task.eval_set_names():
        corpus = task.load_split(name)
        features = task.featurize(corpus, context, name)
        t0 = time.time()
        raw = trainer.predict(features)
        predictions = task.postprocess(corpus, features, raw.predictions)
        scores = task.compute_metrics(corpus, predictions)
        with atomic_write(out / f"hyp.{name}.txt") as f:
            f.write("".join(h + "\n" for h in predictions.values))
        evaluations[name] = {**scores, "seconds": round(time.time() - t0, 2), "n": len(predictions.values)}
    metrics = {
        "arm": task.arm, "features": task.features, "use_sg_layer": task.use_sg_layer,
        "sg_mask": task.sg_mask if task.use_sg_layer else None, "fraction": task.fraction,
        "seed": int(training["seed"]),
        "sizes": {"train": len(train), "valid": len(valid), "source_vocab": len(context.tokenizer),
                  "target_vocab": len(context.extra["target_tokenizer"])},
        "parameters": count_parameters(trainer.model), "preset": task.preset, "max_steps": int(training["max_steps"]),
        "epochs": float(trainer.state.epoch or 0.0), "train_seconds": round(result.metrics["train_runtime"], 1),
        "prepare_seconds": round(prep_s, 1),
        "best_step": int(best.rsplit("-", 1)[1]) if best else trainer.state.global_step,
        "best_valid_loss": trainer.state.best_metric, "history": history, "eval": evaluations,
        "threads": torch.get_num_threads(), "device": str(trainer.args.device),
    }
    write_json(out / "metrics.json", metrics)
    if not driver.get("keep_checkpoints", True):
        for folder in out.glob("checkpoint-*"):
            shutil.rmtree(folder)
    logger.info("translation run %s: %s", out, {k: v.get("bleu") for k, v in evaluations.items()})
    return metrics


def _eval_set_files(task: Any) -> dict[str, list[str]]:
    """name -> [source, reference] files of the task's evaluation sets (defaults resolved)."""
    out = {}
    for name, files in task.eval_sets.items():
        if files is None:
            from syntaxformer.data.readers.parallel import MULTI30K_SPLITS
            from syntaxformer.defaults import shared_data_dir

            folder = Path(task.data_dir) if task.data_dir else (shared_data_dir() or Path(".")) / "multi30k"
            stem = MULTI30K_SPLITS["test2016"]
            files = [str(folder / f"{stem}.en"), str(folder / f"{stem}.de")]
        out[name] = list(files)
    return out


def _history(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trainer logs -> ``[{"step", "epoch", "train_loss", "valid_loss"}]`` per evaluation."""
    train_loss = {e["step"]: e["loss"] for e in log_history if "loss" in e}
    return [{"step": e["step"], "epoch": e.get("epoch"), "train_loss": train_loss.get(e["step"]),
             "valid_loss": e["eval_loss"]} for e in log_history if "eval_loss" in e]
