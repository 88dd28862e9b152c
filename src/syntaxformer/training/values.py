"""How a run option's value is read and checked: the annotation of each field, the words read as booleans, and
:func:`typed_value`, which checks a value against its annotation and normalises it (the run config, the model options
and the command-line flags all read values this way)."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from syntaxformer.errors import ConfigError

__all__ = ["BOOLEAN_WORDS", "typed_value"]

#: Spellings of a boolean in a config value or an override (YAML 1.1 words included), case-insensitive.
BOOLEAN_WORDS: dict[str, bool] = {
    "true": True,
    "yes": True,
    "on": True,
    "y": True,
    "1": True,
    "false": False,
    "no": False,
    "off": False,
    "n": False,
    "0": False,
}


def _field_types(cls: type) -> dict[str, Any]:
    """Field name -> resolved annotation (``None`` where it cannot be resolved: the value is not checked)."""
    import sys

    module = sys.modules.get(cls.__module__)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        t = f.type
        if isinstance(t, str):
            try:
                t = eval(t, {**vars(typing), **(vars(module) if module else {})})
            except (NameError, AttributeError, SyntaxError, TypeError):  # names this module lacks (torch.dtype)
                t = None
        out[f.name] = t
    return out


def _optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def typed_value(name: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the annotation ``hint`` and normalised, or a :class:`ConfigError` naming ``name``.

    * ``bool``: ``True`` / ``False``, or a word of :data:`BOOLEAN_WORDS` (``"no"``, ``"off"``, ``"yes"`` ... as the
      YAML 1.1 words come from ``--set``); anything else (``"maybe"``, ``2``) is an error;
    * ``int``: an integer, an integral float (``1e3``) or integer text; ``32.7`` and booleans are errors;
    * ``float``: a finite number or number text (``nan`` / ``inf`` are errors);
    * ``str``: text (numbers are turned into text); ``Literal[...]``: one of its values (YAML 1.1's ``no`` / ``yes``
      read as booleans become ``"no"`` / ``"yes"`` again);
    * ``X | None``: ``None`` or an ``X``; ``bool | str``: a boolean (word) or else text; ``dict``: a mapping.
    """
    if hint is None or hint is Any:
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            if type(None) in args:
                return None
            raise ConfigError(f"{name} may not be null; expected {_describe(hint)}")
        for member in sorted((a for a in args if a is not type(None)), key=lambda a: a is str):  # str last
            try:
                return typed_value(name, value, member)
            except ConfigError:
                continue
        raise ConfigError(f"{name}={value!r} is not valid; expected {_describe(hint)}")
    if origin is Literal:
        if isinstance(value, bool) and ("no" if value is False else "yes") in args:
            value = "no" if value is False else "yes"  # YAML 1.1 reads an unquoted `no` as False
        if value not in args:
            raise ConfigError(f"{name}={value!r} is not valid; choose one of {args}")
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, (str, int)) and str(value).strip().lower() in BOOLEAN_WORDS:
            return BOOLEAN_WORDS[str(value).strip().lower()]
        raise ConfigError(
            f"{name}={value!r} is not a boolean; use true or false (yes/no, on/off, 1/0 are read the same way)"
        )
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise ConfigError(f"{name}={value!r} is not valid; it must be a whole number")
    if hint is float:
        number = value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number):
            return float(number)
        raise ConfigError(f"{name}={value!r} is not valid; it must be a finite number")
    if hint is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{name}={value!r} is not valid; it must be text")
    if origin is dict or hint is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{name} must be a mapping, got {value!r}")
        return dict(value)
    return value


def _describe(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal:
        return f"one of {args}"
    if args:
        return " or ".join("null" if a is type(None) else _describe(a) for a in args)
    return {bool: "true or false", int: "a whole number", float: "a number", str: "text"}.get(hint, str(hint))


def _parse_scalar(raw: str) -> Any:
    import yaml

    try:
        value = yaml.safe_load(raw) if raw else None
    except (yaml.YAMLError, ValueError, OverflowError):  # not YAML, or a date / number YAML cannot build
        return raw
    if isinstance(value, bool) and raw.lower() not in ("true", "false"):
        return raw  # YAML 1.1 booleans such as `no` / `off` stay strings (save_strategy=no)
    # YAML 1.1 reads "1e-4" as a string (it wants "1.0e-4"); accept the usual float spellings.
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") and value.strip("+-.eE0123456789") == "" else value
        except ValueError:
            return value
    return value
