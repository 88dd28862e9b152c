"""docs/tutorial.md runs as written: its shell blocks (each after a ``<!-- tutorial-step: NAME -->`` line) run in
order, in one empty folder, with ``syntaxformer`` the command of this source tree and ``python`` this
interpreter; and again with the installed wheel (``make test``), from a folder outside the checkout, to the same
predictions."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import data_path, minilm_path
from tests.user_shell import run_shell, wheel_env

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


def run_tutorial(folder: Path, wheel: Path | None = None) -> dict[str, subprocess.CompletedProcess]:
    """Run the tutorial's steps in ``folder`` with this checkout or the installed wheel (tests/user_shell.py); each
    step's result, stopping at the first failure."""
    sst2_dev = data_path("glue", "SST-2", "dev.tsv")  # skips without the shared data
    minilm_path()
    data = str(Path(sst2_dev).resolve().parents[2])  # the tutorial names the data folder by SYNTAXFORMER_DATA
    results: dict[str, subprocess.CompletedProcess] = {}
    for name, code in tutorial_steps():
        results[name] = run_shell(code, folder, wheel, SYNTAXFORMER_DATA=data)
        if results[name].returncode != 0:
            break
    return results


@pytest.fixture(scope="module")
def tutorial_run(tmp_path_factory):
    """Run the tutorial's steps with this checkout; returns the folder and each step's result."""
    folder = tmp_path_factory.mktemp("tutorial")
    return folder, run_tutorial(folder)


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
    assert first["label"] in ("negative", "positive") and first["gold_label"] in ("negative", "positive")


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


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_same_predictions(wheel: list[dict], checkout: list[dict], what: str) -> None:
    """Prediction records of the wheel and of the checkout: the same texts and labels, probabilities to 1e-6."""
    assert len(wheel) == len(checkout), what
    for w, c in zip(wheel, checkout):
        assert {k: v for k, v in w.items() if k not in ("score", "scores")} == {
            k: v for k, v in c.items() if k not in ("score", "scores")
        }, what
        assert w.get("scores", {}).keys() == c.get("scores", {}).keys(), what
        for label, p in c.get("scores", {}).items():
            assert w["scores"][label] == pytest.approx(p, abs=1e-6), what


@pytest.mark.slow
def test_tutorial_from_the_installed_wheel_gives_the_checkouts_results(tutorial_run, tmp_path_factory):
    """The user's path: the wheel (not editable, no PYTHONPATH), a folder outside the checkout."""
    wheel = wheel_env()
    folder, results = tutorial_run
    for name in results:
        _ok(results, name)
    outside = tmp_path_factory.mktemp("tutorial-wheel")
    assert REPO not in outside.resolve().parents
    wheel_results = run_tutorial(outside, wheel)
    for name in results:
        assert _ok(wheel_results, name).stdout.splitlines()[:1] == results[name].stdout.splitlines()[:1], name
    run, wheel_run = folder / "runs" / "reviews", outside / "runs" / "reviews"
    assert json.loads((wheel_run / "metrics.json").read_text())["dev"] == pytest.approx(
        json.loads((run / "metrics.json").read_text())["dev"], abs=1e-9
    )
    for name in ("predictions_dev.jsonl",):
        assert_same_predictions(_jsonl(wheel_run / name), _jsonl(run / name), name)
    assert_same_predictions(_jsonl(outside / "preds.jsonl"), _jsonl(folder / "preds.jsonl"), "preds.jsonl")
    share, wheel_share = results["share"].stdout.splitlines(), wheel_results["share"].stdout.splitlines()
    assert wheel_share[0] == share[0]  # class and label names
    assert wheel_share[1].split()[0] == share[1].split()[0]  # the pipeline's label
    assert float(wheel_share[1].split()[1]) == pytest.approx(float(share[1].split()[1]), abs=1e-3)
