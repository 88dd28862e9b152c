"""Readers for gold-annotated corpora (each yields :class:`~syntaxformer.data.Sentence` objects or pairs) and for
parallel text (:mod:`.parallel`, translation)."""

from syntaxformer.data.readers.conllu import read_conllu, write_conllu
from syntaxformer.data.readers.parallel import ParallelCorpus, read_corpus, read_parallel, read_sgm, read_sgm_pair
from syntaxformer.data.readers.ptb import read_ptb
from syntaxformer.data.readers.snli import read_snli_jsonl, read_snli_tokenized
from syntaxformer.data.readers.sst import read_sst

__all__ = ["ParallelCorpus", "read_conllu", "read_corpus", "read_parallel", "read_ptb", "read_sgm", "read_sgm_pair",
           "read_snli_jsonl", "read_snli_tokenized", "read_sst", "write_conllu"]
