"""CoNLL-U reader / writer: real UD file, multiword tokens, empty nodes, comments, offsets, errors."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data.readers.conllu import format_conllu, parse_conllu, read_conllu, sentence_to_conllu, write_conllu
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import FormatError
from tests.conftest import data_path


def _row(i, form, head, deprel="dep", misc="_", upos="X"):
    return f"{i}\t{form}\t{form.lower()}\t{upos}\t_\t_\t{head}\t{deprel}\t_\t{misc}"


SIMPLE = "\n".join(
    [
        "# newdoc id = d1",
        "# sent_id = s1",
        "# newpar",
        "# a free comment",
        "# text = I don't know.",
        "1\tI\tI\tPRON\tPRP\tCase=Nom\t4\tnsubj\t4:nsubj\t_",
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
        "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_",
        "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_",
        "4\tknow\tknow\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No",
        "4.1\tknows\tknow\tVERB\tVBZ\t_\t_\t_\t4:conj\t_",
        "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_",
        "",
        "",
    ]
)


@pytest.fixture(scope="module")
def ud_dev():
    path = data_path("ud_ewt", "en_ewt-ud-dev.conllu")
    return path, list(read_conllu(path))


def test_conllu_reads_all_ud_ewt_dev(ud_dev):
    _, sents = ud_dev
    assert len(sents) == 2001
    first = sents[0]
    assert first.words == ["From", "the", "AP", "comes", "this", "story", ":"]
    assert first.heads == [2, 2, 3, -1, 5, 3, 3]
    assert first.deprels[3] == "root" and first.upos[0] == "ADP" and first.xpos[0] == "IN"
    assert first.sent_id.endswith("-0001") and first.source == "gold:conllu"
    assert "newdoc id" in first.metadata
    # every sentence's words are found in its # text, including multiword tokens
    assert all(s.offsets is not None for s in sents)
    for s in sents:
        for (a, _), prev in zip(s.offsets[1:], s.offsets[:-1]):
            assert a >= prev[1]
    mwt = [s for s in sents if "multiword_tokens" in s.metadata]
    assert len(mwt) > 300
    s = mwt[0]
    t = s.metadata["multiword_tokens"][0]
    pieces = [s.text[a:b] for a, b in s.offsets[t["first"] : t["last"] + 1]]
    assert "".join(pieces) == t["form"]


def test_conllu_roundtrip_ud_ewt_dev(ud_dev):
    path, sents = ud_dev
    text = format_conllu(sents)
    assert parse_conllu(text) == sents
    with open(path, encoding="utf-8") as f:
        assert text == f.read()  # byte-for-byte, comments, MWTs and empty nodes included


def test_conllu_multiword_token_and_comments():
    (s,) = parse_conllu(SIMPLE)
    assert s.words == ["I", "do", "n't", "know", "."]
    assert s.heads == [3, 3, 3, -1, 3]
    assert s.sent_id == "s1" and s.text == "I don't know."
    assert s.metadata["newdoc id"] == "d1" and s.metadata["newpar"] is None
    assert s.metadata["comments"] == ["a free comment"]
    assert s.metadata["multiword_tokens"] == [{"first": 1, "last": 2, "form": "don't", "misc": "_"}]
    assert [s.text[a:b] for a, b in s.offsets] == ["I", "do", "n't", "know", "."]
    assert s.metadata["feats"][0] == "Case=Nom" and s.metadata["deps"][3] == "0:root"
    assert s.metadata["empty_nodes"] == ["4.1\tknows\tknow\tVERB\tVBZ\t_\t_\t_\t4:conj\t_"]
    assert sentence_to_conllu(s) == SIMPLE


def test_conllu_multiword_token_not_spelled_by_its_words_gets_even_split():
    text = (
        "# text = du vin\n"
        + "\n".join(["1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_", _row(1, "de", 3), _row(2, "le", 3), _row(3, "vin", 0)])
        + "\n"
    )
    (s,) = parse_conllu(text)
    assert s.words == ["de", "le", "vin"]
    assert s.offsets == [(0, 1), (1, 2), (3, 6)]
    assert parse_conllu(format_conllu([s])) == [s]


def test_conllu_offsets_without_text_comment_use_space_after():
    text = "\n".join([_row(1, "Hello", 0, misc="SpaceAfter=No"), _row(2, ",", 1), _row(3, "world", 1)]) + "\n"
    (s,) = parse_conllu(text)
    assert s.text == "Hello, world"
    assert s.offsets == [(0, 5), (5, 6), (7, 12)]


def test_conllu_words_not_in_text_give_no_offsets():
    text = "# text = something else\n" + _row(1, "Hello", 0) + "\n"
    (s,) = parse_conllu(text)
    assert s.text == "something else" and s.offsets is None


def test_conllu_crlf_bom_and_no_final_blank_line(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_bytes(("\ufeff# sent_id = a\r\n" + _row(1, "Hi", 0) + "\r\n\r\n\r\n" + _row(1, "Yo", 0)).encode())
    sents = list(read_conllu(path))
    assert [s.words for s in sents] == [["Hi"], ["Yo"]] and sents[0].sent_id == "a"
    assert [s.words for s in read_conllu(io.StringIO(_row(1, "Hi", 0)))] == [["Hi"]]


@pytest.mark.parametrize(
    "lines, line, message",
    [
        ([_row(1, "a", 0), "2\tb\tb\tX\t_\t_\t1\tdep\t_"], 2, "10 tab-separated columns"),
        ([_row(1, "a", 0), _row("x", "b", 1)], 2, "not an integer"),
        ([_row(1, "a", 0), _row(2, "b", "_")], 2, "head '_'"),
        ([_row(1, "a", 0), _row(2, "b", 7)], 2, "out of range"),
        ([_row(1, "a", 0), _row(3, "b", 1)], 2, "expected 2"),
        ([_row(1, "a", 0), _row(2, "b", 2)], 2, "its own head"),
        ([_row(1, "a", 0), _row(2, "b", 3), _row(3, "c", 2)], 2, "cycle"),
        ([_row(1, "a", 0), "2-1\tab\t_\t_\t_\t_\t_\t_\t_\t_"], 2, "range"),
        ([_row(1, "a", 0), "2-3\tbc\t_\t_\t_\t_\t_\t_\t_\t_", _row(2, "b", 1)], 2, "ends after"),
        ([_row(1, "a", 0), "1\tb\t\tX\t_\t_\t1\tdep\t_\t_"], 2, "empty"),
        (["# only a comment"], 1, "no word lines"),
    ],
)
def test_conllu_errors_name_file_and_line(lines, line, message):
    with pytest.raises(FormatError, match=message) as info:
        parse_conllu("\n".join(lines) + "\n", source="bad.conllu")
    assert info.value.line == line and info.value.source == "bad.conllu"
    assert f"bad.conllu:{line}" in str(info.value)


def test_conllu_writes_documents_with_newdoc_and_local_text(tmp_path):
    doc = Document.from_sentences([Sentence(["Hi", "there", "."], [-1, 0, 0]), Sentence(["Bye"], [-1])], doc_id="d7")
    path = tmp_path / "out.conllu"
    assert write_conllu([doc], path) == 2
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# newdoc id = d7\n# text = Hi there .\n")
    back = list(read_conllu(path))
    assert [s.words for s in back] == [["Hi", "there", "."], ["Bye"]]
    assert back[1].text == "Bye" and back[1].offsets == [(0, 3)]
    assert back[0].heads == [-1, 0, 0]


def test_conllu_writer_derives_space_after_from_offsets():
    s = Sentence(["Hello", ",", "world"], [-1, 0, 0], text="Hello, world", offsets=[(0, 5), (5, 6), (7, 12)])
    block = sentence_to_conllu(s)
    assert block.splitlines()[1].endswith("SpaceAfter=No")
    (back,) = parse_conllu(block)
    assert back.offsets == s.offsets and back.text == s.text


@st.composite
def _sentences(draw):
    n = draw(st.integers(1, 8))
    heads = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]  # a tree rooted at word 0
    order = draw(st.permutations(range(n)))  # relabel so the root is anywhere
    pos = {old: new for new, old in enumerate(order)}
    new_heads = [0] * n
    for old, h in enumerate(heads):
        new_heads[pos[old]] = -1 if h < 0 else pos[h]
    alphabet = st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="#")
    words = [draw(st.text(alphabet, min_size=1, max_size=5)) for _ in range(n)]
    labels = [draw(st.sampled_from(["nsubj", "obj", "nmod:poss", "root"])) for _ in range(n)]
    return Sentence(words, new_heads, deprels=labels, sent_id=draw(st.one_of(st.none(), st.just("s-1"))))


@settings(max_examples=60, deadline=None)
@given(_sentences())
def test_conllu_roundtrip_random_trees(sentence):
    (back,) = parse_conllu(sentence_to_conllu(sentence))
    assert back.words == sentence.words and back.heads == sentence.heads
    assert back.deprels == sentence.deprels and back.sent_id == sentence.sent_id
    assert parse_conllu(format_conllu([back])) == [back]


@pytest.mark.parametrize("head", ["\u0662", "\u00b2", "\uff12", "\u09e8", "2.0", "+2", " 2"])
def test_conllu_head_must_be_ascii_digits(head):
    """``str.isdigit`` and ``int`` accept the Arabic-Indic ``٢``, superscript ``²``, full-width ``２``: not CoNLL-U."""
    text = f"1\ta\t_\t_\t_\t_\t{head}\tdep\t_\t_\n2\tb\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    with pytest.raises(FormatError, match=r"<string>:1: head .* of word 1 is not an integer written in ASCII"):
        parse_conllu(text)
