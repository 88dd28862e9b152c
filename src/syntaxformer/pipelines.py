"""``transformers`` pipelines for syntax models: raw text in, parsed on the fly, batched, label names out.

Registered with ``transformers.pipelines.PIPELINE_REGISTRY`` when ``transformers.pipelines`` loads after
``import syntaxformer`` (:mod:`syntaxformer.registration`): ``pipeline("syntax-text-classification", model=RUN)``,
``"syntax-question-answering"``, ``"syntax-translation"``. All three run :class:`syntaxformer.inference.Predictor`,
as ``syntaxformer predict`` does; their inputs, options and outputs are described in ``docs/inference.md``.
"""

from __future__ import annotations

from typing import Any

from syntaxformer.modeling.raw_text import CLASSIFICATION_OPTIONS, QA_OPTIONS, pipeline_answer, ranked_classes
from syntaxformer.sharing.syntax_pipeline import RawTextPipeline

__all__ = [
    "PIPELINES",
    "SyntaxQuestionAnsweringPipeline",
    "SyntaxTextClassificationPipeline",
    "SyntaxTranslationPipeline",
    "register",
]


class _SyntaxPipeline(RawTextPipeline):
    """What the three pipelines share: a :class:`~syntaxformer.inference.Predictor` built from the loaded model,
    which answers whole lists."""

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
        from syntaxformer.modeling.raw_text import check_pipeline_model

        check_pipeline_model(self._task, self.model)
        self.predictor = Predictor.from_pretrained(
            self.model,
            self.tokenizer,
            parser=parser,
            max_length=max_length,
            parse_cache=parse_cache,
            device=self.device,
        )

    def input_head(self) -> str:
        return self.predictor.head

    def answers(self, inputs: list[dict[str, Any]], options: dict[str, Any]) -> list[Any]:
        size = self.call_batch_size(options.get("batch_size"))
        records = self.predictor.predict(inputs, batch_size=size, **self._predict_options(options))
        return [self._format(r, options) for r in records]

    def _predict_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The head's options of :meth:`~syntaxformer.inference.Predictor.predict` for a call's ``options``."""
        return {}

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        raise NotImplementedError


class SyntaxTextClassificationPipeline(_SyntaxPipeline):
    """``"syntax-text-classification"``: as ``text-classification`` (inputs, outputs, ``top_k``,
    ``function_to_apply``), with the model's parser; a text may be a ``{"text", "text_pair"}`` mapping, and a
    regression model gives ``{"label", "score": value}``."""

    _call_options = CLASSIFICATION_OPTIONS
    _task = "syntax-text-classification"

    _single = (str, dict)

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as text-classification
        out, single = self._call(inputs, kwargs)
        if single:  # as text-classification: without top_k one text's best label comes in a list
            return [out[0]] if "top_k" not in kwargs else out[0]
        return out

    def _predict_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"logits": options.get("function_to_apply") is not None}

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        return ranked_classes(record, self.model.config, options)


class SyntaxQuestionAnsweringPipeline(_SyntaxPipeline):
    """``"syntax-question-answering"``: span QA with unanswerable questions (SQuAD 2.0 models); its inputs, options
    (``top_k``, ``max_answer_len``) and answers are those of an exported folder's pipeline,
    :class:`syntaxformer.sharing.qa_pipeline.SyntaxQuestionAnsweringPipeline`."""

    _call_options = QA_OPTIONS
    _single = (dict,)
    _task = "syntax-question-answering"

    def __call__(  # type: ignore[override]  # no *args, as text-classification
        self, inputs: Any = None, *, question: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Any:
        if inputs is None and (question is not None or context is not None):
            inputs = {"question": question, "context": context}
        return super().__call__(inputs, **kwargs)

    def _predict_options(self, options: dict[str, Any]) -> dict[str, Any]:
        top_k = options.get("top_k")
        return {
            "top_k": top_k if top_k is not None and top_k > 1 else None,
            "max_answer_length": options.get("max_answer_len"),
        }

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        return pipeline_answer(record)


class SyntaxTranslationPipeline(_SyntaxPipeline):
    """``"syntax-translation"``: the Syntax-Infused Transformer (its tokenizers come from the model folder's
    ``source_tokenizer/`` and ``target_tokenizer/``). Returns ``[{"translation_text"}]`` per input text."""

    _load_tokenizer = False  # type: ignore[assignment]  # a bool, as in RawTextPipeline
    _task = "syntax-translation"

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
    import transformers
    from transformers import pipelines
    from transformers.pipelines import PIPELINE_REGISTRY

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
