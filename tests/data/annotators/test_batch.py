"""The batch annotation function under ``datasets.Dataset.map(batched=True, num_proc=2)``: on real SST-2 sentences
it gives exactly the Documents / Sentences of ``make_annotator().annotate`` / ``annotate_pretokenized``, the two
worker processes share one parse cache file, and it pickles without its parser. (Ray Data: test_batch_ray.py.)"""

from __future__ import annotations

import pickle

import datasets
import pytest

from syntaxformer.data import make_annotator
from syntaxformer.data.annotators.batch import BatchAnnotator, document_from_row, sentence_from_row
from syntaxformer.data.annotators.cache import ParseCache, make_key
from syntaxformer.errors import AnnotatorError
from tests.conftest import data_path

pytestmark = pytest.mark.slow


def sst2_sentences(n: int, start: int = 0) -> list[str]:
    """``n`` sentences of the real SST-2 training file, in file order from row ``start``."""
    lines = data_path("glue", "SST-2", "train.tsv").read_text(encoding="utf-8").splitlines()[1 + start : 1 + start + n]
    return [line.split("\t")[0] for line in lines]


@pytest.fixture(scope="module")
def reference():
    """The default spaCy annotator without a cache: every call parses."""
    try:
        return make_annotator(cache=None, progress=False)
    except Exception as e:  # noqa: BLE001  # pragma: no cover - the offline pipeline is a dev dependency
        pytest.skip(f"spaCy pipeline not available: {e}")


@pytest.fixture(autouse=True)
def _quiet_datasets():
    datasets.disable_progress_bars()
    yield
    datasets.enable_progress_bars()


def test_batch_datasets_num_proc_gives_the_documents_of_annotate(reference, tmp_path):
    texts = sst2_sentences(64) + ["The film starts well. It ends badly!", ""]  # two sentences; no sentence
    cache_path = tmp_path / "parses.sqlite3"
    ds = datasets.Dataset.from_dict({"sentence": texts, "label": list(range(len(texts)))})
    parse = BatchAnnotator(column="sentence", cache=str(cache_path))
    out = ds.map(parse, batched=True, batch_size=16, num_proc=2, features=parse.features(ds.features))

    assert out["label"] == list(range(len(texts)))  # input columns kept, in order
    got = [document_from_row(row, text_column="sentence") for row in out]
    want = reference.annotate(texts)
    assert got == want
    assert len(got[-2].sentences) == 2 and got[-1].sentences == []
    assert out[0]["source"] == want[0].sentences[0].source and out[0]["words"] == [want[0].sentences[0].words]

    # the two workers wrote every parse into the one shared cache file
    keys = [make_key(t, parse.parser_key, "text") for t in texts]
    assert set(ParseCache(cache_path).get_many(keys)) == set(keys)
    # a second pass (datasets' own map cache off) reads them back from the parse cache: the same Documents
    again = ds.map(
        parse, batched=True, batch_size=16, num_proc=2, features=parse.features(ds.features), load_from_cache_file=False
    )
    assert [document_from_row(row, text_column="sentence") for row in again] == want


def test_batch_pretokenized_mode_gives_the_sentences_of_annotate_pretokenized(reference):
    words = [t.split() for t in sst2_sentences(24, start=100)]
    ds = datasets.Dataset.from_dict({"tokens": words})
    parse = BatchAnnotator(column="tokens", mode="pretokenized", cache=None, prefix="parse_")
    out = ds.map(parse, batched=True, batch_size=8, num_proc=2, features=parse.features(ds.features))
    got = [sentence_from_row(row, prefix="parse_") for row in out]
    assert got == reference.annotate_pretokenized(words)
    assert out[0]["tokens"] == out[0]["parse_words"] == words[0]


def test_batch_annotator_pickles_without_its_parser_and_rebuilds_it():
    parse = BatchAnnotator(column="sentence", cache=None)
    parse.annotator.annotate(["A short test."])  # loads the pipeline here
    copy = pickle.loads(pickle.dumps(parse))
    assert copy._annotator is None and copy.parser_key == parse.parser_key
    assert len(pickle.dumps(parse)) < 2000  # the spec, not the pipeline
    # datasets' fingerprint of the function (its map cache key): the spec and the parser's content key, not
    # whether this process happened to load the pipeline
    from datasets.fingerprint import Hasher

    assert Hasher.hash(parse) == Hasher.hash(BatchAnnotator(column="sentence", cache=None))
    assert Hasher.hash(parse) != Hasher.hash(BatchAnnotator(column="text", cache=None))
    out = copy({"sentence": ["A short test."]})
    assert (
        document_from_row({k: v[0] for k, v in out.items()}, text_column="sentence")
        == parse.annotator.annotate(["A short test."])[0]
    )


def test_batch_annotator_errors_name_the_input():
    with pytest.raises(AnnotatorError, match="mode='tokens'"):
        BatchAnnotator(mode="tokens", cache=None)
    parse = BatchAnnotator(column="sentence", cache=None)
    with pytest.raises(AnnotatorError, match="no column 'sentence'.*'text'"):
        parse({"text": ["A test."]})
    with pytest.raises(AnnotatorError, match="row 1 .*'sentence' holds a list"):
        parse({"sentence": ["A test.", ["A", "test"]]})
    with pytest.raises(AnnotatorError, match="row 0 .*expected a list of words"):
        BatchAnnotator(column="sentence", mode="pretokenized", cache=None)({"sentence": ["A test."]})
    with pytest.raises(AnnotatorError, match="no parse column 'p_words'"):
        document_from_row({"text": "A test.", "words": [["A", "test", "."]]}, prefix="p_")
