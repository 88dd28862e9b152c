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
REFERENCE = {
    "accuracy": accuracy_score,
    "f1": f1_score,
    "matthews_correlation": matthews_corrcoef,
    "pearson": lambda p, y: pearsonr(p, y)[0],
}


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


SUITES = sorted(ARCHIVE.glob("*/*/*/seed*/suites/blimp"))


@pytest.mark.parametrize("suite", SUITES, ids=lambda p: p.relative_to(ARCHIVE).as_posix())
def test_an_archived_blimp_result_is_recomputed_from_its_pairs(suite: Path):
    """Accuracy overall and per field / phenomenon / paradigm, and the interval, recomputed from the compact per-pair
    results with SciPy; the pairs are BLiMP's own (every paradigm's pairs 0-499, fields as the data files say)."""
    from scipy.stats import binomtest

    compact = json.loads((suite / "pairs.compact.json").read_text())
    report = json.loads((suite / "report.json").read_text())
    correct = np.array([c == "1" for c in compact["correct"]])
    assert len(correct) == compact["n"] == report["pairs"] == report["overall"]["n"]
    assert correct.mean() == pytest.approx(report["overall"]["accuracy"], abs=1e-12)
    ci = binomtest(int(correct.sum()), len(correct)).proportion_ci(method="wilson")
    assert report["overall"]["ci95"] == pytest.approx([ci.low, ci.high], abs=1e-9)
    paradigms, fields = [], []
    for paradigm, ids in compact["order"]:
        paradigms += [paradigm] * ids[1]
        fields += [compact["paradigms"][paradigm]["field"]] * ids[1]
    for level, labels in (("paradigm", paradigms), ("field", fields)):
        for name, entry in report[level].items():
            mask = np.array([x == name for x in labels])
            assert correct[mask].mean() == pytest.approx(entry["accuracy"], abs=1e-12) and mask.sum() == entry["n"]
    if not (DATA / "blimp").exists():
        pytest.skip(f"BLiMP not found at {DATA / 'blimp'}")
    for paradigm, ids in compact["order"]:
        rows = [json.loads(x) for x in (DATA / "blimp" / f"{paradigm}.jsonl").read_text().splitlines() if x.strip()]
        assert ids == [0, len(rows)] and [int(r["pairID"]) for r in rows] == list(range(len(rows)))
        assert compact["paradigms"][paradigm]["field"] == rows[0]["field"].replace("/", "_")
