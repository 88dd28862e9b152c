"""The minimal-pair suite figure (analysis/plots.py, `syntaxformer plot --kind suite`) on hand-made run
folders: ``metrics.json`` as ``syntaxformer train`` writes it and ``suites/<name>/report.json`` as
``syntaxformer evaluate --suite`` writes it (built here from made-up per-pair outcomes with the report's own
function). The plotted values are read back from the figure's Axes and compared with values computed here."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib (the 'analysis' / 'dev' extras)")

from syntaxformer.analysis.minimal_pairs import minimal_pair_report
from syntaxformer.analysis.plots import find_runs, plot_runs, plot_suite, suite_summary
from syntaxformer.cli import main
from syntaxformer.errors import ConfigError, DataError, InputError
from tests.analysis.test_plots import _error_bars, _run, _valid_png_and_svg

#: field -> its phenomena (two fields, three phenomena)
FIELDS = {"morphology": ["agreement"], "syntax": ["islands", "binding"]}


def _report(correct: dict[str, int], n: int = 200, suite: str = "blimp") -> dict:
    """A report of ``n`` pairs per phenomenon, ``correct[phenomenon]`` of them right (as evaluate writes it)."""
    records = [
        {"paradigm": ph, "pair_id": str(i), "field": field, "phenomenon": ph, "correct": i < correct[ph]}
        for field, phenomena in FIELDS.items()
        for ph in phenomena
        if ph in correct
        for i in range(n)
    ]
    return {"suite": suite, "data": suite, "run": "r", "acceptable": "1", "pairs": len(records)} | (
        minimal_pair_report(records)
    )


def _scored(folder: Path, correct: dict[str, int], seed: int = 1, suite: str = "blimp", n: int = 200) -> dict:
    if not (folder / "metrics.json").exists():
        _run(folder, 0.5, seed, task="cola")
    report = _report(correct, n, suite)
    (folder / "suites" / suite).mkdir(parents=True)
    (folder / "suites" / suite / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return report


def _t_interval(scores):
    from scipy.stats import t

    x = np.asarray(scores, dtype=float)
    half = t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return [x.mean() - half, x.mean() + half]


SEEDS = [  # three seeds of one system: correct pairs (of 200) per phenomenon
    {"agreement": 150, "islands": 110, "binding": 160},
    {"agreement": 170, "islands": 130, "binding": 150},
    {"agreement": 140, "islands": 100, "binding": 180},
]


def test_suite_summary_t_interval_over_seeds_and_the_reports_own_interval_for_one_seed():
    seeds = [_report(c) for c in SEEDS]
    one = _report({"agreement": 120, "islands": 90, "binding": 170})
    summary = suite_summary({"sgnet": seeds, "baseline": [one]}, "field")
    assert list(summary) == ["sgnet", "baseline"]
    assert list(summary["sgnet"]) == ["all", "morphology", "syntax"]
    morph = [c["agreement"] / 200 for c in SEEDS]
    syntax = [(c["islands"] + c["binding"]) / 400 for c in SEEDS]
    overall = [sum(c.values()) / 600 for c in SEEDS]
    for group, scores in (("all", overall), ("morphology", morph), ("syntax", syntax)):
        got = summary["sgnet"][group]
        assert got["mean"] == pytest.approx(np.mean(scores))
        assert got["scores"] == pytest.approx(scores) and got["seeds"] == 3
        assert got["ci"] == pytest.approx(_t_interval(scores))  # over the seeds' accuracies ...
    assert summary["sgnet"]["morphology"]["interval"] == "t interval over seeds"
    # not an interval over pairs: neither the pooled pairs' Wilson interval nor the mean of the seeds' own ones
    from syntaxformer.analysis.minimal_pairs import wilson_interval

    pooled = wilson_interval(sum(c["agreement"] for c in SEEDS), 600)
    own = np.mean([r["field"]["morphology"]["ci95"] for r in seeds], axis=0)
    width = np.diff(summary["sgnet"]["morphology"]["ci"])[0]
    assert width > 2 * (pooled[1] - pooled[0]) and width > 1.5 * (own[1] - own[0])
    # one seed: the report's Wilson interval over its pairs
    assert summary["baseline"]["syntax"]["mean"] == pytest.approx(260 / 400)
    assert summary["baseline"]["syntax"]["ci"] == pytest.approx(one["field"]["syntax"]["ci95"])
    assert summary["baseline"]["all"]["ci"] == pytest.approx(one["overall"]["ci95"])
    assert "over pairs" in summary["baseline"]["all"]["interval"]

    by_phenomenon = suite_summary({"sgnet": seeds}, "phenomenon")["sgnet"]
    assert list(by_phenomenon) == ["all", "agreement", "binding", "islands"]
    binding = [c["binding"] / 200 for c in SEEDS]
    assert by_phenomenon["binding"]["ci"] == pytest.approx(_t_interval(binding))
    # a group that one seed's report lacks (scored on some paradigms only): over the seeds that have it
    partial = suite_summary({"x": [*seeds[:2], _report({"agreement": 100})]}, "phenomenon")["x"]
    assert partial["binding"]["scores"] == pytest.approx([0.8, 0.75]) and partial["binding"]["seeds"] == 2
    assert partial["agreement"]["seeds"] == 3
    with pytest.raises(ConfigError, match="paradigm"):
        suite_summary({"sgnet": seeds}, "paradigm")


def test_plot_suite_draws_the_summary_and_skips_runs_without_a_report(tmp_path, caplog):
    reports = [_scored(tmp_path / "cola" / "sgnet" / f"seed{s}", c, s) for s, c in enumerate(SEEDS, 1)]
    single = _scored(tmp_path / "cola" / "baseline" / "seed1", {"agreement": 120, "islands": 90, "binding": 170})
    _run(tmp_path / "cola" / "lisa" / "seed1", 0.4, task="cola")  # trained, never scored on the suite
    with caplog.at_level(logging.WARNING, logger="syntaxformer.analysis.plots"):
        fig = plot_suite(find_runs([tmp_path]))
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 1 and "lisa" in skipped[0] and "sgnet" not in skipped[0]
    ax = fig.axes[0]
    expected = suite_summary({"baseline": [single], "sgnet": reports})  # find_runs: path order
    assert ax.syntaxformer == expected
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all pairs", "morphology", "syntax"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["baseline (1 seed)", "sgnet (3 seeds)", "chance (0.5)"]
    # markers: one errorbar container per system, its points at the means, its bars the intervals
    for container, system in zip(ax.containers, ["baseline", "sgnet"]):
        means = container.lines[0].get_ydata()
        assert list(means) == pytest.approx([expected[system][g]["mean"] for g in ("all", "morphology", "syntax")])
    bars = np.ravel(_error_bars(ax))
    assert bars == pytest.approx(np.ravel([expected[s][g]["ci"] for s in ("baseline", "sgnet") for g in expected[s]]))
    assert bars[8:10] == pytest.approx(_t_interval([c["agreement"] / 200 for c in SEEDS]))  # sgnet, morphology
    chance = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(chance) == 1 and list(chance[0].get_ydata()) == [0.5, 0.5]
    seed_dots = sorted(y for line in ax.lines if line.get_marker() == "." for y in line.get_ydata())
    assert len(seed_dots) == 9  # 3 seeds x 3 columns, only for the system with several seeds
    assert "by field" in ax.get_title() and ax.get_ylabel() == "accuracy on BLiMP pairs"

    ax = plot_suite(find_runs([tmp_path]), level="phenomenon").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["all pairs", "agreement", "binding", "islands"]


def test_plot_suite_errors(tmp_path):
    _run(tmp_path / "cola" / "a" / "seed1", 0.4, task="cola")
    _run(tmp_path / "cola" / "b" / "seed1", 0.4, task="cola")
    with pytest.raises(InputError, match=r"cola/a/seed1.*cola/b/seed1.*syntaxformer evaluate RUN --suite blimp"):
        plot_suite(find_runs([tmp_path]))
    assert main(["plot", str(tmp_path), "--kind", "suite", "--output", str(tmp_path / "fig")]) == 1
    assert not (tmp_path / "fig").exists()
    # several suites: one must be chosen; a path given to `evaluate --suite` names its suite by its stem
    _scored(tmp_path / "cola" / "a" / "seed1", {"agreement": 150})
    _scored(tmp_path / "cola" / "a" / "seed1", {"agreement": 120}, suite="my_pairs")
    with pytest.raises(ConfigError, match=r"2 suites \(blimp, my_pairs\).*--suite NAME"):
        plot_suite(find_runs([tmp_path]))
    ax = plot_suite(find_runs([tmp_path]), suite="data/my_pairs/").axes[0]
    assert ax.syntaxformer["a"]["all"]["mean"] == pytest.approx(0.6)
    with pytest.raises(InputError, match="no 'other' suite report.*they hold blimp, my_pairs"):
        plot_suite(find_runs([tmp_path]), suite="other")
    # the seeds of one system scored on different pairs are not averaged
    _scored(tmp_path / "cola" / "b" / "seed1", {"agreement": 150}, n=100)
    _scored(tmp_path / "cola" / "b" / "seed2", {"agreement": 150}, seed=2, n=200)
    with pytest.raises(DataError, match="different numbers of blimp pairs"):
        plot_suite(find_runs([tmp_path]), suite="blimp")
    bad = tmp_path / "cola" / "c" / "seed1"
    _run(bad, 0.4, task="cola")
    (bad / "suites" / "blimp").mkdir(parents=True)
    (bad / "suites" / "blimp" / "report.json").write_text(json.dumps({"overall": {}}), encoding="utf-8")
    with pytest.raises(DataError, match=r"c/seed1/suites/blimp/report.json is not the report"):
        plot_suite(find_runs([bad]))


def test_plot_runs_infers_the_suite_figure_and_the_cli_writes_png_and_svg(tmp_path, capsys):
    for s, c in enumerate(SEEDS[:2], 1):
        _scored(tmp_path / "runs" / "cola" / "sgnet" / f"seed{s}", c, s)
    _run(tmp_path / "runs" / "cola" / "baseline" / "seed1", 0.3, task="cola")
    written = plot_runs([tmp_path / "runs"], tmp_path / "fig")
    assert set(written) == {"results", "suite_blimp_field"}
    for paths in written.values():
        _valid_png_and_svg(paths)
    # runs without suite reports: no suite figure inferred (as before)
    assert set(plot_runs([tmp_path / "runs" / "cola" / "baseline"], tmp_path / "fig2")) == {"results"}
    args = ["plot", str(tmp_path / "runs"), "--kind", "suite", "--suite-level", "phenomenon", "--output"]
    assert main([*args, str(tmp_path / "cli")]) == 0
    assert "suite_blimp_phenomenon:" in capsys.readouterr().out
    _valid_png_and_svg(
        [tmp_path / "cli" / "suite_blimp_phenomenon.png", tmp_path / "cli" / "suite_blimp_phenomenon.svg"]
    )
    assert main([*args, str(tmp_path / "cli")]) == 1  # existing figures are refused ...
    assert "already exist" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "cli"), "--overwrite"]) == 0  # ... unless replaced on purpose
    # several suites and none chosen: the inferred figures leave it out; asked for, it is refused
    _scored(tmp_path / "runs" / "cola" / "sgnet" / "seed1", {"agreement": 10}, suite="other")
    assert set(plot_runs([tmp_path / "runs"], tmp_path / "fig3")) == {"results"}
    assert set(plot_runs([tmp_path / "runs"], tmp_path / "fig4", suite="other")) == {"results", "suite_other_field"}
    assert main(["plot", str(tmp_path / "runs"), "--kind", "suite", "--output", str(tmp_path / "x")]) == 1
    assert "choose one with --suite NAME" in capsys.readouterr().err
