"""Saved models a user points at: ``with loading_model(folder): model = AutoModel....from_pretrained(folder)`` (every
load of a saved model in this package) turns any error of the load into one DataError naming the folder
(docs/reliability.md, "Runs and models that cannot be read")."""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

from safetensors import safe_open

from syntaxformer.errors import DataError, SyntaxformerError

__all__ = ["WEIGHT_FILES", "archive_problem", "loading_model", "model_folder_problem", "weights_problem"]

#: The files that hold a saved model's weights (one of them, or a sharded index with its shards).
WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


def model_folder_problem(folder: str | os.PathLike, *, weights: bool = True) -> str | None:
    """What keeps ``folder`` from loading as a saved ``transformers`` model, or ``None``: ``config.json`` names a
    ``model_type``; with ``weights``, a weights file (:data:`WEIGHT_FILES`) is there and readable."""
    folder = Path(folder)
    config = folder / "config.json"
    if not config.is_file():
        return (
            "no config.json: not a model folder nor a run folder of `syntaxformer train` (or a run trained "
            "with save_model=false)"
        )
    try:
        record = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return f"config.json is not valid JSON ({type(e).__name__}); the folder is damaged"
    if not isinstance(record, dict) or not isinstance(record.get("model_type"), str):
        return "config.json names no model_type: not a saved transformers model"
    if not weights:
        return None
    present = [folder / name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not present:
        return f"no model weights ({' / '.join(WEIGHT_FILES[:2])}); the save was interrupted or the files were moved"
    path = present[0]
    if path.name == "pytorch_model.bin":  # the whole-archive checksum is the resume check's; a load needs the index
        try:
            with zipfile.ZipFile(path):
                return None
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            return f"{path.name} is truncated or not a torch archive ({type(e).__name__})"
    return weights_problem(path)


@contextlib.contextmanager
def loading_model(path: str | os.PathLike, what: str = "model", *, weights: bool = True) -> Iterator[None]:
    """Check ``path`` (a local folder or hub name) before a model is loaded from it inside the block. ``what``: what is
    loaded, for messages; ``weights``: whether the folder must hold weights. Raises DataError: the folder is not a
    loadable model (:func:`model_folder_problem`), or the load failed."""
    name = os.fspath(path)
    if Path(name).is_dir():
        problem = model_folder_problem(name, weights=weights)
        if problem:
            raise DataError(f"cannot load the {what} in {name}: {problem}")
    try:
        yield
    except (SyntaxformerError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as e:  # transformers / safetensors / torch: each raises its own types for a bad folder
        message = " ".join(str(e).split())[:300]
        raise DataError(f"cannot load the {what} in {name}: {type(e).__name__}: {message}") from e


def archive_problem(path: Path) -> str | None:
    """``None`` if ``path`` is a complete torch archive (a zip whose every member passes its CRC check)."""
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        return f"{path.name} is truncated or not a torch archive ({type(e).__name__})"
    return None if bad is None else f"{path.name} is damaged (member {bad} fails its checksum)"


def weights_problem(path: Path) -> str | None:
    """What is wrong with a weights file (safetensors, torch archive, or a sharded index and its shards), or ``None``."""
    if path.name.endswith(".index.json"):
        try:
            shards = set(json.loads(path.read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            return f"{path.name} is not a valid weight index ({type(e).__name__})"
        for shard in sorted(shards):
            if not (path.parent / shard).is_file():
                return f"weight shard {shard} is missing"
            if problem := weights_problem(path.parent / shard):
                return problem
        return None
    if path.suffix == ".safetensors":
        try:
            with safe_open(str(path), framework="pt") as f:
                list(f.keys())
        except Exception as e:  # noqa: BLE001 - safetensors raises its own error type for a truncated or garbled file
            return f"{path.name} is truncated or damaged ({' '.join(str(e).split())[:120]})"
        return None
    return archive_problem(path)
