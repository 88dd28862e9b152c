"""``syntaxformer`` command line. Thin: parse arguments, call library code.

Each sub-command lives in ``syntaxformer/commands/<name>.py`` and exposes ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported only when their command runs, so
``syntaxformer --help`` stays fast and heavy dependencies load lazily.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# command name -> (module, one-line help). Keep the help here so `--help` imports nothing heavy.
COMMANDS: dict[str, tuple[str, str]] = {
    "annotate": ("syntaxformer.commands.annotate", "parse raw text or read gold trees; write JSONL / CoNLL-U"),
    "evaluate-parser": ("syntaxformer.commands.evaluate_parser", "UAS/LAS of a parser against gold trees"),
    "demo": ("syntaxformer.commands.demo", "annotate real sentences and show the syntax one model would see"),
    "train": ("syntaxformer.commands.train", "fine-tune SG-Net / Syntax-BERT / baseline: GLUE, SST, SQuAD2, RACE"),
    "evaluate": ("syntaxformer.commands.evaluate", "score a trained model on a labeled split"),
    "predict": ("syntaxformer.commands.predict", "predict a split or file with a trained model"),
    "compare": ("syntaxformer.commands.compare", "fine-tune baseline, SG-Net, Syntax-BERT ... with the same seed; dev scores"),
    "diagnose": ("syntaxformer.commands.diagnose", "token-state drift and zero-shot similarity of a syntax configuration at init"),
    "translate": ("syntaxformer.commands.translate", "translate a text / .sgm file with a trained translation model"),
}


class _StderrHandler(logging.StreamHandler):
    """A handler that writes to whatever ``sys.stderr`` is at the time of the message (tests swap it)."""

    @property  # type: ignore[override]
    def stream(self):  # noqa: D102
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def configure_logging() -> None:
    """Show the library's log messages (``syntaxformer.*`` loggers, INFO and up) on stderr, as
    ``[syntaxformer] message``; stdout stays for the commands' results."""
    lg = logging.getLogger("syntaxformer")
    if any(getattr(h, "_syntaxformer_cli", False) for h in lg.handlers):
        return
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("[syntaxformer] %(message)s"))
    handler._syntaxformer_cli = True  # type: ignore[attr-defined]
    lg.addHandler(handler)
    lg.setLevel(logging.INFO)
    lg.propagate = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="syntaxformer", description="Make any pretrained Transformer syntax-aware.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_) in COMMANDS.items():
        sub.add_parser(name, help=help_, description=help_, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS:
        args = parser.parse_args(argv)
        if args.version:
            from syntaxformer import __version__

            print(__version__)
            return 0
        parser.print_help()
        return 0 if not argv else 2
    name = argv[0]
    configure_logging()
    module = importlib.import_module(COMMANDS[name][0])
    sub = argparse.ArgumentParser(prog=f"syntaxformer {name}", description=COMMANDS[name][1])
    module.add_arguments(sub)
    args = sub.parse_args(argv[1:])
    from syntaxformer.errors import SyntaxformerError

    try:
        return int(module.run(args) or 0)
    except SyntaxformerError as e:  # user-facing errors: one clear line, no traceback
        print(f"syntaxformer {name}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"syntaxformer {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
