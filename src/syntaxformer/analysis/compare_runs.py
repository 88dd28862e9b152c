"""Significance of the difference between two trained systems, from their run folders.

Each run folder written by :func:`syntaxformer.training.run.train` keeps its final dev predictions
(``dev_predictions.json``: ids, predictions, labels, in dataset order) and its scores (``metrics.json``). Given the
runs of system A and of system B (one per seed, matched in order), :func:`compare_runs` reports, for every seed, a
two-sided paired bootstrap over dev examples of the task's headline metric (its 95% interval of the difference)
and, for classification, the exact McNemar test on per-example correctness; with two or more seeds, also the paired
t-test over seeds of the headline scores. ``syntaxformer significance`` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from syntaxformer.errors import DataError, InputError

__all__ = ["compare_runs", "load_run_predictions", "paired_prediction_tests"]


def load_run_predictions(run_dir: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(metrics.json, dev_predictions.json)`` of a run folder.

    Raises:
        DataError: the folder is not a finished run (names the missing file).
    """
    folder = Path(run_dir)
    out = []
    for name in ("metrics.json", "dev_predictions.json"):
        path = folder / name
        if not path.is_file():
            raise DataError(f"{run_dir} is not a finished run of `syntaxformer train` (no {name})")
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError) as e:
            raise DataError(f"{path} is not the JSON `syntaxformer train` writes: {e}") from None
    return out[0], out[1]


def paired_prediction_tests(preds_a: dict[str, Any], preds_b: dict[str, Any], metric: str, n_resamples: int = 1000,
                            seed: int = 0) -> dict[str, Any]:
    """B against A on one pair of ``dev_predictions.json`` contents (same examples): the two-sided paired bootstrap
    of ``metric`` and, for integer labels, the exact McNemar test; ``{}`` when there are no labels or ``metric`` is
    not a per-example metric of :data:`~syntaxformer.tasks.metrics.METRICS`."""
    from syntaxformer.analysis.significance import mcnemar, paired_bootstrap
    from syntaxformer.tasks.metrics import METRICS

    labels = preds_a.get("labels")
    if labels is None or metric not in METRICS:
        return {}
    y = np.asarray(labels)
    a, b = np.asarray(preds_a["predictions"]), np.asarray(preds_b["predictions"])
    out = {"bootstrap": paired_bootstrap(METRICS[metric], a, b, y, n_resamples=n_resamples, seed=seed,
                                         two_sided=True).to_dict()}
    if np.issubdtype(y.dtype, np.integer):
        out["mcnemar"] = mcnemar(a == y, b == y).to_dict()
    return out


def compare_runs(runs_a: Sequence[str | Path], runs_b: Sequence[str | Path], n_resamples: int = 1000,
                 seed: int = 0) -> dict[str, Any]:
    """System B against system A on the same dev examples.

    Args:
        runs_a, runs_b: run folders of the two systems, one per seed, matched in order (equally many).
        n_resamples: bootstrap resamples.
        seed: bootstrap seed.

    Returns:
        ``{"task", "metric", "a": [scores], "b": [scores], "per_seed": [{"run_a", "run_b", "bootstrap",
        "mcnemar"?}], "t_test"?: ...}`` (test dicts of :class:`~syntaxformer.analysis.significance.TestResult`).

    Raises:
        InputError: unequal numbers of runs, runs of different tasks or dev examples.
    """
    from syntaxformer.analysis.significance import paired_t_test

    if not runs_a or len(runs_a) != len(runs_b):
        raise InputError(f"give equally many runs of both systems (one per seed), got {len(runs_a)} and "
                         f"{len(runs_b)}")
    result: dict[str, Any] = {"per_seed": [], "a": [], "b": []}
    for ra, rb in zip(runs_a, runs_b):
        (ma, pa), (mb, pb) = load_run_predictions(ra), load_run_predictions(rb)
        if ma["task"] != mb["task"]:
            raise InputError(f"{ra} is a {ma['task']} run but {rb} a {mb['task']} run")
        if pa.get("ids") != pb.get("ids"):
            raise InputError(f"{ra} and {rb} were scored on different dev examples (subsample or data differ)")
        metric = ma["main_metric"]
        result.update(task=ma["task"], metric=metric)
        result["a"].append(ma["dev"].get(metric))
        result["b"].append(mb["dev"].get(metric))
        result["per_seed"].append({"run_a": str(ra), "run_b": str(rb),
                                   **paired_prediction_tests(pa, pb, metric, n_resamples, seed)})
    if len(result["a"]) >= 2 and None not in result["a"] + result["b"]:
        result["t_test"] = paired_t_test(result["a"], result["b"]).to_dict()
    return result
