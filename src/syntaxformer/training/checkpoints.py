"""Checkpoints a run can resume from (docs/reliability.md, "3. Resume"): the newest intact one, damaged newer ones
set aside, and the run fingerprint that refuses a resume of another run."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from syntaxformer.errors import DataError
from syntaxformer.secrets import redact_secrets
from syntaxformer.training.saved import WEIGHT_FILES, archive_problem, weights_problem
from syntaxformer.utils import write_json

__all__ = [
    "FINGERPRINT_FILE",
    "RESUME_FREE_OPTIONS",
    "check_fingerprint",
    "checkpoint_problems",
    "checkpoint_step",
    "latest_intact_checkpoint",
    "list_checkpoints",
    "remove_orphan_temp_files",
    "run_fingerprint",
    "set_aside_damaged",
    "write_fingerprint",
]

logger = logging.getLogger(__name__)

#: The run fingerprint in a run folder (written when a run starts; read by a resume).
FINGERPRINT_FILE = "run_fingerprint.json"
#: Run-config options a resume may change: where and how often results are written, evaluation, display.
RESUME_FREE_OPTIONS = frozenset({
    "output_dir", "overwrite_output_dir", "resume", "save_model", "disable_tqdm", "dataloader_num_workers",
    "eval_strategy", "eval_steps", "save_strategy", "save_steps", "save_total_limit", "logging_steps", "dev_file",
    "test_file", "max_eval_samples", "max_predict_samples", "per_device_eval_batch_size", "features_cache",
    "parse_cache", "predict_with_generate",
})  # fmt: skip

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_step(path: str | os.PathLike) -> int | None:
    """The step of a ``checkpoint-<step>`` folder name, or ``None``."""
    m = _CHECKPOINT.match(Path(path).name)
    return int(m.group(1)) if m else None


def list_checkpoints(output_dir: str | os.PathLike) -> list[Path]:
    """The ``checkpoint-<step>/`` folders of a run folder, newest first."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    steps = {p: step for p in folder.iterdir() if p.is_dir() and (step := checkpoint_step(p)) is not None}
    return sorted(steps, key=steps.__getitem__, reverse=True)


def checkpoint_problems(path: str | os.PathLike) -> list[str]:
    """What keeps a checkpoint folder from being resumed exactly; ``[]`` = intact. Checked: ``trainer_state.json``
    (at the folder's step); the model weights (readable to the end); ``optimizer.pt``, ``scheduler.pt``,
    ``rng_state*.pth`` and ``scaler.pt`` if present (complete torch archives; ``optimizer*`` folders unchecked)."""
    folder = Path(path)
    if not folder.is_dir():
        return [f"{folder} is not a folder"]
    problems: list[str] = []
    state_file = folder / "trainer_state.json"
    if not state_file.is_file():
        problems.append("no trainer_state.json")
    else:
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
                raise ValueError("not a trainer state")
            step = checkpoint_step(folder)
            if step is not None and state.get("global_step") != step:
                problems.append(f"trainer_state.json is at step {state.get('global_step')}, not {step}")
        except (OSError, ValueError) as e:
            problems.append(f"trainer_state.json is not valid ({type(e).__name__})")
    weights = [folder / w for w in WEIGHT_FILES if (folder / w).is_file()]
    if not weights and not any(folder.glob("pytorch_model_fsdp*")):
        problems.append("no model weights (model.safetensors)")
    problems += [p for p in map(weights_problem, weights) if p]
    for name in ("optimizer.pt", "scheduler.pt"):
        file = folder / name
        if file.is_file():
            if problem := archive_problem(file):
                problems.append(problem)
        elif not (name == "optimizer.pt" and any(p.is_dir() for p in folder.glob("optimizer*"))):
            problems.append(f"no {name}")
    rng = sorted(folder.glob("rng_state*.pth"))
    if not rng:
        problems.append("no rng_state.pth")
    problems += [p for p in map(archive_problem, rng + [f for f in [folder / "scaler.pt"] if f.is_file()]) if p]
    return problems


def latest_intact_checkpoint(output_dir: str | os.PathLike) -> tuple[Path | None, list[tuple[Path, list[str]]]]:
    """The newest intact checkpoint of a run folder (or ``None``), and the newer ones skipped with their problems."""
    skipped: list[tuple[Path, list[str]]] = []
    for path in list_checkpoints(output_dir):
        problems = checkpoint_problems(path)
        if not problems:
            return path, skipped
        skipped.append((path, problems))
    return None, skipped


def set_aside_damaged(output_dir: str | os.PathLike, resume_from: str | os.PathLike) -> list[Path]:
    """Rename the checkpoints newer than ``resume_from`` that are not intact to ``damaged-checkpoint-<step>/`` (kept
    for inspection, never picked or rotated). Returns the new paths."""
    start = checkpoint_step(resume_from)
    moved = []
    for path in list_checkpoints(output_dir):
        step = checkpoint_step(path)
        if start is None or step is None or step <= start or not checkpoint_problems(path):
            continue
        target = path.with_name(f"damaged-{path.name}")
        n = 1
        while target.exists():
            n += 1
            target = path.with_name(f"damaged-{path.name}.{n}")
        path.rename(target)
        logger.warning("set aside the damaged checkpoint %s as %s", path, target.name)
        moved.append(target)
    return moved


def remove_orphan_temp_files(output_dir: str | os.PathLike) -> list[Path]:
    """Remove what interrupted atomic writes leave (``.tmp-*`` files, ``.tmp-model-*`` folders) in a run folder and
    its checkpoints; returns them. Call only when no other process writes there."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    found = [
        p
        for d in [folder, *list_checkpoints(folder)]
        for p in d.glob(".tmp-*")
        if p.is_file() or (p.is_dir() and p.name.startswith(".tmp-model-"))
    ]
    for p in found:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        logger.info("removed %s, left by an interrupted write", p)
    return found


def run_fingerprint(config: Mapping[str, Any], data_fingerprint: str | None) -> dict[str, Any]:
    """What a resume must find unchanged: the run-config options (a ``RunConfig.to_dict()``) except
    :data:`RESUME_FREE_OPTIONS`, and the content fingerprint of the training data (``None``: unknown); no secrets."""
    kept = {k: v for k, v in config.items() if k not in RESUME_FREE_OPTIONS}
    return {
        "config": json.loads(json.dumps(redact_secrets(kept), sort_keys=True, default=str)),
        "train_data": data_fingerprint,
    }


def write_fingerprint(output_dir: str | os.PathLike, fingerprint: Mapping[str, Any]) -> None:
    """Write ``run_fingerprint.json`` (atomically)."""
    write_json(Path(output_dir) / FINGERPRINT_FILE, dict(fingerprint))


def check_fingerprint(
    output_dir: str | os.PathLike, fingerprint: Mapping[str, Any], *, check_data: bool = True
) -> None:
    """Refuse to resume the run in ``output_dir`` with other options or other training data (``fingerprint``:
    :func:`run_fingerprint` of the resuming run; ``check_data``: also compare the data's). Raises DataError: naming the
    options that changed (old -> new) or the training data, and what to do instead."""
    path = Path(output_dir) / FINGERPRINT_FILE
    if not path.is_file():
        logger.warning(
            "%s has no %s (a run started by an older version): cannot check that --resume continues it "
            "with the same options and data",
            output_dir,
            FINGERPRINT_FILE,
        )
        return
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        old_config, old_data = dict(saved["config"]), saved.get("train_data")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(
            f"{path} is not readable ({type(e).__name__}); cannot check that --resume continues the same "
            "run. Start again with --overwrite-output-dir"
        ) from None
    new_config = dict(fingerprint["config"])
    changed = sorted(
        k
        for k in set(old_config) | set(new_config)
        if k not in RESUME_FREE_OPTIONS and old_config.get(k) != new_config.get(k)
    )
    reasons = [f"{k}: {json.dumps(old_config.get(k))} -> {json.dumps(new_config.get(k))}" for k in changed]
    new_data = fingerprint.get("train_data")
    if check_data and old_data and new_data and old_data != new_data:
        reasons.append(f"the training data changed (content fingerprint {str(old_data)[:12]} -> {str(new_data)[:12]})")
    if reasons:
        raise DataError(
            f"cannot --resume the run in {output_dir} with other settings ({'; '.join(reasons)}): its "
            "checkpoints belong to the run as it started. Resume with the original options and data, "
            "or start again with --overwrite-output-dir (or another --output-dir)"
        )
