"""Model inputs: one aligned window -> the arrays a model reads, and batches of them.

* :func:`example_arrays`: the token arrays and every compact syntax array of a window
  (:func:`syntaxformer.data.encode.encode_syntax`); :func:`encode_window` and :func:`window_arrays`: the token
  arrays and only the syntax inputs a model declares (what :mod:`syntaxformer.tasks.featurize`,
  :meth:`syntaxformer.tasks.base.TaskContext.window_arrays` and the pipeline of an exported model folder,
  :mod:`syntaxformer.sharing.syntax_pipeline`, build a model's inputs with).
* :func:`pad_arrays` and :class:`SyntaxCollator`: per-example arrays padded into a dict of batched tensors.

Padding conventions (the mask builders rely on them): ``input_ids`` with the tokenizer's pad id,
``attention_mask`` with 0, ``token_type_ids`` with 0, and every syntax array with -1 — so a padded position has
``syntax_tree == -1`` and is treated like a special token: it attends to itself only and nobody attends to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import torch

from syntaxformer.data.align import AlignedExample
from syntaxformer.data.sentence import Document, Sentence, on_demand
from syntaxformer.errors import ConfigError, InputError

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


#: The token arrays every example has (``token_type_ids`` where the tokenizer makes them).
TOKEN_KEYS: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids")


def encode_window(window: Any, context: Any) -> dict[str, np.ndarray]:
    """Arrays of one aligned window (:class:`~syntaxformer.data.align.AlignedExample`): the token arrays plus the
    syntax arrays in ``context.syntax_inputs`` (``pos_ids``: the ``context.pos_tags`` id of each subword's word),
    nothing else. ``context`` is anything with ``syntax_inputs``, ``criterion``, ``max_distance`` and
    ``pos_tags`` (a :class:`~syntaxformer.tasks.base.TaskContext`)."""
    wanted = set(context.syntax_inputs)
    want_con = any(k.startswith("con_") for k in wanted)
    arrays = example_arrays(window, context.criterion, context.max_distance, constituency=want_con)
    out = {k: v for k, v in arrays.items() if k in TOKEN_KEYS or k in wanted}
    if "pos_ids" in wanted:
        tags = context.pos_tags or "upos"
        out["pos_ids"] = on_demand("subword_features").subword_feature_ids(window, None, [tags])[f"{tags}_ids"]
    missing = wanted - set(out)
    if missing:
        raise ConfigError(
            f"the model reads syntax inputs {sorted(missing)} that featurization cannot make; "
            f"known: {sorted(set(arrays) - set(TOKEN_KEYS)) + ['pos_ids']}"
        )
    return out


def window_arrays(
    window: Any, syntax_inputs: Sequence[str], criterion: str = "share", max_distance: int = 15
) -> dict[str, Any]:
    """The model inputs of one aligned window (:class:`~syntaxformer.data.align.AlignedExample`): the
    :data:`TOKEN_KEYS` and the ``syntax_inputs`` the model reads, nothing else.

    Built with :func:`syntaxformer.data.collate.example_arrays` (``criterion``; ``max_distance`` only when an
    ``[L, D]`` ancestor table is asked for; constituency arrays only when a ``con_*`` key is).

    Raises:
        ConfigError: the model asks for a syntax input that the encoder does not make.
    """
    wants_table = any("_anc_" in k for k in syntax_inputs)
    constituency = any(k.startswith("con_") for k in syntax_inputs)
    arrays = example_arrays(window, criterion, max_distance if wants_table else 1, constituency)
    missing = [k for k in syntax_inputs if k not in arrays]
    if missing:
        raise ConfigError(
            f"the model reads the syntax inputs {missing}, which syntax encoding does not "
            f"make (it makes {sorted(k for k in arrays if k not in TOKEN_KEYS)})"
        )
    return {k: arrays[k] for k in (*TOKEN_KEYS, *syntax_inputs) if k in arrays}


@overload
def with_dependency_trees(doc: Document) -> Document: ...


@overload
def with_dependency_trees(doc: Sentence) -> Sentence: ...


def with_dependency_trees(doc: Document | Sentence) -> Document | Sentence:
    """``doc`` with a constituency tree read off the dependency tree of every sentence that has none."""
    dependency_to_constituency = on_demand("constituency").dependency_to_constituency

    def fill(s: Sentence) -> Sentence:
        if s.tree is not None:
            return s
        return dataclasses.replace(s, tree=dependency_to_constituency(s.words, s.heads, s.upos))

    if isinstance(doc, Sentence):
        return fill(doc)
    return Document([fill(s) for s in doc.sentences], text=doc.text, doc_id=doc.doc_id, metadata=dict(doc.metadata))
