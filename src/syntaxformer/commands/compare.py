"""``syntaxformer compare``: fine-tune several systems (default: the plain-encoder baseline and SG-Net) with the
same seed and data, and print their dev scores side by side; each system goes to ``<output-dir>/<system>``,
``<output-dir>/comparison.json`` holds every ``metrics.json``.

The presets (:data:`PRESETS`) are a quick CPU job that a config file, ``--set`` and flags override: both default
systems from a cold cache took 2.7 minutes on 2 shared CPU cores (``syntaxformer compare --task sst2``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from syntaxformer.commands.train import add_config_arguments, config_from_args, task_or_data
from syntaxformer.training.comparison import compare, resolve_systems

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


#: The systems compared when ``--systems`` is not given.
DEFAULT_SYSTEMS = "baseline,sgnet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument(
        "--systems",
        default=DEFAULT_SYSTEMS,
        metavar="NAMES",
        help="comma-separated systems: baseline (the plain encoder), sgnet, syntax_bert, syntax_bert_lisa, "
        f"syntax_bert_baseline, lisa, or any registered system by its name (default {DEFAULT_SYSTEMS})",
    )


def _own_data(given: Mapping[str, Any]) -> Mapping[str, Any]:
    """The user's own data without a task is a custom task (:func:`~syntaxformer.commands.train.task_or_data`);
    otherwise the preset task (SST-2) stands."""
    return task_or_data(given) if given.get("train_file") or given.get("dataset") else {}


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args, defaults=PRESETS, check=_own_data)
    systems = resolve_systems(config, getattr(args, "systems", None) or DEFAULT_SYSTEMS)  # errors before training
    print(compare(config, systems)["table"])
    return 0
