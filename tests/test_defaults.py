"""Where data is read from: only the folder ``SYNTAXFORMER_DATA`` names (or an explicit path, or the hub), never a
``shared/data`` found beside the current folder or the installed package."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from syntaxformer.commands.demo import BUILTIN, _load_texts
from syntaxformer.defaults import shared_data_dir, task_data_dir
from syntaxformer.errors import DataError


@pytest.fixture
def decoy(tmp_path: Path, monkeypatch) -> Path:
    """A user's project folder (the current folder) with a decoy SST-2 dev file in ``shared/data`` beside it, and
    inside it; no SYNTAXFORMER_DATA."""
    project = tmp_path / "project"
    for root in (tmp_path, project):
        dev = root / "shared" / "data" / "glue" / "SST-2" / "dev.tsv"
        dev.parent.mkdir(parents=True)
        dev.write_text("sentence\tlabel\nDECOY sentence .\t1\n", encoding="utf-8")
    monkeypatch.delenv("SYNTAXFORMER_DATA", raising=False)
    monkeypatch.chdir(project)
    return tmp_path


def test_a_decoy_shared_data_beside_the_current_folder_is_never_read(decoy):
    assert shared_data_dir() is None
    with pytest.raises(DataError, match="SYNTAXFORMER_DATA"):
        task_data_dir(None, "glue/SST-2", "sst2")
    texts, source = _load_texts(argparse.Namespace(text=None, n=5))
    assert texts == BUILTIN and "DECOY" not in " ".join(texts), source


def test_the_folder_syntaxformer_data_names_is_read(decoy, monkeypatch):
    monkeypatch.setenv("SYNTAXFORMER_DATA", str(decoy / "shared" / "data"))
    assert shared_data_dir() == decoy / "shared" / "data"
    texts, _ = _load_texts(argparse.Namespace(text=None, n=5))
    assert texts == ["DECOY sentence ."]
    monkeypatch.setenv("SYNTAXFORMER_DATA", str(decoy / "absent"))  # a name that is no folder reads nothing
    assert shared_data_dir() is None
