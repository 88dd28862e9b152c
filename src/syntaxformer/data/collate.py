"""Model inputs: one aligned window -> the arrays a model reads, and batches of them.

:func:`encode_syntax` makes the compact O(L) syntax arrays of a window, from which :mod:`syntaxformer.masks` rebuilds
every mask on the model's device (nothing L x L is stored); :func:`example_arrays` adds the token arrays,
:func:`window_arrays` keeps only the inputs a model declares; :func:`pad_arrays` and :class:`SyntaxCollator` pad them
into batches (``input_ids`` with the pad id, ``attention_mask`` and ``token_type_ids`` with 0, syntax arrays with -1,
so padding is treated like a special token: it attends to itself only and nobody attends to it). Values are computed
on the *whole* example (all sentences, the full tokenization given by ``n_pieces``), so a window cut from a long
passage gets exactly the values its positions have in the full example.

Subword criteria (SG-Net, TPAMI section 5.1): ``"share"`` (default): all pieces of a word are the word's node;
``"children"``: node ``(w, 0)`` takes word ``w``'s place and pieces ``(w, k > 0)`` are its children (a word with
``n_pieces == 0`` keeps an invisible node ``(w, 0)``, so the ancestry of its dependents stays correct).

Dependency arrays (``L`` = window length, ``D`` = ``max_distance``; -1 at special tokens):

* ``syntax_tree``, ``syntax_segment`` ``[L]``: sentence (tree) id in the example, text id (0 / 1).
* ``dep_tin``, ``dep_tout`` ``[L]``: pre-order Euler interval of the position's node in the dependency forest of the
  whole example; ``j`` is an ancestor-or-self of ``i`` iff ``dep_tin[j] <= dep_tin[i] <= dep_tout[j]``, and
  ``dep_tin`` is the node's key (same key = same node).
* ``dep_depth`` ``[L]``: depth of the node (root = 0).
* ``dep_parent`` ``[L]``: window position of the parent node's first visible piece; -1 for roots and parents
  outside the window or without a visible piece.
* ``dep_anc_lo``, ``dep_anc_hi``, ``dep_anc_head`` ``[L, D]``: column ``k - 1`` holds the k-th proper ancestor's
  Euler interval and key; a missing ancestor is the empty interval ``lo = 0, hi = -1`` with head -1.

The constituency arrays (:data:`CONSTITUENCY_KEYS`) are documented by
:func:`syntaxformer.data.constituency.encode_constituency`, the relations read off both in
:mod:`syntaxformer.masks.relations`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from syntaxformer.data.align import AlignedExample
from syntaxformer.data.sentence import on_demand
from syntaxformer.data.tree import depths, euler_tour
from syntaxformer.errors import AlignmentError, ConfigError, InputError

CRITERIA = ("share", "children")

#: Names of the arrays returned by :func:`encode_syntax` (all ``[L]`` or ``[L, D]``; padded with -1 by the
#: collator).
DEPENDENCY_KEYS = (
    "syntax_tree",
    "syntax_segment",
    "dep_tin",
    "dep_tout",
    "dep_depth",
    "dep_parent",
    "dep_anc_lo",
    "dep_anc_hi",
    "dep_anc_head",
)
CONSTITUENCY_KEYS = ("con_key", "con_depth", "con_anc_lo", "con_anc_hi", "con_anc_head")

_DTYPE = np.int32


def encode_syntax(
    example: AlignedExample, criterion: str = "share", max_distance: int = 15, constituency: bool = True
) -> dict[str, np.ndarray]:
    """Compact syntax arrays of one window (no L x L array anywhere).

    Args:
        example: one aligned window; ``word_index`` / ``piece_index`` refer to ``example.forest`` and to the
            full tokenization described by ``n_pieces``.
        criterion: subword criterion, ``"share"`` (SG-Net default) or ``"children"``; see the module docstring.
            Constituency arrays always use ``"share"``.
        max_distance: D, the number of ancestor columns (Syntax-BERT's largest tree distance, 15 in the paper).
        constituency: also compute the ``con_*`` arrays.

    Returns:
        dict of int32 arrays: :data:`DEPENDENCY_KEYS` (``[L]`` or ``[L, D]``) and, if ``constituency``,
        :data:`CONSTITUENCY_KEYS`. See the module docstring for their meaning.

    Raises:
        ConfigError: unknown criterion or ``max_distance < 1``.
        AlignmentError: positions that refer to words or pieces that do not exist.
    """
    if criterion not in CRITERIA:
        raise ConfigError(f"unknown subword criterion {criterion!r}; expected one of {CRITERIA}")
    if int(max_distance) < 1:
        raise ConfigError(f"max_distance must be >= 1, got {max_distance}")
    D = int(max_distance)
    forest = example.forest
    heads = np.asarray(forest.heads, dtype=np.int64)
    W = len(heads)
    word_index = np.asarray(example.word_index, dtype=np.int64).reshape(-1)
    piece_index = np.asarray(example.piece_index, dtype=np.int64).reshape(-1)
    L = len(word_index)
    if len(piece_index) != L:
        raise AlignmentError(f"word_index has {L} positions but piece_index has {len(piece_index)}")
    vis = word_index >= 0
    if np.any(word_index >= W) or np.any(word_index < -1):
        bad = int(np.flatnonzero((word_index >= W) | (word_index < -1))[0])
        raise AlignmentError(f"position {bad} refers to word {int(word_index[bad])}, but the example has {W} words")
    n_pieces = np.asarray(example.n_pieces, dtype=np.int64).reshape(-1)
    if len(n_pieces) != W:
        raise AlignmentError(f"n_pieces has {len(n_pieces)} entries for {W} words")

    out = _empty(L, D, constituency)
    if not vis.any():
        return out
    pos = np.flatnonzero(vis)
    words = word_index[pos]
    pieces = piece_index[pos]
    if np.any(pieces < 0):
        bad = int(pos[np.flatnonzero(pieces < 0)[0]])
        raise AlignmentError(f"position {bad} belongs to word {int(word_index[bad])} but has piece_index -1")

    tree_id = np.asarray(forest.tree_id, dtype=np.int64)
    segment = np.asarray(forest.segment, dtype=np.int64)
    a, b, bounds, run_ids = _word_range(tree_id, words)
    _check_heads_in_range(heads, tree_id, a, b)

    # -- node-level dependency forest over words a..b-1 (only the sentences the window touches) -------------
    if criterion == "share":
        node_heads = np.where(heads[a:b] >= 0, heads[a:b] - a, -1)
        offset = a
        word_node = np.arange(b - a)  # node (w, 0) of every word in the range
        pos_node = words - a
    else:
        extra = np.maximum(n_pieces - 1, 0)
        weight = 1 + extra  # nodes per word: (w, 0) and (w, 1..n-1)
        prefix = np.concatenate([[0], np.cumsum(weight)])
        offset = int(prefix[a])
        word_node = prefix[a:b] - offset
        n_nodes = int(prefix[b] - offset)
        node_heads = np.empty(n_nodes, dtype=np.int64)
        hw = heads[a:b]
        node_heads[word_node] = np.where(hw >= 0, word_node[np.maximum(hw - a, 0)], -1)
        piece_owner = np.repeat(word_node, extra[a:b])  # for (w, k>0): the node (w, 0)
        is_piece = np.ones(n_nodes, dtype=bool)
        is_piece[word_node] = False
        piece_node = np.flatnonzero(is_piece)
        node_heads[piece_node] = piece_owner
        too_far = pieces >= np.maximum(n_pieces[words], 1)
        if np.any(too_far):
            bad = int(pos[np.flatnonzero(too_far)[0]])
            raise AlignmentError(
                f"position {bad} is piece {int(piece_index[bad])} of word {int(word_index[bad])}, which has only "
                f"{int(n_pieces[word_index[bad]])} pieces in the full tokenization (n_pieces)"
            )
        pos_node = word_node[words - a] + pieces

    tin, tout = euler_tour(node_heads)
    depth = depths(node_heads)
    anc = _ancestor_table(node_heads, D)  # [N, D] node ids, -1 missing

    out["syntax_tree"][pos] = tree_id[words]
    out["syntax_segment"][pos] = segment[words]
    out["dep_tin"][pos] = tin[pos_node] + offset
    out["dep_tout"][pos] = tout[pos_node] + offset
    out["dep_depth"][pos] = depth[pos_node]
    pa = anc[pos_node]  # [P, D]
    has = pa >= 0
    pa0 = np.maximum(pa, 0)
    out["dep_anc_lo"][pos] = np.where(has, tin[pa0] + offset, 0)
    out["dep_anc_hi"][pos] = np.where(has, tout[pa0] + offset, -1)
    out["dep_anc_head"][pos] = np.where(has, tin[pa0] + offset, -1)

    # first visible position of every node, to point at the parent
    first = np.full(len(node_heads), L, dtype=np.int64)
    np.minimum.at(first, pos_node, pos)
    parent = node_heads[pos_node]
    par_pos = np.where(parent >= 0, first[np.maximum(parent, 0)], L)
    out["dep_parent"][pos] = np.where(par_pos < L, par_pos, -1)

    if constituency:
        word_depth = depth[word_node]  # word-level depth = depth of node (w, 0) under both criteria
        encode = on_demand("constituency").encode_constituency  # constituency trees: only models that read them
        encode(out, forest.trees, bounds, run_ids, a, b, word_depth, pos, words, D)
    return out


def _empty(L: int, D: int, constituency: bool) -> dict[str, np.ndarray]:
    """Every array of a window with no visible word: ``[L]`` arrays -1, ancestor tables the empty interval."""
    keys = DEPENDENCY_KEYS + (CONSTITUENCY_KEYS if constituency else ())
    return {k: np.full((L, D) if "_anc_" in k else L, 0 if k.endswith("_anc_lo") else -1, dtype=_DTYPE) for k in keys}


def _word_range(tree_id: np.ndarray, words: np.ndarray) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Word range ``[a, b)`` of the sentences the window touches, with those sentences' bounds and ids."""
    if np.any(np.diff(tree_id) < 0):
        bad = int(np.flatnonzero(np.diff(tree_id) < 0)[0]) + 1
        raise AlignmentError(
            f"forest word {bad} has tree_id {int(tree_id[bad])} after {int(tree_id[bad - 1])}; the words of a "
            f"sentence must be contiguous and sentences in increasing tree_id order"
        )
    starts = np.concatenate([[0], np.flatnonzero(np.diff(tree_id)) + 1])  # sentences: runs of equal tree_id
    bounds, ids = np.append(starts, len(tree_id)), tree_id[starts]
    r_lo = int(np.searchsorted(bounds, words.min(), side="right")) - 1
    r_hi = int(np.searchsorted(bounds, words.max(), side="right")) - 1
    return int(bounds[r_lo]), int(bounds[r_hi + 1]), bounds[r_lo : r_hi + 2], ids[r_lo : r_hi + 1]


def _check_heads_in_range(heads: np.ndarray, tree_id: np.ndarray, a: int, b: int) -> None:
    h = heads[a:b]
    bad = (h < -1) | (h >= len(heads))
    ok = ~bad & (h >= 0)
    bad[ok] = tree_id[h[ok]] != tree_id[a:b][ok]
    if np.any(bad):
        w = a + int(np.flatnonzero(bad)[0])
        raise AlignmentError(
            f"word {w} (sentence {int(tree_id[w])}) has head {int(heads[w])}, which is not a word of the same "
            f"sentence; heads must be forest indices of words of the same sentence, or -1 for a root"
        )


def _ancestor_table(heads: np.ndarray, D: int) -> np.ndarray:
    """``[N, D]``: column ``k - 1`` holds the k-th proper ancestor of every node, -1 if none."""
    n = len(heads)
    anc = np.full((n, D), -1, dtype=np.int64)
    cur = heads.astype(np.int64)
    for k in range(D):
        anc[:, k] = cur
        if not np.any(cur >= 0):
            break
        cur = np.where(cur >= 0, heads[np.maximum(cur, 0)], -1)
    return anc


# Arrays whose padding value is not -1.
_PAD_VALUES = {"attention_mask": 0, "token_type_ids": 0}


def example_arrays(
    example: AlignedExample, criterion: str = "share", max_distance: int = 15, constituency: bool = True
) -> dict[str, np.ndarray]:
    """Token arrays plus compact syntax tensors of one window (see :func:`encode_syntax`)."""
    out: dict[str, np.ndarray] = {
        "input_ids": np.asarray(example.input_ids, dtype=np.int64),
        "attention_mask": np.ones(len(example), dtype=np.int64),
    }
    if example.token_type_ids is not None:
        out["token_type_ids"] = np.asarray(example.token_type_ids, dtype=np.int64)
    out.update(encode_syntax(example, criterion=criterion, max_distance=max_distance, constituency=constituency))
    return out


def pad_arrays(
    features: Sequence[Mapping[str, np.ndarray]],
    pad_token_id: int = 0,
    pad_to_multiple_of: int | None = None,
    pad_values: Mapping[str, int] = _PAD_VALUES,
    default_pad: int = -1,
) -> dict[str, torch.Tensor]:
    """Pad a list of per-example dicts of arrays (first dimension = sequence length) into batched tensors.

    Args:
        features: one dict per example; all dicts have the same keys. Scalars (0-d arrays, e.g. labels) are
            stacked, arrays are right-padded along their first dimension to the longest of their key.
        pad_token_id: padding value for ``input_ids``.
        pad_to_multiple_of: round the padded length up (helps tensor cores / fused kernels).
        pad_values: padding value of other keys (default: the module docstring's convention); keys not in it pad
            with ``default_pad``.

    Returns:
        dict of tensors ``[B, L, ...]`` (``[B]`` for scalars).
    """
    if not features:
        raise InputError("cannot collate an empty batch (an empty list of examples)")
    keys = list(features[0].keys())
    for f in features[1:]:
        if list(f.keys()) != keys and set(f.keys()) != set(keys):
            raise InputError(f"examples have different fields: {sorted(keys)} vs {sorted(f.keys())}")
    batch: dict[str, torch.Tensor] = {}
    for key in keys:
        arrays = [np.asarray(f[key]) for f in features]
        if arrays[0].dtype.kind in "USO":
            raise InputError(
                f"field {key!r} holds {arrays[0].dtype.name} values ({features[0][key]!r:.40}), not numbers: "
                "it is not a model input; drop it (e.g. ds.remove_columns([...]), or the Trainer's "
                "remove_unused_columns=True) before collating"
            )
        if arrays[0].ndim == 0:
            batch[key] = torch.as_tensor(np.stack(arrays))
            continue
        L = max(len(a) for a in arrays)  # every key to its own longest (translation labels are not L long)
        if pad_to_multiple_of:
            L = -(-L // pad_to_multiple_of) * pad_to_multiple_of
        pad = pad_token_id if key == "input_ids" else pad_values.get(key, default_pad)
        out = np.full((len(features), L) + arrays[0].shape[1:], pad, dtype=arrays[0].dtype)
        for b, a in enumerate(arrays):
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
        criterion: subword criterion, ``"share"`` (default) or ``"children"`` (see the module docstring).
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


def window_arrays(
    window: Any,
    syntax_inputs: Sequence[str],
    criterion: str = "share",
    max_distance: int = 15,
    pos_tags: str | None = None,
) -> dict[str, Any]:
    """The model inputs of one aligned window (:class:`~syntaxformer.data.align.AlignedExample`): the
    :data:`TOKEN_KEYS` and the ``syntax_inputs`` the model reads, nothing else.

    Built with :func:`example_arrays` (``criterion``; ``max_distance`` only when an ``[L, D]`` ancestor table is
    asked for; constituency arrays only when a ``con_*`` key is); ``pos_ids``: the ``pos_tags`` (default
    ``"upos"``) id of each subword's word (:func:`syntaxformer.data.subword_features.subword_feature_ids`).

    Raises:
        ConfigError: the model asks for a syntax input that the encoder does not make.
    """
    wants_table = any("_anc_" in k for k in syntax_inputs)
    constituency = any(k.startswith("con_") for k in syntax_inputs)
    arrays = example_arrays(window, criterion, max_distance if wants_table else 1, constituency)
    if "pos_ids" in syntax_inputs:
        tags = pos_tags or "upos"
        arrays["pos_ids"] = on_demand("subword_features").subword_feature_ids(window, None, [tags])[f"{tags}_ids"]
    missing = [k for k in syntax_inputs if k not in arrays]
    if missing:
        raise ConfigError(
            f"the model reads the syntax inputs {missing}, which syntax encoding does not "
            f"make (it makes {sorted(k for k in arrays if k not in TOKEN_KEYS)})"
        )
    return {k: arrays[k] for k in (*TOKEN_KEYS, *syntax_inputs) if k in arrays}
