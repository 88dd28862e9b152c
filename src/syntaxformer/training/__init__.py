"""Fine-tuning with the Hugging Face ``Trainer``: experiment configs, the SG-Net trainer, run/compare functions.

Typical use::

    from syntaxformer.training import ExperimentConfig, run_experiment, compare
    metrics = run_experiment(ExperimentConfig(task="sst2", max_train_samples=2000, output_dir="runs/sst2"))
"""

from typing import Any

from syntaxformer.training.config import ExperimentConfig, load_config
from syntaxformer.training.experiment import compare, evaluate_model, format_comparison, predict, run_experiment

__all__ = ["ExperimentConfig", "SyntaxTrainer", "compare", "evaluate_model", "format_comparison", "load_config",
           "predict", "run_experiment"]


def __getattr__(name: str) -> Any:  # SyntaxTrainer imports transformers.Trainer: load it only when asked for
    if name == "SyntaxTrainer":
        from syntaxformer.training.trainer import SyntaxTrainer

        return SyntaxTrainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
