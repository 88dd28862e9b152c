"""Penn Treebank bracketed trees (WSJ ``.mrg``: several multi-line trees per file) -> Sentences, with dependencies by
the head rules of :mod:`syntaxformer.data.headrules`. Words keep their treebank spelling (``-LRB-``, ``1\\/2``) so
that they equal the tree's leaves; :func:`syntaxformer.data.constituency.unescape_word` gives the plain form.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from syntaxformer.data.constituency import Tree, read_bracketed, remove_empty, strip_function_tags, unwrap
from syntaxformer.data.headrules import ptb_to_upos, to_dependencies
from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import DataError, FormatError

__all__ = ["ptb_files", "read_ptb", "sentence_from_tree"]


def ptb_files(path: str | Path | Iterable[str | Path], pattern: str = "*.mrg") -> list[Path]:
    """The ``.mrg`` files named by ``path``, sorted: a file, a folder (its ``pattern`` files, not recursive), a glob
    pattern such as ``"treebank/combined/wsj_00*.mrg"``, or a list of any of these.

    Raises:
        DataError: nothing matches.
    """
    if not isinstance(path, (str, Path)):
        return [f for p in path for f in ptb_files(p, pattern)]
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob(pattern))
    elif p.is_file():
        files = [p]
    else:
        files = sorted(Path(f) for f in glob.glob(str(path)) if os.path.isfile(f))
    if not files:
        raise DataError(
            f"no PTB files at {str(path)!r} (expected a .mrg file, a folder of {pattern} files or a glob pattern)"
        )
    return files


def sentence_from_tree(
    tree: Tree,
    *,
    sent_id: str | None = None,
    source: str | None = "gold:ptb",
    metadata: dict[str, Any] | None = None,
    labels: bool = True,
    where: tuple[str, int] | None = None,
) -> Sentence:
    """A treebank tree as read (wrapper, function tags and empty elements allowed) as a :class:`Sentence`: words =
    leaves of the cleaned tree (``-NONE-`` elements pruned, the wrapper removed, function tags and indices stripped
    after they chose the labels), heads / deprels (with ``labels``; spaCy / ClearNLP names) by head rules, xpos = PTB
    tags, upos from :data:`~syntaxformer.data.headrules.PTB_TO_UPOS`, tree = the cleaned tree.

    Raises:
        DataError: nothing but empty elements in the tree; with ``where`` (file, line), a FormatError naming them
            for this and any other fault of the tree.
    """
    if where is not None:
        try:
            return sentence_from_tree(tree, sent_id=sent_id, source=source, metadata=metadata, labels=labels)
        except ValueError as e:
            if isinstance(e, FormatError):
                raise
            raise FormatError(f"{sent_id}: {e}", *where) from e
    pruned = remove_empty(tree)
    if pruned is None:
        raise DataError(
            f"tree {sent_id or ''} has no words once empty elements (-NONE-) are removed: {tree.to_string()[:80]}"
        )
    pruned = unwrap(pruned)
    deps = to_dependencies(pruned, labels=labels)
    clean = strip_function_tags(pruned)
    words, xpos = zip(*clean.pos())
    return Sentence(
        words=list(words),
        heads=deps.heads,
        deprels=deps.deprels,
        xpos=list(xpos),
        upos=ptb_to_upos(xpos, words, deps.deprels),
        tree=clean,
        sent_id=sent_id,
        source=source,
        metadata=dict(metadata or {}),
    )


def read_ptb(
    path: str | Path | Iterable[str | Path], *, labels: bool = True, source: str = "gold:ptb", pattern: str = "*.mrg"
) -> Iterator[Sentence]:
    """Read PTB bracketed trees lazily from the files of :func:`ptb_files`, one :class:`Sentence` per tree (see
    :func:`sentence_from_tree`), with ``sent_id`` ``"<file name>#<0-based tree index>"`` (``wsj_0001.mrg#0``) and
    ``metadata["line"]``, the line where the tree starts.

    Raises:
        FormatError: malformed brackets, a word beside sub-trees, an empty tree, naming file and line.
        DataError: ``path`` matches no file.
    """
    for file in ptb_files(path, pattern):
        for k, (tree, line) in enumerate(read_bracketed(file)):
            meta = {"line": line}
            yield sentence_from_tree(
                tree, sent_id=f"{file.name}#{k}", source=source, metadata=meta, labels=labels, where=(str(file), line)
            )
