"""Sharing a trained model: :func:`export_model` writes a run's final model as a self-contained Hugging Face model
folder that loads, and predicts on raw text through ``pipeline(model=FOLDER, trust_remote_code=True)``, where
syntaxformer is not installed (``syntaxformer export RUN_DIR OUT_DIR``; ``docs/inference.md``).

* :mod:`syntaxformer.sharing.export`: the folder (weights, config with ``auto_map`` and ``custom_pipelines``,
  tokenizer, the code copied with relative imports, the pipeline options, the card);
* :mod:`syntaxformer.sharing.syntax_pipeline` (classification and what the pipelines share),
  :mod:`syntaxformer.sharing.qa_pipeline`, :mod:`syntaxformer.sharing.translation_pipeline`: the pipelines a folder
  carries (the one of its head);
* :mod:`syntaxformer.sharing.model_card`: its ``huggingface_hub`` model card.
"""

from __future__ import annotations

from typing import Any

__all__ = ["export_model"]


def export_model(*args: Any, **kwargs: Any) -> Any:
    """:func:`syntaxformer.sharing.export.export_model` (imported on first use)."""
    from syntaxformer.sharing.export import export_model as export

    return export(*args, **kwargs)
