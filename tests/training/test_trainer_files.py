"""The files transformers' run_glue example leaves in a run folder, left by every run: ``trainer_state.json`` with
the log history (also under ``--save_strategy no``, where the Trainer writes no checkpoint), ``train_results.json``,
``eval_results.json`` and ``all_results.json``."""

from __future__ import annotations

import json

import pytest

from syntaxformer.cli import main
from tests.training.external_task import write_csv

pytestmark = pytest.mark.slow


def test_a_run_without_checkpoints_keeps_the_trainer_state_and_results(tiny_model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    data, out = write_csv(tmp_path / "data"), tmp_path / "run"
    argv = ["train", "--train-file", str(data / "train.csv"), "--validation-file", str(data / "dev.csv")]
    argv += ["--model", tiny_model, "--max-steps", "3", "--batch-size", "4", "--max-length", "32", "--no-progress"]
    assert main([*argv, "--save_strategy", "no", "--logging_steps", "1", "--output-dir", str(out)]) == 0
    capsys.readouterr()
    assert not list(out.glob("checkpoint-*"))
    state = json.loads((out / "trainer_state.json").read_text())
    losses = [e for e in state["log_history"] if "loss" in e]
    assert [e["step"] for e in losses] == [1, 2, 3] and state["global_step"] == 3
    assert all(isinstance(e["loss"], float) for e in losses)

    metrics = json.loads((out / "metrics.json").read_text())
    train = json.loads((out / "train_results.json").read_text())
    evaluation = json.loads((out / "eval_results.json").read_text())
    assert train["train_samples"] == 8 and train["train_loss"] == pytest.approx(metrics["train"]["loss"])
    assert evaluation["eval_samples"] == 4 and evaluation["eval_accuracy"] == metrics["dev"]["accuracy"]
    assert evaluation["eval_loss"] == pytest.approx(metrics["dev_loss"])
    assert json.loads((out / "all_results.json").read_text()) == {**train, **evaluation}
