"""Where each split of your own data comes from, for the custom tasks (:mod:`syntaxformer.tasks.custom`).

A split is read from its own file (``train_file`` / ``dev_file`` / ``test_file``), else the split of that name of
a ``datasets`` source (``dataset``, or a ``datasets`` folder given as ``train_file``), else a file in ``data_dir``
(``train.csv``, ``validation.jsonl`` ...). Without a ``dev`` source, ``dev`` is a seeded share of the training rows
(``validation_fraction``, ``split_seed``), as its ``source`` says; a ``test`` split without a source is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.data.readers.table import TABLE_FORMATS, Table, dataset_splits, load_dataset_table, read_table
from syntaxformer.errors import ConfigError, DataError

__all__ = [
    "SPLIT_ALIASES",
    "datasets_source",
    "has_source",
    "held_out",
    "rows_for",
    "split_file",
    "split_names",
    "split_table",
]

logger = logging.getLogger(__name__)

#: Other names of the splits (Hugging Face's ``validation``).
SPLIT_ALIASES: dict[str, str] = {"validation": "dev", "valid": "dev", "eval": "dev"}
#: File names looked for in ``data_dir`` per split (with any extension of the table formats).
_SPLIT_FILE_STEMS: dict[str, tuple[str, ...]] = {
    "train": ("train",),
    "dev": ("validation", "dev", "valid"),
    "test": ("test",),
}


def split_names(split: str) -> str:
    """The split name the tasks use (``validation`` -> ``dev``)."""
    return SPLIT_ALIASES.get(split, split)


def split_file(data_dir: Any, split: str) -> Path | None:
    """``<data_dir>/<train|validation|dev|valid|test>.<csv|tsv|json|jsonl ...>`` if there is one."""
    if not data_dir:
        return None
    folder = Path(data_dir)
    if not folder.is_dir():
        raise DataError(f"data_dir {data_dir} is not a folder")
    for stem in _SPLIT_FILE_STEMS[split]:
        for ext in TABLE_FORMATS:
            if (folder / f"{stem}{ext}").is_file():
                return folder / f"{stem}{ext}"
    return None


def datasets_source(data: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """``(name, config)`` of the ``datasets`` source (``dataset``, else a ``train_file`` folder), or ``None``."""
    if data.get("dataset"):
        return str(data["dataset"]), data.get("dataset_config")
    train = data.get("train_file")
    if train and Path(str(train)).is_dir():
        return str(train), None
    return None


def _from_datasets(split: str, data: Mapping[str, Any]) -> tuple[str, str | None] | None:
    source = datasets_source(data)
    return source if source is not None and split in dataset_splits(*source) else None


def has_source(split: str, data: Mapping[str, Any]) -> bool:
    """Whether the data section names a source for ``split``."""
    if data.get(f"{split}_file") or _from_datasets(split, data) is not None:
        return True
    return not data.get("dataset") and split_file(data.get("data_dir"), split) is not None


def split_table(split: str, data: Mapping[str, Any]) -> Table:
    """The table of ``split`` from its source (:func:`has_source` must hold)."""
    given = data.get(f"{split}_file")
    if given:
        return read_table(given, split)
    source = _from_datasets(split, data)
    if source is not None:
        return load_dataset_table(source[0], source[1], split)
    return read_table(split_file(data.get("data_dir"), split), split)  # type: ignore[arg-type]


def held_out(n: int, fraction: float, seed: int) -> np.ndarray:
    """Sorted positions of the rows held out as ``dev`` (a seeded ``fraction`` of ``n``, at least 1)."""
    if n < 2:
        raise DataError(
            f"cannot hold out validation rows from a training file of {n} row(s); give a validation "
            "file (--validation-file)"
        )
    k = min(n - 1, max(1, round(fraction * n)))
    return np.sort(np.random.default_rng(seed).permutation(n)[:k])


def rows_for(
    split: str, data: Mapping[str, Any], fraction: float, seed: int, title: str
) -> tuple[Table, list[int], str]:
    """The table a split is read from, the row positions that belong to the split, and its source in words
    (without a ``dev`` source, ``dev`` is a seeded ``fraction`` of the training rows)."""
    split = split_names(split)
    if split not in ("train", "dev", "test"):
        raise ConfigError(f"{title} has no split {split!r}; expected train, dev (validation) or test")
    if split == "test" or (has_source("dev", data) and (split == "dev" or has_source("train", data))):
        if not has_source(split, data):
            flag = {
                "train": "train: --train-file / train_file",
                "test": "train: --test-file / test_file; evaluate and predict RUN: --file FILE",
            }.get(split, "")
            source = datasets_source(data)
            note = f" ({source[0]} has no {split} split)" if source is not None else ""
            raise DataError(f"{title}: no {split} data{note}; give a {split} file ({flag})")
        table = split_table(split, data)
        return table, list(range(len(table))), table.source
    if not has_source("train", data):
        raise DataError(
            f"{title}: no {split} data; give a training file (--train-file / train_file) and "
            "optionally a validation file (--validation-file / dev_file)"
        )
    if fraction <= 0:
        raise DataError(
            f"{title}: no validation data; give a validation file (--validation-file) or set "
            "validation_fraction > 0 to hold out part of the training rows"
        )
    train = split_table("train", data)
    held = held_out(len(train), fraction, seed)
    if split == "dev":
        logger.info(
            "%s: no validation data given (--validation-file, or a validation split of the data set): the dev split "
            "is %d of the %d rows of %s, held out of training (validation_fraction %s, split_seed %d)",
            title,
            len(held),
            len(train),
            train.source,
            fraction,
            seed,
        )
        return train, held.tolist(), f"{train.source} (held-out {len(held)} of {len(train)} rows, seed {seed})"
    keep = np.ones(len(train), dtype=bool)
    keep[held] = False
    return train, np.flatnonzero(keep).tolist(), f"{train.source} (without {len(held)} held-out rows, seed {seed})"
