"""Sharing a trained model: :func:`export_model` writes a run's final model as a self-contained Hugging Face model
folder that predicts on raw text where syntaxformer is not installed (``syntaxformer export RUN_DIR OUT_DIR``;
``docs/inference.md``), :func:`push_export` pushes such a folder to the hub, and :func:`check_hub_push` says, before
any work, whether a push can happen (for any command that pushes, ``train --push_to_hub`` too).
"""

from syntaxformer.sharing.export import export_model
from syntaxformer.sharing.hub import check_hub_push, push_export

__all__ = ["check_hub_push", "export_model", "push_export"]
