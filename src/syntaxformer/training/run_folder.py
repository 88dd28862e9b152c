"""The run folder of :func:`syntaxformer.training.run.train`: its file names, the checks before a run writes there,
and the writes that leave it whole."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from syntaxformer.errors import DataError
from syntaxformer.training.checkpoints import checkpoint_problems, latest_intact_checkpoint, list_checkpoints
from syntaxformer.training.config import RunConfig
from syntaxformer.utils import atomic_write, write_json

__all__ = [
    "DEV_PREDICTIONS_FILE",
    "METRICS_FILE",
    "RUN_FILE",
    "clear_previous_run",
    "guard_finished_run",
    "resume_checkpoint",
    "save_final_model",
    "write_run_file",
]

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
#: Per-example dev predictions of the final model (for paired significance tests).
DEV_PREDICTIONS_FILE = "dev_predictions.json"
#: The task definition and the run config of a run folder.
RUN_FILE = "run.json"


def resume_checkpoint(config: RunConfig, output_dir: str) -> str | None:
    """The checkpoint to resume from (``config.resume``; ``True``: the newest intact one), or ``None``. Raises
    DataError: the given checkpoint is missing or not intact; no checkpoint is intact; checkpoints of another run are
    there and neither ``resume`` nor ``overwrite_output_dir`` is set."""
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


def clear_previous_run(output_dir: str) -> None:
    """Starting again with ``overwrite_output_dir``: the old run's checkpoints and result files go."""
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


#: Result files of a finished run (removed when a run is started again there with overwrite_output_dir).
_RESULT_FILES = (
    METRICS_FILE,
    RUN_FILE,
    DEV_PREDICTIONS_FILE,
    "run_fingerprint.json",
    # the Trainer's (transformers' run_glue conventions)
    "trainer_state.json",
    "train_results.json",
    "eval_results.json",
    "all_results.json",
)


def guard_finished_run(config: RunConfig, output_dir: str) -> None:
    """A finished run (``metrics.json`` in ``output_dir``) is never replaced silently: ``resume`` is refused, a new
    run needs ``overwrite_output_dir``. Nothing is removed here (:func:`clear_previous_run` does, once the data is
    read). Raises DataError: naming the folder and what to do."""
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


def write_run_file(path: Path, content: Any) -> None:
    """A run file: text as it is, anything else as JSON (atomically)."""
    if isinstance(content, str):
        with atomic_write(path) as f:
            f.write(content)
    else:
        write_json(path, content)


def save_final_model(trainer: Any, output_dir: str) -> None:
    """``trainer.save_model`` into a temporary folder (``.tmp-model-*``), then each file renamed into place: a kill
    while saving never leaves a truncated weights file."""
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
