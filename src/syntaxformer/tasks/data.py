"""Read task examples from local files (GLUE TSVs, SNLI s1/s2/labels or jsonl, SST trees) or a hub data set.

Every reader returns :class:`TaskExample` objects with the label already mapped to its class id (or a float for
regression; ``None`` when the file has no labels), plus a content fingerprint of what was read
(:class:`TaskData`), which keys the processed-features cache.

GLUE TSV files are read by splitting lines on tabs, never with ``csv`` quoting: MRPC and others contain
unbalanced ``"`` characters that a CSV reader would merge across lines.

SST tree files (:func:`read_sst_task`) give each example its gold constituency tree (``TaskExample.tree_a``, PTB
escapes such as ``-LRB-`` undone in the leaves, which are the gold tokens); the dependency tree is added later,
when features are built, by parsing those gold tokens with spaCy (one tree per sentence, cached), so reading a
split stays fast and only the examples kept after subsampling are parsed. Examples are full sentences; with
``phrases=True`` (train split only) every phrase of more than 3 words of each tree is an example too, as in the
paper's SST setting (Syntax-BERT §4.1).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from syntaxformer.data.constituency import Tree
from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import FormatError, MissingDependencyError, SyntaxformerError
from syntaxformer.tasks.registry import TaskSpec

__all__ = ["TaskExample", "TaskData", "read_glue_tsv", "read_snli", "read_sst_task", "load_split", "subsample",
           "file_fingerprint", "SST_CONSTITUENCY_SOURCE"]

#: How the constituency trees of the SST tree tasks are described in ``metrics.json``.
SST_CONSTITUENCY_SOURCE = "gold SST trees"
#: Version of the SST example construction (unescaping, phrases); part of the data fingerprint.
_SST_READER_VERSION = 1
#: Phrases (``phrases=True``) must have more than this many words (Syntax-BERT §4.1: "lengths larger than 3").
SST_MIN_PHRASE_WORDS = 3

#: Split names, and their names in hub data sets.
SPLITS = ("train", "dev", "test")
_HUB_SPLIT = {"train": "train", "dev": "validation", "test": "test"}


@dataclass
class TaskExample:
    """One example.

    Attributes:
        guid: a stable id (``"<split>-<row id>"``), used e.g. to seed parser noise per example.
        text_a: the (first) text.
        text_b: the second text of a pair, or ``None``.
        label: class id (int), value (float, regression) or ``None`` (unlabeled).
        syntax_a: a given analysis of ``text_a`` (SNLI jsonl parses), or ``None`` (parse with spaCy).
        syntax_b: likewise for ``text_b``.
        tree_a: a gold constituency tree of ``text_a`` whose leaves are its gold tokens (SST), or ``None``. When
            ``syntax_a`` is ``None``, the features parse these tokens with spaCy (one tree over exactly them) for
            the dependency tree and keep this constituency tree.
        tree_b: likewise for ``text_b``.
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: int | float | None = None
    syntax_a: Sentence | None = None
    syntax_b: Sentence | None = None
    tree_a: Tree | None = None
    tree_b: Tree | None = None


@dataclass
class TaskData:
    """The examples of one split and where they came from.

    Attributes:
        examples: the examples, in file order (after subsampling, in sampled order).
        source: human-readable origin (file paths or ``hub:<name>``).
        fingerprint: hex digest of the content read (file bytes, or the hub data set's fingerprint).
        total: number of examples before subsampling.
        sample_note: description of the subsampling applied, or ``None``.
        metadata: other facts about the data, e.g. ``"constituency_source"`` (where the gold trees come from) and
            ``"examples"`` (``"sentences"`` or ``"sentences+phrases"``) for SST.
    """

    examples: list[TaskExample]
    source: str
    fingerprint: str
    total: int = 0
    sample_note: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def has_labels(self) -> bool:
        """True if every example has a label."""
        return bool(self.examples) and all(e.label is not None for e in self.examples)


def file_fingerprint(paths: Sequence[str | os.PathLike]) -> str:
    """SHA-256 of the bytes of the files (in order, each with its size as a separator)."""
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            data = f.read()
        h.update(f"{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _label_id(task: TaskSpec, raw: str, path: str, lineno: int) -> int | float:
    raw = raw.strip()
    if task.labels is None:
        try:
            return float(raw)
        except ValueError:
            raise FormatError(f"{task.title} score {raw!r} is not a number", path, lineno) from None
    try:
        return task.labels.index(raw)
    except ValueError:
        raise FormatError(f"unknown {task.title} label {raw!r}; expected one of {list(task.labels)}",
                          path, lineno) from None


def read_glue_tsv(task: TaskSpec, path: str | os.PathLike, split: str = "dev") -> list[TaskExample]:
    """Read one GLUE TSV file of ``task``.

    The layout is detected from the first line: if it names the task's columns (``columns``, or
    ``test_columns`` for unlabeled test files) it is a header; otherwise the file must be one of the task's
    header-less files (CoLA train/dev: source, label, original judgement, sentence). A UTF-8 BOM is ignored.

    Args:
        task: the task.
        path: the file.
        split: split name, used in the example ids.

    Returns:
        The examples; ``label`` is ``None`` for files without a label column.

    Raises:
        FormatError: the layout is not the task's, a row has too few fields, or a label is unknown (file, line).
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    first = lines[0].rstrip("\r").split("\t")
    positions: dict[str, int] | None = None
    for columns in (task.columns, task.test_columns):
        # A header names at least the text columns; the label and id columns are optional (test files).
        if columns and all(columns[r] in first for r in ("text_a", "text_b") if r in columns):
            positions = {role: first.index(name) for role, name in columns.items() if name in first}
            body, start = lines[1:], 2
            break
    if positions is None:
        if task.headerless is None:
            expected = list(task.columns.values())
            raise FormatError(f"first line {first!r} is not a {task.title} header (expected the columns "
                              f"{expected})", path, 1)
        positions = dict(task.headerless)
        body, start = lines, 1
    need = max(positions.values()) + 1
    out = []
    for k, line in enumerate(body):
        lineno = start + k
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < need:
            raise FormatError(f"{len(fields)} tab-separated fields, expected at least {need} for {task.title}",
                              path, lineno)
        label = _label_id(task, fields[positions["label"]], path, lineno) if "label" in positions else None
        # Ids: the file's own index column where it has a unique one, else the line number.
        rid = fields[positions["id"]] if "id" in positions and task.headerless is None else f"line{lineno}"
        out.append(TaskExample(
            guid=f"{split}-{rid}",
            text_a=fields[positions["text_a"]].strip(),
            text_b=fields[positions["text_b"]].strip() if "text_b" in positions else None,
            label=label))
    return out


def read_snli(path: str | os.PathLike, split: str = "dev") -> tuple[list[TaskExample], list[str]]:
    """Read SNLI from the original jsonl (with the Stanford parser's trees) or the s1/s2/labels triple.

    Args:
        path: a ``.jsonl`` file; a folder holding ``s1.<split>``, ``s2.<split>``, ``labels.<split>``; or the
            path of the ``s1.<split>`` file itself.
        split: split name (used in ids, and as the file suffix when ``path`` is a folder).

    Returns:
        ``(examples, files read)``. Jsonl examples carry the given parses (``syntax_a`` / ``syntax_b``); rows
        without a gold label (``"-"``) are skipped.
    """
    from syntaxformer.data.readers.snli import SNLI_LABELS, read_snli_jsonl, read_snli_tokenized

    path = Path(path)
    labels = list(SNLI_LABELS)
    if path.suffix == ".jsonl":
        out = []
        for pair in read_snli_jsonl(path, skip_unlabeled=True):
            out.append(TaskExample(
                guid=f"{split}-{pair.pair_id}", text_a=pair.premise.detokenized()[0],
                text_b=pair.hypothesis.detokenized()[0], label=labels.index(pair.label),
                syntax_a=pair.premise, syntax_b=pair.hypothesis))
        return out, [str(path)]
    if path.is_file() and path.name.startswith("s1."):
        split_suffix = path.name[3:]
        folder = path.parent
    else:
        folder, split_suffix = path, split
    files = [str(folder / f"{n}.{split_suffix}") for n in ("s1", "s2", "labels")]
    out = [TaskExample(guid=f"{split}-{i}", text_a=p.premise, text_b=p.hypothesis, label=labels.index(p.label))
           for i, p in enumerate(read_snli_tokenized(folder, split_suffix))]
    return out, files


def _unescaped_tree(tree: Tree) -> Tree:
    """A copy of ``tree`` with PTB escapes undone in its leaves (``-LRB-`` -> ``(``, ``1\\/2`` -> ``1/2``)."""
    from syntaxformer.data.constituency import unescape_word

    return Tree(tree.label, [unescape_word(c) if isinstance(c, str) else _unescaped_tree(c) for c in tree.children])


def read_sst_task(task: TaskSpec, path: str | os.PathLike, split: str = "dev", *,
                  phrases: bool = False) -> list[TaskExample]:
    """Read an SST tree file (one PTB-bracketed tree per line, every node labeled with a score 0-4) as examples.

    Args:
        task: an SST tree task (``sst5``: label = root score; ``sst2_trees``: 0/1 -> 0, 3/4 -> 1, 2 dropped, by
            ``task.tree_labels``).
        path: the file (``train.txt`` / ``dev.txt`` / ``test.txt``).
        split: split name, used in the example ids.
        phrases: also make an example of every phrase (sub-tree) of more than 3 words (Syntax-BERT §4.1 trains on
            these); identical word sequences are kept once (SST labels phrases by their words, so duplicates have
            the same label). The full sentences are always kept, whatever their length.

    Returns:
        Examples with ``text_a`` the gold tokens (escapes undone) joined by single spaces, ``tree_a`` the gold
        tree over those tokens, ``label`` the class id and ``guid`` ``"<split>-<line>"`` (phrases:
        ``"<split>-<line>.<node>"``, the node's pre-order index).

    Raises:
        FormatError: malformed brackets or a node label that is not a score 0-4 (file and line).
    """
    from syntaxformer.errors import FormatError

    path = os.fspath(path)
    scores = ("0", "1", "2", "3", "4")
    mapping = task.tree_labels
    out: list[TaskExample] = []
    seen: set[tuple[str, ...]] = set()
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            tree = Tree.from_string(line, path, lineno)
            for node in tree.subtrees():
                if node.label not in scores:
                    raise FormatError(f"SST node label {node.label!r} is not a sentiment score 0-4 "
                                      f"(node {node.to_string()[:60]})", path, lineno)
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
                label = score if mapping is None else mapping.get(score)
                if label is None:
                    continue
                # Sub-trees share their nodes with the sentence's tree; trees are never modified downstream.
                out.append(TaskExample(guid=f"{split}-{lineno}" + (f".{k}" if k else ""), text_a=" ".join(key),
                                       label=label, tree_a=node))
    return out


def _import_datasets():
    try:
        import datasets
    except ImportError as e:
        raise MissingDependencyError(
            "reading a Hugging Face hub data set needs the 'datasets' package: pip install datasets "
            "(or pip install 'syntaxformer[hub]'); local files need no extra package") from e
    return datasets


def load_hub_split(task: TaskSpec, split: str, dataset: str | None = None, config: str | None = None,
                   **load_kwargs: Any) -> TaskData:
    """Load one split of a Hugging Face hub data set (needs ``datasets`` and network, or a warm hub cache).

    Args:
        task: the task (gives the column names and label order).
        split: ``"train"``, ``"dev"`` (hub ``"validation"``) or ``"test"``.
        dataset: hub path (default ``task.hub[0]``, e.g. ``"nyu-mll/glue"``); a local data set folder works too.
        config: hub config name (default ``task.hub[1]``, e.g. ``"sst2"``).
        load_kwargs: passed to ``datasets.load_dataset``.
    """
    datasets = _import_datasets()
    name = dataset or task.hub[0]
    same = dataset is None or name.split("/")[-1] == task.hub[0].split("/")[-1]  # "glue" or "nyu-mll/glue"
    config = config if config is not None else (task.hub[1] if same else None)
    try:
        ds = datasets.load_dataset(name, config, split=_HUB_SPLIT.get(split, split), **load_kwargs)
    except Exception as e:  # offline, unknown name, ... : one clear line
        raise SyntaxformerError(
            f"could not load hub data set {name!r} (config {config!r}, split {_HUB_SPLIT.get(split, split)!r}): "
            f"{type(e).__name__}: {e}. Offline? Use the local files instead (data_dir / train_file / dev_file), "
            f"e.g. the GLUE TSVs under ../shared/data/glue") from e
    cols = task.hub_columns
    missing = [c for c in cols.values() if c not in ds.column_names and c != cols.get("id")]
    if missing:
        raise SyntaxformerError(f"hub data set {name!r} has columns {ds.column_names}; {task.title} needs "
                                f"{missing} (columns used: {dict(cols)})")
    out = []
    for i, row in enumerate(ds):
        raw = row[cols["label"]]
        label: int | float | None
        if task.labels is None:
            label = float(raw)
        elif isinstance(raw, str):
            label = task.labels.index(raw)
        else:
            label = int(raw) if raw is not None and int(raw) >= 0 else None  # -1: unlabeled (test) / no consensus
        if label is None and split != "test":
            continue  # SNLI pairs without annotator consensus
        rid = row.get(cols["id"], i) if "id" in cols else i
        out.append(TaskExample(guid=f"{split}-{rid}", text_a=row[cols["text_a"]],
                               text_b=row[cols["text_b"]] if "text_b" in cols else None, label=label))
    fingerprint = getattr(ds, "_fingerprint", None) or file_fingerprint([])
    return TaskData(out, f"hub:{name}" + (f"/{config}" if config else "") + f"[{split}]",
                    hashlib.sha256(f"hub|{name}|{config}|{split}|{fingerprint}".encode()).hexdigest(), len(out))


def default_data_dir(task: TaskSpec) -> Path | None:
    """``<shared data>/<task folder>`` (e.g. ``../shared/data/glue/SST-2``) if it exists."""
    from syntaxformer.defaults import shared_data_dir

    root = shared_data_dir()
    if root is None:
        return None
    folder = root / task.folder
    return folder if folder.is_dir() else None


def load_split(task: TaskSpec, split: str, *, data_dir: str | os.PathLike | None = None,
               data_file: str | os.PathLike | None = None, dataset: str | None = None,
               dataset_config: str | None = None, phrases: bool = False) -> TaskData:
    """Read one split of a task from a local file, a local folder or the hub.

    Precedence: ``data_file`` (a file of the task's format), then ``dataset`` (hub name), then ``data_dir`` (a
    folder with the task's split files), then the task's folder under the shared data root.

    Args:
        phrases: SST tree tasks only: also every phrase of more than 3 words (see :func:`read_sst_task`); the
            caller decides for which split (the paper uses phrases for training only).

    Raises:
        SyntaxformerError: the split's file cannot be found (the message says where it looked).
    """
    if split not in SPLITS:
        raise SyntaxformerError(f"unknown split {split!r}; expected one of {SPLITS}")
    if phrases and not task.has_gold_trees:
        raise SyntaxformerError(f"phrases=True needs an SST tree task (sst5, sst2_trees), not {task.title}")
    if task.has_gold_trees and data_file is None and (dataset is not None or
                                                      (data_dir is None and default_data_dir(task) is None)):
        raise SyntaxformerError(
            f"{task.title} reads the PTB-bracketed SST tree files ({dict(task.split_files)}); the hub copies of SST "
            f"have no trees. Give data_dir (a folder with those files) or {split}_file, or set SYNTAXFORMER_DATA "
            f"to a folder holding {task.folder}/")
    if data_file is None and dataset is not None:
        return load_hub_split(task, split, dataset, dataset_config)
    if data_file is None:
        folder = Path(data_dir) if data_dir is not None else default_data_dir(task)
        if folder is None:
            # No local copy: fall back to the task's hub data set (needs `datasets` and network or a warm cache).
            import warnings

            warnings.warn(f"the shared data folder ../shared/data/{task.folder} was not found (set "
                          f"SYNTAXFORMER_DATA to its location); loading {task.title} {split} from the hub "
                          f"data set {task.hub[0]!r}", stacklevel=2)
            try:
                return load_hub_split(task, split)
            except SyntaxformerError as e:
                raise SyntaxformerError(
                    f"no data for {task.title}: give data_dir (a folder with {dict(task.split_files)}), a "
                    f"{split}_file, or a hub dataset name; ../shared/data/{task.folder} was not found and the "
                    f"hub fallback failed: {e}") from e
        data_file = folder / task.split_files[split]
        if task.name == "snli" and not Path(data_file).is_file():
            jsonl = sorted(folder.glob(f"snli_1.0_{split}*.jsonl"))
            data_file = jsonl[0] if jsonl else data_file
    data_file = Path(data_file)
    if not data_file.exists():
        raise SyntaxformerError(f"{task.title} {split} file {data_file} not found")
    if task.has_gold_trees:
        examples = read_sst_task(task, data_file, split, phrases=phrases)
        # The bytes, plus how examples are made from them (reader version, phrases).
        fp = hashlib.sha256(f"{file_fingerprint([data_file])}|sst{_SST_READER_VERSION}|phrases={phrases}"
                            .encode()).hexdigest()
        meta = {"constituency_source": SST_CONSTITUENCY_SOURCE,
                "examples": "sentences+phrases" if phrases else "sentences"}
        return TaskData(examples, str(data_file), fp, len(examples), metadata=meta)
    if task.name == "snli":
        examples, files = read_snli(data_file, split)
    else:
        examples, files = read_glue_tsv(task, data_file, split), [str(data_file)]
    return TaskData(examples, ", ".join(files), file_fingerprint(files), len(examples))


def subsample(data: TaskData, max_samples: int | None, seed: int) -> TaskData:
    """Keep a seeded random subset of ``max_samples`` examples (all if ``None`` or not smaller).

    The subset depends only on ``(len(data), max_samples, seed)``; the kept examples stay in file order.
    """
    n = len(data.examples)
    if max_samples is None or max_samples >= n:
        return data
    if max_samples < 1:
        raise SyntaxformerError(f"max samples must be positive, got {max_samples}")
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(n, size=max_samples, replace=False))
    note = f"random subsample of {max_samples} of {n} examples (seed {seed})"
    fp = hashlib.sha256(f"{data.fingerprint}|sample|{max_samples}|{seed}".encode()).hexdigest()
    return TaskData([data.examples[i] for i in keep], data.source, fp, n, note, dict(data.metadata))


def example_seed(guid: str, seed: int) -> list[int]:
    """A seed sequence for per-example randomness that depends on the example id, not its position."""
    return [int(seed), zlib.crc32(guid.encode("utf-8"))]
