"""Syntax-BERT through the task / training stack: config options, features, parameter groups, and tiny end-to-end
runs (random 2-layer BERT, hidden 32, with the offline MiniLM tokenizer) on real SST-5 trees and GLUE SST-2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from syntaxformer.cli import main
from syntaxformer.errors import SyntaxformerError
from syntaxformer.tasks import get_task
from syntaxformer.training import RunConfig, train
from syntaxformer.training.comparison import resolve_systems
from syntaxformer.training.run import build_context, build_model, load_tokenizer, system_kind
from tests.conftest import data_path

#: What SG-Net reads, and the ancestor tables Syntax-BERT adds per tree (spelled out here, not imported).
TREE_KEYS = ("syntax_tree", "syntax_segment")
DEP_KEYS = ("dep_tin", "dep_tout", "dep_depth", "dep_anc_lo", "dep_anc_hi", "dep_anc_head")
CON_KEYS = ("con_key", "con_depth", "con_anc_lo", "con_anc_hi", "con_anc_head")

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path_factory.getbasetemp() / "sf-sb-cache"))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


def _config(tiny_model: str, out: Path, **changes) -> RunConfig:
    base = dict(
        task="sst5",
        data_dir=str(data_path("sst_trees")),
        model_name_or_path=tiny_model,
        model_type="syntax_bert",
        max_train_samples=48,
        max_eval_samples=16,
        max_length=48,
        num_train_epochs=1,
        per_device_train_batch_size=16,
        per_device_eval_batch_size=16,
        learning_rate=1e-3,
        new_params_lr=2e-3,
        save_strategy="no",
        eval_strategy="epoch",
        logging_steps=1,
        disable_tqdm=True,
        output_dir=str(out),
        seed=3,
    )
    base.update(changes)
    return RunConfig.from_dict(base)


def test_syntax_bert_options_and_syntax_inputs(tiny_model, tmp_path, minilm_tokenizer):
    """The model section goes to SyntaxBertConfig; the features are what the built model reads: the ancestor tables
    of the trees used, SG-Net's keys (incl. dep_parent) without sub-networks, D = the model's max_distance."""
    c = _config(
        tiny_model,
        tmp_path,
        trees="dependency",
        lisa_layer=1,
        lisa_loss_weight=0.5,
        syntax_bert_options={"aggregation": "sum", "random_masks": True, "parent_masks": False},
    )
    task = get_task("sst5")
    model = build_model(c, task)
    mc = model.config
    assert mc.use_dependency and not mc.use_constituency and mc.lisa_layer == 1 and mc.lisa_loss_weight == 0.5
    assert mc.aggregation == "sum" and mc.random_masks and mc.parent_masks is False
    # sub-networks on the dependency tree, plus the LISA parent
    assert set(build_context(c, minilm_tokenizer, mc).syntax_inputs) == {*TREE_KEYS, *DEP_KEYS, "dep_parent"}
    both = build_model(c.replace(trees="both"), task).config
    assert set(build_context(c, minilm_tokenizer, both).syntax_inputs) == {
        *TREE_KEYS,
        *DEP_KEYS,
        *CON_KEYS,
        "dep_parent",
    }
    baseline = build_model(_config(tiny_model, tmp_path, use_syntax=False), task).config
    assert baseline.syntax_layers == [] and baseline.aggregation == "mean"
    assert build_context(c, minilm_tokenizer, baseline).syntax_inputs == ()  # reads no syntax: nothing is parsed
    d8 = build_model(c.replace(model={**c.model, "max_distance": 8}), task).config
    assert build_context(c, minilm_tokenizer, d8).max_distance == 8

    with pytest.raises(SyntaxformerError, match="model.lisa_layer is not an option of SGNetConfig"):
        RunConfig(model={"lisa_layer": 2})  # a Syntax-BERT option with SG-Net
    with pytest.raises(SyntaxformerError, match="model.alpha is not an option of SyntaxBertConfig"):
        RunConfig.from_dict({"model_type": "syntax_bert", "syntax_bert_options": {"alpha": 0.3}})
    with pytest.raises(SyntaxformerError, match="trees="):
        RunConfig.from_dict({"model_type": "syntax_bert", "trees": "dep"})
    with pytest.raises(SyntaxformerError, match="model_type="):
        RunConfig(model_type="bert")


def test_syntax_bert_model_and_new_parameter_groups(tiny_model, tmp_path):
    from transformers import TrainingArguments

    from syntaxformer.training.trainer import SyntaxTrainer, encoder_parameter_prefix, new_parameter_names

    task = get_task("sst5")
    model = build_model(_config(tiny_model, tmp_path, lisa_layer=1), task)
    assert (
        type(model).__name__ == "SyntaxBertForSequenceClassification"
        and system_kind("syntax_bert", model) == "Syntax-BERT + LISA"
    )
    assert model.config.num_labels == 5 and model.config.lisa_layer == 1
    assert encoder_parameter_prefix(model) == "syntax_bert.encoder."
    new = new_parameter_names(model)
    assert new == {
        "syntax_bert.topical.query",
        "pooler.dense.weight",
        "pooler.dense.bias",
        "classifier.weight",
        "classifier.bias",
    }
    args = TrainingArguments(output_dir=str(tmp_path), learning_rate=2e-5, report_to="none", use_cpu=True)
    opt = SyntaxTrainer(model=model, args=args, new_params_lr=1e-3).create_optimizer()
    by_id = {id(p): n for n, p in model.named_parameters()}
    for group in opt.param_groups:
        names = {by_id[id(p)] for p in group["params"]}
        assert group["lr"] == (1e-3 if names <= new else 2e-5) and (names <= new or not names & new)
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))

    baseline = build_model(_config(tiny_model, tmp_path, use_syntax=False), task)
    assert system_kind("syntax_bert", baseline) == "baseline (Syntax-BERT head)"
    assert baseline.syntax_bert.topical is None
    with pytest.raises(SyntaxformerError, match="lisa_head"):  # the tiny encoder has 4 heads
        build_model(_config(tiny_model, tmp_path, lisa_layer=0, lisa_head=7), task)


def test_gates_get_their_own_learning_rate_without_decay(tiny_model, tmp_path):
    from transformers import TrainingArguments

    from syntaxformer.training.trainer import SyntaxTrainer, gate_parameter_names, new_parameter_names

    task = get_task("sst5")
    model = build_model(_config(tiny_model, tmp_path, syntax_bert_options={"gate": "head"}), task)
    assert gate_parameter_names(model) == {"syntax_bert.gate.weight"}
    new = new_parameter_names(model)
    args = TrainingArguments(
        output_dir=str(tmp_path), learning_rate=2e-5, weight_decay=0.1, report_to="none", use_cpu=True
    )
    by_id = {id(p): n for n, p in model.named_parameters()}
    for new_lr, expected_new in ((1e-3, 1e-3), (None, 2e-5)):
        opt = SyntaxTrainer(model=model, args=args, new_params_lr=new_lr, gate_lr=5e-2).create_optimizer()
        seen = set()
        for group in opt.param_groups:
            names = {by_id[id(p)] for p in group["params"]}
            seen |= names
            if "syntax_bert.gate.weight" in names:
                assert names == {"syntax_bert.gate.weight"} and group["lr"] == 5e-2 and group["weight_decay"] == 0.0
            elif names <= new:
                assert group["lr"] == expected_new
            else:
                assert not names & new and group["lr"] == 2e-5
        assert seen == {n for n, p in model.named_parameters() if p.requires_grad}
    # gate_lr unset: the gate is one of the new parameters, as before
    opt = SyntaxTrainer(model=model, args=args, new_params_lr=1e-3).create_optimizer()
    gate_group = [g for g in opt.param_groups if any(by_id[id(p)] == "syntax_bert.gate.weight" for p in g["params"])]
    assert len(gate_group) == 1 and gate_group[0]["lr"] == 1e-3


def test_syntax_bert_lisa_end_to_end_on_sst5_trees(tiny_model, tmp_path, capsys):
    out = tmp_path / "sst5-lisa"
    metrics = train(_config(tiny_model, out, lisa_layer=1))
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["model_type"] == "Syntax-BERT + LISA" and saved["model_family"] == "syntax_bert"
    assert saved["task"] == "sst5" and saved["sizes"] == {
        "train": 48,
        "train_total": 8544,
        "dev": 16,
        "dev_total": 1101,
    }
    assert saved["syntax_source"] == {
        "constituency": "gold SST trees",
        "dependency": "spaCy en_core_web_sm on gold tokens",
    }
    assert saved["examples"] == "sentences" and set(saved["syntax_keys"]) == {
        *TREE_KEYS,
        *DEP_KEYS,
        *CON_KEYS,
        "dep_parent",
    }
    assert saved["model_options"]["lisa_layer"] == 1 and saved["model_options"]["num_labels"] == 5
    assert 0.0 <= saved["dev"]["accuracy"] <= 1.0 and saved["train"]["global_step"] == 3
    lisa = saved["lisa"]
    assert len(lisa["train_loss_logged"]) == 3  # logging_steps=1: one LISA loss per step, beside the total loss
    assert all(math.isfinite(x) and x > 0 for x in lisa["train_loss_logged"])
    assert math.isfinite(lisa["dev_loss"]) and saved["history"][-1]["lisa_loss"] > 0
    assert metrics["lisa"] == lisa
    # the saved model (config.json model_type "syntax_bert") is scored again by `evaluate`
    assert json.loads((out / "config.json").read_text())["model_type"] == "syntax_bert"
    capsys.readouterr()
    assert main(["evaluate", str(out), "--split", "dev"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["size"] == 16 and printed["scores"]["accuracy"] == pytest.approx(saved["dev"]["accuracy"])


def test_syntax_bert_cli_on_glue_without_constituency_and_compare(tiny_model, tmp_path, capsys):
    """GLUE texts have dependency trees only: with constituency_fallback=none, trees=both must still run (the
    constituency relations are empty). The default fallback is tested in tests/tasks/test_features.py."""
    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.masks.relations import relation_groups
    from syntaxformer.training.run import load_run

    sst2 = str(data_path("glue", "SST-2"))
    out = tmp_path / "cli"
    code = main(
        [
            "train",
            "--task",
            "sst2",
            "--model",
            tiny_model,
            "--data-dir",
            sst2,
            "--model-type",
            "syntax_bert",
            "--trees",
            "both",
            "--max-train-samples",
            "48",
            "--max-eval-samples",
            "16",
            "--max-length",
            "48",
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--output-dir",
            str(out),
            "--no-progress",
            "--set",
            "save_strategy=no",
            "--set",
            "save_model=false",
            "--set",
            "constituency_fallback=none",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["model_type"] == "Syntax-BERT" and "accuracy" in printed["dev"]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["lisa"] is None and saved["syntax_source"]["dependency"] == "spaCy en_core_web_sm on raw text"
    assert saved["syntax_source"]["constituency"].startswith("none")
    # the constituency arrays are there but hold no tree: every constituency relation group is empty
    config, task = load_run(out, {"model_name_or_path": tiny_model})
    config = config.replace(model_name_or_path=tiny_model)
    data = task.load_split("dev", config.data_options("dev", config.max_eval_samples))
    context = build_context(config, load_tokenizer(tiny_model), build_model(config, task).config)
    ds = task.featurize(data, context, "dev")
    assert ds.meta["cache"] == "hit"
    b = SyntaxCollator()([ds[i] for i in range(8)])
    con = relation_groups(
        b["con_key"],
        b["con_depth"],
        b["con_anc_lo"],
        b["con_anc_hi"],
        b["con_anc_head"],
        b["syntax_tree"],
        b["syntax_segment"],
        15,
        True,
    )
    dep = relation_groups(
        b["dep_tin"],
        b["dep_depth"],
        b["dep_anc_lo"],
        b["dep_anc_hi"],
        b["dep_anc_head"],
        b["syntax_tree"],
        b["syntax_segment"],
        15,
        True,
        key_hi=b["dep_tout"],
    )
    assert int((con != 0).sum()) == 0 and int((dep != 0).sum()) > 0

    # compare: systems by name
    assert [n for n, _ in resolve_systems(config, None)] == ["baseline", "sgnet"]
    named = dict(resolve_systems(config, "baseline,syntax_bert_lisa"))
    assert named["baseline"] == {"model_type": "plain", "model": {}}  # the plain encoder; SB options dropped
    assert named["syntax_bert_lisa"]["model"]["lisa_layer"] == 1  # the tiny encoder's middle layer (2 // 2)
    with pytest.raises(SyntaxformerError, match="unknown system"):
        resolve_systems(config, "baseline,bert")
    code = main(
        [
            "compare",
            "--task",
            "sst2",
            "--model",
            tiny_model,
            "--data-dir",
            sst2,
            "--max-train-samples",
            "48",
            "--max-eval-samples",
            "16",
            "--max-length",
            "48",
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--output-dir",
            str(tmp_path / "cmp"),
            "--no-progress",
            "--systems",
            "sgnet,syntax_bert_lisa",
        ]
    )
    assert code == 0
    table = capsys.readouterr().out
    assert "syntax_bert_lisa" in table and "difference (syntax_bert_lisa - sgnet)" in table
    summary = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert summary["systems"]["sgnet"]["model_type"] == "SG-Net"
    assert summary["systems"]["syntax_bert_lisa"]["model_type"] == "Syntax-BERT + LISA"
