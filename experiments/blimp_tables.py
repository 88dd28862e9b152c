"""Markdown tables of the BLiMP sweep (experiments/blimp_sweep.sh) for docs/results.md, from the committed archive.

Usage (from the repository root)::

    python experiments/blimp_tables.py [--archive docs/results/runs/cola_blimp] [--level field] [--resamples 10000]

Prints (1) CoLA dev MCC and BLiMP accuracy per field for every system, mean over the seeds archived so far (the
seeds are listed per row), and (2) the paired comparisons of the questions per field. Only seeds that both systems
of a comparison have are paired. With two or more: the 95% t-interval of the mean per-seed difference, the paired
t-test and the exact sign-flip test over seeds (``compare_minimal_pairs``, seed level); with one: the bootstrap over
pairs, which speaks about those two trained models only (marked "these models"). Holm's correction runs across the
table's whole family (every comparison x field) on the t-test p (one seed: the bootstrap p).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

SYSTEMS = [
    ("baseline_default", "plain encoder"),
    ("sgnet_default", "SG-Net"),
    ("vanilla_layer_mean", "extra layer, no mask"),
    ("sgnet_default_noise1", "SG-Net, random trees"),
    ("sbert_baseline", "SB head baseline"),
    ("sbert_gate", "SB gated"),
    ("sbert_gate_random", "SB gated, random trees"),
]
COMPARISONS = [
    ("sgnet_default", "baseline_default", "SG-Net − plain"),
    ("sgnet_default", "vanilla_layer_mean", "SG-Net − extra layer without mask"),
    ("sgnet_default", "sgnet_default_noise1", "SG-Net − SG-Net with random trees"),
    ("sbert_gate", "sbert_baseline", "SB gated − SB head baseline"),
    ("sbert_gate", "sbert_gate_random", "SB gated − SB gated with random trees"),
]


def load_archive(archive: Path) -> dict[str, dict[int, dict]]:
    """variant -> seed -> {"dev": CoLA MCC, "records": per-pair records} for every archived run with a BLiMP result."""
    from syntaxformer.analysis.minimal_pairs import suite_records_of

    runs: dict[str, dict[int, dict]] = {}
    for report in sorted(archive.glob("cola/*/seed*/suites/blimp/report.json")):
        run = report.parents[2]
        seed = int(run.name.removeprefix("seed"))
        metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
        runs.setdefault(run.parent.name, {})[seed] = {
            "dev": metrics["dev"]["matthews_correlation"],
            "records": suite_records_of(run, "blimp"),
        }
    return runs


def _seeds(seeds: list[int]) -> str:
    return ",".join(str(s) for s in seeds)


def accuracy_table(runs: dict, fields: list[str]) -> str:
    from syntaxformer.analysis.minimal_pairs import minimal_pair_report

    lines = [
        "| system | seeds | CoLA dev MCC | BLiMP all | " + " | ".join(fields) + " |",
        "|---" * (len(fields) + 4) + "|",
    ]
    for key, name in SYSTEMS:
        if key not in runs:
            continue
        seeds = sorted(runs[key])
        reports = [minimal_pair_report(runs[key][s]["records"]) for s in seeds]
        overall = [r["overall"]["accuracy"] for r in reports]
        per_field = {f: [r["field"][f]["accuracy"] for r in reports] for f in fields}
        dev = np.mean([runs[key][s]["dev"] for s in seeds])
        cells = [f"{np.mean(per_field[f]):.4f}" for f in fields]
        lines.append(f"| {name} | {_seeds(seeds)} | {dev:.4f} | {np.mean(overall):.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comparison_table(runs: dict, level: str, resamples: int) -> tuple[str, dict]:
    results, adjusted = _comparisons(runs, level, resamples)  # Holm over the whole table: every comparison x group
    groups = sorted({g for _, r in results.values() for g in r["groups"]})
    lines = ["| comparison (B − A) | seeds | " + " | ".join(groups) + " |", "|---" * (len(groups) + 2) + "|"]
    for name, (seeds, r) in results.items():
        cells = []
        for g in groups:
            e = r["groups"].get(g)
            if e is None:
                cells.append("–")
                continue
            cells.append(_cell(e, adjusted[name, g], 4))
        lines.append(f"| {name} | {_seeds(seeds)} | " + " | ".join(cells) + " |")
    return "\n".join(lines), {"adjusted": {f"{n} / {g}": p for (n, g), p in adjusted.items()}}


def _cell(e: dict, adjusted: float, digits: int) -> str:
    """Δ [95% interval] (tests; Holm), bold where Holm p < 0.05 on a test over seeds."""
    if "seed_level" in e:
        lo, hi = e["seed_level"]["ci95"]
        tests = f"t {e['seed_level']['t_p']:.3f}, sign flip {e['seed_level']['sign_flip_p']:.3f}"
    else:
        lo, hi = e["bootstrap"]["ci95"]
        tests = f"these models: bootstrap {e['bootstrap']['p_value']:.4f}"
    text = f"{e['difference']:+.4f} [{lo:+.3f}, {hi:+.3f}] ({tests}, Holm {adjusted:.{digits}f})"
    return f"**{text}**" if adjusted < 0.05 and "seed_level" in e else text


def _p(e: dict) -> float:
    return e["t_test"]["p_value"] if "t_test" in e else e["bootstrap"]["p_value"]


def _comparisons(runs: dict, level: str, resamples: int) -> tuple[dict, dict]:
    """{name: (seeds, compare_minimal_pairs result)} of every comparison whose systems share a seed, and Holm's
    adjustment over the whole family (every comparison x group) keyed (name, group)."""
    from syntaxformer.analysis.minimal_pairs import compare_minimal_pairs, holm

    results = {}
    for a, b, name in COMPARISONS:
        seeds = sorted(set(runs.get(a, {})) & set(runs.get(b, {})))
        if seeds:
            results[name] = (
                seeds,
                compare_minimal_pairs(
                    [runs[b][s]["records"] for s in seeds],
                    [runs[a][s]["records"] for s in seeds],
                    level=level,
                    resamples=resamples,
                ),
            )
    keys = [(n, g) for n, (_, r) in results.items() for g in r["groups"]]
    return results, dict(zip(keys, holm([_p(results[n][1]["groups"][g]) for n, g in keys])))


def phenomenon_tables(runs: dict, resamples: int) -> str:
    """The per-phenomenon view, transposed (a row per phenomenon, in field order): (1) accuracy of every system,
    mean over its seeds; (2) each comparison's difference with its 95% interval, its tests and Holm p (as the field
    table; Holm over every comparison x phenomenon)."""
    from syntaxformer.analysis.minimal_pairs import minimal_pair_report

    fields_of: dict[str, set[str]] = {}  # a phenomenon may span fields (npi_licensing: semantics and syntax_semantics)
    for v in runs.values():
        for s in v.values():
            for r in s["records"]:
                fields_of.setdefault(r["phenomenon"], set()).add(r["field"])
    field_of = {ph: ", ".join(sorted(f)) for ph, f in fields_of.items()}
    order = sorted(field_of, key=lambda ph: (field_of[ph], ph))
    systems = [(k, n) for k, n in SYSTEMS if k in runs]
    acc = {k: [minimal_pair_report(runs[k][s]["records"])["phenomenon"] for s in sorted(runs[k])] for k, _ in systems}
    lines = [
        "| phenomenon | field | pairs | " + " | ".join(f"{n} ({_seeds(sorted(runs[k]))})" for k, n in systems) + " |",
        "|---" * (len(systems) + 3) + "|",
    ]
    for ph in order:
        pairs = next(iter(acc.values()))[0][ph]["n"]
        cells = [f"{np.mean([rep[ph]['accuracy'] for rep in acc[k]]):.4f}" for k, _ in systems]
        lines.append(f"| {ph} | {field_of[ph]} | {pairs} | " + " | ".join(cells) + " |")
    results, adjusted = _comparisons(runs, "phenomenon", resamples)
    lines += ["", "| phenomenon | " + " | ".join(f"{n} ({_seeds(r[0])})" for n, r in results.items()) + " |"]
    lines.append("|---" * (len(results) + 1) + "|")
    for ph in order:
        cells = []
        for name, (_, r) in results.items():
            e = r["groups"].get(ph)
            if e is None:
                cells.append("–")
                continue
            cells.append(_cell(e, adjusted[name, ph], 3))
        lines.append(f"| {ph} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", default="docs/results/runs/cola_blimp")
    parser.add_argument("--level", default="field", choices=("overall", "field", "phenomenon", "paradigm"))
    parser.add_argument("--resamples", type=int, default=10000)
    args = parser.parse_args()
    runs = load_archive(Path(args.archive))
    if args.level == "phenomenon":
        print(phenomenon_tables(runs, args.resamples))
        return
    fields = sorted({r["field"] for v in runs.values() for s in v.values() for r in s["records"]})
    print(accuracy_table(runs, fields))
    print()
    table, _ = comparison_table(runs, args.level, args.resamples)
    print(table)


if __name__ == "__main__":
    main()
