"""Task examples -> model features, the one pipeline every task uses: annotate -> (noise) -> align -> encode.

The pieces are public so that every task family calls the same code:

* :func:`annotator_for` builds the parser of a :class:`~syntaxformer.tasks.base.TaskContext` once (lazily: a
  features-cache hit never loads it); :func:`annotate_texts` / :func:`annotate_token_lists` parse each unique
  text (or gold token list) once, through the parse cache;
* :func:`corrupt` (parser noise, SG-Net TPAMI §7.6, seeded per example id), :func:`with_dependency_trees`
  (constituency trees read off dependency trees) and :func:`headrule_sentence` (dependencies from a gold tree);
* :func:`encode_window` turns one aligned window into arrays, keeping only the token arrays and the syntax keys
  the model declares (``context.syntax_inputs``; ``pos_ids`` when it is one of them);
* :func:`build_features` runs the whole pipeline for a split of text (pair) examples
  (:class:`~syntaxformer.data.examples.TaskData`) and keeps the result in the *processed-features* cache: the
  finished arrays of a whole split in one ``.npz`` file, keyed by the data's content fingerprint, the tokenizer
  (its full serialisation), the parser identity and every option that changes the arrays, written atomically.

With no syntax inputs (``context.syntax_inputs == ()``) no parser is built at all: the texts are only tokenized.

Where the syntax comes from (:func:`syntax_source` describes it for ``metrics.json``):

* plain texts (GLUE, SNLI's tokenized files): the parser's dependency trees; there is **no constituency
  parser**, so with ``constituency="given"`` the constituency arrays mark every word as having no tree; with
  ``constituency="from_dependency"`` a tree is read off each dependency tree;
* given parses (SNLI jsonl: the Stanford parser's trees, dependencies by head rules) are used as they are;
* gold trees (SST, ``TaskExample.tree_a``): the gold constituency tree is kept and the dependency tree comes from
  parsing the gold tokens. ``syntax="given"`` never parses (head-rule dependencies from the gold tree);
  ``syntax="parser"`` parses the raw text and ignores the gold tree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from syntaxformer.data.examples import TaskData, TaskExample, example_seed
from syntaxformer.data.model_inputs import TOKEN_KEYS, encode_window, with_dependency_trees
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.utils import atomic_write
from syntaxformer.utils import progress as progress_bar

__all__ = [
    "CONSTITUENCY_MODES",
    "FEATURE_VERSION",
    "SYNTAX_MODES",
    "TOKEN_KEYS",
    "FeatureDataset",
    "annotate_texts",
    "annotate_token_lists",
    "annotator_for",
    "annotator_identity",
    "build_features",
    "corrupt",
    "encode_window",
    "example_analyses",
    "features_cache_dir",
    "headrule_sentence",
    "parser_label",
    "syntax_source",
    "tokenizer_fingerprint",
    "with_dependency_trees",
]

logger = logging.getLogger(__name__)

#: Version of the stored feature format; part of the cache key (bump when the arrays change meaning).
FEATURE_VERSION = 2
#: ``TaskContext.syntax``: use given parses / gold trees where the data has them (``auto``), always parse the raw
#: text (``parser``), or never parse (``given``).
SYNTAX_MODES: tuple[str, ...] = ("auto", "parser", "given")
#: ``TaskContext.constituency``: constituency trees only where the data gives them, or read off the dependency
#: trees for the other texts.
CONSTITUENCY_MODES: tuple[str, ...] = ("given", "from_dependency")
_ALIGN_BLOCK = 1024


class FeatureDataset(torch.utils.data.Dataset):
    """Features of one split, stored as one flat array per key plus per-example offsets (no per-example objects).

    ``dataset[i]`` is a dict ``{key: array [L_i, ...]}`` plus ``labels`` (0-d) when the split is labeled.

    Attributes:
        arrays: key -> concatenation over examples along the first axis.
        offsets: ``[N + 1]`` start of each example in the flat arrays.
        labels: ``[N]`` int64 class ids or float32 values, or ``None``.
        guids: example ids.
        meta: how the features were made (sizes, truncation counts, cache file, parser, ...).
    """

    def __init__(
        self,
        arrays: dict[str, np.ndarray],
        offsets: np.ndarray,
        labels: np.ndarray | None,
        guids: Sequence[str],
        meta: dict[str, Any] | None = None,
    ):
        self.arrays = arrays
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.labels = labels
        self.guids = list(guids)
        self.meta = dict(meta or {})
        if len(self.offsets) != len(self.guids) + 1:
            raise InputError(
                f"{len(self.offsets)} offsets for {len(self.guids)} examples; expected one more offset than examples"
            )

    def __len__(self) -> int:
        return len(self.guids)

    def __getitem__(self, i: int) -> dict[str, np.ndarray]:
        a, b = self.offsets[i], self.offsets[i + 1]
        out = {k: v[a:b] for k, v in self.arrays.items()}
        if self.labels is not None:
            out["labels"] = self.labels[i]
        return out

    def lengths(self) -> np.ndarray:
        """``[N]`` number of positions of each example."""
        return np.diff(self.offsets)

    # -- storage ---------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write to one ``.npz`` file atomically (a crash leaves no partial file)."""
        payload: dict[str, Any] = {f"a_{k}": v for k, v in self.arrays.items()}
        payload["offsets"] = self.offsets
        payload["guids"] = np.asarray(self.guids, dtype=str)
        payload["meta"] = np.asarray(json.dumps(self.meta))
        if self.labels is not None:
            payload["labels"] = self.labels
        with atomic_write(path, "wb") as f:
            np.savez(f, **payload)

    @classmethod
    def load(cls, path: str | os.PathLike) -> FeatureDataset:
        """Read a file written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as z:
            arrays = {k[2:]: z[k] for k in z.files if k.startswith("a_")}
            labels = z["labels"] if "labels" in z.files else None
            return cls(arrays, z["offsets"], labels, [str(g) for g in z["guids"]], json.loads(str(z["meta"])))


def features_cache_dir() -> Path:
    """``<parse cache dir>/features`` (``$SYNTAXFORMER_CACHE`` or ``~/.cache/syntaxformer``)."""
    from syntaxformer.data.annotators.cache import default_cache_dir

    return Path(default_cache_dir()) / "features"


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """SHA-256 of the tokenizer's full serialisation (vocabulary, normaliser, template ...)."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    try:
        text = backend.to_str()
    except AttributeError as e:
        raise ConfigError(
            f"{type(tokenizer).__name__} is not a fast tokenizer; features need one "
            "(AutoTokenizer.from_pretrained(name, use_fast=True))"
        ) from e
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def annotator_identity(context: Any) -> str:
    """What identifies the parser of ``context`` in cache keys: the annotator's content key
    (:meth:`~syntaxformer.data.annotators.Annotator.cache_key`: a retrained pipeline with the same name and
    version gets a new key). Builds the annotator from ``context.parser`` if needed (cheap: the pipeline itself
    is loaded only when something is parsed)."""
    return str(annotator_for(context).cache_key())


def annotator_for(context: Any) -> Any:
    """The annotator of ``context``: ``context.annotator``, else built from ``context.parser`` (any
    :func:`~syntaxformer.data.make_annotator` spec; ``None`` = the default spaCy pipeline) on first use and kept
    in ``context.annotator``, so the splits of a run share one parser."""
    if context.annotator is None:
        from syntaxformer.data.annotators import make_annotator

        context.annotator = make_annotator(context.parser, cache=context.parse_cache, progress=context.progress)
    return context.annotator


def parser_label(annotator: Any, spec: Any = None) -> str:
    """How reports (``metrics.json``, the model card) name a parser, read from the annotator's own ``source``:
    ``spaCy en_core_web_sm`` for a spaCy pipeline (source ``spacy:en_core_web_sm@3.8.0``; named as the run's
    ``spec`` gave it when that is a package name), else the source as the annotator gives it (``next-word``,
    ``conll:parses.conll``). Takes an annotator or a ``source`` string."""
    source = str(getattr(annotator, "source", annotator) or "")
    if not source.startswith("spacy:"):
        return source
    name = source.removeprefix("spacy:").split("@")[0]
    if isinstance(spec, str) and spec and not any(c in spec for c in "/\\"):  # a package name, not a folder
        name = spec.removeprefix("spacy:")
    return f"spaCy {name}"


def annotate_texts(annotator: Any, texts: Sequence[str]) -> dict[str, Document]:
    """Parse every unique text once (cached parses are reused); text -> analysis."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return {}
    logger.info("annotating %d texts with %s (cached parses are reused)", len(unique), annotator.source)
    return dict(zip(unique, annotator.annotate(unique)))


def annotate_token_lists(annotator: Any, token_lists: Sequence[Sequence[str]]) -> dict[tuple[str, ...], Sentence]:
    """Parse every unique list of gold tokens once, as one sentence over exactly those tokens; tokens -> sentence."""
    unique = list(dict.fromkeys(tuple(t) for t in token_lists))
    if not unique:
        return {}
    logger.info(
        "parsing the gold tokens of %d gold trees with %s (cached parses are reused)", len(unique), annotator.source
    )
    return dict(zip(unique, annotator.annotate_pretokenized([list(w) for w in unique])))


def headrule_sentence(tree: Any) -> Sentence:
    """A Sentence over the leaves of ``tree`` with dependencies from the head rules (no parser, tags guessed)."""
    from syntaxformer.data.headrules import unlabeled_to_dependencies

    deps = unlabeled_to_dependencies(tree, None, labels=True)
    return Sentence(
        words=tree.leaves(), heads=deps.heads, deprels=deps.deprels, tree=tree, source="gold-tree+headrules"
    )


def corrupt(doc: Document | Sentence, fraction: float, seed: int, key: str) -> Document | Sentence:
    """``doc`` with ``fraction`` of the dependency heads of each sentence re-attached at random (SG-Net TPAMI
    §7.6), seeded by ``seed`` and ``key`` (an example id + side), so the noise does not depend on batch order or
    subsampling."""
    from syntaxformer.data.noise import corrupt_sentence

    rng = np.random.default_rng(example_seed(key, seed))
    if isinstance(doc, Sentence):
        return corrupt_sentence(doc, fraction, rng)
    return Document(
        [corrupt_sentence(s, fraction, rng) for s in doc.sentences],
        text=doc.text,
        doc_id=doc.doc_id,
        metadata=dict(doc.metadata),
    )


def _check_context(context: Any) -> None:
    if context.syntax not in SYNTAX_MODES:
        raise ConfigError(f"syntax={context.syntax!r} is not valid; choose one of {SYNTAX_MODES}")
    if context.constituency not in CONSTITUENCY_MODES:
        raise ConfigError(f"constituency={context.constituency!r} is not valid; choose one of {CONSTITUENCY_MODES}")
    if not 0.0 <= float(context.parser_noise) <= 1.0:
        raise ConfigError(f"parser_noise={context.parser_noise} must be a fraction in [0, 1]")
    if context.max_length is not None and int(context.max_length) < 4:
        raise ConfigError(f"max_length={context.max_length} must be at least 4")
    if context.pos_tags not in (None, "upos", "xpos"):
        raise ConfigError(f"pos_tags={context.pos_tags!r} must be None, 'upos' or 'xpos'")


def _needs_parser(examples: Sequence[TaskExample], context: Any) -> bool:
    """Texts without a given Sentence need the parser (raw text, or the gold tokens of a gold tree), except with
    ``syntax="given"``, which never parses."""
    if context.syntax == "given" or not context.syntax_inputs:
        return False
    reparse = context.syntax == "parser"
    return any(
        (e.syntax_a is None or reparse) or (e.text_b is not None and (e.syntax_b is None or reparse)) for e in examples
    )


def _cache_key(task_name: str, split: str, data: TaskData, tokenizer: Any, context: Any, parser_id: str) -> str:
    options = {
        "max_length": context.max_length,
        "criterion": context.criterion,
        "syntax_inputs": list(context.syntax_inputs),
        "max_distance": context.max_distance,
        "syntax": context.syntax,
        "parser_noise": float(context.parser_noise),
        "noise_seed": int(context.noise_seed),
        "constituency": context.constituency,
        "pos_tags": context.pos_tags,
    }
    payload = {
        "version": FEATURE_VERSION,
        "task": task_name,
        "split": split,
        "data": data.fingerprint,
        "examples": _examples_fingerprint(data.examples),
        "n": len(data),
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "parser": parser_id,
        "options": options,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _examples_fingerprint(examples: Sequence[TaskExample]) -> str:
    """SHA-256 of the exact examples (ids, texts, labels, gold-tree leaves): features are reused only for the very
    same examples, whatever the data's own fingerprint says (a task that subsamples or filters without changing
    it, two subsamples of the same size). Given analyses are covered by the data fingerprint (the files read)."""
    h = hashlib.sha256()
    for e in examples:
        record = [
            e.guid,
            e.text_a,
            e.text_b,
            e.label,
            e.tree_a.leaves() if e.tree_a is not None else None,
            e.tree_b.leaves() if e.tree_b is not None else None,
        ]
        h.update(json.dumps(record, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def build_features(
    task_name: str,
    data: TaskData,
    context: Any,
    split: str,
    *,
    label_dtype: Any = np.int64,
    cache_dir: str | os.PathLike | None = None,
) -> FeatureDataset:
    """Features of one split of text (pair) examples, from the processed-features cache when possible.

    Args:
        task_name: the task's name (part of the cache key and file name).
        data: the split's examples.
        context: the :class:`~syntaxformer.tasks.base.TaskContext` (tokenizer, parser, syntax inputs, options).
        split: split name (part of the cache key and file name).
        label_dtype: ``np.int64`` (class ids) or ``np.float32`` (regression).
        cache_dir: folder of the features cache (default ``context.cache_dir``, else :func:`features_cache_dir`).

    Returns:
        A :class:`FeatureDataset`; ``meta`` tells whether it came from the cache (``"cache": "hit"``).
    """
    _check_context(context)
    tokenizer = context.tokenizer
    needs_parser = _needs_parser(data.examples, context)
    parser_id = annotator_identity(context) if needs_parser else ("given" if context.syntax_inputs else "none")
    key = _cache_key(task_name, split, data, tokenizer, context, parser_id)
    folder = Path(cache_dir or context.cache_dir or features_cache_dir())
    path = folder / f"{task_name}-{split}-{key[:20]}.npz"
    if context.use_cache and path.is_file():
        try:
            ds = FeatureDataset.load(path)
            if len(ds) == len(data):
                ds.meta.update(cache="hit", cache_file=str(path))
                logger.info("%s %s: %d examples loaded from the features cache %s", task_name, split, len(ds), path)
                return ds
        except Exception as e:  # noqa: BLE001 - unreadable / truncated file: rebuild it
            logger.warning("features cache %s is unreadable (%s: %s); rebuilding it", path, type(e).__name__, e)

    if context.syntax_inputs:
        docs_a, docs_b, n_parsed = example_analyses(data.examples, context, needs_parser)
        ds = _encode_aligned(task_name, data, docs_a, docs_b, context)
    else:
        n_parsed = 0
        ds = _encode_plain(data, context)
    if data.has_labels:
        ds.labels = np.asarray([e.label for e in data.examples], dtype=label_dtype)
    ds.meta.update(
        task=task_name,
        split=split,
        n_examples=len(ds),
        n_parsed_texts=n_parsed,
        parser=parser_id,
        source=data.source,
        sample=data.sample_note,
        total_examples=data.total,
        parser_noise=context.parser_noise,
        syntax_source=syntax_source(data, context),
        cache="miss",
    )
    logger.info(
        "%s %s: %d examples encoded (%d truncated to %s tokens)",
        task_name,
        split,
        len(ds),
        ds.meta["n_truncated"],
        context.max_length,
    )
    if context.use_cache:
        ds.meta["cache_file"] = str(path)
        ds.save(path)
    return ds


def example_analyses(
    examples: Sequence[TaskExample], context: Any, needs_parser: bool | None = None
) -> tuple[list[Any], list[Any] | None, int]:
    """Per example, the analysis of each text, after parser noise and constituency filling.

    An analysis is a given Sentence, a parsed Document (raw text), or a Sentence of the gold tokens of a gold tree
    (parsed dependencies, or head rules with ``syntax="given"``) carrying that tree.

    Returns:
        ``(analyses of text_a, analyses of text_b or None for single texts, number of texts parsed)``.
    """
    if needs_parser is None:
        needs_parser = _needs_parser(examples, context)
    pair = any(e.text_b is not None for e in examples)
    use_given = context.syntax != "parser"

    def given(e: TaskExample, side: str) -> bool:  # a given Sentence or a gold tree (use_given only)
        return getattr(e, f"syntax_{side}") is not None or getattr(e, f"tree_{side}") is not None

    if context.syntax == "given":
        missing = [e.guid for e in examples if not given(e, "a") or (e.text_b is not None and not given(e, "b"))]
        if missing:
            raise DataError(
                f"syntax='given' but {len(missing)} examples have no given parse (first: "
                f"{missing[0]}); use syntax='auto' to parse them"
            )
    texts: list[str] = []
    token_lists: list[tuple[str, ...]] = []
    if needs_parser:
        for e in examples:
            for side, text in (("a", e.text_a), ("b", e.text_b)):
                if text is None or (use_given and getattr(e, f"syntax_{side}") is not None):
                    continue
                tree = getattr(e, f"tree_{side}")
                if use_given and tree is not None:
                    token_lists.append(tuple(tree.leaves()))
                else:
                    texts.append(text)
    parsed: dict[str, Document] = {}
    parsed_tokens: dict[tuple[str, ...], Sentence] = {}
    if texts or token_lists:
        annotator = annotator_for(context)
        parsed = annotate_texts(annotator, texts)
        parsed_tokens = annotate_token_lists(annotator, token_lists)

    def analysis(e: TaskExample, side: str, text: str) -> Any:
        sentence = getattr(e, f"syntax_{side}")
        if use_given and sentence is not None:
            return sentence
        tree = getattr(e, f"tree_{side}")
        if use_given and tree is not None:
            if context.syntax == "given":
                return headrule_sentence(tree)
            return dataclasses.replace(parsed_tokens[tuple(tree.leaves())], tree=tree)
        return parsed[text]

    docs_a: list[Any] = []
    docs_b: list[Any] | None = [] if pair else None
    for e in examples:
        docs_a.append(analysis(e, "a", e.text_a))
        if docs_b is not None:
            docs_b.append(Document([], text="") if e.text_b is None else analysis(e, "b", e.text_b))
    if context.parser_noise > 0:
        docs_a = [corrupt(d, context.parser_noise, context.noise_seed, e.guid + ":a") for d, e in zip(docs_a, examples)]
        if docs_b is not None:
            docs_b = [
                corrupt(d, context.parser_noise, context.noise_seed, e.guid + ":b") for d, e in zip(docs_b, examples)
            ]
    if context.constituency == "from_dependency":
        docs_a = [with_dependency_trees(d) for d in docs_a]
        if docs_b is not None:
            docs_b = [with_dependency_trees(d) for d in docs_b]
    return docs_a, docs_b, len(parsed) + len(parsed_tokens)


def _encode_aligned(
    task_name: str, data: TaskData, docs_a: list[Any], docs_b: list[Any] | None, context: Any
) -> FeatureDataset:
    from syntaxformer.data.align import SyntaxAligner

    aligner = SyntaxAligner(
        context.tokenizer, max_length=context.max_length, window_segment=None if docs_b is not None else 0
    )
    columns: dict[str, list[np.ndarray]] = {}
    lengths: list[int] = []
    n_truncated = 0
    n = len(data.examples)
    with progress_bar(
        total=n, desc=f"aligning {task_name}", disable=None if context.progress and n >= 2000 else True, unit="ex"
    ) as bar:
        for start in range(0, n, _ALIGN_BLOCK):
            block_a = docs_a[start : start + _ALIGN_BLOCK]
            block_b = docs_b[start : start + _ALIGN_BLOCK] if docs_b is not None else None
            for windows in aligner.align_batch(block_a, block_b):
                ex = windows[0]  # no stride: exactly one (possibly truncated) window
                if int(np.sum(ex.word_index >= 0)) < int(np.sum(ex.n_pieces)):
                    n_truncated += 1
                for k, v in encode_window(ex, context).items():
                    columns.setdefault(k, []).append(v)
                lengths.append(len(ex))
            bar.update(len(block_a))
    return _dataset(columns, lengths, data, n_truncated, context)


def _encode_plain(data: TaskData, context: Any) -> FeatureDataset:
    """Token arrays only (a model that reads no syntax): the tokenizer on the raw texts, pairs truncated
    longest-first."""
    examples = data.examples
    pair = any(e.text_b is not None for e in examples)
    enc = context.tokenizer(
        [e.text_a for e in examples],
        [e.text_b or "" for e in examples] if pair else None,
        truncation=True,
        max_length=context.max_length,
        return_overflowing_tokens=False,
    )
    full = context.tokenizer(
        [e.text_a for e in examples], [e.text_b or "" for e in examples] if pair else None, truncation=False
    )
    columns: dict[str, list[np.ndarray]] = {}
    lengths: list[int] = []
    for i in range(len(examples)):
        for k in TOKEN_KEYS:
            if k in enc:
                columns.setdefault(k, []).append(np.asarray(enc[k][i], dtype=np.int64))
        lengths.append(len(enc["input_ids"][i]))
    n_truncated = sum(len(a) > len(b) for a, b in zip(full["input_ids"], enc["input_ids"]))
    return _dataset(columns, lengths, data, n_truncated, context)


def _dataset(
    columns: Mapping[str, list[np.ndarray]], lengths: list[int], data: TaskData, n_truncated: int, context: Any
) -> FeatureDataset:
    arrays = {k: np.concatenate(v, axis=0) for k, v in columns.items()}
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return FeatureDataset(
        arrays,
        offsets,
        None,
        [e.guid for e in data.examples],
        {
            "n_truncated": n_truncated,
            "max_length": context.max_length,
            "mean_length": float(np.mean(lengths)) if lengths else 0.0,
        },
    )


def syntax_source(data: TaskData, context: Any) -> dict[str, str]:
    """Where the dependency and constituency trees of these features come from, in words (for ``metrics.json``).

    Returns:
        ``{"dependency": ..., "constituency": ...}``, e.g. ``"spaCy en_core_web_sm on gold tokens"`` and
        ``"gold SST trees"`` for the SST tree tasks, ``"spaCy en_core_web_sm on raw text"`` and ``"none (no
        constituency parser: constituency relations are empty)"`` for GLUE; ``"none (the model reads no
        syntax)"`` for both when it reads none.
    """
    if not context.syntax_inputs:
        none = "none (the model reads no syntax)"
        return {"dependency": none, "constituency": none}
    examples = data.examples
    use_given = context.syntax != "parser"
    n = len(examples)
    n_sentence = sum(e.syntax_a is not None for e in examples) if use_given else 0
    n_tree = sum(e.syntax_a is None and e.tree_a is not None for e in examples) if use_given else 0
    parsed = n_sentence + n_tree < n or (n_tree and context.syntax != "given")  # the parser made some trees
    parser = parser_label(annotator_for(context), context.parser) if parsed else ""
    dep: list[str] = []
    con: list[str] = []
    if n_tree:
        con.append(str(data.metadata.get("constituency_source", "gold trees from the data file")))
        dep.append(
            "head rules on the gold trees (tags guessed)" if context.syntax == "given" else f"{parser} on gold tokens"
        )
    if n_sentence:
        first = next(e.syntax_a for e in examples if e.syntax_a is not None)
        origin = first.source or "the data file"
        has_tree = first.tree is not None
        con.append(f"given trees ({origin})" if has_tree else "none in the given parses")
        dep.append(f"given ({origin}; head rules on its trees)" if has_tree else f"given ({origin})")
    fallback = "read off the dependency trees (dependency_to_constituency)"
    if n_sentence and context.constituency == "from_dependency" and con and con[-1] == "none in the given parses":
        con[-1] = fallback
    if n - n_sentence - n_tree > 0:
        dep.append(f"{parser} on raw text")
        con.append(
            fallback
            if context.constituency == "from_dependency"
            else "none (no constituency parser: constituency relations are empty)"
        )
    out = {"dependency": " + ".join(dict.fromkeys(dep)), "constituency": " + ".join(dict.fromkeys(con))}
    if float(context.parser_noise) > 0:
        out["dependency"] += f", {context.parser_noise:g} of the heads re-attached at random (parser noise)"
    return out
