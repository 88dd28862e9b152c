"""Evaluation metrics of the GLUE tasks and SNLI (scikit-learn, SciPy) and sacreBLEU's BLEU.

Every function takes predictions and gold labels of the same length and returns a float; degenerate inputs follow
scikit-learn / SciPy (F1 and Matthews 0.0; a correlation with a constant input ``nan``, without SciPy's warning).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    from sklearn.metrics import accuracy_score

    p, y = _pair(predictions, labels)
    return float(accuracy_score(y, p))


def f1_binary(predictions: ArrayLike, labels: ArrayLike, positive: int = 1) -> float:
    """F1 of the positive class: ``2 TP / (2 TP + FP + FN)`` (0.0 if there is no true or predicted positive)."""
    from sklearn.metrics import f1_score

    p, y = _pair(predictions, labels)
    # labels=[positive] with average="micro": the positive class's F1 even where it never occurs
    return float(f1_score(y, p, labels=[positive], average="micro", zero_division=0.0))


def matthews_corrcoef(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Matthews correlation coefficient (multi-class form of Gorodkin, 2004; the binary MCC for two classes);
    0.0 for a constant prediction or a constant gold column."""
    from sklearn.metrics import matthews_corrcoef as mcc

    p, y = _pair(predictions, labels)
    return float(mcc(y, p))


def _correlation(kind: str, predictions: ArrayLike, labels: ArrayLike) -> float:
    from scipy import stats

    p, y = _pair(predictions, labels, np.float64)
    if np.all(p == p[0]) or np.all(y == y[0]):  # undefined; SciPy would warn
        return float("nan")
    return float((stats.pearsonr if kind == "pearson" else stats.spearmanr)(p, y)[0])


def pearson(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Pearson correlation coefficient (``nan`` if either input is constant)."""
    return _correlation("pearson", predictions, labels)


def spearman(predictions: ArrayLike, labels: ArrayLike) -> float:
    """Spearman rank correlation: Pearson correlation of the (tie-averaged) ranks (``nan`` if either is constant)."""
    return _correlation("spearman", predictions, labels)


#: Metric name -> function(predictions, labels).
METRICS: dict[str, Callable[[ArrayLike, ArrayLike], float]] = {
    "accuracy": accuracy,
    "f1": f1_binary,
    "matthews_correlation": matthews_corrcoef,
    "pearson": pearson,
    "spearman": spearman,
}


def compute_metrics(names: Sequence[str], predictions: ArrayLike, labels: ArrayLike) -> dict[str, float]:
    """Several metrics at once.

    Args:
        names: metric names, keys of :data:`METRICS`.
        predictions: predicted class ids (classification) or values (regression).
        labels: gold class ids or values.

    Returns:
        ``{name: value}``; ``combined_score``, the mean, when there are several (as the Hugging Face examples).
    """
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ConfigError(f"unknown metric(s) {unknown}; known: {sorted(METRICS)}")
    out = {n: METRICS[n](predictions, labels) for n in names}
    if len(out) > 1:
        out["combined_score"] = float(np.mean(list(out.values())))
    return out


def bleu_metric(**options: Any) -> Any:
    """sacreBLEU's ``BLEU`` metric with its defaults (13a tokenisation, mixed case, exponential smoothing) and
    ``options``."""
    try:
        from sacrebleu.metrics import BLEU
    except ImportError as e:
        raise MissingDependencyError(
            "BLEU needs sacreBLEU: pip install sacrebleu (or pip install 'syntaxformer[translation]')"
        ) from e
    return BLEU(**options)


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """sacreBLEU corpus BLEU.

    Returns:
        ``{"bleu": float, "signature": str, "verbose": str}``.
    """
    if len(hypotheses) != len(references):
        raise InputError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    metric = bleu_metric()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return {"bleu": float(score.score), "signature": str(metric.get_signature()), "verbose": str(score)}
