"""Question-length buckets (SG-Net TPAMI Fig. 4 groups reading-comprehension questions by length)."""

from __future__ import annotations

from typing import Sequence

__all__ = ["LENGTH_BUCKETS", "question_words", "length_bucket"]

#: Question-length buckets in words: ``(low, high)`` inclusive, ``high = None`` = no upper bound.
LENGTH_BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 5), (6, 10), (11, 15), (16, 20), (21, None))


def question_words(question: str) -> int:
    """Question length in words (whitespace tokens), the unit of the length buckets."""
    return len(question.split())


def length_bucket(n_words: int, buckets: Sequence[tuple[int, int | None]] = LENGTH_BUCKETS) -> str:
    """``"1-5"``, ``"6-10"`` ... ``">20"``: the bucket of a question of ``n_words`` words."""
    for lo, hi in buckets:
        if n_words >= lo and (hi is None or n_words <= hi):
            return f">{lo - 1}" if hi is None else f"{lo}-{hi}"
    return f"<{buckets[0][0]}"
