"""Significance from run folders (analysis/compare_runs.py and `syntaxformer significance`), on hand-made runs:
minimal ``metrics.json`` / ``dev_predictions.json`` (and for translation ``run.json`` with the data files) as
``syntaxformer train`` writes them."""

from __future__ import annotations

import json

import pytest

from syntaxformer.analysis.compare_runs import compare_runs
from syntaxformer.cli import main
from syntaxformer.errors import SyntaxformerError


def _run(folder, preds, labels, task="rte", seed=1):
    folder.mkdir(parents=True)
    acc = sum(p == y for p, y in zip(preds, labels)) / len(labels)
    (folder / "metrics.json").write_text(
        json.dumps({"task": task, "main_metric": "accuracy", "seed": seed, "dev": {"accuracy": acc}}), encoding="utf-8"
    )
    (folder / "dev_predictions.json").write_text(
        json.dumps({"ids": [f"dev-{i}" for i in range(len(labels))], "predictions": preds, "labels": labels}),
        encoding="utf-8",
    )
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
    runs_a = [_run(tmp_path / "a" / "seed1", a1, labels, seed=1), _run(tmp_path / "a" / "seed2", a2, labels, seed=2)]
    runs_b = [_run(tmp_path / "b" / "seed1", b1, labels, seed=1), _run(tmp_path / "b" / "seed2", b2, labels, seed=2)]
    r = compare_runs(runs_a, runs_b, n_resamples=200)
    assert r["task"] == "rte" and r["metric"] == "accuracy" and r["seeds"] == [1, 2]
    first, second = r["per_seed"]
    assert first["mcnemar"]["details"] == {"only_a_correct": 0, "only_b_correct": 3}
    assert first["mcnemar"]["p_value"] == pytest.approx(binomtest(0, 3, 0.5).pvalue) == pytest.approx(0.25)
    assert second["mcnemar"]["details"] == {"only_a_correct": 2, "only_b_correct": 1}
    assert first["bootstrap"]["difference"] == pytest.approx(3 / 40)
    assert r["t_test"]["p_value"] == pytest.approx(ttest_rel(r["b"], r["a"]).pvalue)

    # paired by recorded seed, whatever the order given
    swapped = compare_runs(runs_a, runs_b[::-1], n_resamples=50)
    assert [e["run_b"] for e in swapped["per_seed"]] == [str(runs_b[0]), str(runs_b[1])]

    # the command line: the old --vs spelling, --a/--b with glob patterns, JSON out
    assert (
        main(
            [
                "significance",
                str(runs_a[0]),
                str(runs_a[1]),
                "--vs",
                str(runs_b[0]),
                str(runs_b[1]),
                "--resamples",
                "100",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "seed 2:" in out and "paired t-test over seeds" in out and "exact McNemar p 0.250" in out
    assert (
        main(
            [
                "significance",
                "--a",
                str(tmp_path / "a" / "seed*"),
                "--b",
                str(tmp_path / "b" / "seed*"),
                "--resamples",
                "100",
                "--json",
                str(tmp_path / "sig.json"),
            ]
        )
        == 0
    )
    saved = json.loads((tmp_path / "sig.json").read_text())
    assert saved["per_seed"][0]["mcnemar"] == first["mcnemar"] and "t_test" in saved
    assert "95% CI [" in capsys.readouterr().out
    assert main(["significance", str(runs_a[0]), str(runs_b[0]), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "over 1 pair" in out and "t-test" not in out

    other_task = _run(tmp_path / "c", b1, labels, task="cola")
    with pytest.raises(SyntaxformerError, match="of cola"):
        compare_runs([runs_a[0]], [other_task])
    with pytest.raises(SyntaxformerError, match="equally many"):
        compare_runs(runs_a, runs_b[:1])
    with pytest.raises(SyntaxformerError, match="matches no run folder"):
        compare_runs([str(tmp_path / "nothing*")], runs_b[:1])
    assert main(["significance", str(tmp_path / "none"), "--vs", str(runs_b[0])]) == 1
    assert "no metrics.json" in capsys.readouterr().err
    assert main(["significance", str(runs_a[0])]) == 1
    assert "give two run folders" in capsys.readouterr().err


def test_compare_runs_translation_uses_sacrebleu_paired_test(tmp_path, capsys):
    """A translation run's references are read again from the files its run.json names."""
    sacrebleu = pytest.importorskip("sacrebleu")
    from syntaxformer.training.config import RunConfig

    refs = [
        "ein hund läuft im park",
        "die katze sitzt auf der matte",
        "es regnet heute",
        "wir kaufen zwei rote äpfel",
        "der zug fährt um zwölf",
    ] * 4
    src = tmp_path / "valid.en"
    tgt = tmp_path / "valid.de"
    src.write_text("".join(f"source {i}\n" for i in range(len(refs))), encoding="utf-8")
    tgt.write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    options = {"valid_source": str(src), "valid_target": str(tgt)}
    from syntaxformer.data.readers.parallel import read_corpus

    ids = read_corpus(src, tgt).ids
    hyp_a = [r.replace("der", "die") for r in refs]
    hyp_b = list(refs)
    hyp_b[2] = "es regnet"
    runs = []
    for name, hyps in (("base", hyp_a), ("syntax", hyp_b)):
        folder = tmp_path / name
        folder.mkdir()
        config = RunConfig.from_dict({"task": "translation", "task_options": options}).to_dict()
        (folder / "run.json").write_text(
            json.dumps(
                {
                    "task": {"name": "translation", "options": options, "module": "syntaxformer.tasks.translation"},
                    "config": config,
                }
            ),
            encoding="utf-8",
        )
        bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
        (folder / "metrics.json").write_text(
            json.dumps({"task": "translation", "main_metric": "bleu", "seed": 1, "dev": {"bleu": bleu}}),
            encoding="utf-8",
        )
        (folder / "dev_predictions.json").write_text(
            json.dumps({"split": "dev", "ids": ids, "predictions": hyps}), encoding="utf-8"
        )
        runs.append(folder)
    r = compare_runs([runs[0]], [runs[1]], n_resamples=300)
    test = r["per_seed"][0]["bleu"]
    assert test["test"] == "bleu_paired_bootstrap"
    assert test["details"]["bleu_a"] == pytest.approx(r["a"][0])
    assert test["details"]["bleu_b"] == pytest.approx(r["b"][0])
    assert test["difference"] > 0 and test["details"]["ci95"][0] <= test["difference"] <= test["details"]["ci95"][1]
    assert main(["significance", str(runs[0]), str(runs[1]), "--bleu-test", "ar", "--resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "bleu approximate randomization p" in out and "95% CI" in out


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_significance_analyze_and_plot_on_runs_train_wrote(tiny_model, tmp_path, monkeypatch, capsys):
    """Two tiny runs trained for two steps on real SST-2 (the tiny random BERT of conftest.py; 32 train and 24 dev
    sentences): the three analysis commands read what `train` writes, subsample included."""
    import os
    from pathlib import Path

    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    data = os.environ.get("SYNTAXFORMER_DATA")
    if not data or not Path(data, "glue", "SST-2", "dev.tsv").is_file():
        pytest.skip("needs the real SST-2 files: set SYNTAXFORMER_DATA to the shared data folder")
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    runs = []
    for name, sg in (("baseline", False), ("sgnet", True)):
        out = tmp_path / "runs" / "sst2" / name / "seed1"
        train(
            RunConfig.from_dict(
                {
                    "task": "sst2",
                    "model_name_or_path": tiny_model,
                    "model": {"use_sg_layer": sg},
                    "max_train_samples": 32,
                    "max_eval_samples": 24,
                    "max_length": 32,
                    "max_steps": 2,
                    "per_device_train_batch_size": 16,
                    "learning_rate": 1e-3,
                    "save_strategy": "no",
                    "eval_strategy": "no",
                    "disable_tqdm": True,
                    "save_model": False,
                    "output_dir": str(out),
                    "seed": 1,
                }
            )
        )
        runs.append(out)
    r = compare_runs([runs[0]], [runs[1]], n_resamples=100)
    assert r["task"] == "sst2" and r["per_seed"][0]["bootstrap"]["n"] == 24 and "mcnemar" in r["per_seed"][0]
    assert (
        main(
            [
                "analyze",
                str(runs[0]),
                str(runs[1]),
                "--by",
                "length",
                "--buckets",
                "3",
                "--output",
                str(tmp_path / "len.json"),
            ]
        )
        == 0
    )
    lengths = json.loads((tmp_path / "len.json").read_text())
    assert sum(b["n"] for b in lengths["buckets"]) == 24 and len(lengths["buckets"][0]["scores"]) == 2
    capsys.readouterr()
    pytest.importorskip("matplotlib", reason="figures need matplotlib (the 'analysis' / 'dev' extras)")
    assert (
        main(["plot", str(tmp_path / "runs"), "--kind", "results", "buckets", "--output", str(tmp_path / "fig")]) == 0
    )
    names = sorted(p.name for p in (tmp_path / "fig").iterdir())
    assert names == ["length_buckets_sst2.png", "length_buckets_sst2.svg", "results.png", "results.svg"]


def test_compare_runs_squad_and_race_from_their_per_question_files(tmp_path):
    """SQuAD: F1 bootstrap and McNemar on exact match over the scored ("test") part only; RACE: accuracy."""
    from scipy.stats import binomtest

    def squad(name, em, f1):
        folder = tmp_path / name
        folder.mkdir()
        per_q = {
            f"q{i}": {"part": "test" if i < 6 else "tuning", "question_words": 5, "em_best": e, "f1_best": f}
            for i, (e, f) in enumerate(zip(em, f1))
        }
        (folder / "per_question.json").write_text(json.dumps(per_q), encoding="utf-8")
        (folder / "metrics.json").write_text(
            json.dumps({"task": "squad2", "main_metric": "f1", "seed": 1, "dev": {"f1": 100 * sum(f1[:6]) / 6}}),
            encoding="utf-8",
        )
        (folder / "dev_predictions.json").write_text(
            json.dumps({"ids": list(per_q), "predictions": [""] * 8}), encoding="utf-8"
        )
        return folder

    a = squad("sa", [1, 0, 0, 0, 1, 1, 1, 1], [1.0, 0.5, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    b = squad("sb", [1, 1, 1, 1, 1, 0, 0, 0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0, 0.0])
    r = compare_runs([a], [b], n_resamples=100)["per_seed"][0]
    assert r["mcnemar"]["details"] == {"only_a_correct": 1, "only_b_correct": 3}  # the tuning part is left out
    assert r["mcnemar"]["p_value"] == pytest.approx(binomtest(3, 4, 0.5).pvalue)
    assert r["bootstrap"]["difference"] == pytest.approx(100 * (5.5 - 3.5) / 6) and r["bootstrap"]["n"] == 6

    def race(name, correct):
        folder = tmp_path / name
        folder.mkdir()
        recs = {f"r{i}": {"correct": c, "question_words": 4} for i, c in enumerate(correct)}
        (folder / "predictions.json").write_text(json.dumps(recs), encoding="utf-8")
        (folder / "metrics.json").write_text(
            json.dumps({"task": "race", "main_metric": "accuracy_all", "seed": 1, "dev": {}}), encoding="utf-8"
        )
        (folder / "dev_predictions.json").write_text(
            json.dumps({"ids": list(recs), "predictions": [0] * 5}), encoding="utf-8"
        )
        return folder

    r = compare_runs([race("ra", [1, 0, 0, 1, 0])], [race("rb", [1, 1, 1, 1, 0])], n_resamples=100)["per_seed"][0]
    assert r["mcnemar"]["details"] == {"only_a_correct": 0, "only_b_correct": 2}
    assert r["bootstrap"]["difference"] == pytest.approx(40.0)
