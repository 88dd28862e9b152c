"""GLUE metrics (scikit-learn / SciPy behind the library's signatures) against values computed by hand, degenerate
inputs included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from syntaxformer.tasks.metrics import accuracy, compute_metrics, f1_binary, matthews_corrcoef, pearson, spearman


def test_metrics_accuracy_hand_computed():
    assert accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5
    assert accuracy(np.array([2, 2]), np.array([2, 2])) == 1.0


def test_metrics_f1_hand_computed():
    # TP = 2 (positions 0, 3), FP = 1 (1), FN = 1 (4): F1 = 2*2 / (2*2 + 1 + 1) = 2/3
    assert f1_binary([1, 1, 0, 1, 0], [1, 0, 0, 1, 1]) == pytest.approx(2 / 3)
    assert f1_binary([0, 0], [0, 0]) == 0.0  # no positive anywhere: defined as 0


def test_metrics_matthews_binary_hand_computed():
    # TP=2 TN=1 FP=1 FN=1: (2*1 - 1*1) / sqrt(3*3*2*2) = 1/6
    assert matthews_corrcoef([1, 1, 0, 1, 0], [1, 0, 0, 1, 1]) == pytest.approx(1 / 6)
    assert matthews_corrcoef([1, 0, 1], [1, 0, 1]) == pytest.approx(1.0)
    assert matthews_corrcoef([0, 1, 0], [1, 0, 1]) == pytest.approx(-1.0)
    assert matthews_corrcoef([1, 1, 1, 1], [1, 0, 1, 0]) == 0.0  # constant prediction


def test_metrics_matthews_multiclass_hand_computed():
    # c=3, s=4, t=[2,1,1], p=[2,0,2]: (3*4 - 6) / sqrt((16 - 8) * (16 - 6)) = 6 / sqrt(80)
    assert matthews_corrcoef([0, 2, 2, 0], [0, 1, 2, 0]) == pytest.approx(6 / math.sqrt(80))


def test_metrics_pearson_hand_computed():
    # dx=[-1.5,-.5,.5,1.5], dy=[-3,-1,0,4]: 11 / sqrt(5 * 26)
    assert pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_metrics_undefined_correlations_are_nan_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(pearson([1, 2, 3], [2, 2, 2])) and math.isnan(spearman([1, 1], [1, 2]))


def test_metrics_spearman_ties_hand_computed():
    # tie-averaged ranks [1, 2.5, 2.5, 4] vs [1, 3, 2, 4]: 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert spearman([3.0, 1.0, 3.0, 3.0], [4, 1, 2, 3]) == pytest.approx(pearson([3, 1, 3, 3], [4, 1, 2, 3]))


def test_metrics_f1_is_the_positive_class_even_where_it_never_occurs():
    assert f1_binary([0, 2, 1], [0, 1, 1]) == pytest.approx(2 / 3)  # TP 1, FN 1; class 2 is not the positive one
    assert f1_binary([0, 0, 0], [0, 0, 1]) == 0.0


def test_metrics_compute_combined_and_errors():
    out = compute_metrics(["f1", "accuracy"], [1, 1, 0, 1, 0], [1, 0, 0, 1, 1])
    assert out["f1"] == pytest.approx(2 / 3) and out["accuracy"] == pytest.approx(0.6)
    assert out["combined_score"] == pytest.approx((2 / 3 + 0.6) / 2)
    assert list(compute_metrics(["accuracy"], [1], [1])) == ["accuracy"]
    with pytest.raises(ValueError, match="unknown metric"):
        compute_metrics(["bleu"], [1], [1])
    with pytest.raises(ValueError, match="same length"):
        accuracy([1, 0], [1])
