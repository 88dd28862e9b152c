"""The archived sweep runs (docs/results/runs/, copied there by `experiments/sgnet_glue.py archive`) are what the
docs' numbers are computed from: each run's recorded dev score is recomputed here from its archived predictions
with scikit-learn / SciPy (not the library's metric code), and the archived labels are the real dev sets'."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from tests.conftest import DATA

ARCHIVE = Path(__file__).resolve().parents[1] / "docs" / "results" / "runs"
RECORDS = sorted(ARCHIVE.glob("*/*/*/seed*"))  # SWEEP/TASK/VARIANT/seedN folders
REFERENCE = {"accuracy": accuracy_score, "f1": f1_score, "matthews_correlation": matthews_corrcoef,
             "pearson": lambda p, y: pearsonr(p, y)[0]}


def test_the_archive_is_there():
    assert RECORDS, f"no archived runs under {ARCHIVE}"


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.relative_to(ARCHIVE).as_posix())
def test_an_archived_runs_score_is_recomputed_from_its_predictions(record: Path):
    metrics = json.loads((record / "metrics.json").read_text())
    pred = json.loads((record / "dev_predictions.json").read_text())
    metric = {"cola": "matthews_correlation", "mrpc": "f1", "stsb": "pearson"}.get(pred["task"], "accuracy")
    p, y = np.asarray(pred["predictions"]), np.asarray(pred["labels"])
    assert pred["order"] == "dataset" and len(p) == len(y) == len(pred["ids"]) == metrics["sizes"]["dev"]
    assert REFERENCE[metric](p, y) == pytest.approx(metrics["dev"][metric], abs=1e-9)


@pytest.mark.parametrize("task", sorted({p.parent.parent.name for p in RECORDS}))
def test_archived_labels_are_the_dev_sets_labels(task: str):
    if not DATA.exists():
        pytest.skip(f"real data not found at {DATA} (set SYNTAXFORMER_DATA)")
    from syntaxformer.tasks import get_task
    from syntaxformer.training import RunConfig

    spec = get_task(task)
    dev = spec.load_split("dev", RunConfig.from_dict({"task": task}).data_options("dev", None))
    gold = [e.label for e in dev.examples]
    for record in (p for p in RECORDS if p.parent.parent.name == task):
        pred = json.loads((record / "dev_predictions.json").read_text())
        assert pred["ids"] == [e.guid for e in dev.examples], record
        assert pred["labels"] == pytest.approx(gold), record
