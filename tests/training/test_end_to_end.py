"""train -> evaluate -> predict on 64 real SST-2 sentences with a tiny random BERT (hidden 32, 2 layers) and the
offline MiniLM tokenizer; interrupt + resume from a checkpoint; the CLI commands and the compare job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import TrainerCallback

from syntaxformer.cli import main
from syntaxformer.training import ExperimentConfig, compare, run_experiment
from tests.conftest import data_path

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    cache = tmp_path_factory.getbasetemp() / "sf-e2e-cache"  # shared by the tests of this module
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(cache))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


def _config(tiny_model: str, out: Path, **changes) -> ExperimentConfig:
    base = dict(task="sst2", data_dir=str(data_path("glue", "SST-2")), model_name_or_path=tiny_model,
                max_train_samples=64, max_eval_samples=32, max_length=32, num_train_epochs=1,
                per_device_train_batch_size=16, per_device_eval_batch_size=32, learning_rate=1e-3,
                new_params_lr=2e-3, save_strategy="steps", save_steps=2, eval_strategy="epoch",
                logging_steps=1, disable_tqdm=True, output_dir=str(out), seed=3)
    base.update(changes)
    return ExperimentConfig(**base)


class _Interrupt(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:  # after checkpoint-2 was written
            raise KeyboardInterrupt


def test_end_to_end_train_interrupt_resume_evaluate_predict(tiny_model, tmp_path, capsys):
    out = tmp_path / "run"
    config = _config(tiny_model, out, parser_noise=0.4)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, callbacks=[_Interrupt()])
    assert (out / "checkpoint-2").is_dir() and not (out / "metrics.json").exists()
    with pytest.raises(Exception, match="--resume"):  # a restart must not silently clobber the checkpoints
        run_experiment(config)

    metrics = run_experiment(config.replace(resume=True))
    assert metrics["train"]["resumed_from"].endswith("checkpoint-2")
    assert metrics["train"]["global_step"] == 4 and metrics["features"] == {"train": "hit", "dev": "hit"}
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["task"] == "sst2" and saved["seed"] == 3 and saved["model_type"] == "SG-Net"
    assert saved["sizes"] == {"train": 64, "train_total": 67349, "dev": 32, "dev_total": 872}
    assert "random subsample of 64 of 67349" in saved["subsample"]["train"]
    assert 0.0 <= saved["dev"]["accuracy"] <= 1.0 and saved["runtime_s"] > 0 and saved["parser_noise"] == 0.4
    assert saved["history"][-1]["step"] == 4
    dev_pred = json.loads((out / "dev_predictions.json").read_text())  # kept for paired significance tests
    assert len(dev_pred["predictions"]) == len(dev_pred["labels"]) == len(dev_pred["ids"]) == 32
    accuracy = sum(p == y for p, y in zip(dev_pred["predictions"], dev_pred["labels"])) / 32
    assert accuracy == pytest.approx(saved["dev"]["accuracy"])
    for name in ("config.json", "model.safetensors", "tokenizer.json", "experiment.json"):
        assert (out / name).is_file(), name

    # evaluate and predict through the CLI, from the saved experiment.json
    assert main(["evaluate", str(out), "--split", "dev"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["size"] == 32
    # the saved model reproduces the training run's final dev score
    assert printed["scores"]["accuracy"] == pytest.approx(saved["dev"]["accuracy"])
    assert json.loads((out / "eval_dev.json").read_text())["scores"] == printed["scores"]

    assert main(["predict", str(out), "--split", "dev", "--set", "max_predict_samples=8"]) == 0
    capsys.readouterr()
    lines = (out / "predictions_dev.tsv").read_text().splitlines()
    assert lines[0] == "index\tid\tprediction" and len(lines) == 9
    assert {line.split("\t")[2] for line in lines[1:]} <= {"0", "1"}

    own = tmp_path / "mine.tsv"  # a user's unlabeled file in the task's layout
    own.write_text("sentence\nit 's a charming film .\ndull and lifeless .\n", encoding="utf-8")
    assert main(["predict", str(out), "--split", "test", "--file", str(own), "--output-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["size"] == 2
    assert len((tmp_path / "predictions_test.tsv").read_text().splitlines()) == 3


def test_end_to_end_cli_train_and_compare(tiny_model, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["train", "--task", "sst2", "--model", tiny_model, "--data-dir", str(data_path("glue", "SST-2")),
                 "--max-train-samples", "64", "--max-eval-samples", "32", "--max-length", "32", "--epochs", "1",
                 "--batch-size", "32", "--use-sg-layer", "false", "--output-dir", str(out), "--no-progress",
                 "--set", "save_strategy=no", "--set", "per_device_eval_batch_size=32"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["model_type"] == "baseline" and "accuracy" in printed["dev"]
    assert not list(out.glob("checkpoint-*"))

    summary = compare(_config(tiny_model, tmp_path / "cmp", save_strategy="no", save_model=False),
                      print_fn=None)
    assert set(summary["systems"]) == {"baseline", "sgnet"}
    assert summary["systems"]["baseline"]["model_type"] == "baseline"
    assert summary["systems"]["sgnet"]["model_type"] == "SG-Net"
    assert summary["systems"]["sgnet"]["sizes"] == summary["systems"]["baseline"]["sizes"]
    assert "baseline" in summary["table"] and "sgnet" in summary["table"] and "difference" in summary["table"]
    assert (tmp_path / "cmp" / "comparison.json").is_file()


def test_end_to_end_cli_errors(tmp_path, capsys):
    assert main(["train", "--task", "mnli", "--output-dir", str(tmp_path)]) == 1
    assert "unknown task 'mnli'" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path)]) == 1
    assert "not a trained syntaxformer model" in capsys.readouterr().err
    assert main(["train", "--set", "pooling=max"]) == 1
    assert "pooling='max'" in capsys.readouterr().err


def test_end_to_end_bert_pos_through_the_task_stack(tiny_model, tmp_path):
    """BERT+POS is usable from a config: the features carry pos_ids, training moves the (zero-initialised) POS
    embedding, and the saved model evaluates again."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from syntaxformer.tasks import get_task, load_split, subsample
    from syntaxformer.tasks.features import build_features
    from syntaxformer.training.experiment import (
        _load_tokenizer,
        evaluate_model,
        feature_options,
        load_experiment_config,
    )

    out = tmp_path / "pos"
    config = _config(tiny_model, out, model_kwargs={"pos_embeddings": "upos"}, save_strategy="no",
                     eval_strategy="no")
    assert feature_options(config).pos_tags == "upos"
    m = run_experiment(config)
    task = get_task("sst2")
    data = subsample(load_split(task, "dev", data_dir=config.data_dir), 8, 0)
    ds = build_features(task, data, _load_tokenizer(tiny_model), feature_options(config), split="dev",
                        progress=False)
    item = ds[0]
    words = item["syntax_tree"] >= 0
    assert (item["pos_ids"][words] >= 2).all() and (item["pos_ids"][~words] == 0).all()
    model = AutoModelForSequenceClassification.from_pretrained(out)
    assert model.config.pos_embeddings == "upos"
    assert float(model.sgnet.pos_embeddings.weight.detach().abs().sum()) > 0  # started at zero, trained
    again = evaluate_model(load_experiment_config(out), split="dev")
    assert again["scores"]["accuracy"] == pytest.approx(m["dev"]["accuracy"])
