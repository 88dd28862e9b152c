"""Pre-parsed input: CoNLL-U / JSONL from an external parser, matched to texts and word lists."""

from __future__ import annotations

import pytest

from syntaxformer.data.annotators import PreparsedAnnotator
from syntaxformer.data.sentence import Document, Sentence, write_jsonl
from syntaxformer.errors import ParseNotFoundError

# What Stanza / UDPipe write: one block per sentence, each with its own "# text".
CONLLU = """\
# sent_id = 1
# text = The cat sat.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = 2
# text = It purred.
1\tIt\tit\tPRON\tPRP\t_\t2\tnsubj\t_\t_
2\tpurred\tpurr\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No
3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

# sent_id = 3
# text = I don't know.
1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tknow\tknow\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

"""


@pytest.fixture()
def conllu(tmp_path):
    path = tmp_path / "stanza.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    return PreparsedAnnotator(path)


def _spells(doc: Document) -> None:
    for s in doc:
        assert s.text is None
        for w, (a, b) in zip(s.words, s.offsets):
            assert doc.text[a:b] == w, (w, doc.text[a:b])


def test_preparsed_matches_single_sentences_up_to_whitespace(conllu):
    (doc,) = conllu.annotate(["  The   cat\nsat. "])
    assert isinstance(doc, Document) and doc.text == "  The   cat\nsat. " and len(doc) == 1
    s = doc.sentences[0]
    assert s.words == ["The", "cat", "sat", "."] and s.heads == [1, 2, -1, 2] and s.upos[2] == "VERB"
    assert s.source == "conllu:stanza.conllu"
    _spells(doc)


def test_preparsed_matches_a_passage_to_consecutive_sentences(conllu):
    text = "The cat sat. It purred.  I don't know."
    (doc,) = conllu.annotate([text])
    assert [s.words for s in doc] == [
        ["The", "cat", "sat", "."],
        ["It", "purred", "."],
        ["I", "do", "n't", "know", "."],
    ]
    _spells(doc)
    assert doc.sentences[1].offsets[0][0] == text.index("It")
    # a run that starts in the middle of the file, and the empty text
    later, empty = conllu.annotate(["It purred. I don't know.", " \n"])
    assert len(later) == 2 and len(empty) == 0 and empty.text == " \n"


def test_preparsed_matches_word_lists_exactly(conllu):
    s, t = conllu.annotate_pretokenized([["It", "purred", "."], ("I", "do", "n't", "know", ".")])
    assert isinstance(s, Sentence) and s.words == ["It", "purred", "."] and s.heads == [1, -1, 1]
    assert s.text == "It purred ." and s.offsets == [(0, 2), (3, 9), (10, 11)]
    assert t.words == ["I", "do", "n't", "know", "."] and len(t.roots) == 1


def test_preparsed_missing_parse_names_the_text_and_the_file(conllu):
    with pytest.raises(ParseNotFoundError, match=r"'The dog sat\.'.*stanza\.conllu"):
        conllu.annotate(["The cat sat.", "The dog sat."])
    with pytest.raises(ParseNotFoundError, match=r"'The cat sat'.*stanza\.conllu"):
        conllu.annotate_pretokenized([["The", "cat", "sat"]])
    with pytest.raises(ParseNotFoundError, match="stanza.conllu"):  # sentences present, but not in this order
        conllu.annotate(["It purred. The cat sat."])
    long = "word " * 100
    with pytest.raises(ParseNotFoundError) as err:
        conllu.annotate([long])
    assert len(str(err.value)) < 300  # the text is truncated in the message


def test_preparsed_jsonl_documents_and_sentences(tmp_path):
    doc = Document(
        [
            Sentence(["Hi", "!"], [-1, 0], offsets=[(0, 2), (2, 3)]),
            Sentence(["Bye", "."], [-1, 0], offsets=[(4, 7), (7, 8)]),
        ],
        text="Hi! Bye.",
        doc_id="d1",
    )
    alone = Sentence(["Just", "words"], [1, -1])  # no text, no offsets: words joined by spaces
    path = tmp_path / "parsed.jsonl"
    write_jsonl([doc, alone], str(path))
    ann = PreparsedAnnotator(path)
    assert ann.format == "jsonl" and len(ann) == 3
    got, words = ann.annotate(["Hi!   Bye.", "Just  words"])
    assert got.doc_id == "d1" and [s.words for s in got] == [["Hi", "!"], ["Bye", "."]]
    assert got.sentences[1].offsets == [(6, 9), (9, 10)]
    assert words.sentences[0].offsets == [(0, 4), (6, 11)]
    assert ann.annotate(["Bye."])[0].sentences[0].offsets == [(0, 3), (3, 4)]  # a sentence of a document


def test_preparsed_cache_key_is_the_file_content(tmp_path):
    a, b = tmp_path / "a.conllu", tmp_path / "b.conllu"
    a.write_text(CONLLU, encoding="utf-8")
    b.write_text(CONLLU, encoding="utf-8")
    assert PreparsedAnnotator(a).cache_key() == PreparsedAnnotator(b).cache_key()
    b.write_text(CONLLU.replace("\tnsubj\t", "\tdep\t", 1), encoding="utf-8")  # same texts, another parse
    assert PreparsedAnnotator(a).cache_key() != PreparsedAnnotator(b).cache_key()


def test_preparsed_bad_file_or_format(tmp_path):
    from syntaxformer.errors import AnnotatorError, FormatError

    with pytest.raises(AnnotatorError, match="not found"):
        PreparsedAnnotator(tmp_path / "missing.conllu")
    (tmp_path / "x.txt").write_text("", encoding="utf-8")
    with pytest.raises(AnnotatorError, match=r"\.conllu or \.jsonl"):
        PreparsedAnnotator(tmp_path / "x.txt")
    assert len(PreparsedAnnotator(tmp_path / "x.txt", format="conllu")) == 0
    (tmp_path / "bad.conllu").write_text("1\tx\n", encoding="utf-8")
    with pytest.raises(FormatError, match="bad.conllu:1"):
        PreparsedAnnotator(tmp_path / "bad.conllu")
