"""Data model, readers, annotation and alignment."""

from syntaxformer.data.annotators import Annotator, make_annotator
from syntaxformer.data.constituency import Tree
from syntaxformer.data.sentence import Document, Sentence

__all__ = ["Annotator", "Document", "Sentence", "Tree", "make_annotator"]
