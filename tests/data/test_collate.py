"""The collator's batches (data/collate.py) end to end on real parts: spaCy parses -> MiniLM tokenizer alignment
(pairs, passages, windows) -> collator -> batched masks, checked against the brute-force references of
tests/masks/reference.py; raw text to a batch equal to the tokenizer's own."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.masks import relation_groups_from_features, sdoi_mask_from_features
from tests.conftest import data_path
from tests.masks.reference import ref_dep_groups, ref_sdoi

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rte_docs(annotator):
    lines = data_path("glue", "RTE", "dev.tsv").read_text(encoding="utf-8").splitlines()[1:25]
    rows = [line.split("\t") for line in lines]
    premises = annotator.annotate([r[1] for r in rows])  # multi-sentence passages
    hypotheses = annotator.annotate([r[2] for r in rows])
    return premises, hypotheses


@pytest.mark.parametrize("criterion", ["share", "children"])
@pytest.mark.parametrize("stride", [None, 8])
def test_collate_pairs_and_windows_match_reference(minilm_tokenizer, rte_docs, criterion, stride):
    premises, hypotheses = rte_docs
    aligner = SyntaxAligner(minilm_tokenizer, max_length=48, stride=stride, window_segment=0)
    examples = [w for ws in aligner.align_batch(premises, hypotheses) for w in ws]
    assert any(len(p) > 1 for p in premises), "expected multi-sentence passages in RTE"
    if stride is not None:
        assert len(examples) > len(premises), "expected several windows per long premise"
    collate = SyntaxCollator(pad_token_id=minilm_tokenizer.pad_token_id, criterion=criterion, constituency=False)
    batch = collate(examples)
    mask = sdoi_mask_from_features(batch).numpy()
    dep, _ = relation_groups_from_features(batch, constituency=False)
    dep = dep.numpy()
    for b, ex in enumerate(examples):
        n = len(ex)
        assert np.array_equal(mask[b, :n, :n], ref_sdoi(ex, criterion)), f"SDOI differs in example {b}"
        assert np.array_equal(dep[b, :n, :n], ref_dep_groups(ex, criterion)), f"groups differ in example {b}"
        # padding: never attended, attends only to itself
        assert not mask[b, :n, n:].any() and np.array_equal(mask[b, n:, n:], np.eye(mask.shape[1] - n, dtype=bool))
        assert mask[b].any(axis=-1).all()


def test_collate_raw_text_to_batch_roundtrip(minilm_tokenizer, annotator):
    texts = ["The quick brown fox jumps over the lazy dog. It did not look back!", "", "Ok."]
    docs = annotator.annotate(texts)
    assert [len(d) for d in docs] == [2, 0, 1]
    aligner = SyntaxAligner(minilm_tokenizer)
    windows = [w for d in docs for w in aligner(d)]
    batch = SyntaxCollator(pad_token_id=minilm_tokenizer.pad_token_id)(windows)
    ref = minilm_tokenizer(texts, padding=True)
    assert batch["input_ids"].tolist() == ref["input_ids"]
    assert batch["attention_mask"].tolist() == ref["attention_mask"]
    # the empty text has no syntax at all: every position attends to itself only
    empty = sdoi_mask_from_features(batch)[1]
    assert np.array_equal(empty.numpy(), np.eye(empty.shape[0], dtype=bool))


def test_collate_passes_label_on_as_labels():
    """A datasets row with `label` (as DataCollatorWithPadding renames it) reaches the model as `labels`."""
    from syntaxformer.data.collate import SyntaxCollator

    rows = [
        {"input_ids": [101, 7, 102], "attention_mask": [1, 1, 1], "syntax_tree": [-1, 0, -1], "label": 1},
        {"input_ids": [101, 102], "attention_mask": [1, 1], "syntax_tree": [-1, -1], "label_ids": 0},
    ]
    batch = SyntaxCollator(pad_token_id=0)([rows[0], {**rows[1], "label": rows[1].pop("label_ids")}])
    assert batch["labels"].tolist() == [1, 0] and "label" not in batch
    assert batch["input_ids"].tolist() == [[101, 7, 102], [101, 102, 0]]
    assert batch["syntax_tree"].tolist() == [[-1, 0, -1], [-1, -1, -1]]
    only_ids = SyntaxCollator()([{"input_ids": [5], "label_ids": 2}])
    assert only_ids["labels"].tolist() == [2]


def test_collate_text_fields_are_a_clear_error():
    """A text column left in the rows (remove_unused_columns=False) is named, not a cryptic tensor error."""
    import pytest

    from syntaxformer.errors import InputError

    rows = [{"input_ids": [101, 7, 102], "attention_mask": [1, 1, 1], "sentence": "a b", "label": 1}]
    with pytest.raises(InputError, match=r"field 'sentence' holds str\d* values .*not a model input"):
        SyntaxCollator(pad_token_id=0)(rows)
