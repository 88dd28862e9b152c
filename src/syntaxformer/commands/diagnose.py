"""``syntaxformer diagnose``: what a syntax configuration does to the pretrained encoder before training.

Prints the token-state cosine to the plain encoder, the zero-shot STS-B similarity signal of the system and of the
plain encoder, and the gradient that reaches the syntax parameters from the task head
(:func:`syntaxformer.analysis.diagnose.diagnose`).
"""

from __future__ import annotations

import argparse
import json

from syntaxformer.analysis.diagnose import diagnose
from syntaxformer.commands.arguments import add_system_options, model_options

_EPILOG = """\
examples:
  syntaxformer diagnose --system syntax_bert                       # the paper's Syntax-BERT on MiniLM
  syntaxformer diagnose --system syntax_bert --set gate=layer      # gated: identical to the encoder at init
  syntaxformer diagnose --system sgnet --set pooling=cls           # W_Q / W_K gradients ~0: syntax cannot act
  syntaxformer diagnose runs/my-run                                # a trained run folder
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "model",
        nargs="?",
        metavar="MODEL_OR_RUN",
        help="pretrained encoder name or folder (default: the offline MiniLM), a saved model, or a run folder of "
        "`syntaxformer train`",
    )
    add_system_options(
        parser,
        "syntax_bert",
        "syntax system (ignored for a run folder; default syntax_bert)",
        "a model option, e.g. gate=layer, pooling=cls, full_attention_candidate=true "
        "(repeatable; values are read as JSON when they parse, else as strings)",
    )
    parser.add_argument("--task", default="stsb", help="sentence-pair regression task (default stsb)")
    parser.add_argument("--n", type=int, default=200, help="dev pairs, seeded subsample (0 = all; default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the subsample and the gradient probe")
    parser.add_argument("--data-dir", default=None, help="the task's data folder (default: shared data)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    options = model_options(args.set)
    result = diagnose(
        args.model, args.system, options, task=args.task, n=args.n, seed=args.seed, data_dir=args.data_dir
    )
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{result['system']} {json.dumps(result['options'])} on {result['model']}: {result['n_pairs']} "
        f"{result['task']} dev pairs (seed {result['seed']})"
    )
    print(f"  token cosine to the plain encoder  {result['token_cosine_to_plain']:.4f}")
    print(
        f"  zero-shot Pearson                  {result['zero_shot_pearson']}  (plain encoder "
        f"{result['plain_zero_shot_pearson']})"
    )
    if "subnetworks_per_token" in result:
        c = result["subnetworks_per_token"]
        print(f"  non-empty sub-networks per token   mean {c['mean']}, max {c['max']} ({c['tokens']} tokens)")
    for name, norm in result["syntax_gradients"].items():
        print(f"  gradient norm {name:<32} {norm:.3g}")
    return 0
