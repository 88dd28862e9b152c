"""The syntax pipelines (syntaxformer.pipelines): text-classification's output conventions, the same numbers as the
Predictor, and a fresh process that imports only ``syntaxformer`` and ``transformers``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_pipelines_text_classification_outputs_like_text_classification(sst2_runs, one_thread):
    from transformers import pipeline

    import syntaxformer  # noqa: F401
    from syntaxformer.inference import Predictor

    run = sst2_runs["syntax_bert"]
    clf = pipeline("syntax-text-classification", model=run)
    texts = ["A fine film.", "Dull and far too long."]
    records = Predictor.from_run(run).predict(texts)
    one = clf(texts[0])
    assert one == [{"label": records[0]["label"], "score": pytest.approx(records[0]["score"], abs=1e-6)}]
    many = clf(texts, batch_size=1)
    assert [m["label"] for m in many] == [r["label"] for r in records]
    assert [m["score"] for m in many] == pytest.approx([r["score"] for r in records], abs=1e-6)
    ranked = clf(texts[1], top_k=None)
    assert [d["label"] for d in ranked] == sorted(records[1]["scores"], key=lambda k: -records[1]["scores"][k])
    assert sum(d["score"] for d in ranked) == pytest.approx(1.0)
    top1 = clf(texts, top_k=1)  # an explicit top_k gives lists, as text-classification does
    assert [[d["label"] for d in x] for x in top1] == [[m["label"]] for m in many]
    assert [d["label"] for d in clf(texts[0], top_k=2)] == [d["label"] for d in clf(texts[0], top_k=None)]
    # an option the pipeline does not take is refused, naming it and what it takes (never silently ignored)
    from syntaxformer.errors import ConfigError

    for option in ({"foo": 1}, {"function_to_apply": "sigmoid"}):
        with pytest.raises(ConfigError, match=rf"takes no option\(s\) \['{next(iter(option))}'\]; it takes top_k"):
            clf(texts[0], **option)


def _run_fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter (repo on the path, offline); it prints one JSON object last."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "HF_HUB_OFFLINE": "1",
        "SYNTAXFORMER_NO_PROGRESS": "1",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_pipelines_and_auto_classes_in_a_fresh_process_after_import_syntaxformer_only(sst2_runs):
    """``import syntaxformer`` (light: no torch) is all a new process needs for the Auto classes and the pipeline;
    a process that never imports it loads the folder with ``trust_remote_code=True`` through ``auto_map``."""
    sg, sb = sst2_runs["sgnet"], sst2_runs["syntax_bert"]
    out = _run_fresh(f"""
import json, sys
import syntaxformer
light = "torch" not in sys.modules
from transformers import AutoConfig, AutoModelForSequenceClassification, pipeline
from transformers.pipelines import PIPELINE_REGISTRY
m = AutoModelForSequenceClassification.from_pretrained({sg!r})
c = AutoConfig.from_pretrained({sb!r})
clf = pipeline("syntax-text-classification", model={sb!r})
print(json.dumps({{"light": light, "model": type(m).__name__, "labels": m.config.id2label, "config": type(c).__name__,
                  "pred": clf("A fine film."),
                  "tasks": [t for t in PIPELINE_REGISTRY.get_supported_tasks() if t.startswith("syntax-")]}}))
""")
    assert out["light"] is True
    assert out["model"] == "SGNetForSequenceClassification" and out["config"] == "SyntaxBertConfig"
    assert out["labels"] == {"0": "negative", "1": "positive"}
    assert out["pred"][0]["label"] in ("negative", "positive") and 0 < out["pred"][0]["score"] < 1
    assert sorted(out["tasks"]) == ["syntax-question-answering", "syntax-text-classification", "syntax-translation"]

    # transformers first, syntaxformer after; and no syntaxformer import at all (auto_map + trust_remote_code)
    out = _run_fresh(f"""
import json
from transformers import AutoModelForSequenceClassification, pipeline
import syntaxformer
first = type(AutoModelForSequenceClassification.from_pretrained({sg!r})).__name__
print(json.dumps({{"first": first, "pred": pipeline("syntax-text-classification", model={sg!r})("Dull.")}}))
""")
    assert out["first"] == "SGNetForSequenceClassification" and out["pred"][0]["label"] in ("negative", "positive")
    config = json.loads((Path(sb) / "config.json").read_text())
    assert config["auto_map"] == {
        "AutoConfig": "configuration_syntax_bert.SyntaxBertConfig",
        "AutoModelForSequenceClassification": "modeling_syntax_bert.SyntaxBertForSequenceClassification",
    }
    assert (Path(sb) / "modeling_syntax_bert.py").is_file()
    out = _run_fresh(f"""
import json
from transformers import AutoModelForSequenceClassification
m = AutoModelForSequenceClassification.from_pretrained({sb!r}, trust_remote_code=True)
print(json.dumps({{"model": type(m).__name__, "labels": m.config.id2label}}))
""")
    assert out == {"model": "SyntaxBertForSequenceClassification", "labels": {"0": "negative", "1": "positive"}}
