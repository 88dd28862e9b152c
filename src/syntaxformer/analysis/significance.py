"""Significance tests (McNemar, paired bootstrap and its interval, t over seeds, sacreBLEU's BLEU tests): they live
in :mod:`syntaxformer.tasks.significance`, beside the task metrics they compare and below the training code's
``compare`` that uses them too. This module keeps the import path ``syntaxformer.analysis.significance``."""

from __future__ import annotations

from syntaxformer.tasks.significance import (
    BLEU_TESTS,
    TestResult,
    bootstrap_ci,
    mcnemar,
    paired_bleu_test,
    paired_bootstrap,
    paired_prediction_tests,
    paired_t_test,
    seed_ci,
)

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
]
