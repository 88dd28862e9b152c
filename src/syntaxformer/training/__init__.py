"""The runner: one :class:`RunConfig`, and ``train`` / ``evaluate`` / ``predict`` / ``compare`` for every task
(:mod:`syntaxformer.tasks`) and every syntax system, on the Hugging Face ``Trainer``.

Typical use::

    from syntaxformer.training import RunConfig, train
    metrics = train(RunConfig(task="sst2", max_train_samples=2000, output_dir="runs/sst2"))
"""

from typing import Any

from syntaxformer.training.comparison import compare, format_comparison
from syntaxformer.training.config import RunConfig, load_config
from syntaxformer.training.run import evaluate, predict, train

__all__ = ["RunConfig", "SyntaxTrainer", "compare", "evaluate", "format_comparison", "load_config", "predict", "train"]


def __getattr__(name: str) -> Any:  # SyntaxTrainer imports transformers.Trainer: load it only when asked for
    if name == "SyntaxTrainer":
        from syntaxformer.training.trainer import SyntaxTrainer

        return SyntaxTrainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
