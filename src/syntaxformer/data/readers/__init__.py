"""Readers of every file format and data set. Corpus readers yield :class:`~syntaxformer.data.Sentence` objects (or
pairs); task readers (``read_*_examples``, :func:`read_glue_tsv`) return
:class:`~syntaxformer.data.examples.TaskExample` lists; :mod:`.parallel` reads parallel text (translation);
:mod:`.table` reads a user's own CSV / TSV / JSON / JSONL files as rows of named columns."""

from syntaxformer.data.readers.conllu import read_conllu, write_conllu
from syntaxformer.data.readers.glue import TsvLayout, read_glue_tsv
from syntaxformer.data.readers.parallel import ParallelCorpus, read_corpus, read_parallel, read_sgm, read_sgm_pair
from syntaxformer.data.readers.ptb import read_ptb
from syntaxformer.data.readers.snli import read_snli_examples, read_snli_jsonl, read_snli_tokenized
from syntaxformer.data.readers.sst import read_sst, read_sst_examples
from syntaxformer.data.readers.table import Table, read_table

__all__ = [
    "ParallelCorpus",
    "Table",
    "TsvLayout",
    "read_conllu",
    "read_corpus",
    "read_glue_tsv",
    "read_parallel",
    "read_ptb",
    "read_sgm",
    "read_sgm_pair",
    "read_snli_examples",
    "read_snli_jsonl",
    "read_snli_tokenized",
    "read_sst",
    "read_sst_examples",
    "read_table",
    "write_conllu",
]
