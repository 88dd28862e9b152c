"""Tests of syntaxformer.utils: the permissions of atomically written files."""

import os
import stat

import pytest

from syntaxformer.utils import atomic_write, write_json


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_utils_atomic_write_mode_follows_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        with atomic_write(tmp_path / "out.txt") as f:
            f.write("x\n")
        write_json(tmp_path / "out.json", {"a": 1})
        with open(tmp_path / "plain.txt", "w") as f:  # what an ordinary open gives: the reference
            f.write("x\n")
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    assert _mode(tmp_path / "plain.txt") == expected
    assert _mode(tmp_path / "out.txt") == expected
    assert _mode(tmp_path / "out.json") == expected
    if umask == 0o022:
        assert expected == 0o644
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_utils_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path, mode):
    """As ``open(path, "w")`` does: a file its owner made private (it may hold a secret) stays private when it is
    replaced; a new file gets 0666 less the umask."""
    path, reference = tmp_path / "old.txt", tmp_path / "reference.txt"
    for p in (path, reference):
        p.write_text("old")
        os.chmod(p, mode)
    old = os.umask(0o022)
    try:
        with atomic_write(path) as f:
            f.write("new")
        with open(reference, "w") as f:
            f.write("new")
    finally:
        os.umask(old)
    assert path.read_text() == "new" and _mode(path) == _mode(reference) == mode


def test_utils_readable_outputs_opens_owner_only_files(tmp_path):
    from syntaxformer.utils import readable_outputs

    (tmp_path / "sub").mkdir()
    weights, private = tmp_path / "sub" / "model.safetensors", tmp_path / "kept.txt"
    weights.write_text("w")
    private.write_text("p")
    os.chmod(weights, 0o600)
    os.chmod(private, 0o640)  # not the temporary-file mode: left as the user made it
    old = os.umask(0o022)
    try:
        readable_outputs(tmp_path)
    finally:
        os.umask(old)
    assert _mode(weights) == 0o644 and _mode(private) == 0o640


def test_redact_secrets_in_records_and_command_lines():
    from syntaxformer.secrets import redact_secrets

    token = "hf_" + "Ab1" * 12
    record = {
        "hub_token": "my-secret",
        "push_to_hub_token": None,  # nothing to hide
        "training_args": {"hub_token": token, "hub_model_id": "me/model"},
        "notes": [f"uploaded with {token}", ("syntaxformer.hf_datasets", 3)],
        "command": f"syntaxformer train --hub_token {token} --hub-token='a b' --tokenizer bert --seed 1",
    }
    assert redact_secrets(record) == {
        "hub_token": "<REDACTED>",
        "push_to_hub_token": None,
        "training_args": {"hub_token": "<REDACTED>", "hub_model_id": "me/model"},
        "notes": ["uploaded with <REDACTED>", ("syntaxformer.hf_datasets", 3)],
        "command": "syntaxformer train --hub_token <REDACTED> --hub-token=<REDACTED> --tokenizer bert --seed 1",
    }
    assert record["hub_token"] == "my-secret"  # a copy: the input is not changed
