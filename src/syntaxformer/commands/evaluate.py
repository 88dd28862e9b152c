"""``syntaxformer evaluate``: score a trained model on a labeled split (dev by default).

The task and feature options (max length, parser, parser noise ...) are read from the ``run.json`` saved with the
model; ``--config``, ``--set`` and the flags change them (e.g. ``--parser-noise 0.4`` to test a clean
model on noisy parses). Writes ``eval_<split>.json`` to ``--output-dir`` (default: the model folder) and prints
the scores as JSON.

Example::

    syntaxformer evaluate runs/sst2-sg --split dev
"""

from __future__ import annotations

import argparse
import json

from syntaxformer.commands.train import add_config_arguments, explicit_options

HELP = "score a trained model on a labeled split; writes eval_<split>.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer evaluate`` to ``parser``."""
    parser.add_argument("model", metavar="MODEL_DIR", help="folder of a model trained with `syntaxformer train`")
    parser.add_argument("--split", default="dev", choices=("train", "dev", "validation", "test"), help="split to score (dev)")
    parser.add_argument("--file", dest="split_file", help="a file of the task's format to score instead")
    parser.add_argument("--output-dir", help="where eval_<split>.json goes (default: MODEL_DIR)")
    add_config_arguments(parser, training=False)


def config_changes(args: argparse.Namespace) -> dict:
    """The run-config changes given by ``--config`` / ``--set`` / flags / ``--file``."""
    from syntaxformer.training.config import config_data

    changes = config_data(args.config, args.overrides, **explicit_options(args))
    if args.split_file:
        changes[f"{'dev' if args.split == 'validation' else args.split}_file"] = args.split_file
    return changes


def run(args: argparse.Namespace) -> int:
    from syntaxformer.training.run import evaluate

    result = evaluate(args.model, args.split, changes=config_changes(args), output_dir=args.output_dir)
    scores = {k: v for k, v in result["scores"].items() if isinstance(v, (int, float, str)) and k != "verbose"}
    print(json.dumps({"task": result["task"], "split": result["split"], "size": result["size"],
                      "scores": scores}, indent=2))
    return 0
