"""Reading comprehension runner: tiny end-to-end SQuAD 2.0 and RACE runs, metric bookkeeping, the CLI route."""

from __future__ import annotations

import json
import math

import pytest
import torch

from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.squad import SquadExample
from syntaxformer.tasks.squad_metric import squad_evaluate
from syntaxformer.training.qa import (
    QAExperimentConfig,
    evaluate_qa,
    length_bucket,
    question_words,
    run_qa,
    squad_scores,
)
from tests.conftest import data_path

torch.set_num_threads(2)

TINY = {"max_steps": 2, "per_device_train_batch_size": 4, "per_device_eval_batch_size": 16, "parse_cache": False,
        "disable_tqdm": True, "logging_steps": 1, "learning_rate": 1e-3}


def test_config_validation_names_the_bad_option():
    with pytest.raises(SyntaxformerError, match="verifier"):
        QAExperimentConfig(verifier="both")
    with pytest.raises(SyntaxformerError, match="SQuAD 2.0 option"):
        QAExperimentConfig(task="race", verifier="joint")
    with pytest.raises(SyntaxformerError, match="doc_stride"):
        QAExperimentConfig(max_length=64, doc_stride=64)
    with pytest.raises(SyntaxformerError, match=r"\['lisa_layer'\]"):
        QAExperimentConfig.from_dict({"task": "squad2", "lisa_layer": 3})
    assert QAExperimentConfig.from_dict({"max_length": "200"}).max_length == 200


def test_length_buckets():
    assert question_words("  Who led the   Normans? ") == 4
    assert [length_bucket(n) for n in (1, 5, 6, 10, 11, 20, 21, 40)] == [
        "1-5", "1-5", "6-10", "6-10", "11-15", "16-20", ">20", ">20"]


def test_squad_scores_per_question_agree_with_the_metric():
    ctx = "Paris is in France."
    ex = [SquadExample("a", "t", ctx, "Where is Paris?", [{"text": "France", "answer_start": 12}]),
          SquadExample("b", "t", ctx, "Why?", [], is_impossible=True),
          SquadExample("c", "t", ctx, "What is in France?", [{"text": "Paris", "answer_start": 0}])]
    best = {"a": "France", "b": "Paris", "c": "is in"}
    na = {"a": -2.0, "b": 1.0, "c": 0.5}
    s = squad_scores(ex, best, na, null_threshold=0.0)
    # fixed threshold 0: a answered (right), b -> "" (right), c -> "" (wrong)
    assert s["fixed_threshold"]["exact"] == pytest.approx(200 / 3)
    # best F1 threshold: sweep a (+1), c (+0 EM / +0 F1: "is in" vs "Paris"), b (-1) -> answer only a
    best_t = s["best_f1_threshold"]
    assert best_t["threshold"] == pytest.approx(-2.0) and best_t["f1"] == pytest.approx(200 / 3)
    pq = s["per_question"]
    for key, name in (("fixed", "fixed_threshold"), ("best", "best_f1_threshold")):
        assert 100 * sum(r[f"em_{key}"] for r in pq.values()) / 3 == pytest.approx(s[name]["exact"])
        assert 100 * sum(r[f"f1_{key}"] for r in pq.values()) / 3 == pytest.approx(s[name]["f1"])
    assert pq["c"]["prediction_fixed"] == "" and pq["a"]["question_words"] == 3
    # All spans wrong and every no-answer score negative: the best point is "answer nobody". The official sweep
    # reports threshold 0.0 there, which would answer everyone; the threshold used must reproduce best_f1.
    wrong = squad_scores(ex, {"a": "Paris", "b": "Paris", "c": "France"}, {"a": -3.0, "b": -2.0, "c": -1.0})
    assert wrong["fixed_threshold"]["best_f1_thresh"] == 0.0
    assert wrong["best_f1_threshold"]["threshold"] < -3.0
    assert wrong["best_f1_threshold"]["f1"] == pytest.approx(100 / 3) == wrong["fixed_threshold"]["best_f1"]


def _check_squad_run(out, m):
    n = m["sizes"]["eval_questions"]
    per_q = json.loads((out / "per_question.json").read_text())
    preds = json.loads((out / "predictions.json").read_text())
    na = json.loads((out / "na_probs.json").read_text())
    assert len(per_q) == len(preds) == len(na) == n
    for key in ("fixed_threshold", "best_f1_threshold"):
        for k in ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1"):
            assert 0.0 <= m[key][k] <= 100.0
    b = m["best_f1_threshold"]
    assert b["f1"] == pytest.approx(m["fixed_threshold"]["best_f1"])  # the tuned threshold reaches best_f1
    assert 100 * sum(r["em_best"] for r in per_q.values()) / n == pytest.approx(b["exact"])
    return per_q, preds


def test_run_squad_tiny_end_to_end_with_parallel_verifier(tiny_model, tmp_path):
    data_path("squad2", "dev-v2.0-half.json")
    out = tmp_path / "squad"
    config = QAExperimentConfig(task="squad2", model_name_or_path=tiny_model, max_train_samples=10,
                                max_eval_samples=8, max_length=96, doc_stride=32, verifier="parallel",
                                output_dir=str(out), **TINY)
    m = run_qa(config)
    assert m["train"]["global_step"] == 2 and m["verifier_train"]["global_step"] == 2
    assert m["sizes"]["train_questions"] == 10 and m["sizes"]["eval_windows"] > 8  # long passages: windows
    assert "held out" in m["data"]["split"] and m["data"]["held_out_titles"]
    per_q, preds = _check_squad_run(out, m)
    assert (out / "verifier" / "config.json").is_file() and (out / "model.safetensors").is_file()
    # The written predictions score like the metrics (official metric on the files themselves).
    from syntaxformer.tasks.squad import gold_answers
    from syntaxformer.training.qa import squad_data

    gold = gold_answers(squad_data(config)["eval"])
    assert squad_evaluate(gold, preds)["f1"] == pytest.approx(m["best_f1_threshold"]["f1"])
    with pytest.raises(SyntaxformerError, match="finished run"):
        run_qa(config)


def test_run_squad_joint_verifier_question_first_and_cli(tiny_model, tmp_path, capsys):
    data_path("squad2", "dev-v2.0-half.json")
    from syntaxformer.cli import main

    out = tmp_path / "cli"
    argv = ["train", "--task", "squad2", "--model", tiny_model, "--output-dir", str(out), "--max-train-samples",
            "8", "--max-eval-samples", "6", "--max-length", "96", "--max-steps", "2", "--batch-size", "4",
            "--no-progress", "--set", "verifier=joint", "--set", "doc_stride=32", "--set", "question_first=true",
            "--set", "parse_cache=false"]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["task"] == "squad2" and "verifier (joint)" in printed["model_type"]
    m = json.loads((out / "metrics.json").read_text())
    assert m["question_first"] and m["verifier"] == "joint"
    _check_squad_run(out, m)
    # evaluate the saved model again: same scores (deterministic evaluation)
    assert main(["evaluate", str(out), "--no-progress"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["scores"]["f1"] == pytest.approx(m["best_f1_threshold"]["f1"])
    # options of other model families are rejected with a clear message
    assert main(["train", "--task", "squad2", "--lisa-layer", "1", "--output-dir", str(tmp_path / "x")]) == 1
    assert "lisa_layer" in capsys.readouterr().err


def test_run_race_tiny_end_to_end(tiny_model, tmp_path):
    data_path("race", "RACE_train.tar.gz")
    out = tmp_path / "race"
    config = QAExperimentConfig(task="race", model_name_or_path=tiny_model, max_train_samples=8, max_eval_samples=8,
                                max_length=64, output_dir=str(out), **TINY)
    m = run_qa(config)
    acc = m["accuracy"]
    assert acc["n_all"] == 8 and acc["n_middle"] + acc["n_high"] == 8 and m["train"]["global_step"] == 2
    assert m["counts"]["train"]["questions"] == 8 and m["passage_truncated"]["eval"] == 8
    preds = json.loads((out / "predictions.json").read_text())
    assert len(preds) == 8
    assert 100 * sum(p["correct"] for p in preds.values()) / 8 == pytest.approx(acc["all"])
    assert all(math.isclose(sum(p["probs"]), 1.0, abs_tol=1e-3) for p in preds.values())
    again = evaluate_qa(out)
    assert again["accuracy"]["all"] == pytest.approx(acc["all"])
