"""Source/target pairs -> the arrays and batches of the Syntax-Infused Transformer, and generated ids -> text.

:mod:`syntaxformer.tasks.translation` (the ``translation`` task), :mod:`syntaxformer.modeling.seq2seq` and the
pipeline of an exported model folder (:mod:`syntaxformer.sharing.syntax_pipeline`) all encode, batch and decode
with these. This module imports only numpy, torch and the data layer, so it can travel in an exported model folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.collate import encode_syntax, pad_arrays
from syntaxformer.data.subword_features import FEATURES, forest_words, subword_feature_ids
from syntaxformer.errors import ConfigError
from syntaxformer.utils import progress

__all__ = ["DEPENDENCY_KEYS", "PAD_VALUES", "collate_pairs", "decode_translations", "encode_pairs"]

#: Padding of each batch key (keys not listed pad with 0: the feature ids' "no word").
PAD_VALUES = {"labels": -100, "dep_tin": -1, "dep_tout": -1, "syntax_tree": -1}

#: The dependency tensors of the SG layer's SDOI mask (the source tree).
DEPENDENCY_KEYS = ("dep_tin", "dep_tout", "syntax_tree")


def encode_pairs(
    corpus: Any,
    source_tokenizer: Any,
    target_tokenizer: Any | None,
    annotator: Any,
    syntax_inputs: Sequence[str],
    max_source_length: int = 64,
    max_target_length: int = 64,
    show_progress: bool = True,
) -> list[dict[str, np.ndarray]]:
    """Parse the sources (cached), align subwords, and build each pair's arrays.

    Args:
        corpus: sources (and targets): a :class:`~syntaxformer.data.readers.parallel.ParallelCorpus` (anything
            with ``sources``, ``targets`` or ``None``, and ``name``), or a list of source sentences.
        source_tokenizer: the source fast tokenizer (``</s>`` appended, see :mod:`syntaxformer.data.bpe`).
        target_tokenizer: the target tokenizer; ``None`` (or a corpus without targets) gives no ``labels``.
        annotator: the parser of the sources (``annotate(texts)``); unused when ``syntax_inputs`` is empty.
        syntax_inputs: the syntax keys to emit (``{feature}_ids``, ``dep_tin`` / ``dep_tout`` / ``syntax_tree``).
        max_source_length: source pieces kept, ``</s>`` included (longer sources are truncated).
        max_target_length: target pieces kept, ``</s>`` included.
        show_progress: progress bar over the pairs.

    Returns:
        one dict per pair: ``input_ids`` ``[L]``, each syntax input ``[L]`` (feature ids 0 and dependency tensors
        -1 at ``</s>``), ``labels`` ``[T]`` when there are targets.
    """
    if max_source_length < 2 or max_target_length < 2:
        raise ConfigError(
            "max_source_length and max_target_length must be at least 2, got "
            f"{max_source_length} and {max_target_length}"
        )
    features = [k[: -len("_ids")] for k in syntax_inputs if k.endswith("_ids") and k[: -len("_ids")] in FEATURES]
    dependency = [k for k in DEPENDENCY_KEYS if k in syntax_inputs]
    unknown = sorted(set(syntax_inputs) - {f"{f}_ids" for f in features} - set(dependency))
    if unknown:
        raise ConfigError(
            f"translation featurization cannot emit {unknown}; it knows "
            f"{[f'{f}_ids' for f in FEATURES] + list(DEPENDENCY_KEYS)}"
        )
    sources, targets, name = (
        (list(corpus), None, "sources")
        if isinstance(corpus, (list, tuple))
        else (corpus.sources, corpus.targets, corpus.name)
    )
    labels = None
    if target_tokenizer is not None and targets is not None:
        labels = target_tokenizer(targets, truncation=True, max_length=max_target_length)["input_ids"]
    out: list[dict[str, np.ndarray]] = []
    if sources and not features and not dependency:  # no parse needed: the tokenizer alone
        ids = source_tokenizer(sources, truncation=True, max_length=max_source_length)["input_ids"]
        out = [{"input_ids": np.asarray(row, dtype=np.int64)} for row in ids]
    elif sources:
        docs = annotator.annotate(sources)
        aligner = SyntaxAligner(source_tokenizer, max_length=max_source_length)
        disable = None if show_progress else True
        with progress(total=len(sources), desc=f"encoding {name or 'corpus'}", unit="pair", disable=disable) as bar:
            for start in range(0, len(sources), 1024):
                chunk = docs[start : start + 1024]
                for k, windows in enumerate(aligner.align_batch(chunk)):
                    ex = windows[0]
                    item = {"input_ids": np.asarray(ex.input_ids, dtype=np.int64)}
                    # a source with no words (e.g. whitespace only) gets feature ids 0 and dependency tensors -1
                    if features:
                        item.update(subword_feature_ids(ex, forest_words([chunk[k]]), features))
                    if dependency:
                        syn = encode_syntax(ex, criterion="share", max_distance=1, constituency=False)
                        item.update({key: syn[key].astype(np.int64) for key in dependency})
                    out.append(item)
                bar.update(len(chunk))
    for item, row in zip(out, labels or []):
        item["labels"] = np.asarray(row, dtype=np.int64)
    return out


def collate_pairs(
    items: Sequence[Mapping[str, np.ndarray]], pad_token_id: int = 0, decoder_start_token_id: int | None = None
) -> dict[str, Any]:
    """Right-pad pair arrays to ``[B, L]`` / ``[B, T]`` tensors (:data:`PAD_VALUES`), add ``attention_mask``
    (1 = real token) and, with labels and ``decoder_start_token_id``, ``decoder_input_ids`` (``<s>`` + labels
    shifted right, padding as ``pad_token_id``): the Trainer's label smoother takes the labels away from the model,
    which then needs its decoder input in the batch."""
    batch: dict[str, Any] = pad_arrays(items, pad_token_id, pad_values=PAD_VALUES, default_pad=0)
    lengths = torch.tensor([len(it["input_ids"]) for it in items])
    batch["attention_mask"] = (torch.arange(batch["input_ids"].shape[1]).unsqueeze(0) < lengths.unsqueeze(1)).long()
    if "labels" in batch and decoder_start_token_id is not None:
        labels = batch["labels"]
        shifted = torch.full_like(labels, pad_token_id)  # (B, T)
        shifted[:, 0] = decoder_start_token_id
        shifted[:, 1:] = labels[:, :-1].masked_fill(labels[:, :-1] == -100, pad_token_id)
        batch["decoder_input_ids"] = shifted
    return batch


def decode_translations(ids: Any, target_tokenizer: Any) -> list[str]:
    """Generated target ids ``[N, T]`` (padded with -100 or the pad id) -> detokenised, stripped texts."""
    ids = np.asarray(ids)
    pad = target_tokenizer.pad_token_id or 0
    ids = np.where(ids < 0, pad, ids)
    return [t.strip() for t in target_tokenizer.batch_decode(ids.tolist(), skip_special_tokens=True)]
