"""``syntaxformer evaluate``: score a trained model on a labeled split (``eval_<split>.json``, the run's own feature
options unless changed), or with ``--suite`` an acceptability run on a minimal-pair suite
(``suites/<name>/``; ``docs/minimal_pairs.md``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from syntaxformer.analysis.minimal_pairs import evaluate_suite, paradigm_table
from syntaxformer.commands.train import add_config_arguments, given_options
from syntaxformer.errors import ConfigError
from syntaxformer.training.run import evaluate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL_DIR", help="folder of a model trained with `syntaxformer train`")
    parser.add_argument(
        "--split", default="dev", choices=("train", "dev", "validation", "test"), help="split to score (dev)"
    )
    parser.add_argument("--file", dest="split_file", help="a file of the task's format to score instead")
    parser.add_argument("--output-dir", help="where eval_<split>.json goes (default: MODEL_DIR)")
    g = parser.add_argument_group("minimal-pair suites (acceptability runs)")
    g.add_argument(
        "--suite",
        metavar="NAME_OR_DIR",
        help="score minimal pairs instead of a split: 'blimp' (the shared data folder) or a folder / file of "
        "BLiMP-format JSON lines (sentence_good, sentence_bad[, UID, pairID, field, linguistics_term])",
    )
    g.add_argument("--suite-data", metavar="DIR", help="the suite's folder (instead of the shared data folder)")
    g.add_argument(
        "--acceptable-label",
        metavar="CLASS",
        help="the class that means acceptable (default: 'acceptable', or '1' for a CoLA run)",
    )
    g.add_argument("--paradigms", metavar="UID,UID", help="score only these paradigms")
    g.add_argument("--max-pairs", type=int, metavar="N", help="score the first N pairs of each paradigm")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier eval_<split>.json (or an earlier result of the same --suite); default: refuse",
    )
    add_config_arguments(parser, training=False)


def config_changes(args: argparse.Namespace) -> dict:
    """The run-config changes given by ``--config`` / ``--set`` / flags / ``--file``."""
    changes = given_options(args)
    if args.split_file:
        changes[f"{'dev' if args.split == 'validation' else args.split}_file"] = args.split_file
    return changes


def run_suite(args: argparse.Namespace) -> int:
    """``evaluate --suite``: score the run on a minimal-pair suite and print the report's summary as JSON."""
    if args.split_file or args.split != "dev":
        raise ConfigError("--suite scores minimal pairs, not a split: leave out --split / --file")
    report = evaluate_suite(
        args.model,
        args.suite,
        data=args.suite_data,
        output_dir=args.output_dir,
        acceptable=args.acceptable_label,
        paradigms=args.paradigms.split(",") if args.paradigms else None,
        max_pairs=args.max_pairs,
        overwrite=args.overwrite,
    )
    summary: dict[str, Any] = {
        "suite": report["suite"],
        "pairs": report["pairs"],
        "acceptable": report["acceptable"],
        "accuracy": report["overall"]["accuracy"],
        "ci95": report["overall"]["ci95"],
        "field": {k: round(v["accuracy"], 4) for k, v in report["field"].items()},
        **{k: report[k] for k in ("chance", "ties", "median_abs_difference") if k in report},
        "records": report["records"],
    }
    print(paradigm_table(report), file=sys.stderr)  # for the reader; standard output stays one JSON object
    print(json.dumps(summary, indent=2))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.suite:
        return run_suite(args)

    result = evaluate(
        args.model, args.split, changes=config_changes(args), output_dir=args.output_dir, overwrite=args.overwrite
    )
    scores = {k: v for k, v in result["scores"].items() if isinstance(v, (int, float, str)) and k != "verbose"}
    print(
        json.dumps(
            {"task": result["task"], "split": result["split"], "size": result["size"], "scores": scores}, indent=2
        )
    )
    return 0
