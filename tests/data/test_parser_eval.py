"""UAS / LAS on hand-built gold / predicted trees with known scores."""

from __future__ import annotations

import pytest

from syntaxformer.data.parser_eval import attachment_scores, is_punct, label_scheme
from syntaxformer.data.sentence import Sentence

# "She ate fish ." (UD): She <-nsubj- ate, fish <-obj- ate, . <-punct- ate
GOLD = Sentence(
    ["She", "ate", "fish", "."],
    [1, -1, 1, 1],
    deprels=["nsubj", "root", "obj", "punct"],
    upos=["PRON", "VERB", "NOUN", "PUNCT"],
    xpos=["PRP", "VBD", "NN", "."],
)
# "In Paris :" with a PTB-only gold (no UPOS): ':' is punctuation by its PTB tag
GOLD2 = Sentence(["In", "Paris", ":"], [1, -1, 1], deprels=["case", "root", "punct"], xpos=["IN", "NNP", ":"])


def _pred(heads, deprels):
    return Sentence(list(GOLD.words), heads, deprels=deprels)


def test_parser_eval_known_scores():
    # heads: She wrong (-> fish), ate ok, fish ok, '.' wrong (-> fish); labels: fish has wrong label
    pred = _pred([2, -1, 1, 2], ["nsubj", "root", "iobj", "punct"])
    pred2 = Sentence(list(GOLD2.words), [1, -1, 1], deprels=["case", "root", "punct"])
    s = attachment_scores([GOLD, GOLD2], [pred, pred2])
    assert s.n_sentences == 2 and s.n_tokens == 7 and s.n_tokens_no_punct == 5
    assert s.uas == pytest.approx(5 / 7)  # ate, fish, In, Paris, ':'
    assert s.las == pytest.approx(4 / 7)  # ate, In, Paris, ':'
    assert s.uas_no_punct == pytest.approx(4 / 5)  # ate, fish, In, Paris
    assert s.las_no_punct == pytest.approx(3 / 5)
    assert s.gold_scheme == "ud" and s.note is None


def test_parser_eval_perfect_and_all_wrong():
    perfect = attachment_scores([GOLD], [_pred(GOLD.heads, GOLD.deprels)])
    assert (perfect.uas, perfect.las, perfect.uas_no_punct, perfect.las_no_punct) == (1.0, 1.0, 1.0, 1.0)
    wrong = attachment_scores([GOLD], [_pred([-1, 0, 0, 0], ["root", "nsubj", "nsubj", "nsubj"])])
    assert wrong.uas == 0.0 and wrong.las == 0.0


def test_parser_eval_subtypes_are_stripped():
    gold = Sentence(["his", "dog"], [1, -1], deprels=["nmod:poss", "root"])
    pred = Sentence(["his", "dog"], [1, -1], deprels=["nmod", "root"])
    assert attachment_scores([gold], [pred]).las == 1.0
    assert attachment_scores([gold], [pred], strip_subtypes=False).las == 0.5


def test_parser_eval_different_label_schemes_give_no_las():
    pred = _pred([1, -1, 1, 1], ["nsubj", "ROOT", "dobj", "punct"])  # spaCy / ClearNLP labels
    s = attachment_scores([GOLD], [pred])
    assert s.uas == 1.0 and s.las is None and s.las_no_punct is None
    assert s.gold_scheme == "ud" and s.pred_scheme == "clearnlp" and "differ" in s.note
    forced = attachment_scores([GOLD], [pred], compare_labels=True)
    assert forced.las == 0.5  # nsubj and punct match by name
    assert attachment_scores([GOLD], [_pred(GOLD.heads, GOLD.deprels)], compare_labels=False).las is None
    unlabelled = attachment_scores([GOLD], [Sentence(list(GOLD.words), GOLD.heads)])
    assert unlabelled.las is None and "no dependency labels" in unlabelled.note


def test_parser_eval_label_scheme_detection():
    assert label_scheme(["nsubj", "obj", "obl:tmod", "root"]) == "ud"
    assert label_scheme(["nsubj", "dobj", "prep", "pobj", "ROOT"]) == "clearnlp"
    assert label_scheme(["nsubj", "det"]) is None  # shared names: undecidable
    assert label_scheme(["NP-SBJ", "xyz"]) is None and label_scheme([]) is None


def test_parser_eval_punctuation_and_errors():
    assert [is_punct(GOLD, i) for i in range(4)] == [False, False, False, True]
    assert [is_punct(GOLD2, i) for i in range(3)] == [False, False, True]
    with pytest.raises(ValueError, match="pair up"):
        attachment_scores([GOLD], [])
    with pytest.raises(ValueError, match="gold has 4 words"):
        attachment_scores([GOLD], [Sentence(["She", "ate"], [1, -1])])
    empty = attachment_scores([], [])
    assert empty.uas is None and empty.n_tokens == 0
