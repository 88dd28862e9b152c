"""Batching: pad per-example arrays (token ids + compact syntax tensors) into a dict of batched tensors.

Padding conventions (the mask builders rely on them): ``input_ids`` with the tokenizer's pad id,
``attention_mask`` with 0, ``token_type_ids`` with 0, and every syntax array with -1 — so a padded position has
``syntax_tree == -1`` and is treated like a special token: it attends to itself only and nobody attends to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from syntaxformer.data.align import AlignedExample
from syntaxformer.errors import InputError

# Arrays whose padding value is not -1.
_PAD_VALUES = {"attention_mask": 0, "token_type_ids": 0}


def example_arrays(
    example: AlignedExample, criterion: str = "share", max_distance: int = 15, constituency: bool = True
) -> dict[str, np.ndarray]:
    """Token arrays plus compact syntax tensors of one window (see :func:`syntaxformer.data.encode.encode_syntax`)."""
    from syntaxformer.data.encode import encode_syntax

    out: dict[str, np.ndarray] = {
        "input_ids": np.asarray(example.input_ids, dtype=np.int64),
        "attention_mask": np.ones(len(example), dtype=np.int64),
    }
    if example.token_type_ids is not None:
        out["token_type_ids"] = np.asarray(example.token_type_ids, dtype=np.int64)
    out.update(encode_syntax(example, criterion=criterion, max_distance=max_distance, constituency=constituency))
    return out


def pad_arrays(
    features: Sequence[Mapping[str, np.ndarray]], pad_token_id: int = 0, pad_to_multiple_of: int | None = None
) -> dict[str, torch.Tensor]:
    """Pad a list of per-example dicts of arrays (first dimension = sequence length) into batched tensors.

    Args:
        features: one dict per example; all dicts have the same keys. Scalars (0-d arrays, e.g. labels) are
            stacked, arrays are right-padded along their first dimension.
        pad_token_id: padding value for ``input_ids``.
        pad_to_multiple_of: round the padded length up (helps tensor cores / fused kernels).

    Returns:
        dict of tensors ``[B, L, ...]`` (``[B]`` for scalars).
    """
    if not features:
        raise InputError("cannot collate an empty list of examples")
    keys = list(features[0].keys())
    for f in features[1:]:
        if list(f.keys()) != keys and set(f.keys()) != set(keys):
            raise InputError(f"examples have different fields: {sorted(keys)} vs {sorted(f.keys())}")
    lengths = [len(f["input_ids"]) for f in features]
    L = max(lengths)
    if pad_to_multiple_of:
        L = -(-L // pad_to_multiple_of) * pad_to_multiple_of
    batch: dict[str, torch.Tensor] = {}
    for key in keys:
        first = np.asarray(features[0][key])
        if first.dtype.kind in "USO":
            raise InputError(
                f"field {key!r} holds {first.dtype.name} values ({features[0][key]!r:.40}), not numbers: "
                "it is not a model input; drop it (e.g. ds.remove_columns([...]), or the Trainer's "
                "remove_unused_columns=True) before collating"
            )
        if first.ndim == 0:
            batch[key] = torch.as_tensor(np.stack([np.asarray(f[key]) for f in features]))
            continue
        pad = pad_token_id if key == "input_ids" else _PAD_VALUES.get(key, -1)
        out = np.full((len(features), L) + first.shape[1:], pad, dtype=first.dtype)
        for b, f in enumerate(features):
            a = np.asarray(f[key])
            out[b, : len(a)] = a
        batch[key] = torch.from_numpy(out)
    return batch


@dataclass
class SyntaxCollator:
    """``DataCollator`` for ``torch.utils.data.DataLoader`` / ``transformers.Trainer``.

    Accepts :class:`AlignedExample` objects (encoded on the fly) or dicts already produced by
    :func:`example_arrays` (plus any scalar fields such as ``labels``). As ``DataCollatorWithPadding`` does, a
    ``label`` or ``label_ids`` field is passed on as ``labels`` (the name the models and the ``Trainer`` read).

    Args:
        pad_token_id: the tokenizer's pad id.
        criterion: subword criterion, ``"share"`` (pieces share their word's head; SG-Net default) or
            ``"children"`` (pieces 2..n are children of piece 1).
        max_distance: largest tree distance D of the relation tables (Syntax-BERT default 15).
        constituency: include constituency tensors.
        pad_to_multiple_of: round the padded length up.
    """

    pad_token_id: int = 0
    criterion: str = "share"
    max_distance: int = 15
    constituency: bool = True
    pad_to_multiple_of: int | None = None

    def __call__(self, examples: Sequence[AlignedExample | Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        feats = [
            example_arrays(e, self.criterion, self.max_distance, self.constituency)
            if isinstance(e, AlignedExample)
            else {_LABEL_NAMES.get(k, k): np.asarray(v) for k, v in e.items()}
            for e in examples
        ]
        return pad_arrays(feats, self.pad_token_id, self.pad_to_multiple_of)


#: Label field names of datasets / other collators and the batch key the models read.
_LABEL_NAMES = {"label": "labels", "label_ids": "labels"}
