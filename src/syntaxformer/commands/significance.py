"""``syntaxformer significance``: is system B's dev score different from system A's? From their run folders.

Example::

    syntaxformer significance runs/sst2/baseline/seed1 runs/sst2/baseline/seed2 \\
        --vs runs/sst2/sgnet/seed1 runs/sst2/sgnet/seed2 [--json]

Per seed: the two-sided paired bootstrap of the headline metric over dev examples (95% interval of B − A) and, for
classification, the exact McNemar test; with two or more seeds, the paired t-test over seeds
(:func:`syntaxformer.analysis.compare_runs.compare_runs`).
"""

from __future__ import annotations

import argparse
import json

HELP = "paired significance of two systems' dev scores (bootstrap CI, McNemar, t-test over seeds) from run folders"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer significance`` to ``parser``."""
    parser.add_argument("runs_a", nargs="+", metavar="RUN_A", help="run folders of system A (one per seed)")
    parser.add_argument("--vs", dest="runs_b", nargs="+", required=True, metavar="RUN_B",
                        help="run folders of system B, matched to RUN_A in order")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (1000)")
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")


def run(args: argparse.Namespace) -> int:
    from syntaxformer.analysis.compare_runs import compare_runs
    from syntaxformer.errors import ConfigError

    if args.resamples < 1:
        raise ConfigError(f"--resamples {args.resamples} must be a positive number")
    r = compare_runs(args.runs_a, args.runs_b, n_resamples=args.resamples)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    lines = [f"{r['task']}: {r['metric']}, B − A over {len(r['a'])} seed(s)"]
    for i, (a, b, e) in enumerate(zip(r["a"], r["b"], r["per_seed"]), 1):
        line = f"seed pair {i}: A {a:.4f}  B {b:.4f}  B − A {b - a:+.4f}"
        if "bootstrap" in e:
            lo, hi = e["bootstrap"]["details"]["ci95"]
            line += f"  95% CI [{lo:+.4f}, {hi:+.4f}]  bootstrap p {e['bootstrap']['p_value']:.3f}"
        if "mcnemar" in e:
            line += f"  McNemar p {e['mcnemar']['p_value']:.3f}"
        lines.append(line)
    if "t_test" in r:
        t = r["t_test"]
        lines.append(f"paired t-test over seeds: mean B − A {t['difference']:+.4f}, p {t['p_value']:.3f}")
    print("\n".join(lines))
    return 0
