"""Every run option from one source: the flags generated from the option dataclasses (Hugging Face spellings
included), where each name goes, and which value wins (command line > config file > presets > task defaults >
library defaults)."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from syntaxformer.errors import ConfigError
from syntaxformer.training.config import RunConfig
from syntaxformer.training.options import (
    add_run_options,
    given_options,
    resolve_config,
    training_argument_names,
    with_task_defaults,
)


def _parse(*argv: str, training: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_options(parser, training=training)
    return parser.parse_args(list(argv))


def test_precedence_cli_over_file_over_presets_over_task_over_library(tmp_path):
    """One option (max_length) set at every layer; taking the layers away from the top shows each one below it.
    SQuAD 2.0's training default is 384, the library's 128."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"task": "squad2", "max_length": 256}))
    presets = {"max_length": 200}
    assert resolve_config({"max_length": 64}, config_file=path, presets=presets).max_length == 64  # command line
    assert resolve_config({}, config_file=path, presets=presets).max_length == 256  # config file
    assert resolve_config({"task": "squad2"}, presets=presets).max_length == 200  # presets
    assert resolve_config({"task": "squad2"}).max_length == 384  # task defaults
    assert resolve_config({"task": "sst2"}).max_length == RunConfig.max_length == 128  # library defaults
    # --set belongs to the config file's layer: over the file, under the flags
    assert resolve_config({}, config_file=path, overrides=["max_length=96"]).max_length == 96
    assert resolve_config({"max_length": 64}, config_file=path, overrides=["max_length=96"]).max_length == 64
    # a value equal to the library default is still given: the task's default does not replace it
    assert resolve_config({"task": "squad2", "max_length": 128}).max_length == 128


def test_precedence_merges_nested_sections_and_hf_spellings_per_layer(tmp_path):
    """A layer's section entries are merged key by key (the flags' --report_to does not drop the file's optim);
    a Hugging Face spelling on the command line wins over our spelling in the file (--bf16 over mixed_precision)."""
    path = tmp_path / "run.yaml"
    path.write_text("task: rte\nmixed_precision: 'no'\ntraining_args: {optim: adafactor}\nmodel: {alpha: 0.2}\n")
    config = resolve_config({"bf16": True, "report_to": ["none"], "alpha": 0.4}, config_file=path)
    assert config.mixed_precision == "bf16"
    assert config.training_args == {"optim": "adafactor", "report_to": ["none"]}
    assert config.model == {"alpha": 0.4}


def test_resolve_builds_the_task_once_and_train_takes_that_one(monkeypatch):
    from syntaxformer import tasks

    built = []
    real = tasks.get_task

    def counting(name, **options):
        built.append(name)
        return real(name, **options)

    monkeypatch.setattr(tasks, "get_task", counting)
    config = resolve_config({"task": "squad2", "doc_stride": 64})
    assert built == ["squad2"]
    task = config.build_task()
    assert built == ["squad2"] and task.options()["doc_stride"] == 64
    assert with_task_defaults(config, task) is config  # the task's defaults are in already: nothing rebuilt
    assert config.build_task() is not task  # handed out once; a second call builds a fresh task


def test_every_training_argument_has_a_flag_under_its_hf_spelling():
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    flags = set(parser._option_string_actions)
    missing = sorted(n for n in training_argument_names() if f"--{n}" not in flags)
    assert missing == []
    for name in ("warmup_ratio", "max_seq_length", "doc_stride", "max_answer_length", "validation_file"):
        assert f"--{name}" in flags and f"--{name.replace('_', '-')}" in flags


def test_hf_flags_land_where_they_belong(tmp_path):
    """The Hugging Face training flags of the example scripts parse and reach the run config: our own fields, the
    task's options, the model's options, or TrainingArguments as they are."""
    args = _parse(
        "--task", "squad2", "--warmup_ratio", "0.06", "--fp16", "--eval_strategy", "steps", "--eval_steps", "50",
        "--save_strategy", "no", "--logging_steps", "10", "--report_to", "none", "--lr_scheduler_type", "cosine",
        "--doc_stride", "96", "--max_answer_length", "20", "--push_to_hub", "false", "--num_train_epochs", "1",
        "--per_device_train_batch_size", "4", "--max_seq_length", "256", "--output_dir", str(tmp_path / "r"),
        "--optim", "adamw_torch", "--label_smoothing_factor", "0.1", "--alpha", "0.3", "--do_train",
    )  # fmt: skip
    config = resolve_config(given_options(args))
    assert (config.warmup_steps, config.mixed_precision, config.eval_strategy, config.eval_steps) == (
        0.06,
        "fp16",
        "steps",
        50,
    )
    assert (config.save_strategy, config.logging_steps, config.lr_scheduler_type, config.max_length) == (
        "no",
        10,
        "cosine",
        256,
    )
    assert config.task_options == {"doc_stride": 96, "max_answer_length": 20}
    assert config.model == {"alpha": 0.3}
    assert config.training_args == {
        "report_to": ["none"],
        "push_to_hub": False,
        "optim": "adamw_torch",
        "label_smoothing_factor": 0.1,
        "do_train": True,
    }
    from syntaxformer.training.arguments import training_arguments

    hf = training_arguments(config.replace(mixed_precision="no"), str(tmp_path / "r"))
    assert (hf.optim, hf.report_to, hf.push_to_hub, hf.label_smoothing_factor) == ("adamw_torch", [], False, 0.1)
    assert hf.lr_scheduler_type == "cosine" and hf.warmup_steps == 0.06


def test_unset_flags_are_absent_so_defaults_stay_defaults():
    """No hand-kept list of names: what the user did not type is not in the options, whatever its default."""
    args = _parse("--task", "rte", "--epochs", "2", "--no-progress", "--overwrite-output-dir")
    assert given_options(args) == {
        "task": "rte",
        "num_train_epochs": 2.0,
        "disable_tqdm": True,
        "overwrite_output_dir": True,
    }
    assert given_options(_parse()) == {}
    eval_flags = _parse("--max-length", "64", "--parser-noise", "0.4", training=False)
    assert given_options(eval_flags) == {"max_length": 64, "parser_noise": 0.4}
    with pytest.raises(SystemExit):
        _parse("--epochs", "2", training=False)  # evaluate / predict offer only what an evaluation may change


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["--epochs", "2"], "num_train_epochs", 2.0),
        (["--batch-size", "8"], "per_device_train_batch_size", 8),
        (["--eval-batch-size", "8"], "per_device_eval_batch_size", 8),
        (["--model", "m"], "model_name_or_path", "m"),
        (["--validation-file", "d.csv"], "dev_file", "d.csv"),
        (["--resume"], "resume", True),
        (["--resume", "ckpt"], "resume", "ckpt"),
        (["--use-sg-layer", "false"], "model", {"use_sg_layer": False}),
        (["--lisa-layer", "3", "--model-type", "syntax_bert"], "model", {"lisa_layer": 3}),
        (["--trees", "dependency", "--model-type", "syntax_bert"], "model", {"use_dependency": True,
                                                                             "use_constituency": False}),
        (["--sst-phrases", "true", "--task", "sst5"], "task_options", {"phrases": True}),
        (["--resume_from_checkpoint", "ckpt"], "resume", "ckpt"),
        (["--evaluation_strategy", "no"], "eval_strategy", "no"),
    ],
)  # fmt: skip
def test_documented_spellings_keep_working(argv, field, value):
    given = given_options(_parse(*argv))
    config = resolve_config({"task": "rte", **given})
    assert getattr(config, field) == value


def test_hf_spellings_are_checked():
    with pytest.raises(ConfigError, match="warmup_ratio=1.5 is not a fraction below 1"):
        resolve_config({"task": "rte", "warmup_ratio": 1.5})
    with pytest.raises(ConfigError, match="bf16 and fp16 are both true"):
        resolve_config({"task": "rte", "bf16": True, "fp16": True})
    with pytest.raises(ConfigError, match="fp16=True and mixed_precision='bf16' both given"):
        resolve_config({"task": "rte", "fp16": True, "mixed_precision": "bf16"})
    # in a config file, too (routing is the same for every source)
    assert RunConfig.from_dict({"bf16": False, "warmup_ratio": 0.2}).mixed_precision == "no"
    assert RunConfig.from_dict({"report_to": "none"}).training_args == {"report_to": "none"}


def test_run_config_fields_all_have_flags_with_help():
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    by_dest = {a.dest: a for a in parser._actions}
    for f in dataclasses.fields(RunConfig):
        if f.name in ("task_options", "model", "training_args"):
            continue
        assert f.name in by_dest, f.name
        assert by_dest[f.name].help, f.name


def _encoder_folder(path, hidden: int):
    """A folder with only an encoder's config.json (what the learning-rate default reads)."""
    from transformers import BertConfig

    BertConfig(
        hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2, intermediate_size=4 * hidden
    ).save_pretrained(path)
    return str(path)


def test_small_encoder_learning_rate_default_only_when_nobody_chose_one(tmp_path, caplog):
    from syntaxformer.training.options import SMALL_ENCODER_LEARNING_RATE, with_encoder_defaults, with_task_defaults

    small = _encoder_folder(tmp_path / "small", 384)
    large = _encoder_folder(tmp_path / "large", 768)
    assert RunConfig.learning_rate == 2e-5 and SMALL_ENCODER_LEARNING_RATE == 1e-4

    def resolved(cli: dict):
        config = resolve_config(cli)
        return with_encoder_defaults(with_task_defaults(config, config.build_task())).learning_rate

    with caplog.at_level("INFO", logger="syntaxformer.training.options"):
        assert resolved({"task": "cola", "model_name_or_path": small}) == 1e-4
    assert "default for small encoders (hidden size 384" in caplog.text
    assert resolved({"task": "cola", "model_name_or_path": large}) == 2e-5  # the library default
    assert resolved({"task": "cola", "model_name_or_path": small, "learning_rate": 2e-5}) == 2e-5  # the user's
    assert resolved({"task": "squad2", "model_name_or_path": small}) == 3e-5  # the task's own default
    config_file = tmp_path / "run.yaml"
    config_file.write_text("learning_rate: 5.0e-5\n", encoding="utf-8")
    config = resolve_config({"task": "cola", "model_name_or_path": small}, config_file=config_file)
    assert with_encoder_defaults(config).learning_rate == 5e-5  # a config file's
    # a config built directly: a learning rate still at the library default counts as not chosen
    assert with_encoder_defaults(RunConfig(task="cola", model_name_or_path=small)).learning_rate == 1e-4
    assert (
        with_encoder_defaults(RunConfig(task="cola", model_name_or_path=small, learning_rate=3e-4)).learning_rate
        == 3e-4
    )
