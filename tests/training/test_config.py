"""ExperimentConfig: files, overrides, precedence, validation."""

from __future__ import annotations

import json

import pytest

from syntaxformer.errors import SyntaxformerError
from syntaxformer.training.config import ExperimentConfig, apply_overrides, load_config, parse_override


def test_config_override_values_are_typed():
    assert parse_override("learning_rate=3e-5") == (["learning_rate"], 3e-5)
    assert parse_override("use_sg_layer=false") == (["use_sg_layer"], False)
    assert parse_override("max_train_samples=null") == (["max_train_samples"], None)
    assert parse_override("training_args.optim=adamw_torch") == (["training_args", "optim"], "adamw_torch")
    assert parse_override("parser=en_core_web_sm") == (["parser"], "en_core_web_sm")
    assert parse_override("save_strategy=no") == (["save_strategy"], "no")  # not YAML 1.1's False
    with pytest.raises(SyntaxformerError, match="key=value"):
        parse_override("alpha")


def test_config_yaml_json_precedence(tmp_path):
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("task: rte\neval_strategy: no\nalpha: 0.3\nlearning_rate: 1.0e-4\n"
                         "model_kwargs:\n  sg_num_heads: 4\n")
    c = load_config(yaml_file, ["alpha=0.7", "model_kwargs.sg_dropout=0.2"], defaults={"max_length": 64,
                    "alpha": 0.1}, seed=7, pooling=None)
    assert (c.task, c.alpha, c.learning_rate, c.max_length, c.seed, c.pooling) == ("rte", 0.7, 1e-4, 64, 7, "cls")
    assert c.model_kwargs == {"sg_num_heads": 4, "sg_dropout": 0.2} and c.eval_strategy == "no"
    json_file = tmp_path / "c.json"
    json_file.write_text(json.dumps({"task": "cola", "num_train_epochs": 2}))
    c2 = load_config(json_file, ["num_train_epochs=1"])
    assert c2.task == "cola" and c2.num_train_epochs == 1.0 and isinstance(c2.num_train_epochs, float)
    # round trip through experiment.json
    c2.save(tmp_path / "experiment.json")
    assert ExperimentConfig.from_dict(json.loads((tmp_path / "experiment.json").read_text())) == c2


def test_config_errors_name_the_option(tmp_path):
    with pytest.raises(SyntaxformerError, match=r"unknown config option\(s\) \['learning_rat'\]"):
        ExperimentConfig.from_dict({"learning_rat": 1e-4})
    with pytest.raises(SyntaxformerError, match="pooling='max'"):
        ExperimentConfig(pooling="max")
    with pytest.raises(SyntaxformerError, match="parser_noise=1.5"):
        ExperimentConfig(parser_noise=1.5)
    with pytest.raises(SyntaxformerError, match="must be a number"):
        ExperimentConfig.from_dict({"alpha": "half"})
    with pytest.raises(SyntaxformerError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SyntaxformerError, match="not valid JSON"):
        load_config(bad)
    with pytest.raises(SyntaxformerError, match="not a nested mapping"):
        apply_overrides({"alpha": 0.5}, ["alpha.x=1"])


def test_config_resume_and_overwrite_rules(tmp_path):
    from syntaxformer.training.experiment import _resume_checkpoint

    out = tmp_path / "run"
    assert _resume_checkpoint(ExperimentConfig(resume=True), str(out)) is None  # nothing yet: from scratch
    for step in (2, 4):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    assert _resume_checkpoint(ExperimentConfig(resume=True), str(out)).endswith("checkpoint-4")
    assert _resume_checkpoint(ExperimentConfig(resume=str(out / "checkpoint-2")), str(out)).endswith("checkpoint-2")
    with pytest.raises(SyntaxformerError, match="--resume to continue"):
        _resume_checkpoint(ExperimentConfig(), str(out))
    assert _resume_checkpoint(ExperimentConfig(overwrite_output_dir=True), str(out)) is None
    assert not list(out.glob("checkpoint-*"))  # a fresh start removes the old run's checkpoints
    with pytest.raises(SyntaxformerError, match="not found"):
        _resume_checkpoint(ExperimentConfig(resume=str(out / "checkpoint-9")), str(out))


def test_config_constituency_fallback_reaches_the_features():
    from syntaxformer.training.experiment import feature_options

    sb = ExperimentConfig(task="rte", model_type="syntax_bert")
    assert feature_options(sb).constituency == "from_dependency"
    assert feature_options(ExperimentConfig(task="rte", model_type="syntax_bert",
                                            constituency_fallback="none")).constituency == "given"
    assert feature_options(ExperimentConfig(task="rte", model_type="syntax_bert",
                                            trees="dependency")).constituency == "given"
    assert feature_options(ExperimentConfig(task="rte")).constituency == "given"  # SG-Net reads no con_* arrays
    with pytest.raises(SyntaxformerError, match="constituency_fallback"):
        ExperimentConfig(task="rte", model_type="syntax_bert", constituency_fallback="parser")
    with pytest.raises(SyntaxformerError, match="constituency_fallback"):
        ExperimentConfig(task="rte", constituency_fallback="none")  # a Syntax-BERT option on SG-Net
