"""Figures from run folders (matplotlib object API, PNG and SVG; ``syntaxformer plot``; ``docs/analysis.md``).

Results with 95% intervals (:func:`plot_results`), length buckets (:func:`plot_length_buckets`), learning and
parser-noise curves (:func:`plot_curve`), attention heatmaps (:func:`plot_attention`); :func:`plot_runs` infers
which figures the runs support. Each function returns the figure; every Axes keeps its numbers in
``ax.syntaxformer``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.analysis.plot_base import RunInfo, find_runs, new_figure, run_info, system_colors, system_groups
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.utils import check_not_inside

__all__ = [
    "PLOT_KINDS",
    "RunInfo",
    "find_runs",
    "plot_attention",
    "plot_curve",
    "plot_length_buckets",
    "plot_results",
    "plot_runs",
    "save_figure",
]

logger = logging.getLogger(__name__)

#: The figures :func:`plot_runs` draws (``syntaxformer plot --kind``).
PLOT_KINDS: tuple[str, ...] = ("results", "buckets", "learning-curve", "noise", "attention", "suite")


def _single_run_ci(run: RunInfo, n_resamples: int, seed: int) -> tuple[float, float] | None:
    """Bootstrap interval over dev examples of one run's headline metric, or ``None`` when it keeps no labels."""
    from syntaxformer.tasks.metrics import METRICS
    from syntaxformer.tasks.significance import bootstrap_ci

    path = Path(run.path) / "dev_predictions.json"
    if run.metric not in METRICS or not path.is_file():
        return None
    preds = json.loads(path.read_text(encoding="utf-8"))
    if preds.get("labels") is None or len(preds["labels"]) < 2:
        return None
    return bootstrap_ci(METRICS[run.metric], preds["predictions"], preds["labels"], n_resamples, seed)


def _interval(runs: Sequence[RunInfo], n_resamples: int, seed: int) -> tuple[float, tuple[float, float] | None, str]:
    from syntaxformer.tasks.significance import seed_ci

    scores = [r.score for r in runs if r.score is not None]
    mean = float(np.mean(scores))
    if len(scores) >= 2:
        return mean, seed_ci(scores), f"t interval over {len(scores)} seeds"
    ci = _single_run_ci(runs[0], n_resamples, seed)
    return mean, ci, "bootstrap over dev examples" if ci else "no interval"


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
    from syntaxformer.analysis.buckets import length_buckets

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
    from syntaxformer.tasks.significance import seed_ci

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


def _attention_model(path: str) -> tuple[Any, str]:
    """The model whose eager attention :func:`plot_attention` draws: a plain encoder as it is; for an SG-Net
    folder its fine-tuned encoder (the SG layer's own attention needs the parse); a Syntax-BERT folder is refused,
    since its attention in every layer depends on the parse."""
    from transformers import AutoConfig, AutoModel

    import syntaxformer.modeling  # noqa: F401  (registers the syntax models with the Auto classes)
    from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig
    from syntaxformer.training.saved import loading_model

    with loading_model(path):
        config = AutoConfig.from_pretrained(path)
    if isinstance(config, SyntaxBertConfig):
        raise InputError(
            f"{path} is a Syntax-BERT model: its attention in every layer depends on the parse, which "
            "these heatmaps do not take; use `syntaxformer show` for it"
        )
    with loading_model(path):
        if isinstance(config, SGNetConfig):
            model = AutoModel.from_pretrained(path)
            return model.encoder, " of the fine-tuned encoder under the SG layer"
        return AutoModel.from_pretrained(path, attn_implementation="eager"), ""


def plot_attention(
    model: Any,
    text: str,
    text_b: str | None = None,
    layer: int = -1,
    heads: Sequence[int] | None = None,
    tokenizer: Any = None,
    max_heads: int = 12,
) -> Any:
    """Attention heatmaps of one layer of an encoder on ``text`` (or a pair), one panel per head (eager attention, so
    the weights are the ones the layer used). An SG-Net folder shows its fine-tuned encoder's heads; a Syntax-BERT
    folder is refused (its attention needs the parse: ``syntaxformer show``). Arguments: model: a model folder or hub
    name, or a loaded model (then give ``tokenizer``); layer: layer index (negative from the end); heads: the heads to
    draw (default the first ``max_heads``). Returns the figure; ``ax.syntaxformer`` = ``{"layer", "head", "tokens",
    "attention" ([L, L] list)}`` per panel. Raises InputError: a layer or head the model does not have; DataError: the
    model returned no attentions."""
    import torch
    from transformers import AutoTokenizer

    what = ""
    if isinstance(model, (str, Path)):
        from syntaxformer.training.saved import loading_model

        path = str(model)
        model, what = _attention_model(path)  # the folder is checked first (a damaged one is named)
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
    from syntaxformer.utils import atomic_write

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
    """Draw the figures that the runs under ``paths`` support into ``output_dir`` (PNG and SVG each). Without ``kinds``:
    ``results``; ``learning-curve`` / ``noise`` where a task's runs differ in train size / parser noise; ``suite`` where
    runs hold a report of one suite (or of ``suite``; by ``suite_level``); ``attention`` when ``model`` and ``text`` are
    given. ``buckets`` reads the dev data again, so only when asked for. Existing figure files are refused, before
    anything is drawn, unless ``overwrite``. Returns figure name -> files written. Raises ConfigError: an unknown kind;
    ``attention`` without ``model`` and ``text``; several suites and no ``suite``; InputError: nothing to plot, or no
    run holds the suite. DataError: a figure file exists."""
    from syntaxformer.analysis.plot_suites import find_suite_reports, suite_names

    unknown = [k for k in (kinds or []) if k not in PLOT_KINDS]
    if unknown:
        raise ConfigError(f"unknown figure kind(s) {unknown}; use {', '.join(PLOT_KINDS)}")
    wanted = list(kinds or [])
    runs = find_runs(paths) if paths else []
    check_not_inside(output_dir, [*(r.path for r in runs), model if model and os.path.isdir(model) else None])
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
        from syntaxformer.analysis.plot_suites import plot_suite_reports

        suite_name, found = find_suite_reports(runs, suite, suite_level)
        draw_suite = functools.partial(plot_suite_reports, suite_name, found, suite_level)
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
