"""The translation task (tasks/translation.py): registry, options, splits, featurization for a given model, batches,
postprocess and BLEU."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.base import Predictions, TaskContext, get_task
from syntaxformer.tasks.translation import ARMS, TranslationTask, collate_pairs, control_tags, encode_pairs
from tests.conftest import data_path

pytestmark = pytest.mark.usefixtures("one_thread")

ALL_INPUTS = ("upos_ids", "xpos_ids", "case_ids", "subword_ids", "dep_tin", "dep_tout", "syntax_tree")


def test_translation_is_registered_and_rebuilt_from_its_options():
    task = get_task("translation", arm="both", fraction=0.1)
    assert isinstance(task, TranslationTask) and task.head == "seq2seq" and task.main_metric == "bleu"
    assert task.features == ["upos", "case", "subword"] and task.use_sg_layer and task.feature_dim == 5
    assert task.syntax_inputs == ("upos_ids", "case_ids", "subword_ids", "dep_tin", "dep_tout", "syntax_tree")
    again = get_task("translation", **task.options())
    assert again.options() == task.options()
    assert get_task("translation", arm="vanilla_layer").syntax_inputs == ()  # the unmasked layer reads no parse
    defaults = task.training_defaults()
    assert defaults["label_smoothing_factor"] == 0.1 and defaults["lr_scheduler_type"] == "inverse_sqrt"
    assert defaults["predict_with_generate"] and defaults["generation_num_beams"] == 5
    assert (defaults["adam_beta1"], defaults["adam_beta2"]) == (0.9, 0.98) and defaults["load_best_model_at_end"]
    with pytest.raises(SyntaxformerError, match="unknown translation arm 'deep'"):
        TranslationTask(arm="deep")
    with pytest.raises(SyntaxformerError, match="fraction"):
        TranslationTask(fraction=0)
    with pytest.raises(SyntaxformerError, match="train_source and train_target"):
        TranslationTask(train_source="a.en")
    # the user's files are never validated or tested on Multi30k
    with pytest.raises(SyntaxformerError, match="needs your validation files"):
        TranslationTask(train_source="a.en", train_target="a.de")
    own = TranslationTask(train_source="a.en", train_target="a.de", valid_source="v.en", valid_target="v.de")
    assert own.evaluation_splits() == ("dev",) and own.eval_sets == {}
    named = TranslationTask(
        train_source="a.en",
        train_target="a.de",
        valid_source="v.en",
        valid_target="v.de",
        eval_sets={"test": ["t.en", "t.de"]},
    )
    assert named.evaluation_splits() == ("test",)  # the user's own test files, as named
    assert TranslationTask().evaluation_splits() == ("test2016",)  # Multi30k: the papers' test set
    assert set(ARMS) >= {"baseline", "syntax", "sgnet", "both"}


def test_translation_splits_of_multi30k():
    folder = str(data_path("multi30k"))
    task = TranslationTask(fraction=0.1, data_dir=folder)
    train = task.load_split("train")
    assert len(train) == 2900 and len(task.load_split("dev")) == 1014
    test = task.load_split("test")
    assert len(test) == 1000 and test.name == "test2016" and task.eval_set_names() == ["test2016"]
    with pytest.raises(SyntaxformerError, match="unknown translation split 'newstest'"):
        task.load_split("newstest")


def test_translation_featurize_emits_only_the_models_syntax_inputs(annotator, tokenizers, m30k_small):
    src_tok, tgt_tok = tokenizers
    train, _ = m30k_small
    pairs = train.select(range(8))
    items = encode_pairs(pairs, src_tok, tgt_tok, annotator, ALL_INPUTS, show_progress=False)
    for it in items:
        L = len(it["input_ids"])
        assert it["input_ids"][-1] == src_tok.eos_token_id and it["labels"][-1] == tgt_tok.eos_token_id
        assert all(len(it[k]) == L for k in ALL_INPUTS)
        assert it["syntax_tree"][-1] == -1 and it["subword_ids"][-1] == 0 and np.all(it["upos_ids"][:-1] > 0)
    task = TranslationTask(arm="syntax")
    context = TaskContext(
        tokenizer=src_tok,
        annotator=annotator,
        syntax_inputs=task.syntax_inputs,
        extra={"target_tokenizer": tgt_tok},
        progress=False,
    )
    features = task.featurize(pairs, context, "train")
    assert set(features[0]) == {"input_ids", "upos_ids", "case_ids", "subword_ids", "labels"}
    for a, b in zip(features, items):
        assert all(np.array_equal(a[k], b[k]) for k in a)
    baseline = TranslationTask(arm="baseline").featurize(
        pairs,
        TaskContext(tokenizer=src_tok, annotator=None, extra={"target_tokenizer": tgt_tok}, progress=False),
        "train",
    )
    assert set(baseline[0]) == {"input_ids", "labels"}  # no parse needed, the same ids
    assert all(np.array_equal(a["input_ids"], b["input_ids"]) for a, b in zip(baseline, items))
    with pytest.raises(SyntaxformerError, match="cannot emit"):
        encode_pairs(pairs, src_tok, tgt_tok, annotator, ("deprel_ids",), show_progress=False)

    batch = task.collator(context)(features)
    assert batch["labels"].min() == -100 and batch["upos_ids"].min() == 0
    assert batch["attention_mask"].sum().item() == sum(len(it["input_ids"]) for it in features)
    assert (batch["decoder_input_ids"][:, 0] == 2).all() and (batch["decoder_input_ids"] >= 0).all()
    assert np.array_equal(
        batch["decoder_input_ids"][:, 1:].numpy(), np.where(batch["labels"][:, :-1] < 0, 0, batch["labels"][:, :-1])
    )
    with pytest.raises(SyntaxformerError, match="empty batch"):
        collate_pairs([])


def _word_tags(upos, subword):
    """Slow reference: the tag of each word, walking the pieces (a word starts at B = 2 or O = 5)."""
    return [int(t) for t, s in zip(upos, subword) if s in (2, 5)]


def test_translation_tag_controls_keep_features_and_words_but_not_the_tags(annotator, tokenizers, m30k_small):
    src_tok, tgt_tok = tokenizers
    pairs = m30k_small[0].select(range(16))

    def features(arm, seed=0):
        task = TranslationTask(arm=arm, tag_seed=seed)
        context = TaskContext(
            tokenizer=src_tok,
            annotator=annotator,
            syntax_inputs=task.syntax_inputs,
            extra={"target_tokenizer": tgt_tok},
            progress=False,
        )
        return task.featurize(pairs, context, "train")

    real, shuffled, rand = features("syntax"), features("shuffled_tags"), features("random_tags")
    assert ARMS["shuffled_tags"]["features"] == ARMS["syntax"]["features"]
    changed = 0
    for a, s, r in zip(real, shuffled, rand):
        for k in ("input_ids", "case_ids", "subword_ids", "labels"):
            assert np.array_equal(a[k], s[k]) and np.array_equal(a[k], r[k])
        words = _word_tags(a["upos_ids"], a["subword_ids"])
        assert sorted(_word_tags(s["upos_ids"], s["subword_ids"])) == sorted(words)  # the sentence's own tags
        for ids in (s["upos_ids"], r["upos_ids"]):
            assert np.array_equal(ids == 0, a["upos_ids"] == 0)  # special tokens untouched
            # every piece of a word carries the word's (new) tag
            tag = None
            for t, sub in zip(ids, a["subword_ids"]):
                if sub in (2, 5):
                    tag = t
                elif sub in (3, 4):
                    assert t == tag
        assert all(2 <= t < 2 + 17 for t in _word_tags(r["upos_ids"], r["subword_ids"]))
        changed += int(not np.array_equal(a["upos_ids"], r["upos_ids"]))
    assert changed >= 14  # 16 sentences, random tags: almost surely not the parser's
    assert sum(not np.array_equal(a["upos_ids"], s["upos_ids"]) for a, s in zip(real, shuffled)) >= 12
    # seeded: the same tags again, other ones under another tag seed
    assert all(np.array_equal(a["upos_ids"], b["upos_ids"]) for a, b in zip(rand, features("random_tags")))
    assert any(not np.array_equal(a["upos_ids"], b["upos_ids"]) for a, b in zip(rand, features("random_tags", 1)))
    # a word of several pieces keeps one tag (hand-built sentence: O, B M E, O, then </s>)
    upos, sub = np.array([3, 4, 4, 4, 7, 0]), np.array([5, 2, 3, 4, 5, 0])
    out = control_tags(upos, sub, "shuffle", np.random.default_rng(3))
    assert out[-1] == 0 and len(set(out[1:4])) == 1 and sorted([out[0], out[1], out[4]]) == [3, 4, 7]
    with pytest.raises(SyntaxformerError, match="needs features upos and subword"):
        TranslationTask(features=["case"], tag_control="shuffle")
    with pytest.raises(SyntaxformerError, match="unknown tag_control"):
        TranslationTask(arm="syntax", tag_control="reverse")


def test_translation_postprocess_and_bleu(tokenizers, m30k_small):
    from syntaxformer.data.bpe import SPECIAL_TOKENS

    _src_tok, tgt_tok = tokenizers
    for tok in tokenizers:  # the ids of the special tokens are the constants of syntaxformer.data.bpe
        assert tok.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2, 3]
    _, valid = m30k_small
    task = TranslationTask()
    task.target_tokenizer = tgt_tok
    ids = tgt_tok(valid.targets)["input_ids"]
    width = max(map(len, ids)) + 2
    raw = np.full((len(ids), width), -100)
    for i, row in enumerate(ids):
        raw[i, 0] = 2  # <s>
        raw[i, 1 : len(row) + 1] = row
    predictions = task.postprocess(valid, None, raw)
    assert predictions.ids == valid.ids
    assert predictions.values == [tgt_tok.decode(row, skip_special_tokens=True).strip() for row in ids]
    assert sum(v == t for v, t in zip(predictions.values, valid.targets)) >= 18  # lossless but for <unk> pieces
    scores = task.compute_metrics(valid, predictions)
    assert scores["bleu"] > 90.0 and scores["signature"].startswith("nrefs:1|case:mixed")
    with pytest.raises(SyntaxformerError, match="translations for the"):
        task.postprocess(valid, None, raw[:3])
    records = task.prediction_records(valid, Predictions(valid.ids[:1], ["x"]))
    assert records == [
        {"id": valid.ids[0], "text": valid.sources[0], "translation": "x", "reference": valid.targets[0]}
    ]
