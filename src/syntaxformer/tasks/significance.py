"""Significance tests for comparing a syntax model with its baseline (``scipy.stats``, sacreBLEU).

Over the examples of two fixed models: :func:`paired_bootstrap`, :func:`bootstrap_ci`, :func:`mcnemar`,
:func:`paired_bleu_test`. Over seeds, for claims about systems: :func:`seed_ci`, :func:`paired_t_test`,
:func:`sign_flip_test`, :func:`seed_comparison`. :func:`paired_prediction_tests` runs those that fit two
``dev_predictions.json`` files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from syntaxformer.errors import InputError
from syntaxformer.tasks.metrics import METRICS, bleu_metric

__all__ = [
    "BLEU_TESTS",
    "TestResult",
    "bootstrap_ci",
    "mcnemar",
    "paired_bleu_test",
    "paired_bootstrap",
    "paired_prediction_tests",
    "paired_t_test",
    "seed_ci",
    "seed_comparison",
    "sign_flip_test",
]

#: sacreBLEU's paired tests: ``"bs"`` paired bootstrap, ``"ar"`` approximate randomisation.
BLEU_TESTS: dict[str, str] = {"bs": "bleu_paired_bootstrap", "ar": "bleu_approximate_randomization"}


@dataclass
class TestResult:
    """Outcome of a paired test: the observed difference ``b - a`` and its p-value."""

    __test__ = False  # not a pytest test class

    test: str
    difference: float
    p_value: float
    n: int
    details: dict

    def to_dict(self) -> dict:
        return asdict(self)


def _stats() -> Any:
    from scipy import stats  # imported when a test runs, not with the module

    return stats


def _resampled(
    stat: Callable[[np.ndarray], float], n: int, n_resamples: int, seed: int, confidence: float
) -> tuple[np.ndarray, list[float]]:
    """The bootstrap distribution of ``stat(example indices)`` over ``n`` examples and its percentile interval
    (the distribution's range where scipy's is NaN: every resample gives the same value)."""

    def vectorised(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.asarray(idx)
        rows = idx.reshape(-1, idx.shape[-1])  # (resamples in this batch, N)
        return np.array([stat(i) for i in rows], dtype=float).reshape(idx.shape[:-1])

    res = _stats().bootstrap(
        (np.arange(n),),
        vectorised,
        n_resamples=n_resamples,
        paired=True,
        vectorized=True,
        batch=min(n_resamples, 100),
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    ci = [float(res.confidence_interval.low), float(res.confidence_interval.high)]
    if not all(np.isfinite(ci)):
        ci = [float(dist.min()), float(dist.max())]
    return dist, ci


def paired_bootstrap(
    metric: Callable[[np.ndarray, np.ndarray], float],
    preds_a: npt.ArrayLike,
    preds_b: npt.ArrayLike,
    labels: npt.ArrayLike,
    n_resamples: int = 1000,
    seed: int = 0,
    two_sided: bool = False,
) -> TestResult:
    """Paired bootstrap over evaluation examples (``scipy.stats.bootstrap``, ``paired=True``) of
    ``metric(b[idx], y[idx]) - metric(a[idx], y[idx])``.

    Args:
        metric: ``metric(predictions, labels) -> float``, higher is better (arrays indexed along the first axis).
        preds_a: predictions of the baseline, one per example.
        preds_b: predictions of the compared system on the same examples.
        labels: gold labels (zeros when the metric ignores them).
        n_resamples: bootstrap resamples.
        seed: resampling seed.
        two_sided: test ``|delta|`` against its centred bootstrap distribution instead of "B better than A".

    Returns:
        :class:`TestResult` with ``difference = metric(b) - metric(a)`` and ``details["ci95"]``, the 2.5 and 97.5
        percentiles of the resampled differences.

    Raises:
        InputError: unequal numbers of predictions and labels, or none.
    """
    a, b, y = np.asarray(preds_a), np.asarray(preds_b), np.asarray(labels)
    if not (len(a) == len(b) == len(y)) or len(y) == 0:
        raise InputError(f"need equally many predictions and labels, got {len(a)}, {len(b)}, {len(y)}")

    def delta(i: np.ndarray) -> float:
        return metric(b[i], y[i]) - metric(a[i], y[i])

    observed = float(delta(np.arange(len(y))))
    deltas, ci = np.full(n_resamples, observed), [observed, observed]
    if len(y) >= 2:  # scipy resamples at least two observations
        deltas, ci = _resampled(delta, len(y), n_resamples, seed, 0.95)
    if two_sided:
        p = float(np.mean(np.abs(deltas - deltas.mean()) >= abs(observed)))
    else:
        p = float(np.mean(deltas <= 0))
    return TestResult(
        "paired_bootstrap" + ("_two_sided" if two_sided else ""),
        observed,
        p,
        len(y),
        {"n_resamples": n_resamples, "seed": seed, "ci95": ci},
    )


def bootstrap_ci(
    metric: Callable[[np.ndarray, np.ndarray], float],
    predictions: npt.ArrayLike,
    labels: npt.ArrayLike,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``metric(predictions, labels)`` over examples (``scipy.stats.bootstrap``).

    Raises:
        InputError: unequal numbers of predictions and labels, or fewer than two.
    """
    p, y = np.asarray(predictions), np.asarray(labels)
    if len(p) != len(y) or len(y) < 2:
        raise InputError(f"need equally many predictions and labels (two or more), got {len(p)} and {len(y)}")

    low, high = _resampled(lambda i: metric(p[i], y[i]), len(y), n_resamples, seed, confidence)[1]
    return low, high


def seed_ci(scores: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of scores over seeds (``scipy.stats.t.interval``, ``n - 1`` degrees of
    freedom); equal scores give the point itself.

    Raises:
        InputError: fewer than two scores.
    """
    x = np.asarray(scores, dtype=float)
    if len(x) < 2:
        raise InputError(f"an interval over seeds needs two or more scores, got {len(x)}")
    sem = float(np.std(x, ddof=1) / np.sqrt(len(x)))
    if sem == 0:
        return float(x.mean()), float(x.mean())
    low, high = _stats().t.interval(confidence, len(x) - 1, loc=float(x.mean()), scale=sem)
    return float(low), float(high)


def mcnemar(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> TestResult:
    """Exact two-sided McNemar test on paired per-example correctness (``scipy.stats.binomtest`` of the discordant
    pairs); ``difference`` is accuracy(b) - accuracy(a).

    Raises:
        InputError: unequal numbers of outcomes, or none.
    """
    a, b = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if len(a) != len(b) or len(a) == 0:
        raise InputError(f"need equally many paired outcomes, got {len(a)} and {len(b)}")
    only_a = int(np.sum(a & ~b))
    only_b = int(np.sum(~a & b))
    p = 1.0 if only_a + only_b == 0 else float(_stats().binomtest(only_b, only_a + only_b, 0.5).pvalue)
    return TestResult(
        "mcnemar_exact", float(b.mean() - a.mean()), p, len(a), {"only_a_correct": only_a, "only_b_correct": only_b}
    )


def paired_t_test(scores_a: Sequence[float], scores_b: Sequence[float]) -> TestResult:
    """Two-sided paired t-test over matched runs (``scipy.stats.ttest_rel``); differences that are all equal
    give p = 1 when they are zero, else 0.

    Raises:
        InputError: fewer than two matched pairs.
    """
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    if len(a) != len(b) or len(a) < 2:
        raise InputError(f"need at least two matched pairs, got {len(a)} and {len(b)}")
    d = b - a
    if np.all(d == d[0]):  # scipy answers nan for 0/0
        t, p = (0.0, 1.0) if d[0] == 0 else (float(np.copysign(np.inf, d[0])), 0.0)
    else:
        r = _stats().ttest_rel(b, a)
        t, p = float(r.statistic), float(r.pvalue)
    return TestResult("paired_t", float(d.mean()), p, len(d), {"t": t, "df": len(d) - 1})


def sign_flip_test(differences: Sequence[float]) -> TestResult:
    """Exact two-sided sign-flip test of per-seed differences (``B - A`` of matched runs) against a zero mean.

    p is the share of the ``2**k`` sign patterns whose mean is at least as far from 0 as the observed one (so
    p >= ``2 / 2**k`` unless every difference is 0); ``scipy.stats.permutation_test``'s exact answer, cheaper.

    Raises:
        InputError: no difference, or more than 20 (enumeration would be too large; use a t-test).
    """
    d = np.asarray(differences, dtype=float)
    k = len(d)
    if not 1 <= k <= 20:
        raise InputError(f"an exact sign-flip test takes 1 to 20 per-seed differences, got {k}")
    signs = 1 - 2 * ((np.arange(2**k)[:, None] >> np.arange(k)) & 1)  # [2**k, k] every pattern of +-1
    means = np.abs(signs @ d) / k
    observed = abs(float(d.mean()))
    p = float(np.mean(means >= observed - 1e-12 * max(1.0, observed)))  # ties: float sums of equal values
    return TestResult("sign_flip_exact", float(d.mean()), p, k, {"patterns": 2**k, "smallest_p": min(1.0, 2 / 2**k)})


def seed_comparison(scores_a: Sequence[float], scores_b: Sequence[float], confidence: float = 0.95) -> dict[str, Any]:
    """B - A over matched seeds (the same seeds, in the same order).

    Returns:
        ``{"seeds", "difference", "ci95"`` (:func:`seed_ci`), ``"t_p"`` (:func:`paired_t_test`), ``"sign_flip_p"``
        (:func:`sign_flip_test`)``}``.

    Raises:
        InputError: fewer than two matched seeds.
    """
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    t = paired_t_test(a.tolist(), b.tolist())
    d = b - a
    return {
        "seeds": len(d),
        "difference": float(d.mean()),
        "ci95": list(seed_ci(d, confidence)),
        "t_p": t.p_value,
        "sign_flip_p": sign_flip_test(d).p_value,
    }


def _sentence_statistics(hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """``[N, 10]`` BLEU counts per sentence: hyp length, ref length, matches 1..4, totals 1..4."""
    metric = bleu_metric(effective_order=True)
    scores = [metric.sentence_score(h, [r]) for h, r in zip(hypotheses, references)]
    return np.asarray([[s.sys_len, s.ref_len, *s.counts, *s.totals] for s in scores], dtype=np.int64)


def _corpus_bleu_of(stats: np.ndarray) -> float:
    """sacreBLEU's default corpus BLEU (exponential smoothing, 4-grams) of summed sentence statistics."""
    total = stats.sum(axis=0)
    return float(
        bleu_metric()
        .compute_bleu(
            correct=total[2:6].tolist(), total=total[6:10].tolist(), sys_len=int(total[0]), ref_len=int(total[1])
        )
        .score
    )


def paired_bleu_test(
    hyp_a: Sequence[str],
    hyp_b: Sequence[str],
    references: Sequence[str],
    test: str = "bs",
    n_resamples: int = 0,
    seed: int = 12345,
) -> TestResult:
    """Corpus BLEU of system B against baseline A on the same sentences (one reference each).

    The p-value is sacreBLEU's two-sided paired test: ``test="bs"`` the paired bootstrap of Koehn (2004),
    ``test="ar"`` approximate randomisation (Riezler and Maxwell 2005); identical outputs get p = 1. The 95%
    interval of the difference comes from :func:`paired_bootstrap` over sentence statistics.

    Args:
        hyp_a, hyp_b: detokenised outputs of the two systems, one per reference.
        references: raw references.
        test: ``"bs"`` or ``"ar"``.
        n_resamples: resamples / trials (0 = sacreBLEU's defaults); the interval uses 1,000 with ``ar``.
        seed: the seed of both (positive: sacreBLEU treats 0 as "no seed").

    Returns:
        :class:`TestResult` with ``details``: ``bleu_a``, ``bleu_b``, ``ci95`` (of B - A), ``n_resamples``,
        ``seed``, ``signature``.

    Raises:
        InputError: different numbers of hypotheses and references, an unknown test or a seed below 1.
    """
    if not (len(hyp_a) == len(hyp_b) == len(references)) or not references:
        raise InputError(
            f"a paired BLEU test needs outputs of the same sentences: {len(hyp_a)}, {len(hyp_b)} "
            f"hypotheses and {len(references)} references"
        )
    if test not in BLEU_TESTS:
        raise InputError(f"unknown BLEU test {test!r}; use one of {sorted(BLEU_TESTS)}")
    if seed < 1:
        raise InputError(f"seed {seed} must be a positive integer (sacreBLEU treats 0 as no seed)")
    bleu_metric()
    from sacrebleu.significance import PairedTest, Result

    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        # Only the bootstrap test needs a confidence run on the baseline; -1 keeps `ar` to its trials.
        paired = PairedTest(
            [("a", list(hyp_a)), ("b", list(hyp_b))],
            {"BLEU": bleu_metric()},
            [list(references)],
            test_type=test,
            n_samples=n_resamples,
            n_ar_confidence=-1,
        )
        signatures, scores = paired()
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old
    ((name, (res_a, res_b)),) = ((k, v) for k, v in scores.items() if k != "System")
    assert isinstance(res_a, Result) and isinstance(res_b, Result) and res_b.p_value is not None
    p_value = float(res_b.p_value)
    if list(hyp_a) == list(hyp_b):  # sacreBLEU counts only strictly larger shuffled differences: p = 1/(n+1)
        p_value = 1.0
    n_ci = paired.n_samples if test == "bs" else 1000
    sa, sb = _sentence_statistics(hyp_a, references), _sentence_statistics(hyp_b, references)
    boot = paired_bootstrap(
        lambda s, _y: _corpus_bleu_of(s), sa, sb, np.zeros(len(references)), n_resamples=n_ci, seed=seed
    )
    return TestResult(
        BLEU_TESTS[test],
        float(res_b.score - res_a.score),
        p_value,
        len(references),
        {
            "bleu_a": float(res_a.score),
            "bleu_b": float(res_b.score),
            "ci95": boot.details["ci95"],
            "n_resamples": paired.n_samples,
            "ci_resamples": n_ci,
            "seed": seed,
            "signature": str(signatures[name]),
        },
    )


def paired_prediction_tests(
    preds_a: dict[str, Any],
    preds_b: dict[str, Any],
    metric: str,
    n_resamples: int = 1000,
    seed: int = 0,
    references: Sequence[str] | None = None,
    bleu_test: str = "bs",
) -> dict[str, Any]:
    """B against A on one pair of ``dev_predictions.json`` contents (same examples): with ``references``
    ``{"bleu": ...}`` (:func:`paired_bleu_test`); else, with labels and a ``metric`` of
    :data:`~syntaxformer.tasks.metrics.METRICS`, the two-sided ``"bootstrap"`` and for integer labels
    ``"mcnemar"``; ``{}`` otherwise."""
    if references is not None:
        return {
            "bleu": paired_bleu_test(
                preds_a["predictions"],
                preds_b["predictions"],
                references,
                test=bleu_test,
                n_resamples=n_resamples,
                seed=seed or 12345,
            ).to_dict()
        }
    labels = preds_a.get("labels")
    if labels is None or metric not in METRICS:
        return {}
    y = np.asarray(labels)
    a, b = np.asarray(preds_a["predictions"]), np.asarray(preds_b["predictions"])
    out = {
        "bootstrap": paired_bootstrap(
            METRICS[metric], a, b, y, n_resamples=n_resamples, seed=seed, two_sided=True
        ).to_dict()
    }
    if np.issubdtype(y.dtype, np.integer):
        out["mcnemar"] = mcnemar(a == y, b == y).to_dict()
    return out
