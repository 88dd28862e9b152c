"""Significance from run folders (analysis/compare_runs.py and `syntaxformer significance`), on hand-made runs."""

from __future__ import annotations

import json

import pytest

from syntaxformer.analysis.compare_runs import compare_runs
from syntaxformer.cli import main
from syntaxformer.errors import SyntaxformerError


def _run(folder, preds, labels, task="rte"):
    folder.mkdir(parents=True)
    acc = sum(p == y for p, y in zip(preds, labels)) / len(labels)
    (folder / "metrics.json").write_text(json.dumps({"task": task, "main_metric": "accuracy",
                                                     "dev": {"accuracy": acc}}), encoding="utf-8")
    (folder / "dev_predictions.json").write_text(json.dumps(
        {"ids": [f"dev-{i}" for i in range(len(labels))], "predictions": preds, "labels": labels}), encoding="utf-8")
    return folder


def test_compare_runs_per_seed_tests_and_t_test_against_scipy(tmp_path, capsys):
    from scipy.stats import binomtest, ttest_rel

    labels = [0, 1, 1, 0] * 10
    a1, b1 = list(labels), list(labels)
    for i in (0, 1, 2):
        a1[i] = 1 - labels[i]  # A misses 3 that B gets
    a2, b2 = list(labels), list(labels)
    for i in (5, 9):
        b2[i] = 1 - labels[i]  # B misses 2 that A gets
    a2[20] = 1 - labels[20]
    runs_a = [_run(tmp_path / "a1", a1, labels), _run(tmp_path / "a2", a2, labels)]
    runs_b = [_run(tmp_path / "b1", b1, labels), _run(tmp_path / "b2", b2, labels)]
    r = compare_runs(runs_a, runs_b, n_resamples=200)
    assert r["task"] == "rte" and r["metric"] == "accuracy"
    first, second = r["per_seed"]
    assert first["mcnemar"]["details"] == {"only_a_correct": 0, "only_b_correct": 3}
    assert first["mcnemar"]["p_value"] == pytest.approx(binomtest(0, 3, 0.5).pvalue)
    assert second["mcnemar"]["details"] == {"only_a_correct": 2, "only_b_correct": 1}
    assert first["bootstrap"]["difference"] == pytest.approx(3 / 40)
    assert r["t_test"]["p_value"] == pytest.approx(ttest_rel(r["b"], r["a"]).pvalue)

    assert main(["significance", str(runs_a[0]), str(runs_a[1]), "--vs", str(runs_b[0]), str(runs_b[1]),
                 "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "seed pair 2" in out and "paired t-test over seeds" in out and "McNemar p" in out

    other_task = _run(tmp_path / "c", b1, labels, task="cola")
    with pytest.raises(SyntaxformerError, match="cola run"):
        compare_runs([runs_a[0]], [other_task])
    with pytest.raises(SyntaxformerError, match="equally many"):
        compare_runs(runs_a, runs_b[:1])
    assert main(["significance", str(tmp_path / "none"), "--vs", str(runs_b[0])]) == 1
    assert "no metrics.json" in capsys.readouterr().err
