"""Markdown tables of the GLUE sweep on full training sets for docs/results.md, from the JSON that ``sgnet_glue.py summarize`` wrote.

Usage (from the repository root)::

    python experiments/sgnet_glue.py summarize --out runs/glue_sweep --json docs/results/glue_sweep.json
    python experiments/glue_tables.py            # prints the main table and the paired tests

The other comparison tables of docs/results.md (the first round, both Table 5 ablations, parser noise, the learning
curve, translation, SQuAD / RACE) are made by ``results_tables.py``.

The main table may come from several summaries (``--main A.json,B.json``): a sweep whose seeds were summarised at
different times, when the earlier run folders are gone (``runs/`` is not committed; ``sgnet_glue.py archive``
now keeps them). The seeds are then put together per variant: the mean, the standard deviation, the difference and
the paired t-test over seeds are recomputed from the per-seed scores (:func:`merge_summaries`); the paired
bootstrap needs every seed's predictions, so each summary's own bootstrap is shown with the seeds it covers.
A single summary is formatted as it is. A cell whose run has not finished shows "–"; the seeds
behind every cell are printed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

TASKS = [
    ("cola", "CoLA (Matthews)"),
    ("rte", "RTE (accuracy)"),
    ("stsb", "STS-B (Pearson)"),
    ("mrpc", "MRPC (F1)"),
    ("sst2", "SST-2 10k (accuracy)"),
]
MAIN = [
    ("baseline_default", "baseline"),
    ("sgnet_default", "SG-Net"),
    ("vanilla_layer_mean", "extra layer, no mask"),
    ("sbert_baseline", "SB head baseline"),
    ("sbert", "Syntax-BERT (paper)"),
    ("sbert_gate", "SB gated"),
    ("sbert_gate_random", "SB gated, random masks"),
]
PAIRS = [
    ("sgnet_default", "baseline_default", "SG-Net − baseline"),
    ("sgnet_default", "vanilla_layer_mean", "SG-Net − extra layer without mask"),
    ("vanilla_layer_mean", "baseline_default", "extra layer without mask − baseline"),
    ("sbert_gate", "sbert_baseline", "SB gated − SB head baseline"),
    ("sbert_gate", "sbert_gate_random", "SB gated − SB gated with random masks"),
    ("sbert", "sbert_baseline", "Syntax-BERT (paper) − SB head baseline"),
]


def merge_summaries(summaries: list[dict], replaced: list[str] | None = None) -> dict:
    """One summary of the main sweep from summaries of different seeds.

    Per task and variant the seeds are joined. A seed found in two summaries must have the same score (the same
    run summarised twice, or re-run: the runs are deterministic on one machine); a different score is an error,
    unless ``replaced`` is a list: then the later summary's run is used, a line saying so is appended to
    ``replaced``, and every bootstrap that paired the earlier run is dropped. ``mean`` and ``std`` (ddof 1) are
    recomputed over all seeds. Per comparison (variant ``a`` vs ``vs``): ``difference`` is the mean over the seeds
    both have of score(a) − score(vs) (what the bootstrap's difference is too: the metric averaged over seeds),
    ``t_test_p`` the paired t-test over those seeds (2 or more), and ``bootstrap`` lists each summary's own
    bootstrap (``seeds``, ``difference``, ``p``).
    """
    from syntaxformer.tasks.significance import paired_t_test

    tasks: dict = {}
    for summary in summaries:
        for task, t in summary["tasks"].items():
            out = tasks.setdefault(
                task, {"metric": t["metric"], "regression": t.get("regression", False), "by_seed": {}, "bootstraps": []}
            )
            if out["metric"] != t["metric"]:
                raise ValueError(f"{task}: the summaries measure {out['metric']} and {t['metric']}")
            scores = {}  # this summary's own runs, to tell later which of its bootstraps still pair the runs used
            for variant, v in t["variants"].items():
                by_seed = out["by_seed"].setdefault(variant, {})
                spreads = v.get("spread") or [None] * len(v["seeds"])
                for seed, score, spread in zip(v["seeds"], v["scores"], spreads):
                    if seed in by_seed and by_seed[seed][0] != score:
                        message = f"{task} / {variant} / seed {seed}: {by_seed[seed][0]:.4f} replaced by {score:.4f}"
                        if replaced is None:
                            raise ValueError(f"two different runs: {message}")
                        replaced.append(message)
                    by_seed[seed] = (score, spread)
                    scores[variant, seed] = score
            for variant, tests in t.get("tests", {}).items():
                for test in [tests] if isinstance(tests, dict) else tests:
                    out["bootstraps"].append(
                        (
                            variant,
                            test["vs"],
                            scores,
                            {"seeds": test["seeds"], "difference": test["difference"], "p": test["bootstrap_p"]},
                        )
                    )
    merged: dict = {"tasks": {}}
    for task, t in tasks.items():
        final = t["by_seed"]
        variants = {}
        for variant, by_seed in final.items():
            seeds = sorted(by_seed)
            scores = [by_seed[s][0] for s in seeds]
            variants[variant] = {
                "seeds": seeds,
                "scores": scores,
                "mean": float(np.mean(scores)),
                "std": float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0,
            }
            if all(by_seed[s][1] is not None for s in seeds):
                variants[variant]["spread"] = [by_seed[s][1] for s in seeds]
        boots: dict = {}
        for variant, ref, own, boot in t["bootstraps"]:
            kept = boots.setdefault((variant, ref), [])
            if all(own[v, s] == final[v][s][0] for v in (variant, ref) for s in boot["seeds"]):  # pairs runs used
                kept.append(boot)
        tests: dict = {}
        for (variant, ref), found in boots.items():
            common = sorted(set(final[variant]) & set(final[ref]))
            a = [final[ref][s][0] for s in common]
            b = [final[variant][s][0] for s in common]
            entry = {
                "vs": ref,
                "seeds": common,
                "difference": float(np.mean(np.subtract(b, a))),
                "bootstrap": sorted(found, key=lambda x: x["seeds"]),
            }
            if len(common) > 1:
                entry["t_test_p"] = paired_t_test(a, b).p_value
                entry["ci95"] = _t_interval(np.subtract(b, a))
            tests.setdefault(variant, []).append(entry)
        merged["tasks"][task] = {
            "metric": t["metric"],
            "regression": t["regression"],
            "variants": variants,
            "tests": tests,
        }
    return merged


def _t_interval(differences: np.ndarray, confidence: float = 0.95) -> list[float]:
    """The t-interval of the mean per-seed difference (the effect size's 95% CI over seeds)."""
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    half = stats.t.ppf(0.5 + confidence / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return [float(d.mean() - half), float(d.mean() + half)]


def holm_family(summary: dict) -> dict[tuple[str, str, str], float]:
    """Holm-adjusted p-values of every paired t-test over 3 or more seeds in the comparison table (one family: all
    of its comparisons on all tasks), keyed by (task, variant, reference)."""
    from syntaxformer.analysis.minimal_pairs import holm

    keys, ps = [], []
    for a, b, _ in PAIRS:
        for task, _ in TASKS:
            t = _test(summary["tasks"].get(task, {}).get("tests", {}), a, b)
            if t is not None and len(t["seeds"]) > 2 and t.get("t_test_p") is not None:
                keys.append((task, a, b))
                ps.append(t["t_test_p"])
    return dict(zip(keys, holm(ps))) if ps else {}


def _seeds(seeds: list[int]) -> str:
    """[1, 2] -> "s1–2", [3] -> "s3", [1, 3] -> "s1,3"."""
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"s{seeds[0]}–{seeds[-1]}"
    return "s" + ",".join(map(str, seeds))


def _p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _cell(v: dict | None, std: bool) -> str:
    if not v:
        return "–"
    text = f"{v['mean']:.4f}"
    n = len(v["seeds"])
    return f"{text} ± {v['std']:.4f} ({n} seeds)" if std and n > 1 else text


def _test(tests: dict, a: str, b: str) -> dict | None:
    return next((t for t in tests.get(a, []) if t["vs"] == b), None)


def main_tables(summary: dict) -> str:
    """The main table and the paired tests, from a summary as :func:`merge_summaries` makes it."""
    tasks = summary["tasks"]
    seeds = sorted({s for t in tasks.values() for v in t["variants"].values() for s in v["seeds"]})
    multi = len(seeds) > 1  # mean ± std where a variant has more than one seed
    lines = ["| task (dev metric) | " + " | ".join(name for _, name in MAIN) + " |", "|---" * (len(MAIN) + 1) + "|"]
    for task, title in TASKS:
        variants = tasks.get(task, {}).get("variants", {})
        # no bold here: the highest mean is not a test (the comparisons below are, corrected for multiplicity)
        cells = [_cell(variants.get(key), multi) for key, _ in MAIN]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| comparison | "
        + " | ".join(f"{title.split(' (')[0]} Δ [95% CI over seeds] (p)" for _, title in TASKS)
        + " |",
        "|---" * (len(TASKS) + 1) + "|",
    ]
    adjusted = holm_family(summary)
    for a, b, name in PAIRS:
        cells = []
        for task, _ in TASKS:
            t = _test(tasks.get(task, {}).get("tests", {}), a, b)
            if t is None:
                cells.append("–")
                continue
            n = len(t["seeds"])
            whole = [b for b in t["bootstrap"] if b["seeds"] == t["seeds"]]  # a bootstrap over every seed
            parts = [
                _p(whole[0]["p"])
                if whole
                else "bootstrap " + ", ".join(f"{_p(b['p'])} on {_seeds(b['seeds'])}" for b in t["bootstrap"])
            ]
            # a t-test over 2 seeds has 1 degree of freedom (two equal differences give p = 0): shown from 3 seeds
            if n > 2:
                parts.append(f"t {_p(t.get('t_test_p'))}, Holm {_p(adjusted[task, a, b])}")
            elif n > 1:
                parts.append(f"{n} seeds")
            ci = f" [{t['ci95'][0]:+.3f}, {t['ci95'][1]:+.3f}]" if n > 2 and "ci95" in t else ""
            text = f"{t['difference']:+.4f}{ci} (" + "; ".join(parts) + ")"
            # bold: the t-test over seeds survives Holm's correction across the whole table (the bootstrap over dev
            # examples, shown first, holds the trained models fixed, so it does not speak for the training procedure)
            significant = n > 2 and adjusted.get((task, a, b), 1.0) < 0.05
            cells.append(f"**{text}**" if significant else text)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# A run "collapsed" when its dev predictions are (nearly) constant: `spread` (from summarize) is the prediction std
# over the label std for regression (below 0.75 flagged) and the share of the most-predicted class for
# classification (0.99 or more flagged: one class for the whole dev set).
def collapsed_runs(summary: dict) -> str:
    lines = []
    for task, title in TASKS:
        t = summary["tasks"].get(task, {})
        regression = t.get("regression", False)
        for key, name in MAIN:
            v = t.get("variants", {}).get(key)
            if not v or "spread" not in v:
                continue
            for seed, score, spread in zip(v["seeds"], v["scores"], v["spread"]):
                if (spread < 0.75) if regression else (spread >= 0.99):
                    what = (
                        f"prediction std = {spread:.2f} × label std"
                        if regression
                        else f"{spread:.0%} of the dev set in one class"
                    )
                    lines.append(f"* {title.split(' (')[0]}, {name}, seed {seed}: {score:.4f} ({what})")
    return "\n".join(lines) or "* none"


def runs_below(summary: dict, variant: str = "sbert_gate", ref: str = "sbert_baseline") -> str:
    """Every seed in which ``variant`` scored below ``ref`` (same task, same seed), and how far: the question "is
    the gated model ever worse than its baseline after training?" answered run by run."""
    lines, n = [], 0
    for task, title in TASKS:
        v = summary["tasks"].get(task, {}).get("variants", {})
        if variant not in v or ref not in v:
            continue
        ref_scores = dict(zip(v[ref]["seeds"], v[ref]["scores"]))
        for seed, score in zip(v[variant]["seeds"], v[variant]["scores"]):
            if seed not in ref_scores:
                continue
            n += 1
            if score < ref_scores[seed]:
                lines.append(
                    f"* {title.split(' (')[0]}, seed {seed}: {score:.4f} vs {ref_scores[seed]:.4f} "
                    f"({score - ref_scores[seed]:+.4f})"
                )
    return f"{len(lines)} of {n} paired runs below:\n" + ("\n".join(lines) or "* none")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--main",
        default="docs/results/glue_sweep.json",
        help="the main sweep's summary JSON, or several, comma-separated, whose seeds are joined",
    )
    parser.add_argument(
        "--later-replaces",
        action="store_true",
        help="a seed run again with another score: use the later summary's run (listed) instead of stopping",
    )
    args = parser.parse_args()
    replaced: list[str] | None = [] if args.later_replaces else None
    summary = merge_summaries([json.loads(Path(f).read_text(encoding="utf-8")) for f in args.main.split(",")], replaced)
    print(main_tables(summary))
    print()
    print("Runs whose dev predictions (nearly) collapsed:\n")
    print(collapsed_runs(summary))
    print()
    print("Gated Syntax-BERT below the SB head baseline (same task, same seed), main table:", runs_below(summary))
    print()
    if replaced is not None:
        print("Seeds re-run with another score (the later run is used):\n")
        print("\n".join(f"* {line}" for line in replaced) or "* none")


if __name__ == "__main__":
    main()
