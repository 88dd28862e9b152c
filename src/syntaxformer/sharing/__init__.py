"""Sharing a trained model: :func:`export_model` writes a run's final model as a self-contained Hugging Face model
folder that loads, and predicts on raw text through ``pipeline(model=FOLDER, trust_remote_code=True)``, where
syntaxformer is not installed (``syntaxformer export RUN_DIR OUT_DIR``; ``docs/inference.md``).

* :mod:`syntaxformer.sharing.export`: the folder (weights, config with ``auto_map`` and ``custom_pipelines``,
  tokenizer, the pipeline options, the card); :mod:`syntaxformer.sharing.export_code`: its code (the library
  definitions the model uses, copied with relative imports);
* :mod:`syntaxformer.sharing.syntax_pipeline` (classification and what the pipelines share),
  :mod:`syntaxformer.sharing.qa_pipeline`, :mod:`syntaxformer.sharing.translation_pipeline`: the pipelines a folder
  carries (the one of its head);
* the model card: :mod:`syntaxformer.training.model_card` (the one writer of run folders' and exports' cards).

:mod:`syntaxformer.sharing.hub`: the push of an exported folder to the hub; :func:`check_hub_push` says, before
any work, whether a push can happen (online, a token), for any command that pushes (``train --push_to_hub`` too).
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_hub_push", "export_model", "push_export"]


def export_model(*args: Any, **kwargs: Any) -> Any:
    """:func:`syntaxformer.sharing.export.export_model` (imported on first use)."""
    from syntaxformer.sharing.export import export_model as export

    return export(*args, **kwargs)


def check_hub_push(repo_id: str, token: str | None = None) -> str:
    """:func:`syntaxformer.sharing.export.check_hub_push` (imported on first use)."""
    from syntaxformer.sharing.hub import check_hub_push as check

    return check(repo_id, token)


def push_export(*args: Any, **kwargs: Any) -> Any:
    """:func:`syntaxformer.sharing.export.push_export` (imported on first use)."""
    from syntaxformer.sharing.hub import push_export as push

    return push(*args, **kwargs)
