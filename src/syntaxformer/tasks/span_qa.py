"""Span QA over windows, without the SQuAD data layer: a question and its passage -> model windows
(:class:`SquadFeaturizer`), and the windows' logits -> answers with a no-answer score
(:func:`postprocess_predictions`). Shared by :mod:`syntaxformer.tasks.squad` and exported model folders, so it
imports only numpy and the data layer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from syntaxformer.data.align import AlignedExample, SyntaxAligner
from syntaxformer.data.sentence import Document
from syntaxformer.errors import InputError

__all__ = [
    "SquadFeature",
    "SquadFeaturizer",
    "SquadPredictions",
    "Window",
    "answer_token_span",
    "postprocess_predictions",
]


# -- Features ------------------------------------------------------------------------------------------------
@dataclass
class SquadFeature:
    """One model window of one question.

    Attributes:
        example_index: index of the question in the list given to :class:`SquadFeaturizer`.
        aligned: the window.
        passage_offsets: ``[L, 2]`` character span of each position in the passage; ``-1`` off the passage.
        start_position, end_position: token labels; ``0`` (the [CLS] null answer) when the answer is not
            completely inside this window.
        is_impossible: 1 if the label is the null answer (the verifier's target), else 0.
    """

    example_index: int
    qid: str
    aligned: AlignedExample
    passage_offsets: np.ndarray
    start_position: int = 0
    end_position: int = 0
    is_impossible: int = 1

    @property
    def window(self) -> int:
        return self.aligned.window


def answer_token_span(passage_offsets: np.ndarray, char_start: int, char_end: int) -> tuple[int, int] | None:
    """Token span ``(start, end)`` (inclusive) covering the characters ``[char_start, char_end)`` of the passage,
    or ``None`` if the window does not contain the whole answer."""
    is_passage = passage_offsets[:, 0] >= 0
    idx = np.flatnonzero(is_passage)
    if len(idx) == 0:
        return None
    starts, ends = passage_offsets[idx, 0], passage_offsets[idx, 1]
    if starts[0] > char_start or ends[-1] < char_end:
        return None
    s = np.flatnonzero(starts <= char_start)  # not empty: starts[0] <= char_start
    e = np.flatnonzero(ends >= char_end)  # not empty: ends[-1] >= char_end
    start, end = int(idx[s[-1]]), int(idx[e[0]])
    if end < start:
        return None
    return start, end


class SquadFeaturizer:
    """Parse and align SQuAD examples into windows with start/end labels.

    Args:
        tokenizer: a Hugging Face fast tokenizer.
        annotator: a parser with ``annotate(texts) -> list[Document]`` (each distinct passage parsed once), or
            ``None``: no parsing (a model that reads no syntax).
        max_length: window length including special tokens.
        stride: the **overlap** between consecutive windows of a long passage, as in Hugging Face's ``run_qa``.
        question_first: ``[CLS] question [SEP] passage [SEP]`` instead of SG-Net's passage-first order.
    """

    def __init__(
        self, tokenizer: Any, annotator: Any, max_length: int = 384, stride: int = 128, question_first: bool = False
    ):
        self.tokenizer = tokenizer
        self.annotator = annotator
        self.max_length = max_length
        self.stride = stride
        self.question_first = question_first
        self.passage_segment = 1 if question_first else 0
        self.aligner = SyntaxAligner(
            tokenizer, max_length=max_length, stride=stride, window_segment=self.passage_segment
        )

    def parse(self, examples: Sequence[Any]) -> tuple[list[Document], list[Document]]:
        """Passage and question Documents of the examples (without an annotator: the texts only, no words)."""
        if self.annotator is None:
            return [Document([], text=e.context) for e in examples], [Document([], text=e.question) for e in examples]
        contexts = list(dict.fromkeys(e.context for e in examples))
        docs = dict(zip(contexts, self.annotator.annotate(contexts)))
        questions = self.annotator.annotate([e.question for e in examples])
        return [docs[e.context] for e in examples], questions

    def __call__(
        self,
        examples: Sequence[Any],
        passages: Sequence[Document] | None = None,
        questions: Sequence[Document] | None = None,
    ) -> list[SquadFeature]:
        """Features of all windows of all examples (pre-parsed ``passages`` / ``questions`` may be given)."""
        if passages is None or questions is None:
            passages, questions = self.parse(examples)
        first, second = (questions, passages) if self.question_first else (passages, questions)
        windows = self.aligner.align_batch(list(first), list(second))
        return [self._feature(i, ex, w) for i, (ex, wins) in enumerate(zip(examples, windows)) for w in wins]

    def _feature(self, i: int, ex: Any, w: AlignedExample) -> SquadFeature:
        seq = np.asarray(w.sequence_ids)
        poff = np.where((seq == self.passage_segment)[:, None], np.asarray(w.offsets), -1)
        feat = SquadFeature(example_index=i, qid=ex.qid, aligned=w, passage_offsets=poff)
        if not ex.is_impossible and ex.answers:
            a = ex.answers[0]
            s = int(a["answer_start"])
            span = answer_token_span(poff, s, s + len(a["text"]))
            if span is not None:
                feat.start_position, feat.end_position = span
                feat.is_impossible = 0
        return feat


# -- Postprocessing ------------------------------------------------------------------------------------------
@dataclass
class SquadPredictions:
    """Output of :func:`postprocess_predictions`.

    Attributes:
        best_texts: ``qid -> text`` of the best non-null span (``""`` only if no valid span exists).
        na_scores: ``qid -> no-answer score`` (higher = more likely unanswerable).
        predictions: ``qid -> text`` after the threshold (``""`` where ``na_score > null_threshold``).
        nbest: ``qid -> list of {"text", "score", "start", "end", "window"}`` best first (char offsets).
    """

    best_texts: dict[str, str]
    na_scores: dict[str, float]
    predictions: dict[str, str]
    nbest: dict[str, list[dict[str, Any]]]


class Window(Protocol):
    """What decoding reads of a window (a :class:`SquadFeature`, or a window kept in Arrow)."""

    @property
    def example_index(self) -> int: ...

    @property
    def window(self) -> int: ...

    @property
    def passage_offsets(self) -> np.ndarray: ...


def _max_context_windows(feats: Sequence[tuple[int, Window]]) -> dict[int, int]:
    """``passage char start of a token -> index j of its max-context window`` for ``(j, feature)`` pairs."""
    best: dict[int, tuple[float, int]] = {}
    for j, f in feats:
        starts = f.passage_offsets[f.passage_offsets[:, 0] >= 0, 0]
        n = len(starts)
        for pos, c in enumerate(starts.tolist()):
            score = min(pos, n - 1 - pos) + 0.01 * n
            if c not in best or score > best[c][0]:
                best[c] = (score, j)
    return {c: j for c, (_, j) in best.items()}


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def postprocess_predictions(
    examples: Sequence[Any],
    features: Sequence[Window],
    start_logits: Any,
    end_logits: Any,
    verifier_logits: Any | None = None,
    n_best: int = 20,
    max_answer_length: int = 30,
    beta1: float = 1.0,
    beta2: float = 1.0,
    null_threshold: float = 0.0,
    max_context: bool = True,
) -> SquadPredictions:
    """Decode spans over all windows of each question and score the null answer (Eq. 12-14; the rules, signs and
    BERT's ``max_context`` rule: docs/reading_comprehension.md, "Decoding").

    Args:
        examples: the questions (``feature.example_index`` indexes this list).
        features: the windows (any :class:`Window`); ``start_logits`` / ``end_logits`` follow them,
            ``[N_features, L]`` or a list of 1-d arrays.
        verifier_logits: ``[N_features, 2]``, columns (answerable, unanswerable), or ``None``.
        max_context: a span may only start in the window where its first token has the most context
            (``min(passage tokens left, right) + 0.01 * window passage length``; the first window on ties).
    """
    starts = [_to_numpy(x) for x in start_logits]
    ends = [_to_numpy(x) for x in end_logits]
    ver = None if verifier_logits is None else _to_numpy(verifier_logits)
    if len(starts) != len(features) or len(ends) != len(features):
        raise InputError(
            f"{len(features)} features but {len(starts)} start / {len(ends)} end logit rows; the "
            "logits must follow the features"
        )
    by_example: dict[int, list[int]] = {}
    for j, f in enumerate(features):
        by_example.setdefault(f.example_index, []).append(j)

    best_texts, na_scores, predictions, nbest = {}, {}, {}, {}
    for i, ex in enumerate(examples):
        cands: list[dict[str, Any]] = []
        home = _max_context_windows([(j, features[j]) for j in by_example.get(i, [])]) if max_context else None
        min_null, null_feat = math.inf, None
        for j in by_example.get(i, []):
            f = features[j]
            s, e = starts[j], ends[j]
            poff = f.passage_offsets
            L = min(len(s), len(poff))
            null = float(s[0] + e[0])
            if null < min_null:
                min_null, null_feat = null, j
            valid = poff[:L, 0] >= 0
            start_ok = valid.copy()
            if home is not None:
                start_ok &= np.array([bool(valid[k]) and home.get(int(poff[k, 0])) == j for k in range(L)])
            cand_s, cand_e = np.flatnonzero(start_ok), np.flatnonzero(valid)  # n-best among passage tokens
            top_s = cand_s[np.argsort(-s[cand_s], kind="stable")[:n_best]].tolist()
            top_e = cand_e[np.argsort(-e[cand_e], kind="stable")[:n_best]].tolist()
            for ps in top_s:
                for pe in top_e:
                    if pe < ps or pe - ps + 1 > max_answer_length:
                        continue
                    a, b = int(poff[ps, 0]), int(poff[pe, 1])
                    cands.append(
                        {
                            "text": ex.context[a:b],
                            "score": float(s[ps] + e[pe]),
                            "start": a,
                            "end": b,
                            "window": f.window,
                        }
                    )
        cands.sort(key=lambda c: -c["score"])
        # Same text from overlapping windows: keep its best occurrence.
        seen, kept = set(), []
        for c in cands:
            if (c["start"], c["end"]) not in seen:
                seen.add((c["start"], c["end"]))
                kept.append(c)
            if len(kept) >= n_best:
                break
        nbest[ex.qid] = kept
        best = kept[0] if kept else None
        best_texts[ex.qid] = best["text"] if best else ""
        if null_feat is None or best is None:  # no window, or no valid span at all
            score = math.inf
        else:
            score = beta1 * (min_null - best["score"])
            if ver is not None:
                score += beta2 * float(ver[null_feat, 1] - ver[null_feat, 0])
        na_scores[ex.qid] = float(score)
        predictions[ex.qid] = "" if score > null_threshold or best is None else best["text"]
    return SquadPredictions(best_texts, na_scores, predictions, nbest)
