"""Readers: Multi30k plain text and WMT .sgm on the real files; clear errors on malformed input; subsets."""

from __future__ import annotations

import pytest

from syntaxformer.data.readers.parallel import (
    corpus_fraction,
    multi30k,
    newstest2013,
    read_lines,
    read_parallel,
    read_sgm,
    read_sgm_pair,
)
from syntaxformer.errors import FormatError, SyntaxformerError
from tests.conftest import data_path


def test_data_multi30k_splits_have_the_published_sizes():
    folder = data_path("multi30k")
    sizes = {split: len(multi30k(split, folder)) for split in ("train", "val", "test2016")}
    assert sizes == {"train": 29000, "val": 1014, "test2016": 1000}
    train = multi30k("train", folder)
    assert train.sources[0] == "Two young, White males are outside near many bushes."
    assert train.targets[0] == "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche."
    assert train.ids[0] == "train.en:1"


def test_data_newstest2013_sgm_matches_the_plain_text_release():
    folder = data_path("wmt14_ende", "newstest2013")
    corpus = newstest2013(folder)
    assert len(corpus) == 3000
    assert corpus.sources == read_lines(folder / "newstest2013.en")
    assert corpus.targets == read_lines(folder / "newstest2013.de")
    assert corpus.ids[0] == "cyberpresse/2012/12/01/1564248:1"
    segs = read_sgm(folder / "newstest2013-src.en.sgm")
    assert len({s.doc_id for s in segs}) == 52


def test_data_malformed_sgm_gives_clear_errors(tmp_path):
    cases = {
        "noid": ('<refset>\n<doc docid="d1">\n<seg>Hello</seg>\n</doc>\n', "without an id attribute"),
        "unclosed": ('<doc docid="d1">\n<seg id="1">Hello\n</doc>\n', "not closed"),
        "outside": ('<seg id="1">Hello</seg>\n', "outside a <doc"),
        "nodocid": ('<doc genre="news">\n<seg id="1">Hi</seg>\n</doc>\n', "without a docid"),
        "repeat": ('<doc docid="d">\n<seg id="1">a</seg>\n<seg id="1">b</seg>\n</doc>\n', "repeated"),
        "empty": ("just text\n", "no <seg"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / f"{name}.sgm"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(FormatError, match=message) as err:
            read_sgm(path)
        assert str(path) in str(err.value)
    with pytest.raises(FormatError) as err:
        read_sgm(tmp_path / "noid.sgm")
    assert "noid.sgm:3" in str(err.value)


def test_data_sgm_pair_with_different_segment_ids_is_rejected(tmp_path):
    a, b = tmp_path / "src.sgm", tmp_path / "ref.sgm"
    a.write_text('<doc docid="d">\n<seg id="1">a</seg>\n<seg id="2">b</seg>\n</doc>\n', encoding="utf-8")
    b.write_text('<doc docid="d">\n<seg id="1">x</seg>\n<seg id="3">y</seg>\n</doc>\n', encoding="utf-8")
    with pytest.raises(FormatError, match="d:2 .* faces d:3"):
        read_sgm_pair(a, b)
    assert read_sgm_pair(a, a).targets == ["a", "b"]


def test_data_parallel_files_with_different_line_counts_are_rejected(tmp_path):
    src, tgt = tmp_path / "a.en", tmp_path / "a.de"
    src.write_text("one\ntwo\nthree\n", encoding="utf-8")
    tgt.write_text("eins\nzwei\n", encoding="utf-8")
    with pytest.raises(FormatError, match="3 lines in the source file but 2 lines"):
        read_parallel(src, tgt)
    tgt.write_text("eins\n\ndrei\n", encoding="utf-8")
    with pytest.raises(FormatError, match="a.de:2: empty line"):
        read_parallel(src, tgt)
    with pytest.raises(FormatError, match="file not found"):
        read_parallel(tmp_path / "missing.en")


def test_readers_parallel_corpus_fraction_is_seeded_nested_and_in_corpus_order():
    corpus = multi30k("val", data_path("multi30k"))
    small, large = corpus_fraction(corpus, 0.1, seed=0), corpus_fraction(corpus, 0.5, seed=0)
    assert len(small) == 101 and len(large) == 507
    assert set(small.ids) <= set(large.ids)
    order = [int(i.split(":")[1]) for i in small.ids]
    assert order == sorted(order)
    assert corpus_fraction(corpus, 0.1, seed=0).ids == small.ids
    assert corpus_fraction(corpus, 0.1, seed=1).ids != small.ids
    assert corpus_fraction(corpus, 1.0) is corpus
    with pytest.raises(SyntaxformerError, match="fraction"):
        corpus_fraction(corpus, 0.0)
