"""One factory for annotators: :func:`make_annotator` turns a spec (what ``--parser`` and every ``parser`` option
accept: the table in docs/parsing.md) into an :class:`Annotator`. The schemes live in
:data:`syntaxformer.registry.ANNOTATORS`; :func:`annotator_origin` says where a spec's scheme comes from
(``run.json`` records it, so ``evaluate`` / ``predict`` find it in a new process).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any

from syntaxformer.data.annotators.base import Annotator
from syntaxformer.data.annotators.preparsed import PREPARSED_FORMATS, PreparsedAnnotator
from syntaxformer.data.annotators.spacy import SpacyAnnotator, pipeline_location
from syntaxformer.defaults import DEFAULT_SPACY_MODEL
from syntaxformer.errors import AnnotatorError
from syntaxformer.registry import ANNOTATORS

__all__ = ["annotator_origin", "annotator_schemes", "make_annotator", "register_annotator"]

#: ``factory(arg, **options) -> Annotator``: ``arg`` is the spec after ``"scheme:"``, ``options`` are
#: :func:`make_annotator`'s keyword arguments (``cache``, ``progress`` and any others).
AnnotatorFactory = Callable[..., Annotator]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9_.+-]*):(.*)\Z", re.DOTALL)


def spacy_annotator(arg: str, **options: Any) -> Annotator:
    """``spacy:NAME_OR_PATH``: a :class:`SpacyAnnotator` (the default pipeline for an empty ``arg``)."""
    return SpacyAnnotator(arg or DEFAULT_SPACY_MODEL, **options)


def conllu_annotator(arg: str, **options: Any) -> Annotator:
    """``conllu:FILE``: the parses in a CoNLL-U file (cache, progress and spaCy's options do not apply)."""
    return PreparsedAnnotator(arg, format="conllu")


def jsonl_annotator(arg: str, **options: Any) -> Annotator:
    """``jsonl:FILE``: the parses in a JSONL file."""
    return PreparsedAnnotator(arg, format="jsonl")


def register_annotator(scheme: str, factory: AnnotatorFactory, *, overwrite: bool = False) -> None:
    """Make ``make_annotator("SCHEME:ARG")`` build an annotator with ``factory(ARG, **options)``.

    Args:
        scheme: the name before the colon (letters, digits, ``_ . + -``; starts with a letter).
        factory: called with the rest of the spec and :func:`make_annotator`'s keyword arguments (``cache``,
            ``progress``, ...; accept ``**options`` and ignore those that do not apply).
        overwrite: replace an existing scheme (built-in ones included) instead of raising.

    Raises:
        AnnotatorError: ``scheme`` is not a valid name, or is taken and ``overwrite`` is false.
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.+-]*", scheme or ""):
        raise AnnotatorError(
            f"annotator scheme {scheme!r} must start with a letter and hold only letters, digits and _ . + -"
        )
    if not callable(factory):
        raise AnnotatorError(f"the factory of annotator scheme {scheme!r} must be callable, got {factory!r}")
    if ANNOTATORS.registered(scheme) and not overwrite:
        raise AnnotatorError(f"annotator scheme {scheme!r} is already registered; pass overwrite=True to replace it")
    ANNOTATORS.register(scheme, factory, overwrite=True)


def annotator_schemes() -> list[str]:
    """The registered schemes, built-in ones (``spacy``, ``conllu``, ``jsonl``) and entry points included."""
    return ANNOTATORS.names()


def annotator_origin(spec: Any) -> dict[str, Any] | None:
    """Where the annotator of a ``"SCHEME:ARG"`` spec comes from, for ``run.json``: ``{"name", "module",
    "entry_point", "spec"}`` (:meth:`syntaxformer.registry.Registry.origin`); ``None`` for any other spec (the
    default spaCy pipeline, a file, an object)."""
    if not isinstance(spec, str):
        return None
    match = _SCHEME.match(spec)
    if not match or match.group(1) not in ANNOTATORS or os.path.exists(spec):
        return None
    return {**ANNOTATORS.origin(match.group(1)), "spec": spec}


def make_annotator(spec: Any = None, *, cache: Any = True, progress: bool = True, **options: Any) -> Annotator:
    """The annotator a spec names (the forms: docs/parsing.md).

    Args:
        spec: ``None`` (the default spaCy pipeline), an :class:`Annotator` (itself), a ``spacy.Language``, or a
            string / path: ``"SCHEME:ARG"``, a ``.conllu`` / ``.conll`` / ``.jsonl`` file, a spaCy pipeline.
        cache: the parse cache of a spaCy annotator (``True`` = default location, a path, a ``ParseCache``, or
            ``None`` / ``False``); ignored for an :class:`Annotator` given as is and for pre-parsed files.
        progress: show progress bars on long runs (same).
        **options: more keyword arguments for the annotator (e.g. ``batch_size``, ``n_process`` for spaCy).

    Raises:
        AnnotatorError: the spec names no annotator; the message lists what is accepted.
        MissingDependencyError: ``"spacy:NAME"`` names a pipeline that is not installed.
    """
    if isinstance(spec, Annotator):
        return spec
    options = dict(options, cache=cache, progress=progress)
    if spec is None:
        return SpacyAnnotator(DEFAULT_SPACY_MODEL, **options)
    spacy = sys.modules.get("spacy")  # a Language object can only exist if spaCy is imported
    if spacy is not None and isinstance(spec, spacy.language.Language):
        return SpacyAnnotator(spec, **options)
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise AnnotatorError(f"cannot make an annotator from a {type(spec).__name__} ({spec!r:.60}); {_ACCEPTED}")
    match = _SCHEME.match(spec)
    if match and match.group(1) in ANNOTATORS and not os.path.exists(spec):
        return ANNOTATORS.get(match.group(1))(match.group(2), **options)
    ext = os.path.splitext(spec)[1].lower()
    for format, extensions in PREPARSED_FORMATS.items():
        if ext in extensions:
            return ANNOTATORS.get(format)(spec, **options)
    if pipeline_location(spec) is not None:
        return ANNOTATORS.get("spacy")(spec, **options)
    raise AnnotatorError(
        f"no annotator for {spec!r}: it is not a registered scheme "
        f"({', '.join(annotator_schemes())}), a pre-parsed file or an installed spaCy pipeline; "
        f"{_ACCEPTED}"
    )


_ACCEPTED = (
    "expected None (the default spaCy pipeline), an Annotator, a spacy.Language, 'spacy:NAME_OR_PATH' or an "
    "installed spaCy pipeline name or folder, 'conllu:FILE' / 'jsonl:FILE' or a .conllu / .jsonl file, or "
    "'SCHEME:ARG' for a scheme added with register_annotator or an entry point of syntaxformer.annotators"
)
