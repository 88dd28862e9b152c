"""``train`` as a recipe: each stage run on its own, on real (tiny) data and a real (tiny, random) model."""

from __future__ import annotations

import json

import pytest

from syntaxformer.errors import ConfigError, DataError
from syntaxformer.training.config import RunConfig
from syntaxformer.training.recipe import TrainRecipe
from tests.conftest import write_tiny_bert

ROWS = [("a fine film", "pos"), ("a dull film", "neg"), ("great acting", "pos"), ("weak plot", "neg")] * 3


@pytest.fixture
def own_data(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")
    path = tmp_path / "train.csv"
    path.write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in ROWS), encoding="utf-8")
    return path


def test_resolve_stage_fills_task_defaults_and_training_arguments_without_touching_the_folder(tmp_path):
    recipe = TrainRecipe(RunConfig(task="squad2", seed=3, output_dir=str(tmp_path / "run")))
    recipe.resolve()
    assert recipe.task.name == "squad2"
    assert recipe.config.max_length == 384 and recipe.config.seed == 3  # SQuAD's default; the given seed kept
    assert recipe.args.seed == 3 and recipe.args.output_dir == str(tmp_path / "run")
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigError, match="translation does not use max_train_samples=5"):
        TrainRecipe(RunConfig(task="translation", max_train_samples=5, output_dir=str(tmp_path / "t"))).resolve()


def test_check_folder_stage_refuses_a_finished_run_and_changes_nothing(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "metrics.json").write_text("{}")
    recipe = TrainRecipe(RunConfig(task="sst2", output_dir=str(folder)))
    recipe.resolve()
    with pytest.raises(DataError, match="already holds a finished run"):
        recipe.check_folder()
    assert sorted(p.name for p in folder.iterdir()) == ["metrics.json"]


def test_prepare_data_stage_reads_the_splits_and_records_the_fingerprint(own_data, tmp_path):
    config = RunConfig(
        task="custom",
        train_file=str(own_data),
        task_options={"validation_fraction": 0.25},
        output_dir=str(tmp_path / "run"),
    )
    recipe = TrainRecipe(config)
    recipe.resolve()
    recipe.prepare_data()
    assert len(recipe.train_data) + len(recipe.dev_data) == len(ROWS)
    assert len(recipe.dev_data) == 3
    fingerprint = json.loads((tmp_path / "run" / "run_fingerprint.json").read_text())
    assert fingerprint  # the options and training data a resume must find unchanged
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_model_and_features_stages_on_a_tiny_encoder(own_data, tmp_path):
    model = write_tiny_bert(tmp_path / "tiny")
    config = RunConfig(
        task="custom",
        train_file=str(own_data),
        dev_file=str(own_data),
        model_name_or_path=model,
        model={"use_sg_layer": False},
        max_length=16,
        output_dir=str(tmp_path / "run"),
    )
    recipe = TrainRecipe(config)
    recipe.resolve()
    recipe.prepare_data()
    recipe.build_model()
    assert recipe.model.config.num_labels == 2 and recipe.context.syntax_inputs == recipe.model.config.syntax_inputs
    recipe.featurize()
    assert len(recipe.train_ds) == len(recipe.dev_ds) == len(ROWS)
    assert max(len(recipe.train_ds[i]["input_ids"]) for i in range(len(ROWS))) <= 16
