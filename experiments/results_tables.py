"""Corrected comparison tables of docs/results.md (every table that compares systems, except the full-data GLUE
table, which ``glue_tables.py`` makes, and the BLiMP tables, which ``blimp_tables.py`` makes), from the committed
summaries under docs/results/.

Usage (from the repository root)::

    python experiments/results_tables.py              # every table, each under its name
    python experiments/results_tables.py --table sgnet_first_round

Per cell: the difference (effect) A − B; where the seeds are 3 or more, its 95% t-interval over the per-seed
differences and the two-sided paired t-test over seeds; the paired bootstrap over dev examples that
``summarize`` stored (1,000 resamples; it holds the trained models fixed); and Holm's adjustment over the table's
family (the cells of that table). With 3 or more seeds the family is the t-tests (bold: Holm p < 0.05), as in the
full-data GLUE table; with one seed the family is the bootstrap (or McNemar) tests over examples, and nothing is
bold: one training run per system says nothing about training again. A bootstrap p of 0 (no resample crossed
zero) is counted as 1/resamples in Holm's adjustment.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
RESAMPLES = 1000

# (task, A, B, label): the comparisons of each seed-based table, in the order printed
SGNET_MAIN = [
    ("sst2", "sgnet", "baseline", "SST-2 (acc)"),
    ("cola", "sgnet", "baseline", "CoLA (MCC)"),
    ("rte", "sgnet", "baseline", "RTE (acc)"),
    ("mrpc", "sgnet", "baseline", "MRPC (F1)"),
    ("stsb", "sgnet", "baseline", "STS-B (Pearson)"),
]
SGNET_SST2 = [
    ("sst2", "baseline_mean", "baseline", "mean pooling − `cls` pooling (plain encoder)"),
    ("sst2", "sgnet_mean", "sgnet", "mean pooling − `cls` pooling (SG-Net)"),
    ("sst2", "sgnet_mean", "baseline_mean", "SG-Net, mean pooling − baseline_mean"),
    ("sst2", "sgnet_mean_copy", "baseline_mean", "+ SG layer copied from the encoder's last layer − baseline_mean"),
    ("sst2", "sgnet_mean_lr", "baseline_mean", "+ new layers at lr 3e-4 − baseline_mean"),
    ("sst2", "vanilla_layer_mean", "baseline_mean", "extra layer without the mask − baseline_mean"),
    ("sst2", "sgnet_mean", "vanilla_layer_mean", "SG-Net, mean pooling − extra layer without the mask"),
]
SBERT_MAIN = [
    (task, variant, "sbert_baseline", f"{title}: {name}")
    for variant, name in (("sbert", "Syntax-BERT"), ("sbert_lisa", "Syntax-BERT + LISA"))
    for task, title in (
        ("sst5", "SST-1 (acc)"),
        ("sst2_trees", "SST-2 (acc)"),
        ("cola", "CoLA (MCC)"),
        ("rte", "RTE (acc)"),
        ("stsb", "STS-B (Pearson)"),
    )
]
TABLE5_UNGATED = [
    ("sst2_trees", "sbert", "sbert_baseline", "Syntax-BERT − baseline"),
    ("sst2_trees", "sbert_sum", "sbert_baseline", "w/o topical attention (`sbert_sum`) − baseline"),
    ("sst2_trees", "sbert_sum", "sbert", "w/o topical attention (`sbert_sum`) − Syntax-BERT"),
    ("sst2_trees", "sbert_random", "sbert_baseline", "random masks (`sbert_random`) − baseline"),
    ("sst2_trees", "sbert_random", "sbert", "random masks (`sbert_random`) − Syntax-BERT"),
    ("sst2_trees", "sbert_full", "sbert_baseline", "+ vanilla candidate (`sbert_full`) − baseline"),
    ("sst2_trees", "sbert_full", "sbert", "+ vanilla candidate (`sbert_full`) − Syntax-BERT"),
]
TABLE5_GATED = [
    ("sst2_trees", "sbert_gate", "sbert_baseline", "gated Syntax-BERT (whole) − SB head baseline"),
    ("sst2_trees", "sbert_gate_sum", "sbert_gate", "w/o topical attention (sum) − whole gated"),
    ("sst2_trees", "sbert_gate_nodep", "sbert_gate", "w/o dependency tree − whole gated"),
    ("sst2_trees", "sbert_gate_noconst", "sbert_gate", "w/o constituency tree − whole gated"),
    ("sst2_trees", "sbert_gate_noparent", "sbert_gate", "w/o parent − whole gated"),
    ("sst2_trees", "sbert_gate_nochild", "sbert_gate", "w/o child − whole gated"),
    ("sst2_trees", "sbert_gate_nosibling", "sbert_gate", "w/o sibling − whole gated"),
    ("sst2_trees", "sbert_gate_nopairwise", "sbert_gate", "w/o pairwise − whole gated"),
    ("sst2_trees", "sbert_gate_random", "sbert_gate", "random masks (control) − whole gated"),
    ("sst2_trees", "sbert", "sbert_baseline", "Syntax-BERT, paper (no gate) − SB head baseline"),
]
SEED_TABLES = {
    "sgnet_first_round": ("sgnet_glue.json", SGNET_MAIN),
    "sgnet_first_round_sst2": ("sgnet_glue.json", SGNET_SST2),
    "syntax_bert_first_round": ("syntax_bert.json", SBERT_MAIN),
    "table5_ungated": ("syntax_bert.json", TABLE5_UNGATED),
    "table5_gated": ("syntax_bert_gated_ablations.json", TABLE5_GATED),
}


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment (the library's, :func:`syntaxformer.analysis.minimal_pairs.holm`)."""
    from syntaxformer.analysis.minimal_pairs import holm as library_holm

    return library_holm(p_values) if p_values else []


def _for_holm(p: float) -> float:
    """A bootstrap p of 0 means "below 1/resamples": counted as that in the correction."""
    return max(p, 1 / RESAMPLES)


def p_text(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _tests(summary_task: dict, a: str) -> list[dict]:
    found = summary_task.get("tests", {}).get(a, [])
    return [found] if isinstance(found, dict) else found  # the first round's JSON has one test per variant


def bootstrap(summary_task: dict, a: str, b: str) -> dict | None:
    """``summarize``'s paired bootstrap of A − B (looked up either way round), or None."""
    for t in _tests(summary_task, a):
        if t["vs"] == b:
            return {"difference": t["difference"], "p": t["bootstrap_p"], "ci95": t.get("bootstrap_ci95")}
    for t in _tests(summary_task, b):
        if t["vs"] == a:
            ci = t.get("bootstrap_ci95")
            return {"difference": -t["difference"], "p": t["bootstrap_p"], "ci95": [-ci[1], -ci[0]] if ci else None}
    return None


def seed_comparison(summary: dict, task: str, a: str, b: str) -> dict:
    """A − B over the seeds both have: mean difference, 95% t-interval and paired t-test (3 or more seeds)."""
    from scipy import stats

    from syntaxformer.tasks.significance import paired_t_test

    t = summary["tasks"][task]
    va, vb = t["variants"][a], t["variants"][b]
    sa, sb = dict(zip(va["seeds"], va["scores"])), dict(zip(vb["seeds"], vb["scores"]))
    seeds = sorted(set(sa) & set(sb))
    d = np.array([sa[s] - sb[s] for s in seeds])
    out = {"seeds": seeds, "a": va, "b": vb, "difference": float(d.mean()), "bootstrap": bootstrap(t, a, b)}
    if len(seeds) > 2:
        out["t_p"] = paired_t_test([sb[s] for s in seeds], [sa[s] for s in seeds]).p_value
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        out["ci95"] = [float(d.mean() - half), float(d.mean() + half)]
    return out


def seed_table(summary: dict, rows: list[tuple[str, str, str, str]]) -> str:
    """A table of comparisons over seeds; Holm over its t-tests; bold where the t-test survives."""
    cells = [seed_comparison(summary, task, a, b) for task, a, b, _ in rows]
    tested = [i for i, c in enumerate(cells) if "t_p" in c]
    adjusted = dict(zip(tested, holm([cells[i]["t_p"] for i in tested])))
    lines = [
        (
            "| comparison (A − B) | A mean ± std | B mean ± std | seeds | Δ [95% CI over seeds] | bootstrap p (examples)"
            " | t-test p (seeds) | Holm p |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, ((_, _, _, name), c) in enumerate(zip(rows, cells)):
        delta = f"{c['difference']:+.4f}"
        if "ci95" in c:
            delta += f" [{c['ci95'][0]:+.4f}, {c['ci95'][1]:+.4f}]"
        holm_p = adjusted.get(i)
        if holm_p is not None and holm_p < 0.05:
            delta, holm_text = f"**{delta}**", f"**{p_text(holm_p)}**"
        else:
            holm_text = p_text(holm_p)
        boot = c["bootstrap"]
        lines.append(
            f"| {name} | {c['a']['mean']:.4f} ± {c['a']['std']:.4f} | {c['b']['mean']:.4f} ± {c['b']['std']:.4f} | "
            f"{len(c['seeds'])} | {delta} | {p_text(boot['p']) if boot else '–'} | {p_text(c.get('t_p'))} | "
            f"{holm_text} |"
        )
    return "\n".join(lines)


# --- one-seed tables: tests over examples only --------------------------------------------------------------------


def example_table(rows: list[tuple[str, float, dict | None]], header: str, unit: str = "{:+.4f}") -> str:
    """Rows (name, score, bootstrap of this row − reference or None); Holm over the rows' bootstrap p; no bold."""
    tested = [i for i, (_, _, b) in enumerate(rows) if b is not None]
    adjusted = dict(zip(tested, holm([_for_holm(rows[i][2]["p"]) for i in tested])))
    lines = [f"| {header} | score | Δ [95% bootstrap CI] | bootstrap p | Holm p |", "|---|---|---|---|---|"]
    for i, (name, score, b) in enumerate(rows):
        if b is None:
            lines.append(f"| {name} | {score:.4f} | — | | |")
            continue
        ci = f" [{unit.format(b['ci95'][0])}, {unit.format(b['ci95'][1])}]" if b.get("ci95") else ""
        lines.append(
            f"| {name} | {score:.4f} | {unit.format(b['difference'])}{ci} | {p_text(b['p'])} | {p_text(adjusted[i])} |"
        )
    return "\n".join(lines)


def sst2_parser_noise(summary: dict) -> str:
    t = summary["tasks"]["sst2"]
    rows = []
    for level, name in (("0", "0%"), ("0.2", "20%"), ("0.4", "40%"), ("0.6", "60%"), ("0.8", "80%"), ("1", "100%")):
        v = f"sgnet_mean_noise{level}"
        rows.append(
            (name, t["variants"][v]["scores"][0], None if level == "0" else bootstrap(t, v, "sgnet_mean_noise0"))
        )
    return example_table(rows, "corrupted heads (Δ vs 0%)")


def stsb_parser_noise(summary: dict) -> str:
    t = summary["tasks"]["stsb"]
    rows = []
    for level, name in (("0", "0"), ("0.5", "0.5"), ("1", "1.0")):
        v = f"sgnet_default_noise{level}"
        rows.append(
            (name, t["variants"][v]["scores"][0], None if level == "0" else bootstrap(t, v, "sgnet_default_noise0"))
        )
    return example_table(rows, "heads re-attached (Δ vs 0)")


def learning_curve(curve: dict, sweep: dict) -> str:
    """The SST-2 learning curve (seed 1): SG-Net − baseline and SB gated − SB head baseline per size; the 10,000
    point is the full-data sweep's seed-1 runs (their bootstrap in glue_sweep.json covers seed 1 only)."""
    t, big = curve["tasks"]["sst2"], sweep["tasks"]["sst2"]
    cells = []  # (size label, [(base, sys, bootstrap) for the two comparisons])
    for n, label in (("500", "500"), ("2000", "2,000"), ("8000", "8,000")):
        v = t["variants"]
        cells.append(
            (
                label,
                [
                    (v[f"{b}_n{n}"]["scores"][0], v[f"{a}_n{n}"]["scores"][0], bootstrap(t, f"{a}_n{n}", f"{b}_n{n}"))
                    for a, b in (("sgnet_default", "baseline_default"), ("sbert_gate", "sbert_baseline"))
                ],
            )
        )
    v = big["variants"]

    def seed1(variant: str) -> float:
        return v[variant]["scores"][v[variant]["seeds"].index(1)]

    row = []
    for a, b in (("sgnet_default", "baseline_default"), ("sbert_gate", "sbert_baseline")):
        boot = next(x for x in _tests(big, a) if x["vs"] == b and x["seeds"] == [1])
        row.append((seed1(b), seed1(a), {"difference": boot["difference"], "p": boot["bootstrap_p"]}))
    cells.append(("10,000 (main table, seed 1)", row))
    ps = [_for_holm(c[2]["p"]) for _, r in cells for c in r]
    adjusted = iter(holm(ps))
    lines = [
        (
            "| training sentences | baseline | SG-Net | Δ (bootstrap p; Holm p) | SB head baseline | SB gated "
            "| Δ (bootstrap p; Holm p) |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for label, r in cells:
        parts = []
        for base, system, boot in r:
            parts += [
                f"{base:.4f}",
                f"{system:.4f}",
                f"{boot['difference']:+.4f} ({p_text(boot['p'])}; {p_text(next(adjusted))})",
            ]
        lines.append(f"| {label} | " + " | ".join(parts) + " |")
    return "\n".join(lines).replace("-0.", "−0.")


def translation(summary: dict) -> str:
    """The translation table with Holm's adjustment over its 19 one-sided bootstrap tests (test2016 and
    newstest2013 together: one family)."""
    rows = []
    for fraction in sorted(summary["fractions"], key=float):
        for arm in sorted(summary["fractions"][fraction]):
            for run in summary["fractions"][fraction][arm]:
                rows.append((fraction, arm, run))
    ps = [
        _for_holm(run["vs_baseline"][s]["p"])
        for _, _, run in rows
        for s in ("test2016", "newstest2013")
        if s in run.get("vs_baseline", {})
    ]
    adjusted = iter(holm(ps))
    lines = [
        (
            "| fraction | arm | seed | params | train s | best step | test2016 BLEU | Δ vs baseline [95% CI] | p (bootstrap)"
            " | Holm p | newstest2013 BLEU | Δ [95% CI] | p | Holm p |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fraction, arm, run in rows:
        cells = [
            f"{float(fraction):g}",
            arm,
            str(run["seed"]),
            f"{run['parameters'] / 1e6:.2f}M",
            f"{run['train_seconds']:.0f}",
            str(run["best_step"]),
        ]
        for s in ("test2016", "newstest2013"):
            bleu = run["bleu"].get(s)
            cells.append(f"{bleu:.2f}" if bleu is not None else "")
            test = run.get("vs_baseline", {}).get(s)
            if test is None:
                cells += ["", "", ""]
            else:
                ci = test["ci95"]
                cells += [
                    f"{test['delta']:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]",
                    f"{test['p']:.3f}",
                    p_text(next(adjusted)),
                ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def squad(summary: dict) -> str:
    """The threshold-free SQuAD comparisons: span F1 bootstrap and span-EM McNemar (pooled over the seeds each
    has) for every comparison of the section; Holm over all 10 tests (one family); no bold."""
    t = summary["tasks"]["squad"]
    comparisons = [
        ("SG-Net − baseline", t["tests"]["sgnet"]),
        ("SG-Net + verifier − baseline", t["tests"]["sgnet_verifier"]),
        ("control (extra layer, no mask) − baseline, seed 2", t["tests"]["vanilla_layer"]),
        ("SG-Net − control, seed 2", t["pairs"]["sgnet vs vanilla_layer"]),
        ("SG-Net + verifier − SG-Net", t["pairs"]["sgnet_verifier vs sgnet"]),
    ]
    ps = []
    for _, c in comparisons:
        ps += [_for_holm(c["bootstrap_span_f1"]["p_two_sided"]), c["mcnemar_span_em"]["pooled"]["p_value"]]
    adjusted = holm(ps)
    lines = [
        (
            "| comparison | seeds | Δ span F1 [95% bootstrap CI] | bootstrap p | Holm p | Δ span EM (points) "
            "| McNemar p (discordant) | Holm p |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, (name, c) in enumerate(comparisons):
        f1, em = c["bootstrap_span_f1"], c["mcnemar_span_em"]["pooled"]
        h1, h2 = adjusted[2 * i], adjusted[2 * i + 1]
        # no bold: both tests resample questions with the trained models fixed, and 1-2 seeds give no test across
        # training runs
        d1 = f"{f1['difference']:+.2f} [{f1['ci95'][0]:+.2f}, {f1['ci95'][1]:+.2f}]"
        d2 = f"{100 * em['difference']:+.2f}"
        h1t, h2t = p_text(h1), p_text(h2)
        discordant = f"{em['details']['only_a_correct']} vs {em['details']['only_b_correct']}"
        seeds = ", ".join(map(str, f1["seeds"]))
        lines.append(
            f"| {name} | {seeds} | {d1} | {p_text(f1['p_two_sided'])} | {h1t} | {d2} | "
            f"{p_text(em['p_value'])} ({discordant}) | {h2t} |"
        )
    return "\n".join(lines)


def race(summary: dict) -> str:
    """RACE, seed 1: one comparison, two tests (McNemar, bootstrap); Holm over the two."""
    t = summary["tasks"]["race"]["tests"]["sgnet"]
    m, b = t["mcnemar"]["pooled"], t["bootstrap_acc"]
    hm, hb = holm([m["p_value"], _for_holm(b["p_two_sided"])])
    return (
        "| comparison (seed 1) | Δ accuracy [95% bootstrap CI] | bootstrap p | Holm p | McNemar p (discordant) "
        "| Holm p |\n|---|---|---|---|---|---|\n"
        f"| SG-Net − baseline | {b['difference']:+.2f} [{b['ci95'][0]:+.2f}, {b['ci95'][1]:+.2f}] | "
        f"{p_text(b['p_two_sided'])} | {p_text(hb)} | {p_text(m['p_value'])} "
        f"({m['details']['only_a_correct']} vs {m['details']['only_b_correct']}) | {p_text(hm)} |"
    )


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def tables() -> dict[str, str]:
    """Every table, by name, from the committed summaries."""
    out = {name: seed_table(_load(f), rows) for name, (f, rows) in SEED_TABLES.items()}
    out["sst2_parser_noise"] = sst2_parser_noise(_load("sgnet_glue.json"))
    out["stsb_parser_noise"] = stsb_parser_noise(_load("stsb_parser_noise.json"))
    out["sst2_learning_curve"] = learning_curve(_load("sst2_learning_curve.json"), _load("glue_sweep.json"))
    out["translation"] = translation(_load("translation.json"))
    out["squad_threshold_free"] = squad(_load("reading_comprehension.json"))
    out["race"] = race(_load("reading_comprehension.json"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", help="print only this table (default: all)")
    args = parser.parse_args()
    for name, text in tables().items():
        if args.table in (None, name):
            print(f"{name}:\n\n{text}\n")


if __name__ == "__main__":
    main()
