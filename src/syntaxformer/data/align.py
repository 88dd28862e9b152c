"""Word <-> subword alignment for any Hugging Face *fast* tokenizer.

The output of alignment is an :class:`AlignedExample`: one model input window (``input_ids`` ...) plus, for every
position, the index of the word it belongs to in the example's :class:`WordForest` (all words of all sentences of
all texts of the example, in order). Syntax tensors are derived from it by :mod:`syntaxformer.data.encode`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from syntaxformer.data.constituency import Tree


@dataclass
class WordForest:
    """The words of one example (single text, pair, or passage), each sentence its own tree.

    Attributes:
        heads: ``[W]`` 0-based index (into this forest) of each word's head; -1 for a sentence root.
        tree_id: ``[W]`` index of the sentence (tree) each word belongs to, 0..T-1 across the whole example.
        segment: ``[W]`` which input text the word comes from (0 = first text, 1 = second text of a pair).
        trees: per sentence, its constituency tree (leaves = that sentence's words) or ``None``.
        sentence_start: ``[T]`` forest index of the first word of each sentence.
        upos: ``[W]`` coarse POS tags (or ``None``); xpos likewise.
    """

    heads: np.ndarray
    tree_id: np.ndarray
    segment: np.ndarray
    trees: list[Tree | None] = field(default_factory=list)
    sentence_start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    upos: list[str] | None = None
    xpos: list[str] | None = None

    def __len__(self) -> int:
        return len(self.heads)


@dataclass
class AlignedExample:
    """One tokenized window with its word alignment.

    Attributes:
        input_ids: ``[L]`` token ids (special tokens included, no padding).
        token_type_ids: ``[L]`` or ``None`` if the tokenizer does not use them.
        word_index: ``[L]`` forest index of the word each position belongs to; -1 for special tokens.
        piece_index: ``[L]`` 0 for the first piece of its word in the *full* (untruncated) tokenization, k for the
            (k+1)-th piece; -1 for special tokens. Windows cut from a long text keep the full-text numbering.
        n_pieces: ``[W]`` number of pieces of each word in the full tokenization (0 if a word got no piece of its
            own, e.g. when the tokenizer merged it into a neighbour's piece).
        forest: the example's words and trees.
        window: index of this window among the windows of the example (0 unless stride/overflow is used).
        offsets: ``[L, 2]`` character offsets of each position in its text ((0, 0) for special tokens).
        sequence_ids: ``[L]`` text index of each position (0/1), -1 for special tokens.
    """

    input_ids: np.ndarray
    word_index: np.ndarray
    piece_index: np.ndarray
    n_pieces: np.ndarray
    forest: WordForest
    token_type_ids: np.ndarray | None = None
    window: int = 0
    offsets: np.ndarray | None = None
    sequence_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.input_ids)
