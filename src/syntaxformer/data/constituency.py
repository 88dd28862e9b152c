"""Constituency trees (PTB brackets).

A :class:`Tree` is a labelled node whose children are sub-trees or, for a pre-terminal, a single word string
(the NLTK convention): ``(NP (DT the) (NN cat))`` is ``Tree("NP", [Tree("DT", ["the"]), Tree("NN", ["cat"])])``.
Leaves are numbered 0..n-1 left to right; they are the words of the :class:`~syntaxformer.data.Sentence` that
carries the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from syntaxformer.errors import FormatError


@dataclass
class Tree:
    """A constituency tree node.

    Attributes:
        label: node label (phrase category such as ``NP``, a POS tag for pre-terminals, or an SST sentiment
            label such as ``"3"``).
        children: sub-trees, or exactly one ``str`` (the word) for a pre-terminal.
    """

    label: str
    children: list["Tree | str"] = field(default_factory=list)

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

    def preterminals(self) -> list["Tree"]:
        """Pre-terminal nodes left to right (one per leaf)."""
        return [n for n in self.subtrees() if n.is_preterminal()]

    def pos(self) -> list[tuple[str, str]]:
        """``(word, tag)`` pairs of the pre-terminals, left to right."""
        return [(n.children[0], n.label) for n in self.preterminals()]  # type: ignore[misc]

    def subtrees(self) -> Iterator["Tree"]:
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

    def __len__(self) -> int:
        return len(self.leaves())

    # -- I/O ------------------------------------------------------------------------------------------
    @classmethod
    def from_string(cls, text: str, source: str | None = None, line: int | None = None) -> "Tree":
        """Parse one bracketed tree, e.g. ``(S (NP (DT The) (NN cat)) (VP (VBD sat)))``.

        A PTB wrapper without label, ``( (S ...) )``, is kept as a node with label ``""``; readers decide
        whether to strip it. Raises :class:`FormatError` naming the position of the first problem.
        """
        tokens = _tokenize(text)
        if not tokens:
            raise FormatError("empty tree string; expected a bracketed tree such as '(S (NN word))'", source, line)
        pos = 0

        def parse() -> Tree:
            nonlocal pos
            if tokens[pos] != "(":
                raise FormatError(f"expected '(' at token {pos} ({tokens[pos]!r}) in {_clip(text)}", source, line)
            pos += 1
            label = ""
            if pos < len(tokens) and tokens[pos] not in ("(", ")"):
                label = tokens[pos]
                pos += 1
            children: list[Tree | str] = []
            while pos < len(tokens) and tokens[pos] != ")":
                if tokens[pos] == "(":
                    children.append(parse())
                else:
                    children.append(tokens[pos])
                    pos += 1
            if pos >= len(tokens):
                raise FormatError(f"unbalanced brackets: missing ')' in {_clip(text)}", source, line)
            pos += 1  # ')'
            words = [c for c in children if isinstance(c, str)]
            if words and (len(children) > 1):
                raise FormatError(
                    f"node {label!r} mixes words {words[:3]} with sub-trees; a word must be the only child of a "
                    f"pre-terminal such as (NN word), in {_clip(text)}", source, line)
            if not children:
                raise FormatError(f"node {label!r} has no children in {_clip(text)}", source, line)
            return Tree(label, children)

        tree = parse()
        if pos != len(tokens):
            raise FormatError(f"unexpected text after the tree: {' '.join(tokens[pos:pos + 5])!r}", source, line)
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

    def __str__(self) -> str:
        return self.to_string()


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    buf: list[str] = []
    for ch in text:
        if ch in "()":
            if buf:
                tokens.append("".join(buf))
                buf = []
            tokens.append(ch)
        elif ch.isspace():
            if buf:
                tokens.append("".join(buf))
                buf = []
        else:
            buf.append(ch)
    if buf:
        tokens.append("".join(buf))
    return tokens


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 3] + "...")
