"""Error types. Every message names the offending input (file, line, sentence id) and what would be right.

Every error a user can cause is a :class:`SyntaxformerError` (the command line shows it as one line, never a
traceback). The subclasses also derive from the matching built-in exception (``ValueError``, ``ImportError``,
``KeyError``), so ``except ValueError`` keeps working.
"""

from __future__ import annotations


def clip_text(text: str, n: int = 80) -> str:
    """An excerpt of an input for a message: ``text`` with its whitespace runs made single spaces, cut to ``n``
    characters (``...``), as a ``repr``."""
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 3] + "...")


class SyntaxformerError(Exception):
    """Base class of all errors raised by syntaxformer."""


class FormatError(SyntaxformerError, ValueError):
    """Malformed input file or string (CoNLL-U, bracketed tree, JSONL, ...).

    Args:
        message: what is wrong and what would be right.
        source: file name or other description of where the input came from.
        line: 1-based line number in ``source``, if known.
    """

    def __init__(self, message: str, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        else:
            where = f"line {line}: " if line is not None else ""
        super().__init__(where + message)


class TreeError(SyntaxformerError, ValueError):
    """Heads that do not form a valid forest (out-of-range head, cycle, self loop)."""


class AlignmentError(SyntaxformerError, ValueError):
    """Words and subword tokens that cannot be aligned (e.g. the words are not in the text)."""


class MissingDependencyError(SyntaxformerError, ImportError):
    """An optional dependency is not installed; the message names the extra / package to install."""


class ConfigError(SyntaxformerError, ValueError):
    """An option value that is not allowed (run config, model config, command-line flag); the message names the
    option, the value given and what is allowed."""


class InputError(SyntaxformerError, ValueError):
    """Arguments or tensors passed to a library function that do not fit it (shape, dtype, missing batch key);
    the message names the argument and what was expected."""


class DataError(SyntaxformerError, ValueError):
    """Data that cannot be used although it parses (an empty split, a file that is missing, labels that do not
    match the task); the message names the file or data set."""


class AnnotatorError(SyntaxformerError, ValueError):
    """An annotator spec, option or input that cannot work (the message says what would)."""


class ParseNotFoundError(AnnotatorError):
    """A text (or word list) with no parse in a pre-parsed file; the message names the text and the file."""


class UnknownTaskError(SyntaxformerError, KeyError):
    """A task name that is not registered; the message lists the known tasks."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0])
