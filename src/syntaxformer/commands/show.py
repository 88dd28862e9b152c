"""``syntaxformer show``: one self-contained HTML page of what the models see for a text or a pair.

Thin: arguments -> :func:`syntaxformer.analysis.viewer.build_view` -> the page (see that module and
``docs/viewer.md``).
"""

from __future__ import annotations

import argparse

from syntaxformer.analysis.viewer import build_view
from syntaxformer.commands.arguments import add_parser_options
from syntaxformer.utils import check_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", help="the text to show (one or more sentences)")
    parser.add_argument("text_b", nargs="?", default=None, help="the second text of a pair (optional)")
    parser.add_argument(
        "--model",
        action="append",
        metavar="DIR",
        help="a run folder of `syntaxformer train`, or a pretrained encoder (then SG-Net and Syntax-BERT are built on "
        "it, untrained); repeatable; default: the offline MiniLM",
    )
    parser.add_argument(
        "--plain",
        metavar="DIR",
        help="the plain encoder shown beside them: a checkpoint or a baseline / SG-Net run (default: the checkpoint "
        "the first model was built from)",
    )
    add_parser_options(parser, batches=False)
    parser.add_argument(
        "--max-length",
        type=int,
        default=64,
        help="tokens kept, special tokens included (default 64); a longer text is cut and the page says so",
    )
    parser.add_argument(
        "--criterion",
        choices=["share", "children"],
        default="share",
        help="SG-Net subword criterion of the SDOI mask shown (default share)",
    )
    parser.add_argument("--seed", type=int, default=0, help="torch seed of untrained models' new layers (default 0)")
    parser.add_argument("--output", "-o", required=True, help="the HTML page to write")
    parser.add_argument("--overwrite", action="store_true", help="replace the output file if it exists")


def run(args: argparse.Namespace) -> int:
    check_output(args.output, overwrite=args.overwrite)  # before any model is loaded
    view = build_view(
        args.text,
        args.text_b,
        args.model,
        plain=args.plain,
        parser=args.parser,
        max_length=args.max_length,
        criterion=args.criterion,
        parse_cache=None if args.no_cache else True,
        seed=args.seed,
    )
    path = view.save(args.output)
    n = view.data["length"]
    shown = f"{n['shown']} tokens"
    if n["cut"]:
        shown = f"{n['shown']} of {n['total']} tokens: the text is cut, --max-length raises the limit"
    print(f"wrote {path} ({shown}; models: {', '.join(m['name'] for m in view.data['models'])})")
    for m in view.data["models"]:
        prediction = m.get("prediction")
        if prediction:
            print(f"  {m['name']}: {_prediction_line(prediction)}")
    return 0


def _prediction_line(prediction: dict) -> str:
    """One line for a run's prediction on the page (label, regression value, answer) or why there is none."""
    record = prediction["record"]
    if not record:
        return str(prediction["note"])
    if "label" in record:
        return f"predicted {record['label']} (p = {record['score']:.3f})"
    if "value" in record:
        return f"predicted value {record['value']:.3f}"
    return f"answer {record.get('answer')!r}"
