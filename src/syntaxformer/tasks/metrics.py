"""Evaluation metrics of the GLUE tasks and SNLI, written out with numpy (no scikit-learn).

As GLUE defines them (Wang et al., 2019, Table 1): accuracy for SST-2, QNLI, RTE, WNLI (and SNLI); F1 of the
positive class and accuracy for MRPC; Matthews correlation for CoLA; Pearson and Spearman correlation for STS-B.
Every function takes predictions and gold labels as array-likes of the same length and returns a Python float.

Degenerate inputs follow scikit-learn / scipy conventions where a value is undefined: F1 with no true or predicted
positive is 0.0, Matthews correlation with a constant prediction or gold column is 0.0, and a correlation with a
constant input is ``nan`` (a warning-free ``nan``: the score really is undefined).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from syntaxformer.errors import ConfigError, InputError, MissingDependencyError

__all__ = [
    "METRICS",
    "accuracy",
    "bleu_metric",
    "compute_metrics",
    "corpus_bleu",
    "f1_binary",
    "matthews_corrcoef",
    "pearson",
    "rankdata",
    "spearman",
]


def _pair(predictions: ArrayLike, labels: ArrayLike, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(predictions, dtype=dtype).reshape(-1)
    y = np.asarray(labels, dtype=dtype).reshape(-1)
    if p.shape != y.shape:
        raise InputError(f"{len(p)} predictions but {len(y)} labels; they must have the same length")
    if len(p) == 0:
        raise InputError("cannot compute a metric on zero examples")
    return p, y


def accuracy(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Fraction of predictions equal to the label."""
    p, y = _pair(predictions, labels)
    return float(np.mean(p == y))


def f1_binary(predictions: ArrayLike, labels: ArrayLike, positive: int = 1) -> float:
    """F1 of the positive class: ``2 TP / (2 TP + FP + FN)`` (0.0 if there is no true or predicted positive)."""
    p, y = _pair(predictions, labels)
    tp = np.sum((p == positive) & (y == positive))
    fp = np.sum((p == positive) & (y != positive))
    fn = np.sum((p != positive) & (y == positive))
    denom = 2 * tp + fp + fn
    return float(2 * tp / denom) if denom else 0.0


def matthews_corrcoef(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Matthews correlation coefficient (multi-class form of Gorodkin, 2004; the binary MCC for two classes).

    ``(c s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2) (s^2 - sum_k t_k^2))`` with ``c`` the number of correct
    predictions, ``s`` the number of examples, ``p_k`` / ``t_k`` how often class ``k`` is predicted / true.
    0.0 when the denominator is 0 (a constant prediction or a constant gold column).
    """
    p, y = _pair(predictions, labels)
    classes = np.unique(np.concatenate([p, y]))
    pi = np.searchsorted(classes, p)
    yi = np.searchsorted(classes, y)
    k = len(classes)
    t_k = np.bincount(yi, minlength=k).astype(np.float64)
    p_k = np.bincount(pi, minlength=k).astype(np.float64)
    c = float(np.sum(pi == yi))
    s = float(len(p))
    cov_yp = c * s - float(t_k @ p_k)
    cov_pp = s * s - float(p_k @ p_k)
    cov_yy = s * s - float(t_k @ t_k)
    denom = np.sqrt(cov_pp * cov_yy)
    return float(cov_yp / denom) if denom > 0 else 0.0


def pearson(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Pearson correlation coefficient (``nan`` if either input is constant)."""
    p, y = _pair(predictions, labels, np.float64)
    dp, dy = p - p.mean(), y - y.mean()
    denom = np.sqrt(np.sum(dp * dp) * np.sum(dy * dy))
    if denom == 0:
        return float("nan")
    return float(np.clip(np.sum(dp * dy) / denom, -1.0, 1.0))


def rankdata(values: ArrayLike) -> np.ndarray:
    """Ranks 1..n, ties given the mean of the ranks they span (scipy's ``rankdata(method="average")``)."""
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    order = np.argsort(a, kind="mergesort")
    sorted_a = a[order]
    # Start index of each run of equal values in sorted order.
    new_run = np.concatenate([[True], sorted_a[1:] != sorted_a[:-1]])
    run_id = np.cumsum(new_run) - 1
    starts = np.flatnonzero(new_run)
    ends = np.concatenate([starts[1:], [len(a)]])  # exclusive
    mean_rank = (starts + ends - 1) / 2.0 + 1.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(a), dtype=np.float64)
    ranks[order] = mean_rank[run_id]
    return ranks


def spearman(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Spearman rank correlation: Pearson correlation of the (tie-averaged) ranks."""
    p, y = _pair(predictions, labels, np.float64)
    return pearson(rankdata(p), rankdata(y))


#: Metric name -> function(predictions, labels).
METRICS: dict[str, Callable[[ArrayLike, ArrayLike], float]] = {
    "accuracy": accuracy,
    "f1": f1_binary,
    "matthews_correlation": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}


def compute_metrics(names: Sequence[str], predictions: ArrayLike, labels: ArrayLike) -> dict[str, float]:
    """Several metrics at once; with two correlation metrics, also their mean (``"combined_score"``).

    Args:
        names: metric names, keys of :data:`METRICS`.
        predictions: predicted class ids (classification) or values (regression).
        labels: gold class ids or values.

    Returns:
        ``{name: value}``; ``combined_score`` is the mean of all metrics when there are several (as in the
        Hugging Face GLUE examples, e.g. MRPC's (acc + F1) / 2 and STS-B's (Pearson + Spearman) / 2).
    """
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ConfigError(f"unknown metric(s) {unknown}; known: {sorted(METRICS)}")
    out = {n: METRICS[n](predictions, labels) for n in names}
    if len(out) > 1:
        out["combined_score"] = float(np.mean(list(out.values())))
    return out


def main_metric(metrics: Mapping[str, float], names: Sequence[str]) -> float:
    """The first of ``names`` found in ``metrics`` (the task's headline number)."""
    for n in names:
        if n in metrics:
            return metrics[n]
    raise InputError(f"none of {list(names)} in {sorted(metrics)}")


def bleu_metric() -> Any:
    """sacreBLEU's ``BLEU`` metric with its defaults (13a tokenisation, mixed case, exponential smoothing)."""
    try:
        from sacrebleu.metrics import BLEU
    except ImportError as e:
        raise MissingDependencyError(
            "BLEU needs sacreBLEU: pip install sacrebleu (or pip install 'syntaxformer[translation]')"
        ) from e
    return BLEU()


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """sacreBLEU corpus BLEU.

    Returns:
        ``{"bleu": float, "signature": str, "verbose": str}`` (``verbose`` holds the n-gram precisions, BP and
        lengths).
    """
    if len(hypotheses) != len(references):
        raise InputError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    metric = bleu_metric()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return {"bleu": float(score.score), "signature": str(metric.get_signature()), "verbose": str(score)}
