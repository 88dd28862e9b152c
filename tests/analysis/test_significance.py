"""Significance tests against textbook values and scipy."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxformer.analysis.significance import mcnemar, paired_bootstrap, paired_t_test


def _acc(p, y):
    return float(np.mean(p == y))


def test_significance_mcnemar_exact_values():
    # 10 discordant pairs split 9/1: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22/1024
    a = [True] * 9 + [False] * 1 + [True] * 5
    b = [False] * 9 + [True] * 1 + [True] * 5
    r = mcnemar(a, b)
    assert r.p_value == pytest.approx(22 / 1024)
    assert r.details == {"only_a_correct": 9, "only_b_correct": 1}
    assert mcnemar([True, False], [True, False]).p_value == 1.0


def test_significance_mcnemar_many_discordant_pairs_matches_scipy():
    """More than 1,023 discordant pairs (a full RACE dev set) used to overflow a float 2 ** n."""
    stats = pytest.importorskip("scipy.stats")
    for only_a, only_b in ((900, 960), (1500, 1500), (2400, 2000)):
        a = [True] * only_a + [False] * only_b + [True] * 50
        b = [False] * only_a + [True] * only_b + [True] * 50
        ref = stats.binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue
        assert mcnemar(a, b).p_value == pytest.approx(ref, rel=1e-9)


def test_significance_paired_t_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    a, b = [0.80, 0.82, 0.79, 0.81], [0.83, 0.84, 0.80, 0.85]
    r = paired_t_test(a, b)
    ref = stats.ttest_rel(b, a)
    assert r.p_value == pytest.approx(ref.pvalue) and r.details["t"] == pytest.approx(ref.statistic)
    assert r.difference == pytest.approx(np.mean(np.subtract(b, a)))


def test_significance_bootstrap_detects_real_gap_and_not_noise():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 2000)
    a = np.where(rng.random(2000) < 0.70, y, 1 - y)  # ~70% accurate
    b = np.where(rng.random(2000) < 0.80, y, 1 - y)  # ~80% accurate
    assert paired_bootstrap(_acc, a, b, y, n_resamples=300).p_value < 0.01
    same = paired_bootstrap(_acc, a, a.copy(), y, n_resamples=300)
    assert same.difference == 0 and same.p_value == 1.0
    flipped = paired_bootstrap(_acc, b, a, y, n_resamples=300)  # worse system as "b"
    assert flipped.p_value > 0.99
    with pytest.raises(ValueError):
        paired_bootstrap(_acc, a[:3], b, y)
