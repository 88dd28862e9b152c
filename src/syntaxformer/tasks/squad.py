"""SQuAD 2.0 span QA: reader, article-level split, syntax-aligned features with start/end labels, postprocessing.

Pipeline::

    examples = read_squad("dev-v2.0.json")                       # one SquadExample per question
    train, held = split_by_article(examples, held_out_fraction=0.1)
    featurizer = SquadFeaturizer(tokenizer, make_annotator())     # max_length 384, 128-token window overlap
    features = featurizer(examples)                               # one SquadFeature per window
    batch = squad_collate(features)                               # SyntaxCollator batch + start/end positions
    ... model(**batch) -> start_logits, end_logits [, verifier_logits]
    result = postprocess_predictions(examples, features, start_logits, end_logits)
    squad_evaluate(gold_answers(examples), result.best_texts, result.na_scores)   # reachable_best_f1_thresh etc.

Input order is ``[CLS] passage [SEP] question [SEP]`` (SG-Net §3.4.1; ``question_first=True`` gives BERT's
``[CLS] question [SEP] passage [SEP]``). Long passages are cut into windows (the question is complete in every
window); each passage sentence is its own dependency tree and the question is parsed on its own, so no syntax
link crosses sentences or passage/question.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from syntaxformer.data.align import AlignedExample, SyntaxAligner
from syntaxformer.data.sentence import Document


# ----------------------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------------------
@dataclass
class SquadExample:
    """One question over one passage.

    Attributes:
        qid: the question id.
        title: the article title (the unit of :func:`split_by_article`).
        context: the passage text, exactly as in the json (answers index into it).
        question: the question text.
        answers: gold answers ``{"text", "answer_start"}`` (empty for an unanswerable question).
        is_impossible: the question has no answer in the passage.
        plausible_answers: SQuAD 2.0's ``plausible_answers`` of unanswerable questions (not used for labels).
    """

    qid: str
    title: str
    context: str
    question: str
    answers: list[dict[str, Any]] = field(default_factory=list)
    is_impossible: bool = False
    plausible_answers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def answer_texts(self) -> list[str]:
        """Gold texts for the metric (``[""]`` when unanswerable)."""
        return [a["text"] for a in self.answers] if self.answers and not self.is_impossible else [""]


def read_squad(source: str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[SquadExample]:
    """Read SQuAD (1.1 or 2.0) json: articles -> paragraphs -> qas.

    Args:
        source: a path to the json, the parsed json (dict with ``data``) or its ``data`` list.

    Returns:
        one :class:`SquadExample` per question, in file order. A question without ``is_impossible`` (SQuAD 1.1)
        is unanswerable iff it has no answers.
    """
    if isinstance(source, (str, Path)):
        with open(source, encoding="utf-8") as f:
            source = json.load(f)
    articles = source["data"] if isinstance(source, Mapping) else source
    out: list[SquadExample] = []
    for a_idx, article in enumerate(articles):
        title = article.get("title", f"article-{a_idx}")
        for para in article["paragraphs"]:
            context = para["context"]
            for qa in para["qas"]:
                answers = [{"text": a["text"], "answer_start": int(a["answer_start"])} for a in qa.get("answers", [])]
                impossible = bool(qa.get("is_impossible", not answers))
                out.append(SquadExample(
                    qid=qa["id"], title=title, context=context, question=qa["question"],
                    answers=[] if impossible else answers, is_impossible=impossible,
                    plausible_answers=list(qa.get("plausible_answers", []))))
    return out


def examples_from_rows(rows: Any) -> list[SquadExample]:
    """Examples from Hugging Face ``datasets`` rows of SQuAD (``id``, ``title``, ``context``, ``question``,
    ``answers = {"text": [...], "answer_start": [...]}``); no answer = unanswerable."""
    out = []
    for r in rows:
        ans = r.get("answers") or {"text": [], "answer_start": []}
        answers = [{"text": t, "answer_start": int(s)} for t, s in zip(ans["text"], ans["answer_start"])]
        out.append(SquadExample(qid=r["id"], title=r.get("title", ""), context=r["context"], question=r["question"],
                                answers=answers, is_impossible=not answers))
    return out


def load_squad_hub(name: str = "rajpurkar/squad_v2", split: str = "train", **kwargs: Any) -> list[SquadExample]:
    """Load SQuAD by name through the ``datasets`` hub (needs ``datasets`` and a network or its cache)."""
    from datasets import load_dataset

    return examples_from_rows(load_dataset(name, split=split, **kwargs))


def squad_counts(examples: Sequence[SquadExample]) -> dict[str, int]:
    """``articles``, ``paragraphs``, ``questions``, ``answerable``, ``unanswerable``."""
    return {
        "articles": len({e.title for e in examples}),
        "paragraphs": len({(e.title, e.context) for e in examples}),
        "questions": len(examples),
        "answerable": sum(not e.is_impossible for e in examples),
        "unanswerable": sum(e.is_impossible for e in examples),
    }


def gold_answers(examples: Sequence[SquadExample]) -> dict[str, list[str]]:
    """``qid -> gold texts`` for :func:`syntaxformer.tasks.squad_metric.squad_evaluate`."""
    return {e.qid: e.answer_texts for e in examples}


def split_by_article(examples: Sequence[SquadExample], held_out_fraction: float = 0.1,
                     seed: int = 0) -> tuple[list[SquadExample], list[SquadExample]]:
    """Deterministic train / held-out split by article, so no passage is in both parts.

    Articles are ordered by ``sha1(f"{seed}:{title}")`` (independent of file order and of Python's hash seed); the
    first ``ceil(held_out_fraction * n_articles)`` articles (at least 1 and at most n-1 when there are ≥ 2
    articles and the fraction is > 0) are held out. Question order within each part is the input order.
    """
    if not 0.0 <= held_out_fraction < 1.0:
        raise ValueError(f"held_out_fraction must lie in [0, 1), got {held_out_fraction}")
    titles = list(dict.fromkeys(e.title for e in examples))
    ranked = sorted(titles, key=lambda t: hashlib.sha1(f"{seed}:{t}".encode("utf-8")).hexdigest())
    n_held = math.ceil(held_out_fraction * len(titles)) if held_out_fraction > 0 else 0
    if held_out_fraction > 0 and len(titles) >= 2:
        n_held = min(max(n_held, 1), len(titles) - 1)
    held = set(ranked[:n_held])
    return [e for e in examples if e.title not in held], [e for e in examples if e.title in held]


# ----------------------------------------------------------------------------------------------------------
# Features
# ----------------------------------------------------------------------------------------------------------
@dataclass
class SquadFeature:
    """One model window of one question.

    Attributes:
        example_index: index of the question in the list given to :class:`SquadFeaturizer`.
        qid: the question id.
        aligned: the window (tokens, syntax alignment, ``offsets``, ``sequence_ids``).
        passage_offsets: ``[L, 2]`` character span of each position in the passage; ``-1`` for positions that are
            not passage tokens (specials, question, padding).
        start_position, end_position: token labels; ``0`` (the [CLS] null answer) when the question is
            unanswerable or its answer is not completely inside this window.
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
    """Token span ``(start, end)`` (inclusive) covering the characters ``[char_start, char_end)`` of the passage.

    ``start`` is the last passage token starting at or before ``char_start``, ``end`` the first passage token
    ending at or after ``char_end``. ``None`` if the window does not contain the whole answer.
    """
    is_passage = passage_offsets[:, 0] >= 0
    idx = np.flatnonzero(is_passage)
    if len(idx) == 0:
        return None
    starts, ends = passage_offsets[idx, 0], passage_offsets[idx, 1]
    if starts[0] > char_start or ends[-1] < char_end:
        return None
    s = np.flatnonzero(starts <= char_start)
    e = np.flatnonzero(ends >= char_end)
    if len(s) == 0 or len(e) == 0:
        return None
    start, end = int(idx[s[-1]]), int(idx[e[0]])
    if end < start:
        return None
    return start, end


class SquadFeaturizer:
    """Parse and align SQuAD examples into windows with start/end labels.

    Args:
        tokenizer: a Hugging Face fast tokenizer.
        annotator: a parser with ``annotate(texts) -> list[Document]`` (e.g.
            :class:`~syntaxformer.data.annotators.SpacyAnnotator`); passages are parsed once per distinct text,
            sentence by sentence, questions on their own.
        max_length: window length including special tokens (384, as in SG-Net / BERT).
        stride: tokens shared by consecutive windows of a long passage (default 128): the **overlap** between
            windows, as ``doc_stride`` / ``stride`` in Hugging Face's ``run_qa``. (BERT's original ``doc_stride``
            of 128 is the step between window starts instead, so the same number means a different overlap.)
        question_first: ``[CLS] question [SEP] passage [SEP]`` instead of SG-Net's ``[CLS] passage [SEP] question
            [SEP]``.
    """

    def __init__(self, tokenizer: Any, annotator: Any, max_length: int = 384, stride: int = 128,
                 question_first: bool = False):
        self.tokenizer = tokenizer
        self.annotator = annotator
        self.max_length = max_length
        self.stride = stride
        self.question_first = question_first
        self.passage_segment = 1 if question_first else 0
        self.aligner = SyntaxAligner(tokenizer, max_length=max_length, stride=stride,
                                     window_segment=self.passage_segment)

    def parse(self, examples: Sequence[SquadExample]) -> tuple[list[Document], list[Document]]:
        """Passage and question Documents of the examples (each distinct passage parsed once)."""
        contexts = list(dict.fromkeys(e.context for e in examples))
        docs = dict(zip(contexts, self.annotator.annotate(contexts)))
        questions = self.annotator.annotate([e.question for e in examples])
        return [docs[e.context] for e in examples], questions

    def __call__(self, examples: Sequence[SquadExample], passages: Sequence[Document] | None = None,
                 questions: Sequence[Document] | None = None) -> list[SquadFeature]:
        """Features of all windows of all examples (pre-parsed ``passages`` / ``questions`` may be given)."""
        if passages is None or questions is None:
            passages, questions = self.parse(examples)
        if self.question_first:
            windows = self.aligner.align_batch(list(questions), list(passages))
        else:
            windows = self.aligner.align_batch(list(passages), list(questions))
        out: list[SquadFeature] = []
        for i, (ex, wins) in enumerate(zip(examples, windows)):
            for w in wins:
                out.append(self._feature(i, ex, w))
        return out

    def _feature(self, i: int, ex: SquadExample, w: AlignedExample) -> SquadFeature:
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


def feature_arrays(feature: SquadFeature, criterion: str = "share", max_distance: int = 15,
                   constituency: bool = False) -> dict[str, np.ndarray]:
    """Collator input of one feature: token + syntax arrays and the scalar labels
    ``start_positions``, ``end_positions``, ``is_impossible``."""
    from syntaxformer.data.collate import example_arrays

    out = example_arrays(feature.aligned, criterion, max_distance, constituency)
    out["start_positions"] = np.asarray(feature.start_position, dtype=np.int64)
    out["end_positions"] = np.asarray(feature.end_position, dtype=np.int64)
    out["is_impossible"] = np.asarray(feature.is_impossible, dtype=np.int64)
    return out


def squad_collate(features: Sequence[SquadFeature], pad_token_id: int = 0, criterion: str = "share",
                  labels: bool = True) -> dict[str, Any]:
    """Pad features into a batch (``SyntaxCollator`` conventions); ``labels=False`` drops the label keys."""
    from syntaxformer.data.collate import pad_arrays

    arrays = [feature_arrays(f, criterion) for f in features]
    if not labels:
        for a in arrays:
            for k in ("start_positions", "end_positions", "is_impossible"):
                a.pop(k)
    return pad_arrays(arrays, pad_token_id)


# ----------------------------------------------------------------------------------------------------------
# Postprocessing
# ----------------------------------------------------------------------------------------------------------
@dataclass
class SquadPredictions:
    """Output of :func:`postprocess_predictions`.

    Attributes:
        best_texts: ``qid -> text`` of the best non-null span (``""`` only if no valid span exists). Give these
            with ``na_scores`` to :func:`~syntaxformer.tasks.squad_metric.squad_evaluate` (thresholds are searched
            from them).
        na_scores: ``qid -> no-answer score`` (higher = more likely unanswerable; see
            :func:`postprocess_predictions`).
        predictions: ``qid -> text`` after the threshold (``""`` where ``na_score > null_threshold``).
        nbest: ``qid -> list of {"text", "score", "start", "end", "window"}`` best first (char offsets).
    """

    best_texts: dict[str, str]
    na_scores: dict[str, float]
    predictions: dict[str, str]
    nbest: dict[str, list[dict[str, Any]]]


def _max_context_windows(feats: Sequence[tuple[int, SquadFeature]]) -> dict[int, int]:
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


def postprocess_predictions(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                            start_logits: Any, end_logits: Any, verifier_logits: Any | None = None,
                            n_best: int = 20, max_answer_length: int = 30, beta1: float = 1.0,
                            beta2: float = 1.0, null_threshold: float = 0.0,
                            max_context: bool = True) -> SquadPredictions:
    """Decode spans over all windows of each question and score the null answer.

    Per window, ``score(k, l) = start[k] + end[l]`` over the ``n_best`` highest start and end logits among the
    passage tokens, ``k ≤ l`` and ``l - k + 1 ≤ max_answer_length`` (Eq. 12's ``score_has``), and
    ``score_null = start[0] + end[0]`` ([CLS]). As in BERT's SQuAD 2.0 code, a question's null score is the
    **minimum** over its windows (the window most confident that an answer exists) and its span score the
    maximum over all windows; ``score_diff = score_null - score_has``. The answer text is cut from the original
    passage with the tokens' character offsets (``context[off[k][0]:off[l][1]]``). With ``max_context`` (BERT's
    rule, default) a span may only start at a token in the window where that token has the most context
    (largest ``min(passage tokens left, passage tokens right) + 0.01 * window passage length``; the first such
    window on ties), so a token is not scored at the edge of one window when another window centres it.

    With an answer verifier (``verifier_logits`` ``[N_features, 2]``, columns (answerable, unanswerable)):
    ``score_ext = logit_na - logit_ans`` (Eq. 14), taken from the window with the minimum null score, and the
    no-answer score is ``beta1 * score_diff + beta2 * score_ext``; without it, ``beta1 * score_diff``.
    A question is predicted unanswerable when its no-answer score exceeds ``null_threshold`` (δ; the best δ on
    a development set is ``reachable_best_f1_thresh`` of :func:`squad_evaluate`). Windows are processed
    independently, so the logits may come from any batching order as long as they follow ``features``.

    Args:
        examples: the questions, as given to the featurizer (``feature.example_index`` indexes this list).
        features: the windows; ``start_logits`` / ``end_logits`` are ``[N_features, L]`` (padded positions are
            never chosen: they are not passage tokens) or a list of 1-d arrays.
    """
    starts = [_to_numpy(x) for x in start_logits]
    ends = [_to_numpy(x) for x in end_logits]
    ver = None if verifier_logits is None else _to_numpy(verifier_logits)
    if len(starts) != len(features) or len(ends) != len(features):
        raise ValueError(f"{len(features)} features but {len(starts)} start / {len(ends)} end logit rows")
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
            for k in top_s:
                for l in top_e:
                    if l < k or l - k + 1 > max_answer_length:
                        continue
                    a, b = int(poff[k, 0]), int(poff[l, 1])
                    cands.append({"text": ex.context[a:b], "score": float(s[k] + e[l]), "start": a, "end": b,
                                  "window": f.window})
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
