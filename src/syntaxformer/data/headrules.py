"""Constituency -> dependency conversion by semantic head rules (spaCy / ClearNLP style).

Two converters share one output type, :class:`Dependencies`:

* :func:`to_dependencies` for trees with phrase categories and POS tags (PTB ``.mrg``, Stanford parses such as
  SNLI's; function tags such as ``NP-SBJ`` only sharpen the labels). Head choice follows the conventions the
  English spaCy pipelines were trained on (ClearNLP's conversion of OntoNotes).
* :func:`unlabeled_to_dependencies` for trees without categories (the Stanford Sentiment Treebank, whose node
  labels are sentiment scores). It needs POS tags: ``tags=`` (e.g. :func:`syntaxformer.data.readers.sst.spacy_tagger`)
  or, as a documented fallback, :func:`guess_tags`. Every tree yields a valid single-root dependency tree.

See ``docs/headrules.md`` for the rules, the measured agreement with spaCy and which labels are reliable. One file,
as both converters and the tag guesser read the same private PTB tag classes and word lists.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from syntaxformer.data.constituency import Tree, base_label, function_tags
from syntaxformer.errors import TreeError

__all__ = [
    "PTB_TO_UPOS",
    "PUNCT_TAGS",
    "Dependencies",
    "guess_tags",
    "head_child",
    "ptb_to_upos",
    "to_dependencies",
    "unlabeled_to_dependencies",
]

#: PTB tags of punctuation (spaCy's ``punct``). ``$`` and ``#`` are symbols, not punctuation.
PUNCT_TAGS: frozenset[str] = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "HYPH", "NFP"})

#: PTB (and OntoNotes) tag -> Universal Dependencies UPOS. Context-dependent cases (auxiliaries, ``IN`` as a
#: subordinating conjunction) are refined by :func:`ptb_to_upos` when words / labels are given.
PTB_TO_UPOS: dict[str, str] = {
    "CC": "CCONJ",
    "CD": "NUM",
    "DT": "DET",
    "EX": "PRON",
    "FW": "X",
    "IN": "ADP",
    "JJ": "ADJ",
    "JJR": "ADJ",
    "JJS": "ADJ",
    "LS": "X",
    "MD": "AUX",
    "NN": "NOUN",
    "NNS": "NOUN",
    "NNP": "PROPN",
    "NNPS": "PROPN",
    "PDT": "DET",
    "POS": "PART",
    "PRP": "PRON",
    "PRP$": "PRON",
    "RB": "ADV",
    "RBR": "ADV",
    "RBS": "ADV",
    "RP": "ADP",
    "SYM": "SYM",
    "TO": "PART",
    "UH": "INTJ",
    "VB": "VERB",
    "VBD": "VERB",
    "VBG": "VERB",
    "VBN": "VERB",
    "VBP": "VERB",
    "VBZ": "VERB",
    "WDT": "PRON",
    "WP": "PRON",
    "WP$": "PRON",
    "WRB": "ADV",
    "$": "SYM",
    "#": "SYM",
    ",": "PUNCT",
    ".": "PUNCT",
    ":": "PUNCT",
    "``": "PUNCT",
    "''": "PUNCT",
    "-LRB-": "PUNCT",
    "-RRB-": "PUNCT",
    "HYPH": "PUNCT",
    "NFP": "PUNCT",
    "ADD": "X",
    "AFX": "ADJ",
    "GW": "X",
    "XX": "X",
    "NIL": "X",
    "_SP": "SPACE",
}

_VERB_TAGS = frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ"})
_NOUN_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "NX", "NML"})
_COORD = frozenset({"CC", "CONJP"})
_SEPARATORS = frozenset({",", ":"})
_BE = frozenset({"be", "is", "are", "am", "was", "were", "been", "being", "'s", "'re", "'m", "s", "ai"})
_HAVE = frozenset({"have", "has", "had", "having", "'ve", "'d", "ve"})
_DO = frozenset({"do", "does", "did"})
_GET = frozenset({"get", "gets", "got", "gotten", "getting"})
_AUX_WORDS = _BE | _HAVE | _DO
_NEG = frozenset({"not", "n't", "never"})
_CLAUSE = frozenset({"S", "SINV", "SQ", "SBARQ"})
_NOMINAL = frozenset({"NP", "NX", "NML", "NAC", "WHNP"})
_ADVERBIAL_FTAGS = frozenset({"ADV", "TMP", "LOC", "PRP", "MNR", "DIR", "EXT", "CND", "BNF", "VOC"})
# Complementizers that introduce argument clauses (ccomp); other subordinators introduce adverbial clauses.
_COMPLEMENTIZERS = frozenset({"that", "whether", "if"})

# Head rules for categories without special code: (direction, labels) groups tried in order; in each group the
# children are scanned in that direction and the first whose category is listed wins. Written for semantic
# heads (prepositions over their object, clauses over complementizers, adjectives over their adverbs).
_RULES: dict[str, list[tuple[str, frozenset[str]]]] = {
    k: [(d, frozenset(v)) for d, v in groups]
    for k, groups in {
        "ADJP": [
            ("left", ["JJ", "JJR", "JJS", "VBN", "VBG", "ADJP", "VBD"]),
            ("right", ["NN", "NNS", "NNP", "NNPS", "NX", "NP"]),
            ("right", ["QP", "CD", "$", "ADVP", "RB", "RBR", "RBS", "DT", "IN"]),
        ],
        "ADVP": [
            ("right", ["RB", "RBR", "RBS", "WRB", "ADVP", "JJ", "JJR", "JJS"]),
            ("right", ["IN"]),
            ("left", ["TO", "CD", "VBN", "VBG", "NP", "NN", "NNS", "PP", "DT"]),
        ],
        "CONJP": [("left", ["CC", "RB", "IN"])],
        "FRAG": [("left", ["VP", "S", "SINV", "SQ", "SBAR", "SBARQ", "NP", "ADJP", "PP", "ADVP"])],
        "INTJ": [("left", ["UH", "INTJ"])],
        "LST": [("right", ["LS", "CD"])],
        # the preposition first, so that "such as X" / "rather than X" / "because of X" are headed by as / than /
        # of (spaCy: such <-amod- as, rather <-advmod- than); a PP without one is headed by its verbal, particle,
        # adjective or adverb head
        "PP": [("left", ["IN", "TO"]), ("left", ["VBG", "VBN", "RP", "FW", "JJ", "RB"]), ("left", ["PP"])],
        "PRN": [("left", ["S", "SINV", "SQ", "VP", "NP", "PP", "SBAR", "ADJP", "ADVP", "FRAG"])],
        "PRT": [("right", ["RP"])],
        "QP": [("right", ["CD"]), ("left", ["$", "#", "NNS", "NN", "JJ", "RB", "DT", "QP", "JJR", "JJS"])],
        "RRC": [("left", ["VP", "NP", "ADVP", "ADJP", "PP"])],
        "S": [
            ("left", ["VP"]),
            ("left", ["S", "SINV", "SQ", "SBARQ", "SBAR"]),
            ("left", ["ADJP", "NP", "PP", "UCP", "FRAG", "ADVP", "X"]),
        ],
        "SBAR": [
            ("left", ["S", "SQ", "SINV", "SBAR", "SBARQ", "FRAG", "VP"]),
            ("left", ["NP", "ADJP", "PP", "ADVP"]),
            ("left", ["IN", "WHNP", "WHADVP", "WHPP", "DT"]),
        ],
        "SBARQ": [("left", ["SQ", "S", "SINV", "SBARQ", "FRAG", "VP"])],
        "UCP": [],
        "WHADJP": [("right", ["JJ", "JJR", "ADJP"]), ("left", ["WRB", "RB"])],
        "WHADVP": [("right", ["WRB", "RB"])],
        "WHPP": [("left", ["IN", "TO", "FW"])],
        "X": [],
    }.items()
}
# Punctuation that is handed up when it ends a phrase (or opens one of _RAISE_LEADING_PUNCT).
_RAISED_PUNCT = frozenset({",", ":"})
_RAISE_LEADING_PUNCT = frozenset({"PRN"})
# Categories whose head comes last when no rule applies.
_DEFAULT_RIGHT = frozenset({"ADVP", "LST", "PRT", "WHADVP", "X", "QP", "NP", "NX", "NML", "NAC", "WHNP"})


class Dependencies(NamedTuple):
    """The result of a conversion: the 0-based head of every word (-1 for the single root) and, or ``None``, a label
    per word in spaCy / ClearNLP names (``ROOT``, ``punct``, ``nsubj``, ...)."""

    heads: list[int]
    deprels: list[str] | None


def ptb_to_upos(
    tags: Sequence[str], words: Sequence[str] | None = None, deprels: Sequence[str] | None = None
) -> list[str]:
    """One UD UPOS tag per PTB tag by :data:`PTB_TO_UPOS` (``X`` for others; ``NN-HLN`` counts as ``NN``).

    With ``words``, forms of *be* are ``AUX`` (UD tags the copula ``AUX``); with ``deprels`` (of
    :func:`to_dependencies`), verbs labelled ``aux`` / ``auxpass`` are ``AUX`` and ``IN`` labelled ``mark`` ``SCONJ``.
    """
    out = []
    for i, tag in enumerate(tags):
        tag = base_label(tag)
        upos = PTB_TO_UPOS.get(tag, "X")
        if upos == "VERB":
            if (words is not None and words[i].lower() in _BE) or (
                deprels is not None and deprels[i] in ("aux", "auxpass")
            ):
                upos = "AUX"
        elif tag == "IN" and deprels is not None and deprels[i] == "mark":
            upos = "SCONJ"
        out.append(upos)
    return out


# ======================================================================================================
# Labelled trees (PTB, Stanford parses)
# ======================================================================================================
@dataclass
class _Node:
    """What the converter knows about a converted sub-tree."""

    cat: str  # category without function tags (the tag for a pre-terminal)
    ftags: tuple[str, ...]
    pre: bool  # pre-terminal
    head: int  # leaf index of the lexical head
    word: str  # the head word, lowercased
    tag: str  # the head word's tag
    punct: bool = False  # a punctuation pre-terminal
    has_subject: bool = False  # a clause with an overt subject (after empty elements are gone)
    comp: str = ""  # for SBAR: the complementizer / WH word ("" when none is left)
    wh: bool = False  # for SBAR: introduced by a WH phrase (relative / embedded question)
    poss: bool = False  # an NP that ends in a possessive 's
    pending: list[_Node] | None = None  # trailing punctuation handed up to the parent's head


class _PhraseFacts:
    """What labelling needs to know about all the children of one phrase, computed in one pass."""

    def __init__(self, kids: list[_Node]):
        self.any_ftags = any(k.ftags for k in kids)
        self.first_vp = next((j for j, k in enumerate(kids) if k.cat == "VP"), None)
        # bare NP children (no adverbial / predicative function tag): object candidates, in order
        self.objects = [j for j, k in enumerate(kids) if k.cat == "NP" and not set(k.ftags) & _NON_OBJECT_FTAGS]
        self.commas = [0] * (len(kids) + 1)
        for j, k in enumerate(kids):
            self.commas[j + 1] = self.commas[j] + (k.cat in (",", ":", "-LRB-"))


_NON_OBJECT_FTAGS = frozenset({"TMP", "ADV", "EXT", "LOC", "MNR", "DIR", "PRD", "VOC"})


def head_child(tree: Tree) -> int:
    """Index of the head child of ``tree`` under the semantic head rules of :func:`to_dependencies`.

    Coordination is taken into account (the first conjunct heads). ``tree`` must have sub-tree children.

    Raises:
        TreeError: ``tree`` is a pre-terminal.
    """
    if tree.is_preterminal():
        raise TreeError(f"head_child needs a phrase, got the pre-terminal {tree.to_string()}")
    conv = _Converter(tree, None, labels=False)
    kids = [conv.visit(child, 1) for child in tree.children]  # type: ignore[arg-type]
    return conv._phrase_head(base_label(tree.label), kids, attach=False)


def to_dependencies(tree: Tree, tags: Sequence[str] | None = None, labels: bool = True) -> Dependencies:
    """Convert a constituency tree with phrase categories into a dependency tree.

    Args:
        tree: a PTB-style tree (categories, POS pre-terminals). Function tags, co-indices and a wrapper node
            (``( (S ...) )``, ``(ROOT ...)``) are fine; empty elements (``-NONE-``) must be removed first
            (:func:`syntaxformer.data.constituency.remove_empty`), since they are not words.
        tags: POS tags to use instead of the pre-terminal labels (one per leaf), or ``None``.
        labels: also produce dependency labels (spaCy / ClearNLP names).

    Returns:
        :class:`Dependencies` with exactly one root.

    Raises:
        TreeError: ``tags`` has the wrong length or the tree has an empty element.
    """
    return _Converter(tree, tags, labels).run()


class _Converter:
    """One conversion: bottom-up head choice, arcs and labels for the words of one tree."""

    def __init__(self, tree: Tree, tags: Sequence[str] | None, labels: bool):
        pairs = tree.pos()
        self.tree = tree
        self.words = [w for w, _ in pairs]
        if tags is not None and len(tags) != len(pairs):
            raise TreeError(f"{len(tags)} tags for a tree of {len(pairs)} words")
        self.tags = [base_label(t) for t in (tags if tags is not None else [t for _, t in pairs])]
        for w, t in pairs:
            if base_label(t) == "-NONE-":
                raise TreeError(
                    f"the tree still has the empty element (-NONE- {w}); remove empty elements "
                    "first (syntaxformer.data.constituency.remove_empty)"
                )
        n = len(self.words)
        self.heads = [-1] * n
        self.labels = labels
        self.deprels = ["dep"] * n
        self._leaf = 0
        self._facts_of: list[_Node] | None = None
        self._facts_cache: _PhraseFacts | None = None

    def run(self) -> Dependencies:
        self._leaf = 0
        root = self.visit(self.tree, 0)
        for p in root.pending or ():
            self._link(p, root, "punct")
        self.heads[root.head] = -1
        if not self.labels:
            return Dependencies(self.heads, None)
        self.deprels[root.head] = "ROOT"
        self._passives()
        return Dependencies(self.heads, self.deprels)

    # -- bottom-up traversal ---------------------------------------------------------------------------
    def visit(self, node: Tree, depth: int) -> _Node:
        """Convert the sub-tree ``node`` (at ``depth`` below the tree's top) and describe it."""
        if node.is_preterminal():
            i = self._leaf
            self._leaf += 1
            tag = self.tags[i]
            return _Node(
                tag, tuple(function_tags(node.label)), True, i, self.words[i].lower(), tag, punct=tag in PUNCT_TAGS
            )
        kids = [self.visit(c, depth + 1) for c in node.children]  # type: ignore[arg-type]
        cat = base_label(node.label)
        pending: list[_Node] = []
        if depth > 0:
            # spaCy attaches the comma that closes an appositive or a relative clause to the verb, not the noun:
            # a trailing comma / colon goes to the head of the lowest ancestor in which it is not trailing
            while len(kids) > 1 and kids[-1].punct and kids[-1].cat in _RAISED_PUNCT and not kids[-2].punct:
                pending.insert(0, kids.pop())
            if kids[-1].pending:
                pending = kids[-1].pending + pending
                kids[-1].pending = None
            if (
                cat in _RAISE_LEADING_PUNCT
                and len(kids) > 1
                and kids[0].punct
                and kids[0].cat in _RAISED_PUNCT
                and not kids[1].punct
            ):
                pending.insert(0, kids.pop(0))
        h = self._phrase_head(cat, kids, attach=True)
        head = kids[h]
        for k in kids:
            for p in k.pending or ():
                self._link(p, head, "punct")
        info = _Node(
            cat,
            tuple(function_tags(node.label)),
            False,
            head.head,
            head.word,
            head.tag,
            punct=all(k.punct for k in kids),
            pending=pending or None,
        )
        if cat in _CLAUSE or cat == "VP":
            info.has_subject = any(self._is_subject(i, kids) for i in range(len(kids)))
        if cat == "SBAR":
            for k in kids:
                if k.cat in ("IN", "DT") or k.cat.startswith("WH"):
                    info.comp = k.word
                    info.wh = k.cat.startswith("WH")
                    break
        if cat in _NOMINAL:
            content = [k for k in kids if not k.punct]
            info.poss = bool(content) and content[-1].cat == "POS"
        return info

    # -- head choice -----------------------------------------------------------------------------------
    def _phrase_head(self, cat: str, kids: list[_Node], attach: bool) -> int:
        """Choose the head child, attach the others to it (when ``attach``); returns the head's index."""
        content = [i for i, k in enumerate(kids) if not k.punct]
        # a coordinator between content children, with a non-coordinator content child after it
        last_plain = max((i for i in content if kids[i].cat not in _COORD), default=-1)
        coords = [i for i in content if kids[i].cat in _COORD and i > content[0] and i < last_plain]
        if coords:
            return self._coordination(cat, kids, coords, attach)
        h = self._head_index(cat, kids, list(range(len(kids))))
        if attach:
            names = self._name_runs(kids, h) if cat in _NOMINAL else {}
            for i in range(len(kids)):
                if i in names:
                    self._link(kids[i], kids[names[i]], "compound")
                elif i == 0 and cat == "SINV" and kids[0].cat == "``" and len(kids) > 1 and not kids[1].punct:
                    # `` Quote , '' said X: spaCy hangs the opening quote on the quoted clause
                    self._link(kids[0], kids[1], "punct")
                elif i != h:
                    self._attach(cat, kids, h, i)
        return h

    @staticmethod
    def _name_runs(kids: list[_Node], h: int) -> dict[int, int]:
        """Inside a run of proper nouns before a common-noun head, words attach to the run's last word.

        ``the [Justice Department] official``: *Justice* -> *Department* -> *official* (spaCy's analysis).
        """
        if kids[h].cat in ("NNP", "NNPS"):
            return {}
        out: dict[int, int] = {}
        i = 0
        while i < h:
            if kids[i].cat in ("NNP", "NNPS"):
                j = i
                while j + 1 < h and kids[j + 1].cat in ("NNP", "NNPS"):
                    j += 1
                for k in range(i, j):
                    out[k] = j
                i = j + 1
            else:
                i += 1
        return out

    def _coordination(self, cat: str, kids: list[_Node], coords: list[int], attach: bool) -> int:
        content = [i for i, k in enumerate(kids) if not k.punct]
        first, last = content[0], content[-1]
        separators = set(coords) | {i for i, k in enumerate(kids) if k.cat in _SEPARATORS and first < i < last}
        segments: list[list[int]] = [[]]
        for i in range(len(kids)):
            if i in separators:
                if segments[-1]:
                    segments.append([])
            else:
                segments[-1].append(i)
        if not segments[-1]:
            segments.pop()
        # A flat noun phrase whose coordinator joins two pre-modifiers ("the stock and bond markets",
        # "black and white cat"): the phrase head stays the last noun, the coordination stays local.
        flat = all(k.pre for k in kids)
        if (
            flat
            and cat in _NOMINAL | {"ADJP", "QP"}
            and len(coords) == 1
            and len(segments) == 2
            and len([i for i in segments[-1] if not kids[i].punct]) > 1
        ):
            c = coords[0]
            h = self._head_index(cat, kids, [i for i in range(len(kids)) if i != c])
            left, right = c - 1, c + 1
            if left >= 0 and right < h and not kids[left].punct and not kids[right].punct:
                if attach:
                    for i in range(len(kids)):
                        if i == right:
                            self._link(kids[i], kids[left], "conj")
                        elif i == c:
                            self._link(kids[i], kids[left], "cc")
                        elif i != h:
                            self._attach(cat, kids, h, i)
                return h
        seg_heads = []
        for seg in segments:
            h = self._head_index(cat, kids, seg)
            seg_heads.append(h)
            if attach:
                for i in seg:
                    if i != h:
                        self._attach(cat, kids, h, i)
        if attach:
            for k in range(1, len(segments)):
                prev = seg_heads[k - 1]
                self._link(kids[seg_heads[k]], kids[prev], "conj")
                for i in range(segments[k - 1][-1] + 1, segments[k][0]):
                    label = "punct" if kids[i].punct else "cc"
                    self._link(kids[i], kids[prev], label)
        return seg_heads[0]

    def _head_index(self, cat: str, kids: list[_Node], idx: list[int]) -> int:
        """Head among the children ``idx`` of a phrase of category ``cat`` (no coordination analysis)."""
        cand = [i for i in idx if not kids[i].punct and kids[i].cat not in _COORD]
        if not cand:
            cand = [i for i in idx if not kids[i].punct] or list(idx)
        if cat in ("VP", "SQ", "SINV"):
            verbs = [i for i in cand if kids[i].cat in _VERB_TAGS or kids[i].cat in ("MD", "TO")]
            vps = [i for i in cand if kids[i].cat == "VP"]
            if vps:
                p = vps[0]
                before = [i for i in verbs if i < p]
                if all(self._is_aux(kids[i], kids[p]) for i in before):
                    return p
            if verbs:
                return verbs[0]
            # no verb: a predicate tagged as an adjective ("is further (JJ complicated)"), a noun, a clause
            for group in (("JJ", "JJR", "JJS", "ADJP"), ("NN", "NNS", "NNP", "NP"), ("S", "SQ", "SINV", "SBAR")):
                for i in cand:
                    if kids[i].cat in group:
                        return i
            return cand[0]
        if cat in _NOMINAL:
            for i in reversed(cand):
                if kids[i].cat in _NOUN_TAGS:
                    return i
            for i in cand:
                if kids[i].cat in ("NP", "NML", "WHNP"):
                    return i
            for tag_group in (
                ("CD", "QP"),
                ("$", "#"),
                ("ADJP", "PRN", "JJ", "JJS", "JJR", "VBG"),
                ("PRP", "EX", "WP", "WDT", "DT", "FW", "SYM", "RB", "ADVP"),
            ):
                for i in reversed(cand):
                    if kids[i].cat in tag_group:
                        return i
            return cand[-1]
        for direction, labels in _RULES.get(cat, ()):
            order = cand if direction == "left" else list(reversed(cand))
            for i in order:
                if kids[i].cat in labels:
                    return i
        return cand[-1] if cat in _DEFAULT_RIGHT else cand[0]

    @staticmethod
    def _is_aux(verb: _Node, vp: _Node) -> bool:
        return verb.cat in ("MD", "TO") or verb.word in _AUX_WORDS or (verb.word in _GET and vp.tag == "VBN")

    def _is_subject(self, i: int, kids: list[_Node]) -> bool:
        k = kids[i]
        if "SBJ" in k.ftags:
            return True
        if k.cat != "NP":
            return False
        facts = self._facts(kids)  # with function tags present, trust them
        return not facts.any_ftags and facts.first_vp is not None and i < facts.first_vp

    def _facts(self, kids: list[_Node]) -> _PhraseFacts:
        """Facts about one phrase's children, computed once per phrase (so that labelling a phrase of n children
        takes O(n log n), not O(n^2): a flat tree of 150,000 children must not take hours)."""
        facts = self._facts_cache
        if self._facts_of is not kids or facts is None:
            self._facts_of = kids
            facts = self._facts_cache = _PhraseFacts(kids)
        return facts

    # -- arcs and labels -------------------------------------------------------------------------------
    def _link(self, dep: _Node, head: _Node, label: str) -> None:
        self.heads[dep.head] = head.head
        if self.labels:
            self.deprels[dep.head] = "punct" if dep.punct else label

    def _attach(self, cat: str, kids: list[_Node], h: int, i: int) -> None:
        self._link(kids[i], kids[h], self._label(cat, kids, h, i) if self.labels else "dep")

    def _label(self, cat: str, kids: list[_Node], h: int, i: int) -> str:
        d, head = kids[i], kids[h]
        dc = d.cat
        if d.punct:
            return "punct"
        if dc in _COORD:
            return "preconj" if d.word in ("both", "either", "neither") and i < h else "cc"
        if dc == "POS":
            return "case"
        if dc in ("PRP$", "WP$") or (dc in _NOMINAL and d.poss):
            return "poss"
        if dc == "PRT" or dc == "RP":
            return "prt"
        if d.word in _NEG and dc in ("RB", "ADVP"):
            return "neg"
        if dc in ("UH", "INTJ"):
            return "intj"
        verbal = cat in ("VP", "SQ", "SINV")
        if verbal and i < h and (dc in _VERB_TAGS or dc in ("MD", "TO")) and head.cat == "VP":
            return "aux"
        if cat in ("PP", "WHPP") and head.pre:
            if i > h:
                if dc in ("PP", "WHPP"):
                    return "prep"
                return "pobj" if dc in _NOMINAL or dc in _NOUN_TAGS or dc in ("QP", "CD", "PRP", "ADJP") else "pcomp"
            if dc in ("RB", "ADVP"):
                return "advmod"  # rather <-advmod- than
            return "amod" if dc in ("JJ", "JJR", "JJS", "ADJP") else "dep"  # such <-amod- as (spaCy)
        if cat == "SBAR":
            if dc in ("IN", "DT") or (dc == "RB" and i < h):
                return "mark"
            if dc == "WHNP":
                return "dobj" if head.has_subject else "nsubj"
            if dc in ("WHADVP", "WHADJP"):
                return "advmod"
            if dc == "WHPP":
                return "prep"
        if dc in ("PP", "WHPP"):
            if "LGS" in d.ftags or (d.word == "by" and cat == "VP" and head.tag == "VBN" and not d.ftags):
                return "agent"  # the logical subject of a passive
            return "prep"
        if dc in ("DT", "WDT"):
            return "det"
        if dc == "PDT":
            return "predet"
        if cat == "QP":
            return "compound" if dc == "CD" else "quantmod"
        if dc in ("RB", "RBR", "RBS", "WRB", "ADVP", "WHADVP"):
            return "advmod"
        if cat in _NOMINAL:
            return self._label_in_np(kids, h, i)
        if cat in ("ADJP", "ADVP", "WHADJP"):
            if dc in _NOMINAL:
                return "npadvmod"
            if dc in ("S", "SBAR"):
                return "xcomp" if dc == "S" and not d.has_subject else "ccomp"
            return "advmod" if dc in ("JJ", "ADJP", "CD", "QP") else "dep"
        if verbal or cat in _CLAUSE or cat in ("FRAG", "UCP", "PRN", "RRC", "X"):
            return self._label_in_clause(cat, kids, h, i)
        return "dep"

    def _label_in_np(self, kids: list[_Node], h: int, i: int) -> str:
        d = kids[i]
        dc = d.cat
        if dc in ("JJ", "JJR", "JJS", "ADJP", "VBN", "VBG") and i < h:
            return "amod"
        if dc in ("CD", "QP"):
            return "nummod"
        if dc in _NOUN_TAGS or dc == "FW":
            return "compound" if i < h else "appos" if self._comma_between(kids, h, i) else "dep"
        if dc in ("$", "#"):
            return "quantmod" if i < h else "dep"
        if dc in _NOMINAL:
            if i > h:
                return "appos" if self._comma_between(kids, h, i) or d.tag in ("NNP", "NNPS") else "npadvmod"
            return "nmod" if d.tag in _NOUN_TAGS else "dep"
        if dc == "SBAR":
            return "relcl" if d.wh or d.comp == "" else "acl"
        if dc in ("VP", "S", "RRC"):
            return "acl" if dc != "RRC" else "relcl"
        if dc == "PRN":
            return "appos"
        if dc in ("JJ", "JJR", "JJS", "ADJP"):
            return "amod"
        return "dep"

    def _label_in_clause(self, cat: str, kids: list[_Node], h: int, i: int) -> str:
        d, head = kids[i], kids[h]
        dc = d.cat
        ft = set(d.ftags)
        if dc in ("NP", "WHNP") or dc in _NOUN_TAGS or dc in ("PRP", "EX"):
            if d.tag == "EX":
                return "expl"
            if ft & {"TMP", "ADV", "EXT", "LOC", "MNR", "DIR", "VOC"}:
                return "npadvmod"
            if "PRD" in ft:
                return "attr"
            if self._is_subject(i, kids) or (i < h and cat in _CLAUSE and not ft):
                return "nsubj"
            if i > h:
                if head.word in _BE and head.cat in _VERB_TAGS:
                    return "attr"
                # the first of two or more bare NP objects after the head is the dative
                objects = self._facts(kids).objects
                first = bisect.bisect_right(objects, h)
                if len(objects) - first > 1 and i == objects[first]:
                    return "dative"
                return "dobj"
            return "npadvmod"
        if dc in ("ADJP", "JJ", "JJR", "JJS"):
            return "acomp" if i > h else "advcl" if dc == "ADJP" else "amod"
        if dc in ("S", "SQ", "SINV", "SBARQ"):
            if "SBJ" in ft or ("NOM" in ft and i < h):
                return "csubj"
            if ft & _ADVERBIAL_FTAGS:
                return "advcl"
            if "TPC" in ft or (cat in ("S", "SINV") and dc in ("S", "SQ", "SINV") and d.has_subject):
                return "ccomp"
            if cat in ("VP",) and i > h:
                return "ccomp" if d.has_subject else "xcomp"
            return "advcl"
        if dc == "SBAR":
            if "SBJ" in ft:
                return "csubj"
            if ft & _ADVERBIAL_FTAGS:
                return "advcl"
            if cat == "VP" and i > h and (d.comp in _COMPLEMENTIZERS or d.comp == "" or d.wh):
                return "ccomp"
            if "TPC" in ft:
                return "ccomp"
            return "advcl"
        if dc == "VP":
            return "xcomp" if i > h else "advcl"
        if dc in _VERB_TAGS or dc in ("MD", "TO"):
            return "aux" if i < h else "dep"
        if dc in ("CD", "QP"):
            return "dobj" if i > h and cat == "VP" else "npadvmod"
        if dc == "PRN":
            return "parataxis"
        if dc in ("SBARQ", "FRAG"):
            return "ccomp" if i > h else "advcl"
        return "dep"

    def _comma_between(self, kids: list[_Node], h: int, i: int) -> bool:
        lo, hi = (h, i) if h < i else (i, h)
        commas = self._facts(kids).commas  # commas[j]: separators among kids[:j]
        return commas[hi] - commas[lo + 1] > 0

    def _passives(self) -> None:
        """``aux`` -> ``auxpass`` for *be* / *get* before a past participle; then ``nsubj`` -> ``nsubjpass``."""
        passive_heads = set()
        for i, (h, rel) in enumerate(zip(self.heads, self.deprels)):
            if rel == "aux" and h >= 0 and self.tags[h] == "VBN" and self.words[i].lower() in _BE | _GET:
                self.deprels[i] = "auxpass"
                passive_heads.add(h)
        for i, (h, rel) in enumerate(zip(self.heads, self.deprels)):
            if h in passive_heads and rel in ("nsubj", "csubj"):
                self.deprels[i] = rel + "pass"


# ======================================================================================================
# Trees without categories (SST)
# ======================================================================================================
# Word classes of the category-free converter, from the POS tag of a constituent's head.
_V, _P, _TO, _N, _NUM, _A, _PP, _R, _D, _POSS, _POS, _CC, _PUNCT, _O = (
    "V P TO N NUM A PP R D POSS POS CC PUNCT O".split()  # noqa: SIM905 (a word list)
)
_RANK = {_V: 8, _P: 7, _TO: 7, _N: 6, _NUM: 5, _A: 5, _PP: 4, _R: 3, _D: 2, _POSS: 2, _POS: 1, _CC: 1, _O: 1, _PUNCT: 0}
_SUBORDINATORS = frozenset(
    (  # noqa: SIM905 (a word list)
        "because if although though while whether unless since that once until whereas lest so than as before after "
        "when whenever where wherever"
    ).split()
)


# PTB tag -> word class (punctuation first: NFP is punctuation; any other tag is _O)
_TAG_KINDS = {
    tag: kind
    for kind, tags in (
        (_V, "VB VBD VBG VBN VBP VBZ MD"),
        (_TO, "TO"),
        (_P, "IN"),
        (_N, "NN NNS NNP NNPS NX NML PRP EX WP FW SYM $ # NFP ADD XX GW"),
        (_NUM, "CD"),
        (_A, "JJ JJR JJS AFX"),
        (_R, "RB RBR RBS WRB RP UH"),
        (_D, "DT PDT WDT"),
        (_POSS, "PRP$ WP$"),
        (_POS, "POS"),
        (_CC, "CC"),
    )
    for tag in tags.split()
}


def _kind(tag: str) -> str:
    return _PUNCT if tag in PUNCT_TAGS else _TAG_KINDS.get(tag, _O)


@dataclass
class _Sub:
    """A converted sub-tree of a category-free tree."""

    head: int
    kind: str
    pre: bool
    aux: bool = False  # headed by an auxiliary that has taken no argument yet
    to_inf: bool = False  # an infinitive with "to"
    clause: bool = False  # a verb with its subject, a subordinator or a relative pronoun: a full clause
    bare: bool = False  # a noun (phrase) without determiner, possessor or number
    adverbs: tuple[int, ...] = ()  # adverbs on an auxiliary; they move to the verb the auxiliary joins
    coord_left: bool = False  # starts with a coordinator ("and Mary")
    coord_right: bool = False  # ends with a coordinator ("John and")


def unlabeled_to_dependencies(tree: Tree, tags: Sequence[str] | None = None, labels: bool = True) -> Dependencies:
    """Convert a tree whose labels are not categories (SST sentiment trees) into a dependency tree.

    Each constituent gets a word class from the tag of its head word; two sister constituents are joined by fixed
    preferences (``docs/headrules.md``, "Trees without categories (SST)"). The result is a valid tree with one root for
    any binary or n-ary tree.

    Args:
        tree: the tree; only its shape and words are used.
        tags: one PTB tag per word (e.g. from spaCy's tagger on the tree's words). ``None`` falls back to
            :func:`guess_tags`, which is much less accurate.
        labels: also produce a small label set (``ROOT punct cc conj aux mark case det poss prep pobj amod
            advmod compound nummod nsubj dobj dep``).

    Returns:
        :class:`Dependencies` with exactly one root.

    Raises:
        TreeError: ``tags`` has the wrong length.
    """
    words = tree.leaves()
    if tags is None:
        tags = guess_tags(words)
    if len(tags) != len(words):
        raise TreeError(f"{len(tags)} tags for a tree of {len(words)} words")
    tags = [base_label(t) for t in tags]
    lower = [w.lower() for w in words]
    heads = [-1] * len(words)
    rels = ["dep"] * len(words)
    leaf = 0

    def link(dep: _Sub, head: _Sub, rel: str) -> None:
        heads[dep.head] = head.head
        rels[dep.head] = "punct" if dep.kind == _PUNCT else rel

    def combine(a: _Sub, b: _Sub) -> _Sub:
        """Join two adjacent constituents ``a`` (left) and ``b`` (right) into one."""
        ka, kb = a.kind, b.kind
        if kb == _PUNCT and ka != _PUNCT:
            link(b, a, "punct")
            return replace(a, pre=False)
        if ka == _PUNCT:
            link(a, b, "punct")
            return replace(b, pre=False)
        if ka == _CC and a.pre and kb != _CC:
            link(a, b, "cc")
            return replace(b, pre=False, coord_left=True)
        if kb == _CC and b.pre:
            link(b, a, "cc")
            return replace(a, pre=False, coord_right=True)
        if b.coord_left or a.coord_right:
            link(b, a, "conj")
            return replace(a, pre=False, coord_right=False)
        if kb == _POS:
            link(b, a, "case")
            return _Sub(a.head, _POSS, False)
        if ka == _V and kb == _V:
            if a.aux and not b.to_inf and not b.clause:
                link(a, b, "aux")
                for r in a.adverbs:  # "( 're not ) moved": spaCy hangs "not" on the main verb
                    heads[r] = b.head
                return replace(b, pre=False)
            link(b, a, "xcomp" if b.to_inf else "ccomp")
            return replace(a, pre=False, aux=False)
        if ka == _TO and kb == _V:
            link(a, b, "aux")
            return replace(b, pre=False, aux=False, to_inf=True)
        if ka == _P and kb == _V and lower[a.head] in _SUBORDINATORS:
            link(a, b, "mark")
            return replace(b, pre=False, aux=False, clause=True)
        if ka in (_P, _TO) and a.pre and kb not in (_R, _P, _TO):
            link(b, a, "pobj" if kb in (_N, _NUM, _POSS, _D, _A) else "pcomp")
            return _Sub(a.head, _PP, False)
        if kb == _V and ka in (_N, _NUM, _D, _POSS):
            if b.clause or b.to_inf:  # "fun (to watch)", "a man (who knows)": the noun heads
                link(b, a, "relcl" if b.clause else "acl")
                return replace(a, pre=False)
            link(a, b, "nsubj")  # the subject (or a relative pronoun) completes the clause
            return replace(b, pre=False, aux=False, clause=True)
        if ka == _V and a.pre and tags[a.head] in ("VBN", "VBG") and (kb == _A or (kb == _N and b.bare)):
            link(a, b, "amod")  # "(centered storytelling)": a participle before a bare noun modifies it
            return replace(b, pre=False)
        if ka == _N and kb == _N:
            if a.pre:
                link(a, b, "compound")
                return replace(b, pre=False)
            link(b, a, "appos")
            return replace(a, pre=False)
        if ka == kb and ka in (_A, _R, _D, _NUM):
            link(a, b, "advmod" if ka in (_R, _A) else "dep")
            return _Sub(b.head, kb, False)
        if _RANK[kb] > _RANK[ka]:
            head, dep, left = b, a, True
        else:
            head, dep, left = a, b, False
        rel = _unlabeled_rel(head.kind, dep.kind, left, tags[dep.head], lower[dep.head])
        link(dep, head, rel)
        aux = head.aux and dep.kind in (_R, _PUNCT)
        return replace(
            head,
            pre=False,
            aux=aux,
            adverbs=head.adverbs + (dep.head,) if aux else (),
            bare=head.bare and dep.kind in (_A, _N, _V, _R, _PP),
        )

    def visit(node: Tree | str) -> _Sub:
        nonlocal leaf
        if isinstance(node, str):
            i = leaf
            leaf += 1
            kind = _kind(tags[i])
            aux = tags[i] == "MD" or (kind == _V and lower[i] in _AUX_WORDS)
            return _Sub(i, kind, True, aux=aux, bare=kind == _N)
        if len(node.children) == 1:
            return visit(node.children[0])
        subs = [visit(c) for c in node.children]
        acc = subs[0]
        for s in subs[1:]:
            acc = combine(acc, s)
        return acc

    root = visit(tree)
    heads[root.head] = -1
    rels[root.head] = "ROOT"
    return Dependencies(heads, rels if labels else None)


def _unlabeled_rel(head: str, dep: str, dep_left: bool, dep_tag: str, dep_word: str) -> str:
    if dep == _PP:
        return "prep"
    if dep == _D:
        return "det" if dep_tag in ("DT", "WDT") else "predet" if dep_tag == "PDT" else "dep"
    if dep == _POSS:
        return "poss"
    if dep == _R:
        return "neg" if dep_word in _NEG else "advmod"
    if head == _V:
        if dep in (_N, _NUM):
            return "nsubj" if dep_left else "dobj"
        if dep == _A:
            return "acomp" if not dep_left else "advcl"
        return "dep"
    if head in (_N, _NUM):
        if dep == _A:
            return "amod" if dep_left else "dep"
        if dep == _NUM:
            return "nummod"
        if dep == _V:
            return "acl" if not dep_left else "dep"
    return "dep"


# ======================================================================================================
# Fallback tagger (no tagger available)
# ======================================================================================================
_LEXICON: dict[str, str] = {}
for _tag, _words in {
    "DT": "the a an this these those some any no every each all both either neither another",
    "PRP": "i you he she it we they me him us them myself yourself himself herself itself ourselves themselves one",
    "PRP$": "my your his its our their",
    "IN": "of in on at by for with from about as into like through after over between against during without "
    "before under around among than because if although though while whether since unless until upon "
    "within across behind beyond despite toward towards throughout near off above below via per",
    "TO": "to",
    "CC": "and or but nor yet &",
    "MD": "will would can could should may might must shall wo ca 'll",
    "VBZ": "is has does 's",
    "VBP": "are am have do 're 'm 've",
    "VBD": "was were had did 'd",
    "VB": "be",
    "VBN": "been",
    "VBG": "being",
    "RB": "not n't never very too so also just only even still really quite rather almost often always ever "
    "here there now then well more most less least again perhaps maybe yet",
    "WDT": "which that",
    "WP": "who whom what",
    "WP$": "whose",
    "WRB": "where when why how",
    "EX": "",
    "UH": "oh yes yeah wow",
}.items():
    for _w in _words.split():
        _LEXICON[_w] = _tag
_PUNCT_WORDS = {
    ",": ",",
    ".": ".",
    "!": ".",
    "?": ".",
    ":": ":",
    ";": ":",
    "--": ":",
    "-": ":",
    "...": ":",
    "``": "``",
    "''": "''",
    '"': "``",
    "`": "``",
    "'": "''",
    "-LRB-": "-LRB-",
    "-RRB-": "-RRB-",
    "(": "-LRB-",
    ")": "-RRB-",
    "-LCB-": "-LRB-",
    "-RCB-": "-RRB-",
    "-LSB-": "-LRB-",
    "-RSB-": "-RRB-",
}
_NUMBER = re.compile(r"^[+-]?(\d[\d,.:\\/]*|\d*\.\d+)(s|th|st|nd|rd)?$")
_SUBJECT_PRONOUNS = frozenset({"i", "you", "we", "they"})
_PRONOUN_BEFORE_IS = frozenset(
    (  # noqa: SIM905 (a word list)
        "it he she that there what who here this where how let everything nothing something everyone one"
    ).split()
)


def guess_tags(words: Sequence[str]) -> list[str]:
    """One PTB tag per word (PTB escapes such as ``-LRB-`` understood) without a tagger: a closed-class lexicon,
    number / punctuation patterns, suffixes.

    The documented fallback of :func:`unlabeled_to_dependencies`: it knows function words well and content words
    poorly (``-ly`` adverbs, ``-ing`` / ``-ed`` verbs, ``-ous`` / ``-ful`` / ... adjectives, otherwise nouns).
    Prefer real tags (``tags=`` / ``tagger=``).
    """
    out: list[str] = []
    for i, w in enumerate(words):
        lw = w.lower()
        if w in _PUNCT_WORDS:
            out.append(_PUNCT_WORDS[w])
        elif lw == "'s":
            prev = words[i - 1].lower() if i else ""
            out.append("VBZ" if prev in _PRONOUN_BEFORE_IS else "POS")
        elif lw in _LEXICON:
            out.append(_LEXICON[lw])
        elif _NUMBER.match(lw):
            out.append("CD")
        elif not any(ch.isalnum() for ch in w):
            out.append(":")
        elif lw.endswith("ly") and len(lw) > 4:
            out.append("RB")
        elif lw.endswith("ing") and len(lw) > 5:
            out.append("VBG")
        elif lw.endswith("ed") and len(lw) > 4:
            out.append("VBN")
        elif lw.endswith(("ous", "ful", "ive", "able", "ible", "less", "ical", "ish", "est")) and len(lw) > 5:
            out.append("JJ")
        elif w[:1].isupper() and i > 0:
            out.append("NNP")
        elif lw.endswith("s") and not lw.endswith("ss") and len(lw) > 3:
            out.append("NNS")
        else:
            out.append("NN")
    # A second look at content words right after a subject-like word: "the film drags", "he liked".
    for i in range(1, len(out)):
        prev, lw = out[i - 1], words[i].lower()
        if lw in _LEXICON or lw in _PUNCT_WORDS:
            continue
        if out[i] == "NNS" and prev in ("NN", "NNP", "PRP"):
            out[i] = "VBZ"
        elif out[i] == "VBN" and prev == "PRP":
            out[i] = "VBD"
        elif out[i] == "NN" and prev == "PRP" and words[i - 1].lower() in _SUBJECT_PRONOUNS:
            out[i] = "VBP"
    return out
