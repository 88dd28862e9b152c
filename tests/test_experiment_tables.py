"""The issue-16 sweep's summary flags runs whose dev predictions collapsed (experiments/ scripts, read as modules)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

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
    (folder / "metrics.json").write_text(json.dumps({"dev": {metric: score}, "train": {"runtime_s": 1.0},
                                                     "sizes": {"train": 10}, "subsample": {}}))
    (folder / "dev_predictions.json").write_text(
        json.dumps({"task": task, "order": "dataset", "predictions": predictions, "labels": labels}))


def test_summarize_measures_spread_and_the_tables_list_collapsed_runs(tmp_path):
    glue, tables = _module("sgnet_glue"), _module("issue16_tables")
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
    assert spread == pytest.approx([std([0.5, 1, 2, 3, 4, 4.5]) / std(labels),
                                    std([2.4, 2.5, 2.5, 2.5, 2.6, 2.5]) / std(labels)])
    assert summary["tasks"]["cola"]["variants"]["sbert"]["spread"] == [1.0]
    assert summary["tasks"]["cola"]["variants"]["sbert_baseline"]["spread"] == [pytest.approx(4 / 6)]
    listed = tables.collapsed_runs(summary).splitlines()
    assert listed == ["* CoLA, Syntax-BERT (paper), seed 1: 0.0000 (100% of the dev set in one class)",
                      f"* STS-B, SB head baseline, seed 2: 0.2000 (prediction std = {spread[1]:.2f} × label std)"]
