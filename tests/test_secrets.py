"""No secret at rest: a run trained with an access token writes it into no file (JSON, model card, the pickled
``training_args.bin`` of the run and of its checkpoints) and logs it nowhere."""

import logging
import os
import pickle
import stat

import torch

from syntaxformer.cli import main
from syntaxformer.secrets import REDACTED, redact_secrets, redacting_arguments
from tests.conftest import data_path

TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyzABCD"


def test_secrets_redact_token_fields_and_hf_tokens_at_any_depth():
    record = {"training_args": {"hub_token": TOKEN, "push_to_hub": True}, "note": f"token {TOKEN} here", "n": [TOKEN]}
    out = redact_secrets(record)
    assert out == {
        "training_args": {"hub_token": REDACTED, "push_to_hub": True},
        "note": f"token {REDACTED} here",
        "n": [REDACTED],
    }
    assert record["training_args"]["hub_token"] == TOKEN  # the input is not changed
    assert redact_secrets({"hub_token": None, "subnetworks_per_token": 3}) == {
        "hub_token": None,
        "subnetworks_per_token": 3,
    }


def test_secrets_training_arguments_pickle_without_the_token_but_keep_it(tmp_path):
    from transformers import TrainingArguments

    args = redacting_arguments(TrainingArguments(output_dir=str(tmp_path), hub_token=TOKEN, report_to="none"))
    assert isinstance(args, TrainingArguments) and args.hub_token == TOKEN  # the Trainer still pushes with it
    torch.save(args, tmp_path / "training_args.bin")
    assert TOKEN.encode() not in (tmp_path / "training_args.bin").read_bytes()
    loaded = torch.load(tmp_path / "training_args.bin", weights_only=False)
    assert type(loaded) is TrainingArguments and loaded.hub_token is None and loaded.output_dir == str(tmp_path)
    assert TOKEN.encode() not in pickle.dumps(args)
    import copy

    assert copy.deepcopy(args).hub_token == TOKEN and copy.copy(args).hub_token == TOKEN


def test_secrets_no_file_of_a_run_trained_with_a_token_holds_it(tiny_model, tmp_path, monkeypatch, caplog, capsys):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    old = os.umask(0o027)  # the user's umask: group may read, others nothing
    with caplog.at_level(logging.DEBUG):
        code = main(
            ["train", "--task", "sst2", "--data-dir", str(data_path("glue", "SST-2")), "--model-type", "plain",
             "--model", tiny_model, "--output-dir", str(run), "--max-train-samples", "16", "--max-eval-samples", "8",
             "--max-steps", "2", "--batch-size", "8", "--max-length", "32", "--save-strategy", "steps",
             "--save-steps", "1", "--no-progress", "--hub_token", TOKEN]
        )  # fmt: skip
    os.umask(old)
    out = capsys.readouterr()
    assert code == 0, out.err[-3000:]
    files = [p for p in run.rglob("*") if p.is_file()]
    names = {p.relative_to(run).as_posix() for p in files}
    assert {"run.json", "run_fingerprint.json", "README.md", "training_args.bin"} <= names
    assert any(n.startswith("checkpoint-") and n.endswith("/training_args.bin") for n in names)
    leaked = [p.relative_to(run).as_posix() for p in files if TOKEN.encode() in p.read_bytes()]
    assert leaked == []
    assert TOKEN not in out.out + out.err + caplog.text
    # written with the user's umask (027): group-readable, never world-readable; folders likewise
    assert {p.relative_to(run).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in files} == dict.fromkeys(names, 0o640)
    assert {stat.S_IMODE(p.stat().st_mode) for p in [run, *run.rglob("*")] if p.is_dir()} == {0o750}
    saved = torch.load(run / "training_args.bin", weights_only=False)
    assert saved.hub_token is None and saved.max_steps == 2
