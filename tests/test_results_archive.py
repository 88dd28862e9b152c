"""The archived sweep runs (docs/results/runs/, copied there by `experiments/sgnet_glue.py archive`) are what the
docs' numbers are computed from: each run's recorded dev score is recomputed here from its archived predictions
with scikit-learn / SciPy (not the library's metric code), and the archived labels are the real dev sets'."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from tests.conftest import DATA

ARCHIVE = Path(__file__).resolve().parents[1] / "docs" / "results" / "runs"
#: SWEEP/TASK/VARIANT/seedN folders of the classification sweeps (the translation study's FRACTION/ARM/seedN runs
#: hold hypotheses instead: tested below)
RECORDS = sorted(p for p in ARCHIVE.glob("*/*/*/seed*") if not p.parents[2].name.startswith("translation"))
TRANSLATION_RUNS = sorted(ARCHIVE.glob("translation*/f*/*/seed*"))
#: the headline dev metric of a GLUE task (accuracy where not named)
_METRIC_OF = {"cola": "matthews_correlation", "mrpc": "f1", "stsb": "pearson"}
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
    metric = _METRIC_OF.get(pred["task"], "accuracy")
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


# -- the BLiMP section of docs/results.md: every accuracy and every difference, from the archive alone ----------
_BLIMP_NAMES = {
    "plain encoder": "baseline_default",
    "SG-Net": "sgnet_default",
    "extra layer, no mask": "vanilla_layer_mean",
    "SG-Net, random trees": "sgnet_default_noise1",
    "SB head baseline": "sbert_baseline",
    "SB gated": "sbert_gate",
    "SB gated, random trees": "sbert_gate_random",
}
_BLIMP_PAIRS = {
    "SG-Net − plain": ("sgnet_default", "baseline_default"),
    "SG-Net − extra layer without mask": ("sgnet_default", "vanilla_layer_mean"),
    "SG-Net − SG-Net with random trees": ("sgnet_default", "sgnet_default_noise1"),
    "SB gated − SB head baseline": ("sbert_gate", "sbert_baseline"),
    "SB gated − SB gated with random trees": ("sbert_gate", "sbert_gate_random"),
}


#: a printed 4-decimal value is within half a unit of its last digit (plus float slack: a tie such as -0.00785 may
#: print either way)
_HALF_UNIT = 5e-5 + 1e-9

#: the BLiMP sections of docs/results.md (the heading that opens each) and the archive each is made from
BLIMP_SECTIONS = {
    "## Syntactic generalisation: BLiMP": "cola_blimp_gpu_preset",
    "### Earlier, on the CPU preset": "cola_blimp",
}


def _blimp_section_tables(heading: str) -> list[list[list[str]]]:
    """The Markdown tables (rows of cells) under ``heading``, up to the next heading."""
    text = (ARCHIVE.parents[1] / "results.md").read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    ends = [i for i in (section.find("\n## ", 1), section.find("\n### ", 1)) if i > 0]
    section = section[: min(ends)]
    tables, rows = [], []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def _blimp_accuracies(run: Path) -> dict[str, float]:
    """Overall, per-field and per-phenomenon accuracy of one archived run, from its compact per-pair file (plain
    Python)."""
    from syntaxformer.analysis.minimal_pairs import suite_records_of  # the reader of the compact form only

    records = suite_records_of(run, "blimp")
    by_group: dict[str, list[bool]] = {}
    for r in records:
        by_group.setdefault(r["field"], []).append(bool(r["correct"]))
        by_group.setdefault(r["phenomenon"], []).append(bool(r["correct"]))
    out = {f: sum(v) / len(v) for f, v in by_group.items()}
    out["all"] = sum(bool(r["correct"]) for r in records) / len(records)
    return out


def _seeds_of(text: str) -> list[int]:
    return [int(s) for s in text.split(",")]


@pytest.mark.parametrize("heading", sorted(BLIMP_SECTIONS))
def test_blimp_section_cells_are_the_archive(heading: str):
    """Each accuracy cell (mean over the seeds named in its row or column) and each difference (mean over the seeds
    both systems share) of a BLiMP section, per field and, where the section has them, per phenomenon, recomputed
    from the archived per-pair results; the intervals and p-values come from `experiments/blimp_tables.py`
    (bootstrap) and are not recomputed here."""
    root = ARCHIVE / BLIMP_SECTIONS[heading] / "cola"
    if not root.is_dir():
        pytest.skip("no BLiMP archive")
    tables = _blimp_section_tables(heading)
    accuracy, comparison = tables[:2]
    fields = accuracy[0][4:]
    acc: dict[tuple[str, int], dict[str, float]] = {}

    def of(variant: str, seed: int) -> dict[str, float]:
        if (variant, seed) not in acc:
            acc[variant, seed] = _blimp_accuracies(root / variant / f"seed{seed}")
        return acc[variant, seed]

    archived = {
        v.name: sorted(int(s.name[4:]) for s in v.glob("seed*") if (s / "suites" / "blimp" / "report.json").exists())
        for v in root.iterdir()
    }
    shown = set()
    for row in accuracy[2:]:
        variant, seeds = _BLIMP_NAMES[row[0]], _seeds_of(row[1])
        assert seeds == archived[variant], (
            f"{row[0]}: the table names seeds {seeds}, the archive has {archived[variant]}"
        )
        shown.add(variant)
        dev = np.mean(
            [
                json.loads((root / variant / f"seed{s}" / "metrics.json").read_text())["dev"]["matthews_correlation"]
                for s in seeds
            ]
        )
        assert float(row[2]) == pytest.approx(dev, abs=_HALF_UNIT)
        for name, cell in zip(["all", *fields], row[3:]):
            assert float(cell) == pytest.approx(np.mean([of(variant, s)[name] for s in seeds]), abs=_HALF_UNIT), (
                row[0],
                name,
            )
    assert shown == {v for v, s in archived.items() if s}, "an archived system is missing from the table"
    groups = comparison[0][2:]
    for row in comparison[2:]:
        b, a = _BLIMP_PAIRS[row[0]]
        seeds = _seeds_of(row[1])
        assert seeds == sorted(set(archived[a]) & set(archived[b]))
        for group, cell in zip(groups, row[2:]):
            diff = float(cell.strip("*").split(" ")[0])
            want = np.mean([of(b, s)[group] - of(a, s)[group] for s in seeds])
            assert diff == pytest.approx(want, abs=_HALF_UNIT), (row[0], group)
    if len(tables) < 4:
        return
    # per phenomenon (transposed: a row per phenomenon, a column per system "name (seeds)" / comparison)
    by_phenomenon, phenomenon_comparison = tables[2:4]
    columns = [(c.rsplit(" (", 1)[0], _seeds_of(c.rsplit(" (", 1)[1].rstrip(")"))) for c in by_phenomenon[0][3:]]
    assert {_BLIMP_NAMES[n] for n, _ in columns} == shown
    for row in by_phenomenon[2:]:
        for (name, seeds), cell in zip(columns, row[3:]):
            assert seeds == archived[_BLIMP_NAMES[name]]
            want = np.mean([of(_BLIMP_NAMES[name], s)[row[0]] for s in seeds])
            assert float(cell) == pytest.approx(want, abs=_HALF_UNIT), (name, row[0])
    columns = [
        (c.rsplit(" (", 1)[0], _seeds_of(c.rsplit(" (", 1)[1].rstrip(")"))) for c in phenomenon_comparison[0][1:]
    ]
    for row in phenomenon_comparison[2:]:
        for (name, seeds), cell in zip(columns, row[1:]):
            b, a = _BLIMP_PAIRS[name]
            assert seeds == sorted(set(archived[a]) & set(archived[b]))
            want = np.mean([of(b, s)[row[0]] - of(a, s)[row[0]] for s in seeds])
            assert float(cell.strip("*").split(" ")[0]) == pytest.approx(want, abs=_HALF_UNIT), (name, row[0])


# -- the main GLUE table of docs/results.md (full training sets, seeds 1-3): every cell from the archive alone -----
_GLUE_HEADING = "### Full training sets, 3 seeds on every task"
_GLUE_TASKS = {"CoLA": "cola", "RTE": "rte", "STS-B": "stsb", "MRPC": "mrpc", "SST-2 10k": "sst2"}
_GLUE_NAMES = {
    "baseline": "baseline_default",
    "SG-Net": "sgnet_default",
    "extra layer, no mask": "vanilla_layer_mean",
    "SB head baseline": "sbert_baseline",
    "Syntax-BERT (paper)": "sbert",
    "SB gated": "sbert_gate",
    "SB gated, random masks": "sbert_gate_random",
}
_GLUE_PAIRS = {
    "SG-Net − baseline": ("sgnet_default", "baseline_default"),
    "SG-Net − extra layer without mask": ("sgnet_default", "vanilla_layer_mean"),
    "extra layer without mask − baseline": ("vanilla_layer_mean", "baseline_default"),
    "SB gated − SB head baseline": ("sbert_gate", "sbert_baseline"),
    "SB gated − SB gated with random masks": ("sbert_gate", "sbert_gate_random"),
    "Syntax-BERT (paper) − SB head baseline": ("sbert", "sbert_baseline"),
}
#: tasks of the main table whose seeds 1-3 are not all in the archive yet (the runs made before the archive existed
#: are being re-run for their predictions); their archived cells are checked, the rest of their cells are not.
#: Drop a task once its runs are all archived: the test fails while a listed task is complete.
_GLUE_AWAITING_PREDICTIONS: set[str] = set()


def _holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out (not the library's)."""
    order = np.argsort(ps)
    out, running = np.empty(len(ps)), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out.tolist()


def _glue_seed_scores(task: str, variant: str) -> dict[int, float]:
    """The archived seeds (of 1-3) of one cell, each scored from its archived predictions with scikit-learn /
    SciPy."""
    metric = _METRIC_OF.get(task, "accuracy")
    out = {}
    for seed in (1, 2, 3):
        path = ARCHIVE / "glue_sweep" / task / variant / f"seed{seed}" / "dev_predictions.json"
        if path.exists():
            pred = json.loads(path.read_text())
            out[seed] = float(REFERENCE[metric](np.asarray(pred["predictions"]), np.asarray(pred["labels"])))
    return out


def test_glue_main_table_cells_are_the_archive():
    """Every cell of the main table whose seeds 1-3 are all archived, recomputed from the archived predictions with
    scikit-learn / SciPy: mean ± std (ddof 1) per task and system; per comparison the mean per-seed difference, its
    95% t-interval over seeds and the paired t-test over seeds. Holm's correction over the table's 30 t-tests is
    recomputed too, with the per-seed scores recorded in docs/results/glue_sweep.json for the cells not archived yet.
    The bootstrap p-values are resampled by `sgnet_glue.py summarize` and not recomputed here."""
    from scipy import stats

    if not (ARCHIVE / "glue_sweep").is_dir():
        pytest.skip("no GLUE archive")
    table, comparison = _blimp_section_tables(_GLUE_HEADING)[:2]
    archived = {(t, v): _glue_seed_scores(t, v) for t in _GLUE_TASKS.values() for v in _GLUE_NAMES.values()}
    scores = {key: [s[seed] for seed in (1, 2, 3)] for key, s in archived.items() if len(s) == 3}
    complete = {t for t in _GLUE_TASKS.values() if all((t, v) in scores for v in _GLUE_NAMES.values())}
    assert complete.isdisjoint(_GLUE_AWAITING_PREDICTIONS), (
        f"archived in full now (drop from _GLUE_AWAITING_PREDICTIONS): {complete & _GLUE_AWAITING_PREDICTIONS}"
    )
    assert complete | _GLUE_AWAITING_PREDICTIONS == set(_GLUE_TASKS.values())
    recorded = json.loads((ARCHIVE.parent / "glue_sweep.json").read_text())["tasks"]
    family = {}  # per seed: the archived run, else the score recorded before the archive existed
    for (task, variant), found in archived.items():
        v = recorded[task]["variants"][variant]
        by_seed = {**dict(zip(v["seeds"], v["scores"])), **found}
        assert sorted(by_seed) == [1, 2, 3], (task, variant)
        family[task, variant] = [by_seed[s] for s in (1, 2, 3)]
    names = table[0][1:]
    checked = 0
    for row in table[2:]:
        task = _GLUE_TASKS[row[0].split(" (")[0]]
        for name, cell in zip(names, row[1:]):
            if (task, _GLUE_NAMES[name]) not in scores:
                continue
            s = scores[task, _GLUE_NAMES[name]]
            mean, std = (float(x) for x in cell.split(" (")[0].split(" ± "))
            assert cell.endswith("(3 seeds)")
            assert mean == pytest.approx(np.mean(s), abs=_HALF_UNIT), (task, name)
            assert std == pytest.approx(np.std(s, ddof=1), abs=_HALF_UNIT), (task, name)
            checked += 1
    tasks = [_GLUE_TASKS[c.split(" Δ")[0]] for c in comparison[0][1:]]
    keys, t_p = [], []
    for row in comparison[2:]:
        b, a = _GLUE_PAIRS[row[0]]
        for task, cell in zip(tasks, row[1:]):
            keys.append((row[0], task))
            t_p.append(stats.ttest_rel(family[task, b], family[task, a]).pvalue)
            if (task, a) not in scores or (task, b) not in scores:
                continue
            d = np.subtract(scores[task, b], scores[task, a])
            text = cell.strip("*")
            diff = float(text.split(" ")[0])
            low, high = (float(x) for x in text[text.index("[") + 1 : text.index("]")].split(", "))
            half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
            assert diff == pytest.approx(d.mean(), abs=_HALF_UNIT), (row[0], task)
            assert [low, high] == pytest.approx([d.mean() - half, d.mean() + half], abs=5e-4 + 1e-9), (row[0], task)
            printed = text.split("; t ")[1].split(",")[0]
            if printed == "<0.001":
                assert t_p[-1] < 0.001, (row[0], task)
            else:
                assert float(printed) == pytest.approx(t_p[-1], abs=5e-4 + 1e-9), (row[0], task)
            checked += 1
    # every archived cell was found in the table: the systems, and the comparisons of two archived systems
    pairs = sum((t, a) in scores and (t, b) in scores for b, a in _GLUE_PAIRS.values() for t in _GLUE_TASKS.values())
    assert checked == len(scores) + pairs
    for (name, task), adjusted in zip(keys, _holm(t_p)):
        cell = next(r for r in comparison[2:] if r[0] == name)[1 + tasks.index(task)]
        printed = cell.strip("*").split("Holm ")[1].rstrip(")")
        assert (0.0 if printed == "<0.001" else float(printed)) == pytest.approx(adjusted, abs=5e-4 + 1e-9), (
            name,
            task,
        )
        assert cell.startswith("**") == (adjusted < 0.05), (name, task)


# -- the translation study: every BLEU from the archived hypotheses, the tables from the archive ----------------------


@pytest.mark.parametrize("run", TRANSLATION_RUNS, ids=lambda p: p.relative_to(ARCHIVE).as_posix())
def test_an_archived_translation_runs_bleu_is_recomputed_from_its_hypotheses(run: Path):
    """sacreBLEU itself (not the library's wrapper) on the archived hypotheses against the references: the BLEU
    recorded in metrics.json, for every evaluation set; the dev-BLEU curve has a point per validation up to the
    last update."""
    from sacrebleu.metrics import BLEU

    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["eval"], run
    for name, scores in metrics["eval"].items():
        recorded = Path(metrics["task_options"]["eval_sets"][name][1])  # where the run read it, under its data root
        reference = DATA.joinpath(*recorded.parts[len(recorded.parts) - recorded.parts[::-1].index("data") :])
        if not reference.exists():
            pytest.skip(f"references not found at {reference}")
        text = reference.read_text(encoding="utf-8")
        if reference.suffix == ".sgm":  # WMT: the text of each <seg>, stripped, in file order (as sacreBLEU reads it)
            refs = [m.group(1).strip() for m in re.finditer(r"<seg\b[^>]*>(.*?)</seg>", text, re.IGNORECASE)]
        else:
            refs = text.split("\n")[:-1]
        hyps = (run / f"hyp.{name}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        assert len(hyps) == len(refs) == scores["n"]
        assert BLEU().corpus_score(hyps, [refs]).score == pytest.approx(scores["bleu"], abs=1e-9), (run, name)
    curve = json.loads((run / "dev_bleu.json").read_text())
    steps = [c["step"] for c in curve]  # one point per validation (every 50 updates at 10%, every 200 on the GPU)
    assert steps and steps == list(range(steps[0], metrics["train"]["global_step"] + 1, steps[0])), run


def test_results_md_translation_tables_are_the_archive():
    """The translation study's tables in docs/results.md are what `translation.py summarize` makes from the archive
    now (BLEU from the hypotheses, the tests over seeds, the fixed-model paired bootstraps, the curves)."""
    import importlib.util
    import sys

    if not TRANSLATION_RUNS:
        pytest.skip("no translation archive")
    spec = importlib.util.spec_from_file_location("translation", ARCHIVE.parents[2] / "experiments" / "translation.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["translation"] = module
    spec.loader.exec_module(module)
    summary = module._summarize(argparse.Namespace(to=str(ARCHIVE.parents[2] / module.ARCHIVE), resamples=1000))
    text = (ARCHIVE.parents[1] / "results.md").read_text(encoding="utf-8")
    start, end = "<!-- TRANSLATION-TABLES -->", "<!-- /TRANSLATION-TABLES -->"
    shown = text[text.index(start) + len(start) : text.index(end)].strip()
    assert shown == module._markdown(summary).strip()
