"""``syntaxformer train``: train SG-Net, Syntax-BERT (or a plain-encoder baseline) on any registered task: GLUE,
SNLI, SST, SQuAD 2.0, RACE, or the Syntax-Infused Transformer on translation.

Every run option is a flag, with dashes or underscores (:mod:`syntaxformer.training.options` generates them): the
fields of :class:`syntaxformer.training.RunConfig`, the tasks' and the models' options, and every
``transformers.TrainingArguments`` field under its Hugging Face spelling (``--warmup_ratio``, ``--bf16``,
``--report_to``, ``--push_to_hub`` ...). The flags win over a JSON / YAML config file (``--config``) with its
``--set key=value`` overrides, which win over the task's training defaults, which win over the library's. Runs
:func:`syntaxformer.training.run.train`: writes the model, ``run.json`` and ``metrics.json`` to ``--output-dir`` and
prints the dev scores as JSON.

Examples::

    syntaxformer train --task sst2 --max-train-samples 2000 --epochs 1 --output-dir runs/sst2-sg
    syntaxformer train --config sst2.yaml --set alpha=0.3 --set new_params_lr=1e-4
    syntaxformer train --task rte --warmup_ratio 0.1 --bf16 --eval_strategy steps --eval_steps 100 --report_to none
    syntaxformer train --config sst2.yaml --resume          # continue after an interrupt
    syntaxformer train --task sst5 --model-type syntax_bert --lisa-layer 3 --output-dir runs/sst5-sbert
    syntaxformer train --task sst2_trees --model-type syntax_bert --set syntax_bert_options.aggregation=sum
    syntaxformer train --task squad2 --set verifier=joint --max-train-samples 2000 --output-dir runs/squad-sg
    syntaxformer train --task race --max-train-samples 400 --max-length 128 --output-dir runs/race-sg
    syntaxformer train --task translation --set arm=both --set fraction=0.1 --output-dir runs/nmt-both
    syntaxformer train --train-file reviews.csv --validation-file dev.csv --text-column review \
        --label-column sentiment --output-dir runs/reviews          # your own data (task `custom`)
    syntaxformer train --train-file my_squad.json --output-dir runs/my-qa          # SQuAD format: `custom-qa`
    syntaxformer train --train-file quiz.jsonl --output-dir runs/quiz   # question / options / answer: `custom-mc`

Every task goes through the same runner; options of the task itself (``--set doc_stride=128``,
``--set verifier=joint``, ``--set arm=syntax``) go to ``task_options`` (see the task's class:
``syntaxformer.tasks.squad.SquadTask``, ``syntaxformer.tasks.translation.TranslationTask`` ...).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from syntaxformer.training.config import RunConfig


HELP = (
    "fine-tune SG-Net, Syntax-BERT or a baseline on any registered task (GLUE, SNLI, SST, SQuAD 2.0, RACE, "
    "translation; Trainer; config file + overrides)"
)


def add_config_arguments(parser: argparse.ArgumentParser, *, training: bool = True) -> None:
    """Options shared by train / compare (and, without the training ones, evaluate / predict): ``--config``,
    ``--set`` and a flag for every run option (:func:`syntaxformer.training.options.add_run_options`: generated from
    :class:`~syntaxformer.training.RunConfig`, the tasks' and the systems' options and ``TrainingArguments``, under
    their Hugging Face spellings and with dashes)."""
    from syntaxformer.training.options import add_run_options

    g = parser.add_argument_group("configuration")
    g.add_argument("--config", metavar="FILE", help="JSON or YAML file of RunConfig options")
    g.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one option (repeatable; dotted keys reach model.*, task_options.*, "
        "training_args.*), e.g. --set alpha=0.3 --set training_args.optim=adamw_torch",
    )
    add_run_options(parser, training=training)


#: Options of the user's own data (task options of `custom` / `custom-mc`) -> their flags.
_COLUMN_FLAGS = {
    "text_column": "--text-column",
    "text_pair_column": "--text-pair-column",
    "label_column": "--label-column",
    "id_column": "--id-column",
}


def explicit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The config options given as flags (those left unset are absent)."""
    from syntaxformer.training.options import given_options

    return given_options(args)


def config_from_args(
    args: argparse.Namespace,
    defaults: Mapping[str, Any] | None = None,
    *,
    check: Callable[[dict[str, Any]], Mapping[str, Any]] | None = None,
) -> RunConfig:
    """The :class:`~syntaxformer.training.RunConfig` of the flags, ``--config`` and ``--set`` over ``defaults``
    (a command's presets) and the task's defaults (:func:`syntaxformer.training.options.resolve_config`)."""
    from syntaxformer.training.options import resolve_config

    return resolve_config(
        explicit_options(args), config_file=args.config, overrides=args.overrides, presets=defaults, check=check
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer train`` to ``parser``."""
    add_config_arguments(parser)


def summary(metrics: Mapping[str, Any], output_dir: str) -> dict[str, Any]:
    """What the command prints: the task, the system, the headline scores (flat numbers only) and the folder."""
    flat = {k: v for k, v in metrics["dev"].items() if isinstance(v, (int, float, str)) and k != "verbose"}
    return {"task": metrics["task"], "model_type": metrics["model_type"], "dev": flat, "output_dir": output_dir}


def require_task(args: argparse.Namespace) -> dict[str, Any]:
    """:func:`task_or_data` of the options given by ``args`` (flags over ``--config`` with ``--set``)."""
    from syntaxformer.training.config import config_data

    return task_or_data(config_data(args.config, args.overrides, **explicit_options(args)))


def task_or_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """``train`` needs a task (``--task``, or ``task:`` in ``--config`` / ``--set``) or the user's own data
    (``--train-file`` / ``--dataset`` without a task: :func:`syntaxformer.tasks.custom.task_for_data` picks
    ``custom``, ``custom-qa`` or ``custom-mc``): no silent SST-2 default. Column flags with a task that reads its
    own columns are an error.

    Args:
        data: the options the user gave (flags over the config file).

    Returns:
        the options to add to the config (``{"task": ...}`` when it was inferred), else ``{}``.
    """
    from syntaxformer.errors import ConfigError
    from syntaxformer.tasks import task_names, task_option_names

    task = data.get("task")
    extra: dict[str, Any] = {}
    if not task:
        if not (data.get("train_file") or data.get("dataset")):
            raise ConfigError(
                f"no task given: pass --task NAME (one of {', '.join(task_names())}, or a task you "
                "registered with syntaxformer.tasks.register_task), `task:` in --config, or your own "
                "data: --train-file FILE (CSV / TSV / JSON / JSONL) --text-column C --label-column C"
            )
        from syntaxformer.tasks.custom import task_for_data

        task = extra["task"] = task_for_data(
            data.get("train_file"), data.get("dataset"), [k for k in _COLUMN_FLAGS if data.get(k) is not None]
        )
    given = [k for k in _COLUMN_FLAGS if data.get(k) is not None]
    takes = set(task_option_names(str(task)))
    wrong = [_COLUMN_FLAGS[k] for k in given if k not in takes]
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)} do(es) not apply to --task {task}, which reads its own columns; "
            "column options are for your own data: --task custom (or --train-file without --task)"
        )
    return extra


def run(args: argparse.Namespace) -> int:
    from syntaxformer.training.config import RunConfig
    from syntaxformer.training.run import train

    config = config_from_args(args, check=task_or_data)
    if config.output_dir == RunConfig.output_dir and "output_dir" not in (config.given or ()):
        # the library default, given by no flag and no config file: say where the run goes
        logging.getLogger(__name__).warning(
            "no --output-dir given: the run goes to %s (the default)", config.output_dir
        )
    hub = _hub_push(config)
    metrics = train(config)
    print(json.dumps(summary(metrics, config.output_dir), indent=2))
    if hub is not None and os.environ.get("RANK", "0") == "0":  # one push, from the main process
        import tempfile

        from syntaxformer.sharing import export_model

        with tempfile.TemporaryDirectory() as tmp:
            export_model(config.output_dir, Path(tmp) / Path(config.output_dir).name, push_to_hub=hub[0], token=hub[1])
    return 0


def _hub_push(config: Any) -> tuple[str, str] | None:
    """``--push_to_hub``: the hub repository (``--hub_model_id``, else the run folder's name) and the token, checked
    before any work. The Trainer is kept from pushing the run folder (which needs syntaxformer installed): after
    training, the run is exported to a temporary folder and that self-contained folder is pushed."""
    args = config.training_args
    if not args.get("push_to_hub"):
        return None
    from syntaxformer.errors import ConfigError
    from syntaxformer.sharing import check_hub_push

    if not config.save_model:
        raise ConfigError("--push_to_hub pushes the exported model: it needs the model saved (drop save_model=false)")
    repo = str(args.get("hub_model_id") or Path(config.output_dir).name)
    token = check_hub_push(repo, args.get("hub_token"))
    config.training_args = {k: v for k, v in args.items() if k != "push_to_hub"}
    return repo, token
