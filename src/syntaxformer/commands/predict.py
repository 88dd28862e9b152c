"""``syntaxformer predict``: label raw texts (``--input``: JSONL records, :mod:`syntaxformer.inference`) or a split
or file of the task (``predictions_<split>.tsv`` / ``.jsonl``) with a trained model (``docs/inference.md``)."""

from __future__ import annotations

import argparse
import json
import sys

from syntaxformer.commands.arguments import positive
from syntaxformer.commands.evaluate import config_changes
from syntaxformer.commands.train import add_config_arguments
from syntaxformer.errors import ConfigError
from syntaxformer.inference import Predictor, read_inputs, write_records
from syntaxformer.training.run import predict
from syntaxformer.utils import check_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL_DIR", help="folder of a model trained with `syntaxformer train`")
    raw = parser.add_argument_group("raw texts")
    raw.add_argument(
        "--input",
        metavar="FILE",
        help="texts to predict: .txt (one per line, - = stdin), .csv / "
        ".tsv with a header, or .jsonl; parsed on the fly",
    )
    raw.add_argument(
        "--text-column",
        metavar="C",
        help="column with the text (default: the run's own text column, else sentence1 with sentence2 as the pair, "
        "else text, else sentence; span QA: the question column, default question)",
    )
    raw.add_argument(
        "--text-pair-column",
        metavar="C",
        help="column with the second text of a pair (span QA: the context column, default context)",
    )
    raw.add_argument("--output", metavar="FILE", help="JSONL file for the records (default: standard output)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace --output (raw texts; never the --input file) or a split's predictions_<split>.* if they exist",
    )
    raw.add_argument("--batch-size", type=int, default=32, help="inputs per model call (32)")
    split = parser.add_argument_group("a split of the task")
    split.add_argument(
        "--split", default="test", choices=("train", "dev", "validation", "test"), help="split to predict (test)"
    )
    split.add_argument(
        "--file",
        dest="split_file",
        help="a file of the task's format to predict instead "
        "(a TSV with the task's header, with or without the label column)",
    )
    split.add_argument("--output-dir", help="where predictions_<split>.tsv goes (default: MODEL_DIR)")
    add_config_arguments(parser, training=False)


def run(args: argparse.Namespace) -> int:
    if args.input is not None:
        return _run_inputs(args)
    if args.output or args.text_column or args.text_pair_column:
        raise ConfigError(
            "--output, --text-column and --text-pair-column go with --input FILE (raw texts); a split's "
            "predictions go to --output-dir"
        )
    result = predict(
        args.model, args.split, changes=config_changes(args), output_dir=args.output_dir, overwrite=args.overwrite
    )
    print(
        json.dumps(
            {k: result[k] for k in ("task", "split", "size", "predictions_file", "scores") if k in result}, indent=2
        )
    )
    return 0


def _run_inputs(args: argparse.Namespace) -> int:
    if args.split_file or args.output_dir:
        raise ConfigError("--file and --output-dir predict a split; with --input use --output")
    positive(batch_size=args.batch_size)
    if args.output:  # before the model is loaded: never the input nor the run, never an existing file unasked
        check_output(args.output, [args.input], overwrite=args.overwrite, folders=[args.model])
    # --text-column / --text-pair-column name the columns of the input file here, not the run's task options
    changes = {k: v for k, v in config_changes(args).items() if k not in ("text_column", "text_pair_column")}
    predictor = Predictor.from_run(args.model, changes=changes)
    inputs = read_inputs(
        args.input,
        text_column=args.text_column,
        text_pair_column=args.text_pair_column,
        head=predictor.head,
        run_columns=predictor.task.options() if predictor.task is not None else None,
    )
    records = predictor.predict(inputs, batch_size=args.batch_size)
    write_records(records, args.output)
    if args.output and args.output != "-":
        t = predictor.timings
        print(
            json.dumps(
                {
                    "model": args.model,
                    "input": args.input,
                    "output": args.output,
                    "size": len(records),
                    "seconds": {k: round(v, 3) for k, v in t.items() if k.endswith("_s")},
                    "texts_per_s": round(len(records) / t["total_s"], 1) if t.get("total_s") else None,
                },
                indent=2,
            )
        )
    else:
        sys.stdout.flush()
    return 0
