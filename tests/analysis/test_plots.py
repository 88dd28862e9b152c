"""Figures (analysis/plots.py and `syntaxformer plot`) on hand-made run folders: minimal ``metrics.json`` and
``dev_predictions.json`` files as ``syntaxformer train`` writes them (no training), plus the tiny random BERT of
conftest.py for attention maps. The plotted values are read back from the figures' Axes and compared with values
computed here."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="figures need matplotlib (the 'analysis' / 'dev' extras)")

from syntaxformer.analysis.plots import (
    find_runs,
    plot_attention,
    plot_curve,
    plot_length_buckets,
    plot_results,
    plot_runs,
)
from syntaxformer.cli import main
from syntaxformer.errors import DataError, SyntaxformerError

LABELS = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1] * 4


def _run(
    folder: Path,
    score: float,
    seed: int = 1,
    task: str = "rte",
    train: int = 100,
    noise: float = 0.0,
    preds: list[int] | None = None,
) -> Path:
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(
        json.dumps(
            {
                "task": task,
                "task_title": task.upper(),
                "main_metric": "accuracy",
                "model_type": "SG-Net",
                "seed": seed,
                "sizes": {"train": train},
                "parser_noise": noise,
                "dev": {"accuracy": score},
            }
        ),
        encoding="utf-8",
    )
    if preds is not None:
        (folder / "dev_predictions.json").write_text(
            json.dumps({"ids": [f"dev-{i}" for i in range(len(preds))], "predictions": preds, "labels": LABELS}),
            encoding="utf-8",
        )
    return folder


def _t_interval(scores):
    from scipy.stats import t

    x = np.asarray(scores)
    half = t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return x.mean() - half, x.mean() + half


def _error_bars(ax):
    """(low, high) of each vertical error bar of ``ax``, in drawing order."""
    out = []
    for coll in ax.collections:
        for seg in coll.get_segments():
            if np.isclose(seg[0][0], seg[1][0]):  # vertical
                out.append((min(seg[0][1], seg[1][1]), max(seg[0][1], seg[1][1])))
    return out


def test_plot_results_bars_intervals_and_seed_dots(tmp_path):
    for s, v in ((1, 0.60), (2, 0.64), (3, 0.59)):
        _run(tmp_path / "rte" / "baseline" / f"seed{s}", v, s)
    for s, v in ((1, 0.66), (2, 0.65), (3, 0.70)):
        _run(tmp_path / "rte" / "sgnet" / f"seed{s}", v, s)
    preds = list(LABELS)
    for i in range(0, 40, 4):
        preds[i] = 1 - preds[i]  # 75% right
    single = _run(tmp_path / "rte" / "lisa" / "seed1", 0.75, preds=preds)
    runs = find_runs([tmp_path])
    assert {r.variant for r in runs} == {"baseline", "sgnet", "lisa"} and len(runs) == 7
    fig = plot_results(runs, n_resamples=200)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    heights = dict(zip(labels, [p.get_height() for p in ax.patches]))
    assert heights["baseline"] == pytest.approx(np.mean([0.60, 0.64, 0.59]))
    assert heights["sgnet"] == pytest.approx(np.mean([0.66, 0.65, 0.70]))
    assert heights["lisa"] == pytest.approx(0.75)
    bars = dict(zip(labels, _error_bars(ax)))
    assert bars["baseline"] == pytest.approx(_t_interval([0.60, 0.64, 0.59]))
    assert bars["sgnet"] == pytest.approx(_t_interval([0.66, 0.65, 0.70]))
    # one run: percentile bootstrap over its dev examples (the plain resampling loop, seed 0)
    rng = np.random.default_rng(0)
    y, p = np.array(LABELS), np.array(preds)
    accs = [np.mean(p[i] == y[i]) for i in (rng.integers(0, 40, 40) for _ in range(200))]
    assert bars["lisa"] == pytest.approx((np.percentile(accs, 2.5), np.percentile(accs, 97.5)))
    assert ax.syntaxformer["lisa"]["interval"] == "bootstrap over dev examples"
    dots = sorted(y for line in ax.lines if line.get_marker() == "o" for y in line.get_ydata())
    assert dots == pytest.approx(sorted([0.60, 0.64, 0.59, 0.66, 0.65, 0.70]))
    assert single.name == "seed1"


def test_plot_curves_learning_and_parser_noise(tmp_path):
    scores = {100: (0.55, 0.57), 1000: (0.62, 0.66)}
    for n, (s1, s2) in scores.items():
        _run(tmp_path / "lc" / f"n{n}" / "sgnet" / "seed1", s1, 1, train=n)
        _run(tmp_path / "lc" / f"n{n}" / "sgnet" / "seed2", s2, 2, train=n)
    fig = plot_curve(find_runs([tmp_path / "lc"]), "train_size")
    ax = fig.axes[0]
    line = ax.lines[0]
    assert list(line.get_xdata()) == [100, 1000]
    assert list(line.get_ydata()) == pytest.approx([0.56, 0.64])
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100", "1,000"]  # the sizes run, no overlapping 10^k
    assert np.ravel(_error_bars(ax)) == pytest.approx(np.ravel([_t_interval([0.55, 0.57]), _t_interval([0.62, 0.66])]))

    for noise, score in ((0.0, 0.7), (0.2, 0.65), (0.4, 0.6)):
        _run(tmp_path / "noise" / f"p{noise}" / "sgnet" / "seed1", score, noise=noise)
    ax = plot_curve(find_runs([tmp_path / "noise"]), "parser_noise").axes[0]
    assert list(ax.lines[0].get_xdata()) == [0.0, 0.2, 0.4]
    assert list(ax.lines[0].get_ydata()) == pytest.approx([0.7, 0.65, 0.6])
    with pytest.raises(SyntaxformerError, match="differ in parser noise"):
        plot_curve(find_runs([tmp_path / "lc"]), "parser_noise")


def test_plot_curves_join_the_sweeps_size_and_noise_suffixes(tmp_path):
    """experiments/sgnet_glue.py names learning-curve runs <variant>_n<size> and noise runs <variant>_noise<p>:
    one line per variant, not one point per folder name."""
    for name, n, score in (
        ("sgnet_n500", 500, 0.7),
        ("sgnet_n2000", 2000, 0.8),
        ("sgnet_nall", 8000, 0.9),
        ("base_n500", 500, 0.6),
        ("base_n2000", 2000, 0.75),
    ):
        _run(tmp_path / "lc" / "sst2" / name / "seed1", score, train=n)
    ax = plot_curve(find_runs([tmp_path / "lc"]), "train_size").axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["base", "sgnet"]  # find_runs: path order
    drawn = {tuple(line.get_xdata()): list(line.get_ydata()) for line in ax.lines if line.get_linestyle() == "-"}
    assert drawn == {(500, 2000): pytest.approx([0.6, 0.75]), (500, 2000, 8000): pytest.approx([0.7, 0.8, 0.9])}
    for p, score in ((0, 0.7), (0.2, 0.65), (1, 0.6)):
        _run(tmp_path / "noise" / "cola" / f"sgnet_noise{p:g}" / "seed1", score, noise=p)
    ax = plot_curve(find_runs([tmp_path / "noise"]), "parser_noise").axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sgnet"]
    drawn = [list(line.get_ydata()) for line in ax.lines if line.get_linestyle() == "-"]
    assert drawn == [pytest.approx([0.7, 0.65, 0.6])]


def test_plot_length_buckets_lines_equal_bucket_scores(tmp_path):
    runs = []
    for name, em in (("baseline", [1, 0, 0, 1]), ("sgnet", [1, 1, 0, 1]), ("sgnet", [0, 1, 0, 0])):
        folder = tmp_path / name / f"seed{len(runs)}"
        folder.mkdir(parents=True)
        per_q = {
            f"q{i}": {"question_words": w, "em_best": e, "f1_best": float(e)}
            for i, (w, e) in enumerate(zip([3, 4, 12, 14], em))
        }
        (folder / "per_question.json").write_text(json.dumps(per_q), encoding="utf-8")
        (folder / "metrics.json").write_text(
            json.dumps({"task": "squad2", "main_metric": "f1", "dev": {}}), encoding="utf-8"
        )
        (folder / "dev_predictions.json").write_text(
            json.dumps({"ids": list(per_q), "predictions": [""] * 4}), encoding="utf-8"
        )
        runs.append(folder)
    seeds = plot_length_buckets(runs, n_buckets=2).axes[0]  # two seeds of sgnet: one line, their mean
    assert [line.get_label() for line in seeds.lines] == ["baseline", "sgnet"]
    assert list(seeds.lines[1].get_ydata()) == pytest.approx([(100.0 + 50.0) / 2, (50.0 + 0.0) / 2])
    runs = runs[:2]
    fig = plot_length_buckets(runs, n_buckets=2)
    exact = fig.axes[0]
    assert [line.get_label() for line in exact.lines] == ["baseline", "sgnet"]
    assert list(exact.lines[0].get_ydata()) == pytest.approx([50.0, 50.0])
    assert list(exact.lines[1].get_ydata()) == pytest.approx([100.0, 50.0])
    assert [t.get_text() for t in exact.get_xticklabels()] == ["3-4\n(n=2)", "5-14\n(n=2)"]


def test_plot_attention_heatmaps_equal_the_model_attentions(tiny_model):
    import torch
    from transformers import AutoModel, AutoTokenizer

    text = "The cat sat on the mat."
    fig = plot_attention(tiny_model, text, layer=-1)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModel.from_pretrained(tiny_model, attn_implementation="eager").eval()
    with torch.no_grad():
        ref = model(**tok(text, return_tensors="pt"), output_attentions=True).attentions[-1][0]
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == ref.shape[0]
    for h, ax in enumerate(panels):
        shown = np.asarray(ax.images[0].get_array())
        assert shown == pytest.approx(ref[h].numpy(), abs=1e-6)
        assert shown.sum(axis=1) == pytest.approx(np.ones(shown.shape[0]), abs=1e-5)
    assert ax.syntaxformer["tokens"][0] == "[CLS]" and ax.syntaxformer["layer"] == 1
    with pytest.raises(SyntaxformerError, match="out of range"):
        plot_attention(tiny_model, text, layer=5)


def _valid_png_and_svg(paths):
    import matplotlib.image as mpimg

    png, svg = paths
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and mpimg.imread(png).ndim == 3
    assert ET.parse(svg).getroot().tag.endswith("svg")


def test_plot_runs_infers_figures_and_cli_writes_png_and_svg(tmp_path, tiny_model, capsys):
    for n in (100, 1000):
        for s in (1, 2):
            _run(
                tmp_path / "runs" / f"n{n}" / "sgnet" / f"seed{s}",
                0.6 + 0.01 * s + (0.05 if n == 1000 else 0),
                s,
                train=n,
            )
    written = plot_runs([tmp_path / "runs"], tmp_path / "fig")
    assert set(written) == {"results", "learning_curve"}
    for paths in written.values():
        _valid_png_and_svg(paths)
    assert (
        main(
            [
                "plot",
                str(tmp_path / "runs" / "*" / "sgnet" / "seed*"),
                "--kind",
                "results",
                "--output",
                str(tmp_path / "cli"),
            ]
        )
        == 0
    )
    assert "results:" in capsys.readouterr().out
    _valid_png_and_svg([tmp_path / "cli" / "results.png", tmp_path / "cli" / "results.svg"])
    assert (
        main(
            [
                "plot",
                "--kind",
                "attention",
                "--model",
                tiny_model,
                "--text",
                "A dog barks.",
                "--layer",
                "0",
                "--output",
                str(tmp_path / "att"),
            ]
        )
        == 0
    )
    _valid_png_and_svg([tmp_path / "att" / "attention_layer0.png", tmp_path / "att" / "attention_layer0.svg"])
    assert main(["plot", str(tmp_path / "nothing"), "--output", str(tmp_path / "x")]) == 1
    assert "no finished run" in capsys.readouterr().err
    assert main(["plot", "--kind", "attention", "--output", str(tmp_path / "x")]) == 1
    assert "needs a model" in capsys.readouterr().err


def test_plot_attention_of_an_sgnet_folder_is_its_fine_tuned_encoder(tiny_model, tmp_path):
    import torch
    from transformers import AutoTokenizer

    from syntaxformer.modeling import SGNetForSequenceClassification, SyntaxBertForSequenceClassification

    model = SGNetForSequenceClassification.from_encoder_pretrained(tiny_model, num_labels=2)
    with torch.no_grad():  # make the saved encoder differ from the pretrained one
        model.sgnet.encoder.encoder.layer[0].attention.self.query.weight.mul_(3.0)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    model.save_pretrained(tmp_path / "sg")
    tok.save_pretrained(tmp_path / "sg")
    text = "Dogs bark loudly."
    fig = plot_attention(str(tmp_path / "sg"), text, layer=0)
    enc = model.sgnet.encoder
    enc.set_attn_implementation("eager")
    with torch.no_grad():
        ref = enc.eval()(**tok(text, return_tensors="pt"), output_attentions=True).attentions[0][0]
    shown = np.asarray(fig.axes[0].images[0].get_array())
    assert shown == pytest.approx(ref[0].numpy(), abs=1e-6)
    assert "fine-tuned encoder" in fig.get_suptitle()
    sb = SyntaxBertForSequenceClassification.from_encoder_pretrained(tiny_model, num_labels=2)
    sb.save_pretrained(tmp_path / "sb")
    tok.save_pretrained(tmp_path / "sb")
    with pytest.raises(SyntaxformerError, match="Syntax-BERT model"):
        plot_attention(str(tmp_path / "sb"), text)


def test_plot_refuses_existing_figures_before_drawing_and_replaces_them_with_overwrite(tmp_path, capsys):
    for s in (1, 2):
        _run(tmp_path / "runs" / "sgnet" / f"seed{s}", 0.6 + 0.01 * s, s)
    fig = tmp_path / "fig"
    fig.mkdir()
    (fig / "results.svg").write_text("mine", encoding="utf-8")  # a file of the user's with a figure's name
    with pytest.raises(DataError, match=r"results\.svg.*--overwrite"):
        plot_runs([tmp_path / "runs"], fig)
    assert not (fig / "results.png").exists()  # refused before anything was drawn
    assert (fig / "results.svg").read_text(encoding="utf-8") == "mine"
    assert main(["plot", str(tmp_path / "runs"), "--output", str(fig)]) == 1
    assert "already exist" in capsys.readouterr().err
    assert (fig / "results.svg").read_text(encoding="utf-8") == "mine"
    assert main(["plot", str(tmp_path / "runs"), "--output", str(fig), "--overwrite"]) == 0
    _valid_png_and_svg([fig / "results.png", fig / "results.svg"])


def test_system_labels_add_noise_or_size_only_where_the_variant_name_does_not_tell_runs_apart():
    """A sweep's folder names (``sgnet_noise1``) already separate its runs: no ``noise=`` suffix then; one variant
    name run at two noise levels or sizes still gets the suffix that tells them apart."""
    from syntaxformer.analysis.plot_base import RunInfo, system_groups

    def info(variant: str, noise: float = 0.0, size: int = 100, seed: int = 1) -> RunInfo:
        return RunInfo(f"/r/{variant}/{seed}", "cola", "CoLA", variant, "SG-Net", seed, "mcc", 0.1, size, noise)

    named = system_groups([info("sgnet"), info("sgnet", seed=2), info("sgnet_noise1", noise=1.0)])
    assert sorted(named["cola"]) == ["sgnet", "sgnet_noise1"]
    mixed = system_groups([info("sgnet"), info("sgnet", noise=1.0), info("base")])
    assert sorted(mixed["cola"]) == ["base noise=0", "sgnet noise=0", "sgnet noise=1"]
    sized = system_groups([info("sgnet", size=100), info("sgnet", size=1000), info("base", size=100)])
    assert sorted(sized["cola"]) == ["base n=100", "sgnet n=100", "sgnet n=1000"]
