"""The call options of the syntax pipelines, taken as ``transformers``' own pipelines take them, and what they do to
the outputs; shared by the library's pipelines (:mod:`syntaxformer.pipelines`) and those of an exported model
folder (:mod:`syntaxformer.sharing.syntax_pipeline`, which carries a copy of this module).

* text classification: ``top_k`` (the ``top_k`` best labels, best first; ``None``: every label) and
  ``function_to_apply``: ``"softmax"``, ``"sigmoid"`` or ``"none"`` (the model's logits as they are); without it,
  a softmax over the labels, or the value itself for a regression (or one-logit) model;
* span QA: ``top_k`` (the ``top_k`` best answer spans of each question, best first) and ``max_answer_len``
  (the longest answer in tokens; ``max_answer_length``, the task option's name, is taken too);
* every pipeline: ``batch_size``.

An option may be given when the pipeline is built (``pipeline(..., top_k=None)``, the default of every call) or
per call; any other option is refused, naming it and the ones the pipeline takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from syntaxformer.errors import ConfigError

__all__ = [
    "CLASSIFICATION_OPTIONS",
    "FUNCTIONS",
    "QA_OPTIONS",
    "TRANSLATION_OPTIONS",
    "check_options",
    "class_scores",
    "ranked_labels",
]

#: The options each pipeline takes.
CLASSIFICATION_OPTIONS: tuple[str, ...] = ("top_k", "function_to_apply", "batch_size")
QA_OPTIONS: tuple[str, ...] = ("top_k", "max_answer_len", "max_answer_length", "batch_size")
TRANSLATION_OPTIONS: tuple[str, ...] = ("batch_size",)
#: ``function_to_apply`` values (as ``text-classification``'s, in any letter case).
FUNCTIONS: tuple[str, ...] = ("softmax", "sigmoid", "none")


def _positive(name: str, value: Any, none_ok: bool) -> None:
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        allowed = "a positive whole number" + (" or None" if none_ok else "")
        raise ConfigError(f"{name}={value!r} must be {allowed}")


def check_options(pipeline: str, options: Mapping[str, Any], accepted: Sequence[str]) -> dict[str, Any]:
    """The options of a call, checked, with ``function_to_apply`` in lower case and ``max_answer_length`` read as
    ``max_answer_len``.

    Args:
        pipeline: the pipeline's name, for messages.
        options: the options given (when the pipeline was built and in the call, the call's last).
        accepted: the options this pipeline takes.

    Raises:
        ConfigError: an option the pipeline does not take (named, with the ones it takes), or a value out of range.
    """
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(f"{pipeline} takes no option(s) {unknown}; it takes {', '.join(accepted)}")
    out = dict(options)
    if "top_k" in out:
        _positive("top_k", out["top_k"], none_ok=True)
    if "batch_size" in out:
        _positive("batch_size", out["batch_size"], none_ok=True)
    if out.get("function_to_apply") is not None:
        name = out["function_to_apply"]
        name = str(getattr(name, "value", name)).lower()  # transformers' ClassificationFunction enum too
        if name not in FUNCTIONS:
            raise ConfigError(f"function_to_apply={out['function_to_apply']!r} must be one of {', '.join(FUNCTIONS)}")
        out["function_to_apply"] = name
    if "max_answer_length" in out:
        length = out.pop("max_answer_length")
        if out.get("max_answer_len", length) != length:
            raise ConfigError(
                f"max_answer_len={out['max_answer_len']!r} and max_answer_length={length!r} are the same option; "
                "give one"
            )
        out["max_answer_len"] = length
    if out.get("max_answer_len") is not None:
        _positive("max_answer_len", out["max_answer_len"], none_ok=False)
    return out


def class_scores(logits: Sequence[float] | np.ndarray, function: str) -> np.ndarray:
    """The score of each label from the model's logits: ``softmax``, ``sigmoid`` or ``none`` (the logits)."""
    x = np.asarray(logits, dtype=np.float64)
    if function == "softmax":
        z = np.exp(x - x.max())
        return z / z.sum()
    if function == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if function == "none":
        return x
    raise ConfigError(f"function_to_apply={function!r} must be one of {', '.join(FUNCTIONS)}")


def ranked_labels(
    names: Sequence[str], scores: Sequence[float] | np.ndarray, top_k: int | None
) -> list[dict[str, Any]]:
    """``[{"label", "score"}]`` best first (ties in label order), the ``top_k`` first (``None``: all)."""
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))
    if top_k is not None:
        order = order[: int(top_k)]
    return [{"label": names[i], "score": float(scores[i])} for i in order]
