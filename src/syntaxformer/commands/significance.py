"""``syntaxformer significance``: is system B's dev score different from system A's? From their run folders, paired
by seed (:func:`syntaxformer.analysis.compare_runs.compare_runs`); with ``--suite``, their minimal-pair results
(:func:`syntaxformer.analysis.minimal_pairs.compare_minimal_pairs`). ``docs/analysis.md``, ``docs/minimal_pairs.md``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from syntaxformer.analysis.compare_runs import compare_runs, expand_run_dirs, run_seed
from syntaxformer.analysis.minimal_pairs import compare_minimal_pairs, paired_suite_records
from syntaxformer.commands.arguments import positive
from syntaxformer.errors import ConfigError
from syntaxformer.utils import check_output, write_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="RUN_A RUN_B: one run of each system (or, with --vs, the runs of system A)",
    )
    parser.add_argument(
        "--a",
        dest="runs_a",
        nargs="+",
        metavar="RUN_A",
        help="run folders or quoted glob patterns of system A (one per seed)",
    )
    parser.add_argument(
        "--b",
        "--vs",
        dest="runs_b",
        nargs="+",
        metavar="RUN_B",
        help="run folders or quoted glob patterns of system B, paired with A's by seed",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        help="bootstrap resamples (1000; --suite: 10000); BLEU: resamples or randomisation trials",
    )
    parser.add_argument(
        "--bleu-test",
        choices=("bs", "ar"),
        default="bs",
        help="translation runs: sacreBLEU's paired bootstrap (bs) or approximate randomisation (ar)",
    )
    parser.add_argument(
        "--suite",
        metavar="NAME",
        help="compare minimal-pair results (suites/NAME/pairs.jsonl in each run) instead of dev scores",
    )
    parser.add_argument(
        "--level",
        choices=("overall", "field", "phenomenon", "paradigm"),
        default="field",
        help="--suite: the groups compared, one Holm family (field)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the --json file if it exists")
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the full result as JSON to FILE (no FILE: print it instead of the table)",
    )


def _systems(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    if args.runs_a or args.runs_b:
        a = list(args.runs_a or []) or list(args.runs)
        if args.runs_a and args.runs:
            raise ConfigError(f"give the runs of system A either before --b or after --a, not both: {args.runs}")
        if not a or not args.runs_b:
            raise ConfigError("give the runs of both systems: --a RUN... --b RUN...")
        return a, list(args.runs_b)
    if len(args.runs) != 2:
        raise ConfigError(f"give two run folders (RUN_A RUN_B) or --a RUN... --b RUN..., got {len(args.runs)}")
    return [args.runs[0]], [args.runs[1]]


def _p(test: dict) -> str:
    n = test["details"].get("n_resamples")
    return f"< {1 / n:.3f}" if n and test["p_value"] < 1 / n else f"{test['p_value']:.3f}"


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_significance(r: dict) -> str:
    """The text table of a :func:`~syntaxformer.analysis.compare_runs.compare_runs` result."""
    lines = [f"{r['task']}: {r['metric']}, B − A over {len(r['a'])} pair(s) of runs"]
    if r.get("pairing"):
        lines.append(r["pairing"])
    for a, b, seed, e in zip(r["a"], r["b"], r["seeds"], r["per_seed"]):
        if a is None or b is None:  # a run without its headline score (the per-example tests still apply)
            line = f"seed {seed}: A {_score(a)}  B {_score(b)}"
        else:
            line = f"seed {seed}: A {a:.4f}  B {b:.4f}  B − A {b - a:+.4f}"
        for key, name in (("bootstrap", "bootstrap"), ("bleu", e.get("bleu", {}).get("test", ""))):
            if key in e:
                lo, hi = e[key]["details"]["ci95"]
                line += f"  95% CI [{lo:+.4f}, {hi:+.4f}]  {name.replace('_', ' ')} p {_p(e[key])}"
        if "mcnemar" in e:
            line += f"  exact McNemar p {e['mcnemar']['p_value']:.3f}"
        lines.append(line)
    if "t_test" in r:
        t = r["t_test"]
        lines.append(
            f"paired t-test over seeds: mean B − A {t['difference']:+.4f}, t {t['details']['t']:.3f}, "
            f"p {t['p_value']:.3f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    positive(resamples=args.resamples)
    runs_a, runs_b = _systems(args)
    if args.json not in (None, "-"):
        check_output(args.json, overwrite=args.overwrite, option="--json")  # before anything is computed
    if args.suite:
        return _run_suite(args, runs_a, runs_b)
    r = compare_runs(runs_a, runs_b, n_resamples=args.resamples or 1000, bleu_test=args.bleu_test)
    return _report(args, r, format_significance)


def _report(args: argparse.Namespace, result: dict, table: Any) -> int:
    """Print ``result`` as JSON (``--json`` alone) or as ``table(result)``, and write it to ``--json FILE``."""
    if args.json == "-":
        print(json.dumps(result, indent=2))
        return 0
    if args.json:
        write_json(args.json, result)
    print(table(result))
    return 0


def _by_seed(runs: list[str]) -> list[str]:
    """Run folders (globs expanded) ordered by the seed their ``run.json`` records (else as given)."""

    def seed(d: str) -> float:
        try:
            return float(run_seed(d))
        except (ValueError, TypeError):  # no seed recorded (None) or not a number
            return float("inf")

    return sorted(expand_run_dirs(runs), key=seed)


def format_suite_comparison(r: dict) -> str:
    """The text table of a :func:`~syntaxformer.analysis.minimal_pairs.compare_minimal_pairs` result."""
    how = (
        "t-interval, paired t-test and exact sign-flip test over seeds"
        if r["seeds"] >= 2
        else f"one pair of runs: bootstrap over pairs ({r['resamples']} resamples), for these trained models only"
    )
    lines = [f"{r['suite']}: accuracy B − A per {r['level']}, {how}; Holm over {len(r['groups'])} group(s)"]
    for name, g in r["groups"].items():
        test = g.get("seed_level") or {"ci95": g["bootstrap"]["ci95"]}
        lo, hi = test["ci95"]
        line = (
            f"{name:<40} n {g['n']:>6}  A {g['a']:.4f}  B {g['b']:.4f}  B − A {g['difference']:+.4f}  "
            f"95% CI [{lo:+.4f}, {hi:+.4f}]  "
        )
        if "seed_level" in g:
            line += f"t-test p {test['t_p']:.4f}  sign-flip p {test['sign_flip_p']:.4f}  Holm p {g['p_holm']:.4f}"
        else:
            line += (
                f"p {g['bootstrap']['p_value']:.4f}  Holm p {g['p_holm']:.4f}  McNemar p {g['mcnemar']['p_value']:.3f}"
            )
        lines.append(line)
    return "\n".join(lines)


def _run_suite(args: argparse.Namespace, runs_a: list[str], runs_b: list[str]) -> int:
    paired = paired_suite_records(_by_seed(runs_a), _by_seed(runs_b), args.suite)
    r = compare_minimal_pairs(paired["a"], paired["b"], level=args.level, resamples=args.resamples or 10000)
    result = {"suite": args.suite, "a": paired["runs_a"], "b": paired["runs_b"], "pairing": paired["pairing"], **r}
    return _report(args, result, lambda r: f"{r['pairing']}\n{format_suite_comparison(r)}")
