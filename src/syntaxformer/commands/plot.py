"""``syntaxformer plot``: figures (PNG and SVG) from run folders, inferred from what the runs record unless
``--kind`` names them (:func:`syntaxformer.analysis.plots.plot_runs`; ``docs/analysis.md``)."""

from __future__ import annotations

import argparse

from syntaxformer.analysis.plots import PLOT_KINDS, SUITE_LEVELS, plot_runs
from syntaxformer.commands.arguments import int_list, positive
from syntaxformer.defaults import default_hf_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs", nargs="*", metavar="RUN_DIR", help="run folders, folders holding run folders, or quoted glob patterns"
    )
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="folder for the PNG and SVG files")
    parser.add_argument(
        "--kind", nargs="+", choices=PLOT_KINDS, default=None, help="figures to draw (default: inferred from the runs)"
    )
    parser.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap resamples of the interval of a single run (1000)"
    )
    parser.add_argument("--buckets", type=int, default=5, help="length buckets (5)")
    parser.add_argument("--mode", choices=("count", "range"), default="count", help="length buckets by count / range")
    parser.add_argument("--edges", default=None, metavar="N,N,...", help="explicit upper bounds of the length buckets")
    parser.add_argument("--model", default=None, help="attention: a model folder (or the offline default 'minilm')")
    parser.add_argument("--text", default=None, help="attention: the text")
    parser.add_argument("--text-b", default=None, help="attention: the second text of a pair")
    parser.add_argument("--layer", type=int, default=-1, help="attention: the layer (default the last)")
    parser.add_argument(
        "--suite",
        metavar="NAME",
        help="suite: which minimal-pair suite (a folder under RUN/suites/; default the only one the runs hold)",
    )
    parser.add_argument(
        "--suite-level",
        choices=SUITE_LEVELS,
        default="field",
        help="suite: one column per field (default) or per phenomenon, plus all pairs",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace figure files that exist in --output (default: refuse)"
    )


def run(args: argparse.Namespace) -> int:
    edges = int_list(args.edges, "--edges")
    positive(resamples=args.resamples)
    model = args.model
    if model == "minilm":
        model = default_hf_model()
    written = plot_runs(
        args.runs,
        args.output,
        kinds=args.kind,
        n_resamples=args.resamples,
        n_buckets=args.buckets,
        bucket_mode=args.mode,
        edges=edges,
        model=model,
        text=args.text,
        text_b=args.text_b,
        layer=args.layer,
        overwrite=args.overwrite,
        suite=args.suite,
        suite_level=args.suite_level,
    )
    for name, paths in written.items():
        print(f"{name}: " + " ".join(str(p) for p in paths))
    return 0
