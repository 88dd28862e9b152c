"""Tests of syntaxformer.tasks.custom: the user's own files as tasks (labels inferred, held-out validation rows,
errors that name the file, row and columns), multiple choice rows, and which task a file implies."""

import csv
import json

import pytest

from syntaxformer.errors import ConfigError, DataError, FormatError
from syntaxformer.tasks import get_task
from syntaxformer.tasks.custom import infer_labels, task_for_data


def _csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return str(path)


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_custom_infer_labels_follows_run_glue():
    assert infer_labels(["pos", "neg", "pos"]) == ("single_label_classification", ["neg", "pos"])
    assert infer_labels(["10", "2", "2"]) == ("single_label_classification", ["2", "10"])  # numeric order
    assert infer_labels([1, 0, None]) == ("single_label_classification", ["0", "1"])
    assert infer_labels(["0.5", "3"]) == ("regression", None)
    assert infer_labels([1, 2.0]) == ("regression", None)  # a JSON float: regression, as a float column
    assert infer_labels(["1", "x"]) == ("single_label_classification", ["1", "x"])


def test_custom_string_labels_kept_by_name(tmp_path):
    train = _csv(
        tmp_path / "train.csv",
        ["review", "sentiment"],
        [["great", "positive"], ["awful", "negative"], ["fine", "positive"]],
    )
    dev = _csv(tmp_path / "dev.csv", ["review", "sentiment"], [["bad", "negative"]])
    task = get_task("custom", text_column="review", label_column="sentiment")
    data = {"train_file": train, "dev_file": dev}
    tr = task.load_split("train", data)
    assert [e.label for e in tr.examples] == [1, 0, 1] and tr.examples[0].text_a == "great"
    assert task.model_options() == {
        "num_labels": 2,
        "problem_type": "single_label_classification",
        "id2label": {0: "negative", 1: "positive"},
        "label2id": {"negative": 0, "positive": 1},
    }
    assert task.load_split("validation", data).examples[0].label == 0
    again = get_task("custom", **task.options())  # what run.json records rebuilds the same task
    assert again.options() == task.options() and again.model_options() == task.model_options()
    assert again.load_split("dev", data).examples[0].label == 0
    assert task.label_name(1) == "positive"


def test_custom_float_labels_are_a_regression_with_correlation_metrics(tmp_path):
    train = _jsonl(
        tmp_path / "train.jsonl",
        [
            {"sentence1": "a", "sentence2": "b", "label": 0.5},
            {"sentence1": "c", "sentence2": "d", "label": 4},
            {"sentence1": "e", "sentence2": "f", "label": 2.25},
        ],
    )
    task = get_task("custom")
    tr = task.load_split("train", {"train_file": train})  # dev is held out of these rows
    assert task.problem_type == "regression" and task.metric_names == ("pearson", "spearman")
    assert (task.text_column, task.text_pair_column) == ("sentence1", "sentence2")
    assert task.model_options()["problem_type"] == "regression" and task.model_options()["num_labels"] == 1
    assert all(isinstance(e.label, float) and e.text_b for e in tr.examples)


def test_custom_validation_rows_held_out_of_train_by_seed(tmp_path):
    train = _csv(tmp_path / "t.csv", ["text", "label"], [[f"text {i}", str(i % 3)] for i in range(50)])
    data = {"train_file": train}
    task = get_task("custom")
    tr, dev = task.load_split("train", data), task.load_split("dev", data)
    assert (len(tr), len(dev)) == (45, 5)
    assert not {e.text_a for e in tr.examples} & {e.text_a for e in dev.examples}
    assert "held-out 5 of 50 rows, seed 0" in dev.source
    other = get_task("custom", split_seed=1)
    other.load_split("train", data)
    assert {e.text_a for e in other.load_split("dev", data).examples} != {e.text_a for e in dev.examples}
    fresh = get_task("custom", **task.options())  # as evaluate rebuilds it from run.json
    assert [e.text_a for e in fresh.load_split("dev", data).examples] == [e.text_a for e in dev.examples]
    with pytest.raises(DataError, match="does not know its labels yet: read the training split first"):
        get_task("custom").load_split("dev", data)
    assert task.labels == ("0", "1", "2")


def test_custom_errors_name_the_file_row_and_columns(tmp_path):
    train = _csv(tmp_path / "train.csv", ["review", "sentiment"], [["good", "pos"], ["bad", "neg"]])
    dev = _csv(tmp_path / "dev.csv", ["review", "sentiment"], [["meh", "neutral"]])
    with pytest.raises(
        DataError,
        match=r"no column 'txt' \(--text-column\); its columns are \['review', "
        r"'sentiment'\]",
    ):
        get_task("custom", text_column="txt", label_column="sentiment").load_split("train", {"train_file": train})
    with pytest.raises(DataError, match=r"no column 'label' \(--label-column\); its columns"):
        get_task("custom", text_column="review").load_split("train", {"train_file": train})
    task = get_task("custom", label_column="sentiment")
    task.load_split("train", {"train_file": train, "dev_file": dev})
    assert task.text_column == "review"  # the only column besides the label
    with pytest.raises(
        DataError,
        match=r"dev.csv:2: label 'neutral' is not one of the training labels "
        r"\['neg', 'pos'\]",
    ):
        task.load_split("dev", {"train_file": train, "dev_file": dev})
    blank = _csv(tmp_path / "blank.csv", ["text", "label"], [["a", "x"], ["", "y"]])
    with pytest.raises(DataError, match=r"blank.csv:3: no text in column 'text'"):
        get_task("custom").load_split("train", {"train_file": blank, "dev_file": blank})
    one = _csv(tmp_path / "one.csv", ["text", "label"], [["a", "x"], ["b", "x"]])
    with pytest.raises(DataError, match="classification needs at least two classes"):
        get_task("custom").load_split("train", {"train_file": one, "dev_file": one})
    reg = _csv(tmp_path / "reg.csv", ["text", "label"], [["a", "0.5"], ["b", "high"]])
    with pytest.raises(FormatError, match=r"reg.csv:3: label 'high' .* is not a number"):
        get_task("custom", problem_type="regression").load_split("train", {"train_file": reg, "dev_file": reg})
    with pytest.raises(
        DataError,
        match=r"no test data; give a test file \(train: --test-file / test_file; "
        r"evaluate and predict RUN: --file FILE\)",
    ):
        task.load_split("test", {"train_file": train})
    with pytest.raises(DataError, match="give a training file"):
        get_task("custom").load_split("train", {})
    with pytest.raises(ConfigError, match="problem_type='multi'"):
        get_task("custom", problem_type="multi")


def test_custom_column_with_two_roles_refused_naming_both_options(tmp_path):
    with pytest.raises(ConfigError, match=r"text_column \(--text-column\) and label_column \(--label-column\) both"):
        get_task("custom", text_column="review", label_column="review")
    # a text pair found in the file's columns (sentence1 / sentence2) that is also the label column
    pairs = _csv(tmp_path / "pairs.csv", ["sentence1", "sentence2"], [["a", "b"], ["c", "d"]])
    with pytest.raises(ConfigError, match=r"text_pair_column \(--text-pair-column\) and label_column"):
        get_task("custom", label_column="sentence2").load_split("train", {"train_file": pairs})


def test_custom_test_file_without_labels(tmp_path):
    train = _csv(tmp_path / "train.csv", ["text", "label"], [["a", "x"], ["b", "y"], ["c", "x"]])
    test = _csv(tmp_path / "test.csv", ["id", "text"], [["u1", "d"], ["u2", "e"]])
    task = get_task("custom", id_column="id")
    data = {"train_file": train, "dev_file": train, "test_file": test}
    with pytest.raises(DataError, match="no column 'id'"):
        task.load_split("train", data)  # the id column must be in every file
    task = get_task("custom")
    task.load_split("train", data)
    out = task.load_split("test", data)
    assert [e.label for e in out.examples] == [None, None] and not out.has_labels


def test_custom_data_dir_finds_split_files(tmp_path):
    _csv(tmp_path / "train.csv", ["text", "label"], [["a", "x"], ["b", "y"]])
    _jsonl(tmp_path / "validation.jsonl", [{"text": "c", "label": "y"}])
    task = get_task("custom")
    assert len(task.load_split("train", {"data_dir": str(tmp_path)})) == 2
    assert task.load_split("dev", {"data_dir": str(tmp_path)}).examples[0].label == 1


def test_custom_multiple_choice_rows(tmp_path):
    rows = [
        {"question": "Which is a colour?", "options": ["red", "run"], "answer": 0},
        {"question": "Which is a verb?", "options": ["red", "run"], "answer": "B"},
        {
            "question": "Which is a noun?",
            "options": ["cat", "quickly", "blue"],
            "answer": "cat",
            "context": "A cat sat.",
        },
    ]
    path = _jsonl(tmp_path / "quiz.jsonl", rows)
    assert task_for_data(path) == "custom-mc"
    task = get_task("custom-mc")
    data = task.load_split("train", {"train_file": path, "dev_file": path})
    assert [e.label for e in data.examples] == [0, 1, 0]
    assert data.examples[0].article == "Which is a colour?" and data.examples[0].question == ""  # no context
    assert task.context_column == "context" and data.examples[2].article == "A cat sat."
    assert data.examples[1].article == "Which is a verb?"  # a row without the context column
    bad = _jsonl(tmp_path / "bad.jsonl", [{"question": "q", "options": ["a", "b"], "answer": "zebra"}])
    with pytest.raises(DataError, match=r"bad.jsonl:1: answer 'zebra' is neither an option's index, its letter"):
        get_task("custom-mc").load_split("train", {"train_file": bad, "dev_file": bad})
    csv_path = _csv(tmp_path / "quiz.csv", ["question", "options", "answer"], [["q", '["a", "b"]', "1"]])
    data_csv = {"train_file": csv_path, "dev_file": csv_path}
    assert get_task("custom-mc").load_split("dev", data_csv).examples[0].label == 1
    scores = task.compute_metrics(data, type("P", (), {"values": [0, 0, 0]})())
    assert scores == {"accuracy": pytest.approx(200 / 3), "n": 3}


def test_custom_task_for_data(tmp_path):
    squad = tmp_path / "mine.json"
    squad.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": []}]}]}))
    table = _csv(tmp_path / "t.csv", ["text", "label"], [["a", "x"]])
    assert task_for_data(str(squad)) == "custom-qa"
    assert task_for_data(table) == "custom"
    assert task_for_data(None, "imdb") == "custom"
    with pytest.raises(DataError, match="custom-qa: give a SQuAD-format JSON training file"):
        get_task("custom-qa").load_split("train", {})


def test_custom_options_and_subsets(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"option\(s\) \['phrases'\] do not apply to custom; its options are "
        r"\['text_column'",
    ):
        get_task("custom", phrases=True)
    with pytest.raises(ConfigError, match="do not apply to custom-mc"):
        get_task("custom-mc", text_column="x")
    train = _csv(tmp_path / "t.csv", ["text", "label"], [[f"t{i}", "ab"[i % 2]] for i in range(20)])
    task = get_task("custom")
    small = task.load_split("train", {"train_file": train, "dev_file": train, "max_samples": 5, "data_seed": 1})
    assert len(small) == 5 and small.total == 20 and "random subsample of 5 of 20" in small.sample_note


def test_custom_datasets_folder_splits(tmp_path):
    """A DatasetDict saved with save_to_disk, given as the data set: its train / validation splits."""
    datasets = pytest.importorskip("datasets", reason="the datasets package is not installed")
    rows = [{"text": "good", "label": "pos"}, {"text": "bad", "label": "neg"}, {"text": "fine", "label": "pos"}]
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(rows), "validation": datasets.Dataset.from_list(rows[1:])}
    ).save_to_disk(str(tmp_path / "ds"))
    task = get_task("custom")
    data = {"dataset": str(tmp_path / "ds")}
    assert [e.label for e in task.load_split("train", data).examples] == [1, 0, 1]
    dev = task.load_split("validation", data)
    assert [e.text_a for e in dev.examples] == ["bad", "fine"] and dev.source == f"{tmp_path / 'ds'}[validation]"


def _datasets_folder(tmp_path, name="ds", validation=True, test=False, single=False):
    """A ``datasets`` folder saved with ``save_to_disk``: 120 training rows (texts ``t0`` ... ``t119``), with a
    validation split of 30 rows (``v0`` ...) and a test split of 10 when asked; ``single``: one ``Dataset``."""
    datasets = pytest.importorskip("datasets", reason="the datasets package is not installed")
    train = datasets.Dataset.from_list([{"text": f"t{i}", "label": "ab"[i % 2]} for i in range(120)])
    if single:
        train.save_to_disk(str(tmp_path / name))
        return str(tmp_path / name)
    splits = {"train": train}
    if validation:
        splits["validation"] = datasets.Dataset.from_list([{"text": f"v{i}", "label": "ab"[i % 2]} for i in range(30)])
    if test:
        splits["test"] = datasets.Dataset.from_list([{"text": f"s{i}"} for i in range(10)])
    datasets.DatasetDict(splits).save_to_disk(str(tmp_path / name))
    return str(tmp_path / name)


def test_custom_datasets_folder_splits_are_the_same_under_train_file_and_dataset(tmp_path):
    """A DatasetDict folder with a validation (and a test) split: --train-file FOLDER reads its splits as
    --dataset FOLDER does (no rows held out of the 120 training rows)."""
    folder = _datasets_folder(tmp_path, test=True)
    read = {}
    for option in ("train_file", "dataset"):
        task = get_task("custom")
        data = {option: folder}
        read[option] = {s: task.load_split(s, data) for s in ("train", "validation", "test")}
        train, dev, test = read[option]["train"], read[option]["validation"], read[option]["test"]
        assert [e.text_a for e in train.examples] == [f"t{i}" for i in range(120)]
        assert [e.text_a for e in dev.examples] == [f"v{i}" for i in range(30)]
        assert dev.source == f"{folder}[validation]" and "held-out" not in train.source
        assert [e.text_a for e in test.examples] == [f"s{i}" for i in range(10)] and test.examples[0].label is None
    for split in ("train", "validation", "test"):
        assert read["train_file"][split].fingerprint == read["dataset"][split].fingerprint
    # an explicit validation file still wins over the folder's split
    dev_file = _csv(tmp_path / "dev.csv", ["text", "label"], [["x", "a"], ["y", "b"]])
    task, data = get_task("custom"), {"train_file": folder, "dev_file": dev_file}
    assert len(task.load_split("train", data)) == 120
    dev = task.load_split("validation", data)
    assert [e.text_a for e in dev.examples] == ["x", "y"]


def test_custom_datasets_without_validation_hold_out_rows_and_say_so(tmp_path, caplog):
    """Without a validation split (a DatasetDict of train only, or one saved Dataset, under either option), dev is
    held out of the training rows, in one log line and in the source; a single Dataset is never its own dev set
    (it used to stand for every split: evaluation on the training rows); a test split it lacks is refused."""
    import logging

    for folder in (_datasets_folder(tmp_path, "train-only", validation=False), _datasets_folder(tmp_path, single=True)):
        for option in ("train_file", "dataset"):
            task = get_task("custom")
            data = {option: folder}
            train = task.load_split("train", data)
            with caplog.at_level(logging.INFO, logger="syntaxformer.tasks.custom_splits"):
                caplog.clear()
                dev = task.load_split("validation", data)
            assert len(train) == 108 and len(dev) == 12
            assert not {e.text_a for e in train.examples} & {e.text_a for e in dev.examples}
            assert "held-out 12 of 120 rows, seed 0" in dev.source
            lines = [r.getMessage() for r in caplog.records if "held out of training" in r.getMessage()]
            assert len(lines) == 1 and "12 of the 120 rows" in lines[0]
            with pytest.raises(DataError, match="no test split"):
                task.load_split("test", data)


def test_custom_datasets_folder_trains_on_its_splits(tmp_path, tiny_model, monkeypatch):
    """``syntaxformer train --train-file FOLDER``: the folder's validation split is the dev set (recorded with the
    run's metrics), and all 120 training rows are trained on."""
    from syntaxformer.cli import main

    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    folder = _datasets_folder(tmp_path)
    out = tmp_path / "run"
    argv = ["train", "--train-file", folder, "--model", tiny_model, "--output-dir", str(out), "--no-progress"]
    assert main([*argv, "--max-steps", "1", "--batch-size", "8", "--max-length", "16", "--eval-batch-size", "32"]) == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["data"] == {"train": f"{folder}[train]", "dev": f"{folder}[validation]"}
    assert metrics["sizes"]["train"] == 120 and metrics["sizes"]["dev"] == 30


def _classlabel_folder(tmp_path, names, label_type=None, n=24):
    """A DatasetDict (train: ``n`` rows, validation: 6, test: 4 with label -1) whose label column is a ClassLabel
    of ``names`` (or a ``Value(label_type)``)."""
    datasets = pytest.importorskip("datasets", reason="the datasets package is not installed")
    label = datasets.Value(label_type) if label_type else datasets.ClassLabel(names=names)
    features = datasets.Features({"text": datasets.Value("string"), "label": label})
    value = (lambda i: i % 2 * 0.5 + 1.0) if label_type else (lambda i: i % 2)
    texts = ["A fine and warm film.", "A dull mess of a film."]
    splits = {
        "train": [{"text": texts[i % 2], "label": value(i)} for i in range(n)],
        "validation": [{"text": texts[i % 2], "label": value(i)} for i in range(6)],
        "test": [{"text": texts[i % 2], "label": -1 if not label_type else value(i)} for i in range(4)],
    }
    folder = tmp_path / "classlabel"
    datasets.DatasetDict(
        {s: datasets.Dataset.from_list(rows, features=features) for s, rows in splits.items()}
    ).save_to_disk(str(folder))
    return str(folder)


def test_custom_datasets_classlabel_names_are_the_labels_in_their_order(tmp_path):
    """A ClassLabel's names, in its class-id order (not sorted), are the labels; -1 (no label) is no label; the rows
    are read from Arrow, not copied into a list."""
    from syntaxformer.data.readers.table import DatasetRows, read_table

    folder = _classlabel_folder(tmp_path, ["good", "bad"])
    table = read_table(folder, "train")
    assert isinstance(table.rows, DatasetRows) and table.label_names == {"label": ["good", "bad"]}
    assert table.rows[1] == {"text": "A dull mess of a film.", "label": "bad"} and len(list(table.rows)) == 24
    task = get_task("custom")
    train = task.load_split("train", {"train_file": folder})
    assert task.label_list == ["good", "bad"] and [e.label for e in train.examples[:4]] == [0, 1, 0, 1]
    assert task.model_options()["id2label"] == {0: "good", 1: "bad"}
    assert [e.label for e in task.load_split("test", {"train_file": folder}).examples] == [None] * 4


def test_custom_datasets_float_value_labels_are_a_regression(tmp_path):
    folder = _classlabel_folder(tmp_path, None, label_type="float32")
    task = get_task("custom")
    train = task.load_split("train", {"train_file": folder})
    assert task.problem_type == "regression" and [e.label for e in train.examples[:2]] == [1.0, 1.5]


def test_custom_datasets_classlabel_trains_a_model_with_those_names(tmp_path, tiny_model, monkeypatch):
    """``train --train-file FOLDER`` on a DatasetDict with ``ClassLabel(names=["bad", "good"])``: the model's
    ``id2label`` holds the names (it used to hold '0', '1')."""
    from syntaxformer.cli import main

    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    folder, out = _classlabel_folder(tmp_path, ["bad", "good"]), tmp_path / "run"
    argv = ["train", "--train-file", folder, "--model", tiny_model, "--output-dir", str(out), "--no-progress"]
    assert main([*argv, "--max-steps", "2", "--batch-size", "8", "--max-length", "16"]) == 0
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert config["id2label"] == {"0": "bad", "1": "good"} and config["label2id"] == {"bad": 0, "good": 1}
    assert json.loads((out / "run.json").read_text())["task"]["options"]["labels"] == ["bad", "good"]


def test_custom_datasets_folder_examples_are_a_view_of_the_arrow_rows(tmp_path):
    """The examples of a datasets folder are made from its Arrow rows when read (no list of one object per row):
    indexing, negative indexing, slicing and iterating give the rows in order; a held-out split is a view of its
    own rows."""
    from syntaxformer.tasks.custom import TableExamples

    folder = _datasets_folder(tmp_path, "train-only", validation=False)
    task = get_task("custom", validation_fraction=0.25)
    train, dev = task.load_split("train", {"train_file": folder}), task.load_split("dev", {"train_file": folder})
    assert isinstance(train.examples, TableExamples) and len(train) == 90 and len(dev) == 30
    texts = [e.text_a for e in train.examples]
    assert sorted(texts + [e.text_a for e in dev.examples], key=lambda t: int(t[1:])) == [f"t{i}" for i in range(120)]
    assert train.examples[-1].text_a == texts[-1] and [e.text_a for e in train.examples[10:13]] == texts[10:13]
    assert train.examples[0].label == "ab".index(["a", "b"][int(texts[0][1:]) % 2])


def test_custom_mc_and_qa_datasets_folders_stay_arrow(tmp_path, minilm_tokenizer):
    """custom-mc and custom-qa on a DatasetDict saved with save_to_disk: the examples are made from its Arrow rows
    when read (no list of one object per row), and they are the examples the same rows give from a file; the
    span QA windows of that view are featurized."""
    import dataclasses

    import datasets
    import numpy as np

    from syntaxformer.data.readers.squad import read_squad
    from syntaxformer.data.readers.table import TableExamples
    from syntaxformer.tasks.base import TaskContext
    from tests.conftest import data_path

    quiz = [
        {"question": f"Which is colour {i}?", "options": ["red", "run", f"x{i}"], "answer": i % 3} for i in range(40)
    ]
    quiz[3]["context"] = "Red is a colour."
    for r in quiz:
        r.setdefault("context", "")
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(quiz), "validation": datasets.Dataset.from_list(quiz[:10])}
    ).save_to_disk(str(tmp_path / "quiz"))
    path = _jsonl(tmp_path / "quiz.jsonl", quiz)
    for split, n in (("train", 40), ("dev", 10)):
        mc = get_task("custom-mc").load_split(split, {"dataset": str(tmp_path / "quiz")})
        from_file = get_task("custom-mc").load_split(
            split, {"train_file": path, "dev_file": _jsonl(tmp_path / "d.jsonl", quiz[:10])}
        )
        assert isinstance(mc.examples, TableExamples) and len(mc) == n
        assert list(mc.examples) == list(from_file.examples) and mc.fingerprint == from_file.fingerprint

    squad = read_squad(data_path("squad2", "dev-v2.0-half.json"))[:30]
    rows = [
        {
            "id": e.qid,
            "title": e.title,
            "context": e.context,
            "question": e.question,
            "answers": {"text": [a["text"] for a in e.answers], "answer_start": [a["answer_start"] for a in e.answers]},
        }
        for e in squad
    ]
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(rows[:20]), "validation": datasets.Dataset.from_list(rows[20:])}
    ).save_to_disk(str(tmp_path / "qa"))
    task = get_task("custom-qa", threshold_tuning_fraction=0.0, doc_stride=32)
    train, dev = (task.load_split(s, {"dataset": str(tmp_path / "qa")}) for s in ("train", "dev"))
    assert isinstance(train.examples, TableExamples) and isinstance(dev.examples, TableExamples)
    assert list(train.examples) + list(dev.examples) == [dataclasses.replace(e, plausible_answers=[]) for e in squad]
    ds = task.featurize(dev, TaskContext(tokenizer=minilm_tokenizer, max_length=96, use_cache=False), "dev")
    assert len(ds) >= len(dev) and set(ds.guids) == {e.qid for e in dev.examples}
    assert all(np.asarray(ds[i]["input_ids"]).ndim == 1 for i in range(len(ds)))
