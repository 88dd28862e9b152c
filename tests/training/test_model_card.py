"""The model card (training/model_card.py) written into every saved run folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from huggingface_hub import ModelCard

from syntaxformer.training.model_card import MODEL_CARD_FILE, PAPERS, cli_command, model_card


@pytest.mark.parametrize("system,paper", [("sgnet", "SG-Net"), ("syntax_bert", "Syntax-BERT")])
def test_model_card_of_a_trained_run(sst2_runs, system, paper):
    run = Path(sst2_runs[system])
    card = (run / MODEL_CARD_FILE).read_text(encoding="utf-8")
    metrics = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    data = ModelCard.load(run / MODEL_CARD_FILE).data
    assert data.library_name == "transformers" and data.base_model is None and "syntaxformer" in data.tags
    assert "pipeline_tag" not in card  # the standard pipelines reject a run folder's model: no tag that fails
    [result] = data.eval_results  # the model-index: the final dev score with its seed
    assert (result.metric_type, result.metric_value, result.metric_args) == (
        "accuracy",
        metrics["dev"]["accuracy"],
        {"seed": 42},
    )
    assert f"# {paper} on SST-2" in card and PAPERS[paper] in card
    pooling = json.loads((run / "config.json").read_text(encoding="utf-8"))["pooling"]
    assert "| labels | 0: negative, 1: positive |" in card and f"| pooling | {pooling} |" in card
    assert "spaCy pipeline `en_core_web_sm" in card and "(spaCy 3." in card  # parser name, version, spaCy version
    assert "| train | 16 | 67349 |" in card and "random subsample of 16 of 67349 examples (seed 42)" in card
    assert f"| dev | accuracy | {metrics['dev']['accuracy']:.4f} | 42 |" in card
    assert "Trained through the Python API" in card  # not from the CLI
    config = json.loads(card.split("```json\n", 1)[1].split("```", 1)[0])
    assert config["model_type"] == system and config["max_train_samples"] == 16 and config["seed"] == 42
    assert f'pipeline("syntax-text-classification", model="{run.name}")' in card  # the folder's name, no path
    assert f"syntaxformer export {run.name} OUT_DIR" in card and str(run.parent) not in card  # relative paths only
    assert config["output_dir"] == run.name and not Path(config["model_name_or_path"]).is_absolute()
    assert "| effective batch size | 8 (8 per device x 1 accumulation steps x 1 device) |" in card


def test_model_card_command_line_and_plain_baseline():
    assert (
        cli_command(["/venv/bin/syntaxformer", "train", "--task", "sst2", "--set", "alpha=0.3"])
        == "syntaxformer train --task sst2 --set alpha=0.3"
    )
    assert (
        cli_command(["/repo/src/syntaxformer/cli.py", "train", "--output-dir", "my runs"])
        == "syntaxformer train --output-dir 'my runs'"
    )
    assert cli_command(["-c"]) is None and cli_command(["/usr/bin/pytest", "-q"]) is None

    class Config:  # a plain-encoder baseline that reads no syntax
        id2label: ClassVar[dict[int, str]] = {0: "negative", 1: "positive"}
        problem_type = "single_label_classification"
        pooling = "mean"

        def to_diff_dict(self):
            return {"pooling": "mean", "use_sg_layer": False, "id2label": self.id2label}

    metrics = {
        "task": "sst2",
        "task_title": "SST-2",
        "model_type": "baseline",
        "model_family": "sgnet",
        "syntax_keys": [],
        "seed": 3,
        "dev": {"accuracy": 0.75},
        "eval": {"dev": {"accuracy": 0.75, "n": 4}},
    }
    card = model_card(
        metrics,
        {"task": "sst2", "seed": 3},
        Config(),
        "sequence_classification",
        command="syntaxformer train --task sst2 --use-sg-layer false",
    ).content
    assert "baseline (the plain encoder under the same head: no syntax)" in card
    assert "none (the model reads no syntax; nothing is parsed)" in card
    assert "| dev | accuracy | 0.7500 | 3 |" in card and "| dev | n |" not in card
    assert "```bash\nsyntaxformer train --task sst2 --use-sg-layer false\n```" in card
    assert "| `use_sg_layer` | `false` |" in card and "id2label" not in card.split("Model options")[1]
