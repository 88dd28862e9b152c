"""The boundary of an exported model folder: a fresh Python environment WITHOUT syntaxformer (only torch,
transformers, spaCy and a spaCy pipeline package) loads it and predicts through
``pipeline(model=DIR, trust_remote_code=True)`` for text classification, span QA and translation, with the
answers the library's own :class:`~syntaxformer.inference.Predictor` gives on the run folder.

The environment is named by ``SYNTAXFORMER_CLEAN_PYTHON`` (its python; ``make test-min`` sets it to the
minimum-versions environment, where syntaxformer is not installed); without it the test is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import data_path

CLEAN_PYTHON = os.environ.get("SYNTAXFORMER_CLEAN_PYTHON")

pytestmark = pytest.mark.skipif(
    not CLEAN_PYTHON,
    reason="set SYNTAXFORMER_CLEAN_PYTHON to the python of an environment without syntaxformer "
    "(`make test-min` does) to load exported models there",
)

#: Runs in the clean environment: loads each folder through the pipeline, prints the answers as JSON.
_CLEAN_SCRIPT = r"""
import importlib.util, json, sys
import transformers
from transformers import pipeline

assert importlib.util.find_spec("syntaxformer") is None, "syntaxformer is importable here: not a clean environment"
folders = json.loads(sys.argv[1])
texts = ["A fine, moving film.", "Dull and far too long."]
out = {"transformers": transformers.__version__}
clf = pipeline(model=folders["classification"], trust_remote_code=True)
out["classification"] = clf(texts, top_k=None)
out["classification_one"] = clf(texts[0])
out["classification_sg"] = pipeline(model=folders["classification_sg"], trust_remote_code=True)(texts, top_k=None)
out["classification_tag"] = pipeline("text-classification", model=folders["classification"],
                                     trust_remote_code=True)(texts[0])
out["classification_logits"] = clf(texts, function_to_apply="none", top_k=None)
out["classification_sigmoid"] = pipeline(model=folders["classification"], trust_remote_code=True,
                                         function_to_apply="sigmoid", top_k=None)(texts)
try:
    clf(texts[0], foo=1)
except ValueError as e:
    out["unknown_option"] = str(e)
qa = pipeline(model=folders["qa"], trust_remote_code=True)
questions = json.loads(sys.argv[2])
out["qa"] = [qa(question=q["question"], context=q["context"]) for q in questions]
out["qa_top3"] = qa(questions, top_k=3)
out["qa_short"] = qa(questions, top_k=3, max_answer_len=1)
out["qa_tag"] = pipeline("question-answering", model=folders["qa"], trust_remote_code=True)(questions)
mt = pipeline(model=folders["translation"], trust_remote_code=True)
out["translation"] = mt(["A man rides a horse.", "Two dogs play in the snow."])
out["translation_tag"] = pipeline("translation", model=folders["translation"],
                                  trust_remote_code=True)("A man rides a horse.")
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] == "syntaxformer")
print(json.dumps(out))
"""


def _qa_run(tmp_path: Path, tiny_model: str) -> str:
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    out = tmp_path / "squad-sg"
    train(
        RunConfig(
            task="squad2",
            model_type="sgnet",
            model_name_or_path=tiny_model,
            train_file=str(data_path("squad2", "dev-v2.0-sample.json")),
            task_options={"verifier": "joint", "doc_stride": 32, "threshold_tuning_fraction": 0.0},
            max_train_samples=8,
            max_eval_samples=6,
            max_steps=2,
            max_length=96,
            per_device_train_batch_size=4,
            disable_tqdm=True,
            features_cache=False,
            parse_cache=str(tmp_path / "parses.sqlite3"),
            output_dir=str(out),
        )
    )
    return str(out)


def _translation_run(tmp_path: Path) -> str:
    import importlib.util

    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    # training scores BLEU: the environment that runs the tests needs the translation extra (the exported
    # model does not)
    assert importlib.util.find_spec("sacrebleu"), "pip install sacrebleu (syntaxformer[translation]) to train the run"

    folder = data_path("multi30k")
    files = {}
    for name, source, n in (("tr", "train", 60), ("va", "val", 8)):
        for lang in ("en", "de"):
            lines = (folder / f"{source}.{lang}").read_text(encoding="utf-8").splitlines()[:n]
            files[f"{name}.{lang}"] = tmp_path / f"{name}.{lang}"
            files[f"{name}.{lang}"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "nmt-both"
    train(
        RunConfig(
            task="translation",
            task_options={
                "arm": "both",
                "train_source": str(files["tr.en"]),
                "train_target": str(files["tr.de"]),
                "valid_source": str(files["va.en"]),
                "valid_target": str(files["va.de"]),
                "eval_sets": {"val": [str(files["va.en"]), str(files["va.de"])]},
                "source_vocab_size": 300,
                "target_vocab_size": 300,
            },
            max_steps=2,
            disable_tqdm=True,
            parse_cache=str(tmp_path / "parses.sqlite3"),
            training_args={"eval_steps": 1, "save_steps": 1, "generation_num_beams": 2},
            output_dir=str(out),
        )
    )
    return str(out)


def test_export_clean_env_pipelines_answer_as_the_library(sst2_runs, tiny_model, tmp_path, one_thread):
    from syntaxformer.inference import Predictor
    from syntaxformer.sharing import export_model

    runs = {
        "classification": sst2_runs["syntax_bert"],
        "classification_sg": sst2_runs["sgnet"],
        "qa": _qa_run(tmp_path, tiny_model),
        "translation": _translation_run(tmp_path),
    }
    assert any(
        (Path(runs["translation"]) / d).is_dir() for d in os.listdir(runs["translation"]) if d.startswith("checkpoint-")
    )  # the run has checkpoints; the export must not
    folders = {k: str(export_model(v, tmp_path / "shared" / f"{k}-model")) for k, v in runs.items()}
    questions = [
        {"question": "Who wrote it?", "context": "The book was written by Ann Smith in Paris. It sold well."},
        {"question": "Where is the tower?", "context": "The tower stands in Pisa. It leans."},
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_MODULES_CACHE=str(tmp_path / "hf-modules"),
        OMP_NUM_THREADS="1",
        TRANSFORMERS_VERBOSITY="error",
    )
    done = subprocess.run(
        [CLEAN_PYTHON, "-c", _CLEAN_SCRIPT, json.dumps(folders), json.dumps(questions)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []  # nothing named syntaxformer was imported there
    assert len(out["classification"]) == len(out["qa"]) == len(out["translation"]) == 2
    # every code file was copied into the transformers module cache from the folder
    cached = {p.name for p in (tmp_path / "hf-modules").rglob("*.py")}
    assert {p.name for p in Path(folders["qa"]).glob("*.py")} <= cached

    # classification: the library's labels and probabilities
    texts = ["A fine, moving film.", "Dull and far too long."]
    want = Predictor.from_run(runs["classification"]).predict(texts)
    for got, ref in zip(out["classification"], want):
        assert {d["label"]: d["score"] for d in got} == pytest.approx(ref["scores"], abs=1e-5)
        assert got[0]["label"] == ref["label"]
    assert out["classification_one"] == [
        {"label": want[0]["label"], "score": pytest.approx(want[0]["score"], abs=1e-5)}
    ]
    assert out["classification_tag"] == out["classification_one"]
    # an SG-Net classifier, whose folder carries no Syntax-BERT code
    assert not [p for p in Path(folders["classification_sg"]).glob("*.py") if "attention" in p.name]
    for got, ref in zip(out["classification_sg"], Predictor.from_run(runs["classification_sg"]).predict(texts)):
        assert {d["label"]: d["score"] for d in got} == pytest.approx(
            ref["scores"], abs=1e-5
        )  # pipeline("text-classification", ...) too
    assert "takes no option(s) ['foo']" in out["unknown_option"]
    # function_to_apply: the logits ("none") and their sigmoid, as the library's pipeline gives them
    import torch
    from transformers import pipeline

    ours = pipeline("syntax-text-classification", model=runs["classification"])
    logits = np.array(
        [
            [r["logits"][k] for k in range(2)]
            for r in Predictor.from_run(runs["classification"]).predict(texts, logits=True)
        ]
    )
    names = ["negative", "positive"]
    for key, want_scores in (
        ("classification_logits", logits),
        ("classification_sigmoid", torch.sigmoid(torch.from_numpy(logits)).numpy()),
    ):
        got = np.array([[{d["label"]: d["score"] for d in row}[n] for n in names] for row in out[key]])
        assert got == pytest.approx(want_scores, abs=1e-5)
    assert out["classification_logits"][0][0]["score"] == pytest.approx(
        ours(texts[0], function_to_apply="none")[0]["score"], abs=1e-5
    )

    # span QA: the same best span, no-answer score and answer at the run's tuned threshold
    ref_qa = Predictor.from_run(runs["qa"]).predict(questions)
    for got, ref in zip(out["qa"], ref_qa):
        assert got["best_answer"] == ref["best_answer"] and got["answer"] == ref["answer"]
        assert got["null_score"] == pytest.approx(ref["null_score"], abs=1e-4)
        assert got["score"] == pytest.approx(ref["span_score"], abs=1e-4)
        assert set(got) == {"answer", "start", "end", "score", "null_score", "best_answer"}
    for got, one in zip(out["qa_tag"], out["qa"]):  # pipeline("question-answering", ...) too, a list at once
        assert got == {
            **one,
            "score": pytest.approx(one["score"], abs=1e-5),
            "null_score": pytest.approx(one["null_score"], abs=1e-5),
        }

    # top_k and max_answer_len: the library pipeline's spans
    ours_qa = pipeline("syntax-question-answering", model=runs["qa"])
    for key, options in (("qa_top3", {"top_k": 3}), ("qa_short", {"top_k": 3, "max_answer_len": 1})):
        want = ours_qa(questions, **options)
        assert [[(a["answer"], a["start"], a["end"]) for a in q] for q in out[key]] == [
            [(a["answer"], a["start"], a["end"]) for a in q] for q in want
        ]
        assert [[a["score"] for a in q] for q in out[key]] == [
            pytest.approx([a["score"] for a in q], abs=1e-4) for q in want
        ]
    assert all(len(q) == 3 for q in out["qa_top3"])
    assert any(" " in a["answer"] for q in out["qa_top3"] for a in q)  # spans of several words, unlike:
    assert all(" " not in a["answer"] for q in out["qa_short"] for a in q)

    # translation: the same beam-search output
    ref_mt = Predictor.from_run(runs["translation"]).predict(["A man rides a horse.", "Two dogs play in the snow."])
    assert out["translation"] == [[{"translation_text": r["translation"]}] for r in ref_mt]
    assert out["translation_tag"] == out["translation"][0]
