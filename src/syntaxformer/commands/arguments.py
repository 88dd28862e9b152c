"""Argument values several commands read the same way (``--set KEY=VALUE`` model options, ``--edges N,N``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from syntaxformer.errors import ConfigError

__all__ = ["int_list", "model_options"]


def model_options(items: Iterable[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as a dict; a value is read as JSON when it parses, else kept as a string.

    Raises:
        ConfigError: an item without ``=`` or without a key.
    """
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def int_list(text: str | None, flag: str) -> list[int] | None:
    """``"5,10,15"`` as ``[5, 10, 15]`` (``None`` for no value).

    Raises:
        ConfigError: a part that is not a whole number, naming ``flag``.
    """
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{flag} {text!r} must be comma-separated whole numbers, e.g. 5,10,15") from None
