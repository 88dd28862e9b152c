"""Check :mod:`syntaxformer.tasks.squad_metric` against an independent implementation of the official SQuAD 2.0
evaluation, on a hand-made prediction file.

The hand-made predictions (``make``) cover, over the questions of ``../shared/data/squad2/dev-v2.0-sample.json``:
exact gold answers, gold answers with other case / punctuation / articles / white space, partial overlaps,
wrong answers, empty predictions for answerable questions, empty and non-empty predictions for unanswerable
questions, non-ASCII text, missing-from-nothing (every question predicted), and no-answer scores with many ties.
They are written (with the no-answer scores) to ``tests/fixtures/squad2_handmade_predictions.json``.

``check`` scores that file with our metric and with an oracle, and prints both and their differences:

* ``--oracle evaluate-v2.0.py``: the official script (run as a subprocess, as its README says:
  ``python evaluate-v2.0.py data.json pred.json --na-prob-file na.json``), if you have it;
* ``--oracle squad_metrics.py``: Hugging Face's port of the official script (``transformers/data/metrics/
  squad_metrics.py`` of transformers 2.x-4.x; e.g. ``pip download --no-deps transformers==4.30.2`` and unzip that
  one file). It is loaded with stand-ins for its two package-relative imports (a logger and ``BasicTokenizer``,
  which its evaluation functions do not use).

``--record`` stores the oracle's numbers in the fixture, where ``tests/tasks/test_squad.py`` compares our metric
with them on every test run (so the check keeps holding without the oracle at hand).

Usage::

    python experiments/check_squad_metric.py make
    python experiments/check_squad_metric.py check --oracle /tmp/squad_metrics.py --record
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import types
from pathlib import Path

os.environ.setdefault(
    "SYNTAXFORMER_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)  # the library reads data only where told

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "squad2_handmade_predictions.json"
DATA = ROOT.parent / "shared" / "data" / "squad2" / "dev-v2.0-sample.json"


def _questions(data: dict) -> list[dict]:
    return [q for a in data["data"] for p in a["paragraphs"] for q in p["qas"]]


def _variant(text: str, rng: random.Random) -> str:
    """The gold answer changed in ways the normalisation removes (case, punctuation, articles, spaces)."""
    choice = rng.randrange(5)
    if choice == 0:
        return text.upper()
    if choice == 1:
        return f"the {text}."
    if choice == 2:
        return f"  {text} ,"
    if choice == 3:
        return f"An {text.lower()}!"
    return text.replace(" ", "  ")


def make(data_file: Path = DATA, out: Path = FIXTURE, seed: int = 0) -> dict:
    data = json.loads(data_file.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    preds, na = {}, {}
    for k, q in enumerate(_questions(data)):
        golds = [a["text"] for a in q["answers"]]
        kind = k % 10
        if q.get("is_impossible") or not golds:
            preds[q["id"]] = ["", "", "", "Paris", "the", "ünïcödé — 1", "", "a", "", "Normandy"][kind]
        elif kind == 0:
            preds[q["id"]] = golds[0]
        elif kind in (1, 2):
            preds[q["id"]] = _variant(rng.choice(golds), rng)
        elif kind in (3, 4):  # partial overlap: a prefix / suffix of the words, plus an extra word
            words = rng.choice(golds).split()
            cut = max(1, len(words) // 2)
            preds[q["id"]] = " ".join(words[:cut] + ["extra"]) if kind == 3 else " ".join(["some"] + words[cut:])
        elif kind == 5:
            preds[q["id"]] = ""
        elif kind == 6:
            preds[q["id"]] = "completely unrelated text"
        elif kind == 7:
            preds[q["id"]] = rng.choice(golds) + " — «ü»"
        else:
            preds[q["id"]] = " ".join(rng.choice(golds).split()[::-1])
        # no-answer scores on a coarse grid (many ties), some negative
        na[q["id"]] = round(rng.uniform(-3, 3) * 2) / 2
    fixture = {
        "source": str(data_file.relative_to(ROOT.parent)),
        "seed": seed,
        "predictions": preds,
        "na_probs": na,
        "oracle": None,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}: {len(preds)} predictions")
    return fixture


def _ours(data: dict, preds: dict, na: dict) -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    from syntaxformer.tasks.squad_metric import squad_evaluate

    return {"no_na": squad_evaluate(data, preds), "na": squad_evaluate(data, preds, na)}


def _load_hf_port(path: Path):
    """Import HF's squad_metrics.py with stand-ins for its package-relative imports."""
    pkg = types.ModuleType("_oracle_pkg")
    pkg.__path__ = []  # type: ignore[attr-defined]
    sub = {
        "_oracle_pkg.data": types.ModuleType("_oracle_pkg.data"),
        "_oracle_pkg.data.metrics": types.ModuleType("_oracle_pkg.data.metrics"),
        "_oracle_pkg.models": types.ModuleType("_oracle_pkg.models"),
        "_oracle_pkg.models.bert": types.ModuleType("_oracle_pkg.models.bert"),
        "_oracle_pkg.utils": types.ModuleType("_oracle_pkg.utils"),
    }
    for m in sub.values():
        m.__path__ = []  # type: ignore[attr-defined]
    sub["_oracle_pkg.models.bert"].BasicTokenizer = object  # type: ignore[attr-defined]
    import logging

    sub["_oracle_pkg.utils"].logging = types.SimpleNamespace(get_logger=logging.getLogger)  # type: ignore
    sys.modules.update({"_oracle_pkg": pkg, **sub})
    spec = importlib.util.spec_from_file_location("_oracle_pkg.data.metrics.squad_metrics", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _oracle(path: Path, data_file: Path, preds: dict, na: dict) -> dict:
    text = path.read_text(encoding="utf-8")
    if "def squad_evaluate(examples" in text:  # HF's port: examples with qas_id / answers
        mod = _load_hf_port(path)
        data = json.loads(data_file.read_text(encoding="utf-8"))
        examples = [types.SimpleNamespace(qas_id=q["id"], answers=q["answers"]) for q in _questions(data)]
        out = {"no_na": dict(mod.squad_evaluate(examples, preds))}
        # the official script's own flow with a na-prob file: thresholds at 1.0, then the best-threshold sweep
        main = dict(mod.squad_evaluate(examples, preds, na, 1.0))
        out["na"] = main
        return out
    # the official evaluate-v2.0.py, as a script
    with tempfile.TemporaryDirectory() as tmp:
        p, n = Path(tmp) / "pred.json", Path(tmp) / "na.json"
        p.write_text(json.dumps(preds), encoding="utf-8")
        n.write_text(json.dumps(na), encoding="utf-8")
        run = lambda *extra: json.loads(
            subprocess.run(
                [sys.executable, str(path), str(data_file), str(p), *extra], check=True, capture_output=True, text=True
            ).stdout
        )
        return {"no_na": run(), "na": run("--na-prob-file", str(n))}


def check(oracle: Path, record: bool, data_file: Path = DATA, fixture_file: Path = FIXTURE) -> int:
    fixture = json.loads(fixture_file.read_text(encoding="utf-8"))
    data = json.loads(data_file.read_text(encoding="utf-8"))
    ours = _ours(data, fixture["predictions"], fixture["na_probs"])
    theirs = _oracle(oracle, data_file, fixture["predictions"], fixture["na_probs"])
    worst = 0.0
    rows = []
    for mode in ("no_na", "na"):
        for key, value in theirs[mode].items():
            if key not in ours[mode]:
                rows.append((mode, key, value, None))
                continue
            diff = abs(float(ours[mode][key]) - float(value))
            worst = max(worst, diff)
            rows.append((mode, key, value, ours[mode][key]))
    for mode, key, v, o in rows:
        print(f"{mode:6s} {key:22s} oracle {v!s:>22s}  ours {o!s:>22s}")
    print(json.dumps({"oracle": str(oracle), "max_abs_difference": worst}))
    if record:
        fixture["oracle"] = {
            "file": oracle.name,
            "numbers": theirs,
            "note": "numbers of the oracle implementation named in experiments/check_squad_metric.py",
        }
        fixture_file.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0 if worst < 1e-9 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=["make", "check"])
    parser.add_argument("--oracle", type=Path, help="evaluate-v2.0.py or HF's squad_metrics.py")
    parser.add_argument("--record", action="store_true", help="store the oracle's numbers in the fixture")
    args = parser.parse_args(argv)
    if args.action == "make":
        make()
        return 0
    if args.oracle is None:
        parser.error("check needs --oracle")
    return check(args.oracle, args.record)


if __name__ == "__main__":
    sys.exit(main())
