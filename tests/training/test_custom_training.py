"""Training on the user's own files (tasks ``custom``, ``custom-mc``, ``custom-qa``) from the command line, and
evaluating / predicting the run in a fresh process that has nothing but the run folder."""

import csv
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from syntaxformer.cli import main
from tests.conftest import data_path

REPO = Path(__file__).resolve().parents[2]
NAMES = {"0": "negative", "1": "positive"}


def _sst2_rows(n: int, start: int = 0) -> list[tuple[str, str]]:
    lines = data_path("glue", "SST-2", "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.split("\t") for line in lines[start : start + n]]
    return [(text.strip(), NAMES[label]) for text, label in rows]


def _write_csv(path: Path, rows) -> str:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["review", "sentiment"])
        w.writerows(rows)
    return str(path)


def _env(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(HF_HUB_OFFLINE="1", SYNTAXFORMER_NO_PROGRESS="1", OMP_NUM_THREADS="1")
    env["SYNTAXFORMER_CACHE"] = str(tmp_path / "cache")
    return env


def _cli(args, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "syntaxformer.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


_TINY = [
    "--max-steps",
    "2",
    "--batch-size",
    "8",
    "--eval-batch-size",
    "16",
    "--max-length",
    "64",
    "--seed",
    "3",
    "--no-progress",
]


@pytest.fixture
def sst2_csv(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    _write_csv(work / "train.csv", _sst2_rows(32))
    _write_csv(work / "dev.csv", _sst2_rows(16, start=32))
    return work


def test_custom_csv_train_then_evaluate_predict_in_a_fresh_process(tiny_model, sst2_csv, tmp_path, monkeypatch, capsys):
    """CSV with string labels -> train (relative paths, no --task) -> a fresh process elsewhere evaluates and
    predicts the validation split with the label names, from the run folder alone; every file is 0644."""
    monkeypatch.chdir(sst2_csv)
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    old = os.umask(0o022)
    try:
        code = main(
            [
                "train",
                "--train-file",
                "train.csv",
                "--validation_file",
                "dev.csv",
                "--text-column",
                "review",
                "--label-column",
                "sentiment",
                "--model",
                tiny_model,
                "--output-dir",
                "run",
                *_TINY,
            ]
        )
    finally:
        os.umask(old)
    assert code == 0, capsys.readouterr().err
    run = sst2_csv / "run"
    record = json.loads((run / "run.json").read_text())
    assert record["task"]["name"] == "custom"
    assert record["task"]["options"]["labels"] == ["negative", "positive"]
    assert record["config"]["train_file"] == str(sst2_csv / "train.csv")  # absolute: found from anywhere
    config = json.loads((run / "config.json").read_text())
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert config["problem_type"] == "single_label_classification"
    trained = json.loads((run / "metrics.json").read_text())["dev"]["accuracy"]
    for path in run.iterdir():
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o644, path.name

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _env(tmp_path)
    done = _cli(["evaluate", str(run), "--split", "validation"], elsewhere, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["scores"]["accuracy"] == pytest.approx(trained)
    done = _cli(["predict", str(run), "--split", "validation"], elsewhere, env)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (run / "predictions_dev.jsonl").read_text().splitlines()]
    assert len(records) == 16 and {r["label"] for r in records} <= {"negative", "positive"}
    assert records[0]["text"] == _sst2_rows(1, start=32)[0][0] and records[0]["gold_label"] in NAMES.values()
    assert sum(r["label"] == r["gold_label"] for r in records) / 16 == pytest.approx(trained)
    assert set(records[0]["scores"]) == {"negative", "positive"}
    assert records[0]["score"] == records[0]["scores"][records[0]["label"]]
    assert sum(records[0]["scores"].values()) == pytest.approx(1.0, abs=1e-4)
    assert stat.S_IMODE((run / "predictions_dev.jsonl").stat().st_mode) == 0o644


def test_custom_jsonl_float_labels_train_a_regression(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    rows = _sst2_rows(24)
    path = tmp_path / "scores.jsonl"
    path.write_text(
        "".join(
            json.dumps({"text": t, "score": 0.25 + (0.5 if lab == "positive" else 0.0) + i / 100}) + "\n"
            for i, (t, lab) in enumerate(rows)
        )
    )
    assert (
        main(
            [
                "train",
                "--train-file",
                str(path),
                "--label-column",
                "score",
                "--model",
                tiny_model,
                "--output-dir",
                str(tmp_path / "run"),
                *_TINY,
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["task"] == "custom" and set(out["dev"]) >= {"pearson", "spearman"}
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["problem_type"] == "regression" and len(config["id2label"]) == 1
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["sizes"]["dev"] == 2 and "held-out 2 of 24 rows" in metrics["data"]["dev"]
    record = json.loads((tmp_path / "run" / "run.json").read_text())  # the run's own record says so too
    assert "held-out 2 of 24 rows" in record["data"]["dev"] and "without 2 held-out rows" in record["data"]["train"]


def test_custom_multiple_choice_jsonl_trains_without_a_task_name(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    pos = [t for t, lab in _sst2_rows(40) if lab == "positive"]
    neg = [t for t, lab in _sst2_rows(40) if lab == "negative"]
    path = tmp_path / "quiz.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "question": "Which review is positive?",
                    "options": [p, n] if i % 2 else [n, p],
                    "answer": (i % 2 and 0) or 1,
                }
            )
            + "\n"
            for i, (p, n) in enumerate(zip(pos, neg))
        )
    )
    assert (
        main(
            [
                "train",
                "--train-file",
                str(path),
                "--validation-file",
                str(path),
                "--model",
                tiny_model,
                "--model-type",
                "syntax_bert",
                "--output-dir",
                str(tmp_path / "run"),
                *_TINY,
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["task"] == "custom-mc" and 0 <= out["dev"]["accuracy"] <= 100


def test_custom_squad_json_trains_span_qa(tiny_model, tmp_path, monkeypatch, capsys):
    """A SQuAD-format JSON of one's own (here: articles cut from the shared SQuAD 2.0 file) -> `custom-qa`; with a
    validation file, every training article is trained on (none held out)."""
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    source = json.loads(data_path("squad2", "dev-v2.0-half.json").read_text(encoding="utf-8"))

    def cut(articles):
        return {
            "version": "v2.0",
            "data": [
                {
                    "title": a["title"],
                    "paragraphs": [{"context": p["context"], "qas": p["qas"][:3]} for p in a["paragraphs"][:2]],
                }
                for a in articles
            ],
        }

    (tmp_path / "train.json").write_text(json.dumps(cut(source["data"][:2])))
    (tmp_path / "dev.json").write_text(json.dumps(cut(source["data"][2:4])))
    assert (
        main(
            [
                "train",
                "--train-file",
                str(tmp_path / "train.json"),
                "--validation-file",
                str(tmp_path / "dev.json"),
                "--model",
                tiny_model,
                "--set",
                "doc_stride=32",
                "--output-dir",
                str(tmp_path / "run"),
                *_TINY[:-3],
                "--max-length",
                "96",
                "--no-progress",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert out["task"] == "custom-qa" and "f1" in out["dev"]
    n_train = sum(len(p["qas"]) for a in cut(source["data"][:2])["data"] for p in a["paragraphs"])
    assert metrics["data"]["train"] == str(tmp_path / "train.json")
    assert metrics["sizes"]["train_total"] == n_train
