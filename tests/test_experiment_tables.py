"""The GLUE sweep's summary flags runs whose dev predictions collapsed (experiments/ scripts, read as modules)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run(folder: Path, task: str, metric: str, predictions: list, labels: list, score: float) -> None:
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(
        json.dumps({"dev": {metric: score}, "train": {"runtime_s": 1.0}, "sizes": {"train": 10}, "subsample": {}})
    )
    (folder / "dev_predictions.json").write_text(
        json.dumps({"task": task, "order": "dataset", "predictions": predictions, "labels": labels})
    )


def test_summarize_measures_spread_and_the_tables_list_collapsed_runs(tmp_path):
    glue, tables = _module("sgnet_glue"), _module("glue_tables")
    labels = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    _run(tmp_path / "stsb" / "sbert_baseline" / "seed1", "stsb", "pearson", [0.5, 1, 2, 3, 4, 4.5], labels, 0.99)
    _run(tmp_path / "stsb" / "sbert_baseline" / "seed2", "stsb", "pearson", [2.4, 2.5, 2.5, 2.5, 2.6, 2.5], labels, 0.2)
    cls = [1, 1, 0, 1, 0, 1]
    _run(tmp_path / "cola" / "sbert" / "seed1", "cola", "matthews_correlation", [1] * 6, cls, 0.0)
    _run(tmp_path / "cola" / "sbert_baseline" / "seed1", "cola", "matthews_correlation", cls, cls, 1.0)
    summary = glue._summarize(argparse.Namespace(out=str(tmp_path), resamples=50))

    def std(xs):  # the population standard deviation, written out
        m = sum(xs) / len(xs)
        return (sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5

    spread = summary["tasks"]["stsb"]["variants"]["sbert_baseline"]["spread"]
    assert spread == pytest.approx(
        [std([0.5, 1, 2, 3, 4, 4.5]) / std(labels), std([2.4, 2.5, 2.5, 2.5, 2.6, 2.5]) / std(labels)]
    )
    assert summary["tasks"]["cola"]["variants"]["sbert"]["spread"] == [1.0]
    assert summary["tasks"]["cola"]["variants"]["sbert_baseline"]["spread"] == [pytest.approx(4 / 6)]
    listed = tables.collapsed_runs(summary).splitlines()
    assert listed == [
        "* CoLA, Syntax-BERT (paper), seed 1: 0.0000 (100% of the dev set in one class)",
        f"* STS-B, SB head baseline, seed 2: 0.2000 (prediction std = {spread[1]:.2f} × label std)",
    ]


def test_archive_copies_finished_runs_and_never_replaces_a_different_run(tmp_path):
    glue = _module("sgnet_glue")
    runs, archive = tmp_path / "runs", tmp_path / "archive"
    labels = [1, 1, 0, 1, 0, 1]
    for variant, preds in (("baseline_default", [1, 1, 0, 0, 0, 1]), ("sgnet_default", [1, 1, 0, 1, 0, 0])):
        _run(runs / "cola" / variant / "seed1", "cola", "matthews_correlation", preds, labels, 0.7)
        (runs / "cola" / variant / "seed1" / "run.json").write_text(json.dumps({"task": "cola", "seed": 1}))
    (runs / "cola" / "sgnet_default" / "seed2").mkdir(parents=True)  # a run still going: no metrics yet
    args = argparse.Namespace(out=str(runs), to=str(archive), resamples=50)
    glue._archive(args)
    assert sorted(p.relative_to(archive).as_posix() for p in archive.rglob("*.json")) == [
        f"cola/{v}/seed1/{name}"
        for v in ("baseline_default", "sgnet_default")
        for name in ("dev_predictions.json", "metrics.json", "run.json")
    ]
    for f in archive.rglob("*.json"):
        assert json.loads(f.read_text()) == json.loads((runs / f.relative_to(archive)).read_text())
    from_folders = glue._summarize(argparse.Namespace(out=str(runs), resamples=50))
    from_archive = glue._summarize(argparse.Namespace(out=str(archive), resamples=50))
    assert from_archive["tasks"] == from_folders["tasks"]
    glue._archive(args)  # the same runs again: kept, nothing rewritten
    # a different run under the same name is refused, and the archived copy stays as it was
    before = (archive / "cola" / "sgnet_default" / "seed1" / "metrics.json").read_text()
    (runs / "cola" / "sgnet_default" / "seed1" / "metrics.json").write_text(
        json.dumps({"dev": {"matthews_correlation": 0.1}, "train": {"runtime_s": 1.0}, "sizes": {}, "subsample": {}})
    )
    with pytest.raises(SystemExit, match="different run"):
        glue._archive(args)
    assert (archive / "cola" / "sgnet_default" / "seed1" / "metrics.json").read_text() == before


def test_summarize_refuses_to_pair_runs_on_different_dev_examples(tmp_path):
    glue = _module("sgnet_glue")
    for variant, ids in (("baseline_default", ["a", "b", "c"]), ("sgnet_default", ["a", "c", "b"])):
        folder = tmp_path / "rte" / variant / "seed1"
        _run(folder, "rte", "accuracy", [0, 1, 1], [0, 1, 0], 2 / 3)
        pred = json.loads((folder / "dev_predictions.json").read_text())
        (folder / "dev_predictions.json").write_text(json.dumps({**pred, "ids": ids}))
    with pytest.raises(SystemExit, match="different dev examples"):
        glue._summarize(argparse.Namespace(out=str(tmp_path), resamples=50))


def _summary(task: str, variants: dict[str, dict[int, float]], tests: list[tuple[str, str, list[int], float]]) -> dict:
    """A summary as `sgnet_glue.py summarize` writes it: {variant: {seed: score}}, tests (a, vs, seeds, boot p)."""
    rows = {
        v: {"seeds": sorted(s), "scores": [s[k] for k in sorted(s)], "spread": [0.5] * len(s)}
        for v, s in variants.items()
    }
    out: dict = {}
    for a, b, seeds, p in tests:
        diff = sum(variants[a][s] - variants[b][s] for s in seeds) / len(seeds)
        out.setdefault(a, []).append({"vs": b, "seeds": seeds, "difference": diff, "bootstrap_p": p})
    return {"tasks": {task: {"metric": "accuracy", "regression": False, "variants": rows, "tests": out}}}


def test_merged_summaries_join_seeds_and_recompute_the_t_test_over_all_of_them():
    from scipy.stats import ttest_rel

    tables = _module("glue_tables")
    base = {1: 0.50, 2: 0.56}
    sg = {1: 0.55, 2: 0.57}
    old = _summary(
        "rte", {"baseline_default": base, "sgnet_default": sg}, [("sgnet_default", "baseline_default", [1, 2], 0.20)]
    )
    new = _summary(
        "rte",
        {"baseline_default": {3: 0.52}, "sgnet_default": {3: 0.60}},
        [("sgnet_default", "baseline_default", [3], 0.01)],
    )
    merged = tables.merge_summaries([old, new])["tasks"]["rte"]
    v = merged["variants"]["sgnet_default"]
    assert v["seeds"] == [1, 2, 3] and v["scores"] == [0.55, 0.57, 0.60]
    mean = (0.55 + 0.57 + 0.60) / 3
    assert v["mean"] == pytest.approx(mean)
    assert v["std"] == pytest.approx((sum((x - mean) ** 2 for x in (0.55, 0.57, 0.60)) / 2) ** 0.5)
    (test,) = merged["tests"]["sgnet_default"]
    assert test["seeds"] == [1, 2, 3]
    assert test["difference"] == pytest.approx((0.05 + 0.01 + 0.08) / 3)
    assert test["t_test_p"] == pytest.approx(ttest_rel([0.55, 0.57, 0.60], [0.50, 0.56, 0.52]).pvalue)
    assert [(b["seeds"], b["p"]) for b in test["bootstrap"]] == [([1, 2], 0.20), ([3], 0.01)]
    row = next(
        line
        for line in tables.main_tables(tables.merge_summaries([old, new])).splitlines()
        if line.startswith("| SG-Net − baseline")
    )
    # the effect's 95% interval over seeds (SciPy's t-interval of the per-seed differences); one test in the
    # family, so Holm leaves its p as it is
    from scipy import stats

    d = [0.05, 0.01, 0.08]
    lo, hi = stats.t.interval(0.95, 2, loc=sum(d) / 3, scale=stats.sem(d))
    p = test["t_test_p"]
    assert f"| +0.0467 [{lo:+.3f}, {hi:+.3f}] (bootstrap 0.200 on s1–2, 0.010 on s3; t {p:.3f}, Holm {p:.3f}) |" in row
    assert "**" not in row  # p 0.148: not bold
    joined = tables.merge_summaries([old, new])
    assert tables.runs_below(joined, "sgnet_default", "baseline_default") == "0 of 3 paired runs below:\n* none"
    assert tables.runs_below(joined, "baseline_default", "sgnet_default").splitlines() == [
        "3 of 3 paired runs below:",
        "* RTE, seed 1: 0.5000 vs 0.5500 (-0.0500)",
        "* RTE, seed 2: 0.5600 vs 0.5700 (-0.0100)",
        "* RTE, seed 3: 0.5200 vs 0.6000 (-0.0800)",
    ]
    # Holm over the table's family: every t-test of 3 or more seeds on every task of the comparison table
    two = _summary(
        "cola",
        {"baseline_default": {1: 0.20, 2: 0.22, 3: 0.21}, "sgnet_default": {1: 0.30, 2: 0.33, 3: 0.31}},
        [("sgnet_default", "baseline_default", [1, 2, 3], 0.001)],
    )
    both = tables.merge_summaries([old, new, two])
    family = tables.holm_family(both)
    raw = {k[0]: both["tasks"][k[0]]["tests"]["sgnet_default"][0]["t_test_p"] for k in family}
    small, large = sorted(raw, key=raw.get)
    assert family[(small, "sgnet_default", "baseline_default")] == pytest.approx(2 * raw[small])
    assert family[(large, "sgnet_default", "baseline_default")] == pytest.approx(max(2 * raw[small], raw[large]))
    # one summary over every seed: its own bootstrap p, as before
    alone = tables.merge_summaries([old])
    assert "| +0.0300 (0.200; 2 seeds) |" in tables.main_tables(alone)
    # the same seed with two scores is two different runs: refused, unless the later is asked to replace it
    clash = _summary(
        "rte",
        {"baseline_default": {2: 0.40}, "sgnet_default": {2: 0.57}},
        [("sgnet_default", "baseline_default", [2], 0.03)],
    )
    with pytest.raises(
        ValueError, match="two different runs: rte / baseline_default / seed 2: 0.5600 replaced by 0.4000"
    ):
        tables.merge_summaries([old, new, clash])
    replaced: list[str] = []
    fixed = tables.merge_summaries([old, new, clash], replaced)["tasks"]["rte"]
    assert replaced == ["rte / baseline_default / seed 2: 0.5600 replaced by 0.4000"]
    assert fixed["variants"]["baseline_default"]["scores"] == [0.50, 0.40, 0.52]
    (test,) = fixed["tests"]["sgnet_default"]
    assert test["difference"] == pytest.approx((0.05 + 0.17 + 0.08) / 3)
    # the old summary's bootstrap over seeds 1-2 paired the replaced run: dropped; seed 3's and the new one's stay
    assert [(b["seeds"], b["p"]) for b in test["bootstrap"]] == [([2], 0.03), ([3], 0.01)]


# --- the corrected comparison tables of docs/results.md (experiments/results_tables.py) ---------------------------

RESULTS_MD = ROOT / "docs" / "results.md"
SUMMARIES = ROOT / "docs" / "results"


def _holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out here so the tables' own is checked against it."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def _results_tables():
    needed = [
        "sgnet_glue.json",
        "syntax_bert.json",
        "syntax_bert_gated_ablations.json",
        "stsb_parser_noise.json",
        "sst2_learning_curve.json",
        "glue_sweep.json",
        "translation.json",
        "reading_comprehension.json",
    ]
    missing = [n for n in needed if not (SUMMARIES / n).exists()]
    if missing or not RESULTS_MD.exists():
        pytest.skip(f"result summaries not found: {missing or RESULTS_MD}")
    return _module("results_tables")


def test_every_corrected_table_in_results_md_is_made_from_the_committed_summaries():
    """Every table printed by results_tables.py appears, verbatim, in docs/results.md."""
    tables = _results_tables().tables()
    text = RESULTS_MD.read_text(encoding="utf-8")
    assert len(tables) == 11
    for name, table in tables.items():
        assert table in text, f"docs/results.md does not show the current {name} table"


def test_seed_tables_are_recomputed_with_scipy_and_bold_only_holm_survivors():
    """Per cell: Δ, its 95% t-interval (scipy.stats.t.interval) and the paired t-test (scipy.stats.ttest_rel) from
    the per-seed scores in the summaries; Holm over the table's cells; bold exactly where Holm's p < 0.05."""
    from scipy import stats

    rt = _results_tables()
    tables = rt.tables()
    bold_anywhere = 0
    for name, (summary_file, rows) in rt.SEED_TABLES.items():
        summary = json.loads((SUMMARIES / summary_file).read_text(encoding="utf-8"))
        shown = _rows(tables[name])
        assert len(shown) == len(rows)
        ps, expected = [], []
        for task, a, b, label in rows:
            v = summary["tasks"][task]["variants"]
            sa, sb = dict(zip(v[a]["seeds"], v[a]["scores"])), dict(zip(v[b]["seeds"], v[b]["scores"]))
            seeds = sorted(set(sa) & set(sb))
            assert len(seeds) >= 3, (name, label)
            d = [sa[s] - sb[s] for s in seeds]
            mean = sum(d) / len(d)
            if all(x == 0 for x in d):  # identical runs: no difference, no evidence (scipy answers nan)
                p, lo, hi = 1.0, 0.0, 0.0
            else:
                p = stats.ttest_rel([sa[s] for s in seeds], [sb[s] for s in seeds]).pvalue
                lo, hi = stats.t.interval(0.95, len(d) - 1, loc=mean, scale=stats.sem(d))
            ps.append(p)
            expected.append((label, f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]", _p(p)))
        for (label, delta, p), holm, row in zip(expected, _holm(ps), shown):
            survives = holm < 0.05
            bold_anywhere += survives
            assert row[0] == label
            assert row[4] == (f"**{delta}**" if survives else delta), (name, label)
            assert row[6] == p, (name, label)
            assert row[7] == (f"**{_p(holm)}**" if survives else _p(holm)), (name, label)
    assert bold_anywhere == 2  # Syntax-BERT's STS-B collapse; summed sub-networks vs the plain baseline


def test_example_level_tables_holm_over_their_family_and_no_bold():
    """Translation and SQuAD: Holm's adjustment over each table's tests (a bootstrap p of 0 counted as 1/1,000),
    recomputed from the summaries; one or two seeds per cell, so nothing is bold."""
    rt = _results_tables()
    tables = rt.tables()
    translation = json.loads((SUMMARIES / "translation.json").read_text(encoding="utf-8"))
    ps = []
    for fraction in sorted(translation["fractions"], key=float):
        for arm in sorted(translation["fractions"][fraction]):
            for run in translation["fractions"][fraction][arm]:
                for split in ("test2016", "newstest2013"):
                    if split in run.get("vs_baseline", {}):
                        ps.append(max(run["vs_baseline"][split]["p"], 1e-3))
    assert len(ps) == 19
    shown = [c for row in _rows(tables["translation"]) for c in (row[9], row[13]) if c]
    assert shown == [_p(h) for h in _holm(ps)]
    assert "**" not in tables["translation"]

    squad = json.loads((SUMMARIES / "reading_comprehension.json").read_text(encoding="utf-8"))["tasks"]["squad"]
    comparisons = [squad["tests"][k] for k in ("sgnet", "sgnet_verifier", "vanilla_layer")] + [
        squad["pairs"][k] for k in ("sgnet vs vanilla_layer", "sgnet_verifier vs sgnet")
    ]
    ps = []
    for c in comparisons:
        ps += [max(c["bootstrap_span_f1"]["p_two_sided"], 1e-3), c["mcnemar_span_em"]["pooled"]["p_value"]]
    shown = [c for row in _rows(tables["squad_threshold_free"]) for c in (row[4], row[7])]
    assert shown == [_p(h) for h in _holm(ps)]
    assert "**" not in tables["squad_threshold_free"]


def _translation_run(root: Path, arm: str, seed: int, hyps: list[str], src: Path, ref: Path, bleu: float) -> None:
    run = root / "f0.1" / arm / f"seed{seed}"
    run.mkdir(parents=True)
    metrics = {
        "fraction": 0.1,
        "arm": arm,
        "seed": seed,
        "parameters": 1000,
        "sizes": {"train": 10},
        "train": {"runtime_s": 1.0, "epochs": 1.0, "best_step": 4},
        "task_options": {"eval_sets": {"test2016": [str(src), str(ref)]}},
        "eval": {"test2016": {"bleu": bleu}},
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "hyp.test2016.txt").write_text("".join(h + "\n" for h in hyps))
    (run / "dev_bleu.json").write_text(json.dumps([{"step": 2, "dev_bleu": 1.0}, {"step": 4, "dev_bleu": bleu}]))


def test_translation_summary_recomputes_bleu_and_tests_arms_over_seeds(tmp_path):
    """BLEU from the archived hypotheses (a hypothesis file that disagrees with its recorded BLEU is refused), the
    tests over seeds per pair of arms against SciPy, Holm over them, and the fixed-model test two-sided."""
    from scipy import stats

    from syntaxformer.tasks.metrics import corpus_bleu

    tr = _module("translation")
    refs = [f"ein mann mit hut steht vor dem haus nummer {i} ." for i in range(30)]
    src, ref = tmp_path / "t.en", tmp_path / "t.de"
    src.write_text("".join(f"a man {i}\n" for i in range(30)))
    ref.write_text("".join(r + "\n" for r in refs))
    root = tmp_path / "archive"
    rng = np.random.default_rng(0)
    bleu = {}
    for arm, drop in (("baseline", 0.5), ("syntax", 0.3), ("random_tags", 0.45)):
        for seed in (1, 2, 3):
            hyps = [" ".join(w for w in r.split() if rng.random() > drop) or "x" for r in refs]
            bleu[arm, seed] = corpus_bleu(hyps, refs)["bleu"]
            _translation_run(root, arm, seed, hyps, src, ref, bleu[arm, seed])
    args = argparse.Namespace(to=str(root), resamples=200)
    summary = tr._summarize(args)
    f = summary["fractions"]["0.1"]
    assert [r["bleu"]["test2016"] for r in f["arms"]["syntax"]] == [round(bleu["syntax", s], 2) for s in (1, 2, 3)]
    assert list(f["arms"]) == ["baseline", "syntax", "random_tags"]
    pairs = {(c["b"], c["a"]): c for c in f["comparisons"]}
    assert set(pairs) == {("syntax", "baseline"), ("random_tags", "baseline"), ("random_tags", "syntax")}
    ps = []
    for (b, a), c in pairs.items():
        want = stats.ttest_rel([bleu[b, s] for s in (1, 2, 3)], [bleu[a, s] for s in (1, 2, 3)]).pvalue
        assert c["t_p"] == pytest.approx(want) and c["seeds"] == [1, 2, 3]
        ps.append(c["t_p"])
    order = np.argsort(ps)  # Holm written out: the k-th smallest p times (3 - k), running maximum
    want_holm = np.maximum.accumulate([min(1.0, (3 - k) * ps[i]) for k, i in enumerate(order)])
    assert [list(pairs.values())[i]["holm"] for i in order] == pytest.approx(want_holm)
    assert summary["holm_family"] == 3
    fixed = f["arms"]["syntax"][0]["vs_baseline_fixed_models"]["test2016"]
    assert fixed["delta"] == pytest.approx(bleu["syntax", 1] - bleu["baseline", 1], abs=0.01)
    assert 0 <= fixed["p_two_sided"] <= 1
    table = tr._markdown(summary)
    assert "for these trained models only" in table and "two-sided" in table
    # a hypothesis file edited after the run no longer matches its recorded BLEU: refused
    (root / "f0.1" / "syntax" / "seed2" / "hyp.test2016.txt").write_text("".join("x\n" for _ in refs))
    with pytest.raises(SystemExit, match="from hyp.test2016.txt, recorded"):
        tr._summarize(args)


def test_translation_export_parses_gives_the_runs_the_spacy_features(tmp_path, monkeypatch, annotator, tokenizers):
    """`translation.py export-parses` writes the parse of every source sentence a run reads (training subset,
    validation, evaluation sets), once each; looked up with `--parser jsonl:FILE` (the GPU machine has no spaCy) they
    give every syntax input exactly as spaCy does."""
    from syntaxformer.data import make_annotator
    from syntaxformer.tasks import get_task
    from syntaxformer.tasks.translation import encode_pairs
    from tests.conftest import data_path

    m30k = tmp_path / "data" / "multi30k"
    m30k.mkdir(parents=True)
    for name, n in (("train", 40), ("val", 10), ("test_2016_flickr", 10)):
        for lang in ("en", "de"):
            lines = data_path("multi30k", f"{name}.{lang}").read_text(encoding="utf-8").splitlines()[:n]
            (m30k / f"{name}.{lang}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    monkeypatch.setenv("SYNTAXFORMER_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    tr = _module("translation")
    parses = tmp_path / "parses.jsonl"
    common = ["--fractions", "1.0", "--no-newstest", "--out", str(tmp_path / "runs")]
    assert tr.main(["export-parses", *common, "--no-progress", "--out-file", str(parses)]) == 0
    args = argparse.Namespace(no_newstest=True, preset="cpu", out=str(tmp_path / "runs"))
    task = get_task("translation", **tr._task_options(args, 1.0, "syntax"))
    splits = {split: task.load_split(split) for split in ("train", "dev", "test2016")}
    assert sum(len(c) for c in splits.values()) == 60
    sources = {s for c in splits.values() for s in c.sources}
    assert len(parses.read_text(encoding="utf-8").splitlines()) == len(sources)  # each sentence once
    looked_up = make_annotator(f"jsonl:{parses}")
    inputs = ("upos_ids", "xpos_ids", "case_ids", "subword_ids", "dep_tin", "dep_tout", "syntax_tree")
    for corpus in splits.values():
        a, b = (encode_pairs(corpus, *tokenizers, p, inputs, show_progress=False) for p in (annotator, looked_up))
        assert len(a) == len(b) == len(corpus)
        assert all(x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x) for x, y in zip(a, b))
