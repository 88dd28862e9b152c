"""The wheel is the product: the README's first code block — the user's road, CSV → train → predict → export →
pipeline — runs as written with the wheel built from this checkout, installed (not editable) in an environment of its
own, with no ``PYTHONPATH``, from a folder outside the checkout, and gives the checkout's predictions. ``make test``
builds and installs the wheel (``.venv-wheel``) and names it in ``SYNTAXFORMER_WHEEL_ENV``; without it the wheel
side is skipped (the checkout side still runs the block)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.conftest import minilm_path
from tests.test_tutorial import assert_same_predictions
from tests.user_shell import REPO, fenced_blocks, run_shell, wheel_env

pytestmark = pytest.mark.slow
README = REPO / "README.md"


def readme_user_block() -> str:
    """The README's first code block (a ```bash block: the user's road)."""
    first = README.read_text(encoding="utf-8").split("```", 2)
    assert first[1].startswith("bash\n"), "the README's first code block must be the user's ```bash road"
    return fenced_blocks(README)[0]


def _run(folder: Path, wheel: Path | None) -> tuple[str, list[dict], list]:
    """The block's output: the pipeline's answer (its last line), the predictions, the training losses logged
    (``trainer_state.json``; at least the run's mean loss)."""
    minilm_path()  # the block uses the offline default encoder
    result = run_shell(readme_user_block(), folder, wheel)
    assert result.returncode == 0, f"the README's block fails:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    preds = [json.loads(line) for line in (folder / "preds.jsonl").read_text(encoding="utf-8").splitlines()]
    state = json.loads((folder / "runs" / "reviews" / "trainer_state.json").read_text())
    return (
        result.stdout.strip().splitlines()[-1],
        preds,
        [e.get("loss", e.get("train_loss")) for e in state["log_history"]],
    )


@pytest.fixture(scope="module")
def checkout_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("readme-checkout"), None)


def test_the_readme_block_runs_from_the_checkout(checkout_run):
    answer, preds, losses = checkout_run
    assert [r["text"] for r in preds] == ["What a fine film.", "A tedious mess."]
    assert all(r["label"] in ("negative", "positive") for r in preds) and losses
    best = ast.literal_eval(answer)  # [{'label': ..., 'score': ...}] of the exported folder's pipeline
    assert best[0]["label"] in ("negative", "positive") and 0.5 <= best[0]["score"] <= 1


def test_the_readme_block_from_the_installed_wheel_gives_the_checkouts_results(checkout_run, tmp_path_factory):
    wheel = wheel_env()
    outside = tmp_path_factory.mktemp("readme-wheel")
    assert REPO not in outside.resolve().parents
    answer, preds, losses = _run(outside, wheel)
    want_answer, want_preds, want_losses = checkout_run
    assert_same_predictions(preds, want_preds, "preds.jsonl")
    assert losses == pytest.approx(want_losses, abs=1e-6)
    got, want = ast.literal_eval(answer), ast.literal_eval(want_answer)
    assert got[0]["label"] == want[0]["label"] and got[0]["score"] == pytest.approx(want[0]["score"], abs=1e-6)
