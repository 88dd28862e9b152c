"""Significance tests (McNemar, paired bootstrap and its interval, t over seeds, sacreBLEU's BLEU tests): they live
in :mod:`syntaxformer.tasks.significance`, beside the task metrics they compare and below the training code's
``compare`` that uses them too. This module keeps the import path ``syntaxformer.analysis.significance``."""

from syntaxformer.tasks import significance as _significance
from syntaxformer.tasks.significance import *  # noqa: F403

__all__ = list(_significance.__all__)
