"""Syntax-aware neural machine translation: a standard encoder-decoder Transformer trained from scratch, with
syntax-infused source embeddings (POS / case / subword position; Sundararaman et al.) and an optional SG-Net
encoder layer (Zhang et al., TPAMI §3.4.3).

Modules: :mod:`.data` (parallel text and WMT ``.sgm`` readers, subsets), :mod:`.tokenizer` (BPE learned on the
training data), :mod:`.dataset` (parse once + align + features -> batches), :mod:`.model` (the model),
:mod:`.train` (training loop, CLI entry), :mod:`.evaluate` (beam-search translation, sacreBLEU, paired bootstrap).
Heavy modules are imported lazily: ``from syntaxformer.translation import train_translation`` works.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ParallelCorpus": "data", "read_parallel": "data", "read_sgm": "data", "read_sgm_pair": "data",
    "read_corpus": "data", "subsample": "data", "multi30k": "data", "newstest2013": "data",
    "train_bpe": "tokenizer", "load_tokenizers": "tokenizer",
    "encode_corpus": "dataset", "collate": "dataset",
    "SyntaxTranslationConfig": "model", "SyntaxTransformerForTranslation": "model", "build_config": "model",
    "PRESETS": "model",
    "TranslationConfig": "train", "ARMS": "train", "train_translation": "train", "run_translation_cli": "train",
    "run_from_train_args": "train",
    "translate": "evaluate", "translate_and_score": "evaluate", "load_translation_model": "evaluate",
    "corpus_bleu": "evaluate", "paired_bootstrap_bleu": "evaluate",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"syntaxformer.translation.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'syntaxformer.translation' has no attribute {name!r}")
