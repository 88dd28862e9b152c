"""``transformers`` pipelines for syntax models: raw text in, parsed on the fly, batched, label names out.

Registered with ``transformers.pipelines.PIPELINE_REGISTRY`` when ``transformers.pipelines`` loads after
``import syntaxformer`` (:mod:`syntaxformer.registration`). All three share :class:`syntaxformer.inference.Predictor`
with ``syntaxformer predict``; their inputs, options (checked by :mod:`syntaxformer.modeling.raw_text`) and outputs
are described, with examples, in ``docs/inference.md``.
"""

from __future__ import annotations

from typing import Any

import transformers
from transformers import pipelines
from transformers.pipelines import PIPELINE_REGISTRY
from transformers.pipelines.base import Pipeline

from syntaxformer.modeling.raw_text import (
    CLASSIFICATION_OPTIONS,
    QA_OPTIONS,
    TRANSLATION_OPTIONS,
    check_inputs,
    check_options,
    check_pipeline_model,
    pipeline_answer,
    ranked_classes,
)

__all__ = [
    "PIPELINES",
    "SyntaxQuestionAnsweringPipeline",
    "SyntaxTextClassificationPipeline",
    "SyntaxTranslationPipeline",
    "register",
]

_DEFAULT_BATCH = 32


class _SyntaxPipeline(Pipeline):
    """What the three pipelines share: a :class:`~syntaxformer.inference.Predictor` built from the loaded model,
    and ``__call__`` that hands a whole list to it (parse once, batch, restore the order)."""

    # transformers declares these as `= None` (so their inferred type is None); the values it reads are booleans
    _load_processor = False  # type: ignore[assignment]
    _load_image_processor = False  # type: ignore[assignment]
    _load_feature_extractor = False  # type: ignore[assignment]
    _load_tokenizer = True  # type: ignore[assignment]
    #: The call options this pipeline takes (:mod:`syntaxformer.modeling.raw_text`).
    _call_options: tuple[str, ...] = TRANSLATION_OPTIONS
    #: The name this pipeline is registered under.
    _task = ""

    def __init__(
        self,
        *args: Any,
        parser: str | None = None,
        max_length: int | None = None,
        parse_cache: bool | str | None = None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        from syntaxformer.inference import Predictor

        check_pipeline_model(self._task, self.model)
        self.predictor = Predictor.from_pretrained(
            self.model,
            self.tokenizer,
            parser=parser,
            max_length=max_length,
            parse_cache=parse_cache,
            device=self.device,
        )

    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        # the options given when the pipeline is built: checked now, the defaults of every call
        return {}, {}, check_options(type(self).__name__, kwargs, self._call_options)

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The options of a call: those given when the pipeline was built, then the call's, checked."""
        return check_options(type(self).__name__, {**self._postprocess_params, **kwargs}, self._call_options)

    def preprocess(self, input_: Any, **kwargs: Any) -> Any:  # one input through the whole predictor
        return {"inputs": [input_]}

    def _forward(self, input_tensors: Any, **kwargs: Any) -> Any:
        return {"records": self.predictor.predict(input_tensors["inputs"])}

    def postprocess(self, model_outputs: Any, **kwargs: Any) -> Any:
        return self._format(model_outputs["records"][0], {})

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _run(self, inputs: list[Any], options: dict[str, Any], **predict_options: Any) -> list[Any]:
        size = int(options.get("batch_size") or self._batch_size or _DEFAULT_BATCH)
        records = self.predictor.predict(inputs, batch_size=size, **predict_options)
        return [self._format(r, options) for r in records]


class SyntaxTextClassificationPipeline(_SyntaxPipeline):
    """``"syntax-text-classification"``: as ``text-classification`` (inputs, outputs, ``top_k``,
    ``function_to_apply``), with the model's parser; a text may be a ``{"text", "text_pair"}`` mapping, and a
    regression model gives ``{"label", "score": value}``."""

    _call_options = CLASSIFICATION_OPTIONS
    _task = "syntax-text-classification"

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as text-classification
        options = self._options(kwargs)
        # as text-classification: without top_k the best label as a dict (one text: in a list), else lists
        items, single = check_inputs(inputs, self.predictor.head, (str, dict), type(self).__name__)
        out = self._run(items, options, logits=options.get("function_to_apply") is not None)
        if single:
            return [out[0]] if "top_k" not in kwargs else out[0]
        return out

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        return ranked_classes(record, self.model.config, options)


class SyntaxQuestionAnsweringPipeline(_SyntaxPipeline):
    """``"syntax-question-answering"``: span QA with unanswerable questions (SQuAD 2.0 models). Inputs: ``question=...,
    context=...``, a ``{"question", "context"}`` mapping or a list of them. Returns per question ``{"answer", "start",
    "end", "score", "null_score", "best_answer"}``: ``answer`` is ``""`` (``start`` / ``end`` ``None``) when the
    no-answer score exceeds the threshold tuned on the run's dev articles; ``score`` is the best span's (start + end
    logits). ``top_k`` above 1 gives the ``top_k`` best spans per question instead; ``max_answer_len`` bounds a span's
    length in tokens (default: the run's ``max_answer_length``)."""

    _call_options = QA_OPTIONS
    _task = "syntax-question-answering"

    def __call__(  # type: ignore[override]  # no *args, as text-classification
        self, inputs: Any = None, *, question: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Any:
        options = self._options(kwargs)
        if inputs is None and (question is not None or context is not None):
            inputs = {"question": question, "context": context}
        items, single = check_inputs(inputs, self.predictor.head, (dict,), type(self).__name__)
        top_k = options.get("top_k")
        out = self._run(
            items,
            options,
            top_k=top_k if top_k is not None and top_k > 1 else None,
            max_answer_length=options.get("max_answer_len"),
        )
        return out[0] if single else out

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        return pipeline_answer(record)


class SyntaxTranslationPipeline(_SyntaxPipeline):
    """``"syntax-translation"``: the Syntax-Infused Transformer (its tokenizers come from the model folder's
    ``source_tokenizer/`` and ``target_tokenizer/``). Returns ``[{"translation_text"}]`` per input text."""

    _load_tokenizer = False
    _task = "syntax-translation"

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as text-classification
        options = self._options(kwargs)
        items, single = check_inputs(inputs, self.predictor.head, (str,), type(self).__name__)
        out = self._run(items, options)
        return out[0] if single else out

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        return [{"translation_text": record["translation"]}]


#: Pipeline name -> (class, the Auto class name that loads its model).
PIPELINES: dict[str, tuple[type, str]] = {
    "syntax-text-classification": (SyntaxTextClassificationPipeline, "AutoModelForSequenceClassification"),
    "syntax-question-answering": (SyntaxQuestionAnsweringPipeline, "AutoModelForQuestionAnswering"),
    "syntax-translation": (SyntaxTranslationPipeline, "AutoModelForSeq2SeqLM"),
}


#: ``transformers`` task names that ``transformers`` 5 removed -> the syntax pipeline for such a model.
_REMOVED_TASK_PIPELINES = {"question-answering": "syntax-question-answering", "translation": "syntax-translation"}


def register() -> None:
    """Register the pipelines with ``transformers.pipelines.PIPELINE_REGISTRY`` (once). ``transformers`` 5 refuses the
    task names ``"question-answering"`` and ``"translation"`` before it looks at the model (a ``KeyError`` that suggests
    a chat model); its message then also names the syntax pipeline for a syntaxformer model."""
    for name, (cls, auto) in PIPELINES.items():
        if PIPELINE_REGISTRY.supported_tasks.get(name, {}).get("impl") is cls:
            continue
        PIPELINE_REGISTRY.register_pipeline(name, pipeline_class=cls, pt_model=getattr(transformers, auto), type="text")
    removed = getattr(pipelines, "REMOVED_TASKS", None)
    if isinstance(removed, dict):
        for task, ours in _REMOVED_TASK_PIPELINES.items():
            hint = f'For a syntaxformer model: pipeline("{ours}", model=...) after `import syntaxformer`.'
            if isinstance(removed.get(task), str) and hint not in removed[task]:
                removed[task] = f"{removed[task]} {hint}"


# Imported before transformers.pipelines (``import syntaxformer.pipelines`` first), the import hook of
# syntaxformer.registration finds this module half-loaded and leaves the registration to it.
register()
