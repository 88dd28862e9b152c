"""The keyword arguments a syntax model's ``forward`` accepts, and what happens to the others.

The models take their syntax tensors as keyword arguments named like the batch keys of
:class:`~syntaxformer.data.collate.SyntaxCollator` (:data:`SYNTAX_INPUT_KEYS`), so ``model(**batch)`` works. Two
rules follow:

* A keyword argument that is neither a parameter of ``forward`` nor a syntax batch key is a mistake (a misspelt key,
  ``label`` for ``labels``, a column of the user's data set): :func:`check_forward_inputs` raises an
  :class:`~syntaxformer.errors.InputError` that names it, instead of ignoring it. Syntax keys a model does not read
  (a collated batch has them all) are accepted and ignored; so is ``num_items_in_batch``, which a ``Trainer`` may
  pass (the models return per-batch mean losses and say so with ``accepts_loss_kwargs = False``).
* ``transformers.Trainer`` keeps only the data set columns that ``inspect.signature(model.forward)`` names
  (``remove_unused_columns=True``, its default). :func:`syntax_forward_signature` gives a ``forward`` that receives
  its syntax tensors as ``**kwargs`` a signature naming every syntax batch key, so a plain ``Trainer`` keeps them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import torch

from syntaxformer.errors import InputError
from syntaxformer.modeling.configuration_common import SYNTAX_INPUT_KEYS

__all__ = ["SYNTAX_INPUT_KEYS", "TOLERATED_KEYWORDS", "check_forward_inputs", "syntax_forward_signature"]

#: Keyword arguments the ``transformers`` machinery may pass that the syntax models accept and ignore.
TOLERATED_KEYWORDS: frozenset[str] = frozenset({"num_items_in_batch"})

F = TypeVar("F", bound=Callable[..., Any])

_SYNTAX_KEYS_DESCRIPTION = (
    "the syntax batch keys (syntax_tree, dep_tin, ...: syntaxformer.modeling.inputs.SYNTAX_INPUT_KEYS)"
)


def syntax_forward_signature(forward: F) -> F:
    """Decorator: the signature of ``forward`` with its ``**kwargs`` replaced by one keyword-only parameter (default
    ``None``) per syntax batch key (:data:`SYNTAX_INPUT_KEYS`) it does not already name.

    The function itself is unchanged (the syntax tensors still arrive in its ``**kwargs``); only what
    ``inspect.signature`` reports changes, which is what ``transformers.Trainer`` reads to decide which data set
    columns to keep.
    """
    signature = inspect.signature(forward)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    named = {p.name for p in params}
    params += [
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=torch.Tensor | None)
        for k in SYNTAX_INPUT_KEYS
        if k not in named
    ]
    forward.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return forward


def check_forward_inputs(
    model: Any,
    extra: Mapping[str, Any],
    accepted: Iterable[str] = SYNTAX_INPUT_KEYS,
    accepted_description: str = _SYNTAX_KEYS_DESCRIPTION,
) -> None:
    """Raise if ``extra`` (the ``**kwargs`` a ``forward`` received) has a key that is not a syntax input.

    Args:
        model: the model whose ``forward`` was called (named in the message).
        extra: the keyword arguments ``forward`` did not name.
        accepted: the extra keys it accepts (default: every syntax batch key); :data:`TOLERATED_KEYWORDS` are always
            accepted.
        accepted_description: how the message names ``accepted``.

    Raises:
        InputError: naming the unknown keys, the accepted ones, and what to do about the usual causes.
    """
    allowed = set(accepted) | TOLERATED_KEYWORDS
    unknown = sorted(k for k in extra if k not in allowed)
    if not unknown:
        return
    name = type(model).__name__
    params = [
        p for p in inspect.signature(type(model).forward).parameters if p != "self" and p not in SYNTAX_INPUT_KEYS
    ]
    hint = ""
    if "label" in unknown or "label_ids" in unknown:
        hint = " (the label key is 'labels': SyntaxCollator renames 'label' and 'label_ids' to it)"
    elif any(k in unknown for k in _LABEL_KEYS) and not any(k in params for k in _LABEL_KEYS):
        hint = " (labels are read by the task models, SGNetFor... / SyntaxBertFor..., not by a backbone)"
    raise InputError(
        f"{name}.forward got unexpected keyword arguments {unknown}{hint}; it accepts {params} and "
        f"{accepted_description}. Remove the other columns from the batch (e.g. a data set's text columns: "
        "ds.remove_columns([...]))"
    )


#: Target keys of the task heads (named in the hint when a backbone is given one).
_LABEL_KEYS = ("labels", "start_positions", "end_positions", "is_impossible")
