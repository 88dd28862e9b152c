"""Error types. Every message names the offending input (file, line, sentence id) and what would be right."""

from __future__ import annotations


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
        where = ""
        if source is not None:
            where = f"{source}"
            if line is not None:
                where += f":{line}"
            where += ": "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message)


class TreeError(SyntaxformerError, ValueError):
    """Heads that do not form a valid forest (out-of-range head, cycle, self loop)."""


class AlignmentError(SyntaxformerError, ValueError):
    """Words and subword tokens that cannot be aligned (e.g. the words are not in the text)."""


class MissingDependencyError(SyntaxformerError, ImportError):
    """An optional dependency is not installed; the message names the extra / package to install."""
