"""``transformers`` pipelines for syntax models: raw text in, parsed on the fly, batched, label names out.

Registered with ``transformers.pipelines.PIPELINE_REGISTRY`` when ``transformers.pipelines`` loads after
``import syntaxformer`` (:mod:`syntaxformer.registration`)::

    import syntaxformer
    from transformers import pipeline

    clf = pipeline("syntax-text-classification", model="runs/sst2-sg")
    clf("A fine film.")                      # [{"label": "positive", "score": 0.93}]
    clf(["A fine film.", "Dull."])           # [{"label": ...}, {"label": ...}]
    clf("A fine film.", top_k=None)          # every label, best first
    clf({"text": "A man sleeps.", "text_pair": "Nobody sleeps."})   # sentence pairs

    qa = pipeline("syntax-question-answering", model="runs/squad-sg")
    qa(question="Who wrote it?", context="...")   # {"answer", "start", "end", "score", "null_score"}

    mt = pipeline("syntax-translation", model="runs/nmt-both")
    mt("A man rides a horse.")               # [{"translation_text": "..."}]

``model`` is a run folder of ``syntaxformer train`` (its task, parser and feature options are used) or a saved model
folder (the default parser, ``max_length`` 128, 384 for span QA); ``parser=`` / ``max_length=`` / ``parse_cache=``
change them. All three share :class:`syntaxformer.inference.Predictor` with ``syntaxformer predict``: a call
parses all its texts at once (spaCy batches them), featurizes them and runs them through the model in batches of
``batch_size`` (default 32), longest first. Outputs follow ``text-classification`` / ``question-answering`` /
``translation``.
"""

from __future__ import annotations

from typing import Any

from transformers.pipelines.base import Pipeline

__all__ = [
    "SyntaxTextClassificationPipeline",
    "SyntaxQuestionAnsweringPipeline",
    "SyntaxTranslationPipeline",
    "PIPELINES",
    "register",
]

_DEFAULT_BATCH = 32


class _SyntaxPipeline(Pipeline):
    """What the three pipelines share: a :class:`~syntaxformer.inference.Predictor` built from the loaded model,
    and ``__call__`` that hands a whole list to it (parse once, batch, restore the order)."""

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

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

        self.predictor = Predictor.from_pretrained(
            self.model,
            self.tokenizer,
            parser=parser,
            max_length=max_length,
            parse_cache=parse_cache,
            device=self.device,
        )

    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        return {}, {}, kwargs

    def preprocess(self, inputs: Any, **kwargs: Any) -> Any:  # one input through the whole predictor
        return {"inputs": [inputs]}

    def _forward(self, model_inputs: Any, **kwargs: Any) -> Any:
        return {"records": self.predictor.predict(model_inputs["inputs"])}

    def postprocess(self, model_outputs: Any, **kwargs: Any) -> Any:
        return self._format(model_outputs["records"][0], **kwargs)

    def _format(self, record: dict[str, Any], **kwargs: Any) -> Any:
        raise NotImplementedError

    def _refuse_unknown(self, kwargs: dict[str, Any], accepted: tuple[str, ...]) -> None:
        """An option this pipeline does not take is refused, naming it and the ones it takes (never ignored)."""
        if kwargs:
            from syntaxformer.errors import ConfigError

            raise ConfigError(
                f"{type(self).__name__} takes no option(s) {sorted(kwargs)}; it takes {', '.join(accepted)}"
            )

    def _inputs(self, inputs: Any, single: tuple[type, ...]) -> tuple[list[Any], bool]:
        """``(the inputs as a list, whether one input was given)``; anything that is neither one input (of a type in
        ``single``) nor a list / tuple / iterator of inputs is an :class:`~syntaxformer.errors.InputError`."""
        from collections.abc import Iterable, Mapping

        from syntaxformer.errors import InputError

        if isinstance(inputs, single):
            return [inputs], True
        if inputs is None or isinstance(inputs, (bytes, Mapping)) or not isinstance(inputs, Iterable):
            what = " or ".join(t.__name__ for t in single)
            raise InputError(
                f"{type(self).__name__} takes a {what} or a list of them, got {type(inputs).__name__} ({inputs!r:.60})"
            )
        return list(inputs), False

    def _run(self, inputs: list[Any], batch_size: int | None, **kwargs: Any) -> list[Any]:
        records = self.predictor.predict(inputs, batch_size=int(batch_size or self._batch_size or _DEFAULT_BATCH))
        return [self._format(r, **kwargs) for r in records]


class SyntaxTextClassificationPipeline(_SyntaxPipeline):
    """``"syntax-text-classification"``: as ``text-classification``, with the model's parser.

    Inputs: a text, a ``{"text", "text_pair"}`` mapping, or a list of them. Returns, like ``text-classification``,
    ``[{"label", "score"}]`` for one text, one dict per text for a list, and with ``top_k`` (``None`` = all) the
    ``top_k`` best labels per text. A regression model gives ``{"label", "score": value}``.
    """

    def __call__(self, inputs: Any, top_k: int | None | str = "", batch_size: int | None = None, **kwargs: Any) -> Any:
        self._refuse_unknown(kwargs, ("top_k", "batch_size"))
        legacy = top_k == ""  # as text-classification: no top_k = the best label as a dict, else lists
        items, single = self._inputs(inputs, (str, dict))
        out = self._run(items, batch_size, top_k=1 if legacy else top_k, legacy=legacy)
        if single:
            return [out[0]] if legacy else out[0]
        return out

    def _format(self, record: dict[str, Any], top_k: int | None = 1, legacy: bool = True, **kwargs: Any) -> Any:
        if "value" in record:  # regression
            names = self.predictor.label_names
            result = {"label": names[0] if names else "score", "score": record["value"]}
            return result if legacy else [result]
        if legacy:
            return {"label": record["label"], "score": record["score"]}
        ranked = sorted(record["scores"].items(), key=lambda kv: -kv[1])
        if top_k is not None:
            ranked = ranked[: int(top_k)]
        return [{"label": k, "score": v} for k, v in ranked]


class SyntaxQuestionAnsweringPipeline(_SyntaxPipeline):
    """``"syntax-question-answering"``: span QA with unanswerable questions (SQuAD 2.0 models).

    Inputs: ``question=..., context=...``, a ``{"question", "context"}`` mapping or a list of them. Returns per
    question ``{"answer", "start", "end", "score", "null_score"}``: ``answer`` is ``""`` (and ``start`` / ``end``
    ``None``) when the no-answer score exceeds the threshold (the one tuned on the run's dev articles);
    ``score`` is the best span's score (start + end logits), ``best_answer`` that span's text either way.
    """

    def __call__(
        self,
        inputs: Any = None,
        *,
        question: str | None = None,
        context: str | None = None,
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> Any:
        self._refuse_unknown(kwargs, ("question", "context", "batch_size"))
        if inputs is None and (question is not None or context is not None):
            inputs = {"question": question, "context": context}
        items, single = self._inputs(inputs, (dict,))
        out = self._run(items, batch_size)
        return out[0] if single else out

    def _format(self, record: dict[str, Any], **kwargs: Any) -> Any:
        return {
            "answer": record["answer"],
            "start": record["start"],
            "end": record["end"],
            "score": record["span_score"],
            "null_score": record["null_score"],
            "best_answer": record["best_answer"],
        }


class SyntaxTranslationPipeline(_SyntaxPipeline):
    """``"syntax-translation"``: the Syntax-Infused Transformer (its tokenizers come from the model folder's
    ``source_tokenizer/`` and ``target_tokenizer/``). Returns ``[{"translation_text"}]`` per input text."""

    _load_tokenizer = False

    def __call__(self, inputs: Any, batch_size: int | None = None, **kwargs: Any) -> Any:
        self._refuse_unknown(kwargs, ("batch_size",))
        items, single = self._inputs(inputs, (str,))
        out = self._run(items, batch_size)
        return out[0] if single else out

    def _format(self, record: dict[str, Any], **kwargs: Any) -> Any:
        return [{"translation_text": record["translation"]}]


#: Pipeline name -> (class, the Auto class name that loads its model).
PIPELINES: dict[str, tuple[type, str]] = {
    "syntax-text-classification": (SyntaxTextClassificationPipeline, "AutoModelForSequenceClassification"),
    "syntax-question-answering": (SyntaxQuestionAnsweringPipeline, "AutoModelForQuestionAnswering"),
    "syntax-translation": (SyntaxTranslationPipeline, "AutoModelForSeq2SeqLM"),
}


def register() -> None:
    """Register the pipelines with ``transformers.pipelines.PIPELINE_REGISTRY`` (once)."""
    import transformers
    from transformers.pipelines import PIPELINE_REGISTRY

    for name, (cls, auto) in PIPELINES.items():
        if PIPELINE_REGISTRY.supported_tasks.get(name, {}).get("impl") is cls:
            continue
        PIPELINE_REGISTRY.register_pipeline(name, pipeline_class=cls, pt_model=getattr(transformers, auto), type="text")
