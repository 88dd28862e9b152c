"""The registry of extension points (systems, tasks, annotators), the plain-encoder system, model types that name
their system, and models saved before these changes (tests/fixtures/saved_before_registry, saved with the code of
the commit before them) loading as they did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from syntaxformer import registry
from syntaxformer.errors import ConfigError, SyntaxformerError

REPO = Path(__file__).resolve().parents[1]
SAVED = REPO / "tests" / "fixtures" / "saved_before_registry"


def _run(code: str) -> dict:
    env = {"PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_builtin_systems_declare_their_parts_in_one_place():
    assert registry.SYSTEMS.names() == ["plain", "sgnet", "syntax_bert"]
    for name in registry.SYSTEMS.names():
        spec = registry.system(name)
        assert set(spec.models) == set(registry.HEADS)
        assert spec.config_class().model_type == spec.saved_model_type
        for head in registry.HEADS:
            cls = spec.model_class(head)
            assert (
                cls.config_class is spec.config_class()
                and cls.base_model_prefix == spec.backbone_class().base_model_prefix
            )
    assert dict(registry.model_types()) == {
        "plain_encoder": "plain",
        "sgnet": "sgnet",
        "syntaxformer": "sgnet",
        "syntax_bert": "syntax_bert",
        "syntaxformer-syntax-bert": "syntax_bert",
    }
    with pytest.raises(ConfigError, match="unknown system 'lstm'; known systems: plain, sgnet, syntax_bert"):
        registry.system("lstm")


def test_import_syntaxformer_stays_light_and_the_auto_classes_are_registered_through_public_functions():
    """`import syntaxformer` imports neither torch nor transformers; after it, transformers' config registry gets
    stand-ins through `AutoConfig.register` (its private `_extra_content` stays a plain dict), and a saved model
    of each system loads through the Auto classes."""
    out = _run(
        """
import json, sys
import syntaxformer
light = not any(m in sys.modules for m in ("torch", "transformers"))
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
pending = sorted(t for t in ("sgnet", "syntax_bert", "plain_encoder", "syntaxformer", "syntaxformer-syntax-bert",
                             "syntax_infused_translation") if t in CONFIG_MAPPING)
print(json.dumps({"light": light, "pending": pending, "extra": type(CONFIG_MAPPING._extra_content).__name__,
                  "models_loaded": "syntaxformer.modeling" in sys.modules}))
"""
    )
    assert out == {
        "light": True,
        "pending": sorted(
            [
                "sgnet",
                "syntax_bert",
                "plain_encoder",
                "syntaxformer",
                "syntaxformer-syntax-bert",
                "syntax_infused_translation",
            ]
        ),
        "extra": "dict",
        "models_loaded": False,
    }


def test_models_saved_before_the_rename_still_load_with_their_weights():
    """SG-Net with its layer off (the old baseline, model_type "syntaxformer") and Syntax-BERT (model_type
    "syntaxformer-syntax-bert"), saved by the previous code, load through the Auto classes and the runner's own
    path with every weight, and are saved again under the new model types."""
    out = _run(
        f"""
import json
import syntaxformer
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForSequenceClassification
from syntaxformer.training.run import saved_system, system_kind
res = {{}}
for name in ("baseline_sgnet_layer_off", "syntax_bert"):
    path = "{SAVED}/" + name
    config = AutoConfig.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path)
    weights = load_file(path + "/model.safetensors")
    state = model.state_dict()
    res[name] = {{
        "config": type(config).__name__, "model_type": config.model_type, "model": type(model).__name__,
        "weights": sorted(weights) == sorted(state) and all(bool((state[k] == v).all()) for k, v in weights.items()),
        "system": saved_system(path), "label": system_kind(saved_system(path), model),
        "saved_as": config.to_dict()["model_type"],
    }}
print(json.dumps(res))
"""
    )
    assert out == {
        "baseline_sgnet_layer_off": {
            "config": "SGNetConfig",
            "model_type": "sgnet",
            "model": "SGNetForSequenceClassification",
            "weights": True,
            "system": "sgnet",
            "label": "baseline",
            "saved_as": "sgnet",
        },
        "syntax_bert": {
            "config": "SyntaxBertConfig",
            "model_type": "syntax_bert",
            "model": "SyntaxBertForSequenceClassification",
            "weights": True,
            "system": "syntax_bert",
            "label": "Syntax-BERT",
            "saved_as": "syntax_bert",
        },
    }


def test_the_plain_system_is_sgnet_without_its_layer():
    """The plain encoder under the same head gives the same logits as the old baseline (SG-Net with its layer off)
    with the same weights, for both poolings; and reads no parse with first-token pooling."""
    from syntaxformer.modeling import PlainEncoderConfig, SGNetConfig, model_class
    from tests.modeling.test_heads import head_batch, tiny_bert

    for pooling in ("mean", "cls"):
        torch.manual_seed(0)
        old = model_class("sgnet", "sequence_classification")(
            SGNetConfig(encoder=tiny_bert(), use_sg_layer=False, pooling=pooling, num_labels=3)
        ).eval()
        new = model_class("plain", "sequence_classification")(
            PlainEncoderConfig(encoder=tiny_bert(), pooling=pooling, num_labels=3)
        ).eval()
        renamed = {k.replace("sgnet.", "plain.", 1): v for k, v in old.state_dict().items()}
        new.load_state_dict(renamed)
        batch = {k: v for k, v in head_batch("sequence_classification").items() if k != "labels"}
        with torch.no_grad():
            assert torch.allclose(old(**batch).logits, new(**batch).logits, atol=1e-6)
        assert new.config.syntax_inputs == old.config.syntax_inputs == (("syntax_tree",) if pooling == "mean" else ())
    assert sum(p.numel() for p in new.parameters()) == sum(p.numel() for p in old.parameters())


def test_the_plain_system_trains_as_sgnet_without_its_layer(tmp_path):
    """Built on a pretrained encoder, the two draw the same dropout masks in training (the encoder keeps the
    attention implementation it was loaded with in both), so a run reproduces the old baseline's numbers."""
    from syntaxformer.modeling import model_class
    from tests.conftest import write_tiny_bert
    from tests.modeling.test_heads import head_batch

    encoder = write_tiny_bert(tmp_path / "enc")
    torch.manual_seed(0)
    old = model_class("sgnet", "sequence_classification").from_encoder_pretrained(
        encoder, use_sg_layer=False, num_labels=3
    )
    torch.manual_seed(0)
    new = model_class("plain", "sequence_classification").from_encoder_pretrained(encoder, num_labels=3)
    assert new.plain.encoder.config._attn_implementation == old.sgnet.encoder.config._attn_implementation
    batch = head_batch("sequence_classification")
    outs = []
    for model in (old.train(), new.train()):
        torch.manual_seed(7)
        outs.append(model(**batch))
    assert torch.equal(outs[0].logits, outs[1].logits) and outs[0].loss.item() == outs[1].loss.item()


def test_compare_baseline_is_the_plain_system_and_registered_systems_are_known_by_name():
    from syntaxformer.training.comparison import resolve_systems
    from syntaxformer.training.config import RunConfig

    config = RunConfig(task="sst2", model={"pooling": "cls"})
    assert resolve_systems(config, "baseline,sgnet,plain") == [
        ("baseline", {"model_type": "plain", "model": {"pooling": "cls"}}),
        ("sgnet", {"model_type": "sgnet", "model": {"pooling": "cls", "use_sg_layer": True}}),
        ("plain", {"model_type": "plain", "model": {"pooling": "cls"}}),
    ]
    with pytest.raises(ConfigError, match="unknown system 'lstm'; known systems: baseline, sgnet, .*plain"):
        resolve_systems(config, "lstm")


def test_run_config_and_cli_choices_read_the_registry():
    from syntaxformer.cli import ArgumentParser, UsageError
    from syntaxformer.commands import train as train_command
    from syntaxformer.training.config import RunConfig

    assert RunConfig(task="sst2", model_type="plain", model={"pooling": "cls"}).model_type == "plain"
    with pytest.raises(ConfigError, match="model_type='lstm' is not valid; choose one of plain, sgnet, syntax_bert"):
        RunConfig(task="sst2", model_type="lstm")
    with pytest.raises(ConfigError, match="model.use_sg_layer is not an option of PlainEncoderConfig"):
        RunConfig(task="sst2", model_type="plain", model={"use_sg_layer": False})
    parser = ArgumentParser(prog="syntaxformer train")
    train_command.add_arguments(parser)
    assert parser.parse_args(["--model-type", "plain"]).model_type == "plain"
    with pytest.raises(UsageError, match="invalid choice: 'lstm'"):
        parser.parse_args(["--model-type", "lstm"])


def scheme_factory(arg, **options):
    from syntaxformer.data.annotators.preparsed import PreparsedAnnotator

    return PreparsedAnnotator(arg, format="conllu")


def test_an_annotator_registered_in_code_is_recorded_with_its_module():
    """A scheme registered in code (not an entry point) is recorded with the module that registered it, which
    `evaluate` imports again in a fresh process (tests/training/test_run.py does so for a task)."""
    from syntaxformer.data.annotators import annotator_origin, register_annotator

    register_annotator("here", scheme_factory, overwrite=True)
    assert annotator_origin("here:x.conllu") == {
        "name": "here",
        "module": __name__,
        "entry_point": None,
        "spec": "here:x.conllu",
    }
    assert annotator_origin("spacy:en_core_web_sm")["module"] == "syntaxformer.data.annotators.factory"
    assert annotator_origin(None) is None and annotator_origin("no-such-scheme:x") is None


def test_registry_lookups_and_errors():
    reg = registry.Registry("widget", "syntaxformer.test-widgets", {"a": "json:dumps"})
    assert reg.names() == ["a"] and reg.get("a") is json.dumps and "a" in reg and "b" not in reg
    reg.register("b", len)
    with pytest.raises(ConfigError, match="a widget named 'b' is already registered"):
        reg.register("b", max)
    assert reg.origin("b") == {"name": "b", "module": "builtins", "entry_point": None}
    with pytest.raises(ConfigError, match="unknown widget 'c'; known widgets: a, b"):
        reg.get("c")
    with pytest.raises(SyntaxformerError, match="no attribute 'nope'"):
        registry.resolve("json:nope")


def test_a_run_record_written_before_the_registry_still_loads(tmp_path):
    """run.json as `train` wrote it before the system and annotator were recorded (the baseline as SG-Net without
    its layer): the run config and the task come back as they were."""
    from syntaxformer.training.run import load_run

    old = {
        "task": {"name": "sst2", "options": {}, "module": "syntaxformer.tasks.glue"},
        "config": {"task": "sst2", "model_type": "sgnet", "model": {"use_sg_layer": False}, "max_length": 64},
    }
    (tmp_path / "run.json").write_text(json.dumps(old))
    config, task = load_run(tmp_path)
    assert (config.model_type, config.model, task.name) == ("sgnet", {"use_sg_layer": False}, "sst2")
