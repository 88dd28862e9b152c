"""Every run option from one description: the flags built from the RunConfig fields' metadata (Hugging Face
spellings included), where each name goes, which value wins (command line > config file > presets > task defaults
> library defaults), and the defaults decided once (RunConfig.for_task)."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from syntaxformer.commands.train import GROUPS, add_config_arguments, config_from_args, explicit_options
from syntaxformer.errors import ConfigError
from syntaxformer.training.config import RunConfig, training_argument_names


def _parse(*argv: str, training: bool = True) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_arguments(parser, training=training)
    return parser.parse_args(list(argv))


def _config(*argv: str, presets: dict | None = None) -> RunConfig:
    """The config a run of ``argv`` trains with: the layers merged, then the task's and the encoder's defaults."""
    config = config_from_args(_parse(*argv), presets)
    return config.for_task(config.build_task())


def test_precedence_cli_over_file_over_presets_over_task_over_library(tmp_path):
    """One option (max_length) set at every layer; taking the layers away from the top shows each one below it.
    SQuAD 2.0's training default is 384, the library's 128."""
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"task": "squad2", "max_length": 256}))
    presets = {"max_length": 200}
    assert _config("--max-length", "64", "--config", str(path), presets=presets).max_length == 64  # command line
    assert _config("--config", str(path), presets=presets).max_length == 256  # config file
    assert _config("--task", "squad2", presets=presets).max_length == 200  # presets
    assert _config("--task", "squad2").max_length == 384  # task defaults
    assert _config("--task", "sst2").max_length == RunConfig.max_length == 128  # library defaults
    # --set belongs to the config file's layer: over the file, under the flags
    assert _config("--config", str(path), "--set", "max_length=96").max_length == 96
    assert _config("--max-length", "64", "--config", str(path), "--set", "max_length=96").max_length == 64
    # a value equal to the library default is still given: the task's default does not replace it
    assert _config("--task", "squad2", "--max-length", "128").max_length == 128


def test_precedence_merges_nested_sections_and_hf_spellings_per_layer(tmp_path):
    """A layer's section entries are merged key by key (the flags' --report_to does not drop the file's optim);
    a Hugging Face spelling on the command line wins over our spelling in the file (--bf16 over mixed_precision)."""
    path = tmp_path / "run.yaml"
    path.write_text("task: rte\nmixed_precision: 'no'\ntraining_args: {optim: adafactor}\nmodel: {alpha: 0.2}\n")
    config = _config("--config", str(path), "--bf16", "--report_to", "none", "--alpha", "0.4")
    assert config.mixed_precision == "bf16"
    assert config.training_args == {"optim": "adafactor", "report_to": ["none"]}
    assert config.model == {"alpha": 0.4}


def test_the_task_is_built_once_and_the_defaults_are_decided_once(monkeypatch):
    from syntaxformer import tasks

    built = []
    real = tasks.get_task

    def counting(name, **options):
        built.append(name)
        return real(name, **options)

    monkeypatch.setattr(tasks, "get_task", counting)
    config = config_from_args(_parse("--task", "squad2", "--doc_stride", "64"))
    assert built == ["squad2"]
    task = config.build_task()
    assert built == ["squad2"] and task.options()["doc_stride"] == 64
    assert config.build_task() is not task  # handed out once; a second call builds a fresh task
    final = config.for_task(task)
    assert final.max_length == 384 and final.for_task(task) is final  # nothing left to decide the second time


def test_every_training_argument_has_a_flag_under_its_hf_spelling():
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    flags = set(parser._option_string_actions)
    missing = sorted(n for n in training_argument_names() if f"--{n}" not in flags)
    assert missing == []
    for name in ("warmup_ratio", "max_seq_length", "doc_stride", "max_answer_length", "validation_file", "task_name"):
        assert f"--{name}" in flags and f"--{name.replace('_', '-')}" in flags


def test_hf_flags_land_where_they_belong(tmp_path):
    """The Hugging Face training flags of the example scripts parse and reach the run config: our own fields, the
    task's options, the model's options, or TrainingArguments as they are."""
    args = _parse(
        "--task_name", "squad2", "--warmup_ratio", "0.06", "--fp16", "--eval_strategy", "steps", "--eval_steps", "50",
        "--save_strategy", "no", "--logging_steps", "10", "--report_to", "none", "--lr_scheduler_type", "cosine",
        "--doc_stride", "96", "--max_answer_length", "20", "--push_to_hub", "false", "--num_train_epochs", "1",
        "--per_device_train_batch_size", "4", "--max_seq_length", "256", "--output_dir", str(tmp_path / "r"),
        "--optim", "adamw_torch", "--label_smoothing_factor", "0.1", "--alpha", "0.3", "--do_train",
    )  # fmt: skip
    config = config_from_args(args)
    assert config.task == "squad2"
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
    from syntaxformer.training.recipe import training_arguments

    hf = training_arguments(config.replace(mixed_precision="no"), str(tmp_path / "r"))
    assert (hf.optim, hf.report_to, hf.push_to_hub, hf.label_smoothing_factor) == ("adamw_torch", [], False, 0.1)
    assert hf.lr_scheduler_type == "cosine" and hf.warmup_steps == 0.06


def test_unset_flags_are_absent_so_defaults_stay_defaults():
    """No hand-kept list of names: what the user did not type is not in the options, whatever its default."""
    args = _parse("--task", "rte", "--epochs", "2", "--no-progress", "--overwrite-output-dir")
    assert explicit_options(args) == {
        "task": "rte",
        "num_train_epochs": 2.0,
        "disable_tqdm": True,
        "overwrite_output_dir": True,
    }
    assert explicit_options(_parse()) == {}
    eval_flags = _parse("--max-length", "64", "--parser-noise", "0.4", training=False)
    assert explicit_options(eval_flags) == {"max_length": 64, "parser_noise": 0.4}
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
        (["--task_name", "cola"], "task", "cola"),
    ],
)  # fmt: skip
def test_documented_spellings_keep_working(argv, field, value):
    config = config_from_args(_parse(*argv), {"task": "rte"})
    assert getattr(config, field) == value


def test_hf_spellings_are_checked():
    with pytest.raises(ConfigError, match="warmup_ratio=1.5 is not a fraction below 1"):
        config_from_args(_parse("--task", "rte", "--warmup_ratio", "1.5"))
    with pytest.raises(ConfigError, match="bf16 and fp16 are both true"):
        config_from_args(_parse("--task", "rte", "--bf16", "--fp16"))
    with pytest.raises(ConfigError, match="fp16=True and mixed_precision='bf16' both given"):
        RunConfig.from_dict({"task": "rte", "fp16": True, "mixed_precision": "bf16"})
    with pytest.raises(ConfigError, match="task_name='cola' and task='rte' both given"):
        config_from_args(_parse("--task", "rte", "--task_name", "cola"))
    # in a config file, too (routing is the same for every source)
    assert RunConfig.from_dict({"bf16": False, "warmup_ratio": 0.2}).mixed_precision == "no"
    assert RunConfig.from_dict({"report_to": "none"}).training_args == {"report_to": "none"}


def test_help_comes_from_the_field_metadata_in_groups_ours_first():
    """Each RunConfig field has a flag whose help is its metadata's; ``--help`` lists our groups (training among the
    first) before the Trainer's own arguments."""
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    by_dest = {a.dest: a for a in parser._actions if not a.help.startswith("= ")}  # not the switches (--no-progress)
    for f in dataclasses.fields(RunConfig):
        if f.name in ("task_options", "model", "training_args"):
            continue
        assert f.name in by_dest, f.name
        assert by_dest[f.name].help == f.metadata["help"].replace("%", "%%"), f.name
    assert "Trainer's default is 0.0" in by_dest["weight_decay"].help
    text = parser.format_help()
    where = {t: text.find(f"\n{t}:\n") for t in GROUPS}
    assert sorted(where, key=where.__getitem__) == list(GROUPS)  # ours first, the Trainer's last
    assert where["training"] < text.index("\n  --learning-rate") < where["model"]


def _encoder_folder(path, hidden: int):
    """A folder with only an encoder's config.json (what the learning-rate default reads)."""
    from transformers import BertConfig

    BertConfig(
        hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2, intermediate_size=4 * hidden
    ).save_pretrained(path)
    return str(path)


def test_small_encoder_learning_rate_default_only_when_nobody_chose_one(tmp_path):
    from syntaxformer.training.config import SMALL_ENCODER_LEARNING_RATE, small_encoder_note
    from syntaxformer.training.recipe import TrainRecipe

    small = _encoder_folder(tmp_path / "small", 384)
    large = _encoder_folder(tmp_path / "large", 768)
    assert RunConfig.learning_rate == 2e-5 and SMALL_ENCODER_LEARNING_RATE == 1e-4
    assert _config("--task", "cola", "--model", small).learning_rate == 1e-4
    assert _config("--task", "cola", "--model", large).learning_rate == 2e-5  # the library default
    assert _config("--task", "cola", "--model", small, "--learning-rate", "2e-5").learning_rate == 2e-5  # the user's
    assert _config("--task", "squad2", "--model", small).learning_rate == 3e-5  # the task's own default
    assert _config("--task", "cola", "--model", small, presets={"learning_rate": 1e-3}).learning_rate == 1e-3
    config_file = tmp_path / "run.yaml"
    config_file.write_text("learning_rate: 5.0e-5\n", encoding="utf-8")
    assert _config("--task", "cola", "--model", small, "--config", str(config_file)).learning_rate == 5e-5
    # a config built directly: a learning rate still at the library default counts as not chosen
    direct = RunConfig(task="cola", model_name_or_path=small)
    assert direct.for_task(direct.build_task()).learning_rate == 1e-4
    chosen = RunConfig(task="cola", model_name_or_path=small, learning_rate=3e-4)
    assert chosen.for_task(chosen.build_task()).learning_rate == 3e-4
    # the recipe decides it once, before the TrainingArguments, and announces it when training starts
    recipe = TrainRecipe(RunConfig(task="cola", model_name_or_path=small, output_dir=str(tmp_path / "run")))
    recipe.resolve()
    assert recipe.lr_note and recipe.args.learning_rate == recipe.config.learning_rate == 1e-4
    assert "default for small encoders (hidden size 384" in small_encoder_note(384)
