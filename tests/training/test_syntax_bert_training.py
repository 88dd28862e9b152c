"""Syntax-BERT through the task / training stack: config options, features, parameter groups, and tiny end-to-end
runs (random 2-layer BERT, hidden 32, with the offline MiniLM tokenizer) on real SST-5 trees and GLUE SST-2."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from syntaxformer.cli import main
from syntaxformer.errors import SyntaxformerError
from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig
from syntaxformer.tasks import get_task
from syntaxformer.training import ExperimentConfig, run_experiment
from syntaxformer.training.config import SYNTAX_BERT_OPTIONS
from syntaxformer.training.experiment import (build_model, feature_options, resolve_systems,
                                              syntax_bert_model_options, system_kind)
from tests.conftest import data_path


def syntax_bert_keys(dependency: bool = True, constituency: bool = True) -> tuple[str, ...]:
    """What a Syntax-BERT model with these trees and LISA reads (its config's ``syntax_inputs``)."""
    return SyntaxBertConfig(use_dependency=dependency, use_constituency=constituency, lisa_layer=0).syntax_inputs


#: What SG-Net reads with its default options.
SGNET_KEYS = SGNetConfig().syntax_inputs

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path_factory.getbasetemp() / "sf-sb-cache"))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


def _config(tiny_model: str, out: Path, **changes) -> ExperimentConfig:
    base = dict(task="sst5", data_dir=str(data_path("sst_trees")), model_name_or_path=tiny_model,
                model_type="syntax_bert", max_train_samples=48, max_eval_samples=16, max_length=48,
                num_train_epochs=1, per_device_train_batch_size=16, per_device_eval_batch_size=16,
                learning_rate=1e-3, new_params_lr=2e-3, save_strategy="no", eval_strategy="epoch",
                logging_steps=1, disable_tqdm=True, output_dir=str(out), seed=3)
    base.update(changes)
    return ExperimentConfig(**base)


def test_config_syntax_bert_options_and_errors():
    from syntaxformer.modeling import SyntaxBertConfig

    top_level = {"use_dependency", "use_constituency", "lisa_layer", "lisa_head", "lisa_loss_weight", "pooling",
                 "encoder"}
    assert set(SYNTAX_BERT_OPTIONS) <= {f.name for f in fields(SyntaxBertConfig)}  # real field names
    assert set(SyntaxBertConfig.__annotations__) - top_level <= set(SYNTAX_BERT_OPTIONS)

    c = ExperimentConfig(model_type="syntax_bert", trees="dependency", lisa_layer=1, lisa_loss_weight=0.5,
                         syntax_bert_options={"aggregation": "sum", "random_masks": True, "parent_masks": False})
    opts = syntax_bert_model_options(c)
    assert opts["use_dependency"] and not opts["use_constituency"] and opts["lisa_layer"] == 1
    assert opts["aggregation"] == "sum" and opts["random_masks"] and opts["parent_masks"] is False
    baseline = syntax_bert_model_options(c.replace(use_syntax=False, syntax_bert_options={}))
    assert baseline["syntax_layers"] == [] and baseline["aggregation"] == "mean"

    # features: the ancestor tables of the trees used; SG-Net's keys (incl. dep_parent) without sub-networks
    assert feature_options(c).syntax_keys == syntax_bert_keys(dependency=True, constituency=False)
    assert feature_options(c.replace(trees="both")).syntax_keys == syntax_bert_keys()
    # without sub-networks: only LISA's dep_parent (none without LISA)
    assert feature_options(c.replace(use_syntax=False)).syntax_keys == ("dep_parent",)
    assert feature_options(c.replace(use_syntax=False, lisa_layer=None)).syntax_keys == ()
    assert feature_options(ExperimentConfig()).syntax_keys == SGNET_KEYS
    assert feature_options(ExperimentConfig()) == feature_options(ExperimentConfig(model_type="sgnet"))
    assert feature_options(c.replace(syntax_bert_options={"max_distance": 8})).max_distance == 8

    with pytest.raises(SyntaxformerError, match="model_type=syntax_bert"):
        ExperimentConfig(lisa_layer=2)  # a Syntax-BERT option with SG-Net
    with pytest.raises(SyntaxformerError, match="not a SyntaxBertConfig option"):
        ExperimentConfig(model_type="syntax_bert", syntax_bert_options={"alpha": 0.3})
    with pytest.raises(SyntaxformerError, match="'trees'"):
        ExperimentConfig(model_type="syntax_bert", syntax_bert_options={"use_constituency": False})
    with pytest.raises(SyntaxformerError, match="trees="):
        ExperimentConfig(model_type="syntax_bert", trees="dep")
    with pytest.raises(SyntaxformerError, match="model_type="):
        ExperimentConfig(model_type="bert")


def test_syntax_bert_model_and_new_parameter_groups(tiny_model, tmp_path):
    from transformers import TrainingArguments

    from syntaxformer.training.trainer import SyntaxTrainer, encoder_parameter_prefix, new_parameter_names

    task = get_task("sst5")
    model = build_model(_config(tiny_model, tmp_path, lisa_layer=1), task)
    assert type(model).__name__ == "SyntaxBertForSequenceClassification" and system_kind(model) == \
        "Syntax-BERT + LISA"
    assert model.config.num_labels == 5 and model.config.lisa_layer == 1
    assert encoder_parameter_prefix(model) == "syntax_bert.encoder."
    new = new_parameter_names(model)
    assert new == {"syntax_bert.topical.query", "pooler.dense.weight", "pooler.dense.bias", "classifier.weight",
                   "classifier.bias"}
    args = TrainingArguments(output_dir=str(tmp_path), learning_rate=2e-5, report_to="none", use_cpu=True)
    opt = SyntaxTrainer(model=model, args=args, new_params_lr=1e-3).create_optimizer()
    by_id = {id(p): n for n, p in model.named_parameters()}
    for group in opt.param_groups:
        names = {by_id[id(p)] for p in group["params"]}
        assert group["lr"] == (1e-3 if names <= new else 2e-5) and (names <= new or not names & new)
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))

    baseline = build_model(_config(tiny_model, tmp_path, use_syntax=False), task)
    assert system_kind(baseline) == "baseline (Syntax-BERT head)" and baseline.syntax_bert.topical is None
    with pytest.raises(SyntaxformerError, match="lisa_head"):  # the tiny encoder has 4 heads
        build_model(_config(tiny_model, tmp_path, lisa_layer=0, lisa_head=7), task)


def test_syntax_bert_lisa_end_to_end_on_sst5_trees(tiny_model, tmp_path, capsys):
    out = tmp_path / "sst5-lisa"
    metrics = run_experiment(_config(tiny_model, out, lisa_layer=1))
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["model_type"] == "Syntax-BERT + LISA" and saved["model_family"] == "syntax_bert"
    assert saved["task"] == "sst5" and saved["sizes"] == {"train": 48, "train_total": 8544, "dev": 16,
                                                          "dev_total": 1101}
    assert saved["syntax_source"] == {"constituency": "gold SST trees",
                                      "dependency": "spaCy en_core_web_sm on gold tokens"}
    assert saved["examples"] == "sentences" and set(saved["syntax_keys"]) == set(syntax_bert_keys())
    assert saved["model_options"]["lisa_layer"] == 1 and saved["model_options"]["use_constituency"]
    assert 0.0 <= saved["dev"]["accuracy"] <= 1.0 and saved["train"]["global_step"] == 3
    lisa = saved["lisa"]
    assert len(lisa["train_loss_logged"]) == 3  # logging_steps=1: one LISA loss per step, beside the total loss
    assert all(math.isfinite(x) and x > 0 for x in lisa["train_loss_logged"])
    assert math.isfinite(lisa["dev_loss"]) and saved["history"][-1]["lisa_loss"] > 0
    assert metrics["lisa"] == lisa
    # the saved model (config.json model_type "syntaxformer-syntax-bert") is scored again by `evaluate`
    assert json.loads((out / "config.json").read_text())["model_type"] == "syntaxformer-syntax-bert"
    capsys.readouterr()
    assert main(["evaluate", str(out), "--split", "dev"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["size"] == 16 and printed["scores"]["accuracy"] == pytest.approx(saved["dev"]["accuracy"])


def test_syntax_bert_cli_on_glue_without_constituency_and_compare(tiny_model, tmp_path, capsys):
    """GLUE texts have dependency trees only: with constituency_fallback=none, trees=both must still run (the
    constituency relations are empty). The default fallback is tested in tests/tasks/test_features.py."""
    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.masks.relations import relation_groups
    from syntaxformer.tasks import load_split, subsample
    from syntaxformer.tasks.features import build_features
    from syntaxformer.training.experiment import _load_tokenizer

    sst2 = str(data_path("glue", "SST-2"))
    out = tmp_path / "cli"
    code = main(["train", "--task", "sst2", "--model", tiny_model, "--data-dir", sst2, "--model-type", "syntax_bert",
                 "--trees", "both", "--max-train-samples", "48", "--max-eval-samples", "16", "--max-length", "48",
                 "--epochs", "1", "--batch-size", "16", "--output-dir", str(out), "--no-progress",
                 "--set", "save_strategy=no", "--set", "save_model=false", "--set", "constituency_fallback=none"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["model_type"] == "Syntax-BERT" and "accuracy" in printed["dev"]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["lisa"] is None and saved["syntax_source"]["dependency"] == "spaCy en_core_web_sm on raw text"
    assert saved["syntax_source"]["constituency"].startswith("none")
    # the constituency arrays are there but hold no tree: every constituency relation group is empty
    config = ExperimentConfig.from_dict(json.loads((out / "experiment.json").read_text()))
    task = get_task("sst2")
    data = subsample(load_split(task, "dev", data_dir=sst2), 16, config.resolved_data_seed)
    ds = build_features(task, data, _load_tokenizer(tiny_model), feature_options(config), split="dev",
                        progress=False)
    assert ds.meta["cache"] == "hit"
    b = SyntaxCollator()([ds[i] for i in range(8)])
    con = relation_groups(b["con_key"], b["con_depth"], b["con_anc_lo"], b["con_anc_hi"], b["con_anc_head"],
                          b["syntax_tree"], b["syntax_segment"], 15, True)
    dep = relation_groups(b["dep_tin"], b["dep_depth"], b["dep_anc_lo"], b["dep_anc_hi"], b["dep_anc_head"],
                          b["syntax_tree"], b["syntax_segment"], 15, True, key_hi=b["dep_tout"])
    assert int((con != 0).sum()) == 0 and int((dep != 0).sum()) > 0

    # compare: systems by name
    assert [n for n, _ in resolve_systems(config, None)] == ["baseline", "sgnet"]
    named = dict(resolve_systems(config, "baseline,syntax_bert_lisa"))
    assert named["baseline"]["model_type"] == "sgnet" and named["baseline"]["lisa_layer"] is None
    assert named["syntax_bert_lisa"]["lisa_layer"] == 1  # the tiny encoder's middle layer (2 // 2)
    with pytest.raises(SyntaxformerError, match="unknown system"):
        resolve_systems(config, "baseline,bert")
    code = main(["compare", "--task", "sst2", "--model", tiny_model, "--data-dir", sst2, "--max-train-samples", "48",
                 "--max-eval-samples", "16", "--max-length", "48", "--epochs", "1", "--batch-size", "16",
                 "--output-dir", str(tmp_path / "cmp"), "--no-progress", "--systems", "sgnet,syntax_bert_lisa"])
    assert code == 0
    table = capsys.readouterr().out
    assert "syntax_bert_lisa" in table and "difference (syntax_bert_lisa - sgnet)" in table
    summary = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert summary["systems"]["sgnet"]["model_type"] == "SG-Net"
    assert summary["systems"]["syntax_bert_lisa"]["model_type"] == "Syntax-BERT + LISA"
