"""``syntaxformer export``: write a finished run's final model as a self-contained Hugging Face model folder that
loads without syntaxformer, optionally pushed to the hub (``docs/inference.md``)."""

from __future__ import annotations

import argparse

from syntaxformer.sharing import export_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="output folder of a finished `syntaxformer train` run")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="the model folder to write (must not exist or be empty)")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT_DIR if it exists and is not empty")
    parser.add_argument(
        "--license",
        help="license id for the model card (e.g. apache-2.0; default: the encoder's when known, else 'other')",
    )
    parser.add_argument(
        "--push-to-hub",
        metavar="REPO",
        help="then push OUT_DIR to this Hugging Face hub model repository (NAME or OWNER/NAME; needs a token)",
    )


def run(args: argparse.Namespace) -> int:
    out = export_model(
        args.run_dir, args.out_dir, overwrite=args.overwrite, license=args.license, push_to_hub=args.push_to_hub
    )
    print(out)
    return 0
