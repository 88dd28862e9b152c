"""Head rules: one hand-built tree per rule, both converters, and validity on random trees."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer.data import tree as T
from syntaxformer.data.constituency import Tree, remove_empty, strip_function_tags
from syntaxformer.data.headrules import (
    PTB_TO_UPOS,
    guess_tags,
    head_child,
    ptb_to_upos,
    to_dependencies,
    unlabeled_to_dependencies,
)
from syntaxformer.data.readers.ptb import read_ptb
from syntaxformer.errors import TreeError
from tests.conftest import data_path


def arcs(text: str) -> dict[str, tuple[str, str]]:
    """``{word: (head word or "ROOT", label)}`` of the converted tree (words must be unique)."""
    tree = Tree.from_string(text)
    words = tree.leaves()
    assert len(set(words)) == len(words), "test trees need unique words"
    heads, rels = to_dependencies(tree)
    T.check_heads(heads)
    assert T.roots(heads) == [rels.index("ROOT")]
    return {w: (words[h] if h >= 0 else "ROOT", r) for w, h, r in zip(words, heads, rels)}


def unlabeled_arcs(text: str, tags: list[str] | None) -> dict[str, tuple[str, str]]:
    tree = Tree.from_string(text)
    words = tree.leaves()
    heads, rels = unlabeled_to_dependencies(tree, tags)
    T.check_heads(heads)
    assert len(T.roots(heads)) == 1
    return {w: (words[h] if h >= 0 else "ROOT", r) for w, h, r in zip(words, heads, rels)}


# -- one tree per rule --------------------------------------------------------------------------------------
def test_headrules_main_verb_heads_modal_and_auxiliaries():
    a = arcs(
        "(S (NP-SBJ (NNP Pierre) (NNP Vinken)) (VP (MD will) (VP (VB join) (NP (DT the) (NN board)) "
        "(PP-CLR (IN as) (NP (DT a) (NN director))))) (. .))"
    )
    assert a["join"] == ("ROOT", "ROOT")
    assert a["will"] == ("join", "aux")
    assert a["Vinken"] == ("join", "nsubj") and a["Pierre"] == ("Vinken", "compound")
    assert a["board"] == ("join", "dobj") and a["the"] == ("board", "det")
    assert a["."] == ("join", "punct")
    a = arcs("(S (NP (PRP He)) (VP (VBZ has) (VP (VBN been) (VP (VBG eating)))))")
    assert a["eating"] == ("ROOT", "ROOT") and a["has"] == ("eating", "aux") and a["been"] == ("eating", "aux")


def test_headrules_preposition_heads_its_object():
    a = arcs("(S (NP (PRP He)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))))")
    assert a["on"] == ("sat", "prep") and a["mat"] == ("on", "pobj") and a["the"] == ("mat", "det")


def test_headrules_copula_heads_like_spacy():
    # en_core_web_sm: He <-nsubj- is -attr-> teacher; is is the root
    a = arcs("(S (NP (PRP He)) (VP (VBZ is) (NP (DT a) (NN teacher))) (. .))")
    assert a["is"] == ("ROOT", "ROOT") and a["teacher"] == ("is", "attr") and a["He"] == ("is", "nsubj")
    a = arcs("(S (NP (PRP She)) (VP (VBZ is) (ADJP (JJ happy))))")
    assert a["is"] == ("ROOT", "ROOT") and a["happy"] == ("is", "acomp")


def test_headrules_first_conjunct_heads_coordination():
    a = arcs(
        "(S (NP (PRP I)) (VP (VBD bought) (NP (NP (NNS apples)) (, ,) (NP (NNS oranges)) (CC and) (NP (NNS bananas)))))"
    )
    assert a["apples"] == ("bought", "dobj")
    assert a["oranges"] == ("apples", "conj") and a[","] == ("apples", "punct")
    assert a["bananas"] == ("oranges", "conj") and a["and"] == ("oranges", "cc")
    a = arcs("(NP (NNP John) (CC and) (NNP Mary))")
    assert a["John"] == ("ROOT", "ROOT") and a["Mary"] == ("John", "conj") and a["and"] == ("John", "cc")
    a = arcs("(S (S (NP (NNS Prices)) (VP (VBD rose))) (, ,) (CC but) (S (NP (NN volume)) (VP (VBD fell))) (. .))")
    assert a["rose"] == ("ROOT", "ROOT") and a["fell"] == ("rose", "conj") and a["but"] == ("rose", "cc")


def test_headrules_coordinated_premodifiers_stay_inside_the_noun_phrase():
    a = arcs("(NP (DT the) (JJ black) (CC and) (JJ white) (NN cat))")
    assert a["cat"] == ("ROOT", "ROOT") and a["black"] == ("cat", "amod")
    assert a["white"] == ("black", "conj") and a["and"] == ("black", "cc")


def test_headrules_subordinator_and_complementizer_depend_on_the_clause_verb():
    a = arcs(
        "(S (NP (PRP I)) (VP (VBD left) (SBAR-PRP (IN because) (S (NP (PRP they)) (VP (VBD wanted) "
        "(S (VP (TO to) (VP (VB buy) (NP (NN milk))))))))))"
    )
    assert a["because"] == ("wanted", "mark") and a["wanted"] == ("left", "advcl")
    assert a["to"] == ("buy", "aux") and a["buy"] == ("wanted", "xcomp") and a["milk"] == ("buy", "dobj")
    a = arcs("(S (NP (PRP I)) (VP (VBD said) (SBAR (IN that) (S (NP (PRP he)) (VP (VBD left))))))")
    assert a["that"] == ("left", "mark") and a["left"] == ("said", "ccomp")


def test_headrules_possessive_attaches_to_possessor():
    a = arcs("(NP (NP (DT the) (NN man) (POS 's)) (NN dog))")
    assert a["dog"] == ("ROOT", "ROOT") and a["man"] == ("dog", "poss") and a["'s"] == ("man", "case")
    a = arcs("(NP (PRP$ his) (NN hat))")
    assert a["his"] == ("hat", "poss")


def test_headrules_noun_phrase_headed_by_last_noun():
    a = arcs("(NP (DT the) (JJ big) (NN stock) (NNS prices))")
    assert a["prices"] == ("ROOT", "ROOT") and a["stock"] == ("prices", "compound") and a["big"] == ("prices", "amod")
    a = arcs("(NP (NP (DT the) (NN company)) (PP (IN of) (NP (NNS dreams))))")
    assert a["company"] == ("ROOT", "ROOT") and a["of"] == ("company", "prep")
    a = arcs("(NP (DT the) (NNP Justice) (NNP Department) (NN official))")
    assert a["Justice"] == ("Department", "compound") and a["Department"] == ("official", "compound")


def test_headrules_punctuation_attaches_to_head_of_its_constituent():
    a = arcs("(S (NP (NP (NNP Henderson)) (, ,) (NP (DT a) (NN lawyer)) (, ;)) (VP (VBD left)) (. .))")
    assert a["Henderson"] == ("left", "nsubj") and a["lawyer"] == ("Henderson", "appos")
    assert a["."] == ("left", "punct")
    words = Tree.from_string("(S (NP (NP (NNP Henderson)) (, ,) (NP (DT a) (NN lawyer)) (, ,)) (VP (VBD left)))")
    heads, rels = to_dependencies(words)
    # the comma that opens the apposition hangs on its noun; the one that closes it on the verb (as spaCy does)
    assert heads[1] == 0 and heads[4] == 5 and rels[1] == rels[4] == "punct"


def test_headrules_passive_and_relative_clause_labels():
    a = arcs("(S (NP-SBJ-1 (DT The) (NN firm)) (VP (VBD was) (VP (VBN bought) (PP-LGS (IN by) (NP (NNP X))))))")
    assert a["was"] == ("bought", "auxpass") and a["firm"] == ("bought", "nsubjpass") and a["by"] == ("bought", "agent")
    a = arcs("(NP (NP (DT the) (NN dog)) (SBAR (WHNP (WDT which)) (S (VP (VBD barked)))))")
    assert a["barked"] == ("dog", "relcl") and a["which"] == ("barked", "nsubj")


def test_headrules_function_tags_and_wrappers_do_not_change_heads():
    raw = Tree.from_string("( (S (NP-SBJ-1 (NNP Mr.) (NNP X)) (VP (VBD said) (NP-TMP (NN yesterday))) (. .)))")
    stripped = strip_function_tags(raw).children[0]
    assert to_dependencies(raw).heads == to_dependencies(stripped).heads
    rooted = Tree("ROOT", [stripped])
    assert to_dependencies(rooted).heads == to_dependencies(stripped).heads


def test_headrules_head_child():
    assert head_child(Tree.from_string("(VP (MD will) (VP (VB go)))")) == 1
    assert head_child(Tree.from_string("(PP (IN in) (NP (NN town)))")) == 0
    assert head_child(Tree.from_string("(SBAR (IN that) (S (VP (VB go))))")) == 1
    assert head_child(Tree.from_string("(NP (NP (NN a)) (CC and) (NP (NN b)))")) == 0
    with pytest.raises(TreeError):
        head_child(Tree.from_string("(NN a)"))


def test_headrules_errors():
    with pytest.raises(TreeError, match="2 tags for a tree of 1 words"):
        to_dependencies(Tree.from_string("(NP (NN a))"), tags=["NN", "NN"])
    with pytest.raises(TreeError, match="empty element"):
        to_dependencies(Tree.from_string("(S (NP (-NONE- *)) (VP (VB go)))"))
    with pytest.raises(TreeError, match="tags for a tree"):
        unlabeled_to_dependencies(Tree.from_string("(2 (2 a) (2 b))"), tags=["DT"])


def test_headrules_tags_argument_overrides_preterminals():
    tree = Tree.from_string("(X (X a) (X b))")
    assert to_dependencies(tree, tags=["DT", "NN"]).heads == [1, -1]


def test_headrules_ptb_to_upos():
    assert ptb_to_upos(["NNP", "VBZ", "DT", "NN", "."]) == ["PROPN", "VERB", "DET", "NOUN", "PUNCT"]
    assert ptb_to_upos(["PRP", "VBZ", "JJ"], ["He", "is", "happy"]) == ["PRON", "AUX", "ADJ"]
    assert ptb_to_upos(["VBZ", "VBN", "IN"], ["has", "left", "because"], ["aux", "ROOT", "mark"]) == [
        "AUX",
        "VERB",
        "SCONJ",
    ]
    assert ptb_to_upos(["NN-HLN", "ZZZ"]) == ["NOUN", "X"]
    assert set(PTB_TO_UPOS.values()) <= {
        "ADJ",
        "ADP",
        "ADV",
        "AUX",
        "CCONJ",
        "DET",
        "INTJ",
        "NOUN",
        "NUM",
        "PART",
        "PRON",
        "PROPN",
        "PUNCT",
        "SCONJ",
        "SYM",
        "VERB",
        "X",
        "SPACE",
    }


# -- trees without categories (SST) ---------------------------------------------------------------------------
SST = "(3 (2 It) (4 (4 (2 's) (3 (2 a) (3 (3 lovely) (2 film)))) (2 .)))"


def test_headrules_unlabeled_with_tags():
    a = unlabeled_arcs(SST, ["PRP", "VBZ", "DT", "JJ", "NN", "."])
    assert a["'s"] == ("ROOT", "ROOT") and a["It"] == ("'s", "nsubj") and a["film"] == ("'s", "dobj")
    assert a["a"] == ("film", "det") and a["lovely"] == ("film", "amod") and a["."] == ("'s", "punct")


def test_headrules_unlabeled_aux_to_mark_coordination():
    a = unlabeled_arcs("(2 (2 He) (2 (2 will) (2 (2 join) (2 (2 the) (2 board)))))", ["PRP", "MD", "VB", "DT", "NN"])
    assert a["join"] == ("ROOT", "ROOT") and a["will"] == ("join", "aux") and a["board"] == ("join", "dobj")
    a = unlabeled_arcs("(2 (2 wanted) (2 (2 to) (2 go)))", ["VBD", "TO", "VB"])
    assert a["wanted"] == ("ROOT", "ROOT") and a["go"] == ("wanted", "xcomp") and a["to"] == ("go", "aux")
    a = unlabeled_arcs("(2 (2 left) (2 (2 because) (2 (2 they) (2 cried))))", ["VBD", "IN", "PRP", "VBD"])
    assert a["because"] == ("cried", "mark") and a["cried"] == ("left", "ccomp")
    a = unlabeled_arcs("(2 (2 (2 Buy) (2 and)) (2 Accorsi))", ["NNP", "CC", "NNP"])
    assert a["Buy"] == ("ROOT", "ROOT") and a["Accorsi"] == ("Buy", "conj") and a["and"] == ("Buy", "cc")
    a = unlabeled_arcs("(2 (2 in) (2 (2 the) (2 end)))", ["IN", "DT", "NN"])
    assert a["in"] == ("ROOT", "ROOT") and a["end"] == ("in", "pobj")


def test_headrules_unlabeled_fallback_without_tags():
    a = unlabeled_arcs(SST, None)
    assert a["'s"] == ("ROOT", "ROOT") and a["a"] == ("film", "det")


def test_headrules_guess_tags():
    words = ["The", "film", "'s", "not", "very", "good", ",", "but", "it", "'s", "quickly", "moving", "-LRB-", "2"]
    assert guess_tags(words) == [
        "DT",
        "NN",
        "POS",
        "RB",
        "RB",
        "NN",
        ",",
        "CC",
        "PRP",
        "VBZ",
        "RB",
        "VBG",
        "-LRB-",
        "CD",
    ]
    assert guess_tags(["the", "movie", "drags"]) == ["DT", "NN", "VBZ"]


# -- validity on random trees ---------------------------------------------------------------------------------
PHRASES = [
    "S",
    "NP",
    "VP",
    "PP",
    "SBAR",
    "ADJP",
    "ADVP",
    "QP",
    "WHNP",
    "PRN",
    "UCP",
    "FRAG",
    "SINV",
    "SQ",
    "X",
    "NP-SBJ",
    "S-TPC-1",
    "NX",
    "CONJP",
    "PRT",
]
TAGS = [
    "NN",
    "NNS",
    "NNP",
    "VB",
    "VBD",
    "VBZ",
    "VBN",
    "MD",
    "TO",
    "IN",
    "DT",
    "JJ",
    "RB",
    "CC",
    ",",
    ".",
    "POS",
    "PRP",
    "PRP$",
    "CD",
    "``",
    "''",
    "WDT",
    "-LRB-",
    "RP",
    "EX",
    "$",
]


@st.composite
def labelled_trees(draw, depth=0):
    if depth >= 4 or draw(st.integers(0, 2)) == 0:
        return Tree(draw(st.sampled_from(TAGS)), [draw(st.sampled_from(["is", "a", "to", ",", "and", "x"]))])
    kids = draw(st.lists(labelled_trees(depth=depth + 1), min_size=1, max_size=5))
    return Tree(draw(st.sampled_from(PHRASES)), kids)


@settings(max_examples=300, deadline=None)
@given(labelled_trees())
def test_headrules_random_labelled_trees_give_one_rooted_tree(tree):
    heads, rels = to_dependencies(tree)
    T.check_heads(heads)
    assert len(heads) == len(tree.leaves()) and len(T.roots(heads)) == 1
    assert rels.count("ROOT") == 1


@settings(max_examples=300, deadline=None)
@given(labelled_trees(), st.booleans())
def test_headrules_random_unlabelled_trees_give_one_rooted_tree(tree, with_tags):
    tags = [t for _, t in tree.pos()] if with_tags else None
    heads, rels = unlabeled_to_dependencies(tree, tags)
    T.check_heads(heads)
    assert len(T.roots(heads)) == 1 and rels.count("ROOT") == 1


def test_headrules_remove_empty_then_convert():
    tree = remove_empty(Tree.from_string("(S (NP-SBJ (-NONE- *-1)) (VP (TO to) (VP (VB go))))"))
    assert to_dependencies(tree).heads == [1, -1]


def test_headrules_preposition_heads_such_as_and_rather_than():
    """A PP led by an adjective or adverb before its preposition ("such as X", "rather than X") is headed by the
    preposition, as docs/headrules.md says and spaCy does (such <-amod- as, rather <-advmod- than)."""
    a = arcs("(S (NP (NNS fibers) (PP (JJ such) (IN as) (NP (NN crocidolite)))) (VP (VBP exist)))")
    assert a["as"] == ("fibers", "prep") and a["such"] == ("as", "amod") and a["crocidolite"] == ("as", "pobj")
    a = arcs("(S (NP (NN profit)) (VP (VBD rose) (PP (RB rather) (IN than) (NP (NN loss)))))")
    assert a["than"] == ("rose", "prep") and a["rather"] == ("than", "advmod") and a["loss"] == ("than", "pobj")


@pytest.mark.parametrize(
    "file, index, lead, prep, obj",
    [
        ("wsj_0003.mrg", 19, "such", "as", "crocidolite"),
        ("wsj_0012.mrg", 11, "such", "as", "telephones"),
        ("wsj_0018.mrg", 29, "rather", "than", "million"),
    ],
)
def test_headrules_such_as_rather_than_on_wsj_trees(file, index, lead, prep, obj):
    """The WSJ trees of the PTB sample (0-based tree index in the file) where the old rule headed the PP by
    *such* / *rather*."""
    s = list(read_ptb(data_path("ptb_sample", "treebank", "combined", file)))[index]
    w = s.words
    i, p, o = w.index(lead), w.index(prep, w.index(lead)), w.index(obj, w.index(lead))
    assert s.heads[i] == p and s.deprels[i] == ("amod" if lead == "such" else "advmod")
    assert s.heads[o] == p and s.deprels[o] == "pobj"
    assert s.deprels[p] == "prep" and s.heads[p] not in (i, o)


@pytest.mark.slow
@pytest.mark.parametrize("child, n", [("(NN x)", 150_000), ("(NP-SBJ (NN x)) (VP (VB y)) (, ,) (CC and)", 40_000)])
def test_headrules_flat_tree_of_150000_children_is_linear(child, n):
    """Labelling a phrase used to look at all its children for each child (16k children: 7.6 s; 150k: hours).
    Generous bound for a shared CI machine (about 8 s there under load); a quadratic algorithm takes minutes."""
    import time

    tree = Tree.from_string("(S " + " ".join([child] * n) + ")")
    start = time.perf_counter()
    deps = to_dependencies(tree)
    seconds = time.perf_counter() - start
    assert len(deps.heads) == len(tree.leaves()) and deps.heads.count(-1) == 1
    assert seconds < 30, f"{seconds:.1f} s for {len(deps.heads)} words"
