"""Per-subword syntax features (data/subword_features.py) on real spaCy parses of Multi30k sentences, aligned to a BPE
tokenizer learned on Multi30k: BMEO subword positions, inherited POS tags, case, clear errors."""

from __future__ import annotations

import pytest

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.subword_features import (
    N_RESERVED,
    SUBWORD_VALUES,
    UPOS_TAGS,
    XPOS_TAGS,
    forest_words,
    subword_feature_ids,
)
from syntaxformer.errors import SyntaxformerError

pytestmark = pytest.mark.usefixtures("one_thread")

SENTENCES = [
    "A Sunshine-drenched amalgamation of unbelievably colourful umbrellas.",
    "Two young, White males are outside near many bushes.",
]


@pytest.fixture(scope="module")
def aligned(annotator, tokenizers):
    src_tok, _ = tokenizers
    docs = annotator.annotate(SENTENCES)
    windows = SyntaxAligner(src_tok).align_batch(docs)
    return src_tok, docs, [w[0] for w in windows]


def test_subword_features_bmeo_inherited_pos_and_case_match_a_reference(aligned):
    _, docs, examples = aligned
    long_words = 0
    for doc, ex in zip(docs, examples):
        words = forest_words([doc])
        sents = doc.sentences
        upos = [t for s in sents for t in s.upos]
        xpos = [t for s in sents for t in s.xpos]
        ids = subword_feature_ids(ex, words, ["upos", "xpos", "case", "subword"])
        # reference: walk positions, count pieces per word directly
        word_of = list(ex.word_index)
        for pos, w in enumerate(word_of):
            if w < 0:
                assert all(ids[k][pos] == 0 for k in ids)  # </s>
                continue
            same = [p for p, x in enumerate(word_of) if x == w]
            k, n = same.index(pos), len(same)
            want = "O" if n == 1 else "B" if k == 0 else "E" if k == n - 1 else "M"
            assert SUBWORD_VALUES[ids["subword_ids"][pos] - N_RESERVED] == want
            assert UPOS_TAGS[ids["upos_ids"][pos] - N_RESERVED] == upos[w]  # every piece inherits its word's POS
            assert XPOS_TAGS[ids["xpos_ids"][pos] - N_RESERVED] == xpos[w]
            assert ids["case_ids"][pos] - N_RESERVED == int(words[w][0].isupper())
            long_words += n >= 3
    assert long_words >= 2  # the small vocabulary really splits words into B M... E
    # the spot checks a reader can verify by eye
    doc, ex = docs[0], examples[0]
    words = forest_words([doc])
    w = words.index("amalgamation")
    pieces = [p for p, x in enumerate(ex.word_index) if x == w]
    ids = subword_feature_ids(ex, words, ["upos", "subword", "case"])
    assert SUBWORD_VALUES[ids["subword_ids"][pieces[0]] - N_RESERVED] == "B"
    assert {UPOS_TAGS[i - N_RESERVED] for i in ids["upos_ids"][pieces]} == {"NOUN"}
    assert ids["case_ids"][pieces[0]] == N_RESERVED and ids["case_ids"][0] == N_RESERVED + 1  # "amalg..", "A"


def test_subword_features_missing_tags_and_unknown_features_are_clear_errors(aligned):
    _, _, examples = aligned
    ex = examples[0]
    ex.forest.xpos, saved = None, ex.forest.xpos
    try:
        with pytest.raises(SyntaxformerError, match="needs xpos tags"):
            subword_feature_ids(ex, None, ["xpos"])
    finally:
        ex.forest.xpos = saved
    with pytest.raises(SyntaxformerError, match="unknown syntax feature"):
        subword_feature_ids(ex, None, ["deprel"])
    with pytest.raises(SyntaxformerError, match="needs the words"):
        subword_feature_ids(ex, None, ["case"])
