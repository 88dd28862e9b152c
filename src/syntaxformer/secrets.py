"""No secret at rest: what a run writes (``run.json``, the model card, ``training_args.bin`` ...) never holds an
access token (:func:`redact_secrets`, :func:`redacting_arguments`), and a command that needs one to push finds out
before any work (:func:`check_hub_push`).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from typing import Any

from huggingface_hub import constants, get_token
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from syntaxformer.errors import ConfigError

__all__ = ["REDACTED", "check_hub_push", "redact_secrets", "redacting_arguments"]

#: What a secret is replaced with in the files a run writes.
REDACTED = "<REDACTED>"
#: A Hugging Face access token (``hf_`` and at least 30 letters or digits).
_HF_TOKEN = re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])")
#: A command-line option whose name ends in ``token`` and its value (``--hub_token X``, ``--hub-token=X``).
_TOKEN_OPTION = re.compile(r"(--[\w-]*?[_-]?token)(=|\s+)('[^']*'|\"[^\"]*\"|\S+)", re.IGNORECASE)


def redact_secrets(value: Any, replacement: Any = REDACTED) -> Any:
    """``value`` with its secrets replaced: in mappings (at any depth) the non-empty string of every key ending
    in ``_token`` becomes ``replacement``, and in every string an ``hf_...`` token and the value after a
    command-line option ending in ``token`` (``--hub_token X``) become :data:`REDACTED`. Lists and tuples are
    walked; other values are returned as they are. The input is not changed."""
    if isinstance(value, str):
        return _HF_TOKEN.sub(REDACTED, _TOKEN_OPTION.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", value))
    if isinstance(value, Mapping):
        return {
            k: replacement
            if isinstance(k, str) and k.endswith("_token") and isinstance(v, str) and v
            else redact_secrets(v, replacement)
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


def check_hub_push(repo_id: str, token: str | None = None) -> str:
    """Check, before any work, that a folder can be pushed to the hub repository ``repo_id``: a valid id, not
    offline (``HF_HUB_OFFLINE``), and an access token (``token``, ``HF_TOKEN`` or ``hf auth login``'s).

    Returns:
        the token to push with.

    Raises:
        ConfigError: one line saying which of the three is missing and what to do.
    """
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise ConfigError(
            f"push to hub: {repo_id!r} is not a hub repository id ({e}); give NAME or OWNER/NAME"
        ) from None
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
    if offline or constants.HF_HUB_OFFLINE:
        raise ConfigError(
            f"cannot push to the hub repository {repo_id}: HF_HUB_OFFLINE is set (offline); unset it to push, or "
            "leave out the push and upload the exported folder later"
        )
    token = token or get_token()
    if not token:
        raise ConfigError(
            f"cannot push to the hub repository {repo_id}: no Hugging Face access token; log in with `hf auth login` "
            "or set HF_TOKEN"
        )
    return token
