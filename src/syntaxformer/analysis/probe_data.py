"""The sentences of the structural and linear probes (:mod:`syntaxformer.analysis.probes`): a CoNLL-U treebank
(default UD English-EWT dev) split by document into probe-train and probe-test (:func:`load_probe_data`,
:func:`split_documents`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import ConfigError, DataError

__all__ = ["UD_EWT_DEV", "ProbeData", "load_probe_data", "split_documents"]


#: The EWT dev file under the shared data folder.
UD_EWT_DEV = ("ud_ewt", "en_ewt-ud-dev.conllu")


@dataclass
class ProbeData:
    """The probe-train and probe-test sentences (after subsampling), the ``# newdoc id`` of every document of each part
    (before), and ``info`` (file, split rule, sizes; JSON-ready)."""

    train: list[Sentence]
    test: list[Sentence]
    train_documents: list[str]
    test_documents: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def split_documents(
    sentences: Sequence[Sentence], test_every: int = 4
) -> tuple[list[list[Sentence]], list[list[Sentence]], list[str], list[str]]:
    """Split sentences into documents (a ``newdoc id`` comment starts one) and those into probe-train and probe-test:
    document ``k`` (0-based, file order) is a test document when ``k % test_every == test_every - 1`` (so every
    genre of EWT, grouped in the file, is in both parts). Returns ``(train documents, test documents, train ids,
    test ids)``; ConfigError: ``test_every`` below 2."""
    if test_every < 2:
        raise ConfigError(f"test_every={test_every} must be at least 2 (one test document in every test_every)")
    docs: list[list[Sentence]] = []
    ids: list[str] = []
    for s in sentences:
        doc_id = (s.metadata or {}).get("newdoc id")
        if doc_id is not None or not docs:
            docs.append([])
            ids.append(str(doc_id) if doc_id is not None else f"<document {len(ids)}>")
        docs[-1].append(s)
    test = [k for k in range(len(docs)) if k % test_every == test_every - 1]
    train = [k for k in range(len(docs)) if k % test_every != test_every - 1]
    return [docs[k] for k in train], [docs[k] for k in test], [ids[k] for k in train], [ids[k] for k in test]


def load_probe_data(
    path: str | os.PathLike | None = None,
    *,
    max_train_sentences: int | None = 1000,
    max_test_sentences: int | None = None,
    seed: int = 0,
    test_every: int = 4,
) -> ProbeData:
    """Read a CoNLL-U file with ``# newdoc id`` comments (default: UD English-EWT dev in the shared data folder), split
    it by document (:func:`split_documents`) and take seeded subsamples (``None`` = all) of both parts. Raises
    DataError: no file given and no EWT dev file in the shared data folder; sentences without UPOS or labels."""
    from syntaxformer.data.readers.conllu import read_conllu
    from syntaxformer.defaults import shared_data_dir
    from syntaxformer.utils import subsample

    if path is None:
        root = shared_data_dir()
        if root is None or not root.joinpath(*UD_EWT_DEV).is_file():
            raise DataError(
                "UD English-EWT dev not found: set SYNTAXFORMER_DATA to the shared data folder (it has "
                f"{'/'.join(UD_EWT_DEV)}), or give a CoNLL-U file"
            )
        path = root.joinpath(*UD_EWT_DEV)
    sentences = list(read_conllu(path))
    for s in sentences:
        if s.upos is None or s.deprels is None:
            raise DataError(
                f"{path}: sentence {s.sent_id or '?'} has no UPOS or DEPREL column; the probes need "
                "both (a treebank in CoNLL-U with gold tags and labels)"
            )
    train_docs, test_docs, train_ids, test_ids = split_documents(sentences, test_every)
    train_all = [s for d in train_docs for s in d]
    test_all = [s for d in test_docs for s in d]
    if not train_all or not test_all:
        raise DataError(
            f"{path}: {len(train_docs) + len(test_docs)} document(s) give no probe-test or no "
            f"probe-train sentence with test_every={test_every}; the file needs # newdoc id comments"
        )
    train = subsample(train_all, max_train_sentences, seed)
    test = subsample(test_all, max_test_sentences, seed)
    info = {
        "file": str(path),
        "split": f"documents in file order; document k (0-based) is probe-test when "
        f"k % {test_every} == {test_every - 1}, else probe-train",
        "documents": {"train": len(train_ids), "test": len(test_ids)},
        "sentences_available": {"train": len(train_all), "test": len(test_all)},
        "sentences": {"train": len(train), "test": len(test)},
        "words": {"train": sum(len(s) for s in train), "test": sum(len(s) for s in test)},
        "subsample_seed": seed,
    }
    return ProbeData(train, test, train_ids, test_ids, info)
