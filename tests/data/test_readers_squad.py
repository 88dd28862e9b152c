"""SQuAD reader: the real file (counts against PROVENANCE.txt), the article split, hub rows."""

from __future__ import annotations

import pytest

from syntaxformer.data.readers.squad import example_from_row, read_squad, split_by_article, squad_counts
from syntaxformer.errors import SyntaxformerError
from tests.conftest import data_path


def test_reader_counts_on_real_file():
    examples = read_squad(data_path("squad2", "dev-v2.0-half.json"))
    counts = squad_counts(examples)
    print("dev-v2.0-half.json:", counts)
    # PROVENANCE.txt: 16 articles, 6,078 questions, 3,168 unanswerable.
    assert counts == {"articles": 16, "paragraphs": 646, "questions": 6078, "answerable": 2910, "unanswerable": 3168}
    for e in examples:
        assert e.is_impossible == (not e.answers)
        for a in e.answers:  # every answer indexes its text in the passage
            assert e.context[a["answer_start"] : a["answer_start"] + len(a["text"])] == a["text"]
    assert len({e.qid for e in examples}) == len(examples)


def test_split_by_article_is_deterministic_and_disjoint():
    examples = read_squad(data_path("squad2", "dev-v2.0-half.json"))
    train, held = split_by_article(examples, held_out_fraction=0.1, seed=0)
    assert len(train) + len(held) == len(examples)
    assert not {e.title for e in train} & {e.title for e in held}
    assert len({e.title for e in held}) == 2  # ceil(0.1 * 16)
    again = split_by_article(list(reversed(examples)), 0.1, seed=0)[1]
    assert {e.title for e in again} == {e.title for e in held}  # independent of input order
    assert split_by_article(examples, 0.0)[1] == []
    with pytest.raises(SyntaxformerError, match="held_out_fraction"):
        split_by_article(examples, 1.0)


def test_examples_from_hub_rows():
    rows = [
        {
            "id": "a",
            "title": "T",
            "context": "Paris is in France.",
            "question": "Where?",
            "answers": {"text": ["France"], "answer_start": [12]},
        },
        {
            "id": "b",
            "title": "T",
            "context": "Paris is in France.",
            "question": "Why?",
            "answers": {"text": [], "answer_start": []},
        },
    ]
    a, b = (example_from_row(r) for r in rows)
    assert a.answers == [{"text": "France", "answer_start": 12}] and not a.is_impossible
    assert b.is_impossible and b.answer_texts == [""]
