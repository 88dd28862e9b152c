"""Peak memory of reading a ``datasets`` folder (``save_to_disk``) as training data, by number of rows.

For each size, a DatasetDict (``train``: N rows of ~10-word texts with a ``ClassLabel`` label; ``validation``: 1,000
rows) is saved to a temporary folder; then, each in a fresh process, the peak resident set size (``ru_maxrss``)
above the process's size after the imports (Linux: ``/proc/self/status`` VmHWM, reset through
``/proc/self/clear_refs``), for:

* ``rows``: the reader's rows walked once (``read_table(FOLDER).rows``: read from Arrow a block at a time);
* ``list``: the same rows copied into a list of dicts (what the reader did before: ``[dict(r) for r in ds]``);
* ``examples``: the custom task's ``load_split("train")`` (the rows read, checked and turned into one
  ``TaskExample`` per row: these are Python objects, so this part grows with the rows).

No parsing: the annotator and featurization are not part of this measurement.

    python benchmarks/datasets_memory.py [--rows 20000 200000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_MEASURE = """
import json, sys
from syntaxformer.data.readers.table import read_table
from syntaxformer.tasks import get_task
import datasets
def kib(field):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(field + ":"))
folder, mode = sys.argv[1], sys.argv[2]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the current size: the imports' peak is not counted
before = kib("VmRSS")
if mode == "rows":
    n = sum(1 for _ in read_table(folder, "train").rows)
elif mode == "list":
    rows = [dict(r) for r in datasets.load_from_disk(folder)["train"]]
    n = len(rows)
else:
    n = len(get_task("custom").load_split("train", {"train_file": folder}).examples)
print(json.dumps({"n": n, "mib": round((kib("VmHWM") - before) / 1024, 1)}))
"""

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--quick", action="store_true", help="2,000 and 20,000 rows")
    args = parser.parse_args()
    sizes = [2000, 20000] if args.quick else args.rows
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            folder = Path(tmp) / f"ds{n}"
            make_folder(folder, n)
            for mode in ("rows", "list", "examples"):
                done = subprocess.run(
                    [sys.executable, "-c", _MEASURE, str(folder), mode], capture_output=True, text=True, check=True
                )
                result = json.loads(done.stdout.strip().splitlines()[-1])
                out[f"{mode}_{n}_mib"] = result["mib"]
                print(f"{n:>8} rows  {mode:<9} peak RSS +{result['mib']} MiB", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
