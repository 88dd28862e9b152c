"""Checkpoints: what makes one intact (each kind of damage named), the fallback to the newest intact one, damaged
ones set aside, orphan temp files removed, and the run fingerprint that refuses a resume with other options or data.
Checkpoints are built by hand with real safetensors / torch files (no training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from syntaxformer.errors import SyntaxformerError
from syntaxformer.training import RunConfig
from syntaxformer.training.checkpoints import (
    FINGERPRINT_FILE,
    check_fingerprint,
    checkpoint_problems,
    latest_intact_checkpoint,
    remove_orphan_temp_files,
    run_fingerprint,
    set_aside_damaged,
    write_fingerprint,
)
from syntaxformer.training.run import resume_checkpoint


def make_checkpoint(folder: Path, step: int) -> Path:
    """A complete checkpoint folder as the Trainer writes it (small real files)."""
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    save_file({"w": torch.arange(64, dtype=torch.float32)}, str(path / "model.safetensors"))
    torch.save({"state": {0: {"exp_avg": torch.ones(64)}}, "param_groups": [{"lr": 1e-3}]}, path / "optimizer.pt")
    torch.save({"last_epoch": step}, path / "scheduler.pt")
    torch.save({"python": [1, 2, 3], "cpu": torch.zeros(8, dtype=torch.uint8)}, path / "rng_state.pth")
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return path


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_checkpoints_intact_and_each_kind_of_damage(tmp_path):
    assert checkpoint_problems(make_checkpoint(tmp_path, 1)) == []
    cases = {
        "truncated weights": (lambda p: _truncate(p / "model.safetensors"), "model.safetensors is truncated"),
        "no weights": (lambda p: (p / "model.safetensors").unlink(), "no model weights"),
        "bad state": (lambda p: (p / "trainer_state.json").write_text("{not json"), "trainer_state.json is not valid"),
        "no state": (lambda p: (p / "trainer_state.json").unlink(), "no trainer_state.json"),
        "state of another step": (
            lambda p: (p / "trainer_state.json").write_text(json.dumps({"global_step": 9, "log_history": []})),
            "at step 9, not 2",
        ),
        "truncated optimizer": (lambda p: _truncate(p / "optimizer.pt"), "optimizer.pt is truncated"),
        "no optimizer": (lambda p: (p / "optimizer.pt").unlink(), "no optimizer.pt"),
        "no scheduler": (lambda p: (p / "scheduler.pt").unlink(), "no scheduler.pt"),
        "no rng state": (lambda p: (p / "rng_state.pth").unlink(), "no rng_state.pth"),
        "truncated rng state": (lambda p: _truncate(p / "rng_state.pth"), "rng_state.pth is truncated"),
    }
    for name, (damage, expected) in cases.items():
        path = make_checkpoint(tmp_path / name.replace(" ", "_"), 2)
        damage(path)
        problems = checkpoint_problems(path)
        assert any(expected in p for p in problems), (name, problems)


def test_checkpoints_fallback_to_newest_intact_and_set_aside(tmp_path, caplog):
    for step in (2, 4, 6):
        make_checkpoint(tmp_path, step)
    _truncate(tmp_path / "checkpoint-6" / "model.safetensors")  # killed while writing
    (tmp_path / "checkpoint-4" / "rng_state.pth").unlink()
    intact, skipped = latest_intact_checkpoint(tmp_path)
    assert intact.name == "checkpoint-2" and [p.name for p, _ in skipped] == ["checkpoint-6", "checkpoint-4"]

    with caplog.at_level("WARNING"):
        chosen = resume_checkpoint(RunConfig(resume=True), str(tmp_path))
    assert Path(chosen).name == "checkpoint-2" and "falling back to checkpoint-2" in caplog.text
    moved = set_aside_damaged(tmp_path, chosen)
    assert sorted(p.name for p in moved) == ["damaged-checkpoint-4", "damaged-checkpoint-6"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint-2",
        "damaged-checkpoint-4",
        "damaged-checkpoint-6",
    ]
    # an explicitly named damaged checkpoint is refused with its problem, not resumed
    with pytest.raises(SyntaxformerError, match="no rng_state.pth"):
        resume_checkpoint(RunConfig(resume=str(tmp_path / "damaged-checkpoint-4")), str(tmp_path))


def test_checkpoints_none_intact_is_refused_with_the_reasons(tmp_path):
    for step in (1, 2):
        (make_checkpoint(tmp_path, step) / "optimizer.pt").unlink()  # e.g. save_only_model=True
    with pytest.raises(
        SyntaxformerError,
        match=r"no checkpoint can be resumed exactly .*checkpoint-2: no "
        r"optimizer.pt.*--overwrite-output-dir",
    ):
        resume_checkpoint(RunConfig(resume=True), str(tmp_path))


def test_checkpoints_orphan_temp_files_removed(tmp_path):
    ck = make_checkpoint(tmp_path, 3)
    (tmp_path / ".tmp-abcmodel.safetensors").write_bytes(b"\0" * 100)
    (ck / ".tmp-xyztrainer_state.json").write_text("{")
    (tmp_path / ".tmp-model-q1w2").mkdir()  # a final model save killed half-way
    (tmp_path / ".tmp-model-q1w2" / "model.safetensors").write_bytes(b"\0" * 100)
    (tmp_path / "notes.tmp").write_text("mine")  # not an atomic-write temp file
    removed = remove_orphan_temp_files(tmp_path)
    assert sorted(p.name for p in removed) == [
        ".tmp-abcmodel.safetensors",
        ".tmp-model-q1w2",
        ".tmp-xyztrainer_state.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-3", "notes.tmp"]
    assert (tmp_path / "notes.tmp").is_file() and checkpoint_problems(ck) == []


def test_checkpoints_fingerprint_refuses_other_options_or_data(tmp_path, caplog):
    config = RunConfig(task="translation", task_options={"arm": "both"}, max_train_samples=100)
    write_fingerprint(tmp_path, run_fingerprint(config.to_dict(), "aaaa"))
    check_fingerprint(tmp_path, run_fingerprint(config.replace(eval_steps=5, output_dir="x").to_dict(), "aaaa"))
    with pytest.raises(SyntaxformerError, match=r"the training data changed"):
        check_fingerprint(tmp_path, run_fingerprint(config.to_dict(), "bbbb"))
    check_fingerprint(tmp_path, run_fingerprint(config.to_dict(), "bbbb"), check_data=False)
    with pytest.raises(SyntaxformerError, match=r'task_options: \{"arm": "both"\} -> \{"arm": "baseline"\}'):
        check_fingerprint(tmp_path, run_fingerprint(config.replace(task_options={"arm": "baseline"}).to_dict(), "aaaa"))
    with pytest.raises(SyntaxformerError, match=r"max_train_samples: 100 -> 50"):
        check_fingerprint(tmp_path, run_fingerprint(config.replace(max_train_samples=50).to_dict(), "aaaa"))
    (tmp_path / FINGERPRINT_FILE).unlink()  # a run started by an older version: warned, not refused
    with caplog.at_level("WARNING"):
        check_fingerprint(tmp_path, run_fingerprint(config.to_dict(), "bbbb"))
    assert "cannot check" in caplog.text
