"""RACE readers: the real files (counts against PROVENANCE.txt), the tarball, bad input, hub rows."""

from __future__ import annotations

import json

import pytest

from syntaxformer.data.readers.race import (
    examples_from_hub_rows,
    parse_race_record,
    race_counts,
    read_race_dir,
    read_race_file,
    read_race_tarball,
)
from syntaxformer.errors import FormatError, SyntaxformerError
from tests.conftest import data_path


def test_read_race_dir_counts_match_provenance():
    dev = read_race_dir(data_path("race", "dev"))
    # PROVENANCE.txt: dev middle 368 passages / 1436 questions, high 1021 / 3451 => 4887.
    assert race_counts(dev) == {
        "middle_passages": 368,
        "middle_questions": 1436,
        "high_passages": 1021,
        "high_questions": 3451,
        "passages": 1389,
        "questions": 4887,
    }
    assert len({e.qid for e in dev}) == len(dev)
    assert all(len(e.options) == 4 and 0 <= e.label < 4 for e in dev)
    first = read_race_file(data_path("race", "dev", "middle", "1011.txt"))
    raw = json.loads(data_path("race", "dev", "middle", "1011.txt").read_text())
    assert [e.answer for e in first] == raw["answers"] and first[0].qid == "middle1011.txt#0"
    assert first[0].level == "middle" and first[0].options == raw["options"][0]


def test_read_race_tarball_counts_and_seeded_subset():
    path = data_path("race", "RACE_train.tar.gz")
    train = read_race_tarball(path)
    counts = race_counts(train)
    # PROVENANCE.txt: middle 6409 passages / 25421 questions, high 18728 / 62445 => 87866 questions. Two high
    # files (15946.txt, 16528.txt) hold no question, so 18726 high passages have questions.
    assert (counts["middle_questions"], counts["high_questions"], counts["questions"]) == (25421, 62445, 87866)
    assert (counts["middle_passages"], counts["high_passages"]) == (6409, 18726)
    a = read_race_tarball(path, max_questions=40, seed=0)
    b = read_race_tarball(path, max_questions=40, seed=0)
    c = read_race_tarball(path, levels=("middle",), max_questions=40, seed=1)
    assert len(a) == 40 and [e.qid for e in a] == [e.qid for e in b] and [e.qid for e in a] != [e.qid for e in c]
    # Whole passages (all their questions) except possibly the last one.
    by_passage = {}
    for e in a:
        by_passage.setdefault(e.passage_id, []).append(int(e.qid.split("#")[1]))
    for ks in list(by_passage.values())[:-1]:
        assert ks == list(range(len(ks)))
    assert {e.level for e in c} == {"middle"} and {e.level for e in a} == {"middle", "high"}


# ---------------------------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------------------------
GOOD = {
    "article": "Tom has a cat. It is black.",
    "questions": ["What color is the cat?", "Tom has a _ ."],
    "options": [["black", "white", "red", "blue"], ["dog", "cat", "fish", "bird"]],
    "answers": ["A", "B"],
    "id": "middle1.txt",
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"article": "  "}, "empty 'article'"),
        ({"answers": ["A"]}, "equally many"),
        ({"answers": ["A", "E"]}, "not a letter A..D"),
        ({"options": [["x"], ["a", "b"]]}, "at least two option"),
        ({"questions": None}, "lacks the field"),
    ],
)
def test_parse_race_record_rejects_bad_records(change, message):
    record = {**GOOD, **change}
    if change.get("questions", 1) is None:
        del record["questions"]
    with pytest.raises(FormatError, match=message) as err:
        parse_race_record(record, "dev/middle/1.txt")
    assert "dev/middle/1.txt" in str(err.value)


def test_read_race_file_and_dir_errors(tmp_path):
    bad = tmp_path / "middle" / "7.txt"
    bad.parent.mkdir()
    bad.write_text('{"article": "x", "questions": [')
    with pytest.raises(FormatError, match="not valid JSON") as err:
        read_race_file(bad)
    assert "7.txt" in str(err.value)
    with pytest.raises(SyntaxformerError, match="high"):  # the high/ folder is missing
        read_race_dir(tmp_path, levels=("high",))
    with pytest.raises(SyntaxformerError, match="not found"):
        read_race_tarball(tmp_path / "none.tar.gz")
    examples = parse_race_record(GOOD, "x")
    assert [e.label for e in examples] == [0, 1] and examples[1].level == "middle"


def test_examples_from_hub_rows():
    rows = [
        {
            "example_id": "high132.txt",
            "article": "A b.",
            "question": "Q1?",
            "options": ["a", "b", "c", "d"],
            "answer": "C",
        },
        {
            "example_id": "high132.txt",
            "article": "A b.",
            "question": "Q2?",
            "options": ["a", "b", "c", "d"],
            "answer": "A",
        },
    ]
    a, b = examples_from_hub_rows(rows)
    assert (a.qid, a.level, a.label, b.qid, b.label) == ("high132.txt#0", "high", 2, "high132.txt#1", 0)
