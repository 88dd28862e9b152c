"""``syntaxformer significance``: is system B's dev score different from system A's? From their run folders.

Examples::

    syntaxformer significance runs/rte/baseline/seed1 runs/rte/sgnet/seed1            # one run each
    syntaxformer significance --a runs/rte/baseline/seed1 runs/rte/baseline/seed2 \\
        --b runs/rte/sgnet/seed1 runs/rte/sgnet/seed2                                  # seed runs
    syntaxformer significance --a 'runs/rte/baseline/seed*' --b 'runs/rte/sgnet/seed*' --json out.json

Per pair of runs (paired by the seed in ``metrics.json``): the two-sided paired bootstrap of the headline metric
over dev examples (95% interval of B − A) and, for classification, the exact McNemar test; for translation,
sacreBLEU's paired bootstrap (``--bleu-test bs``) or approximate randomisation (``ar``) on corpus BLEU; with two or
more pairs, the paired t-test over seeds (:func:`syntaxformer.analysis.compare_runs.compare_runs`).
"""

from __future__ import annotations

import argparse
import json

HELP = "paired significance of two systems' dev scores (bootstrap CI, McNemar, t-test over seeds) from run folders"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer significance`` to ``parser``."""
    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="RUN_A RUN_B: one run of each system (or, with --vs, the runs of system A)")
    parser.add_argument("--a", dest="runs_a", nargs="+", metavar="RUN_A",
                        help="run folders or quoted glob patterns of system A (one per seed)")
    parser.add_argument("--b", "--vs", dest="runs_b", nargs="+", metavar="RUN_B",
                        help="run folders or quoted glob patterns of system B, paired with A's by seed")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples (1000); BLEU: resamples or randomisation trials")
    parser.add_argument("--bleu-test", choices=("bs", "ar"), default="bs",
                        help="translation runs: sacreBLEU's paired bootstrap (bs) or approximate randomisation (ar)")
    parser.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE",
                        help="write the full result as JSON to FILE (no FILE: print it instead of the table)")


def _systems(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    from syntaxformer.errors import ConfigError

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
        lines.append(f"paired t-test over seeds: mean B − A {t['difference']:+.4f}, t {t['details']['t']:.3f}, "
                     f"p {t['p_value']:.3f}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from syntaxformer.analysis.compare_runs import compare_runs
    from syntaxformer.errors import ConfigError
    from syntaxformer.utils import write_json

    if args.resamples < 1:
        raise ConfigError(f"--resamples {args.resamples} must be a positive number")
    runs_a, runs_b = _systems(args)
    r = compare_runs(runs_a, runs_b, n_resamples=args.resamples, bleu_test=args.bleu_test)
    if args.json == "-":
        print(json.dumps(r, indent=2))
        return 0
    if args.json:
        write_json(args.json, r)
    print(format_significance(r))
    return 0
