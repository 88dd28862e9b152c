"""Data model, readers, annotation and alignment."""

from syntaxformer.data.constituency import Tree
from syntaxformer.data.sentence import Document, Sentence

__all__ = ["Document", "Sentence", "Tree"]
