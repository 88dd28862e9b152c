"""``syntaxformer probe``: structural probes (Hewitt & Manning 2019) and linear POS / label probes per layer.

Thin: arguments -> :func:`syntaxformer.analysis.probes.probe_models`; prints one table per model, writes JSON.
"""

from __future__ import annotations

import argparse
import json

from syntaxformer.analysis.probes import ProbeSettings, format_probe_table, probe_models
from syntaxformer.commands.arguments import add_system_options, model_options, positive
from syntaxformer.errors import ConfigError
from syntaxformer.training.run import model_label
from syntaxformer.utils import check_output, write_json

_EPILOG = """\
examples:
  syntaxformer probe                                   # the plain offline MiniLM, every layer
  syntaxformer probe --system syntax_bert --set gate=layer   # an untrained gated Syntax-BERT on MiniLM
  syntaxformer probe --system sgnet --layers layer6,sg,aggregated
  syntaxformer probe runs/sst2-sgnet runs/sst2-baseline --output probes.json   # trained run folders
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "models",
        nargs="*",
        metavar="MODEL_OR_RUN",
        help="run folders of `syntaxformer train`, saved models, or pretrained encoder names / "
        "folders (default: the offline MiniLM); all are probed on the same split",
    )
    add_system_options(
        parser,
        "plain",
        "for a pretrained encoder: probe it as is (plain, default) or an untrained SG-Net / "
        "Syntax-BERT built on it (ignored for run folders and saved models)",
        "a model option of that untrained system, e.g. gate=layer (repeatable; JSON values)",
    )
    parser.add_argument(
        "--layers",
        help="comma-separated layer names (embeddings, layer1..layerN; SG-Net also sg, aggregated); default every "
        "layer",
    )
    parser.add_argument("--output", default=None, help="write the results as JSON to this file")
    parser.add_argument("--overwrite", action="store_true", help="replace the output file if it exists")
    parser.add_argument(
        "--data", help="CoNLL-U file with # newdoc id comments (default: UD English-EWT dev in the shared data)"
    )
    parser.add_argument(
        "--train-sentences",
        type=int,
        default=1000,
        help="probe-train sentences, seeded subsample (0 = all 1,512; default 1000)",
    )
    parser.add_argument(
        "--test-sentences", type=int, default=0, help="probe-test sentences, seeded subsample (0 = all 489; default 0)"
    )
    parser.add_argument("--epochs", type=int, default=10, help="training passes of every probe (default 10)")
    parser.add_argument("--rank", type=int, default=64, help="rank of the structural probes (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the subsamples, probes and new model parts")
    parser.add_argument(
        "--word-vector",
        choices=("mean", "first"),
        default="mean",
        help="a word's vector: mean of its subwords (default) or its first subword",
    )
    parser.add_argument(
        "--syntax",
        choices=("gold", "parser"),
        default="gold",
        help="syntax input of a syntax model: the treebank's gold trees (default) or a parser's "
        "trees on the gold words (the run's parser, else spaCy)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON instead of the tables")


def run(args: argparse.Namespace) -> int:
    if args.output:
        check_output(args.output, overwrite=args.overwrite)  # before the probes are trained
    options = model_options(args.set)
    if options and args.system == "plain":
        raise ConfigError("--set gives options of an untrained syntax model: add --system sgnet or syntax_bert")
    for name in ("train_sentences", "test_sentences"):
        if getattr(args, name) < 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be 0 (all) or a positive number of sentences")
    positive(epochs=args.epochs, rank=args.rank)
    layers = [x.strip() for x in args.layers.split(",") if x.strip()] if args.layers else None
    settings = ProbeSettings(rank=args.rank, epochs=args.epochs, seed=args.seed)
    result = probe_models(
        args.models or [None],
        system=None if args.system == "plain" else args.system,
        options=options,
        data_file=args.data,
        max_train_sentences=args.train_sentences or None,
        max_test_sentences=args.test_sentences or None,
        layers=layers,
        settings=settings,
        word_vector=args.word_vector,
        syntax=args.syntax,
    )
    if args.output:
        write_json(args.output, result)
    if args.json:
        print(json.dumps(result))
        return 0
    d = result["data"]
    print(
        f"UD probes: {d['sentences']['train']} probe-train sentences ({d['documents']['train']} documents), "
        f"{d['sentences']['test']} probe-test sentences ({d['documents']['test']} documents); rank "
        f"{settings.rank}, {settings.epochs} epochs, seed {settings.seed}, {args.word_vector} of subwords"
    )
    for m in result["models"]:
        desc = m["model"]
        opts = f" {json.dumps(desc['options'])}" if desc.get("options") else ""
        seconds = m["seconds"]["word_vectors"] + m["seconds"]["probes"]
        print(f"\n{desc['system']}{opts} on {model_label(desc['model'])} ({seconds:.0f} s)")
        print(format_probe_table(m))
    if args.output:
        print(f"\nwrote {args.output}")
    return 0
