"""Peak memory of reading a ``datasets`` folder (``save_to_disk``) as training data, by number of rows.

For each size, a DatasetDict (``train``: N rows of ~10-word texts with a ``ClassLabel`` label; ``validation``: 1,000
rows) is saved to a temporary folder; then, each in a fresh process, the peak resident set size (``ru_maxrss``)
above the process's size after the imports (Linux: ``/proc/self/status`` VmHWM, reset through
``/proc/self/clear_refs``), for:

* ``rows``: the reader's rows walked once (``read_table(FOLDER).rows``: read from Arrow a block at a time);
* ``list``: the same rows copied into a list of dicts (what the reader did before: ``[dict(r) for r in ds]``);
* ``examples``: the custom task's ``load_split("train")`` (the rows read, checked and turned into one
  ``TaskExample`` per row: these are Python objects, so this part grows with the rows);
* ``features``: ``examples`` and then the task's featurization (``task.featurize``: SG-Net's syntax inputs, MiniLM's
  tokenizer, 64 tokens, the features cache on, in a temporary folder), every row then read once as an epoch
  does. The parser is a **stand-in**, not spaCy: each word attaches to the next one (whitespace words), so that
  the measurement is about featurization and its storage, not about spaCy (which would take ~20 minutes for
  200,000 texts here, and whose own memory does not depend on the number of rows). Pages of the memory-mapped
  features file read during the epoch count as resident too (they are the page cache's, shared and evictable);
* ``qa``: span QA (``custom-qa``) on a SQuAD-format JSON file of N questions (five per ~120-word passage, each
  answered by a word of it): ``load_split("train")`` and featurization (the stand-in parser, 128 tokens, windows
  sharing 32 tokens), every window then read once;
* ``mc``: multiple choice (``custom-mc``) on a DatasetDict of N questions (a ~60-word context, four options):
  ``load_split("train")`` and featurization (the stand-in parser, 128 tokens per option), every row read once.

The featurization of another version of the code (e.g. before Arrow) is measured by pointing ``--src`` at its
``src`` folder; the other modes then measure that version too.

    python benchmarks/datasets_memory.py [--rows 20000 200000] [--quick]
        [--modes rows list examples features qa mc] [--src SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_MEASURE = """
import json, os, sys, tempfile
from syntaxformer.data import Annotator, Document, Sentence
from syntaxformer.data.readers.table import read_table
from syntaxformer.defaults import default_hf_model
from syntaxformer.tasks import TaskContext, get_task
from transformers import AutoTokenizer
import datasets

class NextWord(Annotator):  # the stand-in parser: word i attaches to word i + 1
    source = "next-word"
    def cache_key(self):
        return "next-word-benchmark"
    def annotate(self, texts):
        return [Document([self._sentence(t.split(), self._offsets(t))], text=t) for t in texts]
    def annotate_pretokenized(self, words):
        return [self._sentence(list(w)) for w in words]
    def _offsets(self, text):
        out, at = [], 0
        for w in text.split():
            at = text.index(w, at)
            out.append((at, at + len(w)))
            at += len(w)
        return out
    def _sentence(self, words, offsets=None):
        heads = list(range(1, len(words))) + [-1]
        deprels = ["dep"] * (len(words) - 1) + ["root"]
        return Sentence(words, heads, deprels=deprels, offsets=offsets, source=self.source)

def kib(field):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field + ":"))
folder, mode = sys.argv[1], sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(default_hf_model()) if mode in ("features", "qa", "mc") else None
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the current size: the imports' peak is not counted
before = kib("VmRSS")
if mode == "rows":
    n = sum(1 for _ in read_table(folder, "train").rows)
elif mode == "list":
    rows = [dict(r) for r in datasets.load_from_disk(folder)["train"]]
    n = len(rows)
elif mode == "examples":
    n = len(get_task("custom").load_split("train", {"train_file": folder}).examples)
else:
    task, length = {
        "features": (get_task("custom"), 64),
        "qa": (get_task("custom-qa", doc_stride=32, threshold_tuning_fraction=0.0), 128),
        "mc": (get_task("custom-mc"), 128),
    }[mode]
    data = task.load_split("train", {"train_file": folder, "dev_file": folder})
    with tempfile.TemporaryDirectory() as cache:
        context = TaskContext(
            tokenizer,
            annotator=NextWord(),
            syntax_inputs=("syntax_tree", "syntax_segment", "dep_tin", "dep_tout", "dep_depth", "dep_parent"),
            max_length=length,
            cache_dir=cache,
            progress=False,
        )
        features = task.featurize(data, context, "train")
        n = sum(1 for i in range(len(features)) if len(features[i]))  # one epoch's reads
print(json.dumps({"n": n, "mib": round((kib("VmHWM") - before) / 1024, 1)}))
"""

MODES = ("rows", "list", "examples", "features", "qa", "mc")

WORDS = [
    "the",
    "a",
    "film",
    "story",
    "cast",
    "plot",
    "jokes",
    "warm",
    "dull",
    "witty",
    "long",
    "short",
    "fine",
    "tedious",
    "moving",
    "flat",
    "great",
]


def make_folder(folder: Path, n: int) -> None:
    import datasets
    import numpy as np

    rng = np.random.default_rng(0)

    def rows(k: int) -> dict:
        texts = [" ".join(rng.choice(WORDS, 10)) + "." for _ in range(k)]
        return {"text": texts, "label": rng.integers(0, 2, k).tolist()}

    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["bad", "good"])}
    )
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict(rows(n), features=features),
            "validation": datasets.Dataset.from_dict(rows(1000), features=features),
        }
    ).save_to_disk(str(folder))


def words(rng, k: int) -> list[str]:
    return [str(w) for w in rng.choice(WORDS, k)]


def make_qa_file(path: Path, n: int) -> None:
    """A SQuAD-format JSON file of ``n`` questions, five per passage, each answered by one word of its passage."""
    import numpy as np

    rng = np.random.default_rng(0)
    articles = []
    for k in range(0, n, 5):
        passage = words(rng, 120)
        context = " ".join(passage) + "."
        qas = []
        for j in range(min(5, n - k)):
            at = int(rng.integers(0, len(passage)))
            start = len(" ".join(passage[:at])) + (1 if at else 0)
            answer = {"text": passage[at], "answer_start": start}
            qas.append({"id": f"q{k + j}", "question": " ".join(words(rng, 10)) + "?", "answers": [answer]})
        articles.append({"title": f"a{k}", "paragraphs": [{"context": context, "qas": qas}]})
    path.write_text(json.dumps({"version": "v2.0", "data": articles}), encoding="utf-8")


def make_mc_folder(folder: Path, n: int) -> None:
    """A DatasetDict of ``n`` multiple-choice questions (and a validation split of 100)."""
    import datasets
    import numpy as np

    rng = np.random.default_rng(0)

    def rows(k: int) -> dict:
        return {
            "context": [" ".join(words(rng, 60)) + "." for _ in range(k)],
            "question": [" ".join(words(rng, 10)) + "?" for _ in range(k)],
            "options": [[" ".join(words(rng, 3)) for _ in range(4)] for _ in range(k)],
            "answer": rng.integers(0, 4, k).tolist(),
        }

    datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict(rows(n)), "validation": datasets.Dataset.from_dict(rows(100))}
    ).save_to_disk(str(folder))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--quick", action="store_true", help="2,000 and 20,000 rows")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES, help="what to measure")
    parser.add_argument("--src", help="the src folder of the syntaxformer to measure (default: the installed one)")
    args = parser.parse_args()
    sizes = [2000, 20000] if args.quick else args.rows
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(args.src).resolve()), env.get("PYTHONPATH")]))
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder, qa_file, mc_folder = Path(tmp) / f"ds{n}", Path(tmp) / f"qa{n}.json", Path(tmp) / f"mc{n}"
            if set(args.modes) - {"qa", "mc"}:
                make_folder(folder, n)
            if "qa" in args.modes:
                make_qa_file(qa_file, n)
            if "mc" in args.modes:
                make_mc_folder(mc_folder, n)
            for mode in args.modes:
                source = {"qa": qa_file, "mc": mc_folder}.get(mode, folder)
                done = subprocess.run(
                    [sys.executable, "-c", _MEASURE, str(source), mode], capture_output=True, text=True, env=env
                )
                if done.returncode:
                    sys.exit(f"{mode} on {n} rows failed:\n{done.stderr[-3000:]}")
                result = json.loads(done.stdout.strip().splitlines()[-1])
                out[f"{mode}_{n}_mib"] = result["mib"]
                print(f"{n:>8} rows  {mode:<9} peak RSS +{result['mib']} MiB", file=sys.stderr)
    if {"features", "qa", "mc"} & set(args.modes):
        out["note"] = "features, qa, mc: a stand-in parser (each word attaches to the next), not spaCy"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
