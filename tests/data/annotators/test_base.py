"""The Annotator contract, checked on every implementation: spaCy, pre-parsed files and a hand-made subclass."""

from __future__ import annotations

import pytest

from syntaxformer.data import Annotator, Document, Sentence, make_annotator
from syntaxformer.data.annotators import PreparsedAnnotator
from syntaxformer.data.sentence import write_jsonl

TEXTS = ["The cat sat on the mat. It purred.", "", "Hello  world!"]
WORDS = [["The", "dog", "barked", "."], ["Ok"]]


@pytest.fixture(scope="module", params=["spacy", "conllu", "jsonl"])
def annotator(request, tmp_path_factory) -> Annotator:
    spacy = make_annotator(cache=None, progress=False)
    if request.param == "spacy":
        return spacy
    # another parser's output: here spaCy's, written to a file the way `syntaxformer annotate` writes it
    folder = tmp_path_factory.mktemp("preparsed")
    records = spacy.annotate(TEXTS) + spacy.annotate_pretokenized(WORDS)
    if request.param == "jsonl":
        path = folder / "parses.jsonl"
        write_jsonl(records, str(path))
    else:
        from syntaxformer.data.readers.conllu import write_conllu

        path = folder / "parses.conllu"
        write_conllu(records, str(path))
    return PreparsedAnnotator(path)


def test_annotator_contract_passages(annotator):
    assert isinstance(annotator, Annotator) and isinstance(annotator.source, str) and annotator.source
    docs = annotator.annotate(TEXTS)
    assert len(docs) == len(TEXTS) and all(isinstance(d, Document) for d in docs)
    assert [len(d) for d in docs] == [2, 0, 1]
    for doc, text in zip(docs, TEXTS):
        assert doc.text == text
        for s in doc:
            assert isinstance(s, Sentence) and len(s.roots) >= 1 and s.source == annotator.source
            assert [text[a:b] for a, b in s.offsets] == s.words
    assert list(annotator.pipe(iter(TEXTS))) == docs


def test_annotator_contract_pretokenized(annotator):
    out = annotator.annotate_pretokenized(WORDS)
    assert [s.words for s in out] == WORDS and all(isinstance(s, Sentence) and len(s.roots) == 1 for s in out)


def test_annotator_contract_cache_key(annotator):
    key = annotator.cache_key()
    assert isinstance(key, str) and key and annotator.cache_key() == key


def test_annotator_is_abstract():
    with pytest.raises(TypeError):
        Annotator()  # type: ignore[abstract]
