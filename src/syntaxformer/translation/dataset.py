"""Model inputs for translation: parse the sources (once, cached), align subwords, add syntax features, batch.

:func:`encode_corpus` turns a :class:`~syntaxformer.translation.data.ParallelCorpus` into one dict of arrays per
pair: ``input_ids`` (source pieces + ``</s>``), the per-subword feature ids (``upos_ids``, ``xpos_ids``,
``case_ids``, ``subword_ids``; 0 at ``</s>``), the compact dependency tensors of the SG-Net layer (``dep_tin``,
``dep_tout``, ``syntax_tree``; -1 at ``</s>``), and ``labels`` (target pieces + ``</s>``) when there are targets.
Every array is ``O(L)``; masks are built in the model. :func:`collate` pads a list of them and
:func:`length_batches` groups pairs of similar length.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
import torch

from syntaxformer.data.subword_features import FEATURES, forest_words, subword_feature_ids
from syntaxformer.errors import SyntaxformerError
from syntaxformer.translation.data import ParallelCorpus
from syntaxformer.utils import progress

#: Padding of each batch key (keys not listed pad with 0).
PAD_VALUES = {"labels": -100, "dep_tin": -1, "dep_tout": -1, "syntax_tree": -1}


def parse_sources(sources: Sequence[str], annotator: Any = None) -> list:
    """spaCy parses of the source sentences (one :class:`~syntaxformer.data.sentence.Document` each), cached.

    Args:
        sources: raw source sentences.
        annotator: an :class:`~syntaxformer.data.annotators.Annotator` or any spec of
            :func:`~syntaxformer.data.annotators.make_annotator`; default the English spaCy pipeline with the
            default persistent cache (``$SYNTAXFORMER_CACHE`` or ``~/.cache/syntaxformer``).
    """
    from syntaxformer.data.annotators import make_annotator

    return make_annotator(annotator, batch_size=512).annotate(sources)


def encode_corpus(corpus: ParallelCorpus, source_tokenizer: Any, target_tokenizer: Any | None = None,
                  annotator: Any = None, max_source_length: int = 128, max_target_length: int = 128,
                  features: Sequence[str] = FEATURES, show_progress: bool = True) -> list[dict[str, np.ndarray]]:
    """Arrays of every pair (see the module docstring).

    Args:
        corpus: sources (and targets).
        source_tokenizer: the source fast tokenizer (``</s>`` appended, see :mod:`.tokenizer`).
        target_tokenizer: the target tokenizer; ``None`` (or a corpus without targets) gives no ``labels``.
        annotator: spaCy annotator for the sources (default: see :func:`parse_sources`).
        max_source_length: source pieces kept, ``</s>`` included (longer sources are truncated).
        max_target_length: target pieces kept, ``</s>`` included.
        features: per-subword features to compute (all by default; models read the ones they use).
        show_progress: progress bar over the pairs.
    """
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.encode import encode_syntax

    if max_source_length < 2 or max_target_length < 2:
        raise SyntaxformerError("max_source_length and max_target_length must be at least 2")
    docs = parse_sources(corpus.sources, annotator)
    aligner = SyntaxAligner(source_tokenizer, max_length=max_source_length)
    labels = None
    if target_tokenizer is not None and corpus.targets is not None:
        labels = target_tokenizer(corpus.targets, truncation=True, max_length=max_target_length)["input_ids"]
    out: list[dict[str, np.ndarray]] = []
    block = 1024
    with progress(total=len(corpus), desc=f"encoding {corpus.name or 'corpus'}", unit="pair",
                  disable=None if show_progress else True) as bar:
        for start in range(0, len(corpus), block):
            chunk = docs[start:start + block]
            for k, windows in enumerate(aligner.align_batch(chunk)):
                i = start + k
                ex = windows[0]
                item: dict[str, np.ndarray] = {"input_ids": np.asarray(ex.input_ids, dtype=np.int64)}
                if len(ex.forest) == 0:  # nothing parsed (e.g. whitespace only): features and syntax stay empty
                    L = len(ex)
                    item.update({f"{f}_ids": np.zeros(L, dtype=np.int64) for f in features})
                    item.update({k2: np.full(L, -1, dtype=np.int64) for k2 in ("dep_tin", "dep_tout", "syntax_tree")})
                else:
                    item.update(subword_feature_ids(ex, forest_words([chunk[k]]), features))
                    syn = encode_syntax(ex, criterion="share", max_distance=1, constituency=False)
                    for key in ("dep_tin", "dep_tout", "syntax_tree"):
                        item[key] = syn[key].astype(np.int64)
                if labels is not None:
                    item["labels"] = np.asarray(labels[i], dtype=np.int64)
                out.append(item)
            bar.update(len(chunk))
    return out


def collate(items: Sequence[dict[str, np.ndarray]], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Right-pad a list of pair arrays to ``[B, L]`` tensors and add ``attention_mask`` (1 = real token)."""
    if not items:
        raise SyntaxformerError("cannot collate an empty batch")
    batch: dict[str, torch.Tensor] = {}
    for key in items[0]:
        L = max(len(it[key]) for it in items)
        pad = pad_token_id if key == "input_ids" else PAD_VALUES.get(key, 0)
        arr = np.full((len(items), L), pad, dtype=np.int64)
        for b, it in enumerate(items):
            arr[b, :len(it[key])] = it[key]
        batch[key] = torch.from_numpy(arr)
    ids = batch["input_ids"]
    lengths = torch.tensor([len(it["input_ids"]) for it in items])
    batch["attention_mask"] = (torch.arange(ids.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)).long()
    return batch


def length_batches(lengths: Sequence[int], batch_size: int, shuffle: bool, seed: int = 0,
                   bucket: int = 50) -> list[list[int]]:
    """Indices grouped into batches of similar length.

    With ``shuffle``: a seeded permutation is cut into chunks of ``bucket * batch_size`` pairs, each chunk is
    sorted by length and cut into batches, and the batches are shuffled. Without: batches of the pairs sorted by
    length (longest first, so memory problems show at once); callers restore the original order themselves.
    """
    n = len(lengths)
    if batch_size < 1:
        raise SyntaxformerError(f"batch_size must be positive, got {batch_size}")
    lengths = np.asarray(lengths)
    if not shuffle:
        order = np.argsort(-lengths, kind="stable")
        return [order[i:i + batch_size].tolist() for i in range(0, n, batch_size)]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    batches: list[list[int]] = []
    step = bucket * batch_size
    for s in range(0, n, step):
        chunk = perm[s:s + step]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i:i + batch_size].tolist() for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)  # type: ignore[arg-type]
    return batches


def iterate_forever(lengths: Sequence[int], batch_size: int, seed: int) -> Iterator[tuple[int, list[int]]]:
    """``(epoch, batch indices)`` over endless shuffled epochs (epoch ``e`` shuffled with seed ``seed + e``)."""
    epoch = 0
    while True:
        for b in length_batches(lengths, batch_size, True, seed + epoch):
            yield epoch, b
        epoch += 1
