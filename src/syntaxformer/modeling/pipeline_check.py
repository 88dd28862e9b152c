"""Which pipeline runs a syntax model: what the syntax pipelines check before they run one, and the hint a model
gives when a pipeline that never parses (``transformers``' own ``text-classification`` ...) hands it token ids
alone.

* :func:`check_pipeline_model`: a syntax pipeline refuses a model of another head, and a model loaded for another
  head than the one it was trained with (``pipeline("syntax-text-classification", model=QA_RUN)`` loads the span-QA
  encoder under a new, untrained classifier: the saved ``config.architectures`` say which head was trained), naming
  the pipeline to use;
* :func:`raw_text_hint`: the end of the message of a task model that got no syntax inputs at all
  (:meth:`syntaxformer.modeling.heads.TaskHead.run_backbone`).
"""

from __future__ import annotations

from typing import Any

from syntaxformer.errors import ConfigError

__all__ = ["HEAD_PIPELINES", "check_pipeline_model", "pipeline_for_class", "raw_text_hint"]

#: Model class name suffix -> (the head in words, the syntax pipeline that runs it or ``None``).
HEAD_PIPELINES: dict[str, tuple[str, str | None]] = {
    "ForSequenceClassification": ("sequence classification", "syntax-text-classification"),
    "ForQuestionAnswering": ("span QA", "syntax-question-answering"),
    "ForMultipleChoice": ("multiple choice", None),
    "ForTokenClassification": ("token classification", None),
    "ForConditionalGeneration": ("translation", "syntax-translation"),
}


def _suffix(class_name: str) -> str | None:
    return next((s for s in HEAD_PIPELINES if class_name.endswith(s)), None)


def pipeline_for_class(class_name: str) -> str | None:
    """The syntax pipeline that runs models of ``class_name`` (``"SGNetForQuestionAnswering"`` ->
    ``"syntax-question-answering"``), or ``None``."""
    suffix = _suffix(class_name)
    return HEAD_PIPELINES[suffix][1] if suffix else None


def _use(class_name: str, where: str) -> str:
    pipeline = pipeline_for_class(class_name)
    if pipeline is None:
        return "no pipeline runs these models: use `syntaxformer predict RUN_DIR --input FILE` (or its Predictor)"
    return f'use pipeline("{pipeline}", model={where}) after `import syntaxformer`'


def check_pipeline_model(task: str, model: Any) -> None:
    """Refuse to run ``model`` in the syntax pipeline ``task`` when that pipeline is not the one for it.

    Args:
        task: the pipeline's name (``"syntax-text-classification"`` ...).
        model: the loaded model (its class and its saved ``config.architectures``; a folder's name is its
            ``name_or_path``).

    Raises:
        ConfigError: a model of another head, or loaded for another head than the saved one; the message names the
            pipeline to use.
    """
    loaded = type(model).__name__
    name = str(getattr(model, "name_or_path", "") or "")
    where = repr(name) if name else "..."
    saved = (getattr(getattr(model, "config", None), "architectures", None) or [None])[0]
    saved_suffix, loaded_suffix = _suffix(saved or ""), _suffix(loaded)
    if saved_suffix and loaded_suffix and saved_suffix != loaded_suffix:
        raise ConfigError(
            f'pipeline("{task}") loaded {where} as {loaded}, but it holds a {HEAD_PIPELINES[saved_suffix][0]} '
            f"model ({saved}): its {HEAD_PIPELINES[loaded_suffix][0]} head would be new, untrained weights; "
            f"{_use(str(saved), where)}"
        )
    if pipeline_for_class(loaded) != task:
        raise ConfigError(f'pipeline("{task}") does not run {loaded} models; {_use(loaded, where)}')


def raw_text_hint(class_name: str) -> str:
    """What to do when a batch holds token ids but none of the model's syntax inputs (a pipeline that tokenizes
    and never parses made it)."""
    pipeline = pipeline_for_class(class_name)
    use = f'pipeline("{pipeline}", model=...) after `import syntaxformer`' if pipeline else "`syntaxformer predict`"
    return (
        f"The batch holds no syntax input at all, as transformers' own pipelines (text-classification ...) make "
        f"batches: they tokenize raw text but never parse it. For raw text use {use}"
    )
