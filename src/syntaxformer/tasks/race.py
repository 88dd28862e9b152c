"""RACE multiple-choice reading comprehension: per-option syntax-aligned sequences (SG-Net TPAMI §3.4.1;
docs/reading_comprehension.md), ``[B, C, L]`` batches, accuracy on RACE-M / RACE-H / all. The syntax arrays are
computed on the whole example, so a word whose ancestor was cut off keeps its remaining ancestors.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from syntaxformer.data.align import AlignedExample, SyntaxAligner
from syntaxformer.data.collate import pad_arrays
from syntaxformer.data.examples import TaskData, content_fingerprint, question_words
from syntaxformer.data.readers.race import (
    LEVELS,
    OPTION_LETTERS,
    RaceExample,
    load_race_hub,
    race_counts,
    read_race_dir,
    read_race_tarball,
)
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.defaults import task_data_dir
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.modeling.raw_text import padded
from syntaxformer.tasks.base import READING_DEFAULTS, Predictions, Task, TaskContext, register_task, sample_limit
from syntaxformer.tasks.featurize import FeatureDataset, ParsedRows, build_features

__all__ = [
    "ChoiceRows",
    "RaceFeature",
    "RaceFeaturizer",
    "RaceTask",
    "choice_records",
    "feature_arrays",
    "race_accuracy",
    "race_collate",
    "snippet",
]


# -- Features ------------------------------------------------------------------------------------------------
@dataclass
class RaceFeature:
    """The model inputs of one question: one aligned sequence per option.

    Attributes:
        example_index: index of the question in the list given to :class:`RaceFeaturizer`.
        options: one :class:`AlignedExample` per option.
        label: the right option (``-100`` when unknown).
        n_passage_tokens: passage tokens kept, per option; ``n_passage_total``: passage tokens in all.
    """

    example_index: int
    qid: str
    options: list[AlignedExample]
    label: int = -100
    n_passage_tokens: list[int] = field(default_factory=list)
    n_passage_total: int = 0

    @property
    def truncated(self) -> bool:
        return min(self.n_passage_tokens, default=0) < self.n_passage_total


def _joined(parts: Sequence[Document]) -> Document:
    """One Document over ``parts`` joined by single spaces, every sentence kept as its own tree."""
    texts, sentences, pos = [], [], 0
    for doc in parts:
        base = doc if doc.text is not None else Document.from_sentences(doc.sentences)
        text = base.text or ""
        for s in base.sentences:
            d = s.to_dict()
            d["offsets"] = [[a + pos, b + pos] for a, b in s.offsets]  # type: ignore[union-attr]
            d.pop("text", None)
            sentences.append(Sentence.from_dict(d))
        texts.append(text)
        pos += len(text) + 1
    return Document(sentences, text=" ".join(texts))


def _keep_positions(w: AlignedExample, keep: np.ndarray) -> AlignedExample:
    """The window restricted to the positions where ``keep`` is True (the word forest is unchanged)."""
    return dataclasses.replace(
        w,
        input_ids=w.input_ids[keep],
        word_index=w.word_index[keep],
        piece_index=w.piece_index[keep],
        token_type_ids=None if w.token_type_ids is None else w.token_type_ids[keep],
        offsets=None if w.offsets is None else w.offsets[keep],
        sequence_ids=None if w.sequence_ids is None else w.sequence_ids[keep],
    )


class RaceFeaturizer:
    """Parse RACE questions and build ``[CLS] passage || question [SEP] option [SEP]`` per option.

    Args:
        tokenizer: a Hugging Face fast tokenizer.
        annotator: a parser with ``annotate(texts) -> list[Document]`` (each distinct text parsed once), or
            ``None``: no parsing (a model that reads no syntax).
        max_length: tokens per option sequence including special tokens.
    """

    def __init__(self, tokenizer: Any, annotator: Any, max_length: int = 384):
        if max_length < 8:
            raise ConfigError(f"max_length={max_length} is too small for a RACE input (at least 8)")
        self.tokenizer = tokenizer
        self.annotator = annotator
        self.max_length = int(max_length)
        self.aligner = SyntaxAligner(tokenizer, max_length=None)
        self.aligner.max_length = None  # not the tokenizer's limit either: the passage is cut here

    def parse(self, examples: Sequence[RaceExample]) -> dict[str, Document]:
        """``text -> Document`` for every distinct text of ``examples`` (without an annotator: no words)."""
        texts = list(dict.fromkeys(t for e in examples for t in (e.article, e.question, *e.options)))
        if self.annotator is None:
            return {t: Document([], text=t) for t in texts}
        return dict(zip(texts, self.annotator.annotate(texts)))

    def __call__(
        self, examples: Sequence[RaceExample], parses: Mapping[str, Document] | None = None
    ) -> list[RaceFeature]:
        """One :class:`RaceFeature` per example (pre-computed ``parses`` from :meth:`parse` may be given)."""
        parses = self.parse(examples) if parses is None else parses
        firsts, seconds, n_passage_sents = [], [], []
        for e in examples:
            passage = parses[e.article]
            if self.annotator is not None and not passage.sentences:
                raise DataError(f"RACE question {e.qid}: the passage has no words after parsing")
            first = _joined([passage, parses[e.question]])
            for o in e.options:
                firsts.append(first)
                seconds.append(parses[o])
                # unparsed: the passage is told by its characters, the first len(article) of text A
                n_passage_sents.append(len(passage.sentences) if self.annotator is not None else -len(e.article))
        aligned = self.aligner.align_batch(firsts, seconds)
        cut = iter([self._truncate(windows[0], n) for windows, n in zip(aligned, n_passage_sents)])
        out: list[RaceFeature] = []
        for i, e in enumerate(examples):
            options, kept, totals = zip(*[next(cut) for _ in e.options])
            label = -100 if e.label is None else int(e.label)
            out.append(RaceFeature(i, e.qid, list(options), label, list(kept), totals[-1]))
        return out

    def _truncate(self, w: AlignedExample, n_passage_sents: int) -> tuple[AlignedExample, int, int]:
        """Cut passage tokens from the end (then question / option, longest first) to ``max_length``.
        ``n_passage_sents``: the passage's trees at the start of text A, or ``-n``: its first ``n`` characters."""
        seq = np.asarray(w.sequence_ids)
        if n_passage_sents < 0:
            is_passage = (seq == 0) & (np.asarray(w.offsets)[:, 0] < -n_passage_sents)
        else:
            tree = np.where(w.word_index >= 0, np.asarray(w.forest.tree_id)[np.maximum(w.word_index, 0)], -1)
            is_passage = (seq == 0) & (tree < n_passage_sents) & (tree >= 0)
            is_passage |= (seq == 0) & (w.word_index < 0)  # pieces of text A with no word
        passage_pos = np.flatnonzero(is_passage)
        total = len(passage_pos)
        excess = len(w) - self.max_length
        keep = np.ones(len(w), dtype=bool)
        if excess > 0:
            cut = min(excess, total)
            if cut:
                keep[passage_pos[total - cut :]] = False
            excess -= cut
            if excess > 0:  # question + option alone are too long: cut them longest first, from their ends
                q_pos = list(np.flatnonzero((seq == 0) & ~is_passage))
                o_pos = list(np.flatnonzero(seq == 1))
                while excess > 0 and (q_pos or o_pos):
                    victim = q_pos if len(q_pos) >= len(o_pos) else o_pos
                    keep[victim.pop()] = False
                    excess -= 1
        n_kept = int(keep[passage_pos].sum())
        return (w if keep.all() else _keep_positions(w, keep)), n_kept, total


def feature_arrays(feature: RaceFeature, context: TaskContext) -> dict[str, Any]:
    """Collator input of one question: per option :meth:`TaskContext.window_arrays`, and ``labels``."""
    return {
        "options": [context.window_arrays(w) for w in feature.options],
        "labels": np.asarray(feature.label, dtype=np.int64),
    }


class ChoiceRows(ParsedRows):
    """Multiple-choice questions -> one feature row per question (:class:`RaceFeaturizer`): the arrays of its
    options one after the other (their lengths in the side column ``option_lengths``) and ``labels``; read back as
    :func:`feature_arrays` items. The truncation count is the number of questions whose passage was cut for at
    least one option."""

    side_keys: tuple[str, ...] = ("option_lengths",)
    choices: bool = True

    def record(self, example: Any) -> list[Any]:
        e = example
        return [e.qid, e.level, e.article, e.question, e.options, e.label]

    def encode(
        self, block: Sequence[Any], indices: Sequence[int], context: Any
    ) -> tuple[dict[str, list[Any]], int, int]:
        annotator = self.annotator(context)
        featurizer = RaceFeaturizer(context.tokenizer, annotator, max_length=context.max_length)
        parses = featurizer.parse(block)
        features = featurizer(block, parses)
        columns: dict[str, list[Any]] = {"guid": [f.qid for f in features], "option_lengths": []}
        labels = []
        for f in features:
            item = feature_arrays(f, context)
            columns["option_lengths"].append(np.asarray([len(o["input_ids"]) for o in item["options"]], np.int64))
            for k in item["options"][0]:
                columns.setdefault(k, []).append(np.concatenate([o[k] for o in item["options"]]))
            labels.append(item["labels"])
        columns["labels"] = labels
        return columns, sum(f.truncated for f in features), len(parses) if annotator is not None else 0


def race_collate(items: Sequence[Mapping[str, Any]], pad_token_id: int = 0, labels: bool = True) -> dict[str, Any]:
    """Pad :func:`feature_arrays` items into ``[B, C, L]`` tensors (:func:`syntaxformer.data.collate.pad_arrays`)
    + ``labels [B]``; all questions of a batch must have the same number of options."""
    if not items:
        raise InputError("cannot collate an empty list of questions")
    n_opts = {len(it["options"]) for it in items}
    if len(n_opts) != 1:
        raise InputError(f"questions with different numbers of options in one batch: {sorted(n_opts)}")
    C = n_opts.pop()
    flat = pad_arrays([o for it in items for o in it["options"]], pad_token_id)  # (B*C, L)
    batch: dict[str, Any] = {k: v.view(len(items), C, *v.shape[1:]) for k, v in flat.items()}  # (B, C, L)
    if labels:
        batch["labels"] = torch.as_tensor(np.stack([np.asarray(it["labels"]) for it in items]))
    return batch


# -- Metric --------------------------------------------------------------------------------------------------
def _choice(options: Sequence[str], k: int, scores: Any) -> dict[str, Any]:
    """The prediction fields of a multiple-choice record: option ``k`` of ``options`` and the option scores."""
    return {
        "options": list(options),
        "prediction": OPTION_LETTERS[k] if k < len(OPTION_LETTERS) else str(k),
        "index": k,
        "option": options[k],
        "scores": None if scores is None else list(scores)[: len(options)],
    }


def choice_records(
    examples: Sequence[Any], predictions: Predictions, question: Callable[[Any], str]
) -> list[dict[str, Any]]:
    """:meth:`RaceTask.prediction_records` of multiple-choice examples; ``question`` gives an example's question."""
    scores = predictions.scores or [None] * len(predictions.values)
    records = []
    for e, p, s in zip(examples, predictions.values, scores):
        r = {"id": e.qid, "question": question(e), **_choice(e.options, int(p), s)}
        if e.label is not None:
            r["gold_label"] = OPTION_LETTERS[int(e.label)]
        records.append(r)
    return records


def race_accuracy(examples: Sequence[RaceExample], predictions: Mapping[str, int] | Sequence[int]) -> dict[str, float]:
    """Accuracy (percent) on RACE-M (``middle``), RACE-H (``high``) and all (``all``), plus counts ``n_*``, of
    ``predictions`` (``qid -> option index``, a missing qid is wrong, or one index per example)."""
    if not isinstance(predictions, Mapping):
        if len(predictions) != len(examples):
            raise InputError(f"{len(examples)} examples but {len(predictions)} predictions")
        predictions = {e.qid: int(p) for e, p in zip(examples, predictions)}
    out: dict[str, float] = {}
    for name, part in (
        ("middle", [e for e in examples if e.level == "middle"]),
        ("high", [e for e in examples if e.level == "high"]),
        ("all", list(examples)),
    ):
        correct = sum(int(predictions.get(e.qid, -1) == e.label) for e in part)
        out[name] = 100.0 * correct / len(part) if part else float("nan")
        out[f"n_{name}"] = len(part)
    return out


_WS = re.compile(r"\s+")


def snippet(text: str, limit: int = 300) -> str:
    """The first ``limit`` characters of ``text`` with whitespace collapsed (for printed examples)."""
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- The task ------------------------------------------------------------------------------------------------
def _logits(raw: Any) -> np.ndarray:
    """``[N, C]`` option logits of a model's raw predictions (an array, a tuple, a ``PredictionOutput`` or a
    mapping)."""
    raw = getattr(raw, "predictions", raw)
    if isinstance(raw, Mapping):
        raw = raw["logits"]
    if isinstance(raw, (tuple, list)):
        raw = raw[0]
    if hasattr(raw, "detach"):
        raw = raw.detach().cpu().numpy()
    logits = np.asarray(raw)
    if logits.ndim != 2:
        raise InputError(f"RACE predictions must be [questions, options] logits, got shape {logits.shape}")
    return logits


@register_task
class RaceTask(Task[TaskData]):
    """RACE multiple choice (head ``multiple_choice``): accuracy on RACE-M, RACE-H and all (percent). No options."""

    name = "race"
    title = "RACE"
    head = "multiple_choice"
    metric_names: ClassVar[tuple[str, ...]] = ("accuracy_all", "accuracy_middle", "accuracy_high")
    splits = ("train", "dev", "test")
    #: Default sources under ``<data_dir>/`` (default ``<shared data>/race``).
    default_files: ClassVar[dict[str, str]] = {"train": "RACE_train.tar.gz", "dev": "dev", "test": "test"}

    def training_defaults(self) -> dict[str, Any]:
        """:data:`~syntaxformer.tasks.base.READING_DEFAULTS`, ``group_by_length`` off (no top-level
        ``input_ids``)."""
        return {**READING_DEFAULTS, "group_by_length": False}

    # -- data --------------------------------------------------------------------------------------------
    def load_split(self, split: str, data: Mapping[str, Any]) -> TaskData:
        """The questions of ``split``: ``{split}_file`` (a split folder or a tarball; default ``race/`` under the
        data root), or ``dataset`` (the hub). ``max_*_samples`` from a tarball take whole passages in a seeded
        order.

        Raises:
            ConfigError / DataError: an unknown split or a missing / unreadable source.
        """
        if split not in self.splits:
            raise ConfigError(f"RACE has no split {split!r}; expected one of {self.splits}")
        n, seed = sample_limit(data, split, "questions")
        tarball_note = None
        if data.get("dataset"):
            name, config = str(data["dataset"]), str(data.get("dataset_config") or "all")
            hub_split = {"train": "train", "dev": "validation", "test": "test"}[split]
            examples = load_race_hub(name, config, hub_split)
            source = f"hub:{name}/{config}/{hub_split}"
        else:
            given = data.get(f"{split}_file")
            path = Path(given or task_data_dir(data.get("data_dir"), "race", "race") / self.default_files[split])
            source = str(path)
            if path.is_dir():
                examples = read_race_dir(path)
            elif path.is_file():
                examples = read_race_tarball(path, max_questions=n, seed=seed)
                if n is not None:
                    tarball_note = f"passages of {path.name} in a seeded order (seed {seed}) until {n} questions"
                    n = None  # already taken
            else:
                raise DataError(f"RACE data {path} not found (a split folder with middle/ and high/, or a tarball)")
        fingerprint = content_fingerprint([e.qid, e.level, e.article, e.question, e.options, e.label] for e in examples)
        out = TaskData(examples, source, fingerprint, len(examples), tarball_note, {})
        out = out.subsampled(n, seed)
        out.metadata["counts"] = race_counts(out.examples)
        return out

    def raw_records(
        self,
        inputs: Sequence[Mapping[str, Any]],
        data: TaskData,
        features: Any,
        outputs: Mapping[str, Sequence[Any]],
        model_config: Any,
        options: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """Per question: the chosen option's letter (``prediction``), ``index`` and text, and the option scores."""
        predictions = self.postprocess(data, features, padded(outputs["logits"], -np.inf))
        return [
            {
                **({"id": r["id"]} if "id" in r else {}),
                "question": r["question"],
                **({"context": r["context"]} if r.get("context") else {}),
                **_choice(r["options"], k, s),
            }
            for r, k, s in zip(inputs, predictions.values, predictions.scores or [])
        ]

    def inference_data(self, inputs: Sequence[Mapping[str, Any]]) -> TaskData:
        """Mappings with ``question``, ``options``, ``context`` and optionally ``id`` as unlabeled
        :class:`RaceExample` s (without a context the question is the first text)."""

        def example(i: int, r: Mapping[str, Any]) -> RaceExample:
            context, question = str(r.get("context") or ""), str(r["question"])
            if not context.strip():
                context, question = question, ""
            return RaceExample(
                qid=str(r.get("id", f"input-{i}")),
                passage_id=f"input-{i}",
                level="input",
                article=context,
                question=question,
                options=[str(o) for o in r["options"]],
            )

        return TaskData.of_inputs(
            [example(i, r) for i, r in enumerate(inputs)], ("qid", "article", "question", "options")
        )

    def featurize(self, data: TaskData, context: TaskContext, split: str) -> FeatureDataset:
        """One row per question (:class:`ChoiceRows`, ``context.max_length`` per option sequence)."""
        if context.parser_noise:
            raise ConfigError(
                f"parser_noise={context.parser_noise}: parser noise is supported by the "
                "sentence tasks only, not by RACE"
            )
        return build_features(self.name, data, context, split, rows=ChoiceRows())

    def collator(self, context: TaskContext) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
        """``[B, C, L]`` batches (:func:`race_collate`)."""
        pad = context.pad_token_id
        return lambda items: race_collate(items, pad)

    # -- predictions -------------------------------------------------------------------------------------
    def postprocess(
        self, data: TaskData, features: Any, raw: Any, auxiliary: Mapping[str, Any] | None = None
    ) -> Predictions:
        """``values``: the chosen option index per question; ``scores``: the softmax over the options."""
        logits = _logits(raw)
        if len(logits) != len(data.examples):
            raise InputError(f"{len(data.examples)} questions but {len(logits)} rows of logits")
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        return Predictions(
            [e.qid for e in data.examples],
            [int(p) for p in logits.argmax(-1)],
            [[float(x) for x in pr] for pr in probs],
        )

    def compute_metrics(self, data: TaskData, predictions: Predictions) -> dict[str, Any]:
        """The three accuracies and the ``accuracy`` section (:func:`race_accuracy`)."""
        acc = race_accuracy(data.examples, predictions.values)
        return {**{f"accuracy_{k}": acc[k] for k in ("all", *LEVELS)}, "accuracy": acc}

    def run_files(self, data: TaskData, predictions: Predictions) -> dict[str, Any]:
        """``predictions.json``: ``qid -> {prediction (letter), gold, correct, probs}`` and :meth:`_question_facts`."""
        scores = predictions.scores or [[] for _ in predictions.values]
        return {
            "predictions.json": {
                e.qid: {
                    "prediction": OPTION_LETTERS[int(p)],
                    "gold": e.answer,
                    "correct": None if e.label is None else bool(int(p) == e.label),
                    **self._question_facts(e, int(p)),
                    "probs": [round(float(x), 5) for x in pr],
                }
                for e, p, pr in zip(data.examples, predictions.values, scores)
            }
        }

    def _question_facts(self, e: RaceExample, prediction: int) -> dict[str, Any]:
        return {"level": e.level, "question_words": question_words(e.question)}

    def prediction_records(self, data: TaskData, predictions: Predictions) -> list[dict[str, Any]]:
        """Per question, named as ``predict --input`` names them, and ``gold_label`` when known."""
        return choice_records(data.examples, predictions, lambda e: e.question)
