"""``syntaxformer predict``: label a split (test by default) or a file with a trained model.

Writes ``predictions_<split>.tsv`` (columns ``index``, ``id``, ``prediction``; label strings, or scores for
STS-B) to ``--output-dir`` (default: the model folder). Feature options come from the model's
``run.json``, as for ``evaluate``.

Example::

    syntaxformer predict runs/rte-sg --split test
    syntaxformer predict runs/sst2-sg --split dev --file my_sentences.tsv
"""

from __future__ import annotations

import argparse
import json

from syntaxformer.commands.evaluate import config_changes
from syntaxformer.commands.train import add_config_arguments

HELP = "predict a split or file with a trained model; writes predictions_<split>.tsv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer predict`` to ``parser``."""
    parser.add_argument("model", metavar="MODEL_DIR", help="folder of a model trained with `syntaxformer train`")
    parser.add_argument("--split", default="test", choices=("train", "dev", "validation", "test"),
                        help="split to predict (test)")
    parser.add_argument("--file", dest="split_file", help="a file of the task's format to predict instead "
                        "(a TSV with the task's header, with or without the label column)")
    parser.add_argument("--output-dir", help="where predictions_<split>.tsv goes (default: MODEL_DIR)")
    add_config_arguments(parser, training=False)


def run(args: argparse.Namespace) -> int:
    from syntaxformer.training.run import predict

    result = predict(args.model, args.split, changes=config_changes(args), output_dir=args.output_dir)
    print(json.dumps({k: result[k] for k in ("task", "split", "size", "predictions_file", "scores")
                      if k in result}, indent=2))
    return 0
