"""Minimal-pair suites (BLiMP or any folder in its format) scored with an acceptability classifier
(``docs/minimal_pairs.md``): :func:`evaluate_suite` (``syntaxformer evaluate RUN --suite``) and
:func:`compare_minimal_pairs` (``syntaxformer significance --suite``)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.defaults import shared_data_dir
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.tasks.significance import mcnemar, seed_comparison
from syntaxformer.utils import atomic_write, json_lines, write_json
from syntaxformer.utils import progress as progress_bar

__all__ = [
    "COMPACT_FILE",
    "LEVELS",
    "SUITES",
    "MinimalPair",
    "acceptable_label",
    "compact_records",
    "compare_minimal_pairs",
    "evaluate_suite",
    "expand_compact_records",
    "holm",
    "minimal_pair_report",
    "paired_suite_records",
    "pairs_fingerprint",
    "paradigm_table",
    "read_minimal_pairs",
    "read_suite_records",
    "score_minimal_pairs",
    "suite_folder",
    "suite_records_of",
    "wilson_interval",
    "write_suite_records",
]

logger = logging.getLogger(__name__)

#: Separators unified to "_" in field names: BLiMP spells one paradigm's field "syntax/semantics"
#: (principle_A_case_2) and every other syntax-semantics paradigm "syntax_semantics".
_FIELD_SPELLING = re.compile(r"[/\s-]+")

#: Grouping levels of a report, coarse to fine (record keys).
LEVELS: tuple[str, ...] = ("field", "phenomenon", "paradigm")


@dataclass(frozen=True)
class MinimalPair:
    """One minimal pair: an acceptable and an unacceptable sentence that differ in one phenomenon. Attributes: paradigm:
    BLiMP's ``UID``, else the file's name; pair_id: ``pairID``, else the line number; field: ``syntax`` / ``morphology``
    / ``syntax_semantics`` / ``semantics`` (``"unspecified"`` if absent); phenomenon: BLiMP's ``linguistics_term``, else
    the paradigm."""

    paradigm: str
    pair_id: str
    good: str
    bad: str
    field: str
    phenomenon: str


def read_minimal_pairs(
    path: str | os.PathLike, paradigms: Sequence[str] | None = None, max_pairs: int | None = None
) -> list[MinimalPair]:
    """Read a BLiMP-format folder (every ``*.jsonl`` in it, in name order) or one such file, keeping only ``paradigms``
    (each must exist) and the first ``max_pairs`` pairs of each paradigm. Raises DataError: no such path or no
    ``.jsonl`` file; a bad line, sentence or label, or a pair seen twice (names the file and line). ConfigError: a
    paradigm asked for that the files do not hold."""
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.suffix == ".jsonl" and p.is_file())
        if not files:
            raise DataError(
                f"{root}: no .jsonl file of minimal pairs (BLiMP format: one JSON object per line with "
                f"'sentence_good' and 'sentence_bad')"
            )
    elif root.is_file():
        files = [root]
    else:
        raise DataError(f"{root}: no such file or folder of minimal pairs")
    pairs: list[MinimalPair] = []
    seen: dict[tuple[str, str], str] = {}
    all_paradigms: set[str] = set()
    per_paradigm: dict[str, int] = {}
    for file in files:
        try:
            with open(file, encoding="utf-8-sig") as f:
                lines = f.read().split("\n")
        except UnicodeDecodeError as e:
            raise DataError(f"{file}: not UTF-8 text ({e.reason} at byte {e.start})") from e
        for line_no, obj in json_lines(
            lines, str(file), "one JSON object per line with 'sentence_good' and 'sentence_bad'"
        ):
            where = f"{file}:{line_no}"
            texts = []
            for key in ("sentence_good", "sentence_bad"):
                value = obj.get(key)
                if not isinstance(value, str) or not value.strip():
                    raise DataError(f"{where}: {key!r} must be a non-empty text, got {value!r}")
                texts.append(value.strip())
            paradigm = _label(obj, "UID", file.stem, where)
            all_paradigms.add(paradigm)
            if paradigms is not None and paradigm not in paradigms:
                continue
            pair_id = _label(obj, "pairID", str(line_no), where)
            pair_key = (paradigm, pair_id)
            if pair_key in seen:
                raise DataError(
                    f"{where}: pair {pair_id!r} of paradigm {paradigm!r} was already read at {seen[pair_key]}"
                )
            seen[pair_key] = where
            if max_pairs is not None and per_paradigm.get(paradigm, 0) >= max_pairs:
                continue
            per_paradigm[paradigm] = per_paradigm.get(paradigm, 0) + 1
            field = _FIELD_SPELLING.sub("_", _label(obj, "field", "unspecified", where))
            pairs.append(
                MinimalPair(
                    paradigm, pair_id, texts[0], texts[1], field, _label(obj, "linguistics_term", paradigm, where)
                )
            )
    if paradigms is not None:
        missing = sorted(set(paradigms) - set(per_paradigm))
        if missing:
            raise ConfigError(
                f"{root}: no pairs of paradigm(s) {missing}; the files hold {len(all_paradigms)} "
                f"paradigms: {', '.join(sorted(all_paradigms))}"
            )
    if not pairs:
        raise DataError(f"{root}: no minimal pairs read")
    return pairs


def _label(obj: Mapping[str, Any], key: str, default: str, where: str) -> str:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise DataError(f"{where}: {key!r} must be a non-empty text or number, got {value!r}")
    return str(value).strip()


def acceptable_label(label_names: Sequence[str], task_name: str | None, given: str | None = None) -> str:
    """The class name that means *acceptable*: ``given`` (a class of the model), else ``"acceptable"``, else CoLA's
    ``"1"`` for a ``cola`` run. ConfigError: ``given`` is not a class, or nothing says which class."""
    names = list(label_names)
    if given is not None:
        if given not in names:
            raise ConfigError(f"acceptable label {given!r} is not a class of the model; its classes are {names}")
        return given
    if "acceptable" in names:
        return "acceptable"
    if task_name == "cola" and "1" in names:
        return "1"
    raise ConfigError(
        f"which class means 'acceptable'? The model's classes are {names} (task {task_name!r}); "
        "name it with --acceptable-label (acceptable_label=...)"
    )


def score_minimal_pairs(
    predictor: Any,
    pairs: Sequence[MinimalPair],
    acceptable: str | None = None,
    batch_size: int = 64,
    chunk_size: int = 2048,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """One record per pair (its keys: ``docs/minimal_pairs.md``); each distinct sentence is parsed and scored once, in
    chunks of ``chunk_size``. Raises ConfigError: the run is not a sequence classifier, or its acceptable class is
    unknown."""
    if predictor.head != "sequence_classification" or len(predictor.label_names) < 2:
        raise ConfigError(
            f"a minimal-pair suite needs a sequence classifier of acceptability (e.g. a CoLA run); "
            f"this model's head is {predictor.head!r} with classes {predictor.label_names}"
        )
    task_name = getattr(predictor.task, "name", None)
    label = acceptable_label(predictor.label_names, task_name, acceptable)
    texts = sorted({t for p in pairs for t in (p.good, p.bad)})
    prob: dict[str, float] = {}
    disable = None if progress is None else not progress
    with progress_bar(total=len(texts), desc="minimal pairs", disable=disable, unit="sentence") as bar:
        for start in range(0, len(texts), chunk_size):
            chunk = texts[start : start + chunk_size]
            for text, record in zip(chunk, predictor.predict(chunk, batch_size=batch_size)):
                prob[text] = float(record["scores"][label])
            bar.update(len(chunk))
    return [
        {
            "paradigm": p.paradigm,
            "pair_id": p.pair_id,
            "field": p.field,
            "phenomenon": p.phenomenon,
            "good": p.good,
            "bad": p.bad,
            "p_good": prob[p.good],
            "p_bad": prob[p.bad],
            "correct": prob[p.good] > prob[p.bad],
        }
        for p in pairs
    ]


def wilson_interval(correct: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good coverage near 0 and 1, unlike the normal one), as
    SciPy's ``binomtest(correct, n).proportion_ci(method="wilson")``; ``(nan, nan)`` for no pairs."""
    if n == 0:
        return (math.nan, math.nan)
    from scipy.stats import binomtest  # imported when an interval is computed, as tasks.significance does

    ci = binomtest(correct, n).proportion_ci(confidence_level=confidence, method="wilson")
    return (float(ci.low), float(ci.high))


def minimal_pair_report(records: Sequence[Mapping[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """Accuracy with its Wilson interval over all pairs and per field, phenomenon and paradigm: ``{"overall",
    "field": {name: {"accuracy", "ci95", "n", "correct"(, "field")}}, "phenomenon", "paradigm", "chance": 0.5}``, and
    ``"ties"`` and ``"median_abs_difference"`` where the records keep the probabilities."""
    if not records:
        raise InputError("no minimal-pair records to report on")

    def entry(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
        k = sum(bool(r["correct"]) for r in rows)
        lo, hi = wilson_interval(k, len(rows), confidence)
        return {"accuracy": k / len(rows), "ci95": [lo, hi], "n": len(rows), "correct": k}

    report: dict[str, Any] = {"overall": entry(list(records)), "confidence": confidence, "chance": 0.5}
    if all("p_good" in r and "p_bad" in r for r in records):  # compact (archived) records keep no probabilities
        gaps = np.abs([float(r["p_good"]) - float(r["p_bad"]) for r in records])
        report["ties"] = int(np.sum(gaps == 0))
        report["median_abs_difference"] = float(np.median(gaps))
    for level in LEVELS:
        groups: dict[str, list[Mapping[str, Any]]] = {}
        for r in records:
            groups.setdefault(str(r[level]), []).append(r)
        report[level] = {}
        for name in sorted(groups):
            report[level][name] = entry(groups[name])
            if level != "field":
                report[level][name]["field"] = "/".join(sorted({str(r["field"]) for r in groups[name]}))
    return report


def paradigm_table(report: Mapping[str, Any]) -> str:
    """A text table of a :func:`minimal_pair_report`: one line per paradigm, the overall line and a note."""
    rows = [("paradigm", "field", "accuracy", "95% interval", "pairs")]
    for name, e in report["paradigm"].items():
        rows.append((name, e["field"], f"{e['accuracy']:.3f}", f"{e['ci95'][0]:.3f}-{e['ci95'][1]:.3f}", str(e["n"])))
    e = report["overall"]
    rows.append(("all", "", f"{e['accuracy']:.3f}", f"{e['ci95'][0]:.3f}-{e['ci95'][1]:.3f}", str(e["n"])))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    note = f"chance is {report.get('chance', 0.5)} (a pair is right when p_good > p_bad"
    if "ties" in report:
        note += f"; ties, counted wrong: {report['ties']}"
        note += f"); median |p_good - p_bad| = {report['median_abs_difference']:.4f}"
    else:
        note += ")"
    return "\n".join([*lines, note])


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (controls the family-wise error rate), in input order."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def _correct_matrix(runs: Sequence[Sequence[Mapping[str, Any]]], side: str) -> tuple[np.ndarray, list[tuple]]:
    if not runs:
        raise InputError(f"no runs of system {side} to compare")
    keys = [(str(r["paradigm"]), str(r["pair_id"])) for r in runs[0]]
    for i, run in enumerate(runs[1:], 2):
        if [(str(r["paradigm"]), str(r["pair_id"])) for r in run] != keys:
            raise InputError(
                f"system {side}: run {i} scored other minimal pairs (or another order) than run 1; "
                "compare runs scored on the same suite"
            )
    for run in runs:
        for r in run:
            if not isinstance(r["correct"], (bool, np.bool_)):
                raise InputError(
                    f"system {side}: pair {r['pair_id']!r} of {r['paradigm']!r} has correct = {r['correct']!r}; "
                    "it must be true or false"
                )
    return np.array([[bool(r["correct"]) for r in run] for run in runs], dtype=float), keys


def compare_minimal_pairs(
    runs_a: Sequence[Sequence[Mapping[str, Any]]],
    runs_b: Sequence[Sequence[Mapping[str, Any]]],
    level: str = "field",
    resamples: int = 10000,
    seed: int = 0,
    names: tuple[str, str] = ("A", "B"),
) -> dict[str, Any]:
    """Paired comparison of two systems on one suite: accuracy of B − A per group of ``level`` (the tests:
    ``docs/minimal_pairs.md``). ``runs_a[i]`` and ``runs_b[i]`` are the records of seed ``i`` of each system (same
    pairs, same order). Per group: ``difference``; with two or more seeds ``seed_level``
    (:func:`~syntaxformer.tasks.significance.seed_comparison`) and ``t_test``; with one seed ``bootstrap`` over pairs
    (p floored at ``1 / resamples``) and ``mcnemar``; ``p_holm``. Raises InputError: different numbers of runs, or
    runs scored on different pairs. ConfigError: an unknown level."""
    if level not in ("overall", *LEVELS):
        raise ConfigError(f"level must be one of {('overall', *LEVELS)}, got {level!r}")
    if len(runs_a) != len(runs_b):
        raise InputError(
            f"{names[0]} has {len(runs_a)} run(s) and {names[1]} {len(runs_b)}: pair them by seed, one "
            "run of each per seed"
        )
    a, keys_a = _correct_matrix(runs_a, names[0])
    b, keys_b = _correct_matrix(runs_b, names[1])
    if keys_a != keys_b:
        raise InputError(
            f"{names[0]} and {names[1]} were scored on different minimal pairs ({len(keys_a)} and "
            f"{len(keys_b)} pairs, or another order); score both on the same suite"
        )
    groups: dict[str, list[int]] = {}
    for j, r in enumerate(runs_a[0]):
        groups.setdefault("all" if level == "overall" else str(r[level]), []).append(j)
    rng = np.random.default_rng(seed)
    result: dict[str, Any] = {"level": level, "seeds": len(runs_a), "resamples": resamples, "groups": {}}
    for name in sorted(groups):
        cols = np.asarray(groups[name])
        da, db = a[:, cols], b[:, cols]
        entry: dict[str, Any] = {
            "n": len(cols),
            "a": float(da.mean()),
            "b": float(db.mean()),
            "difference": float(db.mean() - da.mean()),
        }
        if len(runs_a) >= 2:
            seed_level = seed_comparison(da.mean(axis=1).tolist(), db.mean(axis=1).tolist())
            entry["seed_level"] = seed_level
            entry["t_test"] = {"p_value": seed_level["t_p"]}
        else:
            entry["bootstrap"] = _pair_bootstrap(db[0] - da[0], resamples, rng)
            m = mcnemar(da[0].astype(bool).tolist(), db[0].astype(bool).tolist())
            entry["mcnemar"] = {"p_value": m.p_value}
        result["groups"][name] = entry
    names_sorted = sorted(result["groups"])
    key = "t_test" if len(runs_a) >= 2 else "bootstrap"
    for name, p in zip(names_sorted, holm([result["groups"][n][key]["p_value"] for n in names_sorted])):
        result["groups"][name]["p_holm"] = p
    return result


def _pair_bootstrap(d: np.ndarray, resamples: int, rng: np.random.Generator, block: int = 256) -> dict[str, Any]:
    """Bootstrap of ``mean(d)`` for the per-pair differences ``d`` [pairs] of one pair of runs."""
    n = len(d)
    stats = np.empty(resamples)
    for start in range(0, resamples, block):
        r = min(block, resamples - start)
        pair_w = rng.multinomial(n, np.full(n, 1.0 / n), size=r).astype(np.float32)  # [r, n] counts
        stats[start : start + r] = pair_w @ d.astype(np.float32) / n
    lo, hi = np.quantile(stats, [0.025, 0.975])
    p = 2 * min(float((stats <= 0).mean()), float((stats >= 0).mean()))
    return {"ci95": [float(lo), float(hi)], "p_value": float(min(1.0, max(p, 1.0 / resamples)))}


def write_suite_records(records: Iterable[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Write per-pair records as JSON lines, atomically."""
    with atomic_write(path) as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def read_suite_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read per-pair records written by :func:`write_suite_records`. Raises DataError: no such file, or a line without
    the record keys (names the line)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no minimal-pair records (run `syntaxformer evaluate RUN --suite ...` first)")
    records = []
    with open(p, encoding="utf-8") as f:
        for line_no, obj in json_lines(f, str(p)):
            missing = {"paradigm", "pair_id", "field", "phenomenon", "correct"} - set(obj)
            if missing:
                raise DataError(f"{p}:{line_no}: not a minimal-pair record (missing {sorted(missing)})")
            if not isinstance(obj["correct"], bool):  # "false" (a string) would count as correct
                raise DataError(f"{p}:{line_no}: 'correct' must be true or false, got {obj['correct']!r}")
            records.append(obj)
    if not records:
        raise DataError(f"{p}: no records")
    return records


#: Suites known by name: the folder under the shared data folder (``$SYNTAXFORMER_DATA``).
SUITES: dict[str, str] = {"blimp": "blimp"}


def suite_folder(suite: str, data: str | os.PathLike | None = None) -> tuple[str, Path]:
    """``(name, folder)`` of a suite: ``data`` if given (named by ``suite``), a known suite's folder in the shared data
    folder, or a BLiMP-format folder or file (named by its stem). DataError: a known suite's folder is absent, or an
    unknown name that is not a path."""
    if data is not None:
        return _suite_name(suite), Path(data)
    if suite in SUITES:
        shared = shared_data_dir()
        if shared is None or not (shared / SUITES[suite]).is_dir():
            raise DataError(
                f"suite {suite!r}: its data folder {SUITES[suite]!r} is not in the shared data folder "
                f"({shared or 'none found: set SYNTAXFORMER_DATA'}); give the folder with --suite-data DIR"
            )
        return suite, shared / SUITES[suite]
    path = Path(suite)
    if path.exists():
        return _suite_name(path.stem or path.resolve().name), path
    raise DataError(f"suite {suite!r}: not a known suite ({', '.join(SUITES)}) nor a BLiMP-format folder or file")


def _suite_name(name: str) -> str:
    """``name`` if it can name a folder under ``RUN/suites/`` (a name, not a path: no separator, not ``.``/``..``)."""
    if not re.fullmatch(r"[\w][\w.+-]*", name or "") or name in (".", ".."):
        raise ConfigError(
            f"suite name {name!r}: a suite name is a name (letters, digits, '_', '-', '.'), not a path; its results "
            "go to RUN/suites/NAME/"
        )
    return name


def pairs_fingerprint(pairs: Iterable[MinimalPair]) -> str:
    """A SHA-256 of the pairs a suite was scored on (ids, fields and both sentences, in order): two results are
    comparable pair by pair only when their fingerprints agree, whatever their suites' folders are called."""
    digest = hashlib.sha256()
    for p in pairs:
        digest.update(json.dumps([p.paradigm, p.pair_id, p.field, p.phenomenon, p.good, p.bad]).encode() + b"\n")
    return digest.hexdigest()


def evaluate_suite(
    run_dir: str | os.PathLike,
    suite: str = "blimp",
    data: str | os.PathLike | None = None,
    output_dir: str | os.PathLike | None = None,
    acceptable: str | None = None,
    paradigms: Sequence[str] | None = None,
    max_pairs: int | None = None,
    batch_size: int = 64,
    overwrite: bool = False,
    predictor: Any = None,
) -> dict[str, Any]:
    """Score a trained acceptability run on a minimal-pair suite; write ``pairs.jsonl`` and ``report.json`` to
    ``<output_dir or run_dir>/suites/<name>/``. Arguments: suite, data: as :func:`suite_folder`; acceptable: as
    :func:`acceptable_label`; paradigms, max_pairs: as :func:`read_minimal_pairs`; overwrite: replace an earlier result
    of the same suite (else InputError); predictor: a ready :class:`~syntaxformer.inference.Predictor` of ``run_dir``
    (default: built from it). Returns what ``report.json`` holds (the report, ``"suite"``, ``"run"``,
    ``"acceptable"`` ...) and ``"records"``: the ``pairs.jsonl`` path."""
    from syntaxformer.inference import Predictor
    from syntaxformer.training.lock import RunLock

    name, folder = suite_folder(suite, data)
    out = Path(output_dir or run_dir) / "suites" / name
    if not overwrite and ((out / "pairs.jsonl").exists() or (out / "report.json").exists()):
        raise InputError(f"{out} already holds a {name!r} result; pass --overwrite (overwrite=True) to replace it")
    # the folder that receives suites/<name>/ is locked while the suite is scored and written (one writer); a run
    # folder that does not exist is not created here: loading its model names the problem
    writes = Path(output_dir or run_dir)
    with RunLock(writes) if output_dir or writes.is_dir() else contextlib.nullcontext():
        pairs = read_minimal_pairs(folder, paradigms=paradigms, max_pairs=max_pairs)
        predictor = predictor or Predictor.from_run(run_dir)
        label = acceptable_label(predictor.label_names, getattr(predictor.task, "name", None), acceptable)
        logger.info("scoring %d minimal pairs of %s (%s) with %s", len(pairs), name, folder, run_dir)
        records = score_minimal_pairs(predictor, pairs, acceptable=label, batch_size=batch_size)
        report = {
            "suite": name,
            "data": str(folder),
            "run": str(run_dir),
            "acceptable": label,
            "pairs": len(records),
            "pairs_sha256": pairs_fingerprint(pairs),
            **minimal_pair_report(records),
        }
        out.mkdir(parents=True, exist_ok=True)
        write_suite_records(records, out / "pairs.jsonl")
        write_json(out / "report.json", report, indent=1)
    report["records"] = str(out / "pairs.jsonl")
    return report


#: Name of the compact form of a run's records (what an archive keeps; see :func:`compact_records`).
COMPACT_FILE = "pairs.compact.json"


def suite_records_of(run_dir: str | os.PathLike, suite: str) -> list[dict[str, Any]]:
    """The per-pair records a run folder holds for ``suite``: ``<run>/suites/<name>/pairs.jsonl``, or its compact
    form ``pairs.compact.json`` (records without the probabilities) in an archived run."""
    name = suite if suite in SUITES else Path(suite).stem
    folder = Path(run_dir) / "suites" / name
    if not (folder / "pairs.jsonl").is_file() and (folder / COMPACT_FILE).is_file():
        with open(folder / COMPACT_FILE, encoding="utf-8") as f:
            return expand_compact_records(json.load(f), str(folder / COMPACT_FILE))
    return read_suite_records(folder / "pairs.jsonl")


def compact_records(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A small JSON form of a run's per-pair records that keeps what every reported number needs (which pairs, in
    which order, in which field / phenomenon, and whether each was correct; not the probabilities): a paradigm's
    pair ids as ``[first, count]`` when they are consecutive integers, else listed; correctness as a 0/1 string."""
    order: list[list[Any]] = []
    groups: dict[str, dict[str, str]] = {}
    for r in records:
        paradigm = str(r["paradigm"])
        if not order or order[-1][0] != paradigm:
            order.append([paradigm, []])
        order[-1][1].append(str(r["pair_id"]))
        meta = groups.setdefault(paradigm, {"field": str(r["field"]), "phenomenon": str(r["phenomenon"])})
        if meta != {"field": str(r["field"]), "phenomenon": str(r["phenomenon"])}:
            raise InputError(
                f"paradigm {paradigm!r} has pairs of different fields or phenomena ({meta} and pair "
                f"{r['pair_id']!r}: {r['field']!r}, {r['phenomenon']!r}); the compact form needs one each"
            )
    for entry in order:
        ids = entry[1]
        if all(i.isdigit() and not (len(i) > 1 and i[0] == "0") for i in ids) and [int(i) for i in ids] == list(
            range(int(ids[0]), int(ids[0]) + len(ids))
        ):
            entry[1] = [int(ids[0]), len(ids)]
        else:
            entry[1] = {"ids": ids}
    return {
        "format": "syntaxformer-minimal-pairs/1",
        "n": len(records),
        "paradigms": groups,
        "order": order,
        "correct": "".join("1" if r["correct"] else "0" for r in records),
    }


def expand_compact_records(obj: Mapping[str, Any], source: str = "compact records") -> list[dict[str, Any]]:
    """The records of :func:`compact_records` again (without ``p_good`` / ``p_bad``). Raises DataError: not that format,
    or its counts do not add up."""
    if not isinstance(obj, Mapping) or obj.get("format") != "syntaxformer-minimal-pairs/1":
        raise DataError(f"{source}: not compact minimal-pair records (format syntaxformer-minimal-pairs/1)")
    records: list[dict[str, Any]] = []
    correct = obj["correct"]
    for paradigm, ids in obj["order"]:
        ids = ids["ids"] if isinstance(ids, Mapping) else [str(ids[0] + i) for i in range(ids[1])]
        meta = obj["paradigms"][paradigm]
        for pair_id in ids:
            records.append(
                {
                    "paradigm": paradigm,
                    "pair_id": pair_id,
                    "field": meta["field"],
                    "phenomenon": meta["phenomenon"],
                    "correct": correct[len(records)] == "1" if len(records) < len(correct) else None,
                }
            )
    if len(records) != obj["n"] or len(correct) != obj["n"]:
        raise DataError(f"{source}: {len(records)} pairs and {len(correct)} results for n = {obj['n']}")
    return records


def paired_suite_records(runs_a: Sequence[str], runs_b: Sequence[str], suite: str) -> dict[str, Any]:
    """The records two systems' runs hold for ``suite``, paired by the seed their ``run.json`` records (in the order
    given when a run records none) and checked to be scored on the same pairs (:func:`pairs_fingerprint`, where
    recorded): ``{"a": [records per run], "b", "runs_a", "runs_b", "seeds", "pairing": how they were paired and
    checked}``. Raises InputError: a run given twice, seeds that differ, or results scored on other pairs (names two
    runs)."""
    from syntaxformer.analysis.compare_runs import pair_by_seed, run_seed

    runs_a, runs_b = [str(r) for r in runs_a], [str(r) for r in runs_b]
    pairs, pairing = pair_by_seed(runs_a, runs_b, [run_seed(r) for r in runs_a], [run_seed(r) for r in runs_b])
    prints = {run: _pairs_sha256(run, suite) for run in [*runs_a, *runs_b]}
    known = {run: h for run, h in prints.items() if h is not None}
    if len(set(known.values())) > 1:
        first = next(iter(known))
        other = next(r for r, h in known.items() if h != known[first])
        raise InputError(
            f"{first} and {other} were scored on different minimal pairs (their {suite!r} results have other pairs' "
            "fingerprints, whatever the suite folders are called); compare results of one suite"
        )
    if len(known) == len(prints):
        pairing += "; every result scored on the same pairs (fingerprint)"
    else:
        unchecked = len(prints) - len(known)
        pairing += f"; pairs matched by id ({unchecked} result(s) record no fingerprint of their pairs)"
    return {
        "a": [suite_records_of(ra, suite) for ra, _ in pairs],
        "b": [suite_records_of(rb, suite) for _, rb in pairs],
        "runs_a": [ra for ra, _ in pairs],
        "runs_b": [rb for _, rb in pairs],
        "seeds": [[run_seed(ra), run_seed(rb)] for ra, rb in pairs],
        "pairing": pairing,
    }


def _pairs_sha256(run_dir: str, suite: str) -> str | None:
    name = suite if suite in SUITES else Path(suite).stem
    try:
        value = json.loads((Path(run_dir) / "suites" / name / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value.get("pairs_sha256") if isinstance(value, dict) else None
