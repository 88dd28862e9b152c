"""Sentence / Document data model and dependency-tree algorithms (checked against brute force)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer import Document, Sentence, Tree
from syntaxformer.data import tree as T
from syntaxformer.data.sentence import read_jsonl, write_jsonl
from syntaxformer.errors import FormatError, TreeError


@st.composite
def forests(draw, max_words=30):
    """Random valid forests: word i's head is drawn among earlier-created nodes of a random order."""
    n = draw(st.integers(1, max_words))
    order = draw(st.permutations(range(n)))
    heads = [-1] * n
    for k, w in enumerate(order[1:], 1):
        if draw(st.integers(0, 9)) == 0:
            continue  # extra root -> forest
        heads[w] = order[draw(st.integers(0, k - 1))]
    return heads


def _brute_ancestors(heads, i):
    out, h = [], heads[i]
    while h != -1:
        out.append(h)
        h = heads[h]
    return out


@settings(max_examples=200, deadline=None)
@given(forests())
def test_tree_euler_depth_match_brute_force(heads):
    tin, tout = T.euler_tour(heads)
    depth = T.depths(heads)
    n = len(heads)
    assert sorted(tin.tolist()) == list(range(n))
    for i in range(n):
        anc = _brute_ancestors(heads, i)
        assert depth[i] == len(anc)
        for j in range(n):
            is_anc_or_self = j == i or j in anc
            assert (tin[j] <= tin[i] <= tout[j]) == is_anc_or_self


def test_tree_check_heads_errors():
    with pytest.raises(TreeError, match="cycle"):
        T.check_heads([1, 0, -1])
    with pytest.raises(TreeError, match="own head"):
        T.check_heads([0])
    with pytest.raises(TreeError, match="heads must be"):
        T.check_heads([5, -1])


def test_tree_projectivity():
    assert T.is_projective([1, -1, 1])
    assert not T.is_projective([2, -1, 1, 0])  # arcs (0,2) and (1,3) cross


def test_sentence_validation_messages():
    with pytest.raises(ValueError, match="2 heads for 3 words"):
        Sentence(["a", "b", "c"], [1, -1])
    with pytest.raises(TreeError, match="sentence 's1'.*cycle"):
        Sentence(["a", "b"], [1, 0], sent_id="s1")
    with pytest.raises(ValueError, match="at least one word"):
        Sentence([], [])
    with pytest.raises(ValueError, match="leaves"):
        Sentence(["a", "b"], [1, -1], tree=Tree.from_string("(S (NN a))"))


def test_sentence_navigation_and_dict_roundtrip(tmp_path):
    s = Sentence(
        ["The", "cat", "sat", "."],
        [1, 2, -1, 2],
        deprels=["det", "nsubj", "ROOT", "punct"],
        upos=["DET", "NOUN", "VERB", "PUNCT"],
        tree=Tree.from_string("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))"),
        sent_id="x",
        metadata={"label": 1},
    )
    assert s.roots == [2] and s.children(2) == [1, 3] and s.ancestors(0) == [1, 2]
    assert Sentence.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    doc = Document.from_sentences([s, Sentence(["Ok", "."], [-1, 0])], doc_id="d")
    for sent in doc:
        for w, (a, b) in zip(sent.words, sent.offsets):
            assert doc.text[a:b] == w
    path = tmp_path / "out.jsonl"
    assert write_jsonl([s, doc], str(path)) == 2
    back = list(read_jsonl(str(path)))
    assert back[0] == s and back[1].to_dict() == doc.to_dict()


def test_read_jsonl_bad_record_names_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"words": ["a"], "heads": [-1]}\n{"words": ["a", "b"], "heads": [1, 0]}\n')
    with pytest.raises(FormatError, match=r"bad.jsonl:2: .*cycle"):
        list(read_jsonl(str(path)))


def test_tree_from_string_roundtrip_and_errors():
    text = "(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat))))"
    t = Tree.from_string(text)
    assert t.to_string() == text and t.leaves() == ["The", "cat", "sat"]
    assert t.spans()[:3] == [("ROOT", 0, 3), ("S", 0, 3), ("NP", 0, 2)]
    with pytest.raises(FormatError, match="missing '\\)'"):
        Tree.from_string("(S (NN a)", source="f.mrg", line=3)
    with pytest.raises(FormatError, match="mixes words"):
        Tree.from_string("(S a (NN b))")


_GOOD = {"words": ["The", "cat"], "heads": [1, -1], "text": "The cat", "offsets": [[0, 3], [4, 7]]}


@pytest.mark.parametrize(
    "record, message",
    [
        ({**_GOOD, "offsets": [[3, 0], [4, 7]]}, r"offsets\[0\] = \[3, 0\] is not a span"),
        ({**_GOOD, "offsets": [[-3, 0], [4, 7]]}, r"offsets\[0\] = \[-3, 0\] is not a span"),
        ({**_GOOD, "offsets": [[0, 3], [4, 70]]}, r"offsets\[1\] = \[4, 70\] .* <= 7, the text's length"),
        ({**_GOOD, "offsets": [[0], [4, 7]]}, r"offsets\[0\] is \[0\]; expected a \[start, end\] pair"),
        ({**_GOOD, "offsets": [0, 4]}, r"offsets\[0\] is 0"),
        ({**_GOOD, "offsets": [[0.5, 3], [4, 7]]}, r"offsets\[0\] is \[0.5, 3\]"),
        ({**_GOOD, "offsets": "0-3"}, r"'offsets' must be a list"),
        (
            {"words": "Thecat!!", "heads": [-1, 0, 0, 0, 0, 0, 0, 0]},
            r"'words' must be a list of strings; got 'Thecat!!'",
        ),
        ({"words": ["The", 7], "heads": [1, -1]}, r"'words' must be a list of strings"),
        ({**_GOOD, "heads": [1.7, -1]}, r"'heads' must be a list of whole numbers"),
        ({**_GOOD, "heads": [True, -1]}, r"'heads' must be a list of whole numbers"),
        ({**_GOOD, "heads": [1.0, -1]}, r"'heads' must be a list of whole numbers"),
        ({**_GOOD, "heads": "1 -1"}, r"'heads' must be a list of whole numbers"),
        ({**_GOOD, "deprels": "det root"}, r"'deprels' must be a list of strings"),
        ({**_GOOD, "text": 5}, r"'text' must be a string"),
        ({**_GOOD, "metadata": [1]}, r"'metadata' must be an object"),
        (
            {
                "text": "The cat",
                "sentences": [{"words": ["The", "cat"], "heads": [1, -1], "offsets": [[0, 3], [4, 90]]}],
            },
            r"sentence 0: word offsets 90 past the end of the document text \(length 7\)",
        ),
        ({"sentences": "x"}, r"bad JSONL record: a document record must be a JSON object with a list 'sentences'"),
        ([1, 2], r"expected one sentence or document record \(a JSON object\) per line, got a JSON list"),
        (None, r"expected one sentence or document record \(a JSON object\) per line, got a JSON NoneType"),
    ],
)
def test_read_jsonl_checks_every_record(tmp_path, record, message):
    path = tmp_path / "ann.jsonl"
    path.write_text(json.dumps(_GOOD) + "\n" + json.dumps(record) + "\n")
    if not message.startswith(("bad JSONL", "expected")):
        message = "bad JSONL record: " + message
    with pytest.raises(FormatError, match=r"ann\.jsonl:2: " + message):
        list(read_jsonl(str(path)))


def test_read_jsonl_accepts_what_write_jsonl_writes(tmp_path):
    doc = Document.from_sentences([Sentence(["The", "cat"], [1, -1]), Sentence(["Hi", "!"], [-1, 0])])
    items = [Sentence.from_dict(_GOOD), doc]
    write_jsonl(items, str(tmp_path / "x.jsonl"))
    assert list(read_jsonl(str(tmp_path / "x.jsonl"))) == items
