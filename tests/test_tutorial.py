"""docs/tutorial.md runs as written: its shell blocks (each after a ``<!-- tutorial-step: NAME -->`` line) run in
order, in one empty folder, with ``syntaxformer`` the command of this source tree and ``python`` this
interpreter."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import data_path, minilm_path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "tutorial.md"
_STEP = re.compile(r"^<!-- tutorial-step: ([\w-]+) -->$")


def tutorial_steps(page: Path = PAGE) -> list[tuple[str, str]]:
    """``(name, shell code)`` of each ```bash block of the page that follows a tutorial-step marker, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    steps, i = [], 0
    while i < len(lines):
        m = _STEP.match(lines[i].strip())
        if m and i + 1 < len(lines) and lines[i + 1].strip() == "```bash":
            end = lines.index("```", i + 2)
            steps.append((m.group(1), "\n".join(lines[i + 2 : end])))
            i = end
        i += 1
    return steps


def test_tutorial_steps_are_marked():
    names = [n for n, _ in tutorial_steps()]
    assert names == ["data", "train", "evaluate", "predict-input", "share"]


@pytest.fixture(scope="module")
def tutorial_run(tmp_path_factory):
    """Run the tutorial's steps; returns the folder and each step's result (stops at the first failure)."""
    sst2_dev = data_path("glue", "SST-2", "dev.tsv")  # skips without the shared data
    minilm_path()
    folder = tmp_path_factory.mktemp("tutorial")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(
        SYNTAXFORMER_DATA=str(Path(sst2_dev).resolve().parents[2]),  # the tutorial names the data folder by it
        HF_HUB_OFFLINE="1",
        SYNTAXFORMER_NO_PROGRESS="1",
        OMP_NUM_THREADS="1",
        SYNTAXFORMER_CACHE=str(folder / ".cache"),
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    prelude = (
        f'set -euo pipefail\npython() {{ {shlex.quote(sys.executable)} "$@"; }}\n'
        f'syntaxformer() {{ {shlex.quote(sys.executable)} -m syntaxformer.cli "$@"; }}\n'
    )
    results: dict[str, subprocess.CompletedProcess] = {}
    for name, code in tutorial_steps():
        results[name] = subprocess.run(
            ["bash", "-c", prelude + code], cwd=folder, env=env, capture_output=True, text=True, timeout=900
        )
        if results[name].returncode != 0:
            break
    return folder, results


def _ok(results, name):
    assert name in results, f"an earlier step failed: {[(n, r.stderr[-1500:]) for n, r in results.items()]}"
    r = results[name]
    assert r.returncode == 0, f"step {name!r} fails:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r


@pytest.mark.slow
def test_tutorial_csv_train_evaluate_predict(tutorial_run):
    folder, results = tutorial_run
    assert _ok(results, "data").stdout.splitlines()[0] == "review,sentiment"
    _ok(results, "train")
    run = folder / "runs" / "reviews"
    record = json.loads((run / "run.json").read_text())
    assert record["task"]["name"] == "custom" and record["task"]["options"]["labels"] == ["negative", "positive"]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["sizes"]["train"] == 32 and metrics["sizes"]["dev"] == 16 and metrics["train"]["global_step"] == 10
    out = _ok(results, "evaluate").stdout
    assert '"split": "dev"' in out
    first = json.loads((run / "predictions_dev.jsonl").read_text().splitlines()[0])
    assert first["prediction"] in ("negative", "positive") and first["label"] in ("negative", "positive")


@pytest.mark.slow
def test_tutorial_predict_raw_text_and_share(tutorial_run):
    folder, results = tutorial_run
    _ok(results, "predict-input")
    records = [json.loads(line) for line in (folder / "preds.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["label"] in ("negative", "positive") for r in records)
    assert all(
        abs(sum(r["scores"].values()) - 1) < 1e-5 and set(r["scores"]) == {"negative", "positive"} for r in records
    )
    share = _ok(results, "share").stdout
    assert "{0: 'negative', 1: 'positive'}" in share
    label = share.splitlines()[1].split()  # the pipeline's answer: LABEL SCORE
    assert label[0] in ("negative", "positive") and 0.5 <= float(label[1]) <= 1.0
    assert (folder / "runs" / "reviews" / "README.md").is_file()
