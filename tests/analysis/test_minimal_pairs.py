"""Minimal-pair suites: the reader, the scorer on a real tiny run, the report's intervals and the paired comparison,
each against an independent computation (scipy, a direct loop, the predictor itself)."""

import json
import math

import numpy as np
import pytest

from syntaxformer.analysis.minimal_pairs import (
    acceptable_label,
    compare_minimal_pairs,
    holm,
    minimal_pair_report,
    read_minimal_pairs,
    score_minimal_pairs,
    wilson_interval,
)
from syntaxformer.cli import main
from syntaxformer.errors import ConfigError, DataError, InputError, SyntaxformerError

PAIRS = {
    "agreement_a": [
        ("The dogs bark.", "The dogs barks.", "morphology", "s-v_agreement"),
        ("A cat sleeps.", "A cat sleep.", "morphology", "s-v_agreement"),
    ],
    "island_b": [
        ("What did you see?", "What did you see it?", "syntax", "island_effects"),
        ("Who left?", "Who left him?", "syntax", "island_effects"),
        ("The film was fine.", "The film fine was.", "syntax", "island_effects"),
    ],
}


def write_suite(folder, swap: bool = False, bom: bool = False):
    folder.mkdir(parents=True, exist_ok=True)
    for uid, rows in PAIRS.items():
        lines = []
        for i, (good, bad, field, term) in enumerate(rows):
            if swap:
                good, bad = bad, good
            lines.append(
                json.dumps(
                    {
                        "sentence_good": good,
                        "sentence_bad": bad,
                        "field": field,
                        "linguistics_term": term,
                        "UID": uid,
                        "pairID": str(i),
                    }
                )
            )
        (folder / f"{uid}.jsonl").write_text(("\ufeff" if bom else "") + "\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_minimal_pairs_reader_reads_blimp_format_with_defaults_and_filters(tmp_path):
    pairs = read_minimal_pairs(write_suite(tmp_path / "s", bom=True))
    assert [(p.paradigm, p.pair_id) for p in pairs] == [
        ("agreement_a", "0"),
        ("agreement_a", "1"),
        ("island_b", "0"),
        ("island_b", "1"),
        ("island_b", "2"),
    ]
    assert pairs[0].good == "The dogs bark." and pairs[0].bad == "The dogs barks."
    assert pairs[2].field == "syntax" and pairs[2].phenomenon == "island_effects"
    # one spelling per field (BLiMP writes one paradigm's field "syntax/semantics", the others "syntax_semantics")
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"sentence_good": "A.", "sentence_bad": "B.", "field": "syntax/semantics"}\n', encoding="utf-8")
    assert read_minimal_pairs(odd)[0].field == "syntax_semantics"
    assert len(read_minimal_pairs(tmp_path / "s", max_pairs=1)) == 2
    assert {p.paradigm for p in read_minimal_pairs(tmp_path / "s", paradigms=["island_b"])} == {"island_b"}
    # a user's own file: only the two sentences; paradigm from the file name, pair id from the line
    own = tmp_path / "mine.jsonl"
    own.write_text('{"sentence_good": "It works.", "sentence_bad": "It work."}\n', encoding="utf-8")
    (p,) = read_minimal_pairs(own)
    assert (p.paradigm, p.pair_id, p.field, p.phenomenon) == ("mine", "1", "unspecified", "mine")


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"sentence_good": "Fine."}', "'sentence_bad' must be a non-empty text"),
        ('{"sentence_good": ["Fine."], "sentence_bad": "Bad."}', "'sentence_good' must be a non-empty text"),
        ('{"sentence_good": "Fine.", "sentence_bad": "  "}', "'sentence_bad' must be a non-empty text"),
        ("not json", "bad.jsonl:1"),
        (
            '{"sentence_good": "A.", "sentence_bad": "B.", "pairID": 1}\n'
            '{"sentence_good": "C.", "sentence_bad": "D.", "pairID": 1}',
            "already read at",
        ),
    ],
)
def test_minimal_pairs_reader_refuses_bad_lines_naming_file_and_line(tmp_path, line, message):
    (tmp_path / "bad.jsonl").write_text(line + "\n", encoding="utf-8")
    with pytest.raises(SyntaxformerError, match=message) as e:  # DataError, or FormatError for a bad JSON line
        read_minimal_pairs(tmp_path)
    assert "bad.jsonl" in str(e.value)


def test_minimal_pairs_reader_refuses_missing_folders_and_paradigms(tmp_path):
    with pytest.raises(DataError, match="no such file or folder"):
        read_minimal_pairs(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no .jsonl file"):
        read_minimal_pairs(tmp_path / "empty")
    with pytest.raises(ConfigError, match="no pairs of paradigm"):
        read_minimal_pairs(write_suite(tmp_path / "s"), paradigms=["nope"])


def test_acceptable_label_is_named_or_refused():
    assert acceptable_label(["unacceptable", "acceptable"], None) == "acceptable"
    assert acceptable_label(["0", "1"], "cola") == "1"
    assert acceptable_label(["neg", "pos"], "sst2", "pos") == "pos"
    with pytest.raises(ConfigError, match="--acceptable-label"):
        acceptable_label(["0", "1"], "sst2")
    with pytest.raises(ConfigError, match="not a class"):
        acceptable_label(["0", "1"], "cola", "2")


def test_wilson_interval_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for k, n in [(0, 10), (3, 10), (10, 10), (480, 500), (1, 1)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_holm_matches_a_direct_step_down():
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 12):
        p = rng.uniform(0, 0.2, size=m).tolist()
        # Holm by its definition: the i-th smallest p times (m - i), made monotone, capped at 1
        ranked = sorted(range(m), key=lambda i: p[i])
        want = [0.0] * m
        best = 0.0
        for r, i in enumerate(ranked):
            best = max(best, min(1.0, (m - r) * p[i]))
            want[i] = best
        assert holm(p) == pytest.approx(want)


def _records(correct, field="syntax"):
    return [
        {
            "paradigm": f"p{j % 3}",
            "pair_id": str(j),
            "field": field if j % 2 else "semantics",
            "phenomenon": f"ph{j % 3}",
            "correct": bool(c),
        }
        for j, c in enumerate(correct)
    ]


def test_report_counts_each_level_and_its_interval():
    correct = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
    report = minimal_pair_report(_records(correct))
    assert report["overall"]["accuracy"] == pytest.approx(0.7) and report["overall"]["n"] == 10
    sem = [c for j, c in enumerate(correct) if j % 2 == 0]
    assert report["field"]["semantics"]["accuracy"] == pytest.approx(sum(sem) / len(sem))
    assert report["field"]["semantics"]["ci95"] == pytest.approx(list(wilson_interval(sum(sem), len(sem))))
    assert report["paradigm"]["p1"]["n"] == 3 and report["paradigm"]["p1"]["field"] == "semantics/syntax"


def test_comparison_over_seeds_is_seed_level_and_one_seed_bootstraps_pairs():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    n, k = 400, 3
    a = [rng.random(n) < 0.70 for _ in range(k)]
    b = [rng.random(n) < 0.78 for _ in range(k)]
    r = compare_minimal_pairs([_records(x) for x in a], [_records(x) for x in b], level="overall", resamples=4000)
    g = r["groups"]["all"]
    d = np.array(b, float) - np.array(a, float)
    assert g["difference"] == pytest.approx(d.mean())
    # seeds: the t-interval and paired t-test of the per-seed accuracies (SciPy), the exact sign-flip test, no
    # bootstrap (a bootstrap over seeds and pairs rejects too often with 3-5 seeds)
    per_seed = d.mean(axis=1)
    assert "bootstrap" not in g
    assert g["seed_level"]["ci95"] == pytest.approx(
        stats.t.interval(0.95, k - 1, loc=per_seed.mean(), scale=stats.sem(per_seed))
    )
    want = stats.ttest_rel(np.array(b, float).mean(1), np.array(a, float).mean(1)).pvalue
    assert g["t_test"]["p_value"] == pytest.approx(want) == g["p_holm"]
    assert g["seed_level"]["sign_flip_p"] == pytest.approx(2 / 2**k)  # every seed's difference is positive
    # one seed: the bootstrap over pairs, against a slow resampling
    one = compare_minimal_pairs([_records(a[0])], [_records(b[0])], level="overall", resamples=4000)["groups"]["all"]
    slow_rng = np.random.default_rng(1)
    boots = [d[0][slow_rng.integers(0, n, size=n)].mean() for _ in range(4000)]
    assert one["bootstrap"]["ci95"] == pytest.approx(np.quantile(boots, [0.025, 0.975]), abs=0.01)
    assert one["p_holm"] == one["bootstrap"]["p_value"] and "seed_level" not in one


def test_comparison_of_a_system_with_itself_finds_nothing_and_holm_covers_the_family():
    rng = np.random.default_rng(2)
    runs = [_records(rng.random(300) < 0.6) for _ in range(2)]
    r = compare_minimal_pairs(runs, runs, level="field", resamples=500)
    assert set(r["groups"]) == {"semantics", "syntax"}
    for g in r["groups"].values():
        assert g["difference"] == 0 and g["t_test"]["p_value"] == 1.0 and g["p_holm"] == 1.0
    one = compare_minimal_pairs(runs[:1], [_records(rng.random(300) < 0.6)], level="field", resamples=500)
    ps = [one["groups"][f]["bootstrap"]["p_value"] for f in sorted(one["groups"])]
    assert [one["groups"][f]["p_holm"] for f in sorted(one["groups"])] == pytest.approx(holm(ps))
    assert all("mcnemar" in g for g in one["groups"].values())


def test_comparison_refuses_runs_on_different_pairs_or_seed_counts():
    a = _records([1, 0, 1, 1])
    b = _records([1, 1, 1, 0])
    with pytest.raises(InputError, match="different minimal pairs"):
        compare_minimal_pairs([a], [b[:3]])
    with pytest.raises(InputError, match="pair them by seed"):
        compare_minimal_pairs([a, a], [b])
    swapped = [dict(r) for r in a]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    with pytest.raises(InputError, match="other minimal pairs"):
        compare_minimal_pairs([a, swapped], [b, b])


@pytest.fixture(scope="module")
def sst2_run(sst2_runs):
    """A tiny real run (SST-2 classes stand in for acceptable / unacceptable: "positive" plays acceptable)."""
    return sst2_runs["sgnet"]


def test_scoring_on_a_real_run_reads_each_sentence_of_the_pair_in_its_place(sst2_run, tmp_path):
    """p_good is the model's probability for the good sentence itself; swapping the files swaps them."""
    from syntaxformer.inference import Predictor

    predictor = Predictor.from_run(sst2_run)
    pairs = read_minimal_pairs(write_suite(tmp_path / "s"))
    records = score_minimal_pairs(predictor, pairs, acceptable="positive", batch_size=2, progress=False)
    direct = {
        r["text"]: r["scores"]["positive"] for r in predictor.predict([t for p in pairs for t in (p.good, p.bad)])
    }
    for p, r in zip(pairs, records):
        assert (r["paradigm"], r["pair_id"]) == (p.paradigm, p.pair_id)
        assert (r["good"], r["bad"]) == (p.good, p.bad)  # the records carry their sentences
        assert r["p_good"] == pytest.approx(direct[p.good], abs=1e-6)
        assert r["p_bad"] == pytest.approx(direct[p.bad], abs=1e-6)
        assert r["correct"] == (direct[p.good] > direct[p.bad])
    swapped = score_minimal_pairs(
        predictor, read_minimal_pairs(write_suite(tmp_path / "w", swap=True)), acceptable="positive", progress=False
    )
    for r, s in zip(records, swapped):
        assert (s["p_good"], s["p_bad"]) == pytest.approx((r["p_bad"], r["p_good"]), abs=1e-6)
        if not math.isclose(r["p_good"], r["p_bad"]):
            assert s["correct"] != r["correct"]
    with pytest.raises(ConfigError, match="--acceptable-label"):
        score_minimal_pairs(predictor, pairs, progress=False)


def test_cli_evaluate_suite_writes_records_and_refuses_to_overwrite(sst2_run, tmp_path, capsys):
    suite = write_suite(tmp_path / "my_pairs")
    out = tmp_path / "out"
    args = ["evaluate", sst2_run, "--suite", str(suite), "--acceptable-label", "positive", "--output-dir", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr()
    summary = json.loads(printed.out)
    assert summary["suite"] == "my_pairs" and summary["pairs"] == 5
    records = [json.loads(x) for x in (out / "suites" / "my_pairs" / "pairs.jsonl").read_text().splitlines()]
    report = json.loads((out / "suites" / "my_pairs" / "report.json").read_text())
    assert len(records) == 5 and report["overall"]["correct"] == sum(r["correct"] for r in records)
    gaps = sorted(abs(r["p_good"] - r["p_bad"]) for r in records)
    assert summary["chance"] == report["chance"] == 0.5 and summary["median_abs_difference"] == pytest.approx(gaps[2])
    assert summary["ties"] == report["ties"] == sum(g == 0 for g in gaps)
    # the terminal shows a table per paradigm, and says what chance and ties are
    table = printed.err
    assert all(any(line.startswith(uid) for line in table.splitlines()) for uid in PAIRS)
    assert "chance is 0.5" in table and "ties, counted wrong" in table and "median |p_good - p_bad|" in table
    assert main(args) == 1  # an earlier result is never replaced silently
    assert "--overwrite" in capsys.readouterr().err
    assert main(args + ["--overwrite"]) == 0
    capsys.readouterr()
    # the comparison command reads the records back (a run with itself: no difference)
    assert main(["significance", "--suite", "my_pairs", "--a", str(out), "--b", str(out), "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert "morphology" in text and "syntax" in text and "Holm p 1.0000" in text


def test_compact_records_round_trip_and_are_read_from_an_archived_run(tmp_path):
    from syntaxformer.analysis.minimal_pairs import (
        COMPACT_FILE,
        compact_records,
        expand_compact_records,
        suite_records_of,
    )

    records = [{**r, "field": f"field of {r['paradigm']}"} for r in _records([1, 0, 1, 1, 0, 1])]
    with pytest.raises(InputError, match="different fields"):
        compact_records(_records([1, 0, 1, 1]))
    records += [{"paradigm": "odd", "pair_id": "x7", "field": "f", "phenomenon": "q", "correct": True}]
    records.sort(key=lambda r: r["paradigm"])  # paradigms in blocks, as a suite is read
    compact = compact_records(records)
    back = expand_compact_records(json.loads(json.dumps(compact)))
    assert back == [{k: r[k] for k in ("paradigm", "pair_id", "field", "phenomenon", "correct")} for r in records]
    folder = tmp_path / "run" / "suites" / "mine"
    folder.mkdir(parents=True)
    (folder / COMPACT_FILE).write_text(json.dumps(compact))
    assert suite_records_of(tmp_path / "run", "mine") == back
    compact["correct"] = compact["correct"][:-1]
    with pytest.raises(DataError, match="results for n"):
        expand_compact_records(compact)


def test_suite_comparison_text_names_the_seed_level_tests_or_the_fixed_models():
    from syntaxformer.commands.significance import format_suite_comparison

    rng = np.random.default_rng(3)
    runs_a = [_records(rng.random(200) < 0.6) for _ in range(3)]
    runs_b = [_records(rng.random(200) < 0.7) for _ in range(3)]
    seeds = format_suite_comparison({"suite": "blimp", **compare_minimal_pairs(runs_a, runs_b, resamples=200)})
    assert "t-interval, paired t-test and exact sign-flip test over seeds" in seeds and "sign-flip p 0.2500" in seeds
    one = format_suite_comparison({"suite": "blimp", **compare_minimal_pairs(runs_a[:1], runs_b[:1], resamples=200)})
    assert "for these trained models only" in one and "McNemar p" in one
