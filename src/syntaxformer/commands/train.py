"""``syntaxformer train``: train SG-Net, Syntax-BERT (or a plain-encoder baseline) on any registered task: GLUE,
SNLI, SST, SQuAD 2.0, RACE, or the Syntax-Infused Transformer on translation.

Options come from a JSON / YAML config file (``--config``), then ``--set key=value`` overrides, then the explicit
flags below; see :class:`syntaxformer.training.RunConfig` for every option (model options given at the top level,
``--set alpha=0.3``, go to its ``model`` section). Runs :func:`syntaxformer.training.run.train`: writes the model,
``run.json`` and ``metrics.json`` to ``--output-dir`` and prints the dev scores as JSON.

Examples::

    syntaxformer train --task sst2 --max-train-samples 2000 --epochs 1 --output-dir runs/sst2-sg
    syntaxformer train --config sst2.yaml --set alpha=0.3 --set new_params_lr=1e-4
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
from typing import Any, Mapping

from syntaxformer import registry as _registry

HELP = (
    "fine-tune SG-Net, Syntax-BERT or a baseline on any registered task (GLUE, SNLI, SST, SQuAD 2.0, RACE, "
    "translation; Trainer; config file + overrides)"
)


def _bool(text: str) -> bool:
    low = text.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def add_config_arguments(parser: argparse.ArgumentParser, *, training: bool = True) -> None:
    """Options shared by train / compare (and, without the training ones, evaluate / predict)."""
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
    d = parser.add_argument_group("data")
    d.add_argument(
        "--task",
        help="a registered task: sst2, cola, mrpc, stsb, qnli, rte, wnli, snli, the SST tree tasks sst5 "
        "(SST-1, 5 classes) and sst2_trees (binary; gold constituency trees), or the reading "
        "comprehension tasks squad2 (SQuAD 2.0 span QA) and race (multiple choice), or translation "
        "(encoder-decoder NMT; task options via --set, e.g. --set arm=syntax --set fraction=0.1)",
    )
    d.add_argument("--data-dir", help="folder with the task's files (default ../shared/data/<task folder>)")
    d.add_argument("--dataset", help="Hugging Face hub data set (e.g. nyu-mll/glue; needs network)")
    d.add_argument("--dataset-config", help="hub data set config (e.g. sst2)")
    d.add_argument(
        "--max-eval-samples",
        "--max_eval_samples",
        dest="max_eval_samples",
        type=int,
        help="seeded random subset of the evaluation split",
    )
    d.add_argument(
        "--max-predict-samples",
        "--max_predict_samples",
        dest="max_predict_samples",
        type=int,
        help="seeded random subset of the predicted split",
    )
    d.add_argument(
        "--max-length",
        "--max_seq_length",
        "--max_length",
        dest="max_length",
        type=int,
        help="tokens per input incl. special tokens",
    )
    d.add_argument("--parser", help="spaCy pipeline (default en_core_web_sm / its offline build)")
    d.add_argument("--parser-noise", type=float, help="fraction of dependency heads corrupted (SG-Net §7.6)")
    d.add_argument("--no-progress", action="store_true", help="hide progress bars")
    if training:
        d.add_argument(
            "--train-file",
            "--train_file",
            dest="train_file",
            help="train file (overrides --data-dir); "
            "without --task: your own CSV / TSV / JSON / JSONL file (or a datasets folder), see "
            "--text-column / --label-column",
        )
        d.add_argument(
            "--validation-file",
            "--validation_file",
            "--dev-file",
            "--dev_file",
            dest="dev_file",
            help="validation (dev) file (overrides --data-dir); your own data without one: 10%% of "
            "the training rows are held out",
        )
        d.add_argument(
            "--test-file",
            "--test_file",
            dest="test_file",
            help="test file (predicted after training "
            "only by tasks that do; `syntaxformer predict RUN --split test` reads it)",
        )
        c = parser.add_argument_group("your own data (--train-file without --task, or --task custom / custom-mc)")
        c.add_argument(
            "--text-column",
            "--text_column",
            "--text_column_name",
            dest="text_column",
            help="column of the text (default: sentence1 / text / sentence, or the only other column)",
        )
        c.add_argument(
            "--text-pair-column",
            "--text_pair_column",
            dest="text_pair_column",
            help="column of the second text of a pair (default: sentence2 with sentence1)",
        )
        c.add_argument(
            "--label-column",
            "--label_column",
            "--label_column_name",
            dest="label_column",
            help="column of the label (default label); text or whole-number labels are classes (names "
            "kept in the model), other numbers a regression",
        )
        c.add_argument(
            "--id-column", "--id_column", dest="id_column", help="column of example ids (default: row numbers)"
        )
        d.add_argument(
            "--max-train-samples",
            "--max_train_samples",
            dest="max_train_samples",
            type=int,
            help="seeded random subset of the train split",
        )
        d.add_argument(
            "--sst-phrases",
            type=_bool,
            metavar="BOOL",
            help="SST tree tasks: also train on every "
            "phrase of more than 3 words (the paper's setting; default false: sentences only)",
        )
        m = parser.add_argument_group("model")
        m.add_argument(
            "--model-type",
            choices=_registry.SYSTEMS,  # read when checked or shown: packages' systems (entry points) included
            help="syntax system: sgnet, syntax_bert, plain (the encoder alone, the baseline) or one a package adds "
            "(default sgnet)",
        )
        m.add_argument(
            "--model",
            "--model_name_or_path",
            "--model-name-or-path",
            dest="model_name_or_path",
            help="pretrained encoder name or folder (default: the offline all-MiniLM-L6-v2)",
        )
        m.add_argument(
            "--use-sg-layer",
            type=_bool,
            metavar="BOOL",
            help="add the syntax-guided layer (true) or train the plain-encoder baseline (false)",
        )
        m.add_argument("--alpha", type=float, help="weight of the encoder output in alpha*H + (1-alpha)*H'")
        m.add_argument("--alpha-mode", choices=("fixed", "learned"))
        m.add_argument("--sg-init", choices=("random", "copy_last"))
        m.add_argument("--pooling", choices=("cls", "mean"))
        b = parser.add_argument_group("Syntax-BERT (--model-type syntax_bert; other options: --set model.NAME=VALUE)")
        b.add_argument(
            "--use-syntax",
            type=_bool,
            metavar="BOOL",
            help="sub-networks in every layer (true) or the plain encoder with the Syntax-BERT head (false)",
        )
        b.add_argument("--trees", choices=("both", "dependency", "constituency"), help="trees of the sub-networks")
        b.add_argument(
            "--lisa-layer",
            type=int,
            metavar="LAYER",
            help="train head --lisa-head of this layer to attend to each token's dependency parent (LISA)",
        )
        b.add_argument("--lisa-head", type=int, metavar="HEAD")
        b.add_argument("--lisa-loss-weight", type=float, metavar="W")
        t = parser.add_argument_group("training")
        t.add_argument(
            "--output-dir", "--output_dir", dest="output_dir", help="where the model, checkpoints and metrics.json go"
        )
        t.add_argument("--epochs", "--num_train_epochs", dest="num_train_epochs", type=float)
        t.add_argument("--max-steps", "--max_steps", dest="max_steps", type=int)
        t.add_argument("--learning-rate", "--learning_rate", dest="learning_rate", type=float)
        t.add_argument("--new-params-lr", type=float, help="learning rate of the non-encoder parameters")
        t.add_argument("--batch-size", "--per_device_train_batch_size", dest="per_device_train_batch_size", type=int)
        t.add_argument("--eval-batch-size", "--per_device_eval_batch_size", dest="per_device_eval_batch_size", type=int)
        t.add_argument(
            "--gradient-accumulation-steps",
            "--gradient_accumulation_steps",
            dest="gradient_accumulation_steps",
            type=int,
        )
        t.add_argument("--weight-decay", "--weight_decay", dest="weight_decay", type=float)
        t.add_argument(
            "--warmup-steps",
            "--warmup_steps",
            dest="warmup_steps",
            type=float,
            help="warm-up steps, or below 1 a fraction of all steps",
        )
        t.add_argument("--data-seed", "--data_seed", dest="data_seed", type=int)
        t.add_argument("--seed", type=int)
        t.add_argument("--mixed-precision", choices=("auto", "no", "bf16", "fp16"))
        t.add_argument(
            "--resume",
            nargs="?",
            const=True,
            default=None,
            metavar="CHECKPOINT",
            help="continue from the last checkpoint in --output-dir (or from CHECKPOINT)",
        )
        t.add_argument(
            "--overwrite-output-dir",
            "--overwrite_output_dir",
            dest="overwrite_output_dir",
            action="store_true",
            default=None,
            help="start again in an --output-dir that holds checkpoints",
        )


_EXPLICIT = (
    "task",
    "data_dir",
    "dataset",
    "dataset_config",
    "max_eval_samples",
    "max_length",
    "parser",
    "parser_noise",
    "train_file",
    "dev_file",
    "max_train_samples",
    "sst_phrases",
    "model_type",
    "model_name_or_path",
    "use_sg_layer",
    "alpha",
    "alpha_mode",
    "sg_init",
    "pooling",
    "use_syntax",
    "trees",
    "lisa_layer",
    "lisa_head",
    "lisa_loss_weight",
    "output_dir",
    "num_train_epochs",
    "max_steps",
    "learning_rate",
    "new_params_lr",
    "per_device_train_batch_size",
    "seed",
    "mixed_precision",
    "resume",
    "overwrite_output_dir",
    "max_predict_samples",
    "test_file",
    "text_column",
    "text_pair_column",
    "label_column",
    "id_column",
    "per_device_eval_batch_size",
    "gradient_accumulation_steps",
    "weight_decay",
    "warmup_steps",
    "data_seed",
)
#: Data files given as flags: recorded as absolute paths in run.json, so `evaluate` / `predict` find them from
#: any working folder.
_FILES = ("train_file", "dev_file", "test_file")
#: Flags of the user's own data (task options of `custom` / `custom-mc`) -> their option names.
_COLUMN_FLAGS = {
    "text_column": "--text-column",
    "text_pair_column": "--text-pair-column",
    "label_column": "--label-column",
    "id_column": "--id-column",
}


def explicit_options(args: argparse.Namespace) -> dict[str, Any]:
    """The config options given as flags (those left unset are absent)."""
    out = {k: getattr(args, k) for k in _EXPLICIT if getattr(args, k, None) is not None}
    for key in _FILES:
        if key in out and os.path.exists(out[key]):
            out[key] = os.path.abspath(out[key])
    if getattr(args, "no_progress", False):
        out["disable_tqdm"] = True
    return out


def config_from_args(args: argparse.Namespace, defaults: Mapping[str, Any] | None = None):
    """A :class:`~syntaxformer.training.RunConfig` from ``--config``, ``--set`` and the explicit flags (in that
    order)."""
    from syntaxformer.training.config import load_config

    return load_config(args.config, args.overrides, defaults=defaults, **explicit_options(args))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``syntaxformer train`` to ``parser``."""
    add_config_arguments(parser)


def summary(metrics: Mapping[str, Any], output_dir: str) -> dict[str, Any]:
    """What the command prints: the task, the system, the headline scores (flat numbers only) and the folder."""
    flat = {k: v for k, v in metrics["dev"].items() if isinstance(v, (int, float, str)) and k != "verbose"}
    return {"task": metrics["task"], "model_type": metrics["model_type"], "dev": flat, "output_dir": output_dir}


def require_task(args: argparse.Namespace) -> dict[str, Any]:
    """``train`` needs a task (``--task``, or ``task:`` in ``--config`` / ``--set``) or the user's own data
    (``--train-file`` / ``--dataset`` without a task: :func:`syntaxformer.tasks.custom.task_for_data` picks
    ``custom``, ``custom-qa`` or ``custom-mc``): no silent SST-2 default. Column flags with a task that reads its
    own columns are an error.

    Returns:
        the options to add to the config (``{"task": ...}`` when it was inferred), else ``{}``.
    """
    from syntaxformer.errors import ConfigError
    from syntaxformer.tasks import task_names, task_option_names
    from syntaxformer.training.config import config_data

    data = config_data(args.config, args.overrides, **explicit_options(args))
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
    _reject_unused(str(task), data)
    return extra


def _absolute_files(value: Any) -> Any:
    """Task options with every relative path of an existing file made absolute (``train_source=train.en`` ...),
    so the run folder's ``run.json`` finds them from any working folder; other values unchanged."""
    if isinstance(value, str):
        return os.path.abspath(value) if value and not os.path.isabs(value) and os.path.isfile(value) else value
    if isinstance(value, list):
        return [_absolute_files(v) for v in value]
    if isinstance(value, dict):
        return {k: _absolute_files(v) for k, v in value.items()}
    return value


def _reject_unused(task: str, data: Mapping[str, Any]) -> None:
    """Options given for a task that ignores them (:attr:`syntaxformer.tasks.Task.unused_options`) are an error,
    even when the value given is the default (``train`` itself can only see values that differ from it)."""
    from syntaxformer.errors import ConfigError, SyntaxformerError
    from syntaxformer.tasks import get_task

    try:
        unused = get_task(task).unused_options
    except SyntaxformerError:  # a task that needs options to be built: train() checks it
        return
    for name, instead in unused.items():
        if name in data:
            raise ConfigError(f"{task} does not use {name}={data[name]!r}: {instead}")


def run(args: argparse.Namespace) -> int:
    from syntaxformer.training.config import RunConfig
    from syntaxformer.training.run import train

    inferred = require_task(args)
    for key, value in inferred.items():
        setattr(args, key, value)
    config = config_from_args(args)
    absolute = _absolute_files(config.task_options)
    if absolute != config.task_options:
        config = config.replace(task_options=absolute)
    if config.output_dir == RunConfig.output_dir and not getattr(args, "output_dir", None):
        # the library default, given by no flag and no config file: say where the run goes
        logging.getLogger(__name__).warning(
            "no --output-dir given: the run goes to %s (the default)", config.output_dir
        )
    metrics = train(config)
    print(json.dumps(summary(metrics, config.output_dir), indent=2))
    return 0
