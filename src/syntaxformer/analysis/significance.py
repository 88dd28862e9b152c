"""Significance tests for comparing a syntax model with its baseline.

* :func:`paired_bootstrap` — per-example paired bootstrap of any metric (accuracy, F1, Matthews, Pearson, ...)
  on the same evaluation set; the p-value is the fraction of resamples in which system B is not better than A
  (one-sided, Koehn 2004 style), with the two-sided variant available.
* :func:`mcnemar` — exact McNemar test on per-example correctness (SG-Net paper, ref. [74]).
* :func:`paired_t_test` — paired t-test over seeds (mean scores of matched runs; SG-Net paper ref. [76]).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np

from syntaxformer.errors import InputError


@dataclass
class TestResult:
    """Outcome of a paired test: the observed difference ``b - a`` and its p-value."""

    test: str
    difference: float
    p_value: float
    n: int
    details: dict

    def to_dict(self) -> dict:
        return asdict(self)


def paired_bootstrap(metric: Callable[[np.ndarray, np.ndarray], float], preds_a: Sequence, preds_b: Sequence,
                     labels: Sequence, n_resamples: int = 1000, seed: int = 0,
                     two_sided: bool = False) -> TestResult:
    """Paired bootstrap over evaluation examples.

    Args:
        metric: ``metric(predictions, labels) -> float``, higher is better.
        preds_a: predictions of the baseline, one per example.
        preds_b: predictions of the compared system on the same examples.
        labels: gold labels.
        n_resamples: bootstrap resamples (1,000 is the usual choice; p-values below 1/n_resamples read as < that).
        seed: resampling seed.
        two_sided: test ``|delta|`` against its centred bootstrap distribution instead of "B better than A".

    Returns:
        :class:`TestResult` with ``difference = metric(b) - metric(a)``.
    """
    a, b, y = np.asarray(preds_a), np.asarray(preds_b), np.asarray(labels)
    if not (len(a) == len(b) == len(y)) or len(y) == 0:
        raise InputError(f"need equally many predictions and labels, got {len(a)}, {len(b)}, {len(y)}")
    observed = metric(b, y) - metric(a, y)
    rng = np.random.default_rng(seed)
    deltas = np.empty(n_resamples)
    for r in range(n_resamples):
        idx = rng.integers(0, len(y), len(y))
        deltas[r] = metric(b[idx], y[idx]) - metric(a[idx], y[idx])
    if two_sided:
        p = float(np.mean(np.abs(deltas - deltas.mean()) >= abs(observed)))
    else:
        p = float(np.mean(deltas <= 0))
    return TestResult("paired_bootstrap" + ("_two_sided" if two_sided else ""), float(observed), p, len(y),
                      {"n_resamples": n_resamples, "seed": seed, "ci95": [float(np.percentile(deltas, 2.5)),
                                                                          float(np.percentile(deltas, 97.5))]})


def mcnemar(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> TestResult:
    """Exact (binomial) two-sided McNemar test on paired per-example correctness.

    ``difference`` is accuracy(b) - accuracy(a); ``details`` holds the discordant counts.
    """
    a, b = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if len(a) != len(b) or len(a) == 0:
        raise InputError(f"need equally many paired outcomes, got {len(a)} and {len(b)}")
    only_a = int(np.sum(a & ~b))
    only_b = int(np.sum(~a & b))
    n = only_a + only_b
    if n == 0:
        p = 1.0
    else:
        k = min(only_a, only_b)
        # Exact integer tail divided as Python ints (a float 2.0 ** n overflows past n = 1023 discordant pairs).
        p = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / (1 << n))
    return TestResult("mcnemar_exact", float(b.mean() - a.mean()), p, len(a),
                      {"only_a_correct": only_a, "only_b_correct": only_b})


def paired_t_test(scores_a: Sequence[float], scores_b: Sequence[float]) -> TestResult:
    """Two-sided paired t-test over matched runs (e.g. the same seeds for baseline and syntax model)."""
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    if len(a) != len(b) or len(a) < 2:
        raise InputError(f"need at least two matched pairs, got {len(a)} and {len(b)}")
    d = b - a
    sd = d.std(ddof=1)
    if sd == 0:
        p = 1.0 if d.mean() == 0 else 0.0
        t = math.inf if d.mean() != 0 else 0.0
    else:
        from scipy import stats

        t = float(d.mean() / (sd / math.sqrt(len(d))))
        p = float(2 * stats.t.sf(abs(t), df=len(d) - 1))
    return TestResult("paired_t", float(d.mean()), p, len(d), {"t": t, "df": len(d) - 1})
