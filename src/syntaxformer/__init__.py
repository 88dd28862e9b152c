"""syntaxformer: make any pretrained Transformer syntax-aware.

Implements SG-Net (syntax-guided self-attention), Syntax-BERT (masked sub-network attention) and the
Syntax-Infused Transformer (syntactic feature embeddings) on top of Hugging Face models.

``import syntaxformer`` is light (no torch / transformers). Model classes are loaded on first access, e.g.
``syntaxformer.SGNetForSequenceClassification``. ``import syntaxformer`` is enough for ``transformers`` to load a
saved model (``AutoModelForSequenceClassification.from_pretrained(folder)`` ...) and to build the syntax pipelines
(``pipeline("syntax-text-classification", model=folder)``): they are registered when ``transformers`` loads its
registries (:mod:`syntaxformer.registration`). Systems, tasks and parsers are found by name in one registry that
other packages extend through entry points (:mod:`syntaxformer.registry`).
"""

import importlib
from typing import Any

from syntaxformer import registration as _registration
from syntaxformer.data import Document, Sentence, Tree

__version__ = "0.1.0.dev0"

_HEADS = ("ForSequenceClassification", "ForQuestionAnswering", "ForMultipleChoice", "ForTokenClassification")
_LAZY = {
    **{
        f"{system}{part}": "syntaxformer.modeling"
        for system in ("SGNet", "SyntaxBert", "PlainEncoder")
        for part in ("Config", "Model", *_HEADS)
    },
    "model_class": "syntaxformer.modeling",
    "SyntaxAligner": "syntaxformer.data.align",
    "SyntaxCollator": "syntaxformer.data.collate",
    "SpacyAnnotator": "syntaxformer.data.annotators",
    "Predictor": "syntaxformer.inference",
}

_registration.install()

__all__ = ["Document", "Sentence", "Tree", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'syntaxformer' has no attribute {name!r}")
