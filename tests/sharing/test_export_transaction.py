"""``syntaxformer export`` as a transaction (sharing/export.py): outputs whose replacing would touch the run are
refused, the output is locked, replaced in one step and an interrupted export is repaired by the next; unfinished or
incomplete runs are refused with one line naming what is missing; nothing asks on stdin. And the push of an
exported folder to the Hugging Face hub (``--push-to-hub``): refused before any work when offline or without a
token, and the exact files it uploads (a fake ``HfApi`` stands in for the network)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from syntaxformer.errors import ConfigError, DataError


def _dotfiles(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def run(sst2_runs, tmp_path) -> Path:
    """A copy of the tiny SG-Net SST-2 run in ``tmp_path/runs/sg`` (tests change it)."""
    folder = tmp_path / "runs" / "sg"
    shutil.copytree(sst2_runs["sgnet"], folder)
    return folder


@pytest.fixture
def no_stdin(monkeypatch):
    """Any question on stdin fails the test (transformers asks whether to run a folder's code)."""

    def ask(*args):
        raise AssertionError(f"export asked on stdin: {args}")

    monkeypatch.setattr("builtins.input", ask)


def test_export_refuses_outputs_whose_replacing_would_touch_the_run(run, tmp_path):
    from syntaxformer.cli import main
    from syntaxformer.sharing import export_model

    before = sorted(p.name for p in run.iterdir())
    for out in (run.parent, tmp_path, run, run / "export"):  # above the run, the run, inside it
        with pytest.raises(DataError, match="holds the run folder|is the run folder or inside it"):
            export_model(run, out, overwrite=True)
        assert main(["export", str(run), str(out), "--overwrite"]) == 1
    assert sorted(p.name for p in run.iterdir()) == before and _dotfiles(tmp_path) == _dotfiles(run.parent) == []
    # a symbolic link: refused before anything is written (neither the link nor its target changes)
    target = tmp_path / "target"
    target.mkdir()
    (target / "mine.txt").write_text("keep me", encoding="utf-8")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(DataError, match=r"link is a symbolic link .* give a real folder"):
        export_model(run, tmp_path / "link", overwrite=True)
    assert (tmp_path / "link").is_symlink() and [p.name for p in target.iterdir()] == ["mine.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".link")]


def test_export_refuses_unfinished_and_incomplete_runs_naming_what_is_missing(run, tmp_path, no_stdin):
    from syntaxformer.sharing import export_model

    out = tmp_path / "out"
    broken = tmp_path / "broken"

    def case(change, error, match):
        shutil.rmtree(broken, ignore_errors=True)
        shutil.copytree(run, broken)
        change(broken)
        with pytest.raises(error, match=match) as info:
            export_model(broken, out)
        assert "\n" not in str(info.value)
        assert not out.exists() and _dotfiles(tmp_path) == []

    case(lambda r: (r / "metrics.json").unlink(), DataError, r"broken holds an unfinished run \(no metrics.json")
    case(lambda r: (r / "tokenizer.json").unlink(), DataError, r"broken has no tokenizer")
    case(lambda r: (r / "tokenizer_config.json").unlink(), DataError, r"broken has no tokenizer")
    case(
        lambda r: (r / "config.json").write_text("{not json", encoding="utf-8"),
        DataError,
        r"broken/config.json is not a readable model config",
    )
    case(lambda r: (r / "config.json").write_text("[1]", encoding="utf-8"), DataError, "not a readable model config")

    def unknown(r):
        config = json.loads((r / "config.json").read_text(encoding="utf-8"))
        (r / "config.json").write_text(json.dumps({**config, "model_type": "mystery"}), encoding="utf-8")

    case(unknown, ConfigError, r"model_type 'mystery', not a model export can carry")


def test_export_takes_the_output_lock(run, tmp_path):
    from syntaxformer.sharing import export_model
    from syntaxformer.training.lock import RunLock

    out = tmp_path / "out"
    another = RunLock(tmp_path / ".out.lock")  # another export writes `out` (the lock beside it)
    with another, pytest.raises(DataError, match=r"out is being written by another export .*wait until it ends"):
        export_model(run, out)
    assert not out.exists()
    export_model(run, out)  # released: the lock is free again, nothing of it is left
    assert (out / "model.safetensors").is_file() and _dotfiles(tmp_path) == []


def test_export_replaces_in_one_step_and_repairs_an_interrupted_export(run, tmp_path, monkeypatch):
    from syntaxformer.sharing import export, export_model

    out = tmp_path / "out"
    export_model(run, out)
    (out / "mine.txt").write_text("old export", encoding="utf-8")

    # a failure while the new folder is built leaves the old one as it was, and no temporary
    def fail(*args, **kwargs):
        raise OSError("disk failed")

    with monkeypatch.context() as m:
        m.setattr("syntaxformer.training.model_card.write_model_card", fail)
        with pytest.raises(OSError, match="disk failed"):
            export_model(run, out, overwrite=True)
    assert (out / "mine.txt").read_text(encoding="utf-8") == "old export" and _dotfiles(tmp_path) == []

    # killed between the two renames of the fallback: the old folder aside, a half-built one, no output folder;
    # the next export puts the old folder back (and refuses to replace it without --overwrite), removes the rest
    os.replace(out, tmp_path / ".out.old-12345")
    (tmp_path / ".out.export-abc").mkdir()
    (tmp_path / ".out.export-abc" / "model.safetensors").write_bytes(b"half")
    with pytest.raises(DataError, match="exists and is not empty"):
        export_model(run, out)
    assert (out / "mine.txt").read_text(encoding="utf-8") == "old export" and _dotfiles(tmp_path) == []

    # the replacement: one atomic exchange where the system has one, else the fallback; the same result
    for exchange in (export._exchange, lambda a, b: False):
        monkeypatch.setattr(export, "_exchange", exchange)
        (out / "mine.txt").write_text("old export", encoding="utf-8")
        export_model(run, out, overwrite=True)
        assert not (out / "mine.txt").exists() and (out / "model.safetensors").is_file()
        assert _dotfiles(tmp_path) == []


def test_exchange_swaps_two_folders_in_one_step(tmp_path):
    from syntaxformer.sharing.export import _exchange

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x").write_text("a", encoding="utf-8")
    (tmp_path / "b" / "y").write_text("b", encoding="utf-8")
    if not _exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("no atomic exchange on this system (the two-rename fallback is tested above)")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["y"] and [p.name for p in (tmp_path / "b").iterdir()] == [
        "x"
    ]


# -- the hub ---------------------------------------------------------------------------------------------------------
@pytest.fixture
def online(monkeypatch, tmp_path):
    """Not offline, and a token in HF_TOKEN (nothing is sent: the tests inject a fake HfApi)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)


class FakeHub:
    """What ``push_export`` asks of ``huggingface_hub.HfApi``, recorded (a repository holding ``files``)."""

    def __init__(self, files=(), fail=None):
        self.files, self.fail, self.calls = list(files), fail, []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def list_repo_files(self, repo_id, **kwargs):
        return self.files

    def create_commit(self, repo_id, operations, **kwargs):
        if self.fail:
            raise self.fail
        self.calls.append(("create_commit", repo_id, operations))
        return type("Info", (), {"commit_url": f"https://huggingface.co/{repo_id}/commit/1"})()


def test_push_to_hub_is_refused_before_any_work_offline_or_without_a_token(run, tmp_path, monkeypatch, online):
    from huggingface_hub import constants

    from syntaxformer.cli import main
    from syntaxformer.sharing import check_hub_push

    out = tmp_path / "out"
    assert check_hub_push("me/sst2-sg") == "hf_" + "x" * 34
    with pytest.raises(ConfigError, match="is not a hub repository id"):
        check_hub_push("me/two/slashes")
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(ConfigError, match="no Hugging Face access token; log in with `hf auth login` or set HF_TOKEN"):
        check_hub_push("me/sst2-sg")
    assert main(["export", str(run), str(out), "--push-to-hub", "me/sst2-sg"]) == 1
    assert not out.exists() and _dotfiles(tmp_path) == []
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE is set"):
        check_hub_push("me/sst2-sg")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # offline as huggingface_hub read it at import
    assert main(["export", str(run), str(out), "--push-to-hub", "me/sst2-sg"]) == 1
    assert not out.exists() and _dotfiles(tmp_path) == []


def test_push_uploads_exactly_the_exported_folder(run, tmp_path, monkeypatch, online):
    import huggingface_hub

    from syntaxformer.cli import main
    from syntaxformer.sharing import push_export

    out = tmp_path / "out"
    hub = FakeHub(files=[".gitattributes", "README.md", "old_module.py"])  # a repository pushed to before
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: hub)
    assert main(["export", str(run), str(out), "--push-to-hub", "me/sst2-sg"]) == 0
    (create, repo, options), (commit, repo2, operations) = hub.calls
    assert (create, repo, options["exist_ok"], commit, repo2) == (
        "create_repo",
        "me/sst2-sg",
        True,
        "create_commit",
        repo,
    )
    added = {op.path_in_repo: op for op in operations if type(op).__name__ == "CommitOperationAdd"}
    deleted = [op.path_in_repo for op in operations if type(op).__name__ == "CommitOperationDelete"]
    code = {p.name for p in out.glob("*.py")}
    assert "syntax_model.py" in code and deleted == ["old_module.py"]
    assert set(added) == {
        "README.md",
        "config.json",
        "model.safetensors",
        "syntax_pipeline.json",
        "tokenizer.json",
        "tokenizer_config.json",
        *code,
    }  # the self-contained folder: no run.json, metrics.json, training_args.bin, checkpoints
    assert all(Path(op.path_or_fileobj).parent == out for op in added.values())
    # never the run folder; the hub's failure is one line and the folder stays
    with pytest.raises(ConfigError, match="not a folder written by `syntaxformer export`"):
        push_export(run, "me/sst2-sg", api=FakeHub())
    with pytest.raises(
        DataError, match=r"pushing .*out to the hub repository me/sst2-sg failed \(ConnectionError: down"
    ):
        push_export(out, "me/sst2-sg", api=FakeHub(fail=ConnectionError("down\nmore")))
    assert (out / "model.safetensors").is_file()


def _train_args(tiny_model: str, out: Path) -> list[str]:
    return ["train", "--task", "sst2", "--model", tiny_model, "--max-train-samples", "16", "--max-eval-samples", "8",
            "--max-steps", "2", "--max-length", "32", "--batch-size", "8", "--eval_strategy", "no",
            "--save_strategy", "no", "--no-progress", "--output-dir", str(out)]  # fmt: skip


def test_train_push_to_hub_pushes_the_exported_folder_never_the_run(tiny_model, tmp_path, monkeypatch, online):
    """``train --push_to_hub``: refused before any work offline (nothing written); online, the Trainer does not
    push the run folder: after training the run is exported and that folder pushed."""
    import huggingface_hub
    from huggingface_hub import constants

    from syntaxformer.cli import main

    out = tmp_path / "run"
    hub = FakeHub()
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: hub)
    args = [*_train_args(tiny_model, out), "--push_to_hub", "--hub_model_id", "me/sst2-sg"]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(args) == 1 and not out.exists() and hub.calls == []
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    assert main(args) == 0
    (_, repo, _), (_, _, operations) = hub.calls
    pushed = {op.path_in_repo for op in operations}
    assert repo == "me/sst2-sg" and {"syntax_model.py", "syntax_pipeline.json", "model.safetensors"} <= pushed
    assert not pushed & {"run.json", "metrics.json", "training_args.bin", "run_fingerprint.json"}
    assert (out / "run.json").is_file() and _dotfiles(tmp_path) == []
