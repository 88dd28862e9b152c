"""Sharing a trained model: :func:`export_model` writes a run's final model as a self-contained Hugging Face model
folder that predicts on raw text where syntaxformer is not installed (``syntaxformer export RUN_DIR OUT_DIR``;
``docs/inference.md``), :func:`push_export` pushes such a folder to the hub, and :func:`check_hub_push` says, before
any work, whether a push can happen (for any command that pushes, ``train --push_to_hub`` too). Each is imported on
first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "export_model": "syntaxformer.sharing.export",
    "check_hub_push": "syntaxformer.sharing.hub",
    "push_export": "syntaxformer.sharing.hub",
}

__all__ = ["check_hub_push", "export_model", "push_export"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'syntaxformer.sharing' has no attribute {name!r}")
