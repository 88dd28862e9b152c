"""No secret at rest: what a run writes (``run.json``, ``run_fingerprint.json``, the model card,
``training_args.bin``) never holds an access token.

:func:`redact_secrets` blanks every field whose name ends in ``_token`` (``hub_token`` ...; ``transformers``
redacts the same fields in ``TrainingArguments.to_dict()``) and every ``hf_...`` token found in a string.
:func:`redacting_arguments` makes ``TrainingArguments`` pickle (``training_args.bin``, in the run folder and in
every checkpoint) without them, while the running Trainer keeps the token it pushes with.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "redact_secrets", "redacting_arguments"]

#: What a secret is replaced with in the files a run writes.
REDACTED = "<REDACTED>"
#: A Hugging Face access token (``hf_`` and at least 30 letters or digits).
_HF_TOKEN = re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])")
#: A command-line option whose name ends in ``token`` and its value (``--hub_token X``, ``--hub-token=X``).
_TOKEN_OPTION = re.compile(r"(--[\w-]*?[_-]?token)(=|\s+)('[^']*'|\"[^\"]*\"|\S+)", re.IGNORECASE)


def _secret_key(key: Any) -> bool:
    return isinstance(key, str) and key.endswith("_token")


def redact_secrets(value: Any, replacement: Any = REDACTED) -> Any:
    """``value`` with its secrets replaced: in mappings (at any depth) the non-empty string of every key ending
    in ``_token`` becomes ``replacement``, and in every string an ``hf_...`` token and the value after a
    command-line option ending in ``token`` (``--hub_token X``) become :data:`REDACTED`. Lists and tuples are
    walked; other values are returned as they are. The input is not changed."""
    if isinstance(value, str):
        return _HF_TOKEN.sub(REDACTED, _TOKEN_OPTION.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", value))
    if isinstance(value, Mapping):
        return {
            k: replacement if _secret_key(k) and isinstance(v, str) and v else redact_secrets(v, replacement)
            for k, v in value.items()
        }
    if type(value) in (list, tuple):
        return type(value)(redact_secrets(v, replacement) for v in value)
    return value


class _Redacting:
    """Mixed into a ``TrainingArguments`` class: pickled (``torch.save``) as the plain class, its secrets
    ``None``; copies keep both the class and the secrets."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        base = next(c for c in type(self).__mro__[1:] if not issubclass(c, _Redacting))
        return object.__new__, (base,), redact_secrets(dict(self.__dict__), None)

    def __copy__(self) -> Any:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new


_CLASSES: dict[type, type] = {}


def redacting_arguments(args: Any) -> Any:
    """``args`` (a ``TrainingArguments``), changed in place to pickle without its ``*_token`` fields (the
    ``training_args.bin`` the Trainer saves loads as a plain ``TrainingArguments`` whose tokens are ``None``)."""
    cls = type(args)
    if not isinstance(args, _Redacting):
        if cls not in _CLASSES:
            _CLASSES[cls] = type(cls.__name__, (_Redacting, cls), {"__module__": cls.__module__})
        args.__class__ = _CLASSES[cls]
    return args
