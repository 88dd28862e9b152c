"""RunConfig: files, overrides, precedence, the routing of model options into the model section, validation by
the model's own config class, and the task options."""

from __future__ import annotations

import json

import pytest

from syntaxformer.errors import SyntaxformerError
from syntaxformer.training.config import RunConfig, apply_overrides, load_config, parse_override


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
    yaml_file.write_text(
        "task: rte\neval_strategy: no\nalpha: 0.3\nlearning_rate: 1.0e-4\nmodel_kwargs:\n  sg_num_heads: 4\n"
    )
    c = load_config(
        yaml_file,
        ["alpha=0.7", "model_kwargs.sg_dropout=0.2"],
        defaults={"max_length": 64, "alpha": 0.1},
        seed=7,
        pooling=None,
    )
    assert (c.task, c.learning_rate, c.max_length, c.seed) == ("rte", 1e-4, 64, 7)
    assert c.model == {"sg_num_heads": 4, "sg_dropout": 0.2, "alpha": 0.7} and c.eval_strategy == "no"
    json_file = tmp_path / "c.json"
    json_file.write_text(json.dumps({"task": "cola", "num_train_epochs": 2}))
    c2 = load_config(json_file, ["num_train_epochs=1"])
    assert c2.task == "cola" and c2.num_train_epochs == 1.0 and isinstance(c2.num_train_epochs, float)
    c2.save(tmp_path / "config.json")  # round trip
    assert RunConfig.from_dict(json.loads((tmp_path / "config.json").read_text())) == c2


def test_config_routes_model_options_and_shorthands():
    """The command-line habits of the old config still work: top-level model options, model_kwargs.*,
    syntax_bert_options.*, trees / use_syntax, sst_phrases."""
    c = load_config(None, ["use_sg_layer=false", "pooling=mean", "model_kwargs.pos_embeddings=upos"])
    assert c.model == {"use_sg_layer": False, "pooling": "mean", "pos_embeddings": "upos"}
    sb = load_config(
        None, ["model_type=syntax_bert", "syntax_bert_options.random_masks=true", "trees=dependency", "lisa_layer=1"]
    )
    assert sb.model == {"random_masks": True, "use_dependency": True, "use_constituency": False, "lisa_layer": 1}
    off = RunConfig.from_dict(
        {"model_type": "syntax_bert", "use_syntax": False, "syntax_bert_options": {"syntax_layers": [0]}}
    )
    assert off.model == {"syntax_layers": [], "aggregation": "mean"}  # no sub-networks, no topical query
    kept = RunConfig.from_dict({"model_type": "syntax_bert", "use_syntax": False, "model": {"aggregation": "sum"}})
    assert kept.model["aggregation"] == "sum"
    sst = RunConfig.from_dict({"task": "sst5", "sst_phrases": True})
    assert sst.task_options == {"phrases": True} and sst.build_task().phrases
    assert RunConfig.from_dict({"task": "sst5", "sst_phrases": False}).task_options == {}
    assert RunConfig.from_dict(sb.to_dict()) == sb  # the saved form is already routed


def test_config_model_section_is_validated_by_the_model_config():
    with pytest.raises(SyntaxformerError, match=r"model.alpah is not an option of .*known options"):
        RunConfig(model={"alpah": 0.3})
    with pytest.raises(SyntaxformerError, match="invalid model options for model_type=sgnet"):
        RunConfig(model={"pooling": "max"})
    with pytest.raises(SyntaxformerError, match="invalid model options for model_type=sgnet"):
        RunConfig(model={"aggregation": "topical"})  # a Syntax-BERT value
    with pytest.raises(SyntaxformerError, match="model.num_labels is set by the task"):
        RunConfig(model={"num_labels": 3})
    with pytest.raises(SyntaxformerError, match="model.random_masks is not an option of"):
        RunConfig(model={"random_masks": True})  # Syntax-BERT option on SG-Net
    assert RunConfig(model_type="syntax_bert", model={"random_masks": True, "aggregation": "sum"}).model


def test_config_errors_name_the_option(tmp_path):
    with pytest.raises(SyntaxformerError, match=r"unknown config option\(s\) \['learning_rat'\]"):
        RunConfig.from_dict({"learning_rat": 1e-4})
    with pytest.raises(SyntaxformerError, match="parser_noise=1.5"):
        RunConfig(parser_noise=1.5)
    with pytest.raises(SyntaxformerError, match="must be a finite number"):
        RunConfig.from_dict({"learning_rate": "fast"})
    with pytest.raises(SyntaxformerError, match="unknown task 'mnli'"):
        RunConfig(task="mnli")
    with pytest.raises(SyntaxformerError, match="'rte' takes no options"):
        RunConfig(task="rte", task_options={"phrases": True})
    with pytest.raises(SyntaxformerError, match="constituency_fallback"):
        RunConfig(constituency_fallback="parser")
    with pytest.raises(SyntaxformerError, match="trees='all'"):
        RunConfig.from_dict({"trees": "all"})
    with pytest.raises(SyntaxformerError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SyntaxformerError, match="not valid JSON"):
        load_config(bad)
    with pytest.raises(SyntaxformerError, match="not a nested mapping"):
        apply_overrides({"alpha": 0.5}, ["alpha.x=1"])


def test_config_values_are_typed_by_the_field_annotations():
    """Booleans: YAML 1.1 words read as booleans everywhere (run options, model options, shorthands), never kept as
    truthy strings; other values rejected naming the key. Whole numbers, finite floats, choices."""
    for word, value in (("no", False), ("off", False), ("yes", True), ("on", True), ("False", False), ("1", True)):
        c = load_config(
            None,
            [
                f"use_sg_layer={word}",
                f"save_model={word}",
                f"group_by_length={word}",
                f"overwrite_output_dir={word}",
                f"parse_cache={word}",
            ],
        )
        assert c.model["use_sg_layer"] is value and c.save_model is value and c.group_by_length is value
        assert c.overwrite_output_dir is value and c.parse_cache is value
    assert load_config(None, ["model_type=syntax_bert", "use_syntax=no"]).model["syntax_layers"] == []
    assert load_config(None, ["model_type=syntax_bert", "use_syntax=yes"]).model == {}
    assert load_config(None, ["task=sst5", "sst_phrases=no"]).build_task().phrases is False
    assert load_config(None, ["model_type=syntax_bert", "model.random_masks=off"]).model == {"random_masks": False}
    assert load_config(None, ["resume=no"]).resume is False and load_config(None, ["resume=runs/x"]).resume == "runs/x"
    assert load_config(None, ["max_length=64.0", "max_steps=1e3"]).max_length == 64
    assert load_config(None, ["eval_strategy=no"]).eval_strategy == "no"
    assert RunConfig.from_dict({"eval_strategy": False}).eval_strategy == "no"  # YAML 1.1 `eval_strategy: no`
    bad = {
        "use_sg_layer=maybe": "model.use_sg_layer='maybe' is not a boolean",
        "save_model=2": "save_model=2 is not a boolean",
        "sst_phrases=maybe": "sst_phrases='maybe' is not a boolean",
        "max_length=32.7": "max_length=32.7 is not valid; it must be a whole number",
        "seed=true": "seed=True is not valid",
        "learning_rate=.nan": "learning_rate=nan is not valid",
        "num_train_epochs=.inf": "num_train_epochs=inf",
        "max_train_samples=1.5": "max_train_samples=1.5",
        "mixed_precision=fp8": "mixed_precision='fp8' is not valid; choose one of",
        "syntax=gold": "syntax='gold' is not valid",
    }
    for override, message in bad.items():
        with pytest.raises(SyntaxformerError, match=message.replace("(", r"\(").replace(".", r"\.")):
            load_config(None, ["task=sst5", override])


def test_config_values_are_bounded():
    bad = {
        "num_train_epochs": -1,
        "per_device_train_batch_size": 0,
        "per_device_eval_batch_size": 0,
        "gradient_accumulation_steps": 0,
        "learning_rate": -1,
        "new_params_lr": 0,
        "seed": -1,
        "logging_steps": 0,
        "save_steps": 0,
        "eval_steps": 0,
        "save_total_limit": 0,
        "warmup_steps": -1,
        "weight_decay": -0.1,
        "max_grad_norm": -1,
        "dataloader_num_workers": -1,
        "max_length": 4,
        "max_steps": -2,
    }
    for key, value in bad.items():
        with pytest.raises(SyntaxformerError, match=f"^{key}="):
            RunConfig.from_dict({key: value})
    with pytest.raises(SyntaxformerError, match="num_train_epochs=0.0 trains nothing"):
        RunConfig(num_train_epochs=0)
    assert RunConfig(num_train_epochs=0, max_steps=5).max_steps == 5
    assert RunConfig(new_params_lr=None, save_steps=None, save_total_limit=None).new_params_lr is None


def test_task_defaults_fill_only_the_options_not_given():
    """SQuAD's training defaults (max_length 384, lr 3e-5) fill what the user did not give; an explicit value equal
    to the global default (max_length 128) is kept, not replaced (it used to be, silently)."""
    config = RunConfig.from_dict({"task": "squad2", "max_length": 128})
    task = config.build_task()
    resolved = config.for_task(task)
    assert resolved.max_length == 128 and resolved.learning_rate == 3e-5
    assert config.replace(seed=3).for_task(task).max_length == 128
    assert RunConfig.from_dict({"task": "squad2"}).for_task(task).max_length == 384
    # constructed directly: no record of what was given, values at the global default count as not given
    assert RunConfig(task="squad2", max_length=128).for_task(task).max_length == 384
    assert resolved.for_task(task) is resolved  # decided once: a second pass changes nothing
    assert "given" not in config.to_dict()
