"""The runner: ``train`` (:class:`~syntaxformer.training.recipe.TrainRecipe`) / ``evaluate`` / ``predict`` for every
task (through the typed :class:`~syntaxformer.tasks.Task` contract) and every syntax system, on the building blocks
of :mod:`syntaxformer.training.blocks` (re-exported here).

Files in ``output_dir`` after :func:`train`: ``run.json`` (the task definition, the system and the annotator scheme
with the module or entry point defining each, and the resolved run config: :func:`evaluate` / :func:`predict`
rebuild the same task, model and features from the folder alone); ``metrics.json``; ``dev_predictions.json`` (for
paired significance tests); the final model, tokenizer and model card; ``checkpoint-<step>/`` folders and
``run_fingerprint.json`` (what a ``resume`` must find unchanged)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import transformers

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError, DataError, FormatError
from syntaxformer.modeling import model_class
from syntaxformer.modeling.raw_text import class_head
from syntaxformer.tasks.base import SplitData, Task, TaskContext
from syntaxformer.training.blocks import (
    build_context,
    build_model,
    check_encoder,
    check_max_length,
    environment,
    load_data,
    load_tokenizer,
    model_label,
    position_limit,
    saved_system,
    system_kind,
)
from syntaxformer.training.config import RunConfig
from syntaxformer.training.lock import run_lock
from syntaxformer.training.recipe import (
    IGNORE_OUTPUTS,
    build_trainer,
    is_main_process,
    train,
    training_arguments,
    uses_generation,
)
from syntaxformer.training.run_folder import METRICS_FILE, RUN_FILE, resume_checkpoint
from syntaxformer.training.saved import loading_model
from syntaxformer.utils import atomic_write, write_json

__all__ = [
    "METRICS_FILE",
    "RUN_FILE",
    "build_context",
    "build_model",
    "check_encoder",
    "check_max_length",
    "environment",
    "evaluate",
    "load_run",
    "load_saved_model",
    "load_tokenizer",
    "load_trained_model",
    "model_label",
    "position_limit",
    "predict",
    "resume_checkpoint",
    "saved_system",
    "system_kind",
    "train",
    "training_arguments",
]

logger = logging.getLogger(__name__)


def _split_name(split: str) -> str:
    """``validation`` (Hugging Face's name) is the ``dev`` split."""
    return "dev" if split in ("validation", "valid") else split


# -- evaluate / predict -----------------------------------------------------------------------------------------
def load_run(
    run_dir: str | os.PathLike, changes: Mapping[str, Any] | None = None, *, trust_remote_code: bool | None = None
) -> tuple[RunConfig, Task]:
    """The run config (with ``changes``) and the task of a run folder. A part registered outside the package and not
    installed as an entry point is found by importing the module that defined it, only with ``trust_remote_code``
    (default: inside :func:`syntaxformer.registry.trust_run_code`). Raises DataError: no ``run.json``; FormatError:
    not the JSON ``train`` wrote; ConfigError: a module to import without ``trust_remote_code``."""
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
    parts: list[tuple[str, Any, _registry.Registry]] = [
        ("task", record, _registry.TASKS),
        ("system", saved.get("system"), _registry.SYSTEMS),
        ("annotator", saved.get("annotator"), _registry.ANNOTATORS),
    ]
    for kind, part, known in parts:
        _registry.import_origin(part, kind, known, trusted=trust_remote_code)
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
    task = config.build_task()
    return config.for_task(task, training=False), task


def load_trained_model(folder: str | os.PathLike, head: str | None = None) -> tuple[str, Any]:
    """The system and the model saved in ``folder``: with the task head ``head``, or its backbone alone (``None``).
    Raises DataError: the folder holds no syntaxformer model, or it does not load."""
    saved = saved_system(str(folder))
    if saved is None:
        raise DataError(
            f"{folder} holds no trained syntaxformer model (no config.json with model_type "
            f"{' or '.join(map(repr, _registry.model_types()))}); was it trained with save_model=false?"
        )
    cls: Any = model_class(saved, head) if head else _registry.system(saved).backbone_class()
    with loading_model(folder):
        return saved, cls.from_pretrained(str(folder))


def load_saved_model(folder: str | os.PathLike, head: str | None = None) -> Any:
    """A saved task model through the ``transformers`` Auto classes (``head``: ``None`` = from the config's
    ``architectures``; ``"seq2seq"``: the translation model). Raises DataError: no ``config.json``, or it does not
    load."""
    # the Auto classes know every syntaxformer model type since `import syntaxformer` (syntaxformer.registration)
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise DataError(f"{folder} holds no saved model (no config.json); was it trained with save_model=false?")
    with loading_model(folder):
        if head is None:
            config = transformers.AutoConfig.from_pretrained(str(folder))
            arch = (getattr(config, "architectures", None) or [""])[0]
            head = class_head(arch) or "sequence_classification"
        auto = {**_registry.AUTO_MODEL_CLASSES, "seq2seq": "AutoModelForSeq2SeqLM"}[head]
        return getattr(transformers, auto).from_pretrained(str(folder))


def _trained(run_dir: str, task: Task, prep: TaskContext) -> tuple[Any, Any]:
    """The model and tokenizer saved in a run folder (``prep`` receives what the task loads besides)."""
    model = load_saved_model(run_dir, task.head)
    return model, task.load_tokenizer(run_dir, prep) or load_tokenizer(run_dir)


def _run_split(
    run_dir: str | os.PathLike, split: str, changes: Mapping[str, Any] | None, output_dir: str | None, scoring: bool
) -> tuple[RunConfig, Task, SplitData, Any, Any, dict[str, Any], str]:
    """The model of a run folder on ``split``: the run config, the task, the data, the task's predictions, the
    features, the prediction metrics and the output folder (``scoring``: the split must have labels)."""
    config, task = load_run(run_dir, changes)
    prep = TaskContext(
        tokenizer=None, parser=config.parser, parse_cache=config.parse_cache, progress=not config.disable_tqdm
    )
    model, tokenizer = _trained(str(run_dir), task, prep)
    if task.head != "seq2seq":
        check_max_length(config.max_length, model.config, run_dir)
    data = load_data(config, task, split, config.max_eval_samples if scoring else config.max_predict_samples)
    if scoring and not data.has_labels:
        raise DataError(f"{task.title} {split} data ({data.source}) has no labels; use `predict` instead")
    context = build_context(config, tokenizer, model.config)
    context.extra.update(prep.extra)
    out_dir = os.path.abspath(output_dir or str(run_dir))
    args = training_arguments(
        config,
        out_dir,
        seq2seq=uses_generation(config, task),
        label_names=task.label_names,
        eval_strategy="no",
        save_strategy="no",
        load_best_model_at_end=False,
    )
    with args.main_process_first(desc=f"featurizing {split}"):  # several processes: one parses, the others wait
        features = task.featurize(data, context, split)
    trainer = build_trainer(config, task, model, tokenizer, args, context)
    out = trainer.predict(features, ignore_keys=IGNORE_OUTPUTS, metric_key_prefix="eval")
    auxiliary = {}
    for name in task.auxiliary_models():  # e.g. SQuAD's parallel verifier, saved in <run_dir>/<name>
        sub_dir = Path(run_dir) / name
        if not (sub_dir / "config.json").is_file():
            raise DataError(
                f"{run_dir}: the auxiliary model {name!r} is missing ({sub_dir}); it is saved "
                "there by `train` with save_model=true"
            )
        sub_model, _ = _trained(str(sub_dir), task, prep)
        sub = build_trainer(config, task, sub_model, tokenizer, args, context)
        auxiliary[name] = sub.predict(features, ignore_keys=IGNORE_OUTPUTS, metric_key_prefix="eval").predictions
    os.makedirs(out_dir, exist_ok=True)
    predictions = task.postprocess(data, features, out.predictions, auxiliary or None)
    return config, task, data, features, predictions, out.metrics or {}, out_dir


def _split_outputs(
    run_dir: str | os.PathLike, output_dir: str | None, names: Sequence[str], overwrite: bool
) -> contextlib.AbstractContextManager[Any]:
    """Before :func:`evaluate` / :func:`predict` work: the files they would write are refused if they exist (unless
    ``overwrite``); returns the lock of the folder they go to (:func:`~syntaxformer.training.lock.run_lock`)."""
    load_run(run_dir)  # first, what is wrong with the folder itself (not a run, a part that is not installed)
    out_dir = Path(os.path.abspath(output_dir or str(run_dir)))
    existing = [str(out_dir / name) for name in names if (out_dir / name).exists()]
    if existing and not overwrite:
        raise DataError(
            f"{' and '.join(existing)} already exist{'s' if len(existing) == 1 else ''} (an earlier result); pass "
            "--overwrite (overwrite=True) to replace it, or choose another --output-dir"
        )
    return run_lock(out_dir)


def evaluate(
    run_dir: str | os.PathLike,
    split: str = "dev",
    *,
    changes: Mapping[str, Any] | None = None,
    output_dir: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Score the model of a run folder on a labeled split, with run-config ``changes`` (e.g. ``{"parser_noise":
    0.4}``); writes ``eval_<split>.json`` to ``output_dir`` (default ``run_dir``), replacing an earlier one only with
    ``overwrite`` (else DataError, before anything is computed). Returns ``{"task", "split", "scores", "loss", ...}``."""
    split = _split_name(split)
    with _split_outputs(run_dir, output_dir, [f"eval_{split}.json"], overwrite):
        t0 = time.time()
        config, task, data, features, predictions, metrics, out_dir = _run_split(
            run_dir, split, changes, output_dir, True
        )
        result: dict[str, Any] = {
            "task": task.name,
            "model": str(run_dir),
            "split": split,
            "size": len(features),
            "total": data.total,
            "subsample": data.sample_note,
            "data": data.source,
            "parser_noise": config.parser_noise,
            "main_metric": task.main_metric,
            "scores": task.compute_metrics(data, predictions),
            "loss": metrics.get("eval_loss"),
            "runtime_s": round(time.time() - t0, 2),
            "environment": environment(),
        }
        path, score = Path(out_dir) / f"eval_{split}.json", result["scores"].get(task.main_metric, float("nan"))
        if is_main_process():
            write_json(path, result)
        logger.info("%s %s %s = %.4f (%s)", task.title, split, task.main_metric, score, path)
        return result


def predict(
    run_dir: str | os.PathLike,
    split: str = "test",
    *,
    changes: Mapping[str, Any] | None = None,
    output_dir: str | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Predict a split with the model of a run folder (scores too if it has labels); writes ``predictions_<split>.tsv``
    (``index``, ``id``, ``prediction``) and ``.jsonl`` (:meth:`~syntaxformer.tasks.base.Task.prediction_records`),
    replacing earlier ones only with ``overwrite`` (else DataError, before anything is computed)."""
    split = _split_name(split)
    names = [f"predictions_{split}.tsv", f"predictions_{split}.jsonl"]
    with _split_outputs(run_dir, output_dir, names, overwrite):
        t0 = time.time()
        _, task, data, _, predictions, _, out_dir = _run_split(run_dir, split, changes, output_dir, False)
        records = task.prediction_records(data, predictions)
        values = [task.submission_value(v, r) for v, r in zip(predictions.values, records)]
        path = Path(out_dir) / f"predictions_{split}.tsv"
        if is_main_process():
            with atomic_write(path) as f:
                f.write("index\tid\tprediction\n")
                for i, (r, v) in enumerate(zip(records, values)):
                    f.write(f"{i}\t{r['id']}\t{v}\n")
            with atomic_write(path.with_suffix(".jsonl")) as f:
                for r in records:
                    f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        result: dict[str, Any] = {
            "task": task.name,
            "model": str(run_dir),
            "split": split,
            "size": len(records),
            "subsample": data.sample_note,
            "predictions_file": str(path),
            "scores": task.compute_metrics(data, predictions) if data.has_labels else None,
            "runtime_s": round(time.time() - t0, 2),
        }
        if values and all(isinstance(v, str) for v in values):
            result["predicted_distribution"] = dict(sorted(Counter(values).items()))
        logger.info("wrote %d predictions to %s", len(records), path)
        return result
