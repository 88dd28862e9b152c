"""``syntaxformer`` command line. Thin: parse arguments, call library code.

Each sub-command lives in ``syntaxformer/commands/<name>.py`` and exposes ``add_arguments(parser)`` and
``run(args) -> int``; its one-line help is in :data:`COMMANDS`. Modules are imported only when their command runs, so
``syntaxformer --help`` stays fast and heavy dependencies load lazily.

Errors a user causes end as one line on stderr, ``syntaxformer <command>: error: <message>``, never a traceback:
exit status 2 for a command line that does not parse (argparse), 1 for a
:class:`~syntaxformer.errors.SyntaxformerError` and for a file the command cannot read or write (an ``OSError``
naming a file, a file that is not UTF-8). Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import io
import logging
import os
import sys
import types

from syntaxformer import __version__
from syntaxformer.errors import SyntaxformerError
from syntaxformer.registry import trust_run_code

#: Command name -> its one-line help; the command lives in syntaxformer.commands.<name with "_" for "-">.
COMMANDS: dict[str, str] = {
    "annotate": "parse raw text or read gold trees; write JSONL / CoNLL-U",
    "evaluate-parser": "UAS/LAS of a parser against gold trees",
    "demo": "annotate real sentences and show the syntax one model would see",
    "train": "fine-tune SG-Net / Syntax-BERT / baseline: GLUE, SST, SQuAD2, RACE",
    "evaluate": "score a trained model on a labeled split",
    "predict": "predict raw texts (--input; label names, scores) or a split with a trained model",
    "compare": "fine-tune baseline, SG-Net, Syntax-BERT ... with the same seed; dev scores",
    "significance": "paired significance of two systems' dev scores from their run folders",
    "analyze": "a run's dev scores by input length (SG-Net §7.1); two runs side by side",
    "plot": "figures (PNG + SVG) from run folders: results with CIs, length buckets, curves, attention",
    "diagnose": "token-state drift and zero-shot similarity of a syntax configuration at init",
    "show": "an HTML page of one text's trees, syntax masks, attention, topical weights and gates",
    "probe": "structural (distance / depth) and POS / label probes per layer on UD EWT dev",
    "translate": "translate a text / .sgm file with a trained translation model",
    "export": "write a run's final model as a self-contained Hugging Face folder (loads without syntaxformer)",
}


class _StderrHandler(logging.StreamHandler):
    """A handler that writes to whatever ``sys.stderr`` is at the time of the message (tests swap it)."""

    @property
    def stream(self):
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


def quiet_progress_if_asked() -> None:
    """``SYNTAXFORMER_NO_PROGRESS=1`` turns off every progress bar of a command, Hugging Face's too (loading and
    writing weights): through ``HF_HUB_DISABLE_PROGRESS_BARS`` before huggingface_hub and transformers are imported,
    through their switches after."""
    if os.environ.get("SYNTAXFORMER_NO_PROGRESS", "") in ("", "0"):
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


class UsageError(Exception):
    """A command line that does not parse; the message is the one line to show."""


class ArgumentParser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are one line (``PROG: error: MESSAGE (see PROG --help)``), raised as
    :class:`UsageError` so that :func:`main` returns 2 instead of exiting from inside the parser."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: error: {message}{self._did_you_mean(message)} (see `{self.prog} --help`)")

    def _did_you_mean(self, message: str) -> str:
        """``; did you mean --x?`` for the unknown options named in an argparse message."""
        if "unrecognized arguments:" not in message:
            return ""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        hints = []
        for word in message.split("unrecognized arguments:", 1)[1].split():
            option = word.split("=", 1)[0]
            if option.startswith("--"):
                match = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
                if match:
                    hints.append(f"{option} -> did you mean {match[0]}?")
        return f" ({'; '.join(hints)})" if hints else ""


def os_error_message(error: OSError) -> str | None:
    """The one-line message of an ``OSError`` about a file the user named (missing, no permission, a folder where
    a file should be ...), or ``None`` when it names no file (then it is not the user's input: a bug)."""
    if error.filename is None:
        return None
    what = error.strerror or type(error).__name__
    where = str(error.filename) + ("" if error.filename2 is None else f" -> {error.filename2}")
    return f"{where}: {what}"


def unicode_error_message(error: UnicodeDecodeError, tb: types.TracebackType | None) -> str:
    """One line for a text file that is not in the expected encoding, naming the file where the traceback shows
    which file was being read (the innermost frame that holds an open text file)."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            name = getattr(value, "name", None) if isinstance(value, io.TextIOBase) else None
            if isinstance(name, str):
                return f"{name} is not {error.encoding} text ({error.reason}); save it as UTF-8"
    return f"an input file is not {error.encoding} text ({error.reason}); save it as UTF-8"


#: The commands that load run folders: they take ``--trust-run-code`` (:func:`syntaxformer.registry.trust_run_code`).
RUN_COMMANDS = frozenset(
    ("evaluate", "predict", "export", "analyze", "significance", "plot", "show", "probe", "diagnose", "translate")
)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="syntaxformer", description="Make any pretrained Transformer syntax-aware.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_ in COMMANDS.items():
        sub.add_parser(name, help=help_, description=help_, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2


def _main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        parser = build_parser()
        if parser.parse_args(argv).version:
            print(__version__)
            return 0
        parser.print_help()
        return 0 if not argv else 2
    name = argv[0]
    configure_logging()
    quiet_progress_if_asked()
    module = importlib.import_module("syntaxformer.commands." + name.replace("-", "_"))
    sub = ArgumentParser(prog=f"syntaxformer {name}", description=COMMANDS[name])
    module.add_arguments(sub)
    if name in RUN_COMMANDS:
        sub.add_argument(
            "--trust-run-code",
            action="store_true",
            help="let a run folder import the modules its run.json names (parts defined outside syntaxformer and "
            "its installed plugins): only for run folders from a source you trust",
        )
    args = sub.parse_args(argv[1:])
    try:
        with trust_run_code(bool(getattr(args, "trust_run_code", False))):
            return int(module.run(args) or 0)
    except (SyntaxformerError, OSError, UnicodeDecodeError) as e:
        if isinstance(e, SyntaxformerError):  # user-facing errors: one clear line, no traceback
            message: str | None = str(e)
        elif isinstance(e, OSError):  # a file the user named that cannot be read or written, else a bug
            message = os_error_message(e)
        else:  # a text file in another encoding, read by code that does not check it
            message = unicode_error_message(e, e.__traceback__)
        if message is None:  # an OSError not about a file: a bug, keep the traceback
            raise
        print(f"syntaxformer {name}: error: {' '.join(message.split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"syntaxformer {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
