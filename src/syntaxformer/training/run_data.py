"""The data a finished run was scored on, read again from the files its ``run.json`` names: the split itself
(:func:`load_dev_data`) and a translation run's references (:func:`run_references`, for BLEU tests)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from syntaxformer.data.readers.parallel import ParallelCorpus
from syntaxformer.errors import InputError
from syntaxformer.training.run import load_run

__all__ = ["load_dev_data", "run_references"]


def load_dev_data(run_dir: str | Path, split: str = "dev") -> tuple[Any, Any]:
    """``(task, data)``: the task of a run folder and its ``split`` as the run read it. Raises DataError: no
    ``run.json``; FormatError: not the one ``train`` writes."""
    config, task = load_run(run_dir)
    return task, task.load_split(split, config.data_options(split, config.max_eval_samples))


def run_references(run_dir: str | Path, ids: Sequence[str] | None = None, split: str = "dev") -> list[str]:
    """The references of a translation run's ``split``, read again from the data named in its ``run.json``. Raises
    InputError: the data has no references, or not the examples of ``ids``."""
    _, data = load_dev_data(run_dir, split)
    if not isinstance(data, ParallelCorpus) or data.targets is None:
        raise InputError(f"the dev data of {run_dir} has no references")
    if ids is not None and list(ids) != data.ids:
        raise InputError(
            f"the dev data named in {run_dir}/run.json is no longer the data its dev_predictions.json "
            "was made on (other ids)"
        )
    return list(data.targets)
