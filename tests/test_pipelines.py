"""The syntax pipelines (syntaxformer.pipelines): text-classification's output conventions, the same numbers as the
Predictor, and a fresh process that imports only ``syntaxformer`` and ``transformers``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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

    with pytest.raises(ConfigError, match=r"takes no option\(s\) \['foo'\]; it takes top_k, function_to_apply"):
        clf(texts[0], foo=1)
    with pytest.raises(ConfigError, match=r"takes no option\(s\) \['foo'\]"):  # when built, too
        pipeline("syntax-text-classification", model=run, foo=1)
    for bad, match in (({"function_to_apply": "relu"}, "function_to_apply='relu'"), ({"top_k": 0}, "top_k=0")):
        with pytest.raises(ConfigError, match=match):
            clf(texts[0], **bad)


def test_pipelines_function_to_apply_and_top_k_as_text_classification(sst2_runs, one_thread):
    """``function_to_apply="none"`` gives the model's logits (each text alone through the task's featurization),
    ``"sigmoid"`` their sigmoid, ``"softmax"`` the default scores; options given when the pipeline is built are
    the defaults of its calls, with ``text-classification``'s output shapes."""
    import torch
    from transformers import pipeline

    import syntaxformer  # noqa: F401
    from tests.test_inference import reference_logits

    run = sst2_runs["sgnet"]
    texts = ["A fine film.", "Dull and far too long.", "It is neither good nor bad."]
    logits = torch.from_numpy(reference_logits(run, texts))  # (N, 2), labels negative, positive
    clf = pipeline("syntax-text-classification", model=run)
    names = ["negative", "positive"]

    def by_label(rows):  # (N, labels) scores in label order
        return np.array([[{d["label"]: d["score"] for d in row}[n] for n in names] for row in rows])

    raw = clf(texts, function_to_apply="none", top_k=None, batch_size=2)
    assert by_label(raw) == pytest.approx(logits.numpy(), abs=1e-5)
    assert all(row[0]["score"] >= row[1]["score"] for row in raw)  # best first
    assert by_label(clf(texts, function_to_apply="sigmoid", top_k=None)) == pytest.approx(
        torch.sigmoid(logits).numpy(), abs=1e-6
    )
    soft = clf(texts, function_to_apply="SOFTMAX", top_k=None)  # any letter case, as text-classification
    assert by_label(soft) == pytest.approx(torch.softmax(logits, -1).numpy(), abs=1e-6)
    assert by_label(soft) == pytest.approx(by_label(clf(texts, top_k=None)), abs=1e-9)
    best = clf(texts, function_to_apply="none")  # no top_k: the best label per text, its logit
    assert [b["label"] for b in best] == [names[i] for i in logits.argmax(-1).tolist()]
    assert [b["score"] for b in best] == pytest.approx(logits.max(-1).values.tolist(), abs=1e-5)
    one = clf(texts[0], function_to_apply="none")  # one text: in a list
    assert one == [{"label": best[0]["label"], "score": pytest.approx(best[0]["score"], abs=1e-6)}]

    built = pipeline("syntax-text-classification", model=run, function_to_apply="none", top_k=1)
    assert [[(d["label"], pytest.approx(d["score"], abs=1e-6)) for d in row] for row in built(texts)] == [
        [(b["label"], b["score"])] for b in best
    ]
    assert by_label(built(texts, top_k=None)) == pytest.approx(logits.numpy(), abs=1e-5)
    assert built(texts[0], top_k=None, function_to_apply="sigmoid")[0]["score"] == pytest.approx(
        float(torch.sigmoid(logits[0]).max()), abs=1e-6
    )
    # truncation=True, as text-classification takes it (a syntax pipeline always truncates at max_length)
    truncating = pipeline("syntax-text-classification", model=run, truncation=True)
    assert by_label(truncating(texts, top_k=None, truncation="longest_first")) == pytest.approx(by_label(soft))
    from syntaxformer.errors import ConfigError

    with pytest.raises(ConfigError, match="truncation=False: a syntax pipeline always truncates"):
        clf(texts, truncation=False)


def test_pipelines_refuse_a_model_they_cannot_run_naming_the_right_pipeline(sst2_runs, one_thread):
    """The QA pipeline on a classification run (an untrained QA head) is refused; text-classification, which
    tokenizes but never parses, fails at its first call naming syntax-text-classification."""
    from transformers import pipeline

    import syntaxformer  # noqa: F401
    from syntaxformer.errors import ConfigError, InputError

    run = sst2_runs["syntax_bert"]
    with pytest.raises(ConfigError, match=r'holds a sequence classification model .*"syntax-text-classification"'):
        pipeline("syntax-question-answering", model=run)
    plain = pipeline("text-classification", model=run)
    with pytest.raises(InputError, match=r'no syntax input at all.*pipeline\("syntax-text-classification"'):
        plain("A fine film.")
    with pytest.raises(KeyError, match="syntax-translation"):
        pipeline("translation", model=run)
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(run)
    with pytest.raises(ConfigError, match=r'does not run SyntaxBertForSequenceClassification.*"syntax-text-class'):
        pipeline("syntax-question-answering", model=model, tokenizer=run)


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


def test_pipelines_are_registered_in_every_import_order():
    """Whichever is imported first (the pipelines module, the package, or transformers' pipelines), the three syntax
    pipelines end up registered and no registration warning is logged."""
    orders = {
        "pipelines module first": "import syntaxformer.pipelines",
        "package first": "import syntaxformer; import transformers.pipelines",
        "transformers first": "import transformers.pipelines; import syntaxformer",
    }
    expected = ["syntax-question-answering", "syntax-text-classification", "syntax-translation"]
    for name, imports in orders.items():
        code = f"""
import io, json, logging
log = io.StringIO()
logging.getLogger("syntaxformer").addHandler(logging.StreamHandler(log))
{imports}
from transformers.pipelines import PIPELINE_REGISTRY
tasks = sorted(t for t in PIPELINE_REGISTRY.get_supported_tasks() if t.startswith("syntax-"))
print(json.dumps({{"tasks": tasks, "log": log.getvalue()}}))
"""
        result = _run_fresh(code)
        assert result["tasks"] == expected, name
        assert "could not register" not in result["log"], (name, result["log"])


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
        "AutoConfig": "configuration.SyntaxBertConfig",
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


def test_pipelines_options_give_text_classifications_outputs_on_a_plain_classifier(tiny_model, tmp_path, one_thread):
    """On a plain transformers classifier (tokenized, nothing parsed) the syntax pipeline and ``text-classification``
    give the same output for every combination of ``top_k`` and ``function_to_apply``, given per call or when the
    pipeline is built: the same shapes (a list around one text's answer only without a call's ``top_k``), labels
    and scores."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    import syntaxformer  # noqa: F401

    torch.manual_seed(0)
    folder = tmp_path / "plain"
    labels = {0: "negative", 1: "neutral", 2: "positive"}
    AutoModelForSequenceClassification.from_pretrained(tiny_model, num_labels=3, id2label=labels).save_pretrained(
        folder
    )
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(folder)
    texts = ["A fine film.", "Dull and far too long."]

    def same(got, want):
        if isinstance(want, list):
            assert isinstance(got, list) and len(got) == len(want)
            for g, w in zip(got, want):
                same(g, w)
        else:
            assert got == {"label": want["label"], "score": pytest.approx(want["score"], abs=1e-5)}

    for built in ({}, {"top_k": None}, {"function_to_apply": "none"}, {"top_k": 2, "function_to_apply": "sigmoid"}):
        ours = pipeline("syntax-text-classification", model=str(folder), **built)
        theirs = pipeline("text-classification", model=str(folder), **built)
        for call in (
            {},
            {"top_k": None},
            {"top_k": 1},
            {"function_to_apply": "softmax"},
            {"function_to_apply": "none"},
        ):
            for inputs in (texts[0], texts):
                same(ours(inputs, **call), theirs(inputs, **call))
