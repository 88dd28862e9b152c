"""SQuAD 2.0 evaluation (EM / F1, HasAns / NoAns, best no-answer thresholds) re-implemented from the official
script, and the run protocol on top of it (:func:`squad_scores`: thresholds tuned on other articles). Why
:func:`find_reachable_best_threshold` exists beside the official sweep: docs/reading_comprehension.md, "Metric".
"""

from __future__ import annotations

import collections
import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from syntaxformer.data.examples import question_words
from syntaxformer.data.readers.squad import gold_answers
from syntaxformer.errors import DataError
from syntaxformer.utils import open_text

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lower-case, remove punctuation, the articles a/an/the, and extra whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_score(gold: str, pred: str) -> int:
    """1 if the normalised strings are equal, else 0."""
    return int(normalize_answer(gold) == normalize_answer(pred))


def f1_score(gold: str, pred: str) -> float:
    """Token-overlap F1 of the normalised strings (two empty strings: 1; empty vs non-empty: 0)."""
    g, p = normalize_answer(gold).split(), normalize_answer(pred).split()
    if not g or not p:
        return float(g == p)
    common = collections.Counter(g) & collections.Counter(p)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def gold_answers_from_dataset(dataset: Any) -> dict[str, list[str]]:
    """``qid -> gold answer texts`` (``[]`` for unanswerable) from SQuAD json (the dict or its ``data`` list)."""
    articles = dataset["data"] if isinstance(dataset, Mapping) else dataset
    gold: dict[str, list[str]] = {}
    for article in articles:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                gold[qa["id"]] = [a["text"] for a in qa.get("answers", [])]
    return gold


def raw_scores(gold: Mapping[str, list[str]], preds: Mapping[str, str]) -> tuple[dict[str, int], dict[str, float]]:
    """Per-question EM and F1 (max over gold answers). A question missing from ``preds`` counts as predicted ``""``."""
    em: dict[str, int] = {}
    f1: dict[str, float] = {}
    for qid, answers in gold.items():
        answers = list(answers) or [""]
        pred = preds.get(qid, "")
        em[qid] = max(exact_score(a, pred) for a in answers)
        f1[qid] = max(f1_score(a, pred) for a in answers)
    return em, f1


def apply_no_answer_threshold(
    scores: Mapping[str, float], na_probs: Mapping[str, float], has_answer: Mapping[str, bool], threshold: float
) -> dict[str, float]:
    """Questions with ``na_prob > threshold`` are predicted unanswerable: score 1 if they are, else 0."""
    return {q: float(not has_answer[q]) if na_probs.get(q, 0.0) > threshold else s for q, s in scores.items()}


def _totals(em: Mapping[str, float], f1: Mapping[str, float], qids: list[str]) -> dict[str, float]:
    n = len(qids)
    if n == 0:
        return {"exact": 0.0, "f1": 0.0, "total": 0}
    return {"exact": 100.0 * sum(em[q] for q in qids) / n, "f1": 100.0 * sum(f1[q] for q in qids) / n, "total": n}


def find_best_threshold(
    preds: Mapping[str, str], scores: Mapping[str, float], na_probs: Mapping[str, float], has_answer: Mapping[str, bool]
) -> tuple[float, float]:
    """The official script's sweep: best total score (percent) and its threshold (possibly unreachable; "answer
    nobody" is threshold 0.0)."""
    n_noans = sum(1 for v in has_answer.values() if not v)
    current = best = float(n_noans)
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda q: na_probs[q]):
        if qid not in scores:
            continue
        current += scores[qid] if has_answer[qid] else (-1.0 if preds.get(qid, "") else 0.0)
        if current > best:
            best = current
            best_thresh = na_probs[qid]
    return 100.0 * best / max(len(scores), 1), best_thresh


def answer_nobody_threshold(na_probs: Any) -> float:
    """A threshold below every finite no-answer score (smallest - 1; 0.0 when there is none): no question answered."""
    finite = [float(v) for v in na_probs if math.isfinite(float(v))]
    return (min(finite) - 1.0) if finite else 0.0


def find_reachable_best_threshold(
    scores: Mapping[str, float], na_probs: Mapping[str, float], has_answer: Mapping[str, bool]
) -> tuple[float, float]:
    """Best total score (percent) that a real threshold reaches, and that threshold: from "answer nobody", groups
    of equal no-answer score are answered in increasing order (the smallest best threshold wins);
    ``apply_no_answer_threshold(..., t)`` totals exactly the returned score.
    """
    qids = list(scores)
    if not qids:
        return 0.0, 0.0
    na = {q: float(na_probs.get(q, 0.0)) for q in qids}
    current = best = float(sum(1 for q in qids if not has_answer[q]))
    best_thresh = answer_nobody_threshold(na.values())
    order = sorted(qids, key=lambda q: na[q])
    i = 0
    while i < len(order):
        value = na[order[i]]
        while i < len(order) and na[order[i]] == value:
            q = order[i]
            current += float(scores[q]) - float(not has_answer[q])  # answered now instead of "no answer"
            i += 1
        if current > best + 1e-12:
            best, best_thresh = current, value
    return 100.0 * best / len(qids), best_thresh


def _is_dataset(obj: Any) -> bool:
    """SQuAD json (``{"data": [article, ...]}`` or the article list) rather than ``qid -> [texts]``."""
    if isinstance(obj, Mapping):
        data = obj.get("data")
        return isinstance(data, list) and all(isinstance(a, Mapping) and "paragraphs" in a for a in data)
    return isinstance(obj, (list, tuple))


def squad_evaluate(
    gold: Mapping[str, list[str]] | Any,
    preds: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    na_prob_thresh: float = 1.0,
) -> dict[str, float]:
    """The SQuAD 2.0 metrics.

    Args:
        gold: ``qid -> gold answer texts`` (``[]`` or ``[""]`` = unanswerable), or the SQuAD json itself.
        preds: ``qid -> predicted text`` (``""`` = no answer). Missing questions count as ``""``.
        na_probs: optional ``qid -> no-answer score`` (missing = 0.0); enables the ``best_*`` keys.
        na_prob_thresh: questions with a no-answer score above it are predicted unanswerable.

    Returns:
        ``exact``, ``f1``, ``total``, ``HasAns_*``, ``NoAns_*`` (when present) and, with ``na_probs``,
        ``best_{exact,f1}[_thresh]`` (the official sweep) and ``reachable_best_{exact,f1}[_thresh]``. Percent.
    """
    if _is_dataset(gold):
        gold = gold_answers_from_dataset(gold)
    has_answer = {q: any(a for a in answers) for q, answers in gold.items()}
    scored = {q: [a for a in answers if normalize_answer(a)] or [""] for q, answers in gold.items()}
    em, f1 = raw_scores(scored, preds)
    probs = {q: float(na_probs.get(q, 0.0)) for q in gold} if na_probs is not None else dict.fromkeys(gold, 0.0)
    em_t = apply_no_answer_threshold(em, probs, has_answer, na_prob_thresh)
    f1_t = apply_no_answer_threshold(f1, probs, has_answer, na_prob_thresh)
    qids = list(gold)
    out: dict[str, float] = dict(_totals(em_t, f1_t, qids))
    for name, want in (("HasAns", True), ("NoAns", False)):
        part = [q for q in qids if has_answer[q] == want]
        if part:
            out.update({f"{name}_{k}": v for k, v in _totals(em_t, f1_t, part).items()})
    if na_probs is not None:
        out["best_exact"], out["best_exact_thresh"] = find_best_threshold(preds, em, probs, has_answer)
        out["best_f1"], out["best_f1_thresh"] = find_best_threshold(preds, f1, probs, has_answer)
        out["reachable_best_exact"], out["reachable_best_exact_thresh"] = find_reachable_best_threshold(
            em, probs, has_answer
        )
        out["reachable_best_f1"], out["reachable_best_f1_thresh"] = find_reachable_best_threshold(f1, probs, has_answer)
    return out


def evaluate_files(
    data_file: str | Path, pred_file: str | Path, na_prob_file: str | Path | None = None, na_prob_thresh: float = 1.0
) -> dict[str, float]:
    """:func:`squad_evaluate` on a SQuAD json, a ``{qid: text}`` prediction json and an optional no-answer json."""
    with open_text(data_file) as f:
        dataset = json.load(f)
    with open_text(pred_file) as f:
        preds = json.load(f)
    na_probs = None
    if na_prob_file is not None:
        with open_text(na_prob_file) as f:
            na_probs = json.load(f)
    return squad_evaluate(dataset, preds, na_probs, na_prob_thresh)


def squad_scores(
    examples: Sequence[Any],
    best_texts: Mapping[str, str],
    na_scores: Mapping[str, float],
    null_threshold: float = 0.0,
    tuning_qids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """SQuAD 2.0 metrics at the fixed threshold and at no-answer thresholds tuned on the tuning questions.

    The questions in ``tuning_qids`` only choose thresholds (reachable ones); the others (the *test* part) are
    scored. Without ``tuning_qids`` the thresholds are tuned on the scored questions (optimistic).

    Returns:
        ``{"fixed_threshold", "best_f1_threshold", "best_exact_threshold", "same_set_best_f1_threshold",
        "per_question"}``; each metric dict holds EM / F1 overall, HasAns, NoAns of the test part at its
        ``threshold``: ``fixed_threshold`` at ``null_threshold`` (with the sweeps on the test part itself and the
        official script's ``official_best_*``); ``best_f1_threshold`` (headline) / ``best_exact_threshold`` at the
        best threshold of the tuning part; ``same_set_best_f1_threshold`` at the best one of the test part.
        ``per_question``: ``qid -> {part, question_words, has_answer, best_text, na_score, prediction_/em_/f1_fixed,
        prediction_/em_/f1_best}``.
    """
    gold = gold_answers(examples)
    probs = {q: float(na_scores.get(q, 0.0)) for q in gold}
    tune_set = set(tuning_qids or ()) & set(gold)
    same_set = not tune_set
    test_q = list(gold) if same_set else [q for q in gold if q not in tune_set]
    tune_q = test_q if same_set else [q for q in gold if q in tune_set]
    if not test_q:
        raise DataError("every evaluation question is a threshold-tuning question: no test part is left")
    has = {q: any(a for a in answers) for q, answers in gold.items()}
    scored = {q: [a for a in answers if normalize_answer(a)] or [""] for q, answers in gold.items()}
    em, f1 = raw_scores(scored, best_texts)
    nobody = answer_nobody_threshold(probs.values())  # below every evaluation question: nobody answered anywhere

    def tuned(per_q: Mapping[str, float], qids: list[str]) -> tuple[float, float]:
        best, t = find_reachable_best_threshold({q: per_q[q] for q in qids}, probs, has)
        if not any(probs[q] <= t for q in qids):
            t = nobody
        return best, t

    def at(qids: list[str], t: float) -> tuple[dict[str, Any], dict[str, Any]]:
        r = squad_evaluate({q: gold[q] for q in qids}, best_texts, {q: probs[q] for q in qids}, na_prob_thresh=t)
        out = {k: v for k, v in r.items() if not k.startswith(("best_", "reachable_"))}  # not the sweeps
        out["threshold"] = t
        return out, r

    fixed, sweeps = at(test_q, null_threshold)
    same_f1, same_t = tuned(f1, test_q)
    same_em, same_em_t = tuned(em, test_q)
    official = {f"official_{k}": sweeps[k] for k in ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh")}
    fixed.update(
        {
            "best_exact": same_em,
            "best_exact_thresh": same_em_t,
            "best_f1": same_f1,
            "best_f1_thresh": same_t,
            **official,
        }
    )
    tuned_on = ("the same (test) questions" if same_set else "the tuning part") + f" ({len(tune_q)} questions)"
    tune_f1, t_f1 = tuned(f1, tune_q)
    tune_em, t_em = tuned(em, tune_q)
    best_f1, _ = at(test_q, t_f1)
    best_f1.update(
        {
            "tuned_on": tuned_on,
            "tuning_questions": len(tune_q),
            "tuning_f1": tune_f1,
            "tuning_exact": 100.0
            * sum(apply_no_answer_threshold({q: em[q] for q in tune_q}, probs, has, t_f1).values())
            / len(tune_q),
        }
    )
    best_em, _ = at(test_q, t_em)
    best_em.update({"tuned_on": tuned_on, "tuning_questions": len(tune_q), "tuning_exact": tune_em})
    same, _ = at(test_q, same_t)
    same.update(
        {"tuned_on": f"the scored (test) questions themselves ({len(test_q)} questions; optimistic)", **official}
    )

    per_q: dict[str, dict[str, Any]] = {}
    at_t = {
        name: (apply_no_answer_threshold(em, probs, has, t), apply_no_answer_threshold(f1, probs, has, t))
        for name, t in (("fixed", null_threshold), ("best", t_f1))
    }
    test_set = set(test_q)
    for e in examples:
        q = e.qid
        text = best_texts.get(q, "")
        per_q[q] = {
            "part": "test" if q in test_set else "tuning",
            "question_words": question_words(e.question),
            "has_answer": has[q],
            "best_text": text,
            "na_score": probs[q],
            "prediction_fixed": "" if probs[q] > null_threshold else text,
            "prediction_best": "" if probs[q] > t_f1 else text,
            "em_fixed": int(at_t["fixed"][0][q]),
            "f1_fixed": float(at_t["fixed"][1][q]),
            "em_best": int(at_t["best"][0][q]),
            "f1_best": float(at_t["best"][1][q]),
        }
    return {
        "fixed_threshold": fixed,
        "best_f1_threshold": best_f1,
        "best_exact_threshold": best_em,
        "same_set_best_f1_threshold": same,
        "per_question": per_q,
    }
