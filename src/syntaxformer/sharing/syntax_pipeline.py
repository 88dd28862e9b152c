"""The pipelines of an exported model folder: raw text in, parsed with spaCy, label names / answers / translations
out, where only torch, transformers, spaCy and a spaCy pipeline package are installed (``docs/inference.md``,
"Sharing a model").

``syntaxformer export`` copies this module into the folder and names the pipeline of the model's head in
``config.json``'s ``custom_pipelines`` (:data:`PIPELINE_CLASSES`). The run's featurization options are read from
:data:`OPTIONS_FILE`; inputs, call options, batching and answers are :mod:`syntaxformer.modeling.raw_text`'s, so the
answers are those of ``syntaxformer predict`` on the run folder. This module holds what the pipelines share and the
classifier; span QA and translation are :mod:`syntaxformer.sharing.qa_pipeline` and
:mod:`syntaxformer.sharing.translation_pipeline`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from transformers.pipelines.base import Pipeline
from transformers.utils import cached_file

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators.spacy import SpacyParser
from syntaxformer.data.collate import TOKEN_KEYS, pad_arrays, window_arrays
from syntaxformer.data.sentence import Document, on_demand
from syntaxformer.errors import InputError
from syntaxformer.modeling.raw_text import (
    CLASSIFICATION_OPTIONS,
    TRANSLATION_OPTIONS,
    capped_max_length,
    check_inputs,
    check_options,
    classification_records,
    model_outputs,
    ranked_classes,
    run_batches,
)

__all__ = [
    "OPTIONS_FILE",
    "PIPELINE_CLASSES",
    "PipelineOptions",
    "SyntaxPipeline",
    "SyntaxTextClassificationPipeline",
    "load_options",
]

#: The file in the model folder that holds the run's featurization options (:class:`PipelineOptions`).
OPTIONS_FILE = "syntax_pipeline.json"
_DEFAULT_BATCH = 32


@dataclass
class PipelineOptions:
    """How the run turned raw text into model inputs (written by the export, read by the pipelines).

    Attributes:
        head: ``"sequence_classification"``, ``"question_answering"`` or ``"seq2seq"``.
        parser: the spaCy pipeline package (e.g. ``"en_core_web_sm"``); ``None`` when the model reads no syntax.
        syntax_inputs: the syntax batch keys the model reads (its config's ``syntax_inputs``).
        max_length: tokens per window, special tokens included (capped at the model's positions when loaded).
        criterion, max_distance, pos_tags, constituency: the featurization options of the run
            (:class:`~syntaxformer.tasks.base.TaskContext`).
        qa: span QA: ``doc_stride``, ``question_first``, ``n_best``, ``max_answer_length``, ``beta1``, ``beta2``,
            ``verifier`` and ``null_threshold`` (the one tuned on the run's dev articles, else the task's).
        translation: ``max_source_length``, ``max_target_length`` and ``num_beams``.
    """

    head: str
    parser: str | None = None
    syntax_inputs: tuple[str, ...] = ()
    max_length: int = 128
    criterion: str = "share"
    max_distance: int = 15
    pos_tags: str | None = None
    constituency: str = "given"
    qa: dict[str, Any] = field(default_factory=dict)
    translation: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "syntax_inputs": list(self.syntax_inputs)}

    def window_inputs(self, window: Any) -> dict[str, np.ndarray]:
        """The model inputs of one aligned window, as the run made them (:func:`~syntaxformer.data.collate.window_arrays`)."""
        return window_arrays(window, self.syntax_inputs, self.criterion, self.max_distance, self.pos_tags)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineOptions:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"{OPTIONS_FILE} has unknown keys {unknown}; known: {sorted(known)}")
        out = cls(**data)
        out.syntax_inputs = tuple(out.syntax_inputs)
        return out


def load_options(model: Any) -> PipelineOptions:
    """The :class:`PipelineOptions` of a loaded model, from :data:`OPTIONS_FILE` in its folder (or hub repo), with
    ``max_length`` capped at the model's position embeddings."""
    where = str(getattr(model, "name_or_path", "") or "")
    path = cached_file(where, OPTIONS_FILE, _raise_exceptions_for_missing_entries=False) if where else None
    if path is None:
        raise InputError(
            f"the model folder {where or '(unknown)'} has no {OPTIONS_FILE}; export the run with "
            "`syntaxformer export RUN_DIR OUT_DIR`"
        )
    with open(path, encoding="utf-8") as f:
        options = PipelineOptions.from_dict(json.load(f))
    options.max_length = capped_max_length(options.max_length, model.config, OPTIONS_FILE)
    return options


class SyntaxPipeline(Pipeline):
    """What the pipelines of an exported folder share: the run's options, the spaCy parser (built on first use),
    the checked options of a call and the batched forward pass (:func:`~syntaxformer.modeling.raw_text.run_batches`).
    ``__call__`` hands a whole list to :meth:`answers` (parse once, batch, restore the order)."""

    # transformers declares these as `= None` (so their inferred type is None); the values it reads are booleans
    _load_processor = False  # type: ignore[assignment]
    _load_image_processor = False  # type: ignore[assignment]
    _load_feature_extractor = False  # type: ignore[assignment]
    _load_tokenizer = True  # type: ignore[assignment]
    _call_options: tuple[str, ...] = TRANSLATION_OPTIONS
    #: What counts as one input (a list of them is several).
    _single: tuple[type, ...] = (str,)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.options = load_options(self.model)
        self.model.eval()
        self._annotator: Any = None

    @property
    def annotator(self) -> Any:
        """The spaCy parser of the run's parser (no parse cache), or ``None`` when the model reads no syntax."""
        if self._annotator is None and self.options.syntax_inputs:
            self._annotator = SpacyParser(self.options.parser or "en_core_web_sm")
        return self._annotator

    def _outputs(self, items: Sequence[Mapping[str, Any]], batch_size: int | None) -> dict[str, list[Any]]:
        """The model's outputs per item, in padded batches of :meth:`call_batch_size`."""
        pad = self.tokenizer.pad_token_id if self.tokenizer and self.tokenizer.pad_token_id is not None else 0
        collate = functools.partial(pad_arrays, pad_token_id=pad)
        size = self.call_batch_size(batch_size)
        return run_batches(items, collate, lambda b: model_outputs(self.model, b), size, self.device)

    def call_batch_size(self, given: int | None) -> int:
        """The batch size of a call: the one ``given``, else the pipeline's, else 32."""
        return int(given or self._batch_size or _DEFAULT_BATCH)

    def _call(self, inputs: Any, kwargs: dict[str, Any]) -> tuple[list[Any], bool]:
        """``(the answers, whether one input was given)`` of a call, with its options: those given when the
        pipeline was built, then the call's, checked."""
        options = check_options(type(self).__name__, {**self._postprocess_params, **kwargs}, self._call_options)
        items, single = check_inputs(inputs, self.options.head, self._single, type(self).__name__)
        return (self.answers(items, options) if items else []), single

    # the Pipeline interface, for one input (``__call__`` runs whole lists through ``answers``)
    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        # the options given when the pipeline is built: checked now, the defaults of every call
        return {}, {}, check_options(type(self).__name__, kwargs, self._call_options)

    def preprocess(self, input_: Any, **kwargs: Any) -> Any:
        return {"inputs": check_inputs([input_], self.options.head, name=type(self).__name__)[0]}

    def _forward(self, input_tensors: Any, **kwargs: Any) -> Any:
        return {"answers": self.answers(input_tensors["inputs"], {})}

    def postprocess(self, model_outputs: Any, **kwargs: Any) -> Any:
        return model_outputs["answers"][0]

    def answers(self, inputs: list[dict[str, Any]], options: dict[str, Any]) -> list[Any]:
        """The answers of checked inputs (:func:`~syntaxformer.modeling.raw_text.check_inputs`)."""
        raise NotImplementedError


class SyntaxTextClassificationPipeline(SyntaxPipeline):
    """Text (pair) classification with the model's parser; answers as ``text-classification``.

    Inputs: a text, a ``{"text", "text_pair"}`` mapping, or a list of them. Returns ``[{"label", "score"}]`` for
    one text and one ``{"label", "score"}`` per text for a list; with ``top_k`` (``None`` = all labels) a list of
    the ``top_k`` best labels per text. ``function_to_apply`` (``"softmax"``, ``"sigmoid"``, ``"none"``: the
    logits) makes the scores; without it they are the softmax probabilities, and a regression model gives
    ``{"label", "score": value}``.
    """

    _call_options = CLASSIFICATION_OPTIONS
    _single = (str, dict)

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as text-classification
        out, single = self._call(inputs, kwargs)
        if single:  # as text-classification: without top_k one text's best label comes in a list
            return [out[0]] if "top_k" not in kwargs else out[0]
        return out

    def features(self, inputs: list[dict[str, Any]]) -> list[dict[str, np.ndarray]]:
        """Model inputs of each text (pair), as :func:`syntaxformer.tasks.featurize.build_features` makes them
        for raw texts: every unique text parsed once, constituency trees read off the dependency trees when the
        run did so, aligned into one (truncated) window, only the syntax inputs the model reads."""
        opts = self.options
        texts = [r["text"] for r in inputs]
        pairs = [r.get("text_pair") for r in inputs]
        is_pair = any(p is not None for p in pairs)
        # for the type checker: this pipeline loads its tokenizer (_load_tokenizer), so Pipeline set one
        assert self.tokenizer is not None
        if not opts.syntax_inputs:  # a model that reads no syntax: the tokenizer alone
            enc = self.tokenizer(
                texts, [p or "" for p in pairs] if is_pair else None, truncation=True, max_length=opts.max_length
            )
            return [
                {k: np.asarray(enc[k][i], dtype=np.int64) for k in TOKEN_KEYS if k in enc} for i in range(len(texts))
            ]
        unique = list(dict.fromkeys(texts + [p for p in pairs if p is not None]))
        parsed = dict(zip(unique, self.annotator.annotate(unique)))
        docs_a: list[Any] = [parsed[t] for t in texts]
        docs_b: list[Any] | None = (
            [parsed[p] if p is not None else Document([], text="") for p in pairs] if is_pair else None
        )
        if opts.constituency == "from_dependency" and any(k.startswith("con_") for k in opts.syntax_inputs):
            with_trees = on_demand("constituency").with_dependency_trees  # only models that read constituency
            docs_a = [with_trees(d) for d in docs_a]
            docs_b = None if docs_b is None else [with_trees(d) for d in docs_b]
        aligner = SyntaxAligner(
            self.tokenizer, max_length=opts.max_length, window_segment=None if docs_b is not None else 0
        )
        return [opts.window_inputs(w[0]) for w in aligner.align_batch(docs_a, docs_b)]

    def answers(self, inputs: list[dict[str, Any]], options: dict[str, Any]) -> list[Any]:
        outputs = self._outputs(self.features(inputs), options.get("batch_size"))
        records = classification_records(inputs, outputs["logits"], self.model.config, keep_logits=True)
        return [ranked_classes(r, self.model.config, options) for r in records]


#: Head -> (the module and class of its pipeline, the standard task name it is registered under, the Auto class
#: of its model).
PIPELINE_CLASSES: dict[str, tuple[str, str, str, str]] = {
    "sequence_classification": (
        "syntaxformer.sharing.syntax_pipeline",
        "SyntaxTextClassificationPipeline",
        "text-classification",
        "AutoModelForSequenceClassification",
    ),
    "question_answering": (
        "syntaxformer.sharing.qa_pipeline",
        "SyntaxQuestionAnsweringPipeline",
        "question-answering",
        "AutoModelForQuestionAnswering",
    ),
    "seq2seq": (
        "syntaxformer.sharing.translation_pipeline",
        "SyntaxTranslationPipeline",
        "translation",
        "AutoModelForSeq2SeqLM",
    ),
}
