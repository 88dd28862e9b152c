"""Suite comparisons refuse the incomparable: results of other pairs under the same suite name (pair fingerprints),
a run given twice, ``correct`` that is not a boolean, seeds that do not match; they say how the runs were paired;
a suite name is a name, not a path."""

import json
from pathlib import Path

import pytest

from syntaxformer.analysis.compare_runs import pair_by_seed
from syntaxformer.analysis.minimal_pairs import MinimalPair, pairs_fingerprint, suite_folder
from syntaxformer.cli import main
from syntaxformer.errors import ConfigError, InputError

PAIRS = [MinimalPair("agr", str(i), f"The dog {i} runs .", f"The dog {i} run .", "morphology", "agreement")
         for i in range(6)]  # fmt: skip


def _run(folder: Path, seed, correct, pairs=PAIRS, fingerprint=True) -> str:
    """A run folder holding a result of suite 'mine': its seed in run.json, per-pair records, the report."""
    out = folder / "suites" / "mine"
    out.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"task": {"name": "cola"}, "config": {"seed": seed}}))
    records = [{"paradigm": p.paradigm, "pair_id": p.pair_id, "field": p.field, "phenomenon": p.phenomenon,
                "correct": c} for p, c in zip(pairs, correct)]  # fmt: skip
    (out / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = {
        "suite": "mine",
        "pairs": len(records),
        **({"pairs_sha256": pairs_fingerprint(pairs)} if fingerprint else {}),
    }
    (out / "report.json").write_text(json.dumps(report))
    return str(folder)


def _significance(a, b, capsys, *extra) -> tuple[int, str, str]:
    code = main(["significance", "--suite", "mine", "--a", *a, "--b", *b, "--resamples", "100", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_suite_pairing_by_seed_is_said_and_mismatched_seeds_are_refused(tmp_path, capsys):
    a = [_run(tmp_path / f"a{s}", s, [True, False, True, True, False, True]) for s in (2, 1)]
    b = [_run(tmp_path / f"b{s}", s, [True, True, True, True, False, False]) for s in (1, 2)]
    code, out, err = _significance(a, b, capsys)
    assert code == 0, err
    assert out.splitlines()[0] == "runs paired by seed (1, 2); every result scored on the same pairs (fingerprint)"
    c3 = _run(tmp_path / "c3", 3, [True] * 6)
    code, _, err = _significance(a, [b[1], c3], capsys)
    assert code == 1 and "A has seeds [1, 2] and B [2, 3]" in err


def test_suite_pairing_refuses_a_run_given_twice(tmp_path, capsys):
    a1 = _run(tmp_path / "a1", 1, [True] * 6)
    b = [_run(tmp_path / f"b{s}", s, [False] * 6) for s in (1, 2)]
    code, _, err = _significance([a1, str(tmp_path / "x" / ".." / "a1")], b, capsys)
    assert code == 1 and "given twice" in err and "system A" in err
    with pytest.raises(InputError, match="given twice"):
        pair_by_seed(["r1", "r1"], ["r2", "r3"], [1, 2], [1, 2])


def test_suite_pairing_refuses_results_of_other_pairs_under_the_same_name(tmp_path, capsys):
    swapped = [MinimalPair(p.paradigm, p.pair_id, p.bad, p.good, p.field, p.phenomenon) for p in PAIRS]
    a = _run(tmp_path / "a", 1, [True] * 6)
    b = _run(tmp_path / "b", 1, [False] * 6, pairs=swapped)  # same ids, the sentences swapped
    code, _, err = _significance([a], [b], capsys)
    assert code == 1 and "different minimal pairs" in err and str(tmp_path / "b") in err
    old = _run(tmp_path / "old", 1, [False] * 6, fingerprint=False)  # written before fingerprints: said so
    code, out, _ = _significance([a], [old], capsys)
    assert code == 0 and "pairs matched by id (1 result(s) record no fingerprint" in out


@pytest.mark.parametrize("value", ["false", 0, None])
def test_suite_pairing_reads_correct_as_a_boolean_or_refuses(tmp_path, capsys, value):
    a = _run(tmp_path / "a", 1, [True] * 6)
    b = _run(tmp_path / "b", 1, [True] * 5 + [value])
    code, _, err = _significance([a], [b], capsys)
    assert code == 1 and "pairs.jsonl:6: 'correct' must be true or false" in err


def test_suite_name_is_a_name_not_a_path(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("../../x", "a/b", "..", ""):
        with pytest.raises(ConfigError, match="a suite name is a name"):
            suite_folder(name, data)
    run = tmp_path / "deep" / "er" / "run"
    run.mkdir(parents=True)
    code = main(["evaluate", str(run), "--suite", "../../x", "--suite-data", str(data)])
    assert code == 1 and "a suite name is a name" in capsys.readouterr().err
    assert not (tmp_path / "deep" / "x").exists() and not (run / "suites").exists()
    assert suite_folder("mine", data) == ("mine", data)
