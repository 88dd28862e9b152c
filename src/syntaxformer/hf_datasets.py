"""Syntax features for a Hugging Face ``datasets.Dataset``: the bridge to a user's own training loop
(docs/own_loop.md shows it with a ``Trainer``, and how ``datasets``' cache is reused).

:func:`add_syntax_features` adds to every row the token arrays and exactly the syntax keys the model declares
(``config.syntax_inputs``), made by the runner's featurization (:mod:`syntaxformer.tasks.featurize`), in one
deterministic ``Dataset.map``; :func:`syntax_features` does the same for a plain list of texts. Batches come from
:class:`~syntaxformer.data.collate.SyntaxCollator`.
"""

from __future__ import annotations

import logging
from typing import Any

import datasets
import numpy as np

from syntaxformer.data.annotators import make_annotator
from syntaxformer.data.examples import TaskExample
from syntaxformer.errors import ConfigError, InputError
from syntaxformer.tasks.base import TaskContext
from syntaxformer.tasks.featurize import encode_examples

__all__ = ["SyntaxFeaturizer", "add_syntax_features", "syntax_features"]

logger = logging.getLogger(__name__)

#: This process's annotators by identity (``cache_key()``): where an unpickled :class:`SyntaxFeaturizer` finds them.
_ANNOTATORS: dict[str, Any] = {}


class SyntaxFeaturizer:
    """The batched map function of :func:`add_syntax_features` (whose arguments it takes and checks): a batch of rows
    (dict of columns) -> the model inputs of each row. Its pickled state (hashed into ``datasets``' fingerprint, sent
    to worker processes) holds the parser's identity and spec, never the parser object: that is found again in this
    process or rebuilt from its spec (a string, or ``None`` for the default pipeline).
    """

    def __init__(
        self,
        tokenizer: Any,
        text_column: str,
        text_pair_column: str | None = None,
        *,
        model: Any = None,
        config: Any = None,
        annotator: Any = None,
        max_length: int = 128,
        criterion: str = "share",
        constituency: str = "from_dependency",
        pos_tags: str | None = None,
        parse_cache: Any = True,
    ):
        if config is None:
            config = getattr(model, "config", None)
        if config is None or not hasattr(config, "syntax_inputs"):
            raise ConfigError(
                "syntax features: syntaxformer.hf_datasets needs the model (model=...) or its config "
                "(config=...), whose syntax_inputs name the keys to add; got neither"
            )
        if constituency not in ("from_dependency", "given"):
            raise ConfigError(f"constituency={constituency!r} must be 'from_dependency' or 'given'")
        if criterion not in ("share", "children"):
            raise ConfigError(f"criterion={criterion!r} must be 'share' or 'children'")
        if max_length < 4:
            raise ConfigError(f"max_length={max_length} must be at least 4")
        self.tokenizer = tokenizer
        self.text_column = text_column
        self.text_pair_column = text_pair_column
        self.syntax_inputs = tuple(config.syntax_inputs)
        self.from_spec = annotator is None or isinstance(annotator, str)
        self.annotator_spec = annotator if self.from_spec else None
        self._annotator: Any = None
        self.annotator_key = "none"
        if self.syntax_inputs:
            self._annotator = make_annotator(annotator, cache=parse_cache, progress=False)
            self.annotator_key = self._annotator.cache_key()
            _ANNOTATORS[self.annotator_key] = self._annotator
        self.max_length = int(max_length)
        self.criterion = criterion
        self.max_distance = int(getattr(config, "max_distance", 15) or 15)
        self.constituency = constituency
        if "pos_ids" in self.syntax_inputs and pos_tags is None:
            pos_tags = getattr(config, "pos_embeddings", None) or "upos"
        self.pos_tags = pos_tags

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_annotator"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._annotator = None

    def annotator(self) -> Any:
        """The parser: the one given, else this process's annotator of the same identity, else rebuilt from the
        spec."""
        if self._annotator is None:
            self._annotator = _ANNOTATORS.get(self.annotator_key)
        if self._annotator is None:
            if not self.from_spec:
                raise InputError(
                    "the annotator object given to add_syntax_features is not available in this worker "
                    "process; pass the annotator as a spec string (e.g. 'conllu:FILE') or num_proc=None"
                )
            self._annotator = make_annotator(self.annotator_spec, progress=False)
        return self._annotator

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[np.ndarray]]:
        """Model inputs of a batch of rows: ``{key: [array per row]}``, made by the runner's encoder
        (:func:`~syntaxformer.tasks.featurize.encode_examples`)."""
        texts_a = _column(batch, self.text_column)
        texts_b = _column(batch, self.text_pair_column) if self.text_pair_column else [None] * len(texts_a)
        context = TaskContext(
            self.tokenizer,
            annotator=self.annotator() if self.syntax_inputs else None,
            syntax_inputs=self.syntax_inputs,
            max_length=self.max_length,
            criterion=self.criterion,
            max_distance=self.max_distance,
            constituency=self.constituency,
            pos_tags=self.pos_tags,
            progress=False,
        )
        examples = [TaskExample(str(i), a, b) for i, (a, b) in enumerate(zip(texts_a, texts_b))]
        return encode_examples(examples, context)[0]


def _column(batch: dict[str, list[Any]], name: str) -> list[str]:
    if name not in batch:
        raise InputError(f"the data set has no column {name!r}; its columns are {sorted(batch)}")
    values = batch[name]
    bad = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
    if bad is not None:
        raise InputError(
            f"column {name!r} must hold texts; a row holds {values[bad]!r:.60} ({type(values[bad]).__name__})"
        )
    return values


def add_syntax_features(
    ds: Any,
    tokenizer: Any,
    text_column: str,
    text_pair_column: str | None = None,
    *,
    model: Any = None,
    config: Any = None,
    annotator: Any = None,
    max_length: int = 128,
    num_proc: int | None = None,
    batch_size: int = 256,
    criterion: str = "share",
    constituency: str = "from_dependency",
    pos_tags: str | None = None,
    parse_cache: Any = True,
    remove_columns: list[str] | None = None,
    load_from_cache_file: bool | None = None,
) -> Any:
    """``ds`` with the inputs of a syntax model added to every row (one ``Dataset.map``).

    Args:
        ds: a ``datasets.Dataset`` or ``DatasetDict`` (every split is mapped).
        tokenizer: the model's fast tokenizer.
        text_column: the column of the texts (the first texts of pairs).
        text_pair_column: the column of the second texts (NLI hypotheses, QA passages ...), or ``None``.
        model: the syntax model (its ``config`` is used), or give ``config``.
        config: the model's config: ``config.syntax_inputs`` are the syntax keys added (``()``: token arrays only,
            no parser runs); ``config.max_distance`` (Syntax-BERT) sizes the ancestor tables.
        annotator: the parser: ``None`` (the default spaCy pipeline), any :func:`~syntaxformer.data.make_annotator`
            spec (``"spacy:NAME"``, ``"conllu:FILE"`` ...) or an :class:`~syntaxformer.data.Annotator`.
        max_length: tokens per row, special tokens included; longer rows are truncated (pairs longest-first).
        num_proc: processes for ``Dataset.map`` (each parses its share of the rows).
        batch_size: rows per map batch (parsed together).
        criterion: subword criterion, ``"share"`` or ``"children"`` (see :class:`SyntaxCollator`).
        constituency: ``"from_dependency"`` (constituency inputs from a tree read off each dependency tree, the
            runner's default) or ``"given"`` (texts have no constituency tree: those inputs mark none).
        pos_tags: the tag set of ``pos_ids`` (``"upos"`` / ``"xpos"``) when the model reads them.
        parse_cache: the parse cache of an annotator built from a spec (``True`` = default location, a path, or
            ``False``).
        remove_columns: columns to drop (e.g. the text columns; a ``Trainer`` drops unused ones itself).
        load_from_cache_file: passed to ``Dataset.map`` (``None``: ``datasets``' default, reuse the cache).

    Returns:
        The mapped ``Dataset`` / ``DatasetDict``: the old columns (minus ``remove_columns``) plus ``input_ids``,
        ``attention_mask``, ``token_type_ids`` (if the tokenizer makes them) and each key of
        ``config.syntax_inputs``.

    Raises:
        ConfigError: neither ``model`` nor ``config``, or options that are not valid.
    """
    featurizer = SyntaxFeaturizer(
        tokenizer,
        text_column,
        text_pair_column,
        model=model,
        config=config,
        annotator=annotator,
        max_length=max_length,
        criterion=criterion,
        constituency=constituency,
        pos_tags=pos_tags,
        parse_cache=parse_cache,
    )
    parser = getattr(featurizer.annotator() if featurizer.syntax_inputs else None, "source", "none")
    logger.info("adding the syntax inputs %s to the data set (parser: %s)", list(featurizer.syntax_inputs), parser)
    kwargs = dict(
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        remove_columns=remove_columns,
        load_from_cache_file=load_from_cache_file,
        desc="syntax features",
    )
    if isinstance(ds, datasets.DatasetDict):
        return datasets.DatasetDict({name: split.map(featurizer, **kwargs) for name, split in ds.items()})
    if not isinstance(ds, datasets.Dataset):
        raise InputError(f"add_syntax_features maps a datasets.Dataset or DatasetDict, got a {type(ds).__name__}")
    return ds.map(featurizer, **kwargs)


def syntax_features(
    texts: list[str],
    tokenizer: Any,
    text_pairs: list[str] | None = None,
    *,
    model: Any = None,
    config: Any = None,
    annotator: Any = None,
    max_length: int = 128,
    criterion: str = "share",
    constituency: str = "from_dependency",
    pos_tags: str | None = None,
    parse_cache: Any = True,
) -> list[dict[str, np.ndarray]]:
    """The model inputs of each text (pair), as :func:`add_syntax_features` makes them, without ``datasets``.

    Args:
        texts: the (first) texts.
        tokenizer: the model's fast tokenizer.
        text_pairs: the second texts of pairs (same length as ``texts``), or ``None``.
        model, config, annotator, max_length, criterion, constituency, pos_tags, parse_cache: as in
            :func:`add_syntax_features`.

    Returns:
        One dict per text: ``input_ids``, ``attention_mask`` (``token_type_ids``) and the keys of
        ``config.syntax_inputs``, each an array ``[L]`` (``[L, D]`` for ancestor tables); add a ``label`` and give
        the list to a ``Trainer`` / ``DataLoader`` with :class:`~syntaxformer.data.collate.SyntaxCollator`.

    Raises:
        InputError: ``text_pairs`` has another length than ``texts``, or an item is not a string.
    """
    if text_pairs is not None and len(text_pairs) != len(texts):
        raise InputError(f"{len(texts)} texts but {len(text_pairs)} text_pairs; give one second text per text")
    featurizer = SyntaxFeaturizer(
        tokenizer,
        "text",
        None if text_pairs is None else "text_pair",
        model=model,
        config=config,
        annotator=annotator,
        max_length=max_length,
        criterion=criterion,
        constituency=constituency,
        pos_tags=pos_tags,
        parse_cache=parse_cache,
    )
    batch = {"text": list(texts)} | ({} if text_pairs is None else {"text_pair": list(text_pairs)})
    columns = featurizer(batch) if texts else {}
    return [{k: v[i] for k, v in columns.items()} for i in range(len(texts))]
