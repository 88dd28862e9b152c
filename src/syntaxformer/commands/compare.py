"""``syntaxformer compare``: fine-tune the plain-encoder baseline and SG-Net with the same seed and data, and
print both dev scores side by side.

Presets (for a quick job on a CPU; a config file, ``--set`` and flags override them): 2,000 training examples
(seeded subsample), max length 64, 2 epochs, batch 32, learning rate 1e-4 for all parameters, the full dev set,
one evaluation at the end and no checkpoints. Measured on 2 shared CPU cores: 2.7 minutes for both systems from a
cold cache (spaCy parses ~2,900 sentences once; the second system reuses the cached features; training takes
~35 s per system on an idle machine, up to ~110 s when the cores are busy).

Each system goes to ``<output-dir>/baseline`` and ``<output-dir>/sgnet``; ``<output-dir>/comparison.json`` holds
both ``metrics.json`` contents.

Example::

    syntaxformer compare --task sst2 --output-dir runs/compare-sst2
"""

from __future__ import annotations

import argparse

from syntaxformer.commands.train import add_config_arguments, config_from_args

HELP = "fine-tune baseline and SG-Net with the same seed/data; print both dev scores"

#: Presets of the quick comparison (the README's main job: real SST-2, offline MiniLM, 2 CPU cores).
PRESETS = {
    "task": "sst2",
    "max_train_samples": 2000,
    "max_length": 64,
    "num_train_epochs": 2.0,
    "per_device_train_batch_size": 32,
    "per_device_eval_batch_size": 64,
    "learning_rate": 1e-4,
    "warmup_steps": 0.1,
    "eval_strategy": "no",
    "save_strategy": "no",
    "save_model": False,
    "logging_steps": 20,
    "output_dir": "runs/compare",
    "overwrite_output_dir": True,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer compare`` to ``parser``."""
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from syntaxformer.training.experiment import compare

    config = config_from_args(args, defaults=PRESETS)
    compare(config)
    return 0
