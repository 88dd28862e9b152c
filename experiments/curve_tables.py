"""Markdown tables of the low-resource experiments for docs/results.md, from the committed run archive alone.

Usage (from the repository root)::

    python experiments/curve_tables.py                  # both tables
    python experiments/curve_tables.py --table curves   # learning curves only (or: --table trees)

(1) Learning curves (``bash experiments/learning_curve_sweep.sh``, archived in docs/results/runs/learning_curves/):
one table per task, a row per training-set size, the mean dev score of every system over its archived seeds (the
seeds in each cell), then the paired comparisons SG-Net − plain encoder, gated Syntax-BERT − plain encoder (their
classification heads differ: gated Syntax-BERT's own reference, the SB head baseline, is not trained in the curves),
and, where the random-tree controls were trained (100 sentences), SG-Net − SG-Net on random trees and gated
Syntax-BERT − gated Syntax-BERT on random trees. Two points come from other sweeps instead of being trained again:

* CoLA "all" (8,551 sentences) is the syntactic-generalisation sweep's full-CoLA runs
  (``bash experiments/blimp_sweep.sh``, docs/results/runs/cola_blimp/cola/<variant>/seed<N>/).
* SST-2 10,000 is the full-data GLUE sweep's SST-2 runs (``bash experiments/glue_sweep.sh``,
  docs/results/runs/glue_sweep/sst2/<variant>/seed<N>/). The curve's ``--full --min-steps 200`` at 10,000 sentences
  is the GLUE sweep's ``--full`` run: 2 epochs of 10,000 sentences are 626 optimisation steps, so ``--min-steps``
  changes nothing, and the run configurations (run.json) the curve would write were checked to equal the archived
  GLUE-sweep ones in every field but the output folder (baseline_default, sgnet_default, sbert_gate,
  sbert_gate_random; seeds 1-3). A 10,000-sentence run archived by the curve sweep itself
  (learning_curves/sst2/<variant>_n10000/) only adds seeds that the GLUE sweep lacks; where both hold a seed, the
  GLUE sweep's run is used and a note is printed if the two differ in configuration or score.

(2) Gold vs parsed vs random trees (``bash experiments/sst_trees_sweep.sh``, docs/results/runs/sst_trees/): SST-2
with the SST treebank's gold trees (sst2_trees), 100 training sentences; per system (SG-Net, gated Syntax-BERT) the
plain encoder and the system on gold, parsed and random trees, then gold − parsed, gold − random, parsed − random
and system on gold trees − plain encoder.

Statistics per comparison (A − B): only the seeds both systems have are paired. Δ is the mean over those seeds of
score(A) − score(B). With 2 or more shared seeds: the 95% t-interval of the per-seed differences, the two-sided
paired t-test over seeds and the exact two-sided sign-flip test over seeds (``syntaxformer.tasks.significance.
seed_comparison``; with k seeds the sign-flip p is at least 2 / 2**k: 0.0625 for 5 seeds, so it alone cannot reach
0.05). With 1 shared seed: the two-sided paired bootstrap
over dev examples from the runs' dev_predictions.json (``--resamples``, resampling seed 0) and its 95% percentile
interval, labelled "bootstrap"; it holds the two trained models fixed, so it says nothing about training again.
Holm's adjustment runs over every test of a table (its family; a bootstrap p of 0 counts as 1/resamples). Bold: Holm
p < 0.05 on a t-test over seeds; a one-seed bootstrap is never bold. A cell whose runs are not archived shows "–"; a
comparison whose two systems share no seed is left out, with a note under its table.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "results" / "runs"
RESAMPLES = 1000
PLANNED_SEEDS = "1–5"

# (variant, column title) of the learning-curve table; the folder of size N is f"{variant}_n{N}"
CURVE_SYSTEMS = [
    ("baseline_default", "plain encoder"),
    ("sgnet_default", "SG-Net"),
    ("sgnet_default_noise1", "SG-Net, random trees"),
    ("sbert_gate", "SB gated"),
    ("sbert_gate_random", "SB gated, random trees"),
]
# (A, B, column title): A − B
CURVE_COMPARISONS = [
    ("sgnet_default", "baseline_default", "SG-Net − plain"),
    ("sbert_gate", "baseline_default", "SB gated − plain (heads differ)"),
    ("sgnet_default", "sgnet_default_noise1", "SG-Net − SG-Net random trees"),
    ("sbert_gate", "sbert_gate_random", "SB gated − SB gated random trees"),
]
# task -> (title, metric name in the caption, sizes; None = the whole training set)
CURVE_TASKS = {
    "cola": ("CoLA", "dev Matthews correlation", [100, 1000, None]),
    "sst2": ("SST-2", "dev accuracy", [100, 1000, 10000, None]),  # "all": shown where runs of it are archived
}
GLUE_SWEEP_SIZE = {"sst2": 10000}  # the full-data GLUE sweep's training-set size, where it is a curve point

TREES_TASK, TREES_SIZE = "sst2_trees", 100
TREES_PLAIN = "baseline_default"
# (row title, {tree source: variant}); the folder is f"{variant}_n100"
TREES_SYSTEMS = [
    ("SG-Net", {"gold": "sgnet_default_gold", "parsed": "sgnet_default_parsed", "random": "sgnet_default_gold_noise1"}),
    ("SB gated", {"gold": "sbert_gate_gold", "parsed": "sbert_gate_parsed", "random": "sbert_gate_random"}),
]
# (A, B, column title); "plain" is the plain encoder
TREES_COMPARISONS = [
    ("gold", "parsed", "gold − parsed"),
    ("gold", "random", "gold − random"),
    ("parsed", "random", "parsed − random"),
    ("gold", "plain", "gold − plain"),
]

Run = dict  # {"score", "predictions", "labels", "ids", "config", "train_size", "folder"}
Runs = dict  # seed -> Run


# --- reading the archive -------------------------------------------------------------------------------------------


def main_metric(task: str) -> str:
    """The task's headline dev metric (what metrics.json's ``dev`` is read at)."""
    from syntaxformer.tasks import get_task

    return get_task(task).main_metric


def read_run(folder: Path, task: str) -> Run | None:
    """A finished archived run (metrics.json and dev_predictions.json both there), or None."""
    metrics_file, predictions_file = folder / "metrics.json", folder / "dev_predictions.json"
    if not (metrics_file.is_file() and predictions_file.is_file()):
        return None
    metrics = json.loads(metrics_file.read_text(encoding="utf-8"))
    pred = json.loads(predictions_file.read_text(encoding="utf-8"))
    if pred.get("order", "dataset") != "dataset":
        raise SystemExit(f"{folder}: dev predictions not in dataset order; run `sgnet_glue.py reorder` first")
    run_json = folder / "run.json"
    config = json.loads(run_json.read_text(encoding="utf-8")).get("config", {}) if run_json.is_file() else {}
    return {
        "score": float(metrics["dev"][metrics.get("main_metric") or main_metric(task)]),
        "predictions": pred["predictions"],
        "labels": pred["labels"],
        "ids": pred.get("ids"),
        "config": config,
        "train_size": metrics.get("sizes", {}).get("train"),
        "device": metrics.get("environment", {}).get("device"),
        "folder": folder,
    }


def read_variant(folder: Path, task: str) -> Runs:
    """seed -> run for every finished ``seed<N>`` run under ``folder`` (empty when the folder is not there)."""
    runs = {}
    for seed_dir in sorted(folder.glob("seed*")):
        run = read_run(seed_dir, task)
        if run is not None and seed_dir.name[4:].isdigit():
            runs[int(seed_dir.name[4:])] = run
    return runs


def _same_config(a: dict, b: dict) -> bool:
    """Two run configurations equal in everything but where they were written."""
    ignore = {"output_dir"}
    return {k: v for k, v in a.items() if k not in ignore} == {k: v for k, v in b.items() if k not in ignore}


def curve_runs(task: str, curves: Path, blimp: Path, glue: Path | None) -> tuple[dict, list[str]]:
    """size -> variant -> seed -> run for one task of the learning curves, and notes on how points were joined."""
    notes: list[str] = []
    points: dict = {}
    for size in CURVE_TASKS[task][2]:
        points[size] = {}
        for variant, _ in CURVE_SYSTEMS:
            if size is None and task == "cola":  # CoLA's whole training set: the BLiMP sweep's runs
                runs = read_variant(blimp / task / variant, task)
            else:
                runs = read_variant(curves / task / f"{variant}_n{size or 'all'}", task)
            if glue is not None and size is not None and GLUE_SWEEP_SIZE.get(task) == size:
                full = read_variant(glue / task / variant, task)
                for seed, own in sorted(runs.items()):
                    if seed in full and not (
                        _same_config(own["config"], full[seed]["config"]) and own["score"] == full[seed]["score"]
                    ):
                        notes.append(
                            f"{task} {size} {variant} seed {seed}: the curve's run ({own['score']:.4f}) differs from "
                            f"the GLUE sweep's ({full[seed]['score']:.4f}) in configuration or score; the GLUE "
                            "sweep's is used"
                        )
                runs = {**runs, **full}
            if runs:
                points[size][variant] = runs
    return points, notes


def trees_runs(trees: Path) -> dict:
    """variant -> seed -> run for the gold/parsed/random tree sweep."""
    variants = [TREES_PLAIN] + [v for _, sources in TREES_SYSTEMS for v in sources.values()]
    found = {}
    for variant in variants:
        runs = read_variant(trees / TREES_TASK / f"{variant}_n{TREES_SIZE}", TREES_TASK)
        if runs:
            found[variant] = runs
    return found


# --- statistics ----------------------------------------------------------------------------------------------------


def _metric_fn(task: str) -> Callable[[np.ndarray, np.ndarray], float]:
    from syntaxformer.tasks.metrics import compute_metrics

    main = main_metric(task)
    return lambda p, y: compute_metrics([main], p, y)[main]


def compare(a: Runs, b: Runs, task: str, resamples: int = RESAMPLES) -> dict | None:
    """A − B over the seeds both have, or None where they share none.

    Returns ``{"seeds", "difference", "ci95", "test", "p"}`` (and ``"sign_flip_p"`` with 2 or more seeds); ``test``
    is ``"t"`` (paired t-test over 2 or more seeds, ``ci95`` the t-interval of the per-seed differences) or ``"bootstrap"`` (one seed: the two-sided paired
    bootstrap over dev examples, ``ci95`` its percentile interval).

    Raises:
        SystemExit: a one-seed pair whose runs were evaluated on different dev examples.
    """
    from syntaxformer.tasks.significance import paired_bootstrap, seed_comparison

    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    if len(seeds) > 1:
        r = seed_comparison([b[s]["score"] for s in seeds], [a[s]["score"] for s in seeds])
        return {
            "seeds": seeds,
            "difference": r["difference"],
            "ci95": r["ci95"],
            "test": "t",
            "p": r["t_p"],
            "sign_flip_p": r["sign_flip_p"],
        }
    ra, rb = a[seeds[0]], b[seeds[0]]
    if (ra["ids"] is not None and rb["ids"] is not None and ra["ids"] != rb["ids"]) or ra["labels"] != rb["labels"]:
        raise SystemExit(f"{ra['folder']} and {rb['folder']} were evaluated on different dev examples")
    boot = paired_bootstrap(
        _metric_fn(task),
        np.asarray(rb["predictions"]),
        np.asarray(ra["predictions"]),
        np.asarray(ra["labels"]),
        n_resamples=resamples,
        seed=0,
        two_sided=True,
    )
    return {
        "seeds": seeds,
        "difference": boot.difference,
        "ci95": boot.details["ci95"],
        "test": "bootstrap",
        "p": boot.p_value,
    }


def holm_family(results: dict, resamples: int = RESAMPLES) -> dict:
    """Holm-adjusted p of every comparison in ``results`` (one family); a bootstrap p of 0 counts as 1/resamples."""
    from syntaxformer.analysis.minimal_pairs import holm

    keys = list(results)
    ps = [max(results[k]["p"], 1 / resamples) if results[k]["test"] == "bootstrap" else results[k]["p"] for k in keys]
    return dict(zip(keys, holm(ps))) if keys else {}


# --- formatting ----------------------------------------------------------------------------------------------------


def seeds_text(seeds: list[int]) -> str:
    """[1, 2, 3] -> "s1–3", [2] -> "s2", [1, 3] -> "s1,3"."""
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"s{seeds[0]}–{seeds[-1]}"
    return "s" + ",".join(map(str, seeds))


def p_text(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def mean_cell(runs: Runs | None, mark_cpu: bool = False) -> str:
    """The mean dev score over the archived seeds and the seeds, or "–"; ``mark_cpu`` (a GPU study's table): the
    seeds whose run recorded the CPU as its device are named ("s1–5; s4,5 on CPU", "s1–5; all on CPU")."""
    if not runs:
        return "–"
    seeds = sorted(runs)
    cpu = [s for s in seeds if runs[s].get("device") == "cpu"] if mark_cpu else []
    on_cpu = "" if not cpu else "; all on CPU" if cpu == seeds else f"; {seeds_text(cpu)} on CPU"
    return f"{np.mean([runs[s]['score'] for s in seeds]):.4f} ({seeds_text(seeds)}{on_cpu})"


def comparison_cell(result: dict | None, adjusted: float | None) -> str:
    """Δ [95% CI] (seeds; test p; sign-flip p; Holm p), bold where a t-test over seeds survives Holm; "–" without a
    result."""
    if result is None:
        return "–"
    lo, hi = result["ci95"]
    test = "t" if result["test"] == "t" else "bootstrap"
    flip = f"; sign flip {p_text(result['sign_flip_p'])}" if "sign_flip_p" in result else ""
    text = (
        f"{result['difference']:+.4f} [{lo:+.4f}, {hi:+.4f}] ({seeds_text(result['seeds'])}; {test} "
        f"{p_text(result['p'])}{flip}; Holm {p_text(adjusted)})"
    )
    return f"**{text}**" if result["test"] == "t" and adjusted < 0.05 else text


def _statistics_caption(n_tests: int, resamples: int) -> str:
    return (
        "Comparisons A − B over the seeds both have: Δ [95% interval] (seeds; test p; sign-flip p; Holm p). With 2 "
        "or more shared seeds the interval is the t-interval of the per-seed differences, the test the two-sided "
        "paired t-test over seeds, and the sign-flip p that of the exact two-sided sign-flip test over the same seeds "
        "(no normality assumed; its smallest possible p with k seeds is 2/2^k, 0.0625 for 5 seeds); with 1 shared "
        'seed (marked "bootstrap") the interval and p come from the two-sided paired bootstrap over dev examples '
        f"({resamples:,} resamples), which holds the trained models fixed: it speaks about these trained models, not "
        "about the systems. "
        + (
            f"Holm's adjustment over the table's {n_tests} test{'s' if n_tests != 1 else ''}"
            if n_tests
            else "No test yet"
        )
        + " (on the t-test p); bold: Holm p < 0.05 on a t-test over seeds. "
        "Planned seeds " + PLANNED_SEEDS + '; a cell shows the seeds archived so far, "–" where none is.'
    )


def _size_label(size: int | None, runs_at_size: dict) -> str:
    if size is not None:
        return f"{size:,}"
    sizes = {r["train_size"] for runs in runs_at_size.values() for r in runs.values()} - {None}
    return f"all ({next(iter(sizes)):,})" if len(sizes) == 1 else "all"


def _paired(ra: Runs | None, rb: Runs | None, task: str, resamples: int, label: str, notes: list[str]) -> dict | None:
    """The comparison of two systems' archived runs (:func:`compare`); ``None`` when either has none, and also, with
    a note under the table, when they share no seed."""
    if not ra or not rb:
        return None
    r = compare(ra, rb, task, resamples)
    if r is None:
        notes.append(f"{label}: left out, no shared seed (A {seeds_text(sorted(ra))}, B {seeds_text(sorted(rb))})")
    return r


def curve_table(
    task: str, curves: Path, blimp: Path, glue: Path | None, resamples: int = RESAMPLES, preset: str = "cpu"
) -> tuple[str, dict, dict]:
    """The learning-curve table of one task: Markdown, the comparisons {(size, A, B): result} and their Holm p.
    ``preset``: which sweep's runs the archives hold ("cpu": the CPU sweeps, 2 epochs; "gpu": the GPU preset's
    study, every training set whole, 3 epochs), for the caption; ``glue`` None: no run is joined from the GLUE sweep."""
    title, metric, sizes = CURVE_TASKS[task]
    points, notes = curve_runs(task, curves, blimp, glue if preset == "cpu" else None)
    sizes = [z for z in sizes if z is not None or task == "cola" or points[z]]  # SST-2 "all": once run
    results = {}
    for size in sizes:
        for a, b, name in CURVE_COMPARISONS:
            label = f"{name} at {_size_label(size, points[size])}"
            r = _paired(points[size].get(a), points[size].get(b), task, resamples, label, notes)
            if r is not None:
                results[size, a, b] = r
    adjusted = holm_family(results, resamples)
    seeds = sorted({s for at in points.values() for runs in at.values() for s in runs})
    size_names = ", ".join(_size_label(s, points[s]) for s in sizes)
    cola_all = None in sizes and task == "cola"  # CoLA's whole training set: the BLiMP study's runs
    sources = "`bash experiments/learning_curve_sweep.sh`" + (
        ", the whole training set from the syntactic-generalisation sweep (`bash experiments/blimp_sweep.sh`)"
        if cola_all
        else ""
    )
    if preset == "gpu":
        sources = (
            "`bash experiments/device/study.sh` on a GPU (the GPU preset: 3 epochs, fp32, MiniLM weights rounded to "
            "fp16 for the transfer)"
            + (", the whole training set being the BLiMP study's runs" if cola_all else "")
            + '; seeds marked "on CPU" ran on the CPU with the same command, weights and parse file '
            "(`bash experiments/curve_cpu_fill.sh`"
            + (", for the BLiMP study's runs `blimp_cpu_fill.sh`" if cola_all else "")
            + "; one thread)"
        )
    elif task in GLUE_SWEEP_SIZE:
        sources += (
            f", {GLUE_SWEEP_SIZE[task]:,} from the full-data GLUE sweep (`bash experiments/glue_sweep.sh`; the same "
            "configuration)"
        )
    caption = (
        f"**{title} learning curve** ({metric}, full dev set). Training sentences: {size_names} (subsets drawn with "
        f"data seed 0, the same for every system; at least 200 optimisation steps). Runs: {sources}. Seeds archived: "
        f"{seeds_text(seeds) if seeds else 'none'}. Gated Syntax-BERT is compared with the plain encoder although "
        "their classification heads differ (its own reference, the SB head baseline, is not trained in the curves), "
        "so that column measures the head and the syntax together. Random-tree controls: SG-Net with every head "
        "re-attached at random (parser noise 1.0), gated Syntax-BERT with random masks. "
        + _statistics_caption(len(results), resamples)
        + " Made by `python experiments/curve_tables.py --table curves"
        + (" --preset gpu" if preset == "gpu" else "")
        + "`."
    )
    header = ["training sentences"] + [n for _, n in CURVE_SYSTEMS] + [n for _, _, n in CURVE_COMPARISONS]
    lines = [caption, "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for size in sizes:
        cells = [_size_label(size, points[size])] + [
            mean_cell(points[size].get(v), mark_cpu=preset == "gpu") for v, _ in CURVE_SYSTEMS
        ]
        for a, b, _ in CURVE_COMPARISONS:
            key = (size, a, b)
            cells.append(comparison_cell(results.get(key), adjusted.get(key)))
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += [""] + [f"* {n}" for n in notes]
    return "\n".join(lines), results, adjusted


def trees_table(trees: Path, resamples: int = RESAMPLES) -> tuple[str, dict, dict]:
    """The gold/parsed/random table: Markdown, the comparisons {(system, A, B): result} and their Holm p."""
    runs = trees_runs(trees)
    results, notes = {}, []
    for system, sources in TREES_SYSTEMS:
        variants = {**sources, "plain": TREES_PLAIN}
        for a, b, name in TREES_COMPARISONS:
            r = _paired(runs.get(variants[a]), runs.get(variants[b]), TREES_TASK, resamples, f"{system}, {name}", notes)
            if r is not None:
                results[system, a, b] = r
    adjusted = holm_family(results, resamples)
    seeds = sorted({s for by_seed in runs.values() for s in by_seed})
    caption = (
        f"**Gold vs parsed vs random trees** (SST-2 with the SST treebank's trees, dev accuracy on its 872 dev "
        f"sentences; {TREES_SIZE} training sentences drawn with data seed 0, the same for every system; at least 200 "
        "optimisation steps). Gold: the annotated constituency tree, dependencies from it by head rules; parsed: "
        "spaCy en_core_web_sm on the raw text; random: SG-Net on gold trees with every head re-attached at random "
        "(parser noise 1.0), gated Syntax-BERT with random masks. Runs: `bash experiments/sst_trees_sweep.sh`. Seeds "
        f"archived: {seeds_text(seeds) if seeds else 'none'}. Gated Syntax-BERT − plain compares different "
        "classification heads. "
        + _statistics_caption(len(results), resamples)
        + " Made by `python experiments/curve_tables.py --table trees`."
    )
    header = ["system", "plain encoder", "gold trees", "parsed trees", "random trees"] + [
        n for _, _, n in TREES_COMPARISONS
    ]
    lines = [caption, "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for system, sources in TREES_SYSTEMS:
        cells = [system, mean_cell(runs.get(TREES_PLAIN))] + [
            mean_cell(runs.get(sources[s])) for s in ("gold", "parsed", "random")
        ]
        for a, b, _ in TREES_COMPARISONS:
            key = (system, a, b)
            cells.append(comparison_cell(results.get(key), adjusted.get(key)))
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += [""] + [f"* {n}" for n in notes]
    return "\n".join(lines), results, adjusted


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", choices=("all", "curves", "trees"), default="all")
    parser.add_argument("--curves", default=str(RUNS / "learning_curves"), help="the learning curves' archive")
    parser.add_argument("--blimp", default=str(RUNS / "cola_blimp"), help="the BLiMP sweep's archive (CoLA all)")
    parser.add_argument("--glue", default=str(RUNS / "glue_sweep"), help="the GLUE sweep's archive (SST-2 10,000)")
    parser.add_argument("--trees", default=str(RUNS / "sst_trees"), help="the gold/parsed/random trees' archive")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples (one-seed comparisons)")
    parser.add_argument(
        "--preset",
        choices=("cpu", "gpu"),
        default="cpu",
        help="gpu: the GPU preset's study (experiments/device/study.sh; archives learning_curves_gpu_preset and "
        "cola_blimp_gpu_preset unless --curves / --blimp say otherwise; nothing joined from the GLUE sweep)",
    )
    args = parser.parse_args(argv)
    if args.preset == "gpu":
        args.curves = str(RUNS / "learning_curves_gpu_preset") if "--curves" not in (argv or sys.argv) else args.curves
        args.blimp = str(RUNS / "cola_blimp_gpu_preset") if "--blimp" not in (argv or sys.argv) else args.blimp
    out = []
    if args.table in ("all", "curves"):
        for task in CURVE_TASKS:
            out.append(
                curve_table(task, Path(args.curves), Path(args.blimp), Path(args.glue), args.resamples, args.preset)[0]
            )
    if args.table in ("all", "trees"):
        out.append(trees_table(Path(args.trees), args.resamples)[0])
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
