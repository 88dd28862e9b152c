"""The pipelines of an exported model folder: raw text in, parsed with spaCy, label names / answers / translations
out, where only torch, transformers, spaCy and a spaCy pipeline package are installed.

``syntaxformer export`` (:func:`syntaxformer.sharing.export.export_model`) copies this module into the folder with
every module it needs (imports made relative) and registers the class for the model's head in ``config.json``'s
``custom_pipelines``, under the standard task name, so that::

    from transformers import pipeline

    clf = pipeline(model="sst2-sg-export", trust_remote_code=True)    # or pipeline("text-classification", ...)
    clf("A fine film.")                       # [{"label": "positive", "score": 0.93}]
    clf(["A fine film.", "Dull."], top_k=None)  # every label per text, best first
    clf("A fine film.", function_to_apply="none")   # the logits as scores ("sigmoid", "softmax")
    clf({"text": "A man sleeps.", "text_pair": "Nobody sleeps."})

    qa = pipeline(model="squad-sg-export", trust_remote_code=True)
    qa(question="Who wrote it?", context="It was written by Ann.")   # {"answer", "start", "end", "score", ...}
    qa(question=..., context=..., top_k=3, max_answer_len=5)   # the 3 best spans of at most 5 tokens

    mt = pipeline(model="nmt-both-export", trust_remote_code=True)
    mt("A man rides a horse.")                # [{"translation_text": "..."}]

The featurization options of the run (the spaCy pipeline, ``max_length``, the subword criterion, SQuAD's window
stride and tuned no-answer threshold, the beam size ...) are read from :data:`OPTIONS_FILE` in the model folder.
The steps are the library's own (:class:`~syntaxformer.data.annotators.spacy.SpacyAnnotator`,
:class:`~syntaxformer.data.align.SyntaxAligner`, :mod:`syntaxformer.data.model_inputs`,
:mod:`syntaxformer.tasks.span_qa`, :mod:`syntaxformer.data.translation_pairs`), so the answers are those of
``syntaxformer predict`` on the run folder. A call parses all its texts at once and runs the model in batches of
``batch_size`` (default 32). The options of ``transformers``' own pipelines that apply (``top_k``,
``function_to_apply``, ``max_answer_len``) are taken as there, when the pipeline is built or per call
(:mod:`syntaxformer.pipeline_options`); other keyword arguments are refused. In an exported folder this module's imports of
the library are relative (``from .align import SyntaxAligner``): the modules it imports lie beside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from transformers.pipelines.base import Pipeline

from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators.spacy import SpacyAnnotator
from syntaxformer.data.bpe import BOS_ID, load_tokenizers
from syntaxformer.data.collate import pad_arrays
from syntaxformer.data.model_inputs import TOKEN_KEYS, encode_window, window_arrays, with_dependency_trees
from syntaxformer.data.sentence import Document
from syntaxformer.data.translation_pairs import collate_pairs, decode_translations, encode_pairs
from syntaxformer.errors import InputError
from syntaxformer.modeling.seq2seq import default_max_new_tokens
from syntaxformer.pipeline_options import (
    CLASSIFICATION_OPTIONS,
    QA_OPTIONS,
    TRANSLATION_OPTIONS,
    check_options,
    class_scores,
    ranked_labels,
)
from syntaxformer.tasks.span_qa import SquadFeaturizer, postprocess_predictions

if TYPE_CHECKING:
    from transformers import GenerationMixin

__all__ = [
    "OPTIONS_FILE",
    "PIPELINE_CLASSES",
    "PipelineOptions",
    "SyntaxQuestionAnsweringPipeline",
    "SyntaxTextClassificationPipeline",
    "SyntaxTranslationPipeline",
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
        max_length: tokens per window, special tokens included.
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
        return {
            "head": self.head,
            "parser": self.parser,
            "syntax_inputs": list(self.syntax_inputs),
            "max_length": self.max_length,
            "criterion": self.criterion,
            "max_distance": self.max_distance,
            "pos_tags": self.pos_tags,
            "constituency": self.constituency,
            "qa": dict(self.qa),
            "translation": dict(self.translation),
        }

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
    """The :class:`PipelineOptions` of a loaded model, from :data:`OPTIONS_FILE` in its folder (or hub repo)."""
    from transformers.utils import cached_file

    where = str(getattr(model, "name_or_path", "") or "")
    path = cached_file(where, OPTIONS_FILE, _raise_exceptions_for_missing_entries=False) if where else None
    if path is None:
        raise InputError(
            f"the model folder {where or '(unknown)'} has no {OPTIONS_FILE}; export the run with "
            "`syntaxformer export RUN_DIR OUT_DIR`"
        )
    with open(path, encoding="utf-8") as f:
        return PipelineOptions.from_dict(json.load(f))


class _SyntaxPipeline(Pipeline):
    """What the three pipelines share: the run's options, the spaCy parser (built on first use) and ``__call__``
    that hands a whole list to :meth:`_predict` (parse once, batch, restore the order)."""

    # transformers declares these as `= None` (so their inferred type is None); the values it reads are booleans
    _load_processor = False  # type: ignore[assignment]
    _load_image_processor = False  # type: ignore[assignment]
    _load_feature_extractor = False  # type: ignore[assignment]
    _load_tokenizer = True  # type: ignore[assignment]
    _call_options: tuple[str, ...] = TRANSLATION_OPTIONS

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.options = load_options(self.model)
        self.model.eval()
        self._annotator: Any = None

    @property
    def annotator(self) -> Any:
        """The spaCy annotator of the run's parser (no parse cache), or ``None`` when the model reads no syntax."""
        if self._annotator is None and self.options.syntax_inputs:
            self._annotator = SpacyAnnotator(self.options.parser or "en_core_web_sm", cache=False, progress=False)
        return self._annotator

    def _options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The options of a call: those given when the pipeline was built, then the call's, checked."""
        return check_options(type(self).__name__, {**self._postprocess_params, **kwargs}, self._call_options)

    def _batches(self, items: Sequence[dict[str, np.ndarray]], batch_size: int | None) -> list[np.ndarray]:
        """Item indices in batches of at most ``batch_size`` (else the pipeline's, else 32), longest first."""
        size = int(batch_size or self._batch_size or _DEFAULT_BATCH)
        order = sorted(range(len(items)), key=lambda i: -len(items[i]["input_ids"]))
        return [np.asarray(order[k : k + size]) for k in range(0, len(order), size)]

    def _pad_id(self, tokenizer: Any) -> int:
        return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    # the Pipeline interface, for one input (``__call__`` below runs whole lists through ``_predict``)
    def _sanitize_parameters(self, **kwargs: Any) -> tuple[dict, dict, dict]:
        # the options given when the pipeline is built: checked now, the defaults of every call
        return {}, {}, check_options(type(self).__name__, kwargs, self._call_options)

    def preprocess(self, input_: Any, **kwargs: Any) -> Any:
        return {"inputs": [input_]}

    def _forward(self, input_tensors: Any, **kwargs: Any) -> Any:
        return {"records": self._predict(input_tensors["inputs"], {})}

    def postprocess(self, model_outputs: Any, **kwargs: Any) -> Any:
        return model_outputs["records"][0]

    def _predict(self, inputs: list[Any], options: dict[str, Any]) -> list[Any]:
        raise NotImplementedError


class SyntaxTextClassificationPipeline(_SyntaxPipeline):
    """Text (pair) classification with the model's parser; answers as ``text-classification``.

    Inputs: a text, a ``{"text", "text_pair"}`` mapping, or a list of them. Returns ``[{"label", "score"}]`` for
    one text and one ``{"label", "score"}`` per text for a list; with ``top_k`` (``None`` = all labels) a list of
    the ``top_k`` best labels per text. ``function_to_apply`` (``"softmax"``, ``"sigmoid"``, ``"none"``: the
    logits) makes the scores; without it they are the softmax probabilities, and a regression model gives
    ``{"label", "score": value}``.
    """

    _call_options = CLASSIFICATION_OPTIONS

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as text-classification
        options = self._options(kwargs)
        options["legacy"] = "top_k" not in options  # as text-classification: no top_k = the best label as a dict
        single = isinstance(inputs, (str, dict))
        items = [inputs] if single else list(inputs)
        out = [self._format(r, options) for r in self._predict(items, options)]
        if single:
            return [out[0]] if "top_k" not in kwargs else out[0]
        return out

    def postprocess(self, model_outputs: Any, **kwargs: Any) -> Any:
        return self._format(model_outputs["records"][0], {})

    def _texts(self, items: list[Any]) -> tuple[list[str], list[str | None]]:
        texts: list[str] = []
        pairs: list[str | None] = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict) or set(item) - {"text", "text_pair"}:
                raise InputError(
                    f"input {i}: expected a text or a mapping with 'text' (and 'text_pair'), got {item!r:.80}"
                )
            text, pair = item.get("text"), item.get("text_pair")
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"input {i}: 'text' must be a non-empty text, got {text!r:.80}")
            if pair is not None and (not isinstance(pair, str) or not pair.strip()):
                raise InputError(f"input {i}: 'text_pair' must be a non-empty text or absent, got {pair!r:.80}")
            texts.append(text)
            pairs.append(pair)
        return texts, pairs

    def features(self, texts: list[str], pairs: list[str | None]) -> list[dict[str, np.ndarray]]:
        """Model inputs of each text (pair), as :func:`syntaxformer.tasks.featurize.build_features` makes them
        for raw texts: every unique text parsed once, constituency trees read off the dependency trees when the
        run did so, aligned into one (truncated) window, only the syntax inputs the model reads."""
        opts = self.options
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
        if opts.constituency == "from_dependency":
            docs_a = [with_dependency_trees(d) for d in docs_a]
            docs_b = None if docs_b is None else [with_dependency_trees(d) for d in docs_b]
        aligner = SyntaxAligner(
            self.tokenizer, max_length=opts.max_length, window_segment=None if docs_b is not None else 0
        )
        return [encode_window(windows[0], opts) for windows in aligner.align_batch(docs_a, docs_b)]

    def _predict(self, inputs: list[Any], options: dict[str, Any]) -> list[dict[str, Any]]:
        texts, pairs = self._texts(inputs)
        if not texts:
            return []
        items = self.features(texts, pairs)
        logits: list[Any] = [None] * len(items)
        pad = self._pad_id(self.tokenizer)
        with torch.no_grad():
            for idx in self._batches(items, options.get("batch_size")):
                batch = {k: v.to(self.device) for k, v in pad_arrays([items[int(i)] for i in idx], pad).items()}
                out = self.model(**batch).logits.float().cpu().numpy()
                for j, i in enumerate(idx):
                    logits[int(i)] = out[j]
        return [self._record(row) for row in logits]

    def _record(self, logits: np.ndarray) -> dict[str, Any]:
        config = self.model.config
        id2label = getattr(config, "id2label", None) or {}
        names = [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(len(logits))]
        record: dict[str, Any] = {"names": names, "logits": logits.astype(np.float64)}
        if getattr(config, "problem_type", None) == "regression" or len(logits) == 1:
            record["value"] = float(logits[0])
        return record

    def _format(self, record: dict[str, Any], options: dict[str, Any]) -> Any:
        legacy, top_k = options.get("legacy", True), options.get("top_k", 1)
        function = options.get("function_to_apply")
        if function is None and "value" in record:  # regression: the value itself
            ranked = [{"label": record["names"][0] if record["names"] else "score", "score": record["value"]}]
        else:
            scores = class_scores(record["logits"], function or "softmax")
            ranked = ranked_labels(record["names"], scores, None if legacy else top_k)
        return ranked[0] if legacy else ranked


@dataclass
class _Question:
    """A question over a passage, as :class:`~syntaxformer.tasks.span_qa.SquadFeaturizer` reads it (no answer)."""

    qid: str
    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = True


class SyntaxQuestionAnsweringPipeline(_SyntaxPipeline):
    """Span QA with unanswerable questions (SQuAD 2.0 models).

    Inputs: ``question=..., context=...``, a ``{"question", "context"}`` mapping or a list of them. Returns per
    question ``{"answer", "start", "end", "score", "null_score", "best_answer"}``: ``answer`` is ``""`` (and
    ``start`` / ``end`` ``None``) when the no-answer score exceeds the run's threshold (tuned on its dev
    articles); ``score`` is the best span's score (start + end logits), ``best_answer`` that span's text either way.
    With ``top_k`` above 1, a list of the ``top_k`` best spans per question instead (``{"answer", "start", "end",
    "score"}``, best first, different positions); ``max_answer_len`` bounds a span's length in tokens (default:
    the run's ``max_answer_length``).
    """

    _call_options = QA_OPTIONS

    def __call__(  # type: ignore[override]  # no *args, as text-classification
        self, inputs: Any = None, *, question: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Any:
        options = self._options(kwargs)
        if inputs is None:
            inputs = {"question": question, "context": context}
        elif question is not None or context is not None:
            raise InputError("give either the inputs or question= and context=, not both")
        single = isinstance(inputs, dict)
        out = self._predict([inputs] if single else list(inputs), options)
        return out[0] if single else out

    def _predict(self, inputs: list[Any], options: dict[str, Any]) -> list[Any]:
        questions = []
        for i, item in enumerate(inputs):
            if not isinstance(item, dict) or set(item) - {"question", "context", "id"}:
                raise InputError(f"input {i}: expected a mapping with 'question' and 'context', got {item!r:.80}")
            for key in ("question", "context"):
                if not isinstance(item.get(key), str) or not item[key].strip():
                    raise InputError(f"input {i}: {key!r} must be a non-empty text, got {item.get(key)!r:.80}")
            questions.append(_Question(str(item.get("id", f"input-{i}")), item["question"], item["context"]))
        if not questions:
            return []
        opts, qa = self.options, self.options.qa
        featurizer = SquadFeaturizer(
            self.tokenizer,
            self.annotator if opts.syntax_inputs else None,
            max_length=opts.max_length,
            stride=int(qa.get("doc_stride", 128)),
            question_first=bool(qa.get("question_first", False)),
        )
        windows = featurizer(questions)
        items = [window_arrays(w.aligned, opts.syntax_inputs, opts.criterion, opts.max_distance) for w in windows]
        starts: list[Any] = [None] * len(items)
        ends: list[Any] = [None] * len(items)
        verifier: list[Any] = [None] * len(items)
        pad = self._pad_id(self.tokenizer)
        with torch.no_grad():
            for idx in self._batches(items, options.get("batch_size")):
                batch = {k: v.to(self.device) for k, v in pad_arrays([items[int(i)] for i in idx], pad).items()}
                outputs = self.model(**batch)
                s, e = outputs.start_logits.float().cpu().numpy(), outputs.end_logits.float().cpu().numpy()
                v = getattr(outputs, "verifier_logits", None)
                v = None if v is None else v.float().cpu().numpy()
                for j, i in enumerate(idx):
                    starts[int(i)], ends[int(i)] = s[j], e[j]
                    verifier[int(i)] = None if v is None else v[j]
        use_verifier = qa.get("verifier", "none") != "none" and verifier[0] is not None
        threshold = float(qa.get("null_threshold", 0.0))
        top_k = options.get("top_k")
        result = postprocess_predictions(
            questions,
            windows,
            starts,
            ends,
            np.asarray(verifier) if use_verifier else None,
            n_best=max(int(qa.get("n_best", 20)), int(top_k or 1)),
            max_answer_length=int(options.get("max_answer_len") or qa.get("max_answer_length", 30)),
            beta1=float(qa.get("beta1", 1.0)),
            beta2=float(qa.get("beta2", 1.0)),
            null_threshold=threshold,
        )
        out: list[Any] = []
        for q in questions:
            if top_k is not None and top_k > 1:  # the top_k best spans
                spans = (result.nbest.get(q.qid) or [])[:top_k]
                out.append(
                    [{"answer": c["text"], "start": c["start"], "end": c["end"], "score": c["score"]} for c in spans]
                )
                continue
            candidates = result.nbest.get(q.qid)
            best = candidates[0] if candidates else None
            na = float(result.na_scores[q.qid])
            answer = best["text"] if best is not None and na <= threshold else ""
            out.append(
                {
                    "answer": answer,
                    "start": best["start"] if best is not None and answer else None,
                    "end": best["end"] if best is not None and answer else None,
                    "score": best["score"] if best else None,
                    "null_score": na if np.isfinite(na) else None,
                    "best_answer": best["text"] if best else "",
                }
            )
        return out


@dataclass
class _Sources:
    """Source sentences as :func:`~syntaxformer.data.translation_pairs.encode_pairs` reads a corpus."""

    sources: list[str]
    targets: None = None
    name: str = "inputs"

    def __len__(self) -> int:
        return len(self.sources)


class SyntaxTranslationPipeline(_SyntaxPipeline):
    """Translation with the Syntax-Infused Transformer (its BPE tokenizers are the folder's ``source_tokenizer/``
    and ``target_tokenizer/``). Returns ``[{"translation_text"}]`` per input text, like ``translation``."""

    _load_tokenizer = False

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # for the type checker: load_options() in super().__init__ refused a model without a folder
        assert self.model.name_or_path
        self.source_tokenizer, self.target_tokenizer = load_tokenizers(self.model.name_or_path)

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as text-classification
        options = self._options(kwargs)
        single = isinstance(inputs, str)
        out = self._predict([inputs] if single else list(inputs), options)
        return out[0] if single else out

    def _predict(self, inputs: list[Any], options: dict[str, Any]) -> list[list[dict[str, str]]]:
        for i, text in enumerate(inputs):
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"input {i}: expected a non-empty source text, got {text!r:.80}")
        if not inputs:
            return []
        opts, mt = self.options, self.options.translation
        items = encode_pairs(
            _Sources(list(inputs)),
            self.source_tokenizer,
            None,
            self.annotator if opts.syntax_inputs else None,
            opts.syntax_inputs,
            int(mt.get("max_source_length", 64)),
            int(mt.get("max_target_length", 64)),
            show_progress=False,
        )
        texts: list[Any] = [None] * len(items)
        pad = self._pad_id(self.source_tokenizer)
        with torch.no_grad():
            for idx in self._batches(items, options.get("batch_size")):
                batch = {
                    k: v.to(self.device) for k, v in collate_pairs([items[int(i)] for i in idx], pad, BOS_ID).items()
                }
                # the model is a seq2seq model (AutoModelForSeq2SeqLM), which Pipeline types as a PreTrainedModel
                ids = cast("GenerationMixin", self.model).generate(
                    **batch,
                    num_beams=int(mt.get("num_beams", 5)),
                    max_new_tokens=default_max_new_tokens(batch["input_ids"].shape[1]),
                )
                for j, text in zip(idx, decode_translations(ids.cpu().numpy(), self.target_tokenizer)):
                    texts[int(j)] = text
        return [[{"translation_text": t}] for t in texts]


#: Head -> (pipeline class, the standard task name it is registered under, the Auto class of its model).
PIPELINE_CLASSES: dict[str, tuple[type, str, str]] = {
    "sequence_classification": (
        SyntaxTextClassificationPipeline,
        "text-classification",
        "AutoModelForSequenceClassification",
    ),
    "question_answering": (SyntaxQuestionAnsweringPipeline, "question-answering", "AutoModelForQuestionAnswering"),
    "seq2seq": (SyntaxTranslationPipeline, "translation", "AutoModelForSeq2SeqLM"),
}
