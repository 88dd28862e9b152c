"""``syntaxformer translate``: translate a plain-text (one sentence per line) or WMT ``.sgm`` file with a trained
translation model (batched beam search, :class:`~syntaxformer.inference.Predictor`); with ``--reference`` also BLEU
and the sacreBLEU signature."""

from __future__ import annotations

import argparse
import json

import torch

from syntaxformer.commands.arguments import positive
from syntaxformer.data.readers.parallel import read_corpus, read_lines, read_sgm
from syntaxformer.errors import DataError
from syntaxformer.inference import Predictor
from syntaxformer.tasks.metrics import corpus_bleu
from syntaxformer.utils import atomic_write, check_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL_DIR", help="folder written by `syntaxformer train --task translation`")
    parser.add_argument("--input", required=True, help="source file: plain text (one sentence per line) or .sgm")
    parser.add_argument("--output", required=True, help="where the translations go (one per line)")
    parser.add_argument("--overwrite", action="store_true", help="replace the output file if it exists")
    parser.add_argument("--reference", help="reference translations (plain text or .sgm) to score BLEU against")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per beam-search batch (64)")
    parser.add_argument("--beams", type=int, default=5, help="beam size (5)")
    parser.add_argument("--max-source-length", type=int, default=256, help="source pieces kept per sentence (256)")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run(args: argparse.Namespace) -> int:
    positive(
        batch_size=args.batch_size, beams=args.beams, max_source_length=args.max_source_length, threads=args.threads
    )
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    check_output(args.output, [args.input, args.reference], overwrite=args.overwrite)
    if args.input.lower().endswith(".sgm"):
        sources = [s.text for s in read_sgm(args.input)]
    else:
        sources = read_lines(args.input)
    references = None
    if args.reference:
        references = read_corpus(args.reference).sources
        if len(references) != len(sources):
            raise DataError(
                f"{args.reference} has {len(references)} references for {len(sources)} sources in {args.input}"
            )
    predictor = Predictor.from_pretrained(args.model)
    if predictor.head != "seq2seq":
        raise DataError(f"{args.model} holds a {predictor.head} model, not a translation model")
    predictor.num_beams = args.beams
    predictor.task.max_eval_source_length = args.max_source_length
    predictor.context.progress = not args.no_progress
    keep = [i for i, s in enumerate(sources) if s.strip()]  # a blank line gets an empty translation
    hyps = [""] * len(sources)
    for i, record in zip(keep, predictor.predict([sources[i] for i in keep], batch_size=args.batch_size)):
        hyps[i] = record["translation"]
    with atomic_write(args.output) as f:
        f.write("".join(h + "\n" for h in hyps))
    summary = {"input": args.input, "output": args.output, "sentences": len(hyps)}
    if references is not None:
        summary.update(corpus_bleu(hyps, references))
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0
