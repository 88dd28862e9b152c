"""Parsers: the :class:`Annotator` interface, its spaCy and pre-parsed implementations, one factory, and
:class:`BatchAnnotator` (annotation as a batch function for ``datasets.map`` / Ray Data).

``make_annotator(spec)`` is how the rest of syntaxformer gets a parser; ``register_annotator`` adds one from outside
the package (a complete example: docs/architecture.md, *A parser*).
"""

from syntaxformer.data.annotators.base import Annotator
from syntaxformer.data.annotators.batch import BatchAnnotator, document_from_row, sentence_from_row
from syntaxformer.data.annotators.cache import ParseCache
from syntaxformer.data.annotators.factory import annotator_origin, annotator_schemes, make_annotator, register_annotator
from syntaxformer.data.annotators.preparsed import PreparsedAnnotator
from syntaxformer.data.annotators.spacy import SpacyAnnotator

__all__ = [
    "Annotator",
    "BatchAnnotator",
    "ParseCache",
    "PreparsedAnnotator",
    "SpacyAnnotator",
    "annotator_origin",
    "annotator_schemes",
    "document_from_row",
    "make_annotator",
    "register_annotator",
    "sentence_from_row",
]
