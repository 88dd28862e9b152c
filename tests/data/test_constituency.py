"""Constituency trees: bracket parsing / printing, treebank clean-up, files of trees and their errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data.constituency import (
    Tree,
    base_label,
    clean_ptb,
    function_tags,
    iter_bracketed,
    read_bracketed,
    remove_empty,
    strip_function_tags,
    unescape_word,
    unwrap,
)
from syntaxformer.errors import FormatError

VINKEN_MRG = """( (S
    (NP-SBJ
      (NP (NNP Pierre) (NNP Vinken) )
      (, ,)
      (ADJP
        (NP (CD 61) (NNS years) )
        (JJ old) )
      (, ,) )
    (VP (MD will)
      (VP (VB join)
        (NP (DT the) (NN board) )
        (PP-CLR (IN as)
          (NP (DT a) (JJ nonexecutive) (NN director) ))
        (NP-TMP (NNP Nov.) (CD 29) )))
    (. .) ))
"""


# -- parsing and printing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))",
        "( (S (NP (PRP It)) (VP (VBZ is))))",  # PTB wrapper without a label
        "(3 (2 It) (4 (2 's) (3 (2 a) (3 lovely))))",  # SST sentiment labels
        "(NP (-LRB- -LRB-) (NN a) (-RRB- -RRB-))",
        "(NP (CD 8\xa01\\/2))",  # SST word with a no-break space inside
        "(X (Y (Z w)))",
    ],
)
def test_constituency_roundtrip_bracket_strings(text):
    tree = Tree.from_string(text)
    assert tree.to_string() == text
    assert Tree.from_string(tree.pretty()) == tree


def test_constituency_multiline_tree_keeps_words_and_wrapper():
    tree = Tree.from_string(VINKEN_MRG)
    assert tree.label == "" and len(tree.children) == 1
    assert tree.leaves()[:4] == ["Pierre", "Vinken", ",", "61"]
    assert tree.pos()[-1] == (".", ".")
    assert len(tree) == 18


def test_constituency_nbsp_is_not_a_separator():
    tree = Tree.from_string("(2 (2 like) (2 8\xa01\\/2))")
    assert tree.leaves() == ["like", "8\xa01\\/2"]


@st.composite
def trees(draw, depth=0):
    """Random trees with arbitrary labels and words (no brackets or ASCII white space inside tokens)."""
    token = st.text(
        alphabet=st.characters(blacklist_characters="() \t\n\r\x0b\x0c", blacklist_categories=("Cs",)),
        min_size=1,
        max_size=4,
    )
    label = draw(st.one_of(st.just(""), token)) if depth == 0 else draw(token)
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return Tree(draw(token), [draw(token)])
    return Tree(label, draw(st.lists(trees(depth=depth + 1), min_size=1, max_size=3)))


@settings(max_examples=150, deadline=None)
@given(trees())
def test_constituency_roundtrip_random_trees(tree):
    assert Tree.from_string(tree.to_string()) == tree
    assert Tree.from_string(tree.pretty()) == tree
    assert tree.copy() == tree and tree.copy() is not tree


# -- errors with line numbers ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, message, line",
    [
        ("(S (NP (NN a)\n(VP (VB b)", "missing '\\)'", 11),
        ("(S\n (NP a\n (NN b)))", "mixes words", 11),
        ("(S\n\n (NP a b))", "several words", 12),
        ("(S (NP (NN a))\n)\n)", "unexpected text", 12),
        ("()", "no children", 10),
        ("(S\n (NP))", "no children", 11),
        ("  \n ", "empty tree string", 10),
    ],
)
def test_constituency_errors_name_file_and_line(text, message, line):
    with pytest.raises(FormatError, match=message) as err:
        Tree.from_string(text, source="f.mrg", line=10)
    assert err.value.source == "f.mrg" and err.value.line == line
    assert str(err.value).startswith(f"f.mrg:{line}: ")


def test_constituency_iter_bracketed_splits_multiline_trees():
    text = "(A (B b))\n( (S\n  (NP (NN x))\n  (VP (VB y))))  (C (D d))\n"
    parts = list(iter_bracketed(text, "t.mrg"))
    assert [line for _, line in parts] == [1, 2, 4]
    assert Tree.from_string(parts[1][0]).leaves() == ["x", "y"]


@pytest.mark.parametrize(
    "text, message, line",
    [
        ("(A (B b))\n(A (B b)))\n", "without a matching", 2),
        ("(A (B b))\n\n(A (B b)\n(C c)\n", "starting on line 3 is missing 1", 3),
        ("(A (B b))\nstray words\n", "outside a bracketed tree", 2),
    ],
)
def test_constituency_iter_bracketed_errors(text, message, line):
    with pytest.raises(FormatError, match=message) as err:
        list(iter_bracketed(text, "t.mrg"))
    assert err.value.line == line and err.value.source == "t.mrg"


def test_constituency_read_bracketed_reports_inner_error_line(tmp_path):
    path = tmp_path / "bad.mrg"
    path.write_text(VINKEN_MRG + "( (S\n  (NP (DT the)\n    cat (NN dog))\n  (VP (VBD ran))))\n")
    trees_and_lines = []
    with pytest.raises(FormatError, match="mixes words") as err:
        for item in read_bracketed(path):
            trees_and_lines.append(item)
    assert [line for _, line in trees_and_lines] == [1]
    assert err.value.line == 18 and str(path) in str(err.value)


# -- labels and clean-up --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "label, base",
    [
        ("NP-SBJ-1", "NP"),
        ("PP-CLR", "PP"),
        ("PP-LOC=2", "PP"),
        ("S-TPC-1", "S"),
        ("NP=3", "NP"),
        ("ADVP|PRT", "ADVP"),
        ("-LRB-", "-LRB-"),
        ("-RRB-", "-RRB-"),
        ("-NONE-", "-NONE-"),
        ("PRP$", "PRP$"),
        ("--", "--"),
        (":", ":"),
        ("``", "``"),
        ("", ""),
        ("3", "3"),
        ("WHNP-260", "WHNP"),
    ],
)
def test_constituency_base_label(label, base):
    assert base_label(label) == base


def test_constituency_function_tags():
    assert function_tags("NP-SBJ-1") == ["SBJ"]
    assert function_tags("PP-LOC-CLR=2") == ["LOC", "CLR"]
    assert function_tags("-LRB-") == [] and function_tags("NP") == []


def test_constituency_remove_empty_prunes_emptied_nodes():
    tree = Tree.from_string("(S (NP-SBJ (-NONE- *-1)) (VP (TO to) (VP (VB go) (NP (-NONE- *T*-2)))))")
    assert remove_empty(tree).to_string() == "(S (VP (TO to) (VP (VB go))))"
    assert remove_empty(Tree.from_string("( (S (NP (-NONE- *))))")) is None
    assert tree.leaves()[0] == "*-1"  # the input is not modified


def test_constituency_clean_ptb_full_pipeline():
    raw = Tree.from_string(
        "( (S (NP-SBJ-1 (NNP Mr.) (NNP X)) (VP (VBD said) (SBAR (-NONE- 0) "
        "(S (NP-SBJ (-NONE- *-1)) (VP (TO to) (VP (VB go)))))) (. .)))"
    )
    clean = clean_ptb(raw)
    assert clean.to_string() == "(S (NP (NNP Mr.) (NNP X)) (VP (VBD said) (SBAR (S (VP (TO to) (VP (VB go)))))) (. .))"
    kept = clean_ptb(raw, strip_tags=False, remove_empties=False, unwrap_root=False)
    assert kept == raw and kept is not raw
    assert strip_function_tags(Tree.from_string("(NP-SBJ=2 (NN-HLN a))")).to_string() == "(NP (NN a))"


def test_constituency_unwrap():
    assert unwrap(Tree.from_string("(ROOT (S (NN a)))")).label == "S"
    assert unwrap(Tree.from_string("( (S (NN a)))")).label == "S"
    two = Tree.from_string("( (S (NN a)) (. .))")
    assert unwrap(two) is two  # a wrapper with two children stays: the tree needs one root


def test_constituency_unescape_word():
    assert [unescape_word(w) for w in ["-LRB-", "-RCB-", "1\\/2", "\\*", "cat"]] == ["(", "}", "1/2", "*", "cat"]


def _nested(depth: int) -> str:
    return "(S " * (depth - 1) + "(NN x)" + ")" * (depth - 1)


def test_tree_nesting_up_to_the_limit_reads_and_converts(tmp_path):
    """MAX_TREE_DEPTH levels go through the whole PTB reader (head rules included) with room on the stack."""
    from syntaxformer.data.constituency import MAX_TREE_DEPTH
    from syntaxformer.data.readers.ptb import read_ptb

    path = tmp_path / "deep.mrg"
    path.write_text(_nested(MAX_TREE_DEPTH) + "\n")
    (sentence,) = read_ptb(path)
    assert sentence.words == ["x"] and sentence.tree == Tree.from_string(sentence.tree.to_string())
    assert "Tree.from_string(" in repr(sentence.tree)


@pytest.mark.parametrize("depth", [201, 450, 5000, 100_000])
def test_tree_nesting_past_the_limit_is_a_clear_error_not_a_recursion_error(tmp_path, depth):
    from syntaxformer.data.readers.ptb import read_ptb

    path = tmp_path / "deep.mrg"
    path.write_text("( " + _nested(depth) + " )\n")
    with pytest.raises(FormatError, match=r"deep\.mrg:1: tree nested more than 200 levels deep"):
        list(read_ptb(path))
