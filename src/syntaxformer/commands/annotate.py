"""``syntaxformer annotate``: parse raw text (one passage per line, one Document each) with any annotator, or read
gold trees (CoNLL-U, PTB) or syntaxformer JSONL; write JSONL or CoNLL-U atomically. ``-`` reads standard input and
``-o -`` writes standard output, so it works in a pipe (``docs/parsing.md``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator

from syntaxformer.commands.arguments import add_parser_options, annotator_from_args
from syntaxformer.data.readers.conllu import format_conllu, read_conllu, write_conllu
from syntaxformer.data.readers.ptb import read_ptb
from syntaxformer.data.sentence import Document, read_jsonl, records_from_lines, write_jsonl
from syntaxformer.errors import ConfigError, DataError
from syntaxformer.utils import check_output, open_text

INPUT_FORMATS = ("text", "conllu", "ptb", "jsonl")
_EXT_INPUT = {
    ".conllu": "conllu",
    ".conll": "conllu",
    ".jsonl": "jsonl",
    ".mrg": "ptb",
    ".ptb": "ptb",
    ".tree": "ptb",
    ".trees": "ptb",
}
_EXT_OUTPUT = {".jsonl": "jsonl", ".conllu": "conllu", ".conll": "conllu"}
#: The file name that means standard input / standard output.
STDIO = "-"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input", metavar="INPUT", help="input file (a folder of .mrg files for --format ptb); - reads standard input"
    )
    parser.add_argument(
        "--format",
        choices=INPUT_FORMATS,
        help="input format: text = one passage per line (parsed with spaCy); conllu / ptb = gold trees (converted, "
        "not parsed); jsonl = syntaxformer JSONL. Default: from the extension (.conllu, .jsonl, .mrg), else text",
    )
    parser.add_argument(
        "--output",
        "-o",
        required=True,
        metavar="OUT.{jsonl,conllu}",
        help="output file; its extension chooses the format (.jsonl or .conllu); - writes to standard output",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the output file if it exists")
    parser.add_argument(
        "--output-format",
        choices=tuple(sorted(set(_EXT_OUTPUT.values()))),
        help="output format when the --output name does not tell (standard output: jsonl)",
    )
    add_parser_options(parser)  # the parser of --format text


def input_format(path: str, given: str | None) -> str:
    """The input format: ``given``, else guessed from the extension (a folder is PTB), else ``text`` (standard
    input, ``-``, is text unless ``given``)."""
    if given:
        return given
    if path == STDIO:
        return "text"
    if os.path.isdir(path):
        return "ptb"
    return _EXT_INPUT.get(os.path.splitext(path)[1].lower(), "text")


def output_format(path: str, given: str | None = None) -> str:
    """``jsonl`` or ``conllu``: ``given``, else from the extension of ``path`` (standard output: ``jsonl``)."""
    if given:
        return given
    if path == STDIO:
        return "jsonl"
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXT_OUTPUT:
        raise ConfigError(
            f"--output {path!r}: cannot tell the output format from the extension; use a .jsonl or .conllu file name"
        )
    return _EXT_OUTPUT[ext]


def read_gold(path: str, fmt: str) -> Iterator:
    """Gold sentences from a CoNLL-U file or PTB bracketed trees (a file, a folder of ``.mrg`` files or a glob)."""
    if fmt == "conllu":
        if not os.path.isfile(path):
            raise DataError(f"input file not found: {path}")
        return read_conllu(path)
    if fmt == "ptb":
        return read_ptb(path)
    raise ConfigError(f"--format {fmt!r} is not a gold-tree format; expected conllu or ptb")


def _line_passages(path: str) -> list[str]:
    if path == STDIO:
        return [line.rstrip("\r\n") for line in sys.stdin]
    with open_text(path, encoding="utf-8-sig") as f:
        return [line.rstrip("\r\n") for line in f]


def _write_stdout(items: Iterable, fmt: str) -> None:
    """Stream records to standard output, one at a time (a pipe sees them as they are parsed)."""
    out = sys.stdout
    for item in items:
        out.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n" if fmt == "jsonl" else format_conllu([item]))
    out.flush()


def _documents(texts: list[str], annotator, name: str) -> Iterator:
    for lineno, doc in enumerate(annotator.pipe(texts), 1):
        doc.doc_id = f"{name}:{lineno}"
        for k, s in enumerate(doc.sentences, 1):
            s.sent_id = f"{doc.doc_id}:{k}"
        yield doc


def _counting(items: Iterable, counts: dict[str, int]) -> Iterator:
    for item in items:
        counts["records"] += 1
        counts["sentences"] += len(item) if isinstance(item, Document) else 1
        yield item


def run(args: argparse.Namespace) -> int:
    fmt = input_format(args.input, args.format)
    out_fmt = output_format(args.output, getattr(args, "output_format", None))
    stdin = args.input == STDIO
    if stdin and fmt == "ptb":
        raise ConfigError("--format ptb reads a file or a folder of .mrg files, not standard input")
    if not stdin and fmt != "ptb" and not os.path.isfile(args.input):
        raise DataError(f"input file not found: {args.input}")
    check_output(args.output, [args.input, args.cache or None], overwrite=args.overwrite)
    name = "stdin" if stdin else os.path.basename(os.path.normpath(args.input))
    source = "gold"
    if fmt == "text":
        annotator = annotator_from_args(args)
        source = annotator.source
        items: Iterable = _documents(_line_passages(args.input), annotator, name)
    elif fmt == "jsonl":
        items = records_from_lines(sys.stdin, "<stdin>") if stdin else read_jsonl(args.input)
        source = "jsonl"
    elif stdin:  # CoNLL-U
        items = read_conllu(sys.stdin, source="<stdin>")
        source = "conllu"
    else:
        items = read_gold(args.input, fmt)
    counts = {"records": 0, "sentences": 0}
    items = _counting(items, counts)
    if args.output == STDIO:
        _write_stdout(items, out_fmt)
    elif out_fmt == "jsonl":  # an unwritable output is a DataError from atomic_write
        write_jsonl(items, args.output)
    else:
        write_conllu(items, args.output)
    what = "documents" if fmt == "text" else "records"
    where = "standard output" if args.output == STDIO else args.output
    print(f"wrote {counts['records']} {what} ({counts['sentences']} sentences, {source}) to {where}", file=sys.stderr)
    return 0
