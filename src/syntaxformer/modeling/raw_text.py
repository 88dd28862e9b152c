"""Raw text in, records out: the steps every prediction on raw inputs takes, whoever runs it.

One module for ``syntaxformer predict --input``, the library pipelines and the pipelines of an exported model
folder (``syntaxformer export`` copies this module into the folder, so it imports nothing but numpy, torch and
:mod:`syntaxformer.errors`): the inputs and call options checked, batched longest first, run and turned into records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from syntaxformer.errors import ConfigError, InputError

#: Model class name suffix -> its head.
HEAD_SUFFIXES: dict[str, str] = {
    "ForSequenceClassification": "sequence_classification",
    "ForQuestionAnswering": "question_answering",
    "ForMultipleChoice": "multiple_choice",
    "ForTokenClassification": "token_classification",
    "ForConditionalGeneration": "seq2seq",
}
#: Head -> (the head in words, the syntax pipeline that runs it or ``None``).
HEAD_PIPELINES: dict[str, tuple[str, str | None]] = {
    "sequence_classification": ("sequence classification", "syntax-text-classification"),
    "question_answering": ("span QA", "syntax-question-answering"),
    "multiple_choice": ("multiple choice", None),
    "token_classification": ("token classification", None),
    "seq2seq": ("translation", "syntax-translation"),
}
#: Input keys each head reads: the required ones first (span QA: two; the others: one), then the optional ones.
HEAD_INPUTS: dict[str, tuple[str, ...]] = {
    "sequence_classification": ("text", "text_pair"),
    "question_answering": ("question", "context"),
    "multiple_choice": ("question", "context", "options"),
    "seq2seq": ("text",),
}
#: Batch keys that hold labels: never given to the model at inference (a backbone given one hints at a task model).
LABEL_KEYS: tuple[str, ...] = ("labels", "start_positions", "end_positions", "is_impossible")
#: The options each pipeline takes.
CLASSIFICATION_OPTIONS: tuple[str, ...] = ("top_k", "function_to_apply", "batch_size", "truncation")
QA_OPTIONS: tuple[str, ...] = ("top_k", "max_answer_len", "max_answer_length", "batch_size")
TRANSLATION_OPTIONS: tuple[str, ...] = ("batch_size",)
#: ``function_to_apply`` values (as ``text-classification``'s, in any letter case).
FUNCTIONS: tuple[str, ...] = ("softmax", "sigmoid", "none")


def class_head(class_name: str) -> str | None:
    """The head of a model class by its name (``"SGNetForQuestionAnswering"`` -> ``"question_answering"``), or
    ``None``."""
    return next((head for suffix, head in HEAD_SUFFIXES.items() if class_name.endswith(suffix)), None)


def pipeline_for_class(class_name: str) -> str | None:
    """The syntax pipeline that runs models of ``class_name`` (``"SGNetForQuestionAnswering"`` ->
    ``"syntax-question-answering"``), or ``None``."""
    head = class_head(class_name)
    return HEAD_PIPELINES[head][1] if head else None


def _use(class_name: str, where: str) -> str:
    pipeline = pipeline_for_class(class_name)
    if pipeline is None:
        return "no pipeline runs these models: use `syntaxformer predict RUN_DIR --input FILE` (or its Predictor)"
    return f'use pipeline("{pipeline}", model={where}) after `import syntaxformer`'


def check_pipeline_model(task: str, model: Any) -> None:
    """Refuse to run ``model`` in the syntax pipeline ``task`` (``"syntax-text-classification"`` ...) when that
    pipeline is not the one for it.

    Raises:
        ConfigError: a model of another head, or loaded for another head than the saved one (its
            ``config.architectures``); the message names the pipeline to use.
    """
    loaded = type(model).__name__
    name = str(getattr(model, "name_or_path", "") or "")
    where = repr(name) if name else "..."
    saved = (getattr(getattr(model, "config", None), "architectures", None) or [None])[0]
    saved_head, loaded_head = class_head(saved or ""), class_head(loaded)
    if saved_head and loaded_head and saved_head != loaded_head:
        raise ConfigError(
            f'pipeline("{task}") loaded {where} as {loaded}, but it holds a {HEAD_PIPELINES[saved_head][0]} '
            f"model ({saved}): its {HEAD_PIPELINES[loaded_head][0]} head would be new, untrained weights; "
            f"{_use(str(saved), where)}"
        )
    if pipeline_for_class(loaded) != task:
        raise ConfigError(f'pipeline("{task}") does not run {loaded} models; {_use(loaded, where)}')


def raw_text_hint(class_name: str) -> str:
    """What to do when a batch holds token ids but none of the model's syntax inputs (a pipeline that tokenizes
    and never parses made it)."""
    return (
        "The batch holds no syntax input at all, as transformers' own pipelines (text-classification ...) make "
        f"batches: they tokenize raw text but never parse it. For raw text, {_use(class_name, '...')}"
    )


def _shown(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _text(value: Any, where: str, key: str, required: bool) -> None:
    if value is None or (isinstance(value, float) and value != value):
        if required:
            raise InputError(f"{where}: {key!r} must be a non-empty text, got none")
        return
    if not isinstance(value, str):
        raise InputError(f"{where}: {key!r} holds a {type(value).__name__} ({_shown(value)}), not a text")
    if required and not value.strip():
        raise InputError(f"{where}: {key!r} must be a non-empty text, got a blank one")


def check_inputs(
    inputs: Any, head: str, single: tuple[type, ...] = (), name: str = "predict"
) -> tuple[list[dict[str, Any]], bool]:
    """The inputs as mappings with the keys the head reads (:data:`HEAD_INPUTS`), checked, and whether one input
    was given. A string is the first text (``text``); a ``(text, text_pair)`` tuple a pair; a mapping holds the
    head's keys and optionally ``id`` (copied to the record). Multiple choice needs at least two ``options``.

    Args:
        inputs: a list (any iterable) of inputs, or one input of a type in ``single`` (``()``: only lists).
        name: who takes the inputs, for messages (a pipeline's class name).

    Raises:
        InputError: neither one input nor a list of them, or an input without its text, with a blank one or with a
            key the head does not read (names the input's position and id).
    """
    if isinstance(inputs, single):
        items, one = [inputs], True
    elif inputs is None or isinstance(inputs, (str, bytes, Mapping)) or not isinstance(inputs, Iterable):
        what = " or ".join(t.__name__ for t in single) + " or a list of them" if single else "a list of inputs"
        raise InputError(
            f"{name} takes a {what}, got {type(inputs).__name__} ({_shown(inputs)})"
            + ("; a single text goes in a list: [text]" if not single and isinstance(inputs, str) else "")
        )
    else:
        items, one = list(inputs), False
    keys = HEAD_INPUTS[head]
    required = keys[:2] if head == "question_answering" else keys[:1]
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str) and head != "question_answering":
            item = {keys[0]: item}
        elif isinstance(item, (tuple, list)) and head == "sequence_classification" and len(item) == 2:
            item = {"text": item[0], "text_pair": item[1]}
        elif not isinstance(item, Mapping):
            raise InputError(f"input {i}: expected a text or a mapping with {list(keys)}, got {_shown(item)}")
        item = dict(item)
        where = f"input {i}" + (f" ({item['id']})" if "id" in item and str(item["id"]).isprintable() else "")
        unknown = sorted(set(map(str, item)) - {*keys, "id"})
        if unknown:
            raise InputError(f"{where}: unknown key(s) {unknown}; an input has {list(keys)} and optionally 'id'")
        for key in keys:
            if key != "options":
                _text(item.get(key), where, key, required=key in required)
        if head == "multiple_choice":
            options = item.get("options")
            if (
                not isinstance(options, (list, tuple))
                or len(options) < 2
                or not all(isinstance(o, str) and o.strip() for o in options)
            ):
                raise InputError(
                    f"{where}: 'options' must be a list of at least two non-empty texts, got {_shown(options)}"
                )
            item["options"] = list(options)
        out.append(item)
    return out, one


def _positive(name: str, value: Any, none_ok: bool) -> None:
    if value is None and none_ok:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        allowed = "a positive whole number" + (" or None" if none_ok else "")
        raise ConfigError(f"{name}={value!r} must be {allowed}")


def check_options(pipeline: str, options: Mapping[str, Any], accepted: Sequence[str]) -> dict[str, Any]:
    """The ``options`` of a call to ``pipeline`` (those given when it was built and in the call, the call's last),
    checked against the ``accepted`` ones, with ``function_to_apply`` in lower case and ``max_answer_length`` read
    as ``max_answer_len``.

    Raises:
        ConfigError: an option the pipeline does not take (named, with the ones it takes), or a value out of range.
    """
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(f"{pipeline} takes no option(s) {unknown}; it takes {', '.join(accepted)}")
    out = dict(options)
    for name in ("top_k", "batch_size"):
        if name in out:
            _positive(name, out[name], none_ok=True)
    if out.get("function_to_apply") is not None:
        name = out["function_to_apply"]
        name = str(getattr(name, "value", name)).lower()  # transformers' ClassificationFunction enum too
        if name not in FUNCTIONS:
            raise ConfigError(f"function_to_apply={out['function_to_apply']!r} must be one of {', '.join(FUNCTIONS)}")
        out["function_to_apply"] = name
    if "truncation" in out:  # texts are always truncated at max_length: True (or its strategy) asks for that
        value = out.pop("truncation")
        if value not in (True, "longest_first", "only_first"):
            raise ConfigError(
                f"truncation={value!r}: a syntax pipeline always truncates a text (pair) at the model's max_length; "
                "give truncation=True or leave it out"
            )
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


def position_limit(model_config: Any) -> int | None:
    """The longest input (tokens) a model's encoder can read: its ``max_position_embeddings`` (RoBERTa-style
    encoders: less the two positions before the padding index), or ``None`` when the config has no such limit."""
    encoder = getattr(model_config, "encoder", None) or model_config
    encoder = encoder if isinstance(encoder, Mapping) else vars(encoder)
    limit = encoder.get("max_position_embeddings")
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None
    if "roberta" in str(encoder.get("model_type", "")):  # positions start after the padding index
        limit -= 2
    return limit


def capped_max_length(max_length: Any, model_config: Any, where: str) -> int:
    """``max_length`` lowered to the model's positions (:func:`position_limit`).

    Raises:
        ConfigError: ``max_length`` is not a positive whole number (naming ``where`` it comes from).
    """
    _positive(f"{where}: max_length", max_length, none_ok=False)
    limit = position_limit(model_config)
    return int(max_length) if limit is None else min(int(max_length), limit)


def batches(features: Sequence[Mapping[str, Any]], batch_size: int) -> list[np.ndarray]:
    """Feature indices in batches of at most ``batch_size``, longest first; multiple-choice items (``options``)
    are batched with items of the same number of options only (a batch is ``[B, C, L]``)."""
    _positive("batch_size", batch_size, none_ok=False)
    n = len(features)
    if n and "options" in features[0]:
        groups = [len(features[i]["options"]) for i in range(n)]
        lengths = [max(len(o["input_ids"]) for o in features[i]["options"]) for i in range(n)]
    else:
        groups, lengths = [0] * n, [len(features[i]["input_ids"]) for i in range(n)]
    order = sorted(range(n), key=lambda i: (groups[i], -lengths[i]))
    out: list[np.ndarray] = []
    for group in dict.fromkeys(groups[i] for i in order):
        mine = [i for i in order if groups[i] == group]
        out += [np.asarray(mine[k : k + batch_size]) for k in range(0, len(mine), batch_size)]
    return out


def default_max_new_tokens(source_length: int) -> int:
    """Longest output for a batch of padded source length ``L``: ``min(1.5 L + 10, 200)``."""
    return min(int(1.5 * source_length) + 10, 200)


def model_outputs(model: Any, batch: Mapping[str, Any], **auxiliary: Any) -> dict[str, Any]:
    """One batch through the model: every logits field of its output as a float32 array; each ``auxiliary`` model
    adds its ``verifier_logits`` as ``aux:<name>``."""
    out = {k: v.float().cpu().numpy() for k, v in model(**batch).items() if k.endswith("logits") and v is not None}
    for name, aux in auxiliary.items():
        v = getattr(aux(**batch), "verifier_logits", None)
        out[f"aux:{name}"] = None if v is None else v.float().cpu().numpy()
    return out


def run_batches(
    features: Sequence[Mapping[str, Any]],
    collate: Callable[[list[Any]], Mapping[str, Any]],
    forward: Callable[[dict[str, Any]], Mapping[str, Any]],
    batch_size: int,
    device: Any,
) -> dict[str, list[Any]]:
    """Every feature through ``forward`` in :func:`batches`: output key -> one row per feature, in input order
    (label keys are never given to the model)."""
    rows: dict[str, list[Any]] = {}
    with torch.no_grad():
        for idx in batches(features, batch_size):
            batch = collate([features[int(i)] for i in idx])
            batch = {k: v.to(device) for k, v in batch.items() if k not in LABEL_KEYS and hasattr(v, "to")}
            for key, values in forward(batch).items():
                column = rows.setdefault(key, [None] * len(features))
                for j, i in enumerate(idx):
                    column[int(i)] = None if values is None else values[j]
    return rows


def padded(rows: Sequence[Any], fill: float, dtype: Any = np.float64) -> np.ndarray:
    """Rows of different lengths as one array ``(N, longest)``, the rest ``fill``."""
    out = np.full((len(rows), max(len(r) for r in rows)), fill, dtype=dtype)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def label_names(model_config: Any, n: int | None = None) -> list[str]:
    """Class names in class-id order (``config.id2label``; ``n``: that many, ``LABEL_<i>`` where it names none)."""
    id2label = getattr(model_config, "id2label", None) or {}
    n = len(id2label) if n is None else n
    return [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(n)]


def _record_id(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": record["id"]} if "id" in record else {}


def classification_record(
    record: Mapping[str, Any], logits: np.ndarray, model_config: Any, keep_logits: bool = False
) -> dict[str, Any]:
    """The record of one text (pair): ``text`` (``text_pair``), ``label`` (the class name), ``score`` (its
    probability) and ``scores`` (probability per class name); a regression (or one-logit) model: ``value``.
    ``keep_logits``: ``logits``, the model's outputs as they are."""
    out = {**_record_id(record), "text": record["text"]}
    if record.get("text_pair") is not None:
        out["text_pair"] = record["text_pair"]
    if keep_logits:
        out["logits"] = [float(x) for x in logits]
    if getattr(model_config, "problem_type", None) == "regression" or len(logits) == 1:
        out["value"] = float(logits[0])
        return out
    p = class_scores(logits, "softmax")
    names, best = label_names(model_config, len(p)), int(p.argmax())
    out.update(label=names[best], score=float(p[best]), scores={names[i]: float(p[i]) for i in range(len(p))})
    return out


def classification_records(
    inputs: Sequence[Mapping[str, Any]], logits: Sequence[np.ndarray], model_config: Any, keep_logits: bool = False
) -> list[dict[str, Any]]:
    """:func:`classification_record` of each input with its row of logits."""
    return [classification_record(r, row, model_config, keep_logits) for r, row in zip(inputs, logits)]


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


def ranked_classes(record: Mapping[str, Any], model_config: Any, options: Mapping[str, Any]) -> Any:
    """A :func:`classification_record` as ``text-classification`` answers: without ``top_k`` in ``options`` the
    best ``{"label", "score"}``, else a list of the ``top_k`` best (``None``: all); ``function_to_apply`` scores
    the logits (the record must keep them), a regression model answers ``{"label", "score": value}``."""
    top_k = options.get("top_k", 1)
    function = options.get("function_to_apply")
    if function is not None:
        logits = record["logits"]
        ranked = ranked_labels(label_names(model_config, len(logits)), class_scores(logits, function), top_k)
    elif "value" in record:
        names = label_names(model_config)
        ranked = [{"label": names[0] if names else "score", "score": record["value"]}]
    else:
        ranked = ranked_labels(list(record["scores"]), list(record["scores"].values()), top_k)
    return ranked if "top_k" in options else ranked[0]


def answer_record(
    record: Mapping[str, Any], nbest: Sequence[Mapping[str, Any]], na_score: float, threshold: float, top_k: Any
) -> dict[str, Any]:
    """The record of one question: ``answer`` (``""`` when the no-answer score exceeds ``threshold``), ``start`` /
    ``end`` (character offsets in the context), ``best_answer`` / ``best_start`` / ``best_end`` (the best non-null
    span), ``span_score``, ``null_score`` and ``null_threshold``; with ``top_k``, ``answers``: the ``top_k`` best
    spans (``{"answer", "start", "end", "score"}``, best first)."""
    best = nbest[0] if nbest else None
    answer = best["text"] if best is not None and na_score <= threshold else ""
    out = {
        **_record_id(record),
        "question": record["question"],
        "context": record["context"],
        "answer": answer,
        "start": best["start"] if best is not None and answer else None,
        "end": best["end"] if best is not None and answer else None,
        "best_answer": best["text"] if best else "",
        "best_start": best["start"] if best else None,
        "best_end": best["end"] if best else None,
        "span_score": best["score"] if best else None,
        "null_score": na_score if math.isfinite(na_score) else None,
        "null_threshold": threshold,
    }
    if top_k is not None:
        out["answers"] = [
            {"answer": c["text"], "start": c["start"], "end": c["end"], "score": c["score"]} for c in nbest[:top_k]
        ]
    return out


def pipeline_answer(record: Mapping[str, Any]) -> Any:
    """An :func:`answer_record` as ``question-answering`` answers: ``{"answer", "start", "end", "score",
    "null_score", "best_answer"}``, or the list of the ``top_k`` best spans when the record holds them."""
    if "answers" in record:
        return [dict(a) for a in record["answers"]]
    keys = {"answer": "answer", "start": "start", "end": "end", "score": "span_score", "null_score": "null_score"}
    return {**{k: record[v] for k, v in keys.items()}, "best_answer": record["best_answer"]}
