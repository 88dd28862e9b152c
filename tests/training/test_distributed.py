"""Training through the runner under ``accelerate launch`` with 2 CPU processes (DDP over gloo), for SG-Net and
Syntax-BERT: the per-step losses equal a one-process run with the same global batch, and checkpoints written by 2
processes resume in a second launch.

Setup (both models): 32 real SST-2 training sentences, 16 dev sentences, a tiny random BERT (hidden 32, 2 layers,
**dropout 0**) with the offline MiniLM tokenizer, constant learning rate 1e-3, seed 3.

* reference: one process (this one), batch 8, 4 steps (checkpoint at 2 and 4);
* launch 1: ``accelerate launch --multi_gpu --num_processes 2 -m syntaxformer.cli train``, batch 4 per process
  (global 8), 2 steps, checkpoint-2;
* launch 2: the same command with ``resume`` = launch 1's ``checkpoint-2``, up to step 4;
* launch 3: ``syntaxformer evaluate`` of launch 2's run folder under 2 processes: the same dev scores.

Why the losses must agree, and to what tolerance: the Trainer's sampler draws one permutation of the training
set from the seed whatever the batch size, and accelerate gives process ``p`` the per-process batches ``p, p + 2,
...`` of it, so each global step sees the same 8 sentences in both runs; DDP averages the two processes' mean
gradients (= the mean over the 8), and the logged loss is the mean of the processes' losses (= the one-process
mean). With dropout 0 nothing random differs between the runs. What is left is floating-point order: each half
batch is padded to its own length, matrix products run on other shapes, and gloo sums gradients in another order,
so losses agree to float32 rounding, not necessarily bit for bit (measured 2026-11-23: at most 1.2e-7 apart over
the 4 steps, on losses of ~0.69); the test allows 1e-5 per step. A different data order, gradients that are not
averaged, or a resume that restarted from scratch move them by 1e-3 or more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from syntaxformer.training import RunConfig, train
from tests.conftest import REPO, data_path, write_tiny_bert

pytestmark = pytest.mark.slow

#: Largest per-step difference allowed between the 2-process and the 1-process losses (see the module docstring).
LOSS_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def tiny_model_no_dropout(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT (hidden 32) without dropout, saved with the MiniLM tokenizer."""
    return write_tiny_bert(
        tmp_path_factory.mktemp("tiny-bert-no-dropout"), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sf-distributed-cache")


def _config(model: str, model_type: str, out: Path, **changes) -> dict:
    config = dict(
        task="sst2",
        data_dir=str(data_path("glue", "SST-2")),
        model_name_or_path=model,
        model_type=model_type,
        max_train_samples=32,
        max_eval_samples=16,
        max_length=32,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=8,
        max_steps=4,
        learning_rate=1e-3,
        new_params_lr=1e-3,
        lr_scheduler_type="constant",
        warmup_steps=0,
        logging_steps=1,
        save_strategy="steps",
        save_steps=2,
        eval_strategy="no",
        seed=3,
        disable_tqdm=True,
        output_dir=str(out),
    )
    config.update(changes)
    return config


def _train_command(config: dict, folder: Path) -> list[str]:
    """``syntaxformer train --config FILE`` arguments, ``config`` written to ``folder/<output folder name>.json``."""
    path = folder / f"{Path(config['output_dir']).name}.json"
    path.write_text(json.dumps(config))
    return ["train", "--config", str(path)]


def _launch(arguments: list[str], folder: Path, cache: Path) -> subprocess.CompletedProcess:
    """``accelerate launch`` 2 processes of ``syntaxformer ARGUMENTS`` on the CPU, from ``folder``."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH")])),
        SYNTAXFORMER_CACHE=str(cache),
        SYNTAXFORMER_NO_PROGRESS="1",
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",
    )
    env.pop("WORLD_SIZE", None)
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "0",
        "-m",
        "syntaxformer.cli",
        *arguments,
    ]
    run = subprocess.run(cmd, env=env, cwd=str(folder), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"launch failed ({run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    return run


def _step_losses(checkpoint: Path) -> dict[int, float]:
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    return {e["step"]: e["loss"] for e in state["log_history"] if "loss" in e}


@pytest.mark.parametrize("model_type", ["sgnet", "syntax_bert"])
def test_distributed_two_processes_match_one_and_resume(
    model_type, tiny_model_no_dropout, cache_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(cache_dir))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")
    monkeypatch.delenv("WORLD_SIZE", raising=False)

    reference = train(RunConfig.from_dict(_config(tiny_model_no_dropout, model_type, tmp_path / "one")))
    assert reference["train"]["processes"] == 1 and reference["train"]["global_step"] == 4
    one = _step_losses(tmp_path / "one" / "checkpoint-4")

    # launch 1: 2 processes x batch 4, stopped after 2 steps (a finished run with checkpoint-2)
    # (its own features cache, so that it featurizes; the parse cache is shared and already holds the parses)
    first = _launch(
        _train_command(
            _config(
                tiny_model_no_dropout,
                model_type,
                tmp_path / "two-a",
                max_steps=2,
                per_device_train_batch_size=4,
                features_cache=str(tmp_path / "features-a"),
            ),
            tmp_path,
        ),
        tmp_path,
        cache_dir,
    )
    metrics_a = json.loads((tmp_path / "two-a" / "metrics.json").read_text())
    assert metrics_a["train"]["processes"] == 2 and metrics_a["train"]["global_step"] == 2
    assert metrics_a["sizes"]["train"] == 32 and metrics_a["sizes"]["dev"] == 16
    # every process scored the whole dev set (gathered), one wrote the files
    assert len(json.loads((tmp_path / "two-a" / "dev_predictions.json").read_text())["predictions"]) == 16
    assert not list((tmp_path / "two-a").glob(".tmp-*"))
    ckpt = tmp_path / "two-a" / "checkpoint-2"
    assert {"rng_state_0.pth", "rng_state_1.pth", "optimizer.pt"} <= {p.name for p in ckpt.iterdir()}
    # the main process featurized first; the other loaded its features from the cache the main one wrote
    log = first.stdout + first.stderr
    assert log.count("examples encoded") == 2 and log.count("examples loaded from the features cache") == 2, log[-3000:]

    # launch 2: resume from launch 1's checkpoint up to step 4, in another folder
    _launch(
        _train_command(
            _config(
                tiny_model_no_dropout, model_type, tmp_path / "two-b", per_device_train_batch_size=4, resume=str(ckpt)
            ),
            tmp_path,
        ),
        tmp_path,
        cache_dir,
    )
    metrics_b = json.loads((tmp_path / "two-b" / "metrics.json").read_text())
    assert metrics_b["train"]["resumed_from"] == str(ckpt) and metrics_b["train"]["global_step"] == 4
    two = _step_losses(tmp_path / "two-b" / "checkpoint-4")  # steps 1-2 from launch 1, 3-4 after the resume

    assert sorted(one) == sorted(two) == [1, 2, 3, 4]
    diffs = {step: abs(one[step] - two[step]) for step in one}
    assert max(diffs.values()) <= LOSS_TOLERANCE, (one, two)
    assert len(set(one.values())) == 4  # the losses move: the comparison is not between constants
    assert metrics_b["dev_loss"] == pytest.approx(reference["dev_loss"], abs=LOSS_TOLERANCE)

    # `evaluate` under 2 processes: the main process featurizes, the outputs are gathered, one file is written
    _launch(["evaluate", str(tmp_path / "two-b"), "--split", "dev"], tmp_path, cache_dir)
    scored = json.loads((tmp_path / "two-b" / "eval_dev.json").read_text())
    assert scored["size"] == 16 and scored["scores"] == metrics_b["dev"]
    assert scored["loss"] == pytest.approx(metrics_b["dev_loss"], abs=LOSS_TOLERANCE)


def test_distributed_launch_the_trainer_does_not_see_is_refused(monkeypatch, tmp_path):
    """Several processes started (``WORLD_SIZE`` = 2) but a Trainer that sees one: each would train the whole run into
    the same folder, so `train` refuses before touching it; without CUDA the runner asks for DDP on the CPU."""
    import torch

    from syntaxformer.errors import ConfigError
    from syntaxformer.training import recipe

    monkeypatch.setattr(recipe, "launched_processes", lambda: 2)  # a launcher's count, not its process group
    if not torch.cuda.is_available():
        assert recipe.training_arguments(RunConfig(), str(tmp_path)).use_cpu
    with pytest.raises(ConfigError, match="launched as 2 processes .* the Trainer sees one"):
        train(RunConfig(task="sst2", output_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()
