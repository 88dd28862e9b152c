"""Length buckets (analysis/buckets.py and `syntaxformer analyze --by length`), on hand-made run folders: minimal
``metrics.json`` / ``dev_predictions.json`` / ``run.json`` (and ``per_question.json`` for SQuAD) as
``syntaxformer train`` writes them; the GLUE case reads the real CoLA dev set."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest

from syntaxformer.analysis.buckets import (
    assign_buckets,
    format_length_buckets,
    length_bucket,
    length_buckets,
    make_buckets,
)
from syntaxformer.cli import main
from syntaxformer.data.examples import question_words
from syntaxformer.errors import SyntaxformerError


def test_length_buckets():
    assert question_words("  Who led the   Normans? ") == 4
    assert [length_bucket(n) for n in (1, 5, 6, 10, 11, 20, 21, 40)] == [
        "1-5",
        "1-5",
        "6-10",
        "6-10",
        "11-15",
        "16-20",
        ">20",
        ">20",
    ]


def test_make_buckets_count_range_and_edges():
    lengths = [1, 2, 2, 3, 4, 5, 6, 7, 8, 20]
    count = make_buckets(lengths, 2, "count")
    assert count == [(1, 4), (5, 20)]  # 5 examples each
    assert make_buckets(lengths, 4, "range") == [(1, 5), (6, 10), (11, 20)]  # widths 5; 11-15 is empty: joined on
    assert make_buckets(lengths, mode="count", edges=[3, 6, 50]) == [(1, 3), (4, 6), (7, 20)]
    assert make_buckets([7, 7, 7], 5) == [(7, 7)]  # ties stay together
    which = assign_buckets(lengths, count)
    assert which.tolist() == [0] * 5 + [1] * 5
    # every length falls in exactly one bucket, for any mode and number
    rng = np.random.default_rng(0)
    x = rng.integers(1, 60, 200)
    for mode in ("count", "range"):
        for n in (1, 3, 7):
            b = make_buckets(x, n, mode)
            assert len(b) <= n and b[0][0] == x.min() and b[-1][1] == x.max()
            assert all(hi + 1 == lo for (_, hi), (lo, _) in itertools.pairwise(b))
            assert (assign_buckets(x, b) >= 0).all()
    with pytest.raises(SyntaxformerError, match="unknown bucket mode"):
        make_buckets(x, 3, "quantile")
    with pytest.raises(SyntaxformerError, match="increasing"):
        make_buckets(x, edges=[10, 5])


def _write(folder: Path, name: str, data) -> None:
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


def test_length_buckets_squad_per_question(tmp_path, capsys):
    """SQuAD runs: questions by their word count, EM / F1 per bucket from per_question.json."""
    runs = []
    for name, em in (("a", [1, 0, 0, 1, 1, 0]), ("b", [1, 1, 0, 1, 1, 1])):
        folder = tmp_path / name
        folder.mkdir()
        per_q = {
            f"q{i}": {"question_words": w, "em_best": e, "f1_best": 0.5 * e + 0.25}
            for i, (w, e) in enumerate(zip([3, 4, 9, 10, 12, 30], em))
        }
        _write(folder, "per_question.json", per_q)
        _write(folder, "metrics.json", {"task": "squad2", "main_metric": "f1", "dev": {"f1": 50.0}})
        _write(folder, "dev_predictions.json", {"ids": list(per_q), "predictions": [""] * 6})
        runs.append(folder)
    r = length_buckets(runs, edges=[5, 10])
    assert [(b["label"], b["n"]) for b in r["buckets"]] == [("3-5", 2), ("6-10", 2), ("11-30", 2)]
    assert r["buckets"][0]["scores"][0] == {"exact": 50.0, "f1": 50.0}
    assert r["buckets"][1]["scores"] == [{"exact": 50.0, "f1": 50.0}, {"exact": 50.0, "f1": 50.0}]
    assert r["buckets"][2]["scores"][1] == {"exact": 100.0, "f1": 75.0}
    assert r["unit"] == "question words"
    table = format_length_buckets(r, ["base", "sg"]).splitlines()
    assert table[3].split() == ["length", "n", "base", "exact", "base", "f1", "sg", "exact", "sg", "f1", "B", "−", "A"]
    assert table[6].split()[-1] == "+50.0000"
    assert (
        main(
            [
                "analyze",
                str(runs[0]),
                str(runs[1]),
                "--by",
                "length",
                "--edges",
                "5,10",
                "--names",
                "base,sg",
                "--output",
                str(tmp_path / "out.json"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "out.json").read_text())["buckets"] == r["buckets"]
    assert "11-30" in capsys.readouterr().out
    assert main(["analyze", str(runs[0]), "--edges", "5,x"]) == 1
    assert "--edges" in capsys.readouterr().err


def test_length_buckets_glue_run_against_the_dev_file(tmp_path):
    """A CoLA run: sentence lengths from the dev file its run.json names, Matthews correlation per bucket —
    checked against lengths and scores computed here from the TSV itself."""
    data = os.environ.get("SYNTAXFORMER_DATA")
    dev = Path(data or "", "glue", "CoLA", "dev.tsv")
    if not data or not dev.is_file():
        pytest.skip("needs the real CoLA dev set: set SYNTAXFORMER_DATA to the shared data folder")
    from syntaxformer.tasks.base import get_task
    from syntaxformer.training.config import RunConfig

    rows = [line.split("\t") for line in dev.read_text(encoding="utf-8").splitlines() if line.strip()]
    labels = np.array([int(r[1]) for r in rows])
    lengths = np.array([len(r[3].split()) for r in rows])
    config = RunConfig.from_dict({"task": "cola"})
    ids = [e.guid for e in get_task("cola").load_split("dev", config.data_options("dev", None)).examples]
    assert len(ids) == len(rows)
    rng = np.random.default_rng(0)
    folder = tmp_path / "cola"
    folder.mkdir()
    preds = np.where(rng.random(len(rows)) < 0.8, labels, 1 - labels)
    _write(
        folder,
        "run.json",
        {"task": {"name": "cola", "options": {}, "module": "syntaxformer.tasks.glue"}, "config": config.to_dict()},
    )
    _write(folder, "metrics.json", {"task": "cola", "main_metric": "matthews_correlation", "dev": {}})
    _write(
        folder,
        "dev_predictions.json",
        {"split": "dev", "ids": ids, "predictions": preds.tolist(), "labels": labels.tolist()},
    )

    def matthews(p, y):
        tp, tn = np.sum((p == 1) & (y == 1)), np.sum((p == 0) & (y == 0))
        fp, fn = np.sum((p == 1) & (y == 0)), np.sum((p == 0) & (y == 1))
        den = np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
        return 0.0 if den == 0 else float(tp * tn - fp * fn) / den

    r = length_buckets([folder], n_buckets=4, mode="range")
    assert r["unit"] == "words" and sum(b["n"] for b in r["buckets"]) == len(rows)
    assert r["buckets"][0]["low"] == lengths.min() and r["buckets"][-1]["high"] == lengths.max()
    for b in r["buckets"]:
        sel = (lengths >= b["low"]) & (lengths <= b["high"])
        assert b["n"] == sel.sum()
        assert b["scores"][0]["matthews_correlation"] == pytest.approx(matthews(preds[sel], labels[sel]))
    other = tmp_path / "other"
    other.mkdir()
    _write(other, "metrics.json", {"task": "cola", "main_metric": "matthews_correlation", "dev": {}})
    _write(other, "dev_predictions.json", {"ids": ids[:5], "predictions": [0] * 5, "labels": [0] * 5})
    with pytest.raises(SyntaxformerError, match="scored on different dev examples: other example ids"):
        length_buckets([folder, other])  # refused before any length is read
    _write(other, "dev_predictions.json", {"ids": ids, "predictions": preds.tolist(), "labels": labels.tolist()})
    with pytest.raises(SyntaxformerError, match="no run.json"):
        length_buckets([folder, other])


def test_length_buckets_translation_bleu_per_bucket(tmp_path):
    """A translation run: source sentences by length from the files its run.json names, sacreBLEU corpus BLEU of
    each bucket's sentences."""
    sacrebleu = pytest.importorskip("sacrebleu")
    from syntaxformer.data.readers.parallel import read_corpus
    from syntaxformer.training.config import RunConfig

    sources = ["a b", "a b c", "a b c d e f", "a b c d e f g h"] * 3
    refs = ["zwei worte", "drei kleine worte", "ein etwas längerer satz hier", "der längste satz von allen hier"] * 3
    hyps = ["zwei worte", "drei worte", "ein längerer satz hier", "der längste satz hier"] * 3
    src, tgt = tmp_path / "valid.en", tmp_path / "valid.de"
    src.write_text("".join(s + "\n" for s in sources), encoding="utf-8")
    tgt.write_text("".join(r + "\n" for r in refs), encoding="utf-8")
    options = {"valid_source": str(src), "valid_target": str(tgt)}
    folder = tmp_path / "nmt"
    folder.mkdir()
    config = RunConfig.from_dict({"task": "translation", "task_options": options}).to_dict()
    _write(
        folder,
        "run.json",
        {
            "task": {"name": "translation", "options": options, "module": "syntaxformer.tasks.translation"},
            "config": config,
        },
    )
    _write(folder, "metrics.json", {"task": "translation", "main_metric": "bleu", "dev": {"bleu": 1.0}})
    _write(folder, "dev_predictions.json", {"split": "dev", "ids": read_corpus(src, tgt).ids, "predictions": hyps})
    r = length_buckets([folder], edges=[3])
    assert r["unit"] == "source words" and [(b["label"], b["n"]) for b in r["buckets"]] == [("2-3", 6), ("4-8", 6)]
    short = [i for i, s in enumerate(sources) if len(s.split()) <= 3]
    long_ = [i for i in range(len(sources)) if i not in short]
    for b, idx in zip(r["buckets"], (short, long_)):
        ref = sacrebleu.corpus_bleu([hyps[i] for i in idx], [[refs[i] for i in idx]]).score
        assert b["scores"][0]["bleu"] == pytest.approx(ref)
