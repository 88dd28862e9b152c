"""Readers for gold-annotated corpora. Each returns :class:`~syntaxformer.data.Sentence` objects."""
