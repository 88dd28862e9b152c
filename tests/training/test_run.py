"""The runner: train -> evaluate -> predict on 64 real SST-2 sentences with a tiny random BERT (hidden 32, 2 layers)
and the offline MiniLM tokenizer; interrupt + resume from a checkpoint; the CLI commands and the compare job; a task
registered from outside the package (tests/training/external_task.py) trained and evaluated through the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import TrainerCallback

from syntaxformer.cli import main
from syntaxformer.errors import SyntaxformerError
from syntaxformer.training import RunConfig, compare, evaluate, train
from syntaxformer.training.run import build_context, resume_checkpoint
from tests.conftest import data_path

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    cache = tmp_path_factory.getbasetemp() / "sf-e2e-cache"  # shared by the tests of this module
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(cache))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


def _config(tiny_model: str, out: Path, **changes) -> RunConfig:
    base = dict(
        task="sst2",
        data_dir=str(data_path("glue", "SST-2")),
        model_name_or_path=tiny_model,
        max_train_samples=64,
        max_eval_samples=32,
        max_length=32,
        num_train_epochs=1,
        per_device_train_batch_size=16,
        per_device_eval_batch_size=32,
        learning_rate=1e-3,
        new_params_lr=2e-3,
        save_strategy="steps",
        save_steps=2,
        eval_strategy="epoch",
        logging_steps=1,
        disable_tqdm=True,
        output_dir=str(out),
        seed=3,
    )
    base.update(changes)
    return RunConfig.from_dict(base)


class _Interrupt(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:  # after checkpoint-2 was written
            raise KeyboardInterrupt


def test_end_to_end_train_interrupt_resume_evaluate_predict(tiny_model, tmp_path, capsys):
    out = tmp_path / "run"
    config = _config(tiny_model, out, parser_noise=0.4)
    with pytest.raises(KeyboardInterrupt):
        train(config, callbacks=[_Interrupt()])
    assert (out / "checkpoint-2").is_dir() and not (out / "metrics.json").exists()
    with pytest.raises(Exception, match="--resume"):  # a restart must not silently clobber the checkpoints
        train(config)

    metrics = train(config.replace(resume=True))
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
    run = json.loads((out / "run.json").read_text())
    assert run["task"] == {"name": "sst2", "options": {}, "module": "syntaxformer.tasks.glue", "entry_point": None}
    assert run["config"]["parser_noise"] == 0.4
    for name in ("config.json", "model.safetensors", "tokenizer.json", "run.json"):
        assert (out / name).is_file(), name

    # evaluate and predict through the CLI, from the saved run.json
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

    # A finished run is never replaced silently: a new train there and --resume are refused, naming the folder;
    # --overwrite-output-dir starts again, and the old scores are gone while it runs.
    before = (out / "model.safetensors").read_bytes()
    with pytest.raises(SyntaxformerError, match="already holds a finished run"):
        train(config.replace(seed=4))
    with pytest.raises(SyntaxformerError, match="nothing to resume"):
        train(config.replace(resume=True))
    assert (out / "model.safetensors").read_bytes() == before and (out / "metrics.json").is_file()

    class _Fail(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            assert not (out / "metrics.json").exists() and not (out / "run.json").exists()
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(config.replace(seed=4, overwrite_output_dir=True), callbacks=[_Fail()])
    assert not (out / "metrics.json").exists()  # an interrupted run leaves no scores of the old configuration
    assert main(["evaluate", str(out)]) == 1 and "run.json" in capsys.readouterr().err
    train(config.replace(overwrite_output_dir=True))  # the same configuration again: the model is back
    capsys.readouterr()

    own = tmp_path / "mine.tsv"  # a user's unlabeled file in the task's layout
    own.write_text("sentence\nit 's a charming film .\ndull and lifeless .\n", encoding="utf-8")
    assert main(["predict", str(out), "--split", "test", "--file", str(own), "--output-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["size"] == 2
    assert len((tmp_path / "predictions_test.tsv").read_text().splitlines()) == 3


def test_end_to_end_cli_train_and_compare(tiny_model, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(
        [
            "train",
            "--task",
            "sst2",
            "--model",
            tiny_model,
            "--data-dir",
            str(data_path("glue", "SST-2")),
            "--max-train-samples",
            "64",
            "--max-eval-samples",
            "32",
            "--max-length",
            "32",
            "--epochs",
            "1",
            "--batch-size",
            "32",
            "--use-sg-layer",
            "false",
            "--output-dir",
            str(out),
            "--no-progress",
            "--set",
            "save_strategy=no",
            "--set",
            "per_device_eval_batch_size=32",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["model_type"] == "baseline" and "accuracy" in printed["dev"]
    assert not list(out.glob("checkpoint-*"))

    summary = compare(_config(tiny_model, tmp_path / "cmp", save_strategy="no", save_model=False))
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
    assert "not a run folder" in capsys.readouterr().err
    assert main(["train", "--task", "sst2", "--set", "pooling=max"]) == 1
    assert "invalid model options for model_type=sgnet" in capsys.readouterr().err
    assert main(["train", "--task", "sst2", "--set", "model.alpah=1"]) == 1
    assert "model.alpah is not an option" in capsys.readouterr().err


def test_end_to_end_bert_pos_through_the_task_stack(tiny_model, tmp_path, capfd, caplog):
    """BERT+POS is usable from a config: the features carry pos_ids, training moves the (zero-initialised) POS
    embedding, and the saved model evaluates again. The model config takes the tokenizer's PAD id without the
    Trainer's warning about it."""
    from transformers import AutoModelForSequenceClassification

    from syntaxformer.tasks import get_task
    from syntaxformer.training.run import load_tokenizer

    out = tmp_path / "pos"
    config = _config(tiny_model, out, model_kwargs={"pos_embeddings": "upos"}, save_strategy="no", eval_strategy="no")
    m = train(config)
    assert "new PAD/BOS/EOS" not in capfd.readouterr().err + caplog.text
    assert "pos_ids" in m["syntax_keys"]
    task = get_task("sst2")
    data = task.load_split("dev", config.data_options("dev", 8))
    model = AutoModelForSequenceClassification.from_pretrained(out)
    assert model.config.pos_embeddings == "upos"
    assert model.config.pad_token_id == load_tokenizer(tiny_model).pad_token_id
    context = build_context(config, load_tokenizer(tiny_model), model.config)
    assert context.pos_tags == "upos"
    item = task.featurize(data, context, "dev")[0]
    words = item["syntax_tree"] >= 0
    assert (item["pos_ids"][words] >= 2).all() and (item["pos_ids"][~words] == 0).all()
    assert float(model.sgnet.pos_embeddings.weight.detach().abs().sum()) > 0  # started at zero, trained
    again = evaluate(out, "dev")
    assert again["scores"]["accuracy"] == pytest.approx(m["dev"]["accuracy"])


def test_run_resume_and_overwrite_rules(tmp_path):
    from tests.training.test_checkpoints import make_checkpoint

    out = tmp_path / "run"
    assert resume_checkpoint(RunConfig(resume=True), str(out)) is None  # nothing yet: from scratch
    for step in (2, 4):
        make_checkpoint(out, step)
    assert resume_checkpoint(RunConfig(resume=True), str(out)).endswith("checkpoint-4")
    assert resume_checkpoint(RunConfig(resume=str(out / "checkpoint-2")), str(out)).endswith("checkpoint-2")
    with pytest.raises(SyntaxformerError, match="--resume to continue"):
        resume_checkpoint(RunConfig(), str(out))
    # starting again is allowed; the old checkpoints go only when training starts (train removes them then)
    assert resume_checkpoint(RunConfig(overwrite_output_dir=True), str(out)) is None
    assert len(list(out.glob("checkpoint-*"))) == 2
    with pytest.raises(SyntaxformerError, match="not found"):
        resume_checkpoint(RunConfig(resume=str(out / "checkpoint-9")), str(out))


def test_run_context_follows_the_model_config(minilm_tokenizer):
    """The context asks for what the model reads: constituency filled from dependencies only when the model reads
    constituency inputs (and constituency_fallback allows it), no parser when it reads no syntax."""
    from transformers import BertConfig

    from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig

    enc = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    sb, dep = SyntaxBertConfig(encoder=enc), SyntaxBertConfig(encoder=enc, use_constituency=False)
    config = RunConfig(task="rte", model_type="syntax_bert")
    ctx = build_context(config, minilm_tokenizer, sb)
    assert ctx.constituency == "from_dependency" and "con_key" in ctx.syntax_inputs and ctx.parser == config.parser
    assert build_context(config.replace(constituency_fallback="none"), minilm_tokenizer, sb).constituency == "given"
    assert build_context(config, minilm_tokenizer, dep).constituency == "given"
    assert build_context(RunConfig(task="rte"), minilm_tokenizer, SGNetConfig(encoder=enc)).constituency == "given"


def test_run_task_registered_outside_the_package(tiny_model, tmp_path):
    """A user's task (one file, tests/training/external_task.py: a 2-class task read from a CSV) trains and
    evaluates through the runner, and `evaluate` rebuilds it from the run folder."""
    from syntaxformer.tasks import get_task, task_names
    from tests.training.external_task import write_csv

    data_dir = write_csv(tmp_path / "data")
    assert "film-review" in task_names()
    task = get_task("film_review", min_words=2)
    assert task.options() == {"min_words": 2}
    config = RunConfig(
        task="film-review",
        task_options={"min_words": 2},
        data_dir=str(data_dir),
        model_name_or_path=tiny_model,
        max_length=32,
        num_train_epochs=2,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        save_strategy="no",
        eval_strategy="epoch",
        disable_tqdm=True,
        output_dir=str(tmp_path / "run"),
        seed=1,
        model={"pooling": "mean"},
    )
    m = train(config)
    assert m["task"] == "film-review" and m["task_options"] == {"min_words": 2}
    assert m["main_metric"] == "accuracy" and set(m["dev"]) == {"accuracy"} and len(m["history"]) == 2
    assert m["sizes"]["train"] == 8 and m["sizes"]["dev"] == 4
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["task"] == {
        "name": "film-review",
        "options": {"min_words": 2},
        "module": "tests.training.external_task",
        "entry_point": None,
    }
    assert run["system"] == {
        "name": "sgnet",
        "module": "syntaxformer.registry",
        "entry_point": None,
        "model_type": "sgnet",
    }
    again = evaluate(tmp_path / "run", "dev")
    assert again["scores"] == m["dev"] and again["size"] == 4


_KILL_WHILE_CHECKPOINTING = """
import json, os, signal, sys
from transformers import Trainer
save_rng = Trainer._save_rng_state
def killed(self, output_dir):  # SIGKILL in the middle of writing checkpoint-3: weights and optimizer written,
    if self.state.global_step == 3:  # RNG state and trainer_state.json not yet
        os.kill(os.getpid(), signal.SIGKILL)
    return save_rng(self, output_dir)
Trainer._save_rng_state = killed
from syntaxformer.training import RunConfig, train
train(RunConfig.from_dict(json.loads(sys.argv[1])))
"""


def test_run_killed_while_checkpointing_then_resumed(tiny_model, tmp_path):
    """A process SIGKILLed while writing checkpoint-3 leaves a partial folder; --resume refuses other options or
    data (touching nothing), then falls back to checkpoint-2, sets the partial one aside, and ends with the weights
    and the all-steps training loss of the uninterrupted run."""
    import os
    import signal
    import subprocess
    import sys

    import torch
    from safetensors.torch import load_file

    def config(out, **changes):
        base = dict(
            max_train_samples=16,
            max_eval_samples=8,
            per_device_train_batch_size=8,
            per_device_eval_batch_size=8,
            max_steps=4,
            save_steps=1,
            save_total_limit=None,
            eval_strategy="no",
            model={"use_sg_layer": False},
        )
        return _config(tiny_model, out, **{**base, **changes})

    straight = train(config(tmp_path / "straight"))
    out = tmp_path / "killed"
    threads = str(torch.get_num_threads())
    proc = subprocess.run(
        [sys.executable, "-c", _KILL_WHILE_CHECKPOINTING, json.dumps(config(out).to_dict())],
        capture_output=True,
        text=True,
        # the same thread count as this process: its steps must be bit-identical to ours
        env={**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert (out / "checkpoint-3" / "model.safetensors").is_file()
    assert not (out / "checkpoint-3" / "trainer_state.json").exists() and not (out / "metrics.json").exists()
    (out / ".tmp-abcoptimizer.pt").write_bytes(b"\0" * 64)  # as an interrupted atomic write leaves it

    assert (out / ".syntaxformer.lock").is_file()  # the killed run's lock, stale: the next run takes it over

    def files() -> list[str]:  # the run's files (the lock file is the writers' coordination, not the run)
        return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.name != ".syntaxformer.lock")

    before = files()
    with pytest.raises(SyntaxformerError, match=r"max_train_samples: 16 -> 12"):
        train(config(out, resume=True, max_train_samples=12))
    with pytest.raises(SyntaxformerError, match=r"model: .* -> "):
        train(config(out, resume=True, model={"use_sg_layer": False, "pooling": "cls"}))
    assert files() == before  # refused before touching anything
    assert not (out / ".syntaxformer.lock").exists()  # taken over, and released by the refused run

    resumed = train(config(out, resume=True))
    assert resumed["train"]["resumed_from"].endswith("checkpoint-2")
    assert (out / "damaged-checkpoint-3").is_dir() and not (out / ".tmp-abcoptimizer.pt").exists()
    assert (out / "checkpoint-3" / "trainer_state.json").is_file()  # written again by the resumed run
    w_straight = load_file(str(tmp_path / "straight" / "model.safetensors"))
    w_resumed = load_file(str(out / "model.safetensors"))
    assert set(w_straight) == set(w_resumed)
    assert all(torch_equal(w_straight[k], w_resumed[k]) for k in w_straight)
    # the loss over all 4 steps (2 before the kill, 2 after), not only the resumed ones
    assert resumed["train"]["loss"] == pytest.approx(straight["train"]["loss"], rel=1e-9)
    assert resumed["dev"] == straight["dev"]

    # resumed in the middle of an epoch (checkpoint-3: epoch 2 of 2 batches): the same data order, the same weights
    import shutil

    mid = tmp_path / "mid"
    shutil.copytree(tmp_path / "straight", mid)
    shutil.rmtree(mid / "checkpoint-4")
    for name in ("metrics.json", "run.json", "dev_predictions.json", "model.safetensors"):
        (mid / name).unlink()
    again = train(config(mid, resume=True))
    assert again["train"]["resumed_from"].endswith("checkpoint-3")
    w_mid = load_file(str(mid / "model.safetensors"))
    assert all(torch_equal(w_straight[k], w_mid[k]) for k in w_straight)
    assert again["train"]["loss"] == pytest.approx(straight["train"]["loss"], rel=1e-9)


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


class _SeeDevice(TrainerCallback):
    """Records, at every step, whether the Trainer ran in bf16 and where the model's weights were."""

    def __init__(self):
        self.seen: set[tuple[bool, str]] = set()

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.seen.add((bool(args.bf16), next(model.parameters()).device.type))


@pytest.mark.gpu
@pytest.mark.parametrize("model_type", ["sgnet", "syntax_bert"])
def test_runner_trains_and_evaluates_in_bf16_on_cuda(model_type, tiny_model, tmp_path):
    """The runner with ``mixed_precision="bf16"`` on CUDA: every step in bf16 on the GPU, a finite loss, the dev
    metric, and `evaluate` of the saved run. The parses come from spaCy, or, on a machine without spaCy (the GPU
    machine), from the JSONL file named by ``$SYNTAXFORMER_TEST_PARSER`` (made elsewhere with
    ``experiments/sgnet_glue.py export-parses``)."""
    import math
    import os

    see = _SeeDevice()
    parser = {"parser": os.environ["SYNTAXFORMER_TEST_PARSER"]} if os.environ.get("SYNTAXFORMER_TEST_PARSER") else {}
    config = _config(
        tiny_model, tmp_path / "run", model_type=model_type, mixed_precision="bf16", save_strategy="no", **parser
    )
    m = train(config, callbacks=[see])
    assert see.seen == {(True, "cuda")}
    assert math.isfinite(m["train"]["loss"]) and 0.0 <= m["dev"]["accuracy"] <= 1.0
    again = evaluate(tmp_path / "run", "dev")  # a fresh pass (bf16 on a bf16 GPU, as in training)
    assert abs(again["scores"]["accuracy"] - m["dev"]["accuracy"]) <= 2 / 32
