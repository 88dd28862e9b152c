"""Sentence tasks (GLUE, SNLI) and their readers on the real files (counts and label sets from their
PROVENANCE.txt), on hand-made files for the layout rules, and the hub route."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

import pytest

from syntaxformer.data.readers.glue import read_glue_tsv as _read_glue_tsv
from syntaxformer.data.readers.snli import read_snli_examples
from syntaxformer.errors import FormatError, SyntaxformerError
from syntaxformer.tasks import get_task
from tests.conftest import data_path


def load_split(task, split, *, data_file=None, **data):
    return task.load_split(split, {**data, f"{split}_file": data_file})


def read_glue_tsv(task, path, split="dev"):
    return _read_glue_tsv(task.spec.layout, path, split)


# task, split, rows, label counts (class id -> count) or None for regression / unlabeled
GLUE_COUNTS = [
    ("sst2", "train", 67349, {1: 37569, 0: 29780}),
    ("sst2", "dev", 872, {1: 444, 0: 428}),
    ("cola", "train", 8551, {1: 6023, 0: 2528}),
    ("cola", "dev", 1043, {1: 721, 0: 322}),
    ("cola", "test", 1063, None),
    ("mrpc", "train", 3668, {1: 2474, 0: 1194}),
    ("mrpc", "dev", 408, {1: 279, 0: 129}),
    ("mrpc", "test", 1725, None),
    ("stsb", "train", 5749, None),
    ("stsb", "dev", 1500, None),
    ("stsb", "test", 1379, None),
    ("qnli", "dev", 5463, {0: 2702, 1: 2761}),
    ("rte", "train", 2490, {0: 1249, 1: 1241}),
    ("rte", "dev", 277, {0: 146, 1: 131}),
    ("rte", "test", 3000, None),
    ("wnli", "train", 635, {0: 323, 1: 312}),
    ("wnli", "dev", 71, {0: 40, 1: 31}),
]


@pytest.mark.parametrize("name,split,rows,labels", GLUE_COUNTS)
def test_sentence_glue_real_counts_and_labels(name, split, rows, labels):
    task = get_task(name)
    path = data_path(task.spec.folder, f"{split}.tsv")
    examples = read_glue_tsv(task, path, split)
    assert len(examples) == rows
    assert all(e.text_a for e in examples)
    assert all((e.text_b is not None) == task.spec.is_pair for e in examples)
    if split == "test":
        assert all(e.label is None for e in examples)
    elif labels is not None:
        assert dict(Counter(e.label for e in examples)) == labels
    else:  # STS-B scores
        scores = [e.label for e in examples]
        assert all(isinstance(s, float) for s in scores) and min(scores) == 0.0 and max(scores) == 5.0
    assert len({e.guid for e in examples}) == rows  # ids are unique


def test_sentence_glue_layout_details():
    cola = read_glue_tsv(get_task("cola"), data_path("glue", "CoLA", "dev.tsv"), "dev")  # no header
    assert cola[0].text_a == "The sailors rode the breeze clear of the rocks." and cola[0].label == 1
    mrpc = read_glue_tsv(get_task("mrpc"), data_path("glue", "MRPC", "dev.tsv"), "dev")  # BOM + '"' in text
    assert mrpc[0].text_b.startswith('"The foodservice pie business') and mrpc[0].label == 1
    stsb = read_glue_tsv(get_task("stsb"), data_path("glue", "STS-B", "dev.tsv"), "dev")
    assert stsb[1].label == pytest.approx(4.75) and stsb[1].text_b == "A child is riding a horse."


def test_sentence_snli_real_tokenized_and_jsonl():
    task = get_task("snli")
    dev = load_split(task, "dev", data_dir=data_path("snli"))
    assert len(dev) == 9842
    assert Counter(task.labels[e.label] for e in dev.examples) == {
        "entailment": 3329,
        "contradiction": 3278,
        "neutral": 3235,
    }
    assert dev.examples[0].text_a == "Two women are embracing while holding to go packages ."
    examples, _files = read_snli_examples(data_path("snli", "snli_1.0_dev_partial.jsonl"), "dev")
    assert len(examples) == 1273  # 1,288 rows minus those without a gold label
    assert all(e.syntax_a is not None and e.syntax_b is not None for e in examples)
    assert examples[0].syntax_a.words[:2] == ["Two", "women"]


def test_sentence_load_split_fingerprint_and_subsample():
    task = get_task("rte")
    a = load_split(task, "dev", data_dir=data_path("glue", "RTE"))
    b = load_split(task, "dev", data_file=data_path("glue", "RTE", "dev.tsv"))
    assert a.fingerprint == b.fingerprint and a.total == 277
    s1, s2, s3 = a.subsampled(50, seed=1), a.subsampled(50, seed=1), a.subsampled(50, seed=2)
    assert [e.guid for e in s1.examples] == [e.guid for e in s2.examples] != [e.guid for e in s3.examples]
    assert len(s1) == 50 and s1.total == 277 and "50 of 277" in s1.sample_note and "seed 1" in s1.sample_note
    assert s1.fingerprint != a.fingerprint != s3.fingerprint
    assert a.subsampled(None, 0) is a and a.subsampled(1000, 0) is a
    assert [
        e.guid for e in load_split(task, "dev", data_dir=data_path("glue", "RTE"), max_samples=50, data_seed=1).examples
    ] == [e.guid for e in s1.examples]


def test_sentence_glue_bad_files(tmp_path):
    task = get_task("rte")
    bad = tmp_path / "dev.tsv"
    bad.write_text("index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\tmaybe\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"dev.tsv:2: unknown RTE label 'maybe'"):
        read_glue_tsv(task, bad)
    bad.write_text("foo\tbar\n", encoding="utf-8")
    with pytest.raises(FormatError, match="not a RTE header"):
        read_glue_tsv(task, bad)
    bad.write_text("index\tsentence1\tsentence2\tlabel\n0\tonly one field\n", encoding="utf-8")
    with pytest.raises(FormatError, match="dev.tsv:2: 2 tab-separated fields"):
        read_glue_tsv(task, bad)
    with pytest.raises(SyntaxformerError, match="not found"):
        load_split(task, "train", data_dir=tmp_path)
    with pytest.raises(SyntaxformerError, match="unknown task 'mnli'"):
        get_task("mnli")
    assert get_task("SST-2").name == "sst2" and get_task("STS-B").is_regression


def test_sentence_hub_path_with_local_dataset_folder(tmp_path):
    """The ``dataset`` route goes through ``datasets.load_dataset``; a local folder needs no network."""
    pytest.importorskip("datasets")
    import json

    folder = tmp_path / "my_sst2"
    folder.mkdir()
    rows = [{"sentence": "a fine film .", "label": 1, "idx": 0}, {"sentence": "dull .", "label": 0, "idx": 1}]
    for split in ("train", "validation"):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    dev = load_split(get_task("sst2"), "dev", dataset=str(folder))
    assert [(e.guid, e.text_a, e.label) for e in dev.examples] == [
        ("dev-0", "a fine film .", 1),
        ("dev-1", "dull .", 0),
    ]
    assert dev.source.startswith("hub:") and len(dev.fingerprint) == 64


def test_sentence_hub_offline_message(monkeypatch, tmp_path):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(SyntaxformerError, match="could not load hub data set 'nyu-mll/glue'.*Offline"):
        load_split(get_task("sst2"), "dev", dataset="nyu-mll/glue")


def test_sentence_falls_back_to_hub_without_shared_folder(monkeypatch, tmp_path, caplog):
    """No ../shared/data: the task's hub data set is tried (here offline, so a clear error naming both routes)."""
    import datasets

    import syntaxformer.defaults as defaults

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(defaults, "shared_data_dir", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(SyntaxformerError, match="hub fallback failed.*could not load hub data set.*Offline"):
        load_split(get_task("sst2"), "dev")
    assert "loading SST-2 dev from the hub" in caplog.text


def test_sentence_postprocess_metrics_and_records():
    """Logits -> class ids (argmax) or values (regression); metrics against the labels; records name the labels."""
    import numpy as np

    from syntaxformer.data.examples import TaskData, TaskExample
    from syntaxformer.tasks.base import Predictions

    class Features:
        guids: ClassVar[list[str]] = ["dev-0", "dev-1"]

    data = TaskData([TaskExample("dev-0", "good .", label=1), TaskExample("dev-1", "bad .", label=1)], "mem", "fp")
    sst2 = get_task("sst2")
    preds = sst2.postprocess(data, Features(), np.array([[0.1, 0.9], [2.0, -1.0]]))
    assert preds.values == [1, 0] and preds.ids == ["dev-0", "dev-1"]
    assert sst2.compute_metrics(data, preds) == {"accuracy": 0.5}
    records = sst2.prediction_records(data, preds)
    assert [(r["text"], r["label"], r["gold_label"]) for r in records] == [
        ("good .", "positive", "positive"),
        ("bad .", "negative", "positive"),
    ]
    stsb_records = get_task("stsb").prediction_records(data, Predictions(["dev-0", "dev-1"], [3.5, 1.0]))
    assert [(r["value"], r["gold_label"]) for r in stsb_records] == [(3.5, 1.0), (1.0, 1.0)]
    assert get_task("stsb").postprocess(data, Features(), np.array([[3.5], [1.0]])).values == [3.5, 1.0]
    assert get_task("snli").postprocess(data, Features(), (np.array([[0, 0, 1.0], [1.0, 0, 0]]),)).values == [2, 0]
    assert get_task("mrpc").model_options()["id2label"] == {0: "not_equivalent", 1: "equivalent"}
    assert get_task("stsb").model_options() == {
        "num_labels": 1,
        "problem_type": "regression",
        "id2label": {0: "score"},
        "label2id": {"score": 0},
    }
