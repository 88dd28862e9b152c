"""Translation with a trained Syntax-Infused Transformer: beam-search translation of raw text and sacreBLEU
(:mod:`.evaluate`; paired BLEU tests are :func:`syntaxformer.tasks.significance.paired_bleu_test`). Training
goes through the one runner (``syntaxformer.training.run.train`` with ``task="translation"``).

The parts live where their kind lives: readers in :mod:`syntaxformer.data.readers.parallel`, BPE in
:mod:`syntaxformer.data.bpe`, the model in :mod:`syntaxformer.modeling.seq2seq` (feature embeddings in
:mod:`syntaxformer.modeling.embeddings`), the task (featurization, metrics) in :mod:`syntaxformer.tasks.translation`,
the trainer in :class:`syntaxformer.training.trainer.SyntaxSeq2SeqTrainer`.
Heavy modules are imported lazily: ``from syntaxformer.translation import translate`` works.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "translate": "evaluate",
    "translate_and_score": "evaluate",
    "load_translation_model": "evaluate",
    "TranslationModel": "evaluate",
    "corpus_bleu": "evaluate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"syntaxformer.translation.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'syntaxformer.translation' has no attribute {name!r}")
