"""Per-subword syntax features of the Syntax-Infused Transformer (Sundararaman et al., "Model" section).

Every subword gets the features of the word it belongs to, plus its position inside that word:

* ``upos`` — coarse (universal) POS of the word (``Sentence.upos``); ``xpos`` — fine (PTB) POS (``Sentence.xpos``).
  "If the word *sunshine* is broken up into subwords *sun*, *sh*, and *ine*, each subword would be assigned the POS
  *NOUN*."
* ``case`` — whether the word is capitalised (its first character is upper case): "a binary element z^c ∈ {0, 1}".
* ``subword`` — the position of the subword in its word: **B**eginning, **M**iddle, **E**nd, or **O** when the
  subword is the whole word.

Ids, the same for every feature: **0 = no word** (special tokens and padding), **1 = unknown value** (a tag that is
not in the tag set), then the values in the order of the tag set. Subwords are aligned to words by
:class:`~syntaxformer.data.align.SyntaxAligner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from syntaxformer.data.align import AlignedExample
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import ConfigError, DataError, InputError

#: The 17 Universal Dependencies POS tags (coarse tag set; spaCy's ``Token.pos_``).
UPOS_TAGS: tuple[str, ...] = tuple(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()  # noqa: SIM905 (a word list)
)
#: Fine English tags (Penn Treebank + OntoNotes extras): the labels of spaCy's English taggers (``Token.tag_``).
XPOS_TAGS: tuple[str, ...] = tuple(
    (  # noqa: SIM905 (a word list)
        "$ '' , -LRB- -RRB- . : ADD AFX CC CD DT EX FW HYPH IN JJ JJR JJS LS MD NFP NN NNP NNPS "
        "NNS PDT POS PRP PRP$ RB RBR RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB XX _SP ``"
    ).split()
)
CASE_VALUES: tuple[str, ...] = ("lower", "capitalised")
SUBWORD_VALUES: tuple[str, ...] = ("B", "M", "E", "O")

#: Feature name -> its values (ids 2.. in this order; 0 = no word, 1 = unknown).
FEATURE_VALUES: dict[str, tuple[str, ...]] = {
    "upos": UPOS_TAGS,
    "xpos": XPOS_TAGS,
    "case": CASE_VALUES,
    "subword": SUBWORD_VALUES,
}
FEATURES: tuple[str, ...] = tuple(FEATURE_VALUES)
UNKNOWN_ID = 1  # id 0 (no word: special tokens, padding) is what the arrays start as
N_RESERVED = 2


def feature_vocab_size(name: str) -> int:
    """Number of ids of feature ``name`` (values + the two reserved ids)."""
    return len(_values(name)) + N_RESERVED


def _values(name: str) -> tuple[str, ...]:
    try:
        return FEATURE_VALUES[name]
    except KeyError:
        raise ConfigError(f"unknown syntax feature {name!r}; expected one of {', '.join(FEATURES)}") from None


def subword_feature_ids(
    example: AlignedExample, words: Sequence[str] | None, features: Sequence[str]
) -> dict[str, np.ndarray]:
    """Per-position ids of the requested features for one aligned window.

    Args:
        example: one window from :class:`~syntaxformer.data.align.SyntaxAligner` (its ``forest`` holds ``upos`` /
            ``xpos`` for all its words).
        words: the forest's words in order (needed for ``case`` only; ``None`` otherwise).
        features: names among :data:`FEATURES`.

    Returns:
        ``{f"{name}_ids": [L] int64}``; special tokens get 0 and every subword inherits its word's value, but for
        ``subword``: a word of ``n`` pieces gives ``O`` for ``n == 1``, else ``B`` for piece 0, ``E`` for piece
        ``n - 1`` and ``M`` between (piece numbers of the full, untruncated tokenization).

    Raises:
        ConfigError: an unknown feature.
        DataError / InputError: the sentences carry no tags of the requested tag set, or ``words`` is missing or
            has the wrong length.
    """
    word = np.asarray(example.word_index, dtype=np.int64)
    vis = word >= 0
    out: dict[str, np.ndarray] = {}
    for name in features:
        values = _values(name)
        ids = np.zeros(len(word), dtype=np.int64)
        if name == "subword":
            n = np.asarray(example.n_pieces, dtype=np.int64)[word[vis]]
            k = np.asarray(example.piece_index, dtype=np.int64)[vis]
            b, m, e, o = (N_RESERVED + values.index(v) for v in values)
            ids[vis] = np.where(n <= 1, o, np.where(k == 0, b, np.where(k >= n - 1, e, m)))
        elif name == "case":
            if words is None:
                raise InputError("the case feature needs the words of the example (words=None given)")
            if len(words) != len(example.forest):
                raise InputError(f"case features need the {len(example.forest)} words of the example, got {len(words)}")
            ids[vis] = np.asarray([N_RESERVED + int(w[:1].isupper()) for w in words], dtype=np.int64)[word[vis]]
        else:  # upos, xpos
            tags = getattr(example.forest, name)
            if tags is None:
                raise DataError(
                    f"feature {name!r} needs {name} tags on every sentence, but the parse has none; annotate with a "
                    f"spaCy pipeline that has a tagger (e.g. en_core_web_sm) or read a CoNLL-U file with {name}"
                )
            index = {t: i + N_RESERVED for i, t in enumerate(values)}
            ids[vis] = np.asarray([index.get(t, UNKNOWN_ID) for t in tags], dtype=np.int64)[word[vis]]
        out[f"{name}_ids"] = ids
    return out


def forest_words(texts: Sequence[object]) -> list[str]:
    """The words of an example's texts (Sentence / Document / list of Sentences), in forest order."""
    words: list[str] = []
    for t in texts:
        if isinstance(t, Sentence):
            words.extend(t.words)
        else:
            sentences = t.sentences if isinstance(t, Document) else cast("Sequence[Sentence]", t)
            for s in sentences:
                words.extend(s.words)
    return words
