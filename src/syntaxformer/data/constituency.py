"""Constituency trees (PTB brackets): the :class:`Tree`, treebank clean-up, and trees read off dependency trees.

A :class:`Tree` is a labelled node whose children are sub-trees or, for a pre-terminal, a single word string
(the NLTK convention): ``(NP (DT the) (NN cat))`` is ``Tree("NP", [Tree("DT", ["the"]), Tree("NN", ["cat"])])``.
Its leaves are the words of the :class:`~syntaxformer.data.Sentence` that carries it. The clean-up functions
(:func:`clean_ptb` and its parts, :func:`read_bracketed`) are shared by the bracketed-tree readers. Words keep their
treebank spelling (``-LRB-``, ``1\\/2``), so that ``tree.leaves()`` and ``Sentence.words`` agree and a tree always
prints back to a parsable bracket string; :func:`unescape_word` gives the plain form.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from syntaxformer.data.tree import ancestors, check_heads, children, depths, roots
from syntaxformer.errors import FormatError, InputError, TreeError, clip_text
from syntaxformer.utils import open_text

_Analysis = TypeVar("_Analysis")

#: Pre-terminal labels of empty elements (traces, null elements) in the Penn Treebank.
EMPTY_TAGS: frozenset[str] = frozenset({"-NONE-"})

#: Labels of wrapper nodes that carry no syntax: the PTB's unlabelled ``( (S ...) )``, Stanford's ``ROOT``.
WRAPPER_LABELS: frozenset[str] = frozenset({"", "ROOT", "TOP"})

#: PTB escapes of brackets inside words, and their plain form.
PTB_ESCAPES: dict[str, str] = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}

# Only ASCII white space separates tokens: SST has words such as "8\xa01\/2" with a no-break space inside.
_ASCII_SPACE = frozenset(" \t\n\r\f\v")
_TOKEN = re.compile(r"[()]|[^() \t\n\r\f\v]+")
#: Deepest nesting :meth:`Tree.from_string` accepts (treebank trees nest a few dozen levels; the tree algorithms
#: that follow a parse recurse once per level, so a limit keeps every reader clear of Python's recursion limit).
MAX_TREE_DEPTH = 200
# Labels such as -LRB-, -RRB-, -NONE- start with '-' and are kept whole (up to their closing '-').
_DASHED_LABEL = re.compile(r"^-[A-Za-z]+-")


@dataclass(eq=False, repr=False)
class Tree:
    """A constituency tree node.

    Attributes:
        label: node label (phrase category such as ``NP``, a POS tag for pre-terminals, or an SST sentiment
            label such as ``"3"``).
        children: sub-trees, or exactly one ``str`` (the word) for a pre-terminal.
    """

    label: str
    children: list[Tree | str] = field(default_factory=list)

    # -- structure ------------------------------------------------------------------------------------
    def is_preterminal(self) -> bool:
        """True if this node's only child is a word."""
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def leaves(self) -> list[str]:
        """The words under this node, left to right."""
        out: list[str] = []
        stack: list[Tree | str] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                out.append(node)
            else:
                stack.extend(reversed(node.children))
        return out

    def pos(self) -> list[tuple[str, str]]:
        """``(word, tag)`` pairs of the pre-terminals, left to right."""
        return [(n.children[0], n.label) for n in self.subtrees() if n.is_preterminal()]  # type: ignore[misc]

    def subtrees(self) -> Iterator[Tree]:
        """All nodes in pre-order (this node first)."""
        stack: list[Tree] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(c for c in reversed(node.children) if isinstance(c, Tree))

    def spans(self) -> list[tuple[str, int, int]]:
        """``(label, start, end)`` for every node in pre-order; ``end`` is exclusive, in leaf positions."""
        out: list[tuple[str, int, int]] = []

        def visit(node: Tree, start: int) -> int:
            idx = len(out)
            out.append((node.label, start, start))
            pos = start
            for child in node.children:
                pos = pos + 1 if isinstance(child, str) else visit(child, pos)
            out[idx] = (node.label, start, pos)
            return pos

        visit(self, 0)
        return out

    def copy(self) -> Tree:
        """A deep copy (the words are shared; they are immutable strings)."""
        return Tree(self.label, [c if isinstance(c, str) else c.copy() for c in self.children])

    def __len__(self) -> int:
        return len(self.leaves())

    # -- I/O ------------------------------------------------------------------------------------------
    @classmethod
    def from_string(cls, text: str, source: str | None = None, line: int | None = None) -> Tree:
        """Parse one bracketed tree, e.g. ``(S (NP (DT The) (NN cat)) (VP (VBD sat)))``.

        A PTB wrapper without label, ``( (S ...) )``, is kept as a node with label ``""``; readers decide
        whether to strip it (see :func:`unwrap`). Only ASCII white space separates tokens.

        Args:
            text: the bracketed tree; it may span several lines.
            source: file name (or other description) for error messages.
            line: 1-based line of ``text``'s first character in ``source``; errors then name the line of the
                problem itself.

        Raises:
            FormatError: unbalanced brackets, a word beside sub-trees, a node without children, text after the
                tree, or an empty string.
        """
        tokens, token_lines = _tokenize_with_lines(text)
        if not tokens:
            raise FormatError("empty tree string; expected a bracketed tree such as '(S (NN word))'", source, line)

        def where(k: int) -> int | None:
            if line is None:
                return None
            return line + token_lines[min(k, len(token_lines) - 1)]

        def close(label: str, kids: list, opened: int, first_word: int) -> Tree:
            words = [c for c in kids if isinstance(c, str)]
            if words and len(words) < len(kids):
                raise FormatError(
                    f"node {label!r} mixes words {words[:3]} with sub-trees; a word must be the only child of a "
                    f"pre-terminal such as (NN word), in {clip_text(text)}",
                    source,
                    where(first_word),
                )
            if len(words) > 1:
                raise FormatError(
                    f"node {label!r} has several words {words[:3]}; a pre-terminal holds exactly one word, "
                    f"as in (NN word), in {clip_text(text)}",
                    source,
                    where(first_word),
                )
            if not kids:
                raise FormatError(
                    f"node {label!r} has no children (empty tree) in {clip_text(text)}", source, where(opened)
                )
            return cls(label, kids)

        # Iterative (an explicit stack of open nodes), so no input can exhaust Python's recursion limit here;
        # trees deeper than MAX_TREE_DEPTH are refused because the tree algorithms that follow recurse.
        if tokens[0] != "(":
            raise FormatError(f"expected '(' at token 0 ({tokens[0]!r}) in {clip_text(text)}", source, where(0))
        stack: list[tuple[str, list, int, list[int]]] = []  # (label, kids, opened at, [first word])
        tree: Tree | None = None
        pos = 0
        while pos < len(tokens):
            tok = tokens[pos]
            if tok == "(":
                if tree is not None:
                    break  # text after the tree
                if len(stack) >= MAX_TREE_DEPTH:
                    raise FormatError(
                        f"tree nested more than {MAX_TREE_DEPTH} levels deep in {clip_text(text)}; "
                        f"treebank trees are far shallower (split or flatten the tree)",
                        source,
                        where(pos),
                    )
                opened = pos
                pos += 1
                label = ""
                if pos < len(tokens) and tokens[pos] not in ("(", ")"):
                    label = tokens[pos]
                    pos += 1
                stack.append((label, [], opened, [-1]))
            elif tok == ")":
                if not stack:
                    break  # a ')' after the tree: reported as text after it
                label, kids, opened, first = stack.pop()
                node = close(label, kids, opened, first[0])
                pos += 1
                if stack:
                    stack[-1][1].append(node)
                else:
                    tree = node
            else:
                if not stack:
                    break
                if stack[-1][3][0] < 0:
                    stack[-1][3][0] = pos
                stack[-1][1].append(tok)
                pos += 1
        if stack:
            label, _, opened, _ = stack[-1]
            raise FormatError(
                f"unbalanced brackets: missing ')' for the {label or 'unlabelled'!r} node "
                f"opened on line {where(opened)} in {clip_text(text)}"
                if line is not None
                else f"unbalanced brackets: missing ')' in {clip_text(text)}",
                source,
                where(len(tokens)),
            )
        if pos != len(tokens) or tree is None:
            raise FormatError(
                f"unexpected text after the tree: {' '.join(tokens[pos : pos + 5])!r}", source, where(pos)
            )
        return tree

    def to_string(self) -> str:
        """One-line bracketed form; inverse of :meth:`from_string`."""
        parts: list[str] = []

        def visit(node: Tree) -> None:
            parts.append("(" + node.label if node.label else "(")
            for child in node.children:
                if isinstance(child, str):
                    parts.append(" " + child)
                else:
                    parts.append(" ")
                    visit(child)
            parts.append(")")

        visit(self)
        return "".join(parts)

    def pretty(self, indent: int = 2) -> str:
        """Multi-line bracketed form (pre-terminals on one line), parsable by :meth:`from_string`."""
        lines: list[str] = []

        def visit(node: Tree, depth: int) -> None:
            pad = " " * (indent * depth)
            if node.is_preterminal() or all(isinstance(c, Tree) and c.is_preterminal() for c in node.children):
                lines.append(pad + node.to_string())
                return
            lines.append(pad + ("(" + node.label if node.label else "("))
            for child in node.children:
                visit(child, depth + 1)  # type: ignore[arg-type]
            lines[-1] += ")"

        visit(self, 0)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"Tree.from_string({self.to_string()!r})"

    def __eq__(self, other: object) -> bool:
        # without recursion (the generated dataclass __eq__ recurses through tuples and lists, several frames a level)
        if not isinstance(other, Tree):
            return NotImplemented
        stack: list[tuple[Tree | str, Tree | str]] = [(self, other)]
        while stack:
            a, b = stack.pop()
            if isinstance(a, str) or isinstance(b, str):
                if a != b:
                    return False
                continue
            if a.label != b.label or len(a.children) != len(b.children):
                return False
            stack.extend(zip(a.children, b.children))
        return True

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces


# -- labels and words ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1 << 16)  # labels repeat: a tree of n words asks about the same few labels n times
def base_label(label: str) -> str:
    """The category of a treebank label without function tags, co-indices or gap indices.

    ``NP-SBJ-1`` -> ``NP``, ``PP-LOC=2`` -> ``PP``, ``ADVP|PRT`` -> ``ADVP``, ``S-TPC-1`` -> ``S``; labels that
    start with a dash are kept whole (``-LRB-``, ``-RRB-``, ``-NONE-``), as are ``-``, ``--`` and the empty
    label of the PTB wrapper. SST sentiment labels (``"0"`` .. ``"4"``) are unchanged.
    """
    m = _DASHED_LABEL.match(label)
    if m:
        return m.group(0)
    if not any(ch.isalnum() for ch in label):
        return label  # punctuation tags such as "-", "--", "``"
    cut = len(label)
    for sep in "-=|":
        k = label.find(sep, 1)  # position 0 would make the label empty ("-", "--", "=")
        if k > 0:
            cut = min(cut, k)
    return label[:cut]


def function_tags(label: str) -> list[str]:
    """The function tags of a treebank label: ``NP-SBJ-1`` -> ``["SBJ"]``, ``PP-LOC-CLR`` -> ``["LOC", "CLR"]``.

    Co-indices (``-1``, ``=2``) are not tags and are left out.
    """
    return list(_function_tags(label))


@functools.lru_cache(maxsize=1 << 16)
def _function_tags(label: str) -> tuple[str, ...]:
    rest = label[len(base_label(label)) :]
    return tuple(t for t in re.split(r"[-=|]", rest) if t and not t.isdigit())


def unescape_word(word: str) -> str:
    """The plain spelling of a treebank word: ``-LRB-`` -> ``(``, ``1\\/2`` -> ``1/2``, ``\\*`` -> ``*``."""
    if word in PTB_ESCAPES:
        return PTB_ESCAPES[word]
    return word.replace("\\/", "/").replace("\\*", "*") if "\\" in word else word


# -- clean-up -----------------------------------------------------------------------------------------
def remove_empty(tree: Tree, empty_tags: frozenset[str] | set[str] = EMPTY_TAGS) -> Tree | None:
    """A copy of ``tree`` without empty elements (``(-NONE- *T*-1)``: pre-terminals whose :func:`base_label` is in
    ``empty_tags``), pruning the nodes left without children; ``None`` when nothing else was under ``tree``."""
    if tree.is_preterminal():
        return None if base_label(tree.label) in empty_tags else Tree(tree.label, list(tree.children))
    kept: list[Tree | str] = []
    for child in tree.children:
        if isinstance(child, str):
            kept.append(child)
            continue
        pruned = remove_empty(child, empty_tags)
        if pruned is not None:
            kept.append(pruned)
    return Tree(tree.label, kept) if kept else None


def strip_function_tags(tree: Tree) -> Tree:
    """A copy of ``tree`` whose labels are reduced by :func:`base_label` (pre-terminal tags included)."""
    return Tree(base_label(tree.label), [c if isinstance(c, str) else strip_function_tags(c) for c in tree.children])


def unwrap(tree: Tree, labels: frozenset[str] | set[str] = WRAPPER_LABELS) -> Tree:
    """Remove wrapper nodes (``( (S ...) )``, ``(ROOT (S ...))``) that have a single sub-tree child.

    A wrapper with several children is kept (the tree needs one root) but keeps its label.
    """
    while tree.label in labels and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        tree = tree.children[0]
    return tree


def clean_ptb(
    tree: Tree, *, strip_tags: bool = True, remove_empties: bool = True, unwrap_root: bool = True
) -> Tree | None:
    """Clean a treebank tree (``.mrg``, a Stanford parse): drop empty elements (``remove_empties``,
    :func:`remove_empty`), remove the ``( ... )`` / ``(ROOT ...)`` wrapper (``unwrap_root``, :func:`unwrap`) and
    reduce labels to their category (``strip_tags``, :func:`base_label`).

    Returns:
        A new tree, or ``None`` when the tree holds no words once empty elements are gone.
    """
    out = remove_empty(tree) if remove_empties else tree
    if out is None:
        return None
    if unwrap_root:
        out = unwrap(out)
    if strip_tags:
        out = strip_function_tags(out)
    elif out is tree:
        out = tree.copy()
    return out


# -- files of trees ---------------------------------------------------------------------------------------
def iter_bracketed(text: str, source: str | None = None, first_line: int = 1) -> Iterator[tuple[str, int]]:
    """Split text holding several bracketed trees into one string per top-level tree.

    Trees may span lines and several may share a line (the WSJ ``.mrg`` layout). Nothing but white space may
    stand between trees. ``source`` (a file name) and ``first_line`` (the number of ``text``'s first line) place
    errors and trees.

    Yields:
        ``(tree_text, line)`` with the 1-based line on which the tree starts.

    Raises:
        FormatError: a ``)`` without its ``(``, a tree still open at the end of the text, or a stray word
            between trees; the message names the line.
    """
    depth = 0
    start = -1
    start_line = line = first_line
    for k, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "(":
            if depth == 0:
                start, start_line = k, line
            depth += 1
        elif ch == ")":
            if depth == 0:
                raise FormatError("unbalanced brackets: ')' without a matching '('", source, line)
            depth -= 1
            if depth == 0:
                yield text[start : k + 1], start_line
        elif depth == 0 and ch not in _ASCII_SPACE:
            end = text.find("\n", k)
            stray = text[k : end if end >= 0 else len(text)].strip()
            raise FormatError(
                f"text outside a bracketed tree: {clip_text(stray, 40)}; each tree must be enclosed in '(' ... ')'",
                source,
                line,
            )
    if depth > 0:
        raise FormatError(
            f"unbalanced brackets: the tree starting on line {start_line} is missing "
            f"{depth} ')' at the end of the input",
            source,
            start_line,
        )


def read_bracketed(path: str | Path) -> Iterator[tuple[Tree, int]]:
    """Read every top-level bracketed tree of a file (``.mrg``, one tree per line, ...; UTF-8), lazily.

    Yields:
        ``(tree, line)``: the tree exactly as written (wrapper and function tags kept) and the 1-based line on
        which it starts.

    Raises:
        FormatError: malformed input, naming the file and line.
    """
    with open_text(path) as f:
        text = f.read()
    for tree_text, line in iter_bracketed(text, str(path)):
        yield Tree.from_string(tree_text, str(path), line), line


def _tokenize_with_lines(text: str) -> tuple[list[str], list[int]]:
    """Tokens (``(``, ``)``, labels and words) and, for each, how many newlines precede it."""
    tokens: list[str] = []
    lines: list[int] = []
    nl, last = 0, 0
    for m in _TOKEN.finditer(text):
        nl += text.count("\n", last, m.start())
        last = m.start()
        tokens.append(m.group())
        lines.append(nl)
    return tokens, lines


# -- dependency -> constituency (the fallback for texts without a constituency parse) -------------------------
def projectivize(heads: list[int] | tuple[int, ...]) -> list[int]:
    """Heads of a projective tree close to ``heads``: lift non-projective arcs until none is left.

    An arc ``h -> d`` is non-projective when a word strictly between ``h`` and ``d`` is not a descendant of ``h``
    (roots hang from a virtual node before the sentence). The shortest such arc is lifted first (``d`` is
    re-attached to its grandparent, or becomes a root), as in pseudo-projective parsing (Nivre & Nilsson, 2005);
    every lift shortens a path to the root, so the loop ends. Projective input is returned unchanged (as a copy).
    """
    out = [int(h) for h in heads]
    check_heads(out, "dependency tree")
    n = len(out)
    while True:
        anc = [set(ancestors(out, i)) for i in range(n)]  # n is a sentence: tens of words
        worst: tuple[int, int] | None = None  # (arc length, dependent)
        for d, h in enumerate(out):
            if h < 0:  # an arc from the virtual root crosses nothing that the other arcs do not already report
                continue
            lo, hi = min(h, d), max(h, d)
            if (worst is None or hi - lo < worst[0]) and any(h not in anc[k] for k in range(lo + 1, hi)):
                worst = (hi - lo, d)
        if worst is None:
            return out
        d = worst[1]
        out[d] = out[out[d]]


def dependency_to_constituency(
    words: list[str], heads: list[int], pos: list[str] | None = None, *, root_label: str = "S"
) -> Tree:
    """A constituency tree read off a dependency tree (the fallback where no constituency parse exists).

    Every word with dependents heads a phrase spanning its (projectivized, :func:`projectivize`) subtree; the
    phrase's children are the phrases of its left dependents, the head word's pre-terminal and the phrases of its
    right dependents, in word order; a word without dependents is just its pre-terminal (no unary phrase). Phrase
    labels are the head's tag + ``"P"`` (``NOUNP``, ``VERBP``; ``XP`` without tags); pre-terminals carry the tag
    (``X`` without tags). Several roots are joined under one ``root_label`` node. The leaves are ``words``.
    """
    n = len(words)
    if n == 0:
        raise InputError("dependency_to_constituency: a sentence needs at least one word")
    if len(heads) != n or (pos is not None and len(pos) != n):
        raise InputError(
            f"dependency_to_constituency: {len(heads)} heads / {'-' if pos is None else len(pos)} tags for {n} words"
        )
    proj = projectivize(heads)
    kids = children(proj)
    tag = [p or "X" for p in pos] if pos is not None else ["X"] * n

    # bottom-up without recursion (a parse of a huge text can be a very deep chain)
    built: list[Tree | None] = [None] * n

    def node(i: int) -> Tree:
        return built[i]  # type: ignore[return-value]  # built before it is read: children are deeper

    order = np.argsort(-depths(proj), kind="stable")
    for i in (int(k) for k in order):
        pre = Tree(tag[i], [words[i]])
        if not kids[i]:
            built[i] = pre
            continue
        parts: list[Tree | str] = [*(node(c) for c in kids[i] if c < i), pre, *(node(c) for c in kids[i] if c > i)]
        built[i] = Tree(f"{tag[i]}P" if pos is not None else "XP", parts)

    top = roots(proj)
    if len(top) == 1:
        return node(top[0])
    return Tree(root_label, [node(r) for r in top])


def with_dependency_trees(doc: _Analysis) -> _Analysis:
    """``doc`` (a :class:`~syntaxformer.data.Sentence` or a :class:`~syntaxformer.data.Document`) with a constituency
    tree read off the dependency tree (:func:`dependency_to_constituency`) of every sentence that has none."""

    def fill(s: Any) -> Any:
        return s if s.tree is not None else replace(s, tree=dependency_to_constituency(s.words, s.heads, s.upos))

    item: Any = doc
    if hasattr(item, "sentences"):  # a Document
        return replace(item, sentences=[fill(s) for s in item.sentences], metadata=dict(item.metadata))
    return fill(item)


_PhraseLists = tuple[list[int], list[int], list[int], list[int]]


def _add_phrases(phrases: _PhraseLists, tree: Tree, s0: int, n_words: int, leaf_parent: np.ndarray, what: str) -> None:
    """Append the phrase nodes (pre-terminals excluded) of ``tree`` over forest words ``s0 .. s0 + n_words - 1`` to
    ``phrases`` = ``(start, end, parent, depth)``, one entry per phrase: inclusive word span (forest indices), parent
    phrase id (-1 for a tree root) and depth (tree root = 0). Set ``leaf_parent[w - s0]`` to the lowest phrase above
    word w's pre-terminal (-1 if the tree is a lone pre-terminal)."""
    start, end, parent, depth = phrases
    pos = s0
    stop = s0 + n_words
    # iterative pre-order of (node, parent phrase id); an int on the stack closes that phrase
    stack: list[tuple[Tree | str | int, int]] = [(tree, -1)]
    while stack:
        node, par = stack.pop()
        if isinstance(node, int):
            end[node] = pos - 1
        elif isinstance(node, str) or node.is_preterminal():  # a word (under its pre-terminal, if any)
            if pos >= stop:
                raise TreeError(f"{what}: constituency tree has more leaves than the sentence's {n_words} words")
            leaf_parent[pos - s0] = par
            pos += 1
        elif not node.children:
            raise TreeError(f"{what}: constituency node {node.label!r} has no children")
        else:
            pid = len(start)
            start.append(pos)
            end.append(pos)
            parent.append(par)
            depth.append(depth[par] + 1 if par >= 0 else 0)
            stack.append((pid, par))
            stack.extend((c, pid) for c in reversed(node.children))
    if pos != stop:
        raise TreeError(f"{what}: constituency tree has {pos - s0} leaves for {n_words} words")


def _lexical_heads(start: np.ndarray, end: np.ndarray, word_depth: np.ndarray) -> np.ndarray:
    """Head word of every span (indices into ``word_depth``): smallest dependency depth, leftmost on ties."""
    n = len(word_depth)
    if len(start) == 0:
        return np.zeros(0, dtype=np.int64)
    score = np.append(word_depth.astype(np.int64) * n + np.arange(n), np.iinfo(np.int64).max)
    idx = np.empty(2 * len(start), dtype=np.int64)
    idx[0::2] = start
    idx[1::2] = end + 1
    return np.minimum.reduceat(score, idx)[0::2] % n


def encode_constituency(
    out: dict[str, np.ndarray],
    trees: Sequence[Tree | None] | None,
    bounds: np.ndarray,
    run_ids: np.ndarray,
    a: int,
    b: int,
    word_depth: np.ndarray,
    pos: np.ndarray,
    words: np.ndarray,
    D: int,
) -> None:
    """Fill the ``con_*`` arrays (:data:`syntaxformer.data.collate.CONSTITUENCY_KEYS`) of the visible positions
    ``pos`` (words ``words``) of one window in place (for :func:`syntaxformer.data.collate.encode_syntax`).

    Constituency arrays (always under the "share" criterion: pieces inherit their word; forest word indices):

    * ``con_key`` ``[L]``: forest index of the position's word; -1 for special tokens.
    * ``con_depth`` ``[L]``: number of phrase nodes above the word's pre-terminal; -1 for special tokens and for
      sentences without a constituency tree.
    * ``con_anc_lo``, ``con_anc_hi``, ``con_anc_head`` ``[L, D]``: the k-th phrase node above the pre-terminal
      (k = 1..D) as its inclusive word span (forest indices) and its lexical head (forest index). Missing: ``0, -1``
      and head -1.

    The lexical head of a phrase is the word of its span of smallest dependency depth (same sentence), leftmost on
    ties: its head lies outside the span, and where only one word's does (a span that is a dependency constituent,
    e.g. a dependency tree made by head rules) it is that word, the head-rule head.

    ``bounds`` / ``run_ids``: word boundaries and tree ids of the sentences in the range ``[a, b)``;
    ``word_depth``: dependency depth of the words of the range.
    """
    n = b - a
    con_depth = np.full(n, -1, dtype=np.int64)
    leaf_parent = np.full(n, -1, dtype=np.int64)
    phrases: _PhraseLists = ([], [], [], [])
    trees = trees or []
    for r, t in enumerate(run_ids.tolist()):
        tree = trees[t] if 0 <= t < len(trees) else None
        if tree is None:
            continue
        s0, s1 = int(bounds[r]), int(bounds[r + 1])
        _add_phrases(phrases, tree, s0 - a, s1 - s0, leaf_parent[s0 - a : s1 - a], f"sentence {t}")
        con_depth[s0 - a : s1 - a] = 0
    out["con_key"][pos] = words
    rel = words - a  # positions of the words in the range
    if not phrases[0]:
        out["con_depth"][pos] = con_depth[rel]
        return
    P = len(phrases[0])
    # one sentinel phrase at index P: the empty interval (start 0, end -1), depth -1, head -1, its own parent
    start, end, parent, depth = (np.asarray(p + [x], dtype=np.int64) for p, x in zip(phrases, (0, -1, P, -1)))
    parent[parent < 0] = P
    lex = np.append(_lexical_heads(start[:P], end[:P], word_depth) + a, -1)
    start[:P] += a
    end[:P] += a
    cur = leaf_parent[rel]
    has = cur >= 0
    cur[~has] = P
    con_depth_pos = np.where(has, depth[cur] + 1, con_depth[rel])
    out["con_depth"][pos] = con_depth_pos
    lo, hi, hd = out["con_anc_lo"], out["con_anc_hi"], out["con_anc_head"]
    for k in range(min(D, int(con_depth_pos.max()))):
        lo[pos, k] = start[cur]
        hi[pos, k] = end[cur]
        hd[pos, k] = lex[cur]
        cur = parent[cur]
