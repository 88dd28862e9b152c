"""``syntaxformer analyze``: a trained run's dev scores by input length in words (SG-Net §7.1), two runs side by
side; prints a table and writes JSON (:mod:`syntaxformer.analysis.buckets`; ``docs/analysis.md``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from syntaxformer.analysis.buckets import format_length_buckets, length_buckets
from syntaxformer.commands.arguments import int_list
from syntaxformer.errors import ConfigError
from syntaxformer.utils import check_output, write_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run folders of `syntaxformer train` (same task and dev examples; two are shown side by side)",
    )
    parser.add_argument("--by", choices=("length",), default="length", help="what to break the scores down by")
    parser.add_argument("--buckets", type=int, default=5, help="number of length buckets (5)")
    parser.add_argument(
        "--mode",
        choices=("count", "range"),
        default="count",
        help="buckets of about equally many examples (count, default) or of equal length ranges",
    )
    parser.add_argument(
        "--edges", default=None, metavar="N,N,...", help="explicit upper bounds of the buckets instead, e.g. 5,10,15,20"
    )
    parser.add_argument("--names", default=None, metavar="A,B", help="column names of the runs (default run1, run2)")
    parser.add_argument("--overwrite", action="store_true", help="replace the output file if it exists")
    parser.add_argument(
        "--output", metavar="FILE", help="JSON result (default: length_buckets.json in the first run folder)"
    )


def run(args: argparse.Namespace) -> int:
    output = Path(args.output) if args.output else Path(args.runs[0]) / "length_buckets.json"
    check_output(output, overwrite=args.overwrite)  # before anything is computed
    edges = int_list(args.edges, "--edges")
    names = [n.strip() for n in args.names.split(",")] if args.names else None
    if names is not None and len(names) != len(args.runs):
        raise ConfigError(f"--names gives {len(names)} names for {len(args.runs)} runs")
    result = length_buckets(args.runs, n_buckets=args.buckets, mode=args.mode, edges=edges)
    if names:
        result["names"] = names
    write_json(output, result)
    print(format_length_buckets(result, names))
    print(f"written: {output}")
    return 0
