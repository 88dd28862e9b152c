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
    ex = [RaceExample(f"m{i}", "m", "middle", "a", "q", ["x", "y"], label=i % 2) for i in range(4)] + [
        RaceExample(f"h{i}", "h", "high", "a", "q", ["x", "y"], label=0) for i in range(2)
    ]
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
    dev, feats, _parses = race_features
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
            assert ids[sep - len(q_ids) : sep] == q_ids and ids[sep + 1 : -1] == o_ids
            # the kept passage is the start of the full passage
            p_ids = tok(e.article, add_special_tokens=False)["input_ids"]
            assert ids[1 : 1 + kept] == p_ids[:kept] and kept == sep - 1 - len(q_ids)
            assert f.n_passage_total == len(p_ids)
        assert f.truncated  # these passages are longer than 96 tokens


def test_race_sdoi_masks_keep_in_window_ancestors_only(race_features):
    from syntaxformer.masks import sdoi_mask_from_features

    dev, feats, _ = race_features
    batch = race_collate([feature_arrays(f, SDOI_CONTEXT) for f in feats])
    B, C, L = batch["input_ids"].shape
    assert (len(feats), 4) == (B, C) and batch["labels"].tolist() == [e.label for e in dev]
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


# ---------------------------------------------------------------------------------------------------------------
# RaceTask
# ---------------------------------------------------------------------------------------------------------------
def test_race_task_postprocess_metrics_and_files_on_hand_made_logits():
    from syntaxformer.data.examples import TaskData
    from syntaxformer.tasks.base import get_task

    ex = [RaceExample(f"m{i}", "m", "middle", "a", "Who is it?", ["x", "y", "z"], label=i % 3) for i in range(4)] + [
        RaceExample(f"h{i}", "h", "high", "a", "Why?", ["x", "y", "z"], label=0) for i in range(2)
    ]
    data = TaskData(ex, "hand", "0", len(ex))
    logits = np.array([[3, 1, 0], [0, 2, 1], [0, 0, 1], [5, 0, 0], [0, 1, 0], [2, 0, 0]], dtype=np.float32)
    task = get_task("race")
    assert task.head == "multiple_choice" and task.label_names == ["labels"] and task.main_metric == "accuracy_all"
    preds = task.postprocess(data, None, (logits,))
    assert preds.values == [0, 1, 2, 0, 1, 0]
    m = task.compute_metrics(data, preds)
    want = race_accuracy(ex, logits.argmax(-1).tolist())
    assert m["accuracy"] == want and m["accuracy_all"] == want["all"] == 100 * 5 / 6
    assert (m["accuracy_middle"], m["accuracy_high"]) == (want["middle"], want["high"])
    files = task.run_files(data, preds)["predictions.json"]
    assert files["h0"] == {
        "prediction": "B",
        "gold": "A",
        "level": "high",
        "correct": False,
        "question_words": 1,
        "probs": files["h0"]["probs"],
    }
    assert all(abs(sum(r["probs"]) - 1) < 1e-4 for r in files.values()) and files["h1"]["correct"]
    records = task.prediction_records(data, preds)
    assert records[1]["option"] == "y" and records[1]["options"][records[1]["index"]] == "y"
    h0 = next(i for i, r in enumerate(records) if r["id"] == "h0")
    assert (records[h0]["prediction"], records[h0]["gold_label"]) == ("B", "A")
    assert records[h0]["scores"] == pytest.approx(list(preds.scores[h0])[: len(records[h0]["options"])])
    with pytest.raises(SyntaxformerError, match="takes no options"):
        get_task("race", verifier="joint")
    with pytest.raises(SyntaxformerError, match="rows of logits"):
        task.postprocess(data, None, logits[:2])


def test_race_task_load_split_sources_and_subsets(tmp_path):
    from syntaxformer.tasks.base import get_task

    task = get_task("race")
    section = {"data_dir": str(data_path("race")), "max_train_samples": 10, "max_eval_samples": 12, "data_seed": 0}
    train, dev = task.load_split("train", section), task.load_split("dev", section)
    assert len(train) == 10 and "seeded order" in train.sample_note and train.source.endswith("RACE_train.tar.gz")
    assert len(dev) == 12 and dev.total == 4887 and dev.metadata["counts"]["questions"] == 12
    assert [e.qid for e in task.load_split("dev", section).examples] == [e.qid for e in dev.examples]
    with pytest.raises(SyntaxformerError, match="not found"):
        task.load_split("test", {"data_dir": str(tmp_path)})


def test_race_task_featurize_emits_only_the_model_inputs(minilm_tokenizer, race_features):
    from syntaxformer.data.examples import TaskData
    from syntaxformer.tasks.base import get_task

    dev, feats, parses = race_features

    class Parsed:  # the parses of the fixture, as an annotator
        def annotate(self, texts):
            return [parses[t] for t in texts]

    task = get_task("race")
    data = TaskData(dev, "hand", "0", len(dev))
    parsed = task.featurize(
        data,
        TaskContext(
            tokenizer=minilm_tokenizer, annotator=Parsed(), syntax_inputs=SDOI_CONTEXT.syntax_inputs, max_length=96
        ),
        "dev",
    )
    plain = task.featurize(data, TaskContext(tokenizer=minilm_tokenizer, max_length=96), "dev")
    assert parsed.meta["n_truncated"] == plain.meta["n_truncated"] == len(dev)
    items = [parsed[i] for i in range(len(parsed))]
    for a, b, f in zip(items, (plain[i] for i in range(len(plain))), feats):
        assert list(a["options"][0]) == ["input_ids", "attention_mask", "token_type_ids", *SDOI_CONTEXT.syntax_inputs]
        assert list(b["options"][0]) == ["input_ids", "attention_mask", "token_type_ids"]
        for x, y, w in zip(a["options"], b["options"], f.options):  # unparsed: the same tokens and truncation
            assert np.array_equal(x["input_ids"], w.input_ids) and np.array_equal(y["input_ids"], w.input_ids)
    batch = task.collator(TaskContext(tokenizer=minilm_tokenizer))(items)
    assert batch["input_ids"].shape[:2] == (len(dev), 4) and batch["labels"].tolist() == [e.label for e in dev]


def test_race_task_through_the_runner_contract(tiny_model, tmp_path):
    from syntaxformer.data import make_annotator
    from syntaxformer.tasks.base import get_task
    from tests.tasks.task_driver import run_task

    task = get_task("race")
    assert task.training_defaults()["group_by_length"] is False  # [B, C, L] items: random order, as before
    out = run_task(
        task,
        tiny_model,
        {"data_dir": str(data_path("race")), "max_train_samples": 8, "max_eval_samples": 8},
        str(tmp_path),
        annotator=make_annotator(cache=None, progress=False),
        max_length=64,
    )
    m, preds = out["metrics"], out["files"]["predictions.json"]
    acc = m["accuracy"]
    assert acc["n_all"] == 8 and acc["n_middle"] + acc["n_high"] == 8 and out["features"].meta["n_truncated"] == 8
    assert all(isinstance(m[k], float) for k in task.metric_names)
    assert len(preds) == 8 and 100 * sum(p["correct"] for p in preds.values()) / 8 == pytest.approx(acc["all"])
    assert np.asarray(out["raw"]).shape == (8, 4)
