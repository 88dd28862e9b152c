"""Task examples -> model features: annotate (cached), optionally corrupt the parses, align, encode syntax.

:func:`build_features` turns a :class:`~syntaxformer.tasks.data.TaskData` into a :class:`FeatureDataset` (a
``torch`` dataset of per-example dicts of arrays that :class:`~syntaxformer.data.collate.SyntaxCollator` pads).

Two caches make repeated runs cheap:

* the parse cache of :class:`~syntaxformer.data.annotate.SpacyAnnotator` (each text is parsed once, ever);
* a *processed-features* cache: the finished arrays of a whole split in one ``.npz`` file, keyed by the data's
  content fingerprint (file bytes + subsample), the tokenizer (its full serialisation), the parser (package and
  version), and every option that changes the arrays. It is written atomically, so a second run with the same
  key loads it and skips annotation and alignment entirely (spaCy is not even loaded).

Where the syntax comes from (:func:`syntax_source` describes it for ``metrics.json``):

* plain texts (GLUE, SNLI's tokenized files): spaCy parses the raw text; there is **no constituency parser**, so
  these texts have dependency trees only. By default (``constituency="given"``) the constituency arrays
  (``con_*``) mark every word as having no tree (Syntax-BERT's constituency relations are then empty); with
  ``constituency="from_dependency"`` (what Syntax-BERT training uses) a tree is read off each dependency tree;
* given parses (SNLI jsonl: the Stanford parser's trees, dependencies by head rules) are used as they are;
* gold trees (SST tree tasks, ``TaskExample.tree_a``): the gold constituency tree is kept and the dependency tree
  comes from spaCy parsing the gold tokens (one tree over exactly those tokens, cached like any parse). With
  ``syntax="given"`` no parser runs: the dependency tree is derived from the gold tree by the head rules
  (:func:`~syntaxformer.data.headrules.unlabeled_to_dependencies`, tags guessed). With ``syntax="parser"`` the
  raw text is parsed instead and the gold tree is not used.

Parser noise (SG-Net TPAMI, section 7.6): with ``parser_noise = f``, each sentence of each text gets
:func:`~syntaxformer.masks.ablations.corrupt_sentence` with fraction ``f``, seeded per example from
``noise_seed`` and the example id, so the corruption does not depend on batch order or subsampling.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.defaults import DEFAULT_SPACY_MODEL
from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.data import TaskData, example_seed
from syntaxformer.tasks.registry import TaskSpec
from syntaxformer.utils import atomic_write
from syntaxformer.utils import progress as _progress

__all__ = ["FeatureOptions", "FeatureDataset", "build_features", "features_cache_dir", "syntax_source"]

logger = logging.getLogger(__name__)

#: Version of the stored feature format; part of the cache key (bump when the arrays change meaning).
FEATURE_VERSION = 1

_TOKEN_KEYS = ("input_ids", "attention_mask", "token_type_ids")
_ALIGN_BLOCK = 1024


@dataclass(frozen=True)
class FeatureOptions:
    """Options that change the features (all of them are part of the features-cache key).

    Attributes:
        max_length: window length including special tokens; longer inputs are truncated (pairs longest-first).
        criterion: subword criterion, ``"share"`` (SG-Net's reported setting, TPAMI §5.1) or ``"children"``.
        syntax_keys: which syntax arrays to keep: the model config's ``syntax_inputs`` (what the model reads,
            e.g. ``SGNetConfig(...).syntax_inputs``); ``None`` (default) keeps all of
            :func:`~syntaxformer.data.encode.encode_syntax`'s.
        max_distance: D of the ancestor tables (only matters when ``syntax_keys`` includes them).
        parser: spaCy pipeline used for texts without a given parse.
        syntax: ``"auto"`` (use given parses, e.g. SNLI's Stanford trees, where present; parse the rest; gold
            trees keep their tree and get spaCy dependencies on their gold tokens), ``"parser"`` (always parse
            the raw text with spaCy) or ``"given"`` (only given parses, no parser: gold trees get head-rule
            dependencies; error if a text has neither).
        parser_noise: fraction of heads re-attached at random per sentence (0 = clean parses).
        noise_seed: seed of the parser noise.
        constituency: ``"given"`` (constituency trees only where the data gives them; plain texts get none and
            Syntax-BERT's constituency relations are empty there) or ``"from_dependency"`` (sentences without a
            constituency tree get one read off their dependency tree,
            :func:`~syntaxformer.data.constituency.dependency_to_constituency`, after any parser noise).

        pos_tags: ``"upos"`` / ``"xpos"``: also store ``pos_ids`` ``[L]`` (the POS id of each subword's word, 0 for
            special tokens; :mod:`syntaxformer.data.subword_features` ids) for BERT+POS
            (``SGNetConfig.pos_embeddings``); ``None`` (default): no POS ids.
    """

    max_length: int = 128
    criterion: str = "share"
    syntax_keys: tuple[str, ...] | None = None
    max_distance: int = 15
    parser: str = DEFAULT_SPACY_MODEL
    syntax: str = "auto"
    parser_noise: float = 0.0
    noise_seed: int = 0
    constituency: str = "given"
    pos_tags: str | None = None

    def __post_init__(self) -> None:
        if self.pos_tags not in (None, "upos", "xpos"):
            raise SyntaxformerError(f"pos_tags must be None, 'upos' or 'xpos', got {self.pos_tags!r}")
        if self.constituency not in ("given", "from_dependency"):
            raise SyntaxformerError(f"constituency must be 'given' or 'from_dependency', got {self.constituency!r}")
        if self.syntax not in ("auto", "parser", "given"):
            raise SyntaxformerError(f"syntax must be 'auto', 'parser' or 'given', got {self.syntax!r}")
        if not 0.0 <= float(self.parser_noise) <= 1.0:
            raise SyntaxformerError(f"parser_noise must be a fraction in [0, 1], got {self.parser_noise}")
        if self.max_length is not None and int(self.max_length) < 4:
            raise SyntaxformerError(f"max_length must be at least 4, got {self.max_length}")


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

    def __init__(self, arrays: dict[str, np.ndarray], offsets: np.ndarray, labels: np.ndarray | None,
                 guids: Sequence[str], meta: dict[str, Any] | None = None):
        self.arrays = arrays
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.labels = labels
        self.guids = list(guids)
        self.meta = dict(meta or {})
        if len(self.offsets) != len(self.guids) + 1:
            raise ValueError(f"{len(self.offsets)} offsets for {len(self.guids)} examples")

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
        payload = {f"a_{k}": v for k, v in self.arrays.items()}
        payload["offsets"] = self.offsets
        payload["guids"] = np.asarray(self.guids, dtype=str)
        payload["meta"] = np.asarray(json.dumps(self.meta))
        if self.labels is not None:
            payload["labels"] = self.labels
        with atomic_write(path, "wb") as f:
            np.savez(f, **payload)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "FeatureDataset":
        """Read a file written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as z:
            arrays = {k[2:]: z[k] for k in z.files if k.startswith("a_")}
            labels = z["labels"] if "labels" in z.files else None
            return cls(arrays, z["offsets"], labels, [str(g) for g in z["guids"]], json.loads(str(z["meta"])))


def features_cache_dir() -> Path:
    """``<parse cache dir>/features`` (``$SYNTAXFORMER_CACHE`` or ``~/.cache/syntaxformer``)."""
    from syntaxformer.data.cache import default_cache_dir

    return Path(default_cache_dir()) / "features"


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """SHA-256 of the tokenizer's full serialisation (vocabulary, normaliser, template ...)."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    try:
        text = backend.to_str()
    except AttributeError as e:
        raise SyntaxformerError(f"{type(tokenizer).__name__} is not a fast tokenizer; features need one "
                                "(AutoTokenizer.from_pretrained(name, use_fast=True))") from e
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parser_identity(name: str) -> str:
    """A string naming the spaCy pipeline package and version without loading it (package metadata).

    Falls back to loading the pipeline when ``name`` is a path or a package without metadata.
    """
    import importlib.metadata as md

    from syntaxformer.data.annotate import _candidates

    try:
        spacy_version = md.version("spacy")
    except md.PackageNotFoundError:
        spacy_version = "none"
    for cand in _candidates(name):
        for dist in (cand, cand.replace("_", "-")):
            try:
                return f"spacy-pkg:{cand}@{md.version(dist)}|spacy@{spacy_version}"
            except (md.PackageNotFoundError, ValueError):
                continue
    from syntaxformer.data.annotate import load_pipeline

    nlp = load_pipeline(name)
    meta = nlp.meta
    return f"spacy:{meta.get('lang')}_{meta.get('name')}@{meta.get('version')}|spacy@{spacy_version}|" \
           f"{','.join(nlp.pipe_names)}"


def _cache_key(task: TaskSpec, split: str, data: TaskData, tokenizer: Any, options: FeatureOptions,
               parser_id: str) -> str:
    payload = {
        "version": FEATURE_VERSION, "task": task.name, "split": split, "data": data.fingerprint,
        "n": len(data), "tokenizer": tokenizer_fingerprint(tokenizer), "parser": parser_id,
        "options": dataclasses.asdict(options),
    }
    for name, default in (("constituency", "given"), ("pos_tags", None)):
        if getattr(options, name) == default:  # defaults keep the keys of caches written before these options
            del payload["options"][name]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def build_features(task: TaskSpec, data: TaskData, tokenizer: Any, options: FeatureOptions = FeatureOptions(), *,
                   split: str = "dev", cache_dir: str | os.PathLike | None = None, use_cache: bool = True,
                   parse_cache: Any = True, annotator: Any = None, progress: bool = True,
                   log: Callable[[str], None] | None = None) -> FeatureDataset:
    """Features of one split, from the processed-features cache when possible.

    Args:
        task: the task (pair or single text; classification or regression labels).
        data: the split's examples.
        tokenizer: a Hugging Face fast tokenizer.
        options: :class:`FeatureOptions`.
        split: split name (part of the cache key and of the cache file name).
        cache_dir: folder of the features cache (default :func:`features_cache_dir`).
        use_cache: read and write the features cache.
        parse_cache: the annotator's parse cache (``True`` = default location, a path, or ``False``).
        annotator: an existing :class:`~syntaxformer.data.annotate.SpacyAnnotator` to use.
        progress: show progress bars.
        log: where to report what happened (default: the module logger).

    Returns:
        A :class:`FeatureDataset`; ``meta`` tells whether it came from the cache (``"cache": "hit"``).
    """
    say = log or logger.info
    # Texts without a given Sentence need the parser (raw text, or the gold tokens of a gold tree), except with
    # syntax="given", which never parses.
    needs_parser = options.syntax != "given" and any(
        (e.syntax_a is None or options.syntax == "parser") or
        (e.text_b is not None and (e.syntax_b is None or options.syntax == "parser")) for e in data.examples)
    if annotator is not None:
        parser_id = f"{annotator.source}|{getattr(annotator, '_key_version', '')}"
    else:
        parser_id = parser_identity(options.parser) if needs_parser else "given"
    key = _cache_key(task, split, data, tokenizer, options, parser_id)
    folder = Path(cache_dir) if cache_dir is not None else features_cache_dir()
    path = folder / f"{task.name}-{split}-{key[:20]}.npz"
    if use_cache and path.is_file():
        try:
            ds = FeatureDataset.load(path)
            if len(ds) == len(data):
                ds.meta.update(cache="hit", cache_file=str(path))
                say(f"{task.title} {split}: {len(ds)} examples loaded from the features cache {path}")
                return ds
        except Exception as e:  # unreadable / truncated file: rebuild it
            say(f"features cache {path} is unreadable ({type(e).__name__}: {e}); rebuilding it")

    docs_a, docs_b, n_parsed = _syntax(data, options, needs_parser, parse_cache, annotator, progress, say)
    if options.parser_noise > 0:
        docs_a = [_corrupt(d, options, e.guid + ":a") for d, e in zip(docs_a, data.examples)]
        if docs_b is not None:
            docs_b = [_corrupt(d, options, e.guid + ":b") for d, e in zip(docs_b, data.examples)]
    if options.constituency == "from_dependency":
        docs_a = [_with_dependency_trees(d) for d in docs_a]
        if docs_b is not None:
            docs_b = [_with_dependency_trees(d) for d in docs_b]
    ds = _encode(task, data, docs_a, docs_b, tokenizer, options, progress)
    ds.meta.update(task=task.name, split=split, n_examples=len(ds), n_parsed_texts=n_parsed, parser=parser_id,
                   source=data.source, sample=data.sample_note, total_examples=data.total,
                   parser_noise=options.parser_noise, cache="miss")
    say(f"{task.title} {split}: {len(ds)} examples encoded ({ds.meta['n_truncated']} truncated to "
        f"{options.max_length} tokens)")
    if use_cache:
        ds.meta["cache_file"] = str(path)
        ds.save(path)
    return ds


def _syntax(data: TaskData, options: FeatureOptions, needs_parser: bool, parse_cache: Any, annotator: Any,
            progress: bool, say: Callable[[str], None]):
    """Per example, the analysis of each text: a given Sentence, a spaCy Document (raw text), or a Sentence of the
    gold tokens of a gold tree (spaCy dependencies, or head rules with ``syntax="given"``) carrying that tree."""
    examples = data.examples
    pair = any(e.text_b is not None for e in examples)
    use_given = options.syntax != "parser"

    def given(e, side: str) -> bool:  # a given Sentence or a gold tree (use_given only)
        return getattr(e, f"syntax_{side}", None) is not None or getattr(e, f"tree_{side}", None) is not None

    if options.syntax == "given":
        missing = [e.guid for e in examples if not given(e, "a") or (e.text_b is not None and not given(e, "b"))]
        if missing:
            raise SyntaxformerError(f"syntax='given' but {len(missing)} examples have no given parse (first: "
                                    f"{missing[0]}); use syntax='auto' to parse them with spaCy")
    texts: list[str] = []
    token_lists: dict[tuple[str, ...], None] = {}  # gold tokens of gold trees, in order, unique
    if needs_parser:
        for e in examples:
            for side, text in (("a", e.text_a), ("b", e.text_b)):
                if text is None or (use_given and getattr(e, f"syntax_{side}", None) is not None):
                    continue
                tree = getattr(e, f"tree_{side}", None)
                if use_given and tree is not None:
                    token_lists[tuple(tree.leaves())] = None
                else:
                    texts.append(text)
    parsed: dict[str, Document] = {}
    parsed_tokens: dict[tuple[str, ...], Sentence] = {}
    if texts or token_lists:
        if annotator is None:
            from syntaxformer.data.annotate import SpacyAnnotator

            annotator = SpacyAnnotator(options.parser, cache=parse_cache, progress=progress)
        if texts:
            unique = list(dict.fromkeys(texts))
            say(f"annotating {len(unique)} texts with {annotator.source} (cached parses are reused)")
            parsed = dict(zip(unique, annotator.annotate(unique)))
        if token_lists:
            words = list(token_lists)
            say(f"parsing the gold tokens of {len(words)} gold trees with {annotator.source} (cached parses are "
                "reused)")
            parsed_tokens = dict(zip(words, annotator.annotate_pretokenized([list(w) for w in words])))

    def analysis(e, side: str, text: str):
        sentence = getattr(e, f"syntax_{side}", None)
        if use_given and sentence is not None:
            return sentence
        tree = getattr(e, f"tree_{side}", None)
        if use_given and tree is not None:
            if options.syntax == "given":
                return _headrule_sentence(tree)
            return dataclasses.replace(parsed_tokens[tuple(tree.leaves())], tree=tree)
        return parsed[text]

    docs_a: list[Any] = []
    docs_b: list[Any] | None = [] if pair else None
    for e in examples:
        docs_a.append(analysis(e, "a", e.text_a))
        if docs_b is not None:
            docs_b.append(Document([], text="") if e.text_b is None else analysis(e, "b", e.text_b))
    return docs_a, docs_b, len(parsed) + len(parsed_tokens)


def _headrule_sentence(tree: Any) -> Sentence:
    """A Sentence over the leaves of ``tree`` with dependencies from the head rules (no parser, tags guessed)."""
    from syntaxformer.data.headrules import unlabeled_to_dependencies

    deps = unlabeled_to_dependencies(tree, None, labels=True)
    return Sentence(words=tree.leaves(), heads=deps.heads, deprels=deps.deprels, tree=tree,
                    source="gold-tree+headrules")


def syntax_source(data: TaskData, options: FeatureOptions) -> dict[str, str]:
    """Where the dependency and constituency trees of these features come from, in words (for ``metrics.json``).

    Returns:
        ``{"dependency": ..., "constituency": ...}``, e.g. ``"spaCy en_core_web_sm on gold tokens"`` and
        ``"gold SST trees"`` for the SST tree tasks, ``"spaCy en_core_web_sm on raw text"`` and ``"none (no
        constituency parser: constituency relations are empty)"`` for GLUE.
    """
    examples = data.examples
    use_given = options.syntax != "parser"
    n = len(examples)
    n_sentence = sum(e.syntax_a is not None for e in examples) if use_given else 0
    n_tree = sum(e.syntax_a is None and e.tree_a is not None for e in examples) if use_given else 0
    parser = f"spaCy {options.parser}"
    dep: list[str] = []
    con: list[str] = []
    if n_tree:
        con.append(str(data.metadata.get("constituency_source", "gold trees from the data file")))
        dep.append("head rules on the gold trees (tags guessed)" if options.syntax == "given"
                   else f"{parser} on gold tokens")
    if n_sentence:
        first = next(e.syntax_a for e in examples if e.syntax_a is not None)
        origin = first.source or "the data file"
        has_tree = first.tree is not None
        con.append(f"given trees ({origin})" if has_tree else "none in the given parses")
        dep.append(f"given ({origin}; head rules on its trees)" if has_tree else f"given ({origin})")
    fallback = "read off the dependency trees (dependency_to_constituency)"
    if n_sentence and options.constituency == "from_dependency" and con and con[-1] == "none in the given parses":
        con[-1] = fallback
    if n - n_sentence - n_tree > 0:
        dep.append(f"{parser} on raw text")
        con.append(fallback if options.constituency == "from_dependency"
                   else "none (no constituency parser: constituency relations are empty)")
    out = {"dependency": " + ".join(dict.fromkeys(dep)), "constituency": " + ".join(dict.fromkeys(con))}
    if float(options.parser_noise) > 0:
        out["dependency"] += f", {options.parser_noise:g} of the heads re-attached at random (parser noise)"
    return out


def _with_dependency_trees(doc: Document | Sentence) -> Document | Sentence:
    """``doc`` with a constituency tree read off the dependency tree of every sentence that has none."""
    from syntaxformer.data.constituency import dependency_to_constituency

    def fill(s: Sentence) -> Sentence:
        if s.tree is not None:
            return s
        return dataclasses.replace(s, tree=dependency_to_constituency(s.words, s.heads, s.upos))

    if isinstance(doc, Sentence):
        return fill(doc)
    return Document([fill(s) for s in doc.sentences], text=doc.text, doc_id=doc.doc_id, metadata=dict(doc.metadata))


def _corrupt(doc: Document | Sentence, options: FeatureOptions, guid: str) -> Document | Sentence:
    from syntaxformer.masks.ablations import corrupt_sentence

    rng = np.random.default_rng(example_seed(guid, options.noise_seed))
    if isinstance(doc, Sentence):
        return corrupt_sentence(doc, options.parser_noise, rng)
    return Document([corrupt_sentence(s, options.parser_noise, rng) for s in doc.sentences], text=doc.text,
                    doc_id=doc.doc_id, metadata=dict(doc.metadata))


def _encode(task: TaskSpec, data: TaskData, docs_a, docs_b, tokenizer, options: FeatureOptions,
            progress: bool) -> FeatureDataset:
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.collate import example_arrays
    from syntaxformer.data.subword_features import subword_feature_ids

    aligner = SyntaxAligner(tokenizer, max_length=options.max_length,
                            window_segment=None if docs_b is not None else 0)
    want_con = options.syntax_keys is None or any(k.startswith("con_") for k in options.syntax_keys)
    columns: dict[str, list[np.ndarray]] = {}
    lengths: list[int] = []
    n_truncated = 0
    n = len(data.examples)
    with _progress(total=n, desc=f"aligning {task.title}", disable=None if progress and n >= 2000 else True,
                   unit="ex") as bar:
        for start in range(0, n, _ALIGN_BLOCK):
            block_a = docs_a[start:start + _ALIGN_BLOCK]
            block_b = docs_b[start:start + _ALIGN_BLOCK] if docs_b is not None else None
            for windows in aligner.align_batch(block_a, block_b):
                ex = windows[0]  # no stride: exactly one (possibly truncated) window
                arrays = example_arrays(ex, options.criterion, options.max_distance, constituency=want_con)
                if options.pos_tags is not None:
                    arrays["pos_ids"] = subword_feature_ids(ex, None, [options.pos_tags])[f"{options.pos_tags}_ids"]
                if int(np.sum(ex.word_index >= 0)) < int(np.sum(ex.n_pieces)):
                    n_truncated += 1
                for k, v in arrays.items():
                    if k in _TOKEN_KEYS or k == "pos_ids" or options.syntax_keys is None or k in options.syntax_keys:
                        columns.setdefault(k, []).append(v)
                lengths.append(len(ex))
            bar.update(len(block_a))
    arrays = {k: np.concatenate(v, axis=0) for k, v in columns.items()}
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    labels = None
    if data.has_labels:
        dtype = np.float32 if task.is_regression else np.int64
        labels = np.asarray([e.label for e in data.examples], dtype=dtype)
    return FeatureDataset(arrays, offsets, labels, [e.guid for e in data.examples],
                          {"n_truncated": n_truncated, "max_length": options.max_length,
                           "mean_length": float(np.mean(lengths)) if lengths else 0.0})
