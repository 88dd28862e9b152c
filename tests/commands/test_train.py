"""``syntaxformer train``'s command-line habits: a task or one's own data is required, Hugging Face spellings,
column options only for one's own data, options a task ignores are refused, misspelt options get a hint."""

from __future__ import annotations

import argparse

import pytest

from syntaxformer.cli import main
from syntaxformer.commands.train import add_arguments, config_from_args, given_options, task_or_data


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_train_without_task_or_data_says_what_to_give(capsys):
    assert main(["train", "--output-dir", "x"]) == 1
    err = capsys.readouterr().err
    assert "no task given" in err and "--task NAME" in err and "--train-file FILE" in err and err.count("\n") == 1


def test_train_file_without_task_is_custom_data_with_absolute_paths(tmp_path, monkeypatch):
    (tmp_path / "my.csv").write_text("text,label\na,x\nb,y\n")
    monkeypatch.chdir(tmp_path)
    args = _args(
        "--train_file",
        "my.csv",
        "--validation_file",
        "my.csv",
        "--text_column",
        "text",
        "--label-column",
        "label",
        "--model_name_or_path",
        "m",
        "--per_device_eval_batch_size",
        "4",
        "--gradient_accumulation_steps",
        "2",
        "--warmup_steps",
        "5",
        "--overwrite_output_dir",
    )
    assert task_or_data(given_options(args)) == {"task": "custom"}
    args.task = "custom"
    config = config_from_args(args)
    assert config.task == "custom" and config.train_file == config.dev_file == str(tmp_path / "my.csv")
    assert config.task_options == {"text_column": "text", "label_column": "label"}
    assert (
        config.model_name_or_path,
        config.per_device_eval_batch_size,
        config.gradient_accumulation_steps,
        config.warmup_steps,
        config.overwrite_output_dir,
    ) == ("m", 4, 2, 5.0, True)


def test_train_column_options_only_for_custom_data(capsys):
    assert main(["train", "--task", "sst2", "--text-column", "x", "--output-dir", "x"]) == 1
    err = capsys.readouterr().err
    assert "--text-column do(es) not apply to --task sst2" in err and "--task custom" in err


def test_train_refuses_options_the_task_ignores(capsys):
    """Translation trains from scratch for max_steps updates: --epochs (even at its default value 3),
    --max-train-samples, --model and --max-length would be dropped, so they are refused with what to use."""
    for flags, hint in (
        (["--epochs", "3"], "use --max-steps"),
        (["--max-train-samples", "9"], "fraction=F"),
        (["--model", "bert-base-cased"], "trained from scratch"),
        (["--max-length", "64"], "max_source_length"),
    ):
        assert main(["train", "--task", "translation", *flags, "--output-dir", "x"]) == 1
        err = capsys.readouterr().err
        assert "translation does not use" in err and hint in err, err


def test_train_unknown_option_gets_did_you_mean(capsys):
    assert main(["train", "--task", "sst2", "--lerning-rate", "1e-4", "--max-stps", "3"]) == 2
    err = capsys.readouterr().err
    assert "--lerning-rate -> did you mean --learning-rate?" in err and "did you mean --max-steps?" in err


def test_train_python_api_rejects_a_changed_ignored_option(tmp_path):
    from syntaxformer.errors import ConfigError
    from syntaxformer.training.config import RunConfig
    from syntaxformer.training.run import train

    with pytest.raises(ConfigError, match="translation does not use max_train_samples=5"):
        train(RunConfig(task="translation", max_train_samples=5, output_dir=str(tmp_path / "run")))


def test_train_own_data_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "t.csv").write_text("review,sentiment\ngood,pos\nbad,neg\n")
    assert main(["train", "--train-file", str(tmp_path / "empty.csv"), "--output-dir", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty.csv holds no rows (empty file)" in err
    assert (
        main(
            [
                "train",
                "--train-file",
                str(tmp_path / "t.csv"),
                "--text-column",
                "text",
                "--label-column",
                "sentiment",
                "--output-dir",
                str(tmp_path / "r"),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "has no column 'text' (--text-column); its columns are ['review', 'sentiment']" in err


def test_train_records_task_option_files_as_absolute_paths(tmp_path, monkeypatch):
    """Parallel text files given as task options (--set train_source=train.en) are recorded absolute."""
    (tmp_path / "train.en").write_text("a\n")
    (tmp_path / "dev.de").write_text("b\n")
    monkeypatch.chdir(tmp_path)
    args = _args(
        "--task", "translation", "--set", "train_source=train.en", "--set", "train_target=dev.de",
        "--set", "valid_source=train.en", "--set", "valid_target=dev.de",
        "--set", "eval_sets={dev: [train.en, dev.de]}",
        "--set", "arm=syntax", "--set", "tokenizer_dir=not-a-file", "--set", "fraction=0.5",
    )  # fmt: skip
    options = config_from_args(args).task_options
    assert options["train_source"] == str(tmp_path / "train.en") and options["tokenizer_dir"] == "not-a-file"
    assert options["eval_sets"] == {"dev": [str(tmp_path / "train.en"), str(tmp_path / "dev.de")]}
    assert (options["arm"], options["fraction"]) == ("syntax", 0.5)


def test_train_announces_the_default_output_dir(monkeypatch, capsys):
    """Without --output-dir (flag or config file) the run's folder is said in one warning line before training."""
    import syntaxformer.training.run as run_module

    seen = []

    def stop(config):
        seen.append(config.output_dir)
        raise KeyboardInterrupt  # stop before any training: only the announcement is under test

    monkeypatch.setattr(run_module, "train", stop)
    assert main(["train", "--task", "sst2"]) == 130
    assert seen == ["runs/experiment"]
    assert "no --output-dir given: the run goes to runs/experiment" in capsys.readouterr().err
    seen.clear()
    assert main(["train", "--task", "sst2", "--output-dir", "runs/x"]) == 130
    assert seen == ["runs/x"] and "no --output-dir" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--report_to", "wandb"],
            "--report_to wandb needs the wandb package, which is not installed: pip install wandb",
        ),
        (["--report_to", "nonsense"], "report_to='nonsense' is not a reporting integration"),
        (["--push_to_hub"], "cannot push to the hub repository run: HF_HUB_OFFLINE is set"),
        (
            ["--push_to_hub", "--hub_model_id", "me/x"],
            "cannot push to the hub repository me/x: no Hugging Face access token",
        ),
        (["--seed", "4294967296"], "seed=4294967296 is not valid; it must be at most 2**32 - 1"),
        (["--fp16"], "mixed_precision=fp16 (--fp16) needs a GPU"),
    ],
)
def test_train_refuses_trainer_options_before_any_data_is_read(tmp_path, monkeypatch, capsys, flags, message):
    """What the Trainer would refuse only once it starts (a traceback after the data was featurized and the model
    built, with run_fingerprint.json left behind) is one line before the first stage that reads anything."""
    import importlib.util

    import huggingface_hub
    import torch

    from syntaxformer.training.recipe import TrainRecipe

    if "wandb" in flags and importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here")
    if "--fp16" in flags and torch.cuda.is_available():
        pytest.skip("a GPU trains in fp16")
    if "--hub_model_id" in flags:  # online, with no token stored
        monkeypatch.setenv("HF_HUB_OFFLINE", "0")
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    elif "--push_to_hub" in flags:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_data(self):
        raise AssertionError("the data was read before the options were refused")

    monkeypatch.setattr(TrainRecipe, "prepare_data", no_data)
    out = tmp_path / "run"
    assert main(["train", "--task", "sst2", "--output-dir", str(out), *flags]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()  # nothing left behind (no run_fingerprint.json)


def test_train_takes_run_glue_task_name(monkeypatch):
    """run_glue.py's --task_name is our --task (it used to be refused with a hint towards --dataset_name)."""
    import syntaxformer.training.run as run_module

    seen = []
    monkeypatch.setattr(
        run_module, "train", lambda config: seen.append(config.task) or (_ for _ in ()).throw(KeyboardInterrupt)
    )
    assert main(["train", "--task_name", "cola", "--output-dir", "runs/x"]) == 130
    assert seen == ["cola"]
