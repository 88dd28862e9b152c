"""Significance tests against textbook values, scipy and sacreBLEU."""

from __future__ import annotations

import numpy as np
import pytest

from syntaxformer.errors import InputError
from syntaxformer.tasks.significance import mcnemar, paired_bleu_test, paired_bootstrap, paired_t_test


def _acc(p, y):
    return float(np.mean(p == y))


def test_significance_mcnemar_exact_values():
    # 10 discordant pairs split 9/1: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22/1024
    a = [True] * 9 + [False] * 1 + [True] * 5
    b = [False] * 9 + [True] * 1 + [True] * 5
    r = mcnemar(a, b)
    assert r.p_value == pytest.approx(22 / 1024)
    assert r.details == {"only_a_correct": 9, "only_b_correct": 1}
    assert r.difference == pytest.approx(-8 / 15)
    assert mcnemar([True, False], [True, False]).p_value == 1.0
    # 6 discordant pairs split 3/3: the two tails cover everything, p = 1
    assert mcnemar([True] * 3 + [False] * 3, [False] * 3 + [True] * 3).p_value == pytest.approx(1.0)
    # 12 discordant pairs split 2/10: p = 2 * (1 + 12 + 66) / 4096 = 158/4096
    assert mcnemar([True] * 2 + [False] * 10, [False] * 2 + [True] * 10).p_value == pytest.approx(158 / 4096)


def test_significance_mcnemar_many_discordant_pairs_against_exact_integer_tail():
    """More than 1,023 discordant pairs (a full RACE dev set): against the exact binomial tail in Python integers."""
    from math import comb

    for only_a, only_b in ((900, 960), (1500, 1500), (2400, 2000)):
        a = [True] * only_a + [False] * only_b + [True] * 50
        b = [False] * only_a + [True] * only_b + [True] * 50
        n, k = only_a + only_b, min(only_a, only_b)
        ref = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / (1 << n))
        assert mcnemar(a, b).p_value == pytest.approx(ref, rel=1e-9)


def test_significance_paired_t_textbook_value():
    # d = (0.03, 0.02, 0.01, 0.04): mean 0.025, sd = sqrt(5/3) / 100, t = 0.025 / (sd / 2) = 3.8730, df 3;
    # two-sided p = 2 * P(T_3 > 3.8730) = 0.030466 (t table: t_0.975,3 = 3.182 < 3.873 < t_0.99,3 = 4.541)
    a, b = [0.80, 0.82, 0.79, 0.81], [0.83, 0.84, 0.80, 0.85]
    r = paired_t_test(a, b)
    assert r.details["t"] == pytest.approx(0.025 / (np.sqrt(5 / 3) / 100 / 2), rel=1e-9)
    assert r.details["t"] == pytest.approx(3.8730, abs=1e-4)
    assert r.p_value == pytest.approx(0.030466, abs=2e-6)
    assert r.difference == pytest.approx(0.025) and r.details["df"] == 3
    assert paired_t_test([0.5, 0.6], [0.5, 0.6]).p_value == 1.0  # no difference at all
    same_gain = paired_t_test([0.5, 0.6], [0.6, 0.7])
    assert same_gain.p_value == 0.0 and same_gain.details["t"] == np.inf
    with pytest.raises(InputError, match="two matched pairs"):
        paired_t_test([0.5], [0.6])


def _reference_bootstrap(metric, a, b, y, n_resamples, seed):
    """The plain loop: one draw of N indices per resample from default_rng(seed)."""
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(y), len(y))
        deltas.append(metric(b[idx], y[idx]) - metric(a[idx], y[idx]))
    return np.array(deltas)


def test_significance_bootstrap_equals_plain_resampling_loop():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 301)
    a = np.where(rng.random(301) < 0.70, y, 1 - y)
    b = np.where(rng.random(301) < 0.75, y, 1 - y)
    deltas = _reference_bootstrap(_acc, a, b, y, 250, 3)
    r = paired_bootstrap(_acc, a, b, y, n_resamples=250, seed=3, two_sided=True)
    assert r.difference == pytest.approx(_acc(b, y) - _acc(a, y))
    assert r.details["ci95"] == pytest.approx([np.percentile(deltas, 2.5), np.percentile(deltas, 97.5)])
    assert r.p_value == pytest.approx(np.mean(np.abs(deltas - deltas.mean()) >= abs(r.difference)))
    one = paired_bootstrap(_acc, a, b, y, n_resamples=250, seed=3)
    assert one.p_value == pytest.approx(np.mean(deltas <= 0))


def test_significance_bootstrap_detects_real_gap_and_not_noise():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 2000)
    a = np.where(rng.random(2000) < 0.70, y, 1 - y)  # ~70% accurate
    b = np.where(rng.random(2000) < 0.80, y, 1 - y)  # ~80% accurate
    gap = paired_bootstrap(_acc, a, b, y, n_resamples=300)
    assert gap.p_value < 0.01 and 0 < gap.details["ci95"][0] < gap.difference < gap.details["ci95"][1]
    same = paired_bootstrap(_acc, a, a.copy(), y, n_resamples=300)
    assert same.difference == 0 and same.p_value == 1.0 and same.details["ci95"] == [0.0, 0.0]
    flipped = paired_bootstrap(_acc, b, a, y, n_resamples=300)  # worse system as "b"
    assert flipped.p_value > 0.99
    with pytest.raises(InputError):
        paired_bootstrap(_acc, a[:3], b, y)


def test_significance_bootstrap_predictions_with_more_axes():
    """Predictions ``[N, S]`` (several seeds per example) are resampled along examples."""
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    a = np.stack([y, 1 - y], axis=1)  # half right
    b = np.stack([y, y], axis=1)  # all right
    r = paired_bootstrap(lambda p, labels: float(np.mean(p == labels[:, None])), a, b, y, n_resamples=50)
    assert r.difference == pytest.approx(0.5) and r.details["ci95"] == pytest.approx([0.5, 0.5])


REFS = [
    "the cat sat on the mat",
    "a dog runs in the park",
    "he said hello to me",
    "it is raining today",
    "we bought two red apples",
    "the train leaves at noon",
] * 5
HYP_A = [
    "the cat sat on a mat",
    "a dog ran in the park",
    "he said hi to me",
    "it rains today",
    "we bought red apples",
    "the train leaves at noon",
] * 5


def test_significance_paired_bleu_test_against_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    hyp_b = list(REFS)
    hyp_b[1] = "a dog ran in a park"
    for test in ("bs", "ar"):
        r = paired_bleu_test(HYP_A, hyp_b, REFS, test=test, n_resamples=200)
        assert r.details["bleu_a"] == pytest.approx(sacrebleu.corpus_bleu(HYP_A, [REFS]).score)
        assert r.details["bleu_b"] == pytest.approx(sacrebleu.corpus_bleu(hyp_b, [REFS]).score)
        assert r.difference == pytest.approx(r.details["bleu_b"] - r.details["bleu_a"]) and r.difference > 0
        assert 0 < r.p_value < 0.05 and r.details["ci95"][0] > 0
        assert f"{test}:200" in r.details["signature"] and "seed:12345" in r.details["signature"]
    # the interval's resamples are sacreBLEU corpus BLEU of the resampled sentences
    draws = np.random.default_rng(12345).integers(0, len(REFS), (2, len(REFS)))
    deltas = [
        sacrebleu.corpus_bleu([hyp_b[i] for i in idx], [[REFS[i] for i in idx]]).score
        - sacrebleu.corpus_bleu([HYP_A[i] for i in idx], [[REFS[i] for i in idx]]).score
        for idx in draws
    ]
    bs = paired_bleu_test(HYP_A, hyp_b, REFS, test="bs", n_resamples=2)
    assert bs.details["ci95"] == pytest.approx([np.percentile(deltas, 2.5), np.percentile(deltas, 97.5)])
    same = paired_bleu_test(HYP_A, HYP_A, REFS, test="ar", n_resamples=100)
    assert same.difference == 0 and same.p_value == 1.0
    with pytest.raises(InputError, match="same sentences"):
        paired_bleu_test(HYP_A[:-1], hyp_b, REFS)
    with pytest.raises(InputError, match="unknown BLEU test"):
        paired_bleu_test(HYP_A, hyp_b, REFS, test="t")
