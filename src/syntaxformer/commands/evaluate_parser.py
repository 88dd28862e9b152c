"""``syntaxformer evaluate-parser``: UAS / LAS of a spaCy pipeline against gold trees.

The gold words are parsed as given (pre-tokenized, one tree per gold sentence), so heads pair up word by word.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time

from syntaxformer.commands.annotate import input_format, read_gold
from syntaxformer.commands.arguments import add_parser_options, annotator_from_args, positive
from syntaxformer.data.constituency import unescape_word
from syntaxformer.data.parser_eval import attachment_scores

_EPILOG = """\
Labels are compared only where gold and parser use the same label scheme. UD gold (e.g. English EWT) and spaCy's
English pipelines (ClearNLP labels: dobj, pobj, prep, ROOT ...) do not, so LAS is null there and the JSON has a
"note" saying why; UAS is always reported. Punctuation (for the *_no_punct scores) is any word whose gold UPOS is
PUNCT or whose gold tag is a PTB punctuation tag (`` '' , . : -LRB- -RRB- HYPH NFP). Expect a low UAS against UD
gold (about 0.56 for en_core_web_sm): UD makes content words heads (nouns over prepositions, main verbs over
auxiliaries), spaCy's scheme does not.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--gold", required=True, help="gold trees: a CoNLL-U file, or PTB trees (file or folder)")
    parser.add_argument(
        "--format", choices=("conllu", "ptb"), help="gold format (default: conllu for .conllu/.conll files, else ptb)"
    )
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N gold sentences")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (uas, las, uas_no_punct, "
        "las_no_punct, counts, parser, gold file; las null + note when label schemes differ)",
    )
    add_parser_options(parser)


def run(args: argparse.Namespace) -> int:
    fmt = args.format or ("conllu" if input_format(args.gold, None) == "conllu" else "ptb")
    positive(limit=args.limit)
    gold = list(itertools.islice(read_gold(args.gold, fmt), args.limit))
    annotator = annotator_from_args(args)
    start = time.perf_counter()
    pred = annotator.annotate_pretokenized([_parser_words(s.words, fmt) for s in gold])
    seconds = time.perf_counter() - start
    scores = attachment_scores(gold, pred)
    result = {
        "uas": _round(scores.uas),
        "las": _round(scores.las),
        "uas_no_punct": _round(scores.uas_no_punct),
        "las_no_punct": _round(scores.las_no_punct),
        "n_sentences": scores.n_sentences,
        "n_tokens": scores.n_tokens,
        "n_tokens_no_punct": scores.n_tokens_no_punct,
        # spaCy annotators have a package name and version; other parsers are named by their source
        "parser": getattr(annotator, "name", annotator.source),
        "parser_version": getattr(annotator, "version", None),
        "gold": os.path.normpath(args.gold),
        "gold_format": fmt,
        "gold_label_scheme": scores.gold_scheme,
        "parser_label_scheme": scores.pred_scheme,
        "parse_seconds": round(seconds, 2),
    }
    if scores.note:
        result["note"] = scores.note
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{annotator.source} on {result['gold']} ({fmt}): {scores.n_sentences} sentences, {scores.n_tokens} words"
        )
        for key in ("uas", "las", "uas_no_punct", "las_no_punct"):
            value = result[key]
            print(f"  {key:<13} {'n/a' if value is None else f'{value:.4f}'}")
        if scores.note:
            print(f"  note: {scores.note}")
    return 0


def _parser_words(words: list[str], fmt: str) -> list[str]:
    """Words as the parser should see them: PTB escapes undone (``-LRB-`` -> ``(``, ``1\\/2`` -> ``1/2``)."""
    if fmt != "ptb":
        return words
    return [unescape_word(w) or w for w in words]


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)
