"""One aligned window -> the arrays a model reads: the token arrays and only the syntax inputs it declares.

:mod:`syntaxformer.tasks.featurize` (:func:`encode_window` for text (pair) examples),
:meth:`syntaxformer.tasks.base.TaskContext.window_arrays` (:func:`window_arrays`, for windows of passages and
options) and the pipeline of an exported model folder (:mod:`syntaxformer.sharing.syntax_pipeline`) all build a
model's inputs with these. This module imports only numpy and the data layer, so it can travel in an exported
model folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from syntaxformer.data.sentence import Document, Sentence, on_demand
from syntaxformer.errors import ConfigError

__all__ = ["TOKEN_KEYS", "encode_window", "window_arrays", "with_dependency_trees"]

#: The token arrays every example has (``token_type_ids`` where the tokenizer makes them).
TOKEN_KEYS: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids")


def encode_window(window: Any, context: Any) -> dict[str, np.ndarray]:
    """Arrays of one aligned window (:class:`~syntaxformer.data.align.AlignedExample`): the token arrays plus the
    syntax arrays in ``context.syntax_inputs`` (``pos_ids``: the ``context.pos_tags`` id of each subword's word),
    nothing else. ``context`` is anything with ``syntax_inputs``, ``criterion``, ``max_distance`` and
    ``pos_tags`` (a :class:`~syntaxformer.tasks.base.TaskContext`)."""
    from syntaxformer.data.collate import example_arrays

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
    from syntaxformer.data.collate import example_arrays

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
