"""Translation with a trained Syntax-Infused Transformer: beam search on raw text and sacreBLEU (:mod:`.evaluate`,
imported lazily: ``from syntaxformer.translation import translate`` works). Training goes through the one runner
(``syntaxformer.training.run.train`` with ``task="translation"``); the other parts live where their kind lives
(``docs/architecture.md``): readers, BPE, the model, the task and the trainer.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["TranslationModel", "corpus_bleu", "load_translation_model", "translate", "translate_and_score"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("syntaxformer.translation.evaluate"), name)
    raise AttributeError(f"module 'syntaxformer.translation' has no attribute {name!r}")
