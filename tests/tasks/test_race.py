"""RACE: readers on the real files (counts against PROVENANCE.txt), bad input, per-option features, accuracy."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from syntaxformer.errors import FormatError, SyntaxformerError
from syntaxformer.tasks.race import (
    RaceExample,
    RaceFeaturizer,
    examples_from_hub_rows,
    parse_race_record,
    race_accuracy,
    race_collate,
    race_counts,
    read_race_dir,
    read_race_file,
    read_race_tarball,
)
from tests.conftest import data_path

torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------------------------
# Readers on the real data
# ---------------------------------------------------------------------------------------------------------------
def test_read_race_dir_counts_match_provenance():
    dev = read_race_dir(data_path("race", "dev"))
    # PROVENANCE.txt: dev middle 368 passages / 1436 questions, high 1021 / 3451 => 4887.
    assert race_counts(dev) == {"middle_passages": 368, "middle_questions": 1436, "high_passages": 1021,
                                "high_questions": 3451, "passages": 1389, "questions": 4887}
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
GOOD = {"article": "Tom has a cat. It is black.", "questions": ["What color is the cat?", "Tom has a _ ."],
        "options": [["black", "white", "red", "blue"], ["dog", "cat", "fish", "bird"]], "answers": ["A", "B"],
        "id": "middle1.txt"}


@pytest.mark.parametrize("change, message", [
    ({"article": "  "}, "empty 'article'"),
    ({"answers": ["A"]}, "equally many"),
    ({"answers": ["A", "E"]}, "not a letter A..D"),
    ({"options": [["x"], ["a", "b"]]}, "at least two option"),
    ({"questions": None}, "lacks the field"),
])
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
    rows = [{"example_id": "high132.txt", "article": "A b.", "question": "Q1?", "options": ["a", "b", "c", "d"],
             "answer": "C"},
            {"example_id": "high132.txt", "article": "A b.", "question": "Q2?", "options": ["a", "b", "c", "d"],
             "answer": "A"}]
    a, b = examples_from_hub_rows(rows)
    assert (a.qid, a.level, a.label, b.qid, b.label) == ("high132.txt#0", "high", 2, "high132.txt#1", 0)


def test_race_accuracy_by_level():
    ex = [RaceExample(f"m{i}", "m", "middle", "a", "q", ["x", "y"], label=i % 2) for i in range(4)] + \
         [RaceExample(f"h{i}", "h", "high", "a", "q", ["x", "y"], label=0) for i in range(2)]
    preds = {"m0": 0, "m1": 1, "m2": 1, "m3": 1, "h0": 1}  # middle 3/4, high 0/2 (h1 missing), all 3/6
    acc = race_accuracy(ex, preds)
    assert acc["middle"] == 75.0 and acc["high"] == 0.0 and acc["all"] == 50.0
    assert (acc["n_middle"], acc["n_high"], acc["n_all"]) == (4, 2, 6)
    assert race_accuracy(ex, [0, 1, 0, 1, 0, 0])["all"] == 100.0


# ---------------------------------------------------------------------------------------------------------------
# Features on real parses
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def race_features(minilm_tokenizer):
    from syntaxformer.data import make_annotator

    dev = read_race_dir(data_path("race", "dev"))[:4]
    featurizer = RaceFeaturizer(minilm_tokenizer, make_annotator(cache=None, progress=False), max_length=96)
    parses = featurizer.parse(dev)
    return dev, featurizer(dev, parses), parses


def test_race_features_layout_and_truncation(minilm_tokenizer, race_features):
    dev, feats, parses = race_features
    tok = minilm_tokenizer
    for e, f in zip(dev, feats):
        assert f.label == e.label and len(f.options) == len(e.options)
        for w, option, kept in zip(f.options, e.options, f.n_passage_tokens):
            ids = list(w.input_ids)
            assert len(ids) <= 96 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
            assert ids.count(tok.sep_token_id) == 2
            sep = ids.index(tok.sep_token_id)
            # [CLS] passage || question [SEP] option [SEP]: the question and the option are complete.
            q_ids = tok(e.question, add_special_tokens=False)["input_ids"]
            o_ids = tok(option, add_special_tokens=False)["input_ids"]
            assert ids[sep - len(q_ids):sep] == q_ids and ids[sep + 1:-1] == o_ids
            # the kept passage is the start of the full passage
            p_ids = tok(e.article, add_special_tokens=False)["input_ids"]
            assert ids[1:1 + kept] == p_ids[:kept] and kept == sep - 1 - len(q_ids)
            assert f.n_passage_total == len(p_ids)
        assert f.truncated  # these passages are longer than 96 tokens


def test_race_sdoi_masks_keep_in_window_ancestors_only(race_features):
    from syntaxformer.masks import sdoi_mask_from_features

    dev, feats, _ = race_features
    batch = race_collate(feats)
    B, C, L = batch["input_ids"].shape
    assert (B, C) == (len(feats), 4) and batch["labels"].tolist() == [e.label for e in dev]
    flat = {k: v.reshape(B * C, L) for k, v in batch.items() if k != "labels"}
    mask = sdoi_mask_from_features(flat)  # (B*C, L, L)
    for n, w in enumerate(o for f in feats for o in f.options):
        heads, wi = w.forest.heads, w.word_index
        for i in range(L):
            if i >= len(wi) or wi[i] < 0:  # specials and padding: themselves only
                assert mask[n, i].nonzero().flatten().tolist() == [i]
                continue
            anc, k = {int(wi[i])}, int(wi[i])
            while heads[k] >= 0:
                k = int(heads[k])
                anc.add(k)
            # exactly the in-window positions whose word is an ancestor-or-self ("share" criterion): ancestors cut
            # off by the truncation are dropped, nothing else is added
            want = [j for j in range(len(wi)) if wi[j] >= 0 and int(wi[j]) in anc]
            assert mask[n, i].nonzero().flatten().tolist() == want


def test_race_collate_rejects_mixed_option_counts(race_features):
    _, feats, _ = race_features
    short = type(feats[0])(0, "x", feats[0].options[:3], 0)
    with pytest.raises(SyntaxformerError, match="different numbers of options"):
        race_collate([feats[0], short])
    with pytest.raises(SyntaxformerError, match="too small"):
        RaceFeaturizer(None, None, max_length=4)
    assert np.all(race_collate(feats[:1], labels=False)["attention_mask"].numpy() == 1)
