"""Fixtures of the translation tests: one thread (tiny models run much faster that way on a shared CPU), a spaCy
annotator with a private cache, and tokenizers learned on real Multi30k text."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import data_path


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def annotator(tmp_path_factory):
    from syntaxformer.data import make_annotator

    try:
        return make_annotator(cache=tmp_path_factory.mktemp("parse-cache") / "parses.sqlite3", progress=False)
    except Exception as e:  # pragma: no cover - the offline pipeline is a dev dependency
        pytest.skip(f"spaCy pipeline not available: {e}")


@pytest.fixture(scope="session")
def m30k_small():
    """The first 60 training pairs and 20 validation pairs of Multi30k."""
    from syntaxformer.data.readers.parallel import multi30k

    folder = data_path("multi30k")
    train = multi30k("train", folder)
    valid = multi30k("val", folder)
    return train.select(range(60), "train60"), valid.select(range(20), "val20")


@pytest.fixture(scope="session")
def tokenizers(m30k_small):
    from syntaxformer.data.bpe import train_bpe

    train, _ = m30k_small
    return train_bpe(train.sources, 300), train_bpe(train.targets, 300)
