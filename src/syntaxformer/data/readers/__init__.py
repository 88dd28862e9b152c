"""Readers for gold-annotated corpora. Each yields :class:`~syntaxformer.data.Sentence` objects (or pairs)."""

from syntaxformer.data.readers.conllu import read_conllu, write_conllu
from syntaxformer.data.readers.ptb import read_ptb
from syntaxformer.data.readers.snli import read_snli_jsonl, read_snli_tokenized
from syntaxformer.data.readers.sst import read_sst

__all__ = ["read_conllu", "read_ptb", "read_snli_jsonl", "read_snli_tokenized", "read_sst", "write_conllu"]
