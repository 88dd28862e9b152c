"""The minimal-pair suite figure: accuracy per field or phenomenon, one marker per system (mean over its seed runs,
95% t interval over seeds, or the Wilson interval of its one report), from the ``suites/<name>/report.json`` of
``syntaxformer evaluate RUN --suite``."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.analysis.plot_base import RunInfo, new_figure, system_colors, system_groups
from syntaxformer.errors import ConfigError, DataError, InputError

__all__ = ["SUITE_LEVELS", "find_suite_reports", "plot_suite", "plot_suite_reports", "suite_names", "suite_summary"]

logger = logging.getLogger(__name__)

#: The groups a suite figure can be drawn by (``syntaxformer plot --suite-level``); ``"all"`` (every pair) is
#: always the first column.
SUITE_LEVELS: tuple[str, ...] = ("field", "phenomenon")

#: How a known suite is named in titles.
_TITLES = {"blimp": "BLiMP"}

#: The two intervals (``"interval"`` in :func:`suite_summary`).
_OVER_SEEDS = "t interval over seeds"
_OVER_PAIRS = "Wilson interval over pairs (one seed)"

#: Intervals wider than this do not widen the accuracy axis (a t interval over two seeds can span more than 0..1,
#: which would flatten every other marker); they run off the axis, and the title says so.
_WIDEST_SHOWN = 0.3

#: Marker shapes, so that systems differ in more than colour.
_MARKERS = "osD^vPX<>*"


def suite_names(run: RunInfo | str | Path) -> list[str]:
    """The suites a run folder holds a report of (``suites/<name>/report.json``), sorted."""
    folder = Path(run.path if isinstance(run, RunInfo) else run) / "suites"
    return sorted(p.parent.name for p in folder.glob("*/report.json") if p.is_file())


def _read_report(path: Path, level: str) -> dict[str, Any]:
    """A suite report, checked to hold what the figure draws: accuracy and interval overall and per ``level``."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        for entry in [report["overall"], *report[level].values()]:
            if not 0.0 <= float(entry["accuracy"]) <= 1.0 or len([float(x) for x in entry["ci95"]]) != 2:
                raise ValueError(f"accuracy {entry['accuracy']!r} with interval {entry['ci95']!r}")
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as e:
        raise DataError(
            f"{path} is not the report `syntaxformer evaluate --suite` writes ({type(e).__name__}: {e})"
        ) from None
    return dict(report)


def find_suite_reports(
    runs: Sequence[RunInfo], suite: str | None = None, level: str = "field"
) -> tuple[str, list[tuple[RunInfo, dict[str, Any]]]]:
    """The suite to draw (``suite``, default the only one the runs hold) and the runs that hold its report, each with
    the report checked for ``level``; runs without it are skipped (logged). Raises ConfigError: an unknown level, or no
    ``suite`` while the runs hold several. InputError: no run holds the suite. DataError: a report that is not the file
    ``syntaxformer evaluate`` writes."""
    if level not in SUITE_LEVELS:
        raise ConfigError(f"unknown suite level {level!r}; use {' or '.join(SUITE_LEVELS)}")
    held = {r.path: suite_names(r) for r in runs}
    found = sorted({name for names in held.values() for name in names})
    if suite is None:
        if len(found) > 1:
            raise ConfigError(
                f"the runs hold reports of {len(found)} suites ({', '.join(found)}); choose one with --suite NAME"
            )
        name = found[0] if found else "blimp"
    else:  # a name as found under suites/, or as `evaluate --suite` took it (a path names the suite by its stem)
        name = suite if suite in found else Path(suite.rstrip("/")).stem
    have = [r for r in runs if name in held[r.path]]
    if not have:
        folders = [r.path for r in runs]
        shown = ", ".join(folders[:4]) + (f" and {len(folders) - 4} more" if len(folders) > 4 else "")
        other = f" (they hold {', '.join(found)})" if found else ""
        raise InputError(
            f"no {name!r} suite report (suites/{name}/report.json) in the {len(folders)} run folder(s) given: "
            f"{shown}{other}; score them first with `syntaxformer evaluate RUN --suite {suite or 'blimp'}`"
        )
    skipped = [r.path for r in runs if name not in held[r.path]]
    if skipped:
        logger.warning(
            "suite figure: skipped %d run folder(s) without a %r report: %s", len(skipped), name, ", ".join(skipped)
        )
    return name, [(r, _read_report(Path(r.path) / "suites" / name / "report.json", level)) for r in have]


def suite_summary(
    reports: Mapping[str, Sequence[Mapping[str, Any]]], level: str = "field"
) -> dict[str, dict[str, dict[str, Any]]]:
    """Mean accuracy and 95% interval of each system per group of ``level`` (plus ``"all"``: every pair), from
    ``reports`` (system -> the ``report.json`` of each seed run). Returns system -> group (``"all"`` first, then sorted)
    -> ``{"mean", "ci", "scores" (per seed run), "seeds", "interval"}``: the Student-t interval over two or more seed
    runs, else the one report's Wilson interval. A group a seed run lacks is averaged over the runs that have it. Raises
    ConfigError: an unknown level; InputError: a system without reports."""
    from syntaxformer.tasks.significance import seed_ci

    if level not in SUITE_LEVELS:
        raise ConfigError(f"unknown suite level {level!r}; use {' or '.join(SUITE_LEVELS)}")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for system, seeds in reports.items():
        if not seeds:
            raise InputError(f"system {system!r} has no suite report")
        names = sorted({g for rep in seeds for g in rep[level]})
        out[system] = {}
        for group in ["all", *names]:
            if group == "all":
                entries = [rep["overall"] for rep in seeds]
            else:
                entries = [rep[level][group] for rep in seeds if group in rep[level]]
            scores = [float(e["accuracy"]) for e in entries]
            if len(scores) >= 2:
                ci = list(seed_ci(scores))
                how = _OVER_SEEDS
            else:
                ci = [float(x) for x in entries[0]["ci95"]]
                how = _OVER_PAIRS
            out[system][group] = {
                "mean": float(np.mean(scores)),
                "ci": ci,
                "scores": scores,
                "seeds": len(scores),
                "interval": how,
            }
    return out


def _seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def plot_suite(runs: Sequence[RunInfo], suite: str | None = None, level: str = "field") -> Any:
    """Minimal-pair suite accuracy per ``level`` group (``"field"`` / ``"phenomenon"``, plus ``all``) and system, one
    panel per task: one marker per system (mean and 95% interval of :func:`suite_summary`, seed runs as dots), chance
    (0.5) dashed; ``ax.syntaxformer`` is the panel's :func:`suite_summary`. Runs and errors as
    :func:`find_suite_reports`."""
    name, found = find_suite_reports(runs, suite, level)
    return plot_suite_reports(name, found, level)


def plot_suite_reports(name: str, found: Sequence[tuple[RunInfo, dict[str, Any]]], level: str = "field") -> Any:
    """:func:`plot_suite` of the runs and reports that :func:`find_suite_reports` returns (``name``: the suite). Raises
    DataError: the seed runs of one system scored on different numbers of pairs."""
    report_of = {id(r): rep for r, rep in found}
    groups = system_groups([r for r, _ in found])
    for task, by_label in groups.items():
        for label, seeds in by_label.items():
            sizes = {report_of[id(r)].get("pairs") for r in seeds}
            if len(sizes) > 1:
                counts = ", ".join(f"{r.path}: {report_of[id(r)].get('pairs')}" for r in seeds)
                raise DataError(
                    f"{task} {label}: its seed runs were scored on different numbers of {name} pairs ({counts}); "
                    "score them on the same pairs (`syntaxformer evaluate RUN --suite ... --overwrite`)"
                )
    colors = system_colors(label for by_label in groups.values() for label in by_label)
    markers = {label: _MARKERS[i % len(_MARKERS)] for i, label in enumerate(colors)}
    summaries = {
        task: suite_summary({label: [report_of[id(r)] for r in seeds] for label, seeds in by_label.items()}, level)
        for task, by_label in groups.items()
    }
    n_cols = max(len({g for s in summary.values() for g in s}) for summary in summaries.values())
    n_sys = max(len(summary) for summary in summaries.values())
    width = min(16.0, 3.0 + n_cols * max(0.7, 0.13 * n_sys))
    fig = new_figure(width, (3.8 if n_cols <= 6 else 4.8) * len(groups))  # many columns: rotated labels below
    axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
    title = _TITLES.get(name, name)
    for ax, (task, summary) in zip(axes, summaries.items()):
        columns = ["all", *sorted({g for s in summary.values() for g in s} - {"all"})]
        x = {g: i for i, g in enumerate(columns)}
        step = 0.8 / len(summary)
        for k, (label, by_group) in enumerate(summary.items()):
            offset = (k - (len(summary) - 1) / 2) * step
            pts = [g for g in columns if g in by_group]
            xs = np.array([x[g] + offset for g in pts])
            means = np.array([by_group[g]["mean"] for g in pts])
            low = means - np.array([by_group[g]["ci"][0] for g in pts])
            high = np.array([by_group[g]["ci"][1] for g in pts]) - means
            n_seeds = max(v["seeds"] for v in by_group.values())
            ax.errorbar(
                xs,
                means,
                yerr=[low, high],
                fmt=markers[label],
                color=colors[label],
                ms=5,
                capsize=2,
                lw=1,
                label=f"{label} ({_seeds(n_seeds)})",
            )
            if n_seeds > 1:
                for g, xg in zip(pts, xs):
                    scores = by_group[g]["scores"]
                    ax.plot([xg] * len(scores), scores, ".", color=colors[label], ms=2.5, alpha=0.45)
        chance = ax.axhline(0.5, color="grey", ls="--", lw=0.8, label="chance (0.5)")
        entries = [v for by_group in summary.values() for v in by_group.values()]
        values = [0.5] + [y for v in entries for y in (v["mean"], *v["scores"])]
        values += [y for v in entries if v["ci"][1] - v["ci"][0] <= _WIDEST_SHOWN for y in v["ci"]]
        low_y, high_y = max(0.0, min(values) - 0.03), min(1.0, max(values) + 0.03)
        ax.set_ylim(low_y, high_y)
        cut = any(v["ci"][0] < low_y or v["ci"][1] > high_y for v in entries)
        for i in range(1, len(columns)):
            ax.axvline(i - 0.5, color="lightgrey", lw=0.5)
        first = found[[r.task for r, _ in found].index(task)][0]
        ax.set_xticks(
            range(len(columns)),
            [c.replace("_", " ") if c != "all" else "all pairs" for c in columns],
            rotation=0 if len(columns) <= 6 else 35,
            ha="center" if len(columns) <= 6 else "right",
            fontsize=8,
        )
        ax.set_xlim(-0.5, len(columns) - 0.5)
        ax.set_xlabel(level if level != "field" else "BLiMP field" if name == "blimp" else "field")
        ax.set_ylabel(f"accuracy on {title} pairs")
        hows = [
            h
            for h in (_OVER_SEEDS, _OVER_PAIRS)
            if any(v["interval"] == h for s in summary.values() for v in s.values())
        ]
        ax.set_title(
            f"{first.task_title} runs on {title} minimal pairs, by {level}\nmean over seeds; 95% CI: {'; '.join(hows)}"
            + ("\n(intervals cut at the edge run beyond the axis)" if cut else ""),
            fontsize=9,
        )
        handles, labels = ax.get_legend_handles_labels()
        order = [i for i, h in enumerate(handles) if h is not chance] + [handles.index(chance)]
        ax.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
        )
        ax.syntaxformer = summary
    return fig
