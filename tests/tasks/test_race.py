"""RACE as a task: per-option features on real parses, [B, C, L] batches, accuracy, RaceTask through the driver."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from syntaxformer.data.readers.race import RaceExample, read_race_dir
from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.base import TaskContext
from syntaxformer.tasks.race import RaceFeaturizer, feature_arrays, race_accuracy, race_collate
from tests.conftest import data_path

torch.set_num_threads(1)

#: SG-Net's inputs (the arrays today's RACE batches carry).
SDOI_CONTEXT = TaskContext(tokenizer=None, syntax_inputs=("syntax_tree", "dep_tin", "dep_tout"))


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
    from syntaxformer.data.annotate import SpacyAnnotator

    dev = read_race_dir(data_path("race", "dev"))[:4]
    featurizer = RaceFeaturizer(minilm_tokenizer, SpacyAnnotator(cache=None, progress=False), max_length=96)
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
    batch = race_collate([feature_arrays(f, SDOI_CONTEXT) for f in feats])
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
    items = [feature_arrays(f, SDOI_CONTEXT) for f in (feats[0], short)]
    with pytest.raises(SyntaxformerError, match="different numbers of options"):
        race_collate(items)
    with pytest.raises(SyntaxformerError, match="too small"):
        RaceFeaturizer(None, None, max_length=4)
    assert np.all(race_collate(items[:1], labels=False)["attention_mask"].numpy() == 1)
