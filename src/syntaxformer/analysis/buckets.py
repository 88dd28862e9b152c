"""Length buckets (SG-Net TPAMI §7.1, Fig. 4 and 5): a run's dev scores grouped by input length in words
(``syntaxformer analyze --by length``; what is counted and scored per task: ``docs/analysis.md``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.tasks.metrics import METRICS, corpus_bleu

__all__ = [
    "BUCKET_MODES",
    "LENGTH_BUCKETS",
    "assign_buckets",
    "format_length_buckets",
    "length_bucket",
    "length_buckets",
    "make_buckets",
    "run_lengths",
]

#: Question-length buckets in words: ``(low, high)`` inclusive, ``high = None`` = no upper bound.
LENGTH_BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 5), (6, 10), (11, 15), (16, 20), (21, None))

#: How :func:`make_buckets` splits lengths: ``count`` = about equally many examples per bucket, ``range`` = equal
#: ranges of length (the two views of SG-Net Fig. 4).
BUCKET_MODES: tuple[str, ...] = ("count", "range")


def length_bucket(n_words: int, buckets: Sequence[tuple[int, int | None]] = LENGTH_BUCKETS) -> str:
    """``"1-5"``, ``"6-10"`` ... ``">20"``: the bucket of a question of ``n_words`` words."""
    for lo, hi in buckets:
        if n_words >= lo and (hi is None or n_words <= hi):
            return f">{lo - 1}" if hi is None else f"{lo}-{hi}"
    return f"<{buckets[0][0]}"


def make_buckets(
    lengths: Sequence[int], n_buckets: int = 5, mode: str = "count", edges: Sequence[int] | None = None
) -> list[tuple[int, int]]:
    """Inclusive ``(low, high)`` length ranges covering ``min(lengths)..max(lengths)``, none empty: at most
    ``n_buckets``, bounded at the quantiles (``"count"``; equal lengths stay together) or of equal widths
    (``"range"``), or at explicit upper ``edges`` (``[10, 20]`` -> ``min..10``, ``11..20``, ``21..max``).
    ConfigError: an unknown mode, fewer than one bucket or unsorted edges; InputError: no lengths."""
    x = np.asarray(lengths, dtype=int)
    if x.size == 0:
        raise InputError("no lengths to bucket")
    if mode not in BUCKET_MODES:
        raise ConfigError(f"unknown bucket mode {mode!r}; use one of {', '.join(BUCKET_MODES)}")
    if n_buckets < 1:
        raise ConfigError(f"need at least one bucket, got {n_buckets}")
    lo, hi = int(x.min()), int(x.max())
    if edges is not None:
        if list(edges) != sorted(set(edges)):
            raise ConfigError(f"bucket edges must be increasing, got {list(edges)}")
        uppers = [int(e) for e in edges if lo <= e < hi]
    elif mode == "count":
        uppers = [int(q) for q in np.quantile(x, np.arange(1, n_buckets) / n_buckets, method="lower")]
    else:
        uppers = [lo + math.floor((hi - lo + 1) * i / n_buckets) - 1 for i in range(1, n_buckets)]
    out: list[tuple[int, int]] = []
    start = lo
    for upper in sorted(set(uppers)) + [hi]:
        if upper >= start and np.any((x >= start) & (x <= upper)):
            out.append((start, upper))
            start = upper + 1
    return out


def assign_buckets(lengths: Sequence[int], buckets: Sequence[tuple[int, int]]) -> np.ndarray:
    """The bucket index of each length (``-1`` when none holds it)."""
    x = np.asarray(lengths, dtype=int)
    out = np.full(x.shape, -1, dtype=int)
    for i, (lo, hi) in enumerate(buckets):
        out[(x >= lo) & (x <= hi)] = i
    return out


def run_lengths(run_dir: str | Path) -> dict[str, Any]:
    """Per-example lengths (words) and what is needed to score any subset of a run's dev examples (DataError: not
    a finished run, or it keeps nothing to score examples with): ``{"task", "unit", "ids", "lengths", "kind"}``
    plus, by ``kind``: ``"per_example"`` -> ``"values"`` (``{metric: per-question score ×100}``, averaged per
    bucket; SQuAD / RACE); ``"bleu"`` -> ``"predictions"``, ``"references"``; ``"metric"`` -> ``"metric"``,
    ``"predictions"``, ``"labels"``."""
    from syntaxformer.analysis.compare_runs import load_run_predictions, per_question_scores
    from syntaxformer.training.run_data import load_dev_data, run_references

    folder = Path(run_dir)
    metrics, preds = load_run_predictions(folder)
    task = metrics["task"]
    per_q = per_question_scores(folder)  # SQuAD 2.0 / RACE
    if per_q is not None:
        kept = {k: per_q[k] for k in ("ids", "lengths", "values")}
        return {"task": task, "unit": "question words", "kind": "per_example", **kept}
    ids = list(preds["ids"])
    if metrics.get("main_metric") == "bleu":
        split = preds.get("split", "dev")
        _, data = load_dev_data(folder, split)
        lengths = [len(s.split()) for s in data.sources]
        references = run_references(folder, ids, split)
        return {"task": task, "unit": "source words", "ids": ids, "kind": "bleu", "lengths": lengths,
                "predictions": list(preds["predictions"]), "references": references}  # fmt: skip
    metric = metrics.get("main_metric")
    if preds.get("labels") is None or metric not in METRICS:
        raise DataError(
            f"{run_dir} keeps no per-example labels for its {metric} (dev_predictions.json), so its "
            "examples cannot be scored by length"
        )
    _, data = load_dev_data(folder, preds.get("split", "dev"))
    examples = getattr(data, "examples", None)
    if examples is None or [str(e.guid) for e in examples] != [str(i) for i in ids]:
        raise DataError(
            f"the dev data named in {folder}/run.json is not the data its dev_predictions.json was made "
            "on (other examples)"
        )
    lengths = [len(e.text_a.split()) + (len(e.text_b.split()) if e.text_b else 0) for e in examples]
    pair = any(e.text_b for e in examples)
    return {
        "task": task,
        "unit": "words of both texts" if pair else "words",
        "ids": ids,
        "kind": "metric",
        "lengths": lengths,
        "metric": metric,
        "predictions": preds["predictions"],
        "labels": preds["labels"],
    }


def _score(info: dict[str, Any], idx: np.ndarray) -> dict[str, float]:
    if info["kind"] == "per_example":
        return {k: float(np.mean(np.asarray(v)[idx])) for k, v in info["values"].items()}
    if info["kind"] == "bleu":
        return {
            "bleu": corpus_bleu([info["predictions"][i] for i in idx], [info["references"][i] for i in idx])["bleu"]
        }
    return {
        info["metric"]: float(
            METRICS[info["metric"]](np.asarray(info["predictions"])[idx], np.asarray(info["labels"])[idx])
        )
    }


def length_buckets(
    run_dirs: Sequence[str | Path], n_buckets: int = 5, mode: str = "count", edges: Sequence[int] | None = None
) -> dict[str, Any]:
    """Scores per length bucket of runs of one task on the same dev examples (else InputError), side by side; the
    buckets (:func:`make_buckets`) come from the first run's lengths. Returns ``{"task", "unit", "mode", "runs",
    "buckets": [{"low", "high", "label", "n", "scores": [{metric: value} per run]}]}``."""
    from syntaxformer.analysis.compare_runs import check_comparable

    if not run_dirs:
        raise InputError("give at least one run folder")
    for r in run_dirs[1:]:
        check_comparable(run_dirs[0], r)
    infos = [run_lengths(r) for r in run_dirs]
    first = infos[0]
    for r, info in zip(run_dirs[1:], infos[1:]):
        if info["task"] != first["task"] or info["ids"] != first["ids"]:
            raise InputError(f"{r} was not scored on the dev examples of {run_dirs[0]} (task or examples differ)")
    buckets = make_buckets(first["lengths"], n_buckets, mode, edges)
    which = assign_buckets(first["lengths"], buckets)
    rows = []
    for b, (lo, hi) in enumerate(buckets):
        idx = np.flatnonzero(which == b)
        scores = [_score(info, idx) for info in infos]
        rows.append(
            {"low": lo, "high": hi, "label": f"{lo}-{hi}" if lo != hi else str(lo), "n": idx.size, "scores": scores}
        )
    return {
        "task": first["task"],
        "unit": first["unit"],
        "mode": "edges" if edges is not None else mode,
        "runs": [str(r) for r in run_dirs],
        "buckets": rows,
    }


def format_length_buckets(result: dict[str, Any], names: Sequence[str] | None = None) -> str:
    """The text table of a :func:`length_buckets` result: one row per bucket, one column per run and metric,
    and B − A of the headline metric with two runs."""
    runs = result["runs"]
    names = list(names or [f"run{i + 1}" for i in range(len(runs))])
    metrics = list(result["buckets"][0]["scores"][0]) if result["buckets"] else []
    labels = [n if len(metrics) == 1 else f"{n} {m}" for n in names for m in metrics]
    widths = [max(10, len(x)) for x in labels]
    head = [f"{'length':>9}", f"{'n':>6}"] + [x.rjust(w) for x, w in zip(labels, widths)]
    if len(runs) == 2:
        head.append(f"{'B − A':>9}")
    lines = [f"{result['task']}: dev {', '.join(metrics)} by length in {result['unit']} (buckets by {result['mode']})"]
    lines += [f"  {n}: {r}" for n, r in zip(names, runs)]
    lines.append(" ".join(head))
    for row in result["buckets"]:
        values = [s[m] for s in row["scores"] for m in metrics]
        cells = [f"{row['label']:>9}", f"{row['n']:>6}"] + [f"{v:>{w}.4f}" for v, w in zip(values, widths)]
        if len(runs) == 2:
            cells.append(f"{row['scores'][1][metrics[0]] - row['scores'][0][metrics[0]]:>+9.4f}")
        lines.append(" ".join(cells))
    return "\n".join(lines)
