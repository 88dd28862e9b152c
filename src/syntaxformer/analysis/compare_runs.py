"""Significance of the difference between two trained systems, from their run folders: :func:`compare_runs`
(``syntaxformer significance``; the tests per kind of task: ``docs/analysis.md``)."""

from __future__ import annotations

import glob
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.errors import DataError, InputError
from syntaxformer.tasks.significance import mcnemar, paired_bootstrap, paired_prediction_tests, paired_t_test
from syntaxformer.training.run_data import run_references

__all__ = [
    "check_comparable",
    "compare_runs",
    "expand_run_dirs",
    "load_run_predictions",
    "pair_by_seed",
    "per_question_scores",
    "run_seed",
]


def load_run_predictions(run_dir: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(metrics.json, dev_predictions.json)`` of a run folder (DataError naming a missing file)."""
    folder = Path(run_dir)
    out = []
    for name in ("metrics.json", "dev_predictions.json"):
        path = folder / name
        if not path.is_file():
            raise DataError(f"{run_dir} is not a finished run of `syntaxformer train` (no {name})")
        out.append(_read_json(path))
    metrics, preds = out
    _check_run_files(folder, metrics, preds)
    return metrics, preds


def _check_run_files(folder: Path, metrics: Any, preds: Any) -> None:
    """The parts of ``metrics.json`` and ``dev_predictions.json`` the analyses read have the types ``train``
    writes (a damaged or hand-edited file is named, not met as a ``KeyError`` / ``TypeError`` later)."""

    def bad(name: str, what: str) -> DataError:
        return DataError(f"{folder / name} is not the file `syntaxformer train` writes: {what}")

    if not isinstance(metrics, dict):
        raise bad("metrics.json", f"a JSON {type(metrics).__name__}, not an object")
    for key in ("task", "main_metric"):
        if not isinstance(metrics.get(key), str):
            raise bad("metrics.json", f"{key!r} is {metrics.get(key)!r}, not a name")
    if not isinstance(metrics.get("dev"), dict):
        raise bad("metrics.json", "no 'dev' scores")
    score = metrics["dev"].get(metrics["main_metric"])
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not np.isfinite(score)):
        raise bad("metrics.json", f"the dev {metrics['main_metric']} is {score!r}, not a number")
    if not isinstance(preds, dict):
        raise bad("dev_predictions.json", f"a JSON {type(preds).__name__}, not an object")
    ids, values = preds.get("ids"), preds.get("predictions")
    if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values) or not ids:
        raise bad("dev_predictions.json", "'ids' and 'predictions' must be lists of the same, non-zero length")
    if any(not isinstance(i, (str, int)) or isinstance(i, bool) for i in ids):
        raise bad("dev_predictions.json", "an id is not a string or a number")
    labels = preds.get("labels")
    if labels is not None and (not isinstance(labels, list) or len(labels) != len(ids)):
        raise bad("dev_predictions.json", "'labels' must be a list with one label per id")
    for name, column in (("predictions", values), ("labels", labels or [])):
        # JSON values: exactly int or float is a number (a bool is not)
        kinds = {"number" if type(v) in (int, float) else "text" if isinstance(v, str) else "other" for v in column}
        infinite = name == "labels" and kinds == {"number"} and not all(np.isfinite(column))
        if "other" in kinds or len(kinds) > 1 or infinite:
            raise bad("dev_predictions.json", f"{name!r} must be all numbers or all texts")


def _task_identity(metrics: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two runs' scores comparable: the task, its headline metric, and the labels it predicts."""
    options = metrics.get("task_options")
    if not isinstance(options, dict):
        options = {}
    return (
        metrics["task"],
        metrics["main_metric"],
        options.get("problem_type"),
        json.dumps(options.get("labels"), sort_keys=True),
    )


def _describe(metrics: dict[str, Any]) -> str:
    task, metric, problem, labels = _task_identity(metrics)
    extra = ", ".join(x for x in (problem, None if labels == "null" else f"labels {labels}") if x)
    return f"{task} ({metric}{', ' + extra if extra else ''})"


def check_comparable(run_a: str | Path, run_b: str | Path) -> None:
    """Refuse to compare two runs whose scores are not about the same thing: another task (or another label set,
    a regression against a classification), or other dev examples (other ids, other gold labels, other data: the
    data fingerprint ``train`` records, or for runs without one the dev source and subsample): InputError naming
    both runs and what differs."""
    (ma, pa), (mb, pb) = load_run_predictions(run_a), load_run_predictions(run_b)
    if _task_identity(ma) != _task_identity(mb):
        raise InputError(
            f"{run_a} is a run of {_describe(ma)} but {run_b} of {_describe(mb)}: runs of different "
            "tasks cannot be compared"
        )
    differ = None
    if pa.get("ids") != pb.get("ids"):
        differ = f"other example ids ({len(pa['ids'])} vs {len(pb['ids'])} examples)"
    elif pa.get("labels") is not None and pb.get("labels") is not None and pa["labels"] != pb["labels"]:
        n = sum(x != y for x, y in zip(pa["labels"], pb["labels"]))
        differ = f"the same ids with other gold labels ({n} of {len(pa['labels'])} differ)"
    elif pa.get("data_fingerprint") and pb.get("data_fingerprint"):
        if pa["data_fingerprint"] != pb["data_fingerprint"]:
            differ = "other dev data (content fingerprints differ)"
    else:

        def source(m: dict[str, Any]) -> Any:
            data, sub = m.get("data"), m.get("subsample")
            data = data if isinstance(data, dict) else {}
            sub = sub if isinstance(sub, dict) else {}
            return data.get("dev"), sub.get("dev")

        if source(ma) != source(mb):
            differ = f"other dev data ({source(ma)[0]} vs {source(mb)[0]})"
    if differ:
        raise InputError(
            f"{run_a} and {run_b} were scored on different dev examples: {differ}; compare runs "
            "evaluated on the same dev file and subsample"
        )


def expand_run_dirs(patterns: Sequence[str | Path]) -> list[str]:
    """Run folders from paths and glob patterns (``runs/rte/sgnet/seed*``; a pattern's matches sorted, only
    folders kept; InputError for a pattern that matches none)."""
    out: list[str] = []
    for p in map(str, patterns):
        if glob.has_magic(p):
            found = sorted(m for m in glob.glob(p) if Path(m).is_dir())
            if not found:
                raise InputError(f"{p} matches no run folder")
            out += found
        else:
            out.append(p)
    return out


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{path} is not the JSON `syntaxformer train` writes: {e}") from None


def per_question_scores(run_dir: str | Path) -> dict[str, Any] | None:
    """Per-question scores of a SQuAD 2.0 or RACE run, from the files the task writes (``None`` for other runs):
    ``{"ids", "metric", "values": {metric: [per question, ×100]}, "correct": [bool], "lengths": [question words]}``;
    SQuAD: ``exact`` and ``f1`` at the headline threshold on the scored ("test") part of the dev set, ``correct`` =
    exact match; RACE: ``accuracy`` over all questions."""
    folder = Path(run_dir)
    rows: Any
    if (folder / "per_question.json").is_file():
        per_q = _read_json(folder / "per_question.json")
        rows = {q: r for q, r in per_q.items() if r.get("part", "test") == "test"}
        metric, correct = "f1", [bool(r["em_best"]) for r in rows.values()]
        values = {
            name: [100.0 * r[key] for r in rows.values()] for name, key in (("exact", "em_best"), ("f1", "f1_best"))
        }
    else:
        rows = _read_json(folder / "predictions.json") if (folder / "predictions.json").is_file() else None
        fields = {"correct", "question_words"}
        if (
            not isinstance(rows, dict)
            or not rows
            or not all(isinstance(r, dict) and fields <= set(r) for r in rows.values())
        ):
            return None
        metric, correct = "accuracy", [bool(r["correct"]) for r in rows.values()]
        values = {"accuracy": [100.0 * c for c in correct]}
    lengths = [r["question_words"] for r in rows.values()]
    return {"ids": list(rows), "metric": metric, "values": values, "correct": correct, "lengths": lengths}


def _per_question_tests(qa: dict[str, Any], qb: dict[str, Any], n_resamples: int, seed: int) -> dict[str, Any]:
    metric = qa["metric"]
    a, b = np.asarray(qa["values"][metric]), np.asarray(qb["values"][metric])
    boot = paired_bootstrap(
        lambda p, _y: float(np.mean(p)), a, b, np.zeros(len(a)), n_resamples=n_resamples, seed=seed, two_sided=True
    )
    return {"bootstrap": boot.to_dict(), "mcnemar": mcnemar(qa["correct"], qb["correct"]).to_dict()}


def run_seed(run_dir: str | Path) -> Any:
    """The training seed a run folder's ``run.json`` records, or ``None``."""
    try:
        return json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8"))["config"]["seed"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pair_by_seed(
    runs_a: Sequence[str], runs_b: Sequence[str], seeds_a: Sequence[Any], seeds_b: Sequence[Any]
) -> tuple[list[tuple[str, str]], str]:
    """The runs of systems A and B paired by their seeds (in A's order; when a run records no seed, in the order
    given), and a sentence saying how. InputError: unequally many runs; a run given twice for one system (it would
    count as two seeds); seeds that differ between the systems, or one seed twice."""
    if not runs_a or len(runs_a) != len(runs_b):
        raise InputError(f"give equally many runs of both systems (one per seed), got {len(runs_a)} and {len(runs_b)}")
    for side, runs in (("A", runs_a), ("B", runs_b)):
        real = [str(Path(r).resolve()) for r in runs]
        twice = next((r for r, key in zip(runs, real) if real.count(key) > 1), None)
        if twice is not None:
            raise InputError(f"system {side}: the run {twice} is given twice; each run counts once, as one seed")
    if None in seeds_a or None in seeds_b:
        return list(zip(runs_a, runs_b)), "runs paired in the order given (a run records no seed)"
    if sorted(seeds_a, key=str) != sorted(seeds_b, key=str) or len(set(seeds_a)) != len(seeds_a):
        raise InputError(
            f"the runs are paired by seed, but A has seeds {sorted(seeds_a, key=str)} and B "
            f"{sorted(seeds_b, key=str)}: give one run of each system per seed, the same seeds for both"
        )
    by_seed = dict(zip(seeds_b, runs_b))
    pairs = [(ra, by_seed[s]) for ra, s in zip(runs_a, seeds_a)]
    return pairs, f"runs paired by seed ({', '.join(str(s) for s in seeds_a)})"


def compare_runs(
    runs_a: Sequence[str | Path],
    runs_b: Sequence[str | Path],
    n_resamples: int = 1000,
    seed: int = 0,
    bleu_test: str = "bs",
) -> dict[str, Any]:
    """System B against system A on the same dev examples, the runs (folders or glob patterns, one per seed) paired by
    seed (:func:`pair_by_seed`; InputError for runs that cannot be paired or compared). ``n_resamples``: bootstrap
    resamples (BLEU: resamples or randomisation trials; 0 = sacreBLEU's default); ``seed``: the bootstrap's (BLEU: 0
    = sacreBLEU's default 12345); ``bleu_test``: ``"bs"`` or ``"ar"``. Returns ``{"task", "metric", "pairing", "a",
    "b" (scores), "seeds", "per_seed": [{"run_a", "run_b", "bootstrap"?, "mcnemar"?, "bleu"?}], "t_test"?}``."""
    dirs_a, dirs_b = expand_run_dirs(runs_a), expand_run_dirs(runs_b)
    seeds_a, seeds_b = ([load_run_predictions(r)[0].get("seed") for r in dirs] for dirs in (dirs_a, dirs_b))
    pairs, pairing = pair_by_seed(dirs_a, dirs_b, seeds_a, seeds_b)
    result: dict[str, Any] = {"per_seed": [], "a": [], "b": [], "seeds": [], "pairing": pairing}
    references = None
    for ra, rb in pairs:
        check_comparable(ra, rb)
        (ma, pa), (mb, pb) = load_run_predictions(ra), load_run_predictions(rb)
        metric = ma["main_metric"]
        result.update(task=ma["task"], metric=metric)
        result["a"].append(ma["dev"].get(metric))
        result["b"].append(mb["dev"].get(metric))
        result["seeds"].append(ma.get("seed"))
        qa, qb = per_question_scores(ra), per_question_scores(rb)
        if qa is not None and qb is not None:
            if qa["ids"] != qb["ids"]:
                raise InputError(f"{ra} and {rb} were scored on different questions")
            tests = _per_question_tests(qa, qb, n_resamples, seed)
        else:
            if metric == "bleu" and references is None:
                references = run_references(ra, pa.get("ids"), pa.get("split", "dev"))
            tests = paired_prediction_tests(
                pa, pb, metric, n_resamples, seed, references if metric == "bleu" else None, bleu_test
            )
        result["per_seed"].append({"run_a": str(ra), "run_b": str(rb), **tests})
    if len(result["a"]) >= 2 and None not in result["a"] + result["b"]:
        result["t_test"] = paired_t_test(result["a"], result["b"]).to_dict()
    return result
