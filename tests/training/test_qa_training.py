"""Reading comprehension runner: tiny end-to-end SQuAD 2.0 and RACE runs, metric bookkeeping, the CLI route."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.squad_metric import squad_evaluate
from syntaxformer.training import RunConfig
from syntaxformer.training.run import evaluate, train
from tests.conftest import data_path

torch.set_num_threads(2)

TINY = {
    "max_steps": 2,
    "per_device_train_batch_size": 4,
    "per_device_eval_batch_size": 16,
    "parse_cache": False,
    "disable_tqdm": True,
    "logging_steps": 1,
    "learning_rate": 1e-3,
}


def test_config_validation_names_the_bad_option():
    with pytest.raises(SyntaxformerError, match="verifier"):
        RunConfig(task="squad2", task_options={"verifier": "both"})
    with pytest.raises(SyntaxformerError, match="verifier"):
        RunConfig.from_dict({"task": "race", "verifier": "joint"})
    with pytest.raises(SyntaxformerError, match="threshold_tuning_fraction"):
        RunConfig.from_dict({"task": "squad2", "threshold_tuning_fraction": 1.0})
    routed = RunConfig.from_dict({"task": "squad2", "doc_stride": 64, "verifier": "joint", "use_sg_layer": False})
    assert routed.task_options == {"doc_stride": 64, "verifier": "joint"} and routed.model == {"use_sg_layer": False}


def _check_squad_run(out, m):
    d = m["dev"]
    n = m["sizes"]["dev"] if "eval_questions" not in m["sizes"] else m["sizes"]["eval_questions"]
    per_q = json.loads((out / "per_question.json").read_text())
    preds = json.loads((out / "predictions.json").read_text())
    na = json.loads((out / "na_probs.json").read_text())
    assert len(per_q) == len(preds) == len(na)
    proto = d["threshold_protocol"]
    test_q = {q for q, r in per_q.items() if r["part"] == "test"}
    assert (
        len(test_q)
        == proto["test_questions"]
        == d["best_f1_threshold"]["total"]
        == len(per_q) - proto["tuning_questions"]
    )
    assert proto["tuning_articles"] and proto["test_articles"] and "test part" in d["threshold_note"]
    for key in ("fixed_threshold", "best_f1_threshold", "best_exact_threshold", "same_set_best_f1_threshold"):
        for k in ("exact", "f1"):
            assert 0.0 <= d[key][k] <= 100.0
        assert d[key]["total"] == len(test_q)
    b = d["best_f1_threshold"]
    # the same-set threshold reaches the reachable best on the test part
    assert d["same_set_best_f1_threshold"]["f1"] == pytest.approx(d["fixed_threshold"]["best_f1"])
    assert 100 * sum(per_q[q]["em_best"] for q in test_q) / len(test_q) == pytest.approx(b["exact"])
    assert 100 * sum(per_q[q]["f1_best"] for q in test_q) / len(test_q) == pytest.approx(b["f1"])
    assert n >= 1
    return per_q, preds


def _config(tiny_model, out, **options):
    return RunConfig.from_dict({"model_name_or_path": tiny_model, "output_dir": str(out), **TINY, **options})


def test_run_squad_tiny_end_to_end_with_parallel_verifier(tiny_model, tmp_path):
    data_path("squad2", "dev-v2.0-half.json")
    out = tmp_path / "squad"
    config = _config(
        tiny_model,
        out,
        task="squad2",
        max_train_samples=10,
        max_eval_samples=8,
        max_length=96,
        doc_stride=32,
        verifier="parallel",
    )
    m = train(config)
    assert m["train"]["global_step"] == 2
    assert m["sizes"]["train"] > 10 and m["sizes"]["dev"] > 8  # long passages: several windows per question
    per_q, preds = _check_squad_run(out, m)
    assert (out / "verifier" / "config.json").is_file() and (out / "model.safetensors").is_file()
    # The written predictions score like the metrics (official metric on the files, test-part questions).
    from syntaxformer.data.readers.squad import gold_answers
    from syntaxformer.tasks import get_task

    dev = get_task("squad2", **config.task_options).load_split("dev", {**config.data_options("dev", 8), "data_seed": 0})
    gold = gold_answers(dev.examples)
    test_gold = {q: g for q, g in gold.items() if per_q[q]["part"] == "test"}
    assert squad_evaluate(test_gold, preds)["f1"] == pytest.approx(m["dev"]["best_f1_threshold"]["f1"])
    # Re-evaluating applies the saved parallel verifier: the same numbers as metrics.json.
    again = evaluate(out, output_dir=str(tmp_path / "again"))["scores"]
    for key in ("fixed_threshold", "best_f1_threshold", "same_set_best_f1_threshold"):
        assert again[key]["f1"] == pytest.approx(m["dev"][key]["f1"])
        assert again[key]["exact"] == pytest.approx(m["dev"][key]["exact"])
    import shutil

    shutil.rmtree(out / "verifier")
    with pytest.raises(SyntaxformerError, match="verifier"):
        evaluate(out, output_dir=str(tmp_path / "again"), overwrite=True)


def test_run_squad_joint_verifier_question_first_and_cli(tiny_model, tmp_path, capsys):
    data_path("squad2", "dev-v2.0-half.json")
    from syntaxformer.cli import main

    out = tmp_path / "cli"
    argv = [
        "train",
        "--task",
        "squad2",
        "--model",
        tiny_model,
        "--output-dir",
        str(out),
        "--max-train-samples",
        "8",
        "--max-eval-samples",
        "6",
        "--max-length",
        "96",
        "--max-steps",
        "2",
        "--batch-size",
        "4",
        "--no-progress",
        "--set",
        "verifier=joint",
        "--set",
        "doc_stride=32",
        "--set",
        "question_first=true",
        "--set",
        "parse_cache=false",
    ]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["task"] == "squad2" and printed["dev"]["f1"] == pytest.approx(printed["dev"]["f1"])
    m = json.loads((out / "metrics.json").read_text())
    assert m["task_options"]["question_first"] and m["task_options"]["verifier"] == "joint"
    assert m["model_options"]["qa_verifier"] is True
    _check_squad_run(out, m)
    # evaluate the saved model again: same scores (deterministic evaluation)
    assert main(["evaluate", str(out), "--no-progress"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["scores"]["f1"] == pytest.approx(m["dev"]["f1"])
    # options of other model families are rejected with a clear message
    assert main(["train", "--task", "squad2", "--lisa-layer", "1", "--output-dir", str(tmp_path / "x")]) == 1
    assert "lisa_layer" in capsys.readouterr().err


def test_run_race_tiny_end_to_end(tiny_model, tmp_path):
    data_path("race", "RACE_train.tar.gz")
    out = tmp_path / "race"
    m = train(_config(tiny_model, out, task="race", max_train_samples=8, max_eval_samples=8, max_length=64))
    acc = m["dev"]["accuracy"]
    assert acc["n_all"] == 8 and acc["n_middle"] + acc["n_high"] == 8 and m["train"]["global_step"] == 2
    preds = json.loads((out / "predictions.json").read_text())
    assert len(preds) == 8
    assert 100 * sum(p["correct"] for p in preds.values()) / 8 == pytest.approx(acc["all"])
    assert all(math.isclose(sum(p["probs"]), 1.0, abs_tol=1e-3) for p in preds.values())
    again = evaluate(out)["scores"]
    assert again["accuracy"]["all"] == pytest.approx(acc["all"])


@pytest.mark.parametrize("task", ["squad2", "race"])
def test_syntax_bert_reading_comprehension_through_the_runner(tiny_model, tmp_path, task):
    """Syntax-BERT under the span-QA and the multiple-choice head trains, scores and re-evaluates like SG-Net."""
    data_path("squad2", "dev-v2.0-half.json") if task == "squad2" else data_path("race", "RACE_train.tar.gz")
    out = tmp_path / task
    extra = {"doc_stride": 32} if task == "squad2" else {}
    m = train(
        _config(
            tiny_model,
            out,
            task=task,
            model_type="syntax_bert",
            max_train_samples=6,
            max_eval_samples=4,
            max_length=96,
            lisa_layer=1,
            **extra,
        )
    )
    assert m["model_family"] == "syntax_bert" and m["train"]["global_step"] == 2
    # the features carry real trees (the run's parser ran), not the empty syntax of an unparsed text
    from syntaxformer.training.run import build_context, load_run, load_tokenizer

    config, task_obj = load_run(out)
    model_config = __import__("transformers").AutoConfig.from_pretrained(str(out))
    context = build_context(config, load_tokenizer(str(out)), model_config)
    dev = task_obj.load_split("dev", {**config.data_options("dev", 2), "data_seed": 0})
    features = task_obj.featurize(dev, context, "dev")
    first = features[0] if task == "squad2" else features[0]["options"][0]
    assert (first["dep_tin"] >= 0).sum() > 3 and (first["dep_anc_lo"] >= 0).any()
    assert {"dep_anc_lo", "con_anc_lo", "dep_parent"} <= set(m["syntax_keys"])
    assert m["lisa"]["train_loss_first"] is not None  # the LISA loss reached the QA / MC head's loss
    head = "f1" if task == "squad2" else "accuracy_all"
    again = evaluate(out)["scores"]
    assert again[head] == pytest.approx(m["dev"][head])


def _experiment_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "experiments" / "reading_comprehension.py"
    spec = importlib.util.spec_from_file_location("reading_comprehension_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_experiment_script_set_parsing_and_test_part_summary(tmp_path):
    script = _experiment_script()
    assert script._parse_set("verifier=none") == ("verifier", "none")  # used to crash in json.loads
    assert script._parse_set("threshold_tuning_fraction=0") == ("threshold_tuning_fraction", 0)
    assert script._parse_set("question_first=true") == ("question_first", True)
    assert script._parse_set("parser=en_core_web_sm") == ("parser", "en_core_web_sm")
    assert script._parse_set('model_kwargs={"a": 1}') == ("model_kwargs", {"a": 1})
    assert script._parse_set("x=1e-4") == ("x", 1e-4) and script._parse_set("t=trees") == ("t", "trees")
    # Summary: only the test-part questions enter McNemar / bootstrap / buckets / examples.
    metric = {"exact": 50.0, "f1": 50.0, "total": 4}
    for variant, em_test, em_tune in (("baseline", [1, 0, 0, 0], [1, 1]), ("sgnet", [1, 1, 1, 0], [0, 0])):
        run = tmp_path / "squad" / variant / "seed1"
        run.mkdir(parents=True)
        per_q = {
            f"t{i}": {
                "part": "test",
                "question_words": 4 + 5 * i,
                "em_best": e,
                "f1_best": float(e),
                "prediction_best": "x" if e else "",
            }
            for i, e in enumerate(em_test)
        }
        per_q.update(
            {
                f"u{i}": {
                    "part": "tuning",
                    "question_words": 3,
                    "em_best": e,
                    "f1_best": float(e),
                    "prediction_best": "",
                }
                for i, e in enumerate(em_tune)
            }
        )
        (run / "per_question.json").write_text(json.dumps(per_q))
        (run / "metrics.json").write_text(
            json.dumps(
                {
                    "data": {"eval": "missing.json (held-out articles)"},
                    "runtime_s": 1.0,
                    "threshold_protocol": {"test_questions": 4},
                    "fixed_threshold": metric,
                    "best_f1_threshold": metric,
                    "same_set_best_f1_threshold": metric,
                }
            )
        )
    import argparse

    summary = script._summarize(argparse.Namespace(out=str(tmp_path), resamples=50, examples=4))
    t = summary["tasks"]["squad"]
    assert t["scored_questions"] == 4 and t["setup"]["threshold_protocol"] == {"test_questions": 4}
    mc = t["tests"]["sgnet"]["mcnemar"]["per_seed"][1]
    assert mc["n"] == 4 and mc["details"] == {"only_a_correct": 0, "only_b_correct": 2}  # tuning part left out
    assert t["tests"]["sgnet"]["bootstrap_em"]["difference"] == pytest.approx(50.0)  # (3 - 1) / 4 on the test part
    assert sum(b["n"] for b in t["length_buckets"]["baseline"].values()) == 4
    assert {e["qid"] for e in t["examples"]} <= {"t1", "t2"}
    assert "same_set_f1" in t["variants"]["sgnet"] and "F1 (same-set)" in script._markdown(summary)


def test_experiment_script_auroc_matches_pairwise_count():
    script = _experiment_script()
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=40).astype(float)  # many ties
    positive = rng.random(40) < 0.4
    pos, neg = scores[positive], scores[~positive]
    pairwise = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert script._auroc(scores, positive) == pytest.approx(pairwise)
    assert script._auroc(scores, np.zeros(40, bool)) is None


def test_experiment_script_threshold_free_diagnostics(tmp_path):
    """Span EM / F1 of answerable questions (as if always answering) and the no-answer AUROC, from a real file."""
    script = _experiment_script()
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "T",
                "paragraphs": [
                    {
                        "context": "Paris is in France.",
                        "qas": [
                            {
                                "id": "a",
                                "question": "Where is Paris?",
                                "is_impossible": False,
                                "answers": [{"text": "France", "answer_start": 12}],
                            },
                            {
                                "id": "b",
                                "question": "What is Paris?",
                                "is_impossible": False,
                                "answers": [{"text": "Paris", "answer_start": 0}],
                            },
                            {"id": "c", "question": "Who is Paris?", "is_impossible": True, "answers": []},
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    per_q = {
        "a": {"has_answer": True, "best_text": "in France", "na_score": 0.0},
        "b": {"has_answer": True, "best_text": "Paris", "na_score": 2.0},
        "c": {"has_answer": False, "best_text": "France", "na_score": 1.0},
    }
    runs = {1: {"metrics": {"data": {"eval": f"{path} (held-out articles)"}}, "per_q": per_q}}
    d = script._squad_diagnostics(["a", "b", "c"], runs)
    assert d["answerable"] == 2 and d["span_em"][1] == [0, 1]
    assert d["span_f1"][1] == pytest.approx([2 / 3, 1.0])  # "in france" vs "france": P 1/2, R 1
    assert d["na_auroc"][1] == pytest.approx(0.5)  # c (1.0) ranks above a (0.0), below b (2.0)
    assert d["same_span_share"][1] == pytest.approx(1 / 3)  # one passage, three different best spans
    # Table 9 fallback: both systems answer nobody at their tuned thresholds -> examples from the best spans.
    common = {"em_best": 0, "prediction_best": "", "question_words": 3}
    base = {q: {**r, **common} for q, r in per_q.items()}
    sg = {q: {**r, **common} for q, r in per_q.items()}
    sg["a"]["best_text"] = "France"
    ex = script._squad_examples(["a", "b", "c"], base, sg, runs[1]["metrics"], 4)
    assert [(e["qid"], e["exactly_right"], e["sgnet"]) for e in ex] == [("a", "sgnet", "France")]
    assert ex[0]["basis"].startswith("best non-null span")
    # Through the summary: threshold-free table, span buckets (answerable questions only) and span tests.
    import argparse

    metric = {"exact": 33.3, "f1": 33.3, "total": 3}
    for variant, pq in (("baseline", base), ("sgnet", sg), ("vanilla_layer", base)):
        run = tmp_path / "sum" / "squad" / variant / "seed1"
        run.mkdir(parents=True)
        (run / "per_question.json").write_text(
            json.dumps({q: {**r, "part": "test", "f1_best": 0.0} for q, r in pq.items()})
        )
        (run / "metrics.json").write_text(
            json.dumps(
                {
                    "data": {"eval": f"{path} (held-out articles)"},
                    "runtime_s": 1.0,
                    "fixed_threshold": metric,
                    "best_f1_threshold": metric,
                }
            )
        )
    summary = script._summarize(argparse.Namespace(out=str(tmp_path / "sum"), resamples=50, examples=2))
    t = summary["tasks"]["squad"]
    assert sum(b["n"] for b in t["span_length_buckets"]["sgnet"].values()) == 2
    assert t["variants"]["sgnet"]["span_em"]["mean"] == pytest.approx(100.0)  # a and b both exact
    assert t["tests"]["sgnet"]["mcnemar_span_em"]["per_seed"][1]["details"] == {
        "only_a_correct": 0,
        "only_b_correct": 1,
    }
    pair = t["pairs"]["sgnet vs vanilla_layer"]  # the syntax layer against the unmasked-layer control
    assert pair["mcnemar_span_em"]["pooled"]["details"] == {"only_a_correct": 0, "only_b_correct": 1}
    md = script._markdown(summary)
    assert "span EM / F1 by question length" in md and "no-answer AUROC" in md and "sgnet vs vanilla_layer" in md
