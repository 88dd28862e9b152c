"""SQuAD 2.0 span QA as a :class:`~syntaxformer.tasks.base.Task`: windows with start/end labels, span decoding with
the null answer (and an answer verifier), and the threshold protocol (:func:`threshold_split`;
docs/reading_comprehension.md). The windows and the decoding are :mod:`syntaxformer.tasks.span_qa`, the metric
:mod:`syntaxformer.tasks.squad_metric`.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.data.examples import TaskData, content_fingerprint
from syntaxformer.data.readers.squad import SquadExample, example_from_row, read_squad, split_by_article, squad_counts
from syntaxformer.data.readers.table import TableExamples, load_dataset_table
from syntaxformer.defaults import task_data_dir
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.modeling.raw_text import answer_record
from syntaxformer.tasks.base import (
    READING_DEFAULTS,
    Predictions,
    Task,
    TaskContext,
    constructor_options,
    refuse_unknown_options,
    register_task,
    sample_limit,
)
from syntaxformer.tasks.featurize import FeatureDataset, ParsedRows, build_features
from syntaxformer.tasks.span_qa import (  # the windows and the decoding, shared with exported model folders
    SquadFeature,
    SquadFeaturizer,
    SquadPredictions,
    answer_token_span,
    postprocess_predictions,
)
from syntaxformer.tasks.squad_metric import squad_scores

__all__ = [
    "LABEL_KEYS",
    "VERIFIERS",
    "SpanRows",
    "SquadFeature",
    "SquadFeaturizer",
    "SquadPredictions",
    "SquadTask",
    "StoredWindow",
    "answer_token_span",
    "feature_arrays",
    "json_safe_scores",
    "postprocess_predictions",
    "stored_windows",
    "threshold_note",
    "threshold_split",
]

#: Answer-verifier modes: none, ``joint`` (on the span model's encoder) or ``parallel`` (a second model, §3.4.1).
VERIFIERS: tuple[str, ...] = ("none", "joint", "parallel")
#: Label arrays of a window.
LABEL_KEYS: tuple[str, ...] = ("start_positions", "end_positions", "is_impossible")


def feature_arrays(feature: SquadFeature, context: TaskContext) -> dict[str, np.ndarray]:
    """Collator input of one window: :meth:`TaskContext.window_arrays` and the scalar :data:`LABEL_KEYS`."""
    out = context.window_arrays(feature.aligned)
    out["start_positions"] = np.asarray(feature.start_position, dtype=np.int64)
    out["end_positions"] = np.asarray(feature.end_position, dtype=np.int64)
    out["is_impossible"] = np.asarray(feature.is_impossible, dtype=np.int64)
    return out


@dataclass(frozen=True)
class StoredWindow:
    """What decoding (:func:`postprocess_predictions`) reads of a window kept in Arrow."""

    example_index: int
    window: int
    passage_offsets: np.ndarray


class SpanRows(ParsedRows):
    """Span QA examples -> one feature row per window (:class:`SquadFeaturizer`): the model's arrays and labels
    (:func:`feature_arrays`), and, for decoding, the side columns ``example_index``, ``window`` and
    ``passage_offsets``."""

    side_keys: tuple[str, ...] = ("example_index", "window", "passage_offsets")

    def __init__(self, stride: int, question_first: bool):
        self.stride, self.question_first = int(stride), bool(question_first)

    def options(self) -> dict[str, Any]:
        return {"doc_stride": self.stride, "question_first": self.question_first}

    def record(self, example: Any) -> list[Any]:
        e = example
        return [e.qid, e.title, e.context, e.question, e.answers, e.is_impossible]

    def encode(
        self, block: Sequence[Any], indices: Sequence[int], context: Any
    ) -> tuple[dict[str, list[Any]], int, int]:
        annotator = self.annotator(context)
        featurizer = SquadFeaturizer(
            context.tokenizer, annotator, context.max_length, self.stride, question_first=self.question_first
        )
        try:
            windows = featurizer(block)
        except ValueError as e:  # window room (max_length - question - specials) too small for the stride
            raise ConfigError(
                f"SQuAD windows: {e} (max_length={context.max_length}, doc_stride="
                f"{self.stride}); raise --max-length or lower the overlap with --set doc_stride=N "
                "(task_options doc_stride)"
            ) from e
        columns: dict[str, list[Any]] = {"guid": [w.qid for w in windows]}
        columns["example_index"] = [indices[w.example_index] for w in windows]
        columns["window"] = [w.window for w in windows]
        columns["passage_offsets"] = [np.asarray(w.passage_offsets, dtype=np.int64) for w in windows]
        for w in windows:
            for k, v in feature_arrays(w, context).items():
                columns.setdefault(k, []).append(v)
        n_parsed = len({e.context for e in block}) + len(block) if annotator is not None else 0
        return columns, 0, n_parsed


def stored_windows(features: FeatureDataset) -> list[StoredWindow]:
    """The windows of span QA features, in row order, as decoding reads them."""
    return [StoredWindow(**features.side(j)) for j in range(len(features))]


# -- The threshold protocol ----------------------------------------------------------------------------------
def threshold_split(
    examples: Sequence[SquadExample], fraction: float, seed: int = 0
) -> tuple[list[str], dict[str, Any]]:
    """``(tuning_qids, protocol)``: the evaluation questions whose articles (about ``fraction`` of them) tune the
    no-answer threshold, and a description of the split (``fraction = 0``: ``tuning_qids == []``).

    Raises:
        DataError: ``fraction > 0`` but the questions come from fewer than two articles.
    """
    fraction = float(fraction)
    if fraction <= 0:
        return [], {
            "threshold_tuning_fraction": 0.0,
            "tuned_on": "the scored (test) questions themselves",
            "test_articles": sorted({e.title for e in examples}),
            "test_questions": len(examples),
            "test_counts": squad_counts(examples),
            "note": "threshold_tuning_fraction=0: best_f1_threshold is tuned on the questions it scores "
            "(as the official script's best_f1), so it is optimistic.",
        }
    titles = sorted({e.title for e in examples})
    if len(titles) < 2:
        raise DataError(
            f"threshold_tuning_fraction={fraction} splits the evaluation articles into a tuning "
            f"and a test part, but the evaluation questions come from {len(titles)} article(s); "
            "use more evaluation questions / articles or threshold_tuning_fraction=0 (tune on "
            "the scored questions themselves)"
        )
    tuning, test = split_by_article(examples, 1.0 - fraction, seed=int(seed))
    return [e.qid for e in tuning], {
        "threshold_tuning_fraction": fraction,
        "threshold_split_seed": int(seed),
        "tuned_on": "the tuning part (other articles than the scored test part)",
        "tuning_articles": sorted({e.title for e in tuning}),
        "test_articles": sorted({e.title for e in test}),
        "tuning_questions": len(tuning),
        "test_questions": len(test),
        "tuning_counts": squad_counts(tuning),
        "test_counts": squad_counts(test),
        "note": "The evaluation (held-out) articles are split by article: no-answer thresholds are chosen on the "
        "tuning part and applied to the test part; fixed_threshold, best_f1_threshold and "
        "best_exact_threshold score the test part only. same_set_best_f1_threshold tunes on the test part "
        "itself (optimistic; as the official script's best_f1). per_question.json marks each question's "
        "part.",
    }


def threshold_note(fraction: float) -> str:
    """The sentence ``metrics.json`` carries to say which questions the reported SQuAD scores are on."""
    if fraction > 0:
        return (
            "All SQuAD scores are on the TEST part of the evaluation articles (threshold_protocol). "
            "best_f1_threshold (headline) / best_exact_threshold: the no-answer threshold with the best F1 / EM "
            "on the TUNING part (other articles), applied to the test part. fixed_threshold: the untuned "
            "null_threshold. same_set_best_f1_threshold and fixed_threshold.best_* / official_best_*: "
            "thresholds tuned on the test part itself (optimistic; official_best_* are the official script's "
            "numbers, which can be unreachable when no-answer scores tie)."
        )
    return (
        "threshold_tuning_fraction=0: best_f1_threshold / best_exact_threshold are tuned on the same evaluation "
        "questions they score (as the official script's best_f1; optimistic). fixed_threshold: untuned. "
        "official_best_*: the official script's sweep (can be unreachable when no-answer scores tie)."
    )


def json_safe_scores(scores: Mapping[str, float]) -> dict[str, float]:
    """No-answer scores for JSON: a question with no valid span has score +inf, written as 1e30."""
    return {k: (float(v) if math.isfinite(v) else math.copysign(1e30, v)) for k, v in scores.items()}


# -- The task ------------------------------------------------------------------------------------------------
def _qa_outputs(raw: Any) -> tuple[Any, Any, Any]:
    """``(start_logits, end_logits, verifier_logits or None)`` of a model's raw predictions (a tuple, a
    ``PredictionOutput`` or a mapping; 1-d per-batch losses are skipped)."""
    raw = getattr(raw, "predictions", raw)
    if isinstance(raw, Mapping):
        return raw["start_logits"], raw["end_logits"], raw.get("verifier_logits")
    if not isinstance(raw, (tuple, list)) or len(raw) < 2:
        raise InputError(
            "SQuAD predictions must hold start and end logits (a tuple (start_logits, "
            f"end_logits[, verifier_logits]) or a mapping), got {type(raw).__name__}"
        )
    verifier = next((x for x in raw[2:] if np.ndim(x) == 2 and np.shape(x)[-1] == 2), None)
    return raw[0], raw[1], verifier


def _row_example(rows: Sequence[Mapping[str, Any]], i: int) -> SquadExample:
    return example_from_row(rows[i])


@register_task
class SquadTask(Task[TaskData]):
    """SQuAD 2.0 extractive QA with unanswerable questions (head ``question_answering``).

    Args:
        doc_stride: the **overlap** between consecutive windows in tokens (as in Hugging Face's ``run_qa``), below
            the run's ``max_length``.
        question_first: ``[CLS] question [SEP] passage [SEP]`` instead of SG-Net's passage-first order.
        n_best: span candidates per window (start and end) and kept per question.
        max_answer_length: longest answer span in tokens.
        null_threshold: the fixed no-answer threshold δ (``fixed_threshold`` scores).
        verifier: one of :data:`VERIFIERS`.
        verifier_loss_weight: weight of the verifier's cross-entropy in training.
        beta1, beta2: Eq. 14 weights of ``score_diff`` (span vs null) and ``score_ext`` (verifier).
        held_out_fraction, split_seed: with one SQuAD file, the share of its articles held out as ``dev``.
        threshold_tuning_fraction, threshold_split_seed: the share of the ``dev`` articles that tunes the
            no-answer thresholds; 0 = tune on the scored questions.
    """

    name = "squad2"
    title = "SQuAD 2.0"
    head = "question_answering"
    metric_names = ("f1", "exact", "HasAns_f1", "NoAns_f1")
    splits = ("train", "dev", "test")
    #: The file of ``<data_dir>/`` (default ``<shared data>/squad2``) read when no ``train_file`` is given.
    default_file = "dev-v2.0-half.json"

    def __init__(
        self,
        doc_stride: int = 128,
        question_first: bool = False,
        n_best: int = 20,
        max_answer_length: int = 30,
        null_threshold: float = 0.0,
        verifier: str = "none",
        verifier_loss_weight: float = 1.0,
        beta1: float = 1.0,
        beta2: float = 1.0,
        held_out_fraction: float = 0.25,
        split_seed: int = 0,
        threshold_tuning_fraction: float = 0.5,
        threshold_split_seed: int = 0,
        **unknown: Any,
    ):
        refuse_unknown_options(self.name, unknown)
        if verifier not in VERIFIERS:
            raise ConfigError(f"verifier={verifier!r} is not valid; choose one of {VERIFIERS}")
        if int(doc_stride) < 0:
            raise ConfigError(f"doc_stride={doc_stride} (tokens shared by consecutive windows) must be >= 0")
        for option, value in (("n_best", n_best), ("max_answer_length", max_answer_length)):
            if int(value) < 1:
                raise ConfigError(f"{option}={value} must be a positive number")
        if not 0.0 <= float(held_out_fraction) < 1.0:
            raise ConfigError(f"held_out_fraction={held_out_fraction} must lie in [0, 1)")
        if not 0.0 <= float(threshold_tuning_fraction) < 1.0:
            raise ConfigError(
                f"threshold_tuning_fraction={threshold_tuning_fraction} must lie in [0, 1) "
                "(0 = tune the no-answer threshold on the scored questions themselves)"
            )
        self.doc_stride = int(doc_stride)
        self.question_first = bool(question_first)
        self.n_best = int(n_best)
        self.max_answer_length = int(max_answer_length)
        self.null_threshold = float(null_threshold)
        self.verifier = verifier
        self.verifier_loss_weight = float(verifier_loss_weight)
        self.beta1 = float(beta1)
        self.beta2 = float(beta2)
        self.held_out_fraction = float(held_out_fraction)
        self.split_seed = int(split_seed)
        self.threshold_tuning_fraction = float(threshold_tuning_fraction)
        self.threshold_split_seed = int(threshold_split_seed)

    # -- identity ----------------------------------------------------------------------------------------
    def options(self) -> dict[str, Any]:
        return constructor_options(self)

    @property
    def label_names(self) -> list[str]:
        return ["start_positions", "end_positions"]

    def _verifier_options(self) -> dict[str, Any]:
        return {
            "qa_verifier": True,
            "verifier_loss_weight": self.verifier_loss_weight,
            "verifier_beta1": self.beta1,
            "verifier_beta2": self.beta2,
        }

    def model_options(self) -> dict[str, Any]:
        """``joint``: the span model carries the verifier (``qa_verifier`` and its loss weight / betas)."""
        return self._verifier_options() if self.verifier == "joint" else {}

    def auxiliary_models(self) -> dict[str, dict[str, Any]]:
        """``parallel``: a second model trained only for answerability."""
        if self.verifier != "parallel":
            return {}
        return {"verifier": {**self._verifier_options(), "span_loss_weight": 0.0}}

    def training_defaults(self) -> dict[str, Any]:
        """:data:`~syntaxformer.tasks.base.READING_DEFAULTS`."""
        return dict(READING_DEFAULTS)

    # -- data --------------------------------------------------------------------------------------------
    def load_split(self, split: str, data: Mapping[str, Any]) -> TaskData:
        """The questions of ``split``: from ``train_file`` (default ``squad2/dev-v2.0-half.json``) split by
        article into ``train`` and ``dev``, from ``dev_file`` / ``test_file``, or from ``dataset``.
        ``metadata``: ``counts``, the article split, and for ``dev`` / ``test`` the threshold protocol
        (:func:`threshold_split`).

        Raises:
            ConfigError / DataError: an unknown split, a missing file, an empty part, or too few articles to split.
        """
        if split not in self.splits:
            raise ConfigError(f"SQuAD 2.0 has no split {split!r}; expected one of {self.splits}")
        metadata: dict[str, Any] = {}
        examples: Sequence[SquadExample]
        if data.get("dataset"):  # a hub data set or a datasets folder: the examples are a view of its Arrow rows
            table = load_dataset_table(str(data["dataset"]), data.get("dataset_config"), split)
            examples = TableExamples(functools.partial(_row_example, table.rows), range(len(table)))
            source = table.source
        else:
            train_file = Path(
                data.get("train_file") or task_data_dir(data.get("data_dir"), "squad2", "squad2") / self.default_file
            )
            dev_file = Path(data["dev_file"]) if data.get("dev_file") else None
            if split == "test":
                if not data.get("test_file"):
                    raise ConfigError(
                        "SQuAD 2.0 split 'test' needs test_file (a SQuAD json); the held-out "
                        "articles of train_file are the 'dev' split"
                    )
                path = Path(data["test_file"])
            else:
                path = train_file if split == "train" or dev_file is None else dev_file
            for f in (train_file if split != "test" else None, dev_file if split != "test" else None, path):
                if f is not None and not f.is_file():
                    raise DataError(f"SQuAD file {f} not found")
            examples = read_squad(path)
            source = str(path)
            if split != "test" and dev_file is None:  # one file: split by article
                if self.held_out_fraction <= 0:
                    raise ConfigError(
                        "held_out_fraction must be > 0 when no dev_file is given (the held-out "
                        "articles are the evaluation set)"
                    )
                train, held = split_by_article(examples, self.held_out_fraction, seed=self.split_seed)
                examples = train if split == "train" else held
                source = f"{path} (train articles)" if split == "train" else f"{path} (held-out articles)"
                n_titles = len(dict.fromkeys(e.title for e in train + held))
                metadata["split"] = (
                    f"by article: {len({e.title for e in held})} of {n_titles} articles held out "
                    f"(held_out_fraction {self.held_out_fraction}, split_seed {self.split_seed})"
                )
                metadata["held_out_titles"] = sorted({e.title for e in held})
        if not examples:
            raise DataError(f"the SQuAD {split} part is empty ({source})")
        fingerprint = content_fingerprint(
            [e.qid, e.title, e.context, e.question, e.answers, e.is_impossible] for e in examples
        )
        out = TaskData(examples, source, fingerprint, len(examples), None, metadata)
        out = out.subsampled(*sample_limit(data, split, "questions"))
        out.metadata["counts"] = squad_counts(out.examples)
        if split != "train":
            tuning_qids, protocol = threshold_split(
                out.examples, self.threshold_tuning_fraction, self.threshold_split_seed
            )
            out.metadata.update(tuning_qids=tuning_qids, threshold_protocol=protocol)
        return out

    def inference_data(self, inputs: Sequence[Mapping[str, Any]]) -> TaskData:
        """Mappings with ``question``, ``context`` and optionally ``id`` as unlabeled :class:`SquadExample` s."""
        examples = [
            SquadExample(
                qid=str(r.get("id", f"input-{i}")),
                title=f"input-{i}",
                context=str(r["context"]),
                question=str(r["question"]),
            )
            for i, r in enumerate(inputs)
        ]
        return TaskData.of_inputs(examples, ("qid", "context", "question"))

    def raw_records(
        self,
        inputs: Sequence[Mapping[str, Any]],
        data: TaskData,
        features: Any,
        outputs: Mapping[str, Sequence[Any]],
        model_config: Any,
        options: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """This task's decoding (with the call's ``top_k`` / ``max_answer_length``) and the answer at
        ``options["null_threshold"]``."""

        def rows(key: str) -> Any:
            values = outputs.get(key)
            return None if values is None or values[0] is None else np.asarray(values)

        starts, ends = [np.asarray(r) for r in outputs["start_logits"]], [np.asarray(r) for r in outputs["end_logits"]]
        verifier = rows("verifier_logits")
        raw = (starts, ends) if verifier is None else (starts, ends, verifier)
        auxiliary = {}
        for key in outputs:
            if key.startswith("aux:"):
                aux = rows(key)
                auxiliary[key[4:]] = (starts, ends) if aux is None else (starts, ends, aux)
        top_k, longest = options.get("top_k"), options.get("max_answer_length")
        task = self
        if top_k is not None or longest is not None:
            task = copy.copy(self)
            task.n_best = max(self.n_best, int(top_k or 1))
            task.max_answer_length = int(longest or self.max_answer_length)
        predictions = task.postprocess(data, features, raw, auxiliary or None)
        given = options.get("null_threshold")
        threshold = self.null_threshold if given is None else float(given)
        nbest, na_scores = predictions.extra["nbest"], predictions.extra["na_scores"]
        return [
            answer_record(r, nbest.get(qid) or [], float(na_scores[qid]), threshold, top_k)
            for r, qid in zip(inputs, predictions.ids)
        ]

    def featurize(self, data: TaskData, context: TaskContext, split: str) -> FeatureDataset:
        """One row per window of every question (:class:`SpanRows`)."""
        if context.parser_noise:
            raise ConfigError(
                f"parser_noise={context.parser_noise}: parser noise is supported by the "
                "sentence tasks only, not by SQuAD 2.0"
            )
        if self.doc_stride >= context.max_length:
            raise ConfigError(
                f"doc_stride={self.doc_stride} (tokens shared by consecutive windows; default 128) must "
                f"be below max_length={context.max_length}: lower it with --set doc_stride="
                f"{max(1, context.max_length // 4)} (task_options doc_stride) or raise --max-length"
            )
        return build_features(self.name, data, context, split, rows=SpanRows(self.doc_stride, self.question_first))

    # -- predictions -------------------------------------------------------------------------------------
    def postprocess(
        self, data: TaskData, features: Any, raw: Any, auxiliary: Mapping[str, Any] | None = None
    ) -> Predictions:
        """Decode spans (:func:`postprocess_predictions`; ``parallel``: the verifier logits of
        ``auxiliary["verifier"]``): ``values`` the answers at ``null_threshold``, ``scores`` the no-answer scores,
        ``extra`` ``best_texts``, ``na_scores`` and ``nbest``."""
        start, end, verifier = _qa_outputs(raw)
        if self.verifier == "none":
            verifier = None
        elif self.verifier == "parallel":
            if not auxiliary or "verifier" not in auxiliary:
                raise InputError(
                    "verifier='parallel' decodes with the verifier model's outputs: pass "
                    "auxiliary={'verifier': <its raw predictions>}"
                )
            verifier = _qa_outputs(auxiliary["verifier"])[2]
        if self.verifier != "none" and verifier is None:
            raise ConfigError(
                f"verifier={self.verifier!r} but the predictions hold no [N, 2] verifier "
                "logits (was the model built with qa_verifier=True?)"
            )
        windows = stored_windows(features) if isinstance(features, FeatureDataset) else features
        result = postprocess_predictions(
            data.examples,
            windows,
            start,
            end,
            verifier,
            n_best=self.n_best,
            max_answer_length=self.max_answer_length,
            beta1=self.beta1,
            beta2=self.beta2,
            null_threshold=self.null_threshold,
        )
        ids = [e.qid for e in data.examples]
        return Predictions(
            ids,
            [result.predictions[q] for q in ids],
            [result.na_scores[q] for q in ids],
            {"best_texts": result.best_texts, "na_scores": result.na_scores, "nbest": result.nbest},
        )

    def _scores(self, data: TaskData, predictions: Predictions) -> dict[str, Any]:
        return squad_scores(
            data.examples,
            predictions.extra["best_texts"],
            predictions.extra["na_scores"],
            self.null_threshold,
            tuning_qids=data.metadata.get("tuning_qids"),
        )

    def compute_metrics(self, data: TaskData, predictions: Predictions) -> dict[str, Any]:
        """The headline numbers (test part, ``best_f1_threshold``), the sections of
        :func:`~syntaxformer.tasks.squad_metric.squad_scores`, ``threshold_protocol`` and ``threshold_note``."""
        scores = self._scores(data, predictions)
        scores.pop("per_question")
        best = scores["best_f1_threshold"]
        head = {k: best[k] for k in self.metric_names if k in best}
        protocol = data.metadata.get("threshold_protocol")
        if protocol is None:  # a split read without the protocol: tuned on the scored questions
            protocol = threshold_split(data.examples, 0.0)[1]
        return {
            **head,
            **scores,
            "threshold_protocol": protocol,
            "threshold_note": threshold_note(
                self.threshold_tuning_fraction if data.metadata.get("tuning_qids") else 0.0
            ),
        }

    def run_files(self, data: TaskData, predictions: Predictions) -> dict[str, Any]:
        """``predictions.json`` (at ``best_f1_threshold``), ``best_texts.json``, ``na_probs.json`` (for the
        official script's ``--na-prob-file``) and ``per_question.json``."""
        per_q = self._scores(data, predictions)["per_question"]
        return {
            "predictions.json": {q: r["prediction_best"] for q, r in per_q.items()},
            "best_texts.json": dict(predictions.extra["best_texts"]),
            "na_probs.json": json_safe_scores(predictions.extra["na_scores"]),
            "per_question.json": {
                q: {**r, "na_score": r["na_score"] if math.isfinite(r["na_score"]) else 1e30} for q, r in per_q.items()
            },
        }

    def prediction_records(self, data: TaskData, predictions: Predictions) -> list[dict[str, Any]]:
        """Per question, named as ``predict --input`` names them, and ``gold_answers`` when known."""
        best = predictions.extra["best_texts"]
        return [
            {
                "id": e.qid,
                "question": e.question,
                "answer": v,
                "best_answer": best[e.qid],
                "null_score": json_safe_scores({"s": s})["s"],
                **({"gold_answers": e.answer_texts} if e.answers or e.is_impossible else {}),
            }
            for e, v, s in zip(data.examples, predictions.values, predictions.scores or [])
        ]
