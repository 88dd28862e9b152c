"""What every figure of run folders shares: the runs (:class:`RunInfo`, :func:`find_runs`; a variant is named by
its seed folder's parent, else the folder), their labels (:func:`system_groups`), colours and a matplotlib
``Figure``."""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syntaxformer.errors import DataError, InputError, MissingDependencyError

__all__ = ["RunInfo", "find_runs", "new_figure", "run_info", "system_colors", "system_groups"]


def new_figure(width: float, height: float) -> Any:
    """A matplotlib ``Figure`` (object API, constrained layout) of ``width`` x ``height`` inches. Raises
    MissingDependencyError: matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise MissingDependencyError(
            "figures need matplotlib: pip install matplotlib (or pip install 'syntaxformer[analysis]')"
        ) from e
    return Figure(figsize=(width, height), layout="constrained")


@dataclass
class RunInfo:
    """What a finished run folder records, as the figures use it.

    Attributes:
        task: task name (``metrics.json`` ``task``); ``task_title`` its usual name.
        variant: the system's name (the seed folder's parent folder, else the folder's name).
        model_type: the model's kind as ``metrics.json`` names it (``SG-Net``, ``Syntax-BERT``, ``baseline`` ...).
        metric: the headline metric; ``score`` its dev value.
        train_size: training examples used; ``parser_noise``: the fraction of heads re-attached at random.
        dev: every dev score.
    """

    path: str
    task: str
    task_title: str
    variant: str
    model_type: str
    seed: int | None
    metric: str
    score: float | None
    train_size: int | None
    parser_noise: float
    dev: dict[str, Any] = field(default_factory=dict)


def run_info(folder: Path) -> RunInfo:
    """What the run folder ``folder`` records (its ``metrics.json``). Raises DataError: a ``metrics.json`` that is not
    the file ``syntaxformer train`` writes."""
    try:
        m = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
        metric = m["main_metric"]
        task = m["task"]
    except (ValueError, UnicodeDecodeError, KeyError) as e:
        raise DataError(f"{folder}/metrics.json is not the file `syntaxformer train` writes ({e})") from None
    variant = folder.parent.name if folder.name.startswith("seed") and folder.parent.name else folder.name
    score = (m.get("dev") or {}).get(metric)
    return RunInfo(
        path=str(folder),
        task=task,
        task_title=m.get("task_title") or task,
        variant=variant,
        model_type=str(m.get("model_type", "")),
        seed=m.get("seed"),
        metric=metric,
        score=None if score is None else float(score),
        train_size=(m.get("sizes") or {}).get("train"),
        parser_noise=float(m.get("parser_noise") or 0.0),
        dev=dict(m.get("dev") or {}),
    )


def find_runs(paths: Sequence[str | Path]) -> list[RunInfo]:
    """The finished runs under ``paths``: run folders (with ``metrics.json``), glob patterns, or folders searched
    recursively for run folders; in path order, each once. Raises InputError: a path that holds no finished run."""
    out: dict[str, RunInfo] = {}
    for p in map(str, paths):
        matches = sorted(glob.glob(p)) if glob.has_magic(p) else [p]
        found = []
        for m in map(Path, matches):
            if (m / "metrics.json").is_file():
                found.append(m)
            elif m.is_dir():
                found += sorted(f.parent for f in m.rglob("metrics.json"))
        if not found:
            raise InputError(f"{p} holds no finished run of `syntaxformer train` (no metrics.json)")
        for f in found:
            out.setdefault(str(f), run_info(f))
    return list(out.values())


def system_groups(runs: Sequence[RunInfo]) -> dict[str, dict[str, list[RunInfo]]]:
    """task -> label -> seed runs; the label adds train size / parser noise where runs of one variant name differ in
    them (a sweep's folder names such as ``sgnet_default_noise1`` already tell those runs apart)."""
    out: dict[str, dict[str, list[RunInfo]]] = {}
    for task in dict.fromkeys(r.task for r in runs):
        mine = [r for r in runs if r.task == task]
        variants = len({r.variant for r in mine})
        sizes = len({(r.variant, r.train_size) for r in mine}) > variants
        noises = len({(r.variant, r.parser_noise) for r in mine}) > variants
        for r in mine:
            label = (
                r.variant + (f" n={r.train_size}" if sizes else "") + (f" noise={r.parser_noise:g}" if noises else "")
            )
            out.setdefault(task, {}).setdefault(label, []).append(r)
    return out


def system_colors(names: Any) -> dict[str, str]:
    """One colour per name (first-seen order), the same in every panel."""
    return {name: f"C{i % 10}" for i, name in enumerate(dict.fromkeys(names))}
