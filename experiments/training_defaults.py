"""Do the library's training defaults give a usable model? `syntaxformer train --task T` with every default but the
learning rate and the seed, on the full training set, scored on the full dev set.

    python experiments/training_defaults.py run [--tasks cola,stsb] [--lrs 1e-4,2e-5] [--seeds 1,2,3] [--out DIR]
        [--max-train-samples N]
    python experiments/training_defaults.py table [--archive docs/results/training_defaults.json]

`run` trains each (task, learning rate, seed) with the CLI exactly as a user would (one process per run, one CPU
thread: OMP_NUM_THREADS=1), skips a run whose `metrics.json` exists (resumable), and after every run adds its
record (dev score, learning rate, seed, sizes, wall time, library version) to the archive file, which is committed.
The learning rate is given explicitly for each run, so the runs measure a setting, not whatever the default is at
the time. `--max-train-samples N` trains on a seeded subset (the one non-default, for SST-2's 67k sentences, which
take hours per run on one CPU thread), recorded in the command and the sizes and kept apart in the table; `table` prints mean, standard deviation and a 95 % t-interval per (task, learning rate).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault(
    "SYNTAXFORMER_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)  # the library reads data only where told

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "docs" / "results" / "training_defaults.json"


def _record(run_dir: Path, task: str, lr: str, seed: int, wall_s: float | None, subset: int | None = None) -> dict:
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    config = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["config"]
    main = metrics["main_metric"]
    return {
        "task": task,
        "learning_rate": float(lr),
        "seed": seed,
        "main_metric": main,
        "dev": metrics["dev"][main],
        "num_train_epochs": config["num_train_epochs"],
        "max_length": config["max_length"],
        "batch_size": config["per_device_train_batch_size"],
        "model_type": config["model_type"],
        "model_kind": metrics.get("model_type"),
        "sizes": metrics.get("sizes"),
        "runtime_s": metrics.get("runtime_s"),
        "wall_s": wall_s,
        "environment": metrics.get("environment"),
        "max_train_samples": subset,
        "command": f"syntaxformer train --task {task} --learning-rate {lr} --seed {seed}"
        + (f" --max-train-samples {subset}" if subset else "")
        + " --output-dir RUN",
    }


def _key(r: dict) -> tuple:
    return (r["task"], r["learning_rate"], r["seed"], r.get("max_train_samples"))


def _save(records: list[dict], path: Path) -> None:
    records = sorted(records, key=lambda r: (r["task"], r["learning_rate"], r.get("max_train_samples") or 0, r["seed"]))
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"runs": records}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _load(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["runs"] if path.is_file() else []


def run(args: argparse.Namespace) -> None:
    import time

    out = Path(args.out)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "SYNTAXFORMER_NO_PROGRESS": "1",
    }
    exe = str(Path(sys.executable).with_name("syntaxformer"))
    for task in args.tasks.split(","):
        for lr in args.lrs.split(","):
            for seed in map(int, args.seeds.split(",")):
                subset = args.max_train_samples
                run_dir = out / (f"{task}_lr{lr}_seed{seed}" + (f"_n{subset}" if subset else ""))
                key = (task, float(lr), seed, subset)
                records = _load(Path(args.archive))
                if any(_key(r) == key for r in records):
                    continue
                wall = None
                if not (run_dir / "metrics.json").is_file():
                    t0 = time.time()
                    cmd = [
                        exe,
                        "train",
                        "--task",
                        task,
                        "--learning-rate",
                        lr,
                        "--seed",
                        str(seed),
                        "--output-dir",
                        str(run_dir),
                        "--overwrite-output-dir",
                        *(["--max-train-samples", str(subset)] if subset else []),
                    ]
                    print(" ".join(cmd), flush=True)
                    subprocess.run(cmd, check=True, env=env)
                    wall = round(time.time() - t0, 1)
                rec = _record(run_dir, task, lr, seed, wall, subset)
                print(json.dumps(rec), flush=True)
                _save(_load(Path(args.archive)) + [rec], Path(args.archive))


#: The full-data GLUE sweep's summaries (docs/results.md), joined as `glue_tables.py --later-replaces` joins them.
SWEEP = ["docs/results/glue_sweep.json", "docs/results/glue_sweep_archived.json"]


def sweep_level(task: str, variant: str = "sgnet_default") -> list[float]:
    """Per-seed dev scores of ``variant`` on ``task`` in the full-data GLUE sweep (SST-2: 10,000 sentences)."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from glue_tables import merge_summaries

    summary = merge_summaries([json.loads((ROOT / f).read_text(encoding="utf-8")) for f in SWEEP], [])
    return list(summary["tasks"].get(task, {}).get("variants", {}).get(variant, {}).get("scores", []))


def table(args: argparse.Namespace) -> None:
    from scipy import stats

    records = _load(Path(args.archive))
    groups: dict[tuple, list[float]] = {}
    for r in records:
        train = (r.get("sizes") or {}).get("train")
        groups.setdefault((r["task"], r["main_metric"], r["learning_rate"], train), []).append(r["dev"])
    print(
        "| task | metric | learning rate | train examples | seeds | mean | sd | 95% t-interval "
        "| sweep's SG-Net (seeds) | Δ vs sweep (Welch t p) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (task, metric, lr, train), xs in sorted(groups.items()):
        m = statistics.fmean(xs)
        sd = statistics.stdev(xs) if len(xs) > 1 else float("nan")
        if len(xs) > 1:
            h = stats.t.ppf(0.975, len(xs) - 1) * sd / len(xs) ** 0.5
            ci = f"[{m - h:.3f}, {m + h:.3f}]"
        else:
            ci = "n/a"
        ref = sweep_level(task)
        if ref and len(xs) > 1 and len(ref) > 1:
            p = stats.ttest_ind(xs, ref, equal_var=False).pvalue
            vs = f"{statistics.fmean(ref):.3f} ({len(ref)}) | {m - statistics.fmean(ref):+.3f} ({p:.3f})"
        else:
            vs = "n/a | n/a"
        print(f"| {task} | {metric} | {lr:g} | {train:,} | {len(xs)} | {m:.3f} | {sd:.3f} | {ci} | {vs} |")
    pairs = []
    for (task, metric, lr, train), xs in sorted(groups.items()):
        for (task2, _, lr2, train2), ys in sorted(groups.items()):
            if (task2, train2) == (task, train) and lr > lr2 and len(xs) > 1 and len(ys) > 1:
                p = stats.ttest_ind(xs, ys, equal_var=False).pvalue
                d = statistics.fmean(xs) - statistics.fmean(ys)
                pairs.append(f"| {task} | {metric} | {lr:g} − {lr2:g} | {d:+.3f} | {len(xs)} / {len(ys)} | {p:.4f} |")
    if pairs:
        print()
        print("| task | metric | learning rates | Δ mean | seeds | Welch t p |")
        print("|---|---|---|---|---|---|")
        print("\n".join(pairs))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tasks", default="cola,stsb")
    r.add_argument("--lrs", default="1e-4,2e-5")
    r.add_argument("--seeds", default="1,2,3")
    r.add_argument("--out", default="runs/training_defaults")
    r.add_argument("--archive", default=str(ARCHIVE))
    r.add_argument("--max-train-samples", type=int, default=None)
    t = sub.add_parser("table")
    t.add_argument("--archive", default=str(ARCHIVE))
    args = p.parse_args()
    (run if args.cmd == "run" else table)(args)


if __name__ == "__main__":
    main()
