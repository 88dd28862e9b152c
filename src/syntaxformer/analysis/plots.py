"""Figures from run folders (``syntaxformer plot``; ``docs/analysis.md``): each function returns a matplotlib
``Figure`` whose Axes keep their numbers in ``ax.syntaxformer``; :func:`plot_runs` draws what the runs support."""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.analysis.buckets import length_buckets
from syntaxformer.analysis.plot_base import RunInfo, find_runs, new_figure, run_info, system_colors, system_groups
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.tasks.metrics import METRICS
from syntaxformer.tasks.significance import bootstrap_ci, seed_ci
from syntaxformer.utils import atomic_write, check_not_inside

__all__ = [
    "PLOT_KINDS",
    "SUITE_LEVELS",
    "RunInfo",
    "find_runs",
    "find_suite_reports",
    "plot_attention",
    "plot_curve",
    "plot_length_buckets",
    "plot_results",
    "plot_runs",
    "plot_suite",
    "save_figure",
    "suite_names",
    "suite_summary",
]

logger = logging.getLogger(__name__)

#: The figures :func:`plot_runs` draws (``syntaxformer plot --kind``).
PLOT_KINDS: tuple[str, ...] = ("results", "buckets", "learning-curve", "noise", "attention", "suite")


def _interval(runs: Sequence[RunInfo], n_resamples: int, seed: int) -> tuple[float, tuple[float, float] | None, str]:
    """A variant's mean dev score and 95% interval: the t interval over two or more seed runs, else the bootstrap
    over dev examples of its one run (none when it keeps no labels)."""
    scores = [r.score for r in runs if r.score is not None]
    mean = float(np.mean(scores))
    if len(scores) >= 2:
        return mean, seed_ci(scores), f"t interval over {len(scores)} seeds"
    run, path = runs[0], Path(runs[0].path) / "dev_predictions.json"
    preds = json.loads(path.read_text(encoding="utf-8")) if run.metric in METRICS and path.is_file() else {}
    if preds.get("labels") is None or len(preds["labels"]) < 2:
        return mean, None, "no interval"
    ci = bootstrap_ci(METRICS[run.metric], preds["predictions"], preds["labels"], n_resamples, seed)
    return mean, ci, "bootstrap over dev examples"


def plot_results(runs: Sequence[RunInfo], n_resamples: int = 1000, seed: int = 0) -> Any:
    """Bars of the headline dev score per variant (one panel per task), with 95% intervals and seed dots;
    ``ax.syntaxformer`` = ``{label: {"mean", "ci", "scores", "interval"}}``. InputError: no run with a dev score."""
    runs = [r for r in runs if r.score is not None]
    if not runs:
        raise InputError("no run with a dev score to plot")
    groups = system_groups(runs)
    colors = system_colors(label for by_label in groups.values() for label in by_label)
    n_max = max(len(g) for g in groups.values())
    fig = new_figure(max(5.0, 1.0 + 0.9 * n_max), 3.4 * len(groups))
    axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
    for ax, by_label in zip(axes, groups.values()):
        labels = list(by_label)
        first = by_label[labels[0]][0]
        record: dict[str, dict[str, Any]] = {}
        for i, label in enumerate(labels):
            mean, ci, how = _interval(by_label[label], n_resamples, seed)
            scores = [r.score for r in by_label[label]]
            record[label] = {"mean": mean, "ci": list(ci) if ci else None, "scores": scores, "interval": how}
            ax.bar(i, mean, color=colors[label], alpha=0.75, width=0.7)
            if ci:
                ax.errorbar(i, mean, yerr=[[mean - ci[0]], [ci[1] - mean]], color="black", capsize=4, lw=1)
            if len(scores) > 1:
                ax.plot([i] * len(scores), scores, "o", color="black", ms=3)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_ylabel(first.metric)
        hows = sorted({v["interval"] for v in record.values()})
        ax.set_title(f"{first.task_title}: dev {first.metric}\n95% CI: {'; '.join(hows)}", fontsize=9)
        ax.axhline(0, color="grey", lw=0.5)
        ax.syntaxformer = record
    return fig


def plot_length_buckets(
    run_dirs: Sequence[str | Path],
    names: Sequence[str] | None = None,
    n_buckets: int = 5,
    mode: str = "count",
    edges: Sequence[int] | None = None,
) -> Any:
    """Scores by length bucket (:func:`~syntaxformer.analysis.buckets.length_buckets`), one line per name (runs that
    share one, a variant's seeds, make one line: their mean), one panel per metric; ``fig.axes[0].syntaxformer`` is
    the :func:`length_buckets` result."""
    result = length_buckets(run_dirs, n_buckets=n_buckets, mode=mode, edges=edges)
    names = list(names or [run_info(Path(r)).variant for r in run_dirs])
    rows = result["buckets"]
    metrics = list(rows[0]["scores"][0])
    fig = new_figure(max(4.5, 0.9 * len(rows) + 2), 3.2 * len(metrics))
    axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
    x = np.arange(len(rows))
    lines = {name: [j for j, n in enumerate(names) if n == name] for name in dict.fromkeys(names)}  # name -> runs
    for ax, metric in zip(axes, metrics):
        for k, (name, runs) in enumerate(lines.items()):
            ax.plot(
                x,
                [np.mean([row["scores"][j][metric] for j in runs]) for row in rows],
                "o-",
                color=f"C{k % 10}",
                label=name,
            )
        ax.set_xticks(x, [f"{row['label']}\n(n={row['n']})" for row in rows], fontsize=8)
        ax.set_xlabel(f"length in {result['unit']}")
        ax.set_ylabel(metric)
        ax.set_title(f"{result['task']}: dev {metric} by length (buckets by {result['mode']})", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over the lines
        ax.syntaxformer = result
    return fig


#: The folder-name suffix that only says where a run sits on a curve (``sbert_gate_n2000``, ``sgnet_noise0.2``,
#: as ``experiments/sgnet_glue.py`` names its runs); dropped so that one variant's points make one line.
_CURVE_SUFFIX = {"train_size": re.compile(r"_n(?:\d+|all)$"), "parser_noise": re.compile(r"_noise[0-9.]+(?:e-?\d+)?$")}


def plot_curve(runs: Sequence[RunInfo], x: str = "train_size") -> Any:
    """The headline dev score against ``x`` (``"train_size"`` or ``"parser_noise"``, SG-Net §7.6), one line per variant
    (a name suffix that only places it on the curve, ``_n2000`` / ``_noise0.2``, is dropped), one panel per task; mean
    over seeds with the 95% t interval. ``ax.syntaxformer`` = ``{variant: {"x", "mean", "ci"}}``. Raises ConfigError: an
    unknown ``x``; InputError: no task whose runs differ in ``x``."""
    if x not in ("train_size", "parser_noise"):
        raise ConfigError(f"unknown curve axis {x!r}; use train_size or parser_noise")
    runs = [r for r in runs if r.score is not None and getattr(r, x) is not None]
    tasks = [t for t in dict.fromkeys(r.task for r in runs) if len({getattr(r, x) for r in runs if r.task == t}) > 1]
    if not tasks:
        what = "train size" if x == "train_size" else "parser noise"
        raise InputError(
            f"no task whose runs differ in {what}: give runs trained with different "
            f"{'--max_train_samples' if x == 'train_size' else 'parser_noise'}"
        )
    fig = new_figure(5.0, 3.4 * len(tasks))
    axes = fig.subplots(len(tasks), 1, squeeze=False)[:, 0]
    line = {id(r): _CURVE_SUFFIX[x].sub("", r.variant) for r in runs}  # run -> its line's name
    colors = system_colors(line[id(r)] for r in runs if r.task in tasks)
    for ax, task in zip(axes, tasks):
        mine = [r for r in runs if r.task == task]
        record: dict[str, Any] = {}
        for variant in dict.fromkeys(line[id(r)] for r in mine):
            pts = sorted({getattr(r, x) for r in mine if line[id(r)] == variant})
            means: list[float] = []
            cis: list[list[float] | None] = []
            for v in pts:
                scores = [
                    r.score for r in mine if r.score is not None and line[id(r)] == variant and getattr(r, x) == v
                ]
                means.append(float(np.mean(scores)))
                cis.append(list(seed_ci(scores)) if len(scores) >= 2 else None)
            low = [m - (c[0] if c else m) for m, c in zip(means, cis)]
            high = [(c[1] if c else m) - m for m, c in zip(means, cis)]
            ax.errorbar(pts, means, yerr=[low, high], fmt="o-", color=colors[variant], capsize=3, label=variant)
            record[variant] = {"x": list(pts), "mean": means, "ci": cis}
        values = sorted({getattr(r, x) for r in mine})
        if x == "train_size" and values[0] > 0 and values[-1] / values[0] >= 10:
            ax.set_xscale("log")
            ax.minorticks_off()  # the log axis's own 2x10^3, 3x10^3, ... labels overlap; label the sizes run
            ax.set_xticks(values, [f"{v:,.0f}" for v in values])
        ax.set_xlabel("training examples" if x == "train_size" else "parser noise (fraction of heads re-attached)")
        ax.set_ylabel(mine[0].metric)
        ax.set_title(f"{mine[0].task_title}: dev {mine[0].metric}\nmean over seeds, 95% t interval", fontsize=9)
        ax.legend(fontsize=8)
        ax.syntaxformer = record
    return fig


# -- the minimal-pair suite figure ------------------------------------------------------------------------
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
    """Mean accuracy and 95% interval (which: ``docs/analysis.md``) of each system per group of ``level`` (plus
    ``"all"``) from ``reports`` (system -> the ``report.json`` of each seed run): system -> group (``"all"`` first) ->
    ``{"mean", "ci", "scores" (per seed run), "seeds", "interval"}``; a group a seed run lacks is averaged over the
    runs that have it. Raises ConfigError: an unknown level; InputError: a system without reports."""
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


def plot_suite(runs: Sequence[RunInfo], suite: str | None = None, level: str = "field") -> Any:
    """Minimal-pair suite accuracy per ``level`` group and system, one panel per task; ``ax.syntaxformer`` is the
    panel's :func:`suite_summary`. Runs and errors as :func:`find_suite_reports`."""
    name, found = find_suite_reports(runs, suite, level)
    return _plot_suite_reports(name, found, level)


def _plot_suite_reports(name: str, found: Sequence[tuple[RunInfo, dict[str, Any]]], level: str = "field") -> Any:
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
                label=f"{label} ({n_seeds} seed{'s' if n_seeds != 1 else ''})",
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
        hows = [h for h in (_OVER_SEEDS, _OVER_PAIRS) if any(v["interval"] == h for v in entries)]
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


def plot_attention(
    model: Any,
    text: str,
    text_b: str | None = None,
    layer: int = -1,
    heads: Sequence[int] | None = None,
    tokenizer: Any = None,
    max_heads: int = 12,
) -> Any:
    """Attention heatmaps of one layer of an encoder on ``text`` (or a pair), one panel per head, under eager attention
    (an SG-Net folder: its encoder's heads; ``docs/analysis.md``). Arguments: model: a model folder or hub name, or a
    loaded model (then give ``tokenizer``); layer: layer index (negative from the end); heads: the heads to draw
    (default the first ``max_heads``). ``ax.syntaxformer`` = ``{"layer", "head", "tokens", "attention" ([L, L]
    list)}`` per panel. Raises InputError: a Syntax-BERT folder, or a layer or head the model does not have;
    DataError: the model returned no attentions."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig
    from syntaxformer.training.saved import loading_model

    what = ""
    if isinstance(model, (str, Path)):
        path = str(model)
        with loading_model(path):  # the folder is checked first (a damaged one is named)
            config = AutoConfig.from_pretrained(path)
        if isinstance(config, SyntaxBertConfig):
            raise InputError(
                f"{path} is a Syntax-BERT model: its attention in every layer depends on the parse, which "
                "these heatmaps do not take; use `syntaxformer show` for it"
            )
        with loading_model(path):
            if isinstance(config, SGNetConfig):  # the SG layer's own attention needs the parse: its encoder's heads
                model, what = AutoModel.from_pretrained(path).encoder, " of the fine-tuned encoder under the SG layer"
            else:
                model = AutoModel.from_pretrained(path, attn_implementation="eager")
        if tokenizer is None:
            with loading_model(path, "tokenizer", weights=False):
                tokenizer = AutoTokenizer.from_pretrained(path)
    elif tokenizer is None:
        raise InputError("give the tokenizer of a loaded model (tokenizer=...)")
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")
    model.eval()
    enc = tokenizer(text, text_b, return_tensors="pt", truncation=True, max_length=128)
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    attentions = getattr(out, "attentions", None)
    if not attentions or attentions[0] is None:
        raise DataError(f"{type(model).__name__} returned no attention weights; it needs an eager attention")
    n_layers = len(attentions)
    if not -n_layers <= layer < n_layers:
        raise InputError(f"layer {layer} out of range: the model has {n_layers} layers")
    att = attentions[layer][0].float().numpy()  # (heads, L, L)
    heads = list(range(min(att.shape[0], max_heads))) if heads is None else list(heads)
    bad = [h for h in heads if not 0 <= h < att.shape[0]]
    if bad:
        raise InputError(f"heads {bad} out of range: layer {layer} has {att.shape[0]} heads")
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    cols = min(4, len(heads))
    rows = math.ceil(len(heads) / cols)
    size = 1.2 + 0.18 * len(tokens)
    fig = new_figure(size * cols, size * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    layer_index = layer % n_layers
    for ax, h in zip(axes, heads):
        ax.imshow(att[h], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=6)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=6)
        ax.set_title(f"layer {layer_index} head {h}", fontsize=8)
        ax.syntaxformer = {"layer": layer_index, "head": h, "tokens": tokens, "attention": att[h].tolist()}
    for ax in axes[len(heads) :]:
        ax.set_visible(False)
    fig.suptitle(f"attention weights{what}: row = query token, column = the token it attends to", fontsize=9)
    return fig


def save_figure(fig: Any, output_dir: str | Path, name: str, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``<output_dir>/<name>.png`` and ``.svg`` (atomically); returns the paths."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        with atomic_write(path, "wb", encoding=None) as f:
            fig.savefig(f, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    return paths


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-") or "figure"


def plot_runs(
    paths: Sequence[str | Path],
    output_dir: str | Path,
    kinds: Sequence[str] | None = None,
    n_resamples: int = 1000,
    n_buckets: int = 5,
    bucket_mode: str = "count",
    edges: Sequence[int] | None = None,
    model: str | None = None,
    text: str | None = None,
    text_b: str | None = None,
    layer: int = -1,
    overwrite: bool = False,
    suite: str | None = None,
    suite_level: str = "field",
) -> dict[str, list[Path]]:
    """Draw the figures that the runs under ``paths`` support (or ``kinds``: which ones are inferred is in
    ``docs/analysis.md``) into ``output_dir`` (PNG and SVG each). Existing figure files are refused, before anything
    is drawn, unless ``overwrite``. Returns figure name -> files written. Raises ConfigError: an unknown kind;
    ``attention`` without ``model`` and ``text``; several suites and no ``suite``; InputError: nothing to plot, or no
    run holds the suite. DataError: a figure file exists."""
    unknown = [k for k in (kinds or []) if k not in PLOT_KINDS]
    if unknown:
        raise ConfigError(f"unknown figure kind(s) {unknown}; use {', '.join(PLOT_KINDS)}")
    wanted = list(kinds or [])
    runs = find_runs(paths) if paths else []
    check_not_inside(output_dir, [*(r.path for r in runs), model])
    if not wanted:
        wanted = ["results"] if runs else []
        for kind, attr in (("learning-curve", "train_size"), ("noise", "parser_noise")):
            if any(len({getattr(r, attr) for r in runs if r.task == t}) > 1 for t in {r.task for r in runs}):
                wanted.append(kind)
        held = {s for r in runs for s in suite_names(r)}
        if runs and (suite is not None or len(held) == 1):
            wanted.append("suite")
        elif held:
            logger.info(
                "the runs hold reports of several suites (%s): choose one with --suite NAME", ", ".join(sorted(held))
            )
        if model and text:
            wanted.append("attention")
    # every figure is planned (name -> how to draw it) before any is drawn, so that existing files are refused
    # before anything is written
    plan: list[tuple[str, Callable[[], Any]]] = []
    if runs and "results" in wanted:
        plan.append(("results", lambda: plot_results(runs, n_resamples=n_resamples)))
    if "learning-curve" in wanted:
        plan.append(("learning_curve", lambda: plot_curve(runs, "train_size")))
    if "noise" in wanted:
        plan.append(("parser_noise", lambda: plot_curve(runs, "parser_noise")))
    if "buckets" in wanted:
        for task in dict.fromkeys(r.task for r in runs):
            mine = [r for r in runs if r.task == task]
            draw = functools.partial(
                plot_length_buckets, [r.path for r in mine], [r.variant for r in mine], n_buckets, bucket_mode, edges
            )
            plan.append((f"length_buckets_{_slug(task)}", draw))
    if "suite" in wanted:
        suite_name, found = find_suite_reports(runs, suite, suite_level)
        draw_suite = functools.partial(_plot_suite_reports, suite_name, found, suite_level)
        plan.append((f"suite_{_slug(suite_name)}_{suite_level}", draw_suite))
    if "attention" in wanted:
        if not (model and text):
            raise ConfigError("the attention figure needs a model (--model) and a text (--text)")
        plan.append((f"attention_layer{layer}", lambda: plot_attention(model, text, text_b, layer=layer)))
    if not overwrite:
        existing = [
            str(Path(output_dir) / f"{name}.{fmt}")
            for name, _ in plan
            for fmt in ("png", "svg")
            if (Path(output_dir) / f"{name}.{fmt}").exists()
        ]
        if existing:
            raise DataError(
                f"{len(existing)} figure file(s) already exist ({', '.join(existing[:4])}"
                f"{' ...' if len(existing) > 4 else ''}); choose another --output folder or pass --overwrite "
                "to replace them"
            )
    written: dict[str, list[Path]] = {}
    for name, drawer in plan:
        written[name] = save_figure(drawer(), output_dir, name)
        logger.info("wrote %s", ", ".join(map(str, written[name])))
    if not written:
        raise InputError("nothing to plot: give run folders, or --model and --text for attention maps")
    return written
