"""The seed-level tests the docs' tables use (tasks/significance.py: paired t-test, exact sign-flip test), run on
simulated per-seed differences with no true difference: each rejects at its nominal level (the t-test, within
simulation error) or below it (the exact sign-flip test, whose smallest p with k seeds is 2 / 2**k), for 3 and 5
seeds, at alpha 0.05 and at a Holm-sized alpha (0.05 / 65, the per-phenomenon BLiMP family)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks.significance import paired_t_test, seed_comparison, sign_flip_test

ALPHAS = (0.05, 0.05 / 65)
N_SIMULATIONS = 200_000  # the t-test, vectorised (scipy.stats.ttest_rel along an axis, as paired_t_test calls it)
N_CALLS = 20_000  # each test called one simulated experiment at a time, as the tables call it


def _null_scores(k: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` simulated experiments of ``k`` seeds of systems A and B ``[n, k]`` with no true difference: the runs
    of one seed share a seed effect (data order, initialisation) and differ by noise only."""
    seed_effect = rng.normal(0.0, 0.02, size=(n, k))
    return 0.7 + seed_effect + rng.normal(0.0, 0.01, size=(n, k)), 0.7 + seed_effect + rng.normal(0.0, 0.01, (n, k))


def _within(rate: float, alpha: float, n: int, sigmas: float = 4.0) -> bool:
    """``rate`` (of ``n`` simulations) is within ``sigmas`` binomial standard errors of ``alpha``."""
    return abs(rate - alpha) <= sigmas * np.sqrt(alpha * (1 - alpha) / n) + 1 / n


@pytest.mark.parametrize("k", [3, 5])
def test_seed_level_tests_hold_their_level_under_the_null(k):
    rng = np.random.default_rng(k)
    a, b = _null_scores(k, N_SIMULATIONS, rng)
    t_p = stats.ttest_rel(b, a, axis=1).pvalue
    # the library's test is that scipy call, simulation by simulation
    assert [paired_t_test(x, y).p_value for x, y in zip(a[:200], b[:200])] == pytest.approx(t_p[:200], rel=1e-12)
    flip_p = np.array([sign_flip_test(y - x).p_value for x, y in zip(a[:N_CALLS], b[:N_CALLS])])
    for alpha in ALPHAS:
        assert _within(float(np.mean(t_p <= alpha)), alpha, N_SIMULATIONS), (k, alpha, np.mean(t_p <= alpha))
        # exact, but its smallest p (0.25 for 3 seeds, 0.0625 for 5) is above both alphas: it never rejects
        assert float(np.mean(flip_p <= alpha)) == 0.0 and flip_p.min() == pytest.approx(2 / 2**k)


def test_sign_flip_test_rejects_at_its_attainable_level():
    """With 6 seeds the smallest p is 2/64: the test rejects at 0.05 exactly when all 6 differences share a sign,
    2/64 of the time under any symmetric null, here a heavy-tailed one (Student t, 2 degrees of freedom)."""
    rng = np.random.default_rng(6)
    d = rng.standard_t(2, size=(N_CALLS, 6))
    rate = float(np.mean([sign_flip_test(x).p_value <= 0.05 for x in d]))
    assert _within(rate, 2 / 64, N_CALLS)


def test_sign_flip_test_is_scipys_exact_permutation_test():
    """Slow reference: scipy.stats.permutation_test with sign flips (one sample, permutation_type="samples"),
    which enumerates all 2**k patterns when n_resamples >= 2**k."""
    rng = np.random.default_rng(0)
    for k in (2, 3, 5, 7):
        for _ in range(5):
            d = rng.normal(0.3, 1.0, size=k)
            ref = stats.permutation_test(
                (d,), np.mean, permutation_type="samples", n_resamples=np.inf, alternative="two-sided"
            )
            assert sign_flip_test(d).p_value == pytest.approx(ref.pvalue, abs=1e-12), d
    assert sign_flip_test([0.01, 0.02, 0.03, 0.04, 0.05]).p_value == pytest.approx(2 / 32)
    assert sign_flip_test([0.0, 0.0, 0.0]).p_value == 1.0
    with pytest.raises(SyntaxformerError, match="1 to 20"):
        sign_flip_test([])


def test_seed_comparison_reports_the_t_interval_and_both_tests():
    a, b = [0.70, 0.72, 0.69, 0.71, 0.70], [0.72, 0.73, 0.72, 0.71, 0.73]
    r = seed_comparison(a, b)
    d = np.subtract(b, a)
    ref = stats.ttest_1samp(d, 0.0)
    low, high = stats.t.interval(0.95, 4, loc=d.mean(), scale=stats.sem(d))
    assert r["seeds"] == 5 and r["difference"] == pytest.approx(d.mean())
    assert r["t_p"] == pytest.approx(ref.pvalue) and r["ci95"] == pytest.approx([low, high])
    assert r["sign_flip_p"] == pytest.approx(4 / 32)  # four positive differences and a zero: 4 of 32 patterns as far
    with pytest.raises(SyntaxformerError, match="at least two matched pairs"):
        seed_comparison([0.7], [0.8])
