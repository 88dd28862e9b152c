"""The learning-curve and gold/parsed/random tree tables (experiments/curve_tables.py), from hand-made run folders in
the archive's format: means, paired t-tests (SciPy), Holm (written out here), the bold rule and missing runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, matthews_corrcoef

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("curve_tables", ROOT / "experiments" / "curve_tables.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["curve_tables"] = module
    spec.loader.exec_module(module)
    return module


def _run(folder: Path, task: str, seed: int, score: float | None = None, predictions=None, labels=None, **config):
    """One archived run folder as `sgnet_glue.py archive` writes it (metrics.json, run.json, dev_predictions.json)."""
    metric = "matthews_correlation" if task == "cola" else "accuracy"
    device = config.pop("device", "cuda (NVIDIA H200)")
    labels = [0, 1, 1, 0, 1, 0, 1, 1] if labels is None else labels
    predictions = labels if predictions is None else predictions
    if score is None:
        score = float((matthews_corrcoef if metric == "matthews_correlation" else accuracy_score)(labels, predictions))
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(
        json.dumps(
            {
                "task": task,
                "main_metric": metric,
                "dev": {metric: score},
                "sizes": {"train": config.get("max_train_samples"), "dev": len(labels)},
                "train": {"runtime_s": 1.0},
                "environment": {"device": device},
            }
        )
    )
    (folder / "run.json").write_text(json.dumps({"config": {"task": task, "seed": seed, **config}}))
    (folder / "dev_predictions.json").write_text(
        json.dumps(
            {
                "task": task,
                "split": "dev",
                "seed": seed,
                "order": "dataset",
                "ids": [f"dev-{i}" for i in range(len(labels))],
                "predictions": predictions,
                "labels": labels,
            }
        )
    )


def _holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out: the k-th smallest p times (m - k), running maximum, capped at 1."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out, running = [0.0] * m, 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * ps[i]))
        out[i] = running
    return out


def _row(table: str, first: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _seeds(root: Path, task: str, variant: str, scores: dict[int, float], **config) -> None:
    for seed, score in scores.items():
        _run(root / task / variant / f"seed{seed}", task, seed, score, **config)


def test_learning_curve_means_t_tests_holm_bold_and_missing_runs(tmp_path):
    ct = _module()
    curves, blimp, glue = tmp_path / "curves", tmp_path / "blimp", tmp_path / "glue"
    # CoLA, 100 sentences: three seeds of the plain encoder, SG-Net (a steady gain) and gated SB (a noisy one);
    # the SG-Net random-tree control only has seed 4 (no seed shared with SG-Net); gated SB random: not archived
    base = {1: 0.10, 2: 0.125, 3: 0.11}
    sg = {1: 0.20, 2: 0.235, 3: 0.215}
    sb = {1: 0.14, 2: 0.155, 3: 0.13}
    _seeds(curves, "cola", "baseline_default_n100", base)
    _seeds(curves, "cola", "sgnet_default_n100", sg)
    _seeds(curves, "cola", "sbert_gate_n100", sb)
    _seeds(curves, "cola", "sgnet_default_noise1_n100", {4: 0.05})
    # a run still going (no predictions yet) is not read
    (curves / "cola" / "sbert_gate_random_n100" / "seed1").mkdir(parents=True)
    (curves / "cola" / "sbert_gate_random_n100" / "seed1" / "metrics.json").write_text("{}")
    # 1,000 sentences: one seed each -> the paired bootstrap over dev examples
    labels = [1, 0] * 20
    good, poor = labels[:36] + [1 - y for y in labels[36:]], [1] * 40
    _run(curves / "cola" / "sgnet_default_n1000" / "seed1", "cola", 1, predictions=good, labels=labels)
    _run(curves / "cola" / "baseline_default_n1000" / "seed1", "cola", 1, predictions=poor, labels=labels)
    # all: the BLiMP sweep's runs, two seeds
    base_all, sg_all = {1: 0.30, 2: 0.33}, {1: 0.31, 2: 0.36}
    _seeds(blimp, "cola", "baseline_default", base_all, max_train_samples=8551)
    _seeds(blimp, "cola", "sgnet_default", sg_all, max_train_samples=8551)

    table, results, adjusted = ct.curve_table("cola", curves, blimp, glue, resamples=200)

    # means over the archived seeds, with the seeds; "–" where nothing is archived
    row = _row(table, "100")
    assert row[1:6] == [
        f"{np.mean(list(base.values())):.4f} (s1–3)",
        f"{np.mean(list(sg.values())):.4f} (s1–3)",
        "0.0500 (s4)",
        f"{np.mean(list(sb.values())):.4f} (s1–3)",
        "–",
    ]
    assert _row(table, "all (8,551)")[1:3] == ["0.3150 (s1,2)", "0.3350 (s1,2)"]
    assert _row(table, "1,000")[3:6] == ["–", "–", "–"]
    # the paired t-tests over seeds and their t-intervals, against SciPy
    expected_p = {}
    for key, a, b in (
        ((100, "sgnet_default", "baseline_default"), sg, base),
        ((100, "sbert_gate", "baseline_default"), sb, base),
        ((None, "sgnet_default", "baseline_default"), sg_all, base_all),
    ):
        r = results[key]
        seeds = sorted(a)
        d = [a[s] - b[s] for s in seeds]
        assert r["test"] == "t" and r["seeds"] == seeds
        assert r["difference"] == pytest.approx(np.mean(d))
        expected_p[key] = stats.ttest_rel([a[s] for s in seeds], [b[s] for s in seeds]).pvalue
        assert r["p"] == pytest.approx(expected_p[key])
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=np.mean(d), scale=stats.sem(d))
        assert r["ci95"] == pytest.approx([lo, hi])
        # the exact sign-flip test: every difference shares a sign, so 2 of the 2^k patterns are as extreme
        assert r["sign_flip_p"] == pytest.approx(2 / 2 ** len(d))
    # one shared seed: the bootstrap over dev examples; its difference is the dev metric's
    boot = results[1000, "sgnet_default", "baseline_default"]
    assert boot["test"] == "bootstrap" and boot["seeds"] == [1]
    assert boot["difference"] == pytest.approx(matthews_corrcoef(labels, good) - matthews_corrcoef(labels, poor))
    # no shared seed: left out, with a note; nothing compared where a system has no run
    assert (100, "sgnet_default", "sgnet_default_noise1") not in results
    assert "* SG-Net − SG-Net random trees at 100: left out, no shared seed (A s1–3, B s4)" in table
    assert set(results) == {*expected_p, (1000, "sgnet_default", "baseline_default")}
    # Holm over the whole table (a bootstrap p of 0 counts as 1/resamples)
    keys = list(results)
    family = [max(results[k]["p"], 1 / 200) if results[k]["test"] == "bootstrap" else results[k]["p"] for k in keys]
    assert [adjusted[k] for k in keys] == pytest.approx(_holm(family))
    # bold: a t-test whose Holm p < 0.05; the steady SG-Net gain is, the noisier gated SB gain is significant
    # before the correction only; the one-seed bootstrap is never bold, however small its p
    sg_key, sb_key = (100, "sgnet_default", "baseline_default"), (100, "sbert_gate", "baseline_default")
    assert adjusted[sg_key] < 0.05
    assert results[sb_key]["p"] < 0.05 <= adjusted[sb_key]
    assert adjusted[1000, "sgnet_default", "baseline_default"] < 0.05
    assert _row(table, "100")[6].startswith("**") and _row(table, "100")[6].endswith("**")
    assert results[sg_key]["p"] < 0.001  # printed as such
    assert f"(s1–3; t <0.001; sign flip 0.250; Holm {adjusted[sg_key]:.3f})**" in _row(table, "100")[6]
    assert (
        f"(s1–3; t {results[sb_key]['p']:.3f}; sign flip 0.250; Holm {adjusted[sb_key]:.3f})" in _row(table, "100")[7]
    )
    assert "**" not in _row(table, "100")[7]
    assert "bootstrap" in _row(table, "1,000")[6] and "**" not in _row(table, "1,000")[6]
    assert _row(table, "100")[8:] == ["–", "–"]
    assert f"Holm's adjustment over the table's {len(results)} tests" in table


def test_sst2_10000_is_the_glue_sweeps_runs_and_the_curves_own_runs_only_add_seeds(tmp_path):
    ct = _module()
    curves, blimp, glue = tmp_path / "curves", tmp_path / "blimp", tmp_path / "glue"
    config = {"max_train_samples": 10000, "num_train_epochs": 2.0, "max_steps": -1}
    _seeds(glue, "sst2", "baseline_default", {1: 0.87, 2: 0.88}, **config, output_dir="runs/glue_sweep/x")
    _seeds(glue, "sst2", "sgnet_default", {1: 0.86}, **config, output_dir="runs/glue_sweep/y")
    # the curve sweep's own 10,000 runs: seed 2 again with another score (the GLUE sweep's is kept, noted), seed 3 new
    _seeds(curves, "sst2", "baseline_default_n10000", {2: 0.80, 3: 0.89}, **config, output_dir="runs/curves/x")
    table, results, _ = ct.curve_table("sst2", curves, blimp, glue, resamples=50)
    assert _row(table, "10,000")[1:3] == [f"{np.mean([0.87, 0.88, 0.89]):.4f} (s1–3)", "0.8600 (s1)"]
    assert (
        "sst2 10000 baseline_default seed 2: the curve's run (0.8000) differs from the GLUE sweep's (0.8800)" in table
    )
    assert "seed 3" not in table  # the same configuration but for the folder: not noted
    assert results[10000, "sgnet_default", "baseline_default"]["seeds"] == [1]
    assert _row(table, "100")[1:] == ["–"] * 9


def test_sst2_whole_training_set_is_a_row_once_its_runs_are_archived(tmp_path):
    ct = _module()
    curves, blimp = tmp_path / "curves", tmp_path / "blimp"
    _seeds(curves, "sst2", "baseline_default_n100", {1: 0.70, 2: 0.72})
    table, _, _ = ct.curve_table("sst2", curves, blimp, None, resamples=50, preset="gpu")
    assert not any(line.startswith("| all") for line in table.splitlines())  # not run: no row of dashes
    config = {"max_train_samples": 67349}
    _seeds(curves, "sst2", "baseline_default_nall", {1: 0.90, 2: 0.92}, **config)
    _seeds(curves, "sst2", "sgnet_default_nall", {1: 0.91, 2: 0.90}, **config)
    _seeds(blimp, "sst2", "baseline_default", {1: 0.10})  # CoLA's whole set comes from the BLiMP runs, SST-2's not
    table, results, _ = ct.curve_table("sst2", curves, blimp, None, resamples=50, preset="gpu")
    assert _row(table, "all (67,349)")[1:3] == ["0.9100 (s1,2)", "0.9050 (s1,2)"]
    assert results[None, "sgnet_default", "baseline_default"]["seeds"] == [1, 2]
    assert "BLiMP" not in table.split("\n")[0]


def test_a_gpu_study_table_names_the_seeds_that_ran_on_the_cpu(tmp_path):
    ct = _module()
    curves, blimp = tmp_path / "curves", tmp_path / "blimp"
    _seeds(curves, "sst2", "baseline_default_n100", {1: 0.70, 2: 0.72, 3: 0.74})
    _seeds(curves, "sst2", "baseline_default_n100", {4: 0.71, 5: 0.73}, device="cpu")
    _seeds(curves, "sst2", "sgnet_default_n100", {1: 0.71, 2: 0.70, 3: 0.72, 4: 0.75})
    table, _, _ = ct.curve_table("sst2", curves, blimp, None, resamples=50, preset="gpu")
    assert _row(table, "100")[1:3] == ["0.7200 (s1–5; s4,5 on CPU)", "0.7200 (s1–4)"]
    assert '"on CPU" ran on the CPU' in table.split("\n")[0]
    _seeds(curves, "sst2", "sbert_gate_n100", {1: 0.70, 2: 0.71}, device="cpu")
    assert _row(ct.curve_table("sst2", curves, blimp, None, resamples=50, preset="gpu")[0], "100")[4] == (
        "0.7050 (s1,2; all on CPU)"
    )
    table, _, _ = ct.curve_table("sst2", curves, blimp, None, resamples=50, preset="cpu")  # a CPU sweep: all on CPU
    assert _row(table, "100")[1] == "0.7200 (s1–5)"


def test_gold_parsed_random_table(tmp_path):
    ct = _module()
    root = tmp_path / "sst_trees"
    plain = {1: 0.60, 2: 0.62, 3: 0.61, 4: 0.63}
    gold = {1: 0.66, 2: 0.65, 3: 0.70, 4: 0.66}
    parsed = {1: 0.64, 2: 0.66, 3: 0.65}
    random = {1: 0.61, 2: 0.60, 3: 0.64, 4: 0.62}
    for variant, scores in (
        ("baseline_default", plain),
        ("sgnet_default_gold", gold),
        ("sgnet_default_parsed", parsed),
        ("sgnet_default_gold_noise1", random),
        ("sbert_gate_gold", {5: 0.7}),
    ):
        _seeds(root, "sst2_trees", f"{variant}_n100", scores)
    table, results, adjusted = ct.trees_table(tmp_path / "sst_trees", resamples=50)
    assert _row(table, "SG-Net")[1:5] == [
        f"{np.mean(list(s.values())):.4f} ({'s1–4' if len(s) == 4 else 's1–3'})" for s in (plain, gold, parsed, random)
    ]
    assert _row(table, "SB gated")[1:5] == [f"{np.mean(list(plain.values())):.4f} (s1–4)", "0.7000 (s5)", "–", "–"]
    assert _row(table, "SB gated")[5:] == ["–"] * 4
    assert "* SB gated, gold − plain: left out, no shared seed (A s5, B s1–4)" in table
    pairs = {"gold": gold, "parsed": parsed, "random": random, "plain": plain}
    assert set(results) == {("SG-Net", a, b) for a, b, _ in ct.TREES_COMPARISONS}
    keys = list(results)
    for key in keys:
        a, b = pairs[key[1]], pairs[key[2]]
        seeds = sorted(set(a) & set(b))
        assert results[key]["seeds"] == seeds
        assert results[key]["p"] == pytest.approx(stats.ttest_rel([a[s] for s in seeds], [b[s] for s in seeds]).pvalue)
    assert [adjusted[k] for k in keys] == pytest.approx(_holm([results[k]["p"] for k in keys]))
    # bold exactly where Holm p < 0.05: here gold − random only (gold − plain has p < 0.05 before the correction)
    bold = [c.startswith("**") for c in _row(table, "SG-Net")[5:]]
    assert bold == [adjusted["SG-Net", a, b] < 0.05 for a, b, _ in ct.TREES_COMPARISONS] == [False, True, False, False]
    assert results["SG-Net", "gold", "plain"]["p"] < 0.05


def test_an_empty_archive_prints_dashes(tmp_path, capsys):
    ct = _module()
    ct.main(
        ["--curves", str(tmp_path / "a"), "--blimp", str(tmp_path / "b"), "--glue", str(tmp_path / "c")]
        + ["--trees", str(tmp_path / "d")]
    )
    out = capsys.readouterr().out
    assert out.count("**CoLA learning curve**") == 1 and out.count("**Gold vs parsed vs random trees**") == 1
    for first in ("100", "1,000", "all", "10,000", "SG-Net", "SB gated"):
        assert set(_row(out, first)[1:]) == {"–"}


def test_the_committed_archive_makes_the_tables():
    ct = _module()
    runs = ROOT / "docs" / "results" / "runs"
    table, _, _ = ct.curve_table(
        "sst2", runs / "learning_curves", runs / "cola_blimp", runs / "glue_sweep", resamples=50
    )
    # the 10,000 point is the full-data sweep's SST-2 runs, as archived
    by_seed = ct.read_variant(runs / "glue_sweep" / "sst2" / "sgnet_default", "sst2")
    assert by_seed
    assert _row(table, "10,000")[2] == f"{np.mean([r['score'] for r in by_seed.values()]):.4f} " + (
        f"({ct.seeds_text(sorted(by_seed))})"
    )


def _doc_table_rows(heading: str, first_header: str) -> list[list[str]]:
    """The rows of every table under ``heading`` in docs/results.md (up to the next heading) whose header starts
    with ``first_header``, in order."""
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    section = section[: min(i for i in (section.find("\n## ", 1), section.find("\n### ", 1)) if i > 0)]
    rows, inside = [], False
    for line in section.splitlines():
        if line.startswith(f"| {first_header} |"):
            inside = True
        if inside and line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif not line.startswith("|"):
            inside = False
    return rows


def _script_rows(markdown: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in markdown.splitlines() if line.startswith("|")]


def test_results_md_learning_curves_are_the_archive():
    """Every cell of the GPU-preset learning-curve tables in docs/results.md is what curve_tables.py computes from
    the committed archive now (means, t-tests over seeds, Holm): a run archived without refreshing the tables, or a
    hand-edited cell, fails here."""
    ct = _module()
    runs = ROOT / "docs" / "results" / "runs"
    if not (runs / "learning_curves_gpu_preset").is_dir():
        pytest.skip("no GPU-preset learning-curve archive")
    want = []
    for task in ct.CURVE_TASKS:
        table, _, _ = ct.curve_table(
            task, runs / "learning_curves_gpu_preset", runs / "cola_blimp_gpu_preset", None, preset="gpu"
        )
        want += _script_rows(table)
    assert _doc_table_rows("### Learning curves, CoLA and SST-2 (GPU preset", "training sentences") == want


def test_results_md_trees_table_is_the_archive():
    """The same for the gold / parsed / random trees table (its one-seed cells use the script's seeded bootstrap)."""
    ct = _module()
    runs = ROOT / "docs" / "results" / "runs"
    if not (runs / "sst_trees").is_dir():
        pytest.skip("no SST-trees archive")
    table, _, _ = ct.trees_table(runs / "sst_trees")
    assert _doc_table_rows("### Gold vs parsed vs random trees", "system") == _script_rows(table)
