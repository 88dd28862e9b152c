"""``compare``'s parts that need no training (training/comparison.py): systems by name, and the side-by-side table.
The compare job itself runs in tests/training/test_run.py and test_syntax_bert_training.py."""

from __future__ import annotations

import pytest

from syntaxformer.errors import SyntaxformerError
from syntaxformer.training import RunConfig
from syntaxformer.training.comparison import SYSTEM_PRESETS, format_comparison, resolve_systems


def test_comparison_resolve_systems_by_name(tiny_model):
    config = RunConfig.from_dict(
        {
            "task": "sst2",
            "model_name_or_path": tiny_model,
            "model_type": "syntax_bert",
            "model": {"use_dependency": True},
        }
    )
    assert [n for n, _ in resolve_systems(config, None)] == ["baseline", "sgnet"]
    named = dict(resolve_systems(config, " baseline , syntax_bert_lisa,lisa"))
    assert named["baseline"] == {"model_type": "plain", "model": {}}  # the plain encoder; SB options dropped
    assert named["syntax_bert_lisa"]["model_type"] == "syntax_bert"
    assert named["syntax_bert_lisa"]["model"]["lisa_layer"] == 1  # the tiny encoder's middle layer (2 // 2)
    assert named["syntax_bert_lisa"]["model"]["use_dependency"] is True  # shared options kept
    assert named["lisa"]["model"]["syntax_layers"] == [] and named["lisa"]["model"]["aggregation"] == "mean"
    explicit = resolve_systems(config, ["sgnet", ("mine", {"model_type": "sgnet", "model": {"alpha": 0.3}})])
    assert explicit[1] == ("mine", {"model_type": "sgnet", "model": {"alpha": 0.3}})
    assert set(SYSTEM_PRESETS) == {
        "baseline",
        "sgnet",
        "syntax_bert",
        "syntax_bert_lisa",
        "syntax_bert_baseline",
        "lisa",
    }


def test_comparison_resolve_systems_errors():
    config = RunConfig.from_dict({"task": "sst2"})
    with pytest.raises(SyntaxformerError, match="unknown system 'bert'; known systems: baseline, sgnet"):
        resolve_systems(config, "baseline,bert")
    with pytest.raises(SyntaxformerError, match="systems must be distinct names"):
        resolve_systems(config, "sgnet,sgnet")
    with pytest.raises(SyntaxformerError, match="systems must be distinct names"):
        resolve_systems(config, "")


def _metrics(accuracy: float, runtime: float) -> dict:
    return {
        "task_title": "SST-2",
        "model_label": "tiny",
        "num_train_epochs": 1.0,
        "batch_size": 16,
        "learning_rate": 1e-4,
        "new_params_lr": None,
        "max_length": 32,
        "parser_noise": 0.0,
        "sizes": {"train": 8, "train_total": 100, "dev": 4, "dev_total": 50},
        "subsample": {"train": "seed 3", "dev": None},
        "dev": {"accuracy": accuracy},
        "train": {"runtime_s": runtime},
        "model_family": "sgnet",
    }


def test_comparison_format_table():
    summary = {
        "seed": 3,
        "main_metric": "accuracy",
        "systems": {"baseline": _metrics(0.5, 1.0), "sgnet": _metrics(0.75, 2.25)},
    }
    lines = format_comparison(summary).splitlines()
    assert lines[0] == (
        "SST-2: tiny fine-tuned on 8 of 100 train examples, scored on 4 of 50 dev examples; seed 3, "
        "1 epoch(s), batch 16, lr 0.0001 (new layers 0.0001), max length 32"
    )
    assert lines[1] == "subsample: train: seed 3"
    assert lines[2].split() == ["system", "accuracy", "train_s"]
    assert lines[3].split() == ["baseline", "0.5000", "1.0"] and lines[4].split() == ["sgnet", "0.7500", "2.2"]
    assert lines[5] == "difference (sgnet - baseline) in accuracy: +0.2500"


def test_paired_tests_from_the_dev_predictions_of_two_runs(tmp_path):
    """compare's significance line: bootstrap CI and exact McNemar from the runs' dev_predictions.json, checked
    against counts made by hand (4 examples only the baseline gets right, 1 only the other system)."""
    import json

    from scipy.stats import binomtest

    from syntaxformer.training.comparison import format_comparison, paired_tests

    labels = [0, 1] * 20
    base = list(labels)
    other = list(labels)
    for i in (0, 1, 2, 3):  # the other system misses these
        other[i] = 1 - labels[i]
    base[10] = 1 - labels[10]  # the baseline misses this one
    ids = [f"dev-{i}" for i in range(40)]
    for name, preds in (("baseline", base), ("sgnet", other)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dev_predictions.json").write_text(
            json.dumps({"ids": ids, "predictions": preds, "labels": labels}), encoding="utf-8"
        )
    tests = paired_tests(tmp_path, ["baseline", "sgnet"], "accuracy", n_resamples=200)
    mc = tests["sgnet"]["mcnemar"]
    assert mc["details"] == {"only_a_correct": 4, "only_b_correct": 1}
    assert mc["p_value"] == pytest.approx(binomtest(1, 5, 0.5).pvalue)
    boot = tests["sgnet"]["bootstrap"]
    assert (
        boot["difference"] == pytest.approx(-3 / 40)
        and boot["details"]["ci95"][0] < -3 / 40 < boot["details"]["ci95"][1]
    )
    summary = {
        "systems": {
            n: {
                "dev": {"accuracy": a},
                "task_title": "T",
                "model_label": "m",
                "sizes": {"train": 1, "train_total": 1, "dev": 40, "dev_total": 40},
                "num_train_epochs": 1,
                "batch_size": 1,
                "learning_rate": 1e-4,
                "new_params_lr": None,
                "max_length": 8,
                "parser_noise": 0.0,
                "subsample": {"train": None, "dev": None},
                "train": {"runtime_s": 1.0},
            }
            for n, a in (("baseline", 39 / 40), ("sgnet", 36 / 40))
        },
        "seed": 1,
        "main_metric": "accuracy",
        "tests": tests,
    }
    assert "exact McNemar p = 0.375" in format_comparison(summary)
    assert paired_tests(tmp_path, ["baseline", "missing"], "accuracy") == {}
