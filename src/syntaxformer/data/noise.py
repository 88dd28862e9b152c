"""Parser noise: a copy of a parse with a fraction of its heads re-attached at random, always a valid tree.

SG-Net, TPAMI section 7.6 (influence of parsing performance): a proportion of the parse is turned into random
errors. :func:`corrupt_heads` / :func:`corrupt_sentence` re-attach a given fraction of the words to random heads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from syntaxformer.data import tree as _tree
from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import ConfigError

__all__ = ["corrupt_heads", "corrupt_sentence"]


def corrupt_heads(heads: Sequence[int], fraction: float, rng: np.random.Generator | int | None = None) -> list[int]:
    """Re-attach a fraction of the words of a sentence to random new heads, keeping a valid tree.

    ``round(fraction * n_attached)`` words are re-attached, where ``n_attached`` is the number of non-root words
    (``n - 1`` for a single-root tree; rounding is half-up). Each chosen word gets a new head drawn uniformly
    among the words outside its own subtree other than its current head, so no cycle can appear, roots stay
    roots, and a single-root tree stays single-rooted. A word with no such candidate (its subtree is everything
    but its head) is skipped and another word is tried, so exactly that many heads change whenever possible:
    always for fewer than ``n - 1`` words or several roots. ``fraction = 1`` re-attaches every non-root word that
    can be; a single root must keep one child, so one word may stay (e.g. in a star).

    Args:
        heads: 0-based heads, -1 = root (a valid forest).
        fraction: in [0, 1].
        rng: numpy ``Generator`` or seed.

    Returns:
        The new heads (a new list; the input is not modified).
    """
    if not 0.0 <= fraction <= 1.0:
        raise ConfigError(f"fraction must be in [0, 1], got {fraction}")
    _tree.check_heads(heads)
    rng = np.random.default_rng(rng)  # a Generator is returned as it is
    out = [int(h) for h in heads]
    attached = [i for i, h in enumerate(out) if h >= 0]
    target = int(np.floor(fraction * len(attached) + 0.5))
    if target == 0:
        return out
    n = len(out)
    order = [int(i) for i in rng.permutation(attached)]
    changed = 0
    for _ in range(2):  # a second pass: an earlier re-attachment may have freed candidates for a skipped word
        skipped = []
        for w in order:
            if changed == target:
                return out
            # v is in w's subtree when w is v or one of its ancestors
            candidates = [v for v in range(n) if v != out[w] and v != w and w not in _tree.ancestors(out, v)]
            if candidates:
                out[w] = int(candidates[int(rng.integers(len(candidates)))])
                changed += 1
            else:
                skipped.append(w)
        order = skipped
    return out


def corrupt_sentence(sentence: Sentence, fraction: float, rng: np.random.Generator | int | None = None) -> Sentence:
    """A copy of ``sentence`` with :func:`corrupt_heads` applied to its dependency heads.

    Dependency labels, POS tags and the constituency tree are kept (the tree is independent of the dependency
    heads, but the lexical heads of its phrases, which :mod:`syntaxformer.data.collate` takes from the dependency
    heads, change with them). ``metadata["corrupted_heads"]`` records the fraction.
    """
    heads = corrupt_heads(sentence.heads, fraction, rng)
    return dataclasses.replace(sentence, heads=heads, metadata={**sentence.metadata, "corrupted_heads": fraction})
