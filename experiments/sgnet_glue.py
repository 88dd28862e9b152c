"""SG-Net and Syntax-BERT vs their baselines on GLUE dev sets, with seeds and paired significance tests.

Runs every (task, variant, seed) with :func:`syntaxformer.training.train` (skipping runs whose
``metrics.json`` exists, so an interrupted sweep resumes), then summarises: mean / std over seeds, paired t-test
over seeds, and a paired bootstrap over dev examples (resampling examples, the metric averaged over seeds).

Usage (from the repository root, in the project environment)::

    python experiments/sgnet_glue.py run --tasks sst2,cola,rte,mrpc,stsb --variants baseline,sgnet --seeds 1,2,3
    python experiments/sgnet_glue.py summarize --out runs/sgnet_glue --json docs/results/sgnet_glue.json
    python experiments/sgnet_glue.py run --tasks sst2 --variants sgnet --seeds 1 --noise 0,0.2,0.4,0.6,0.8,1.0
    python experiments/sgnet_glue.py run --tasks sst2 --variants baseline_default,sgnet_default --seeds 1,2,3 --sizes 500,2000,8000,all --out runs/sst2_learning_curve
    python experiments/sgnet_glue.py archive --out runs/glue_sweep --to docs/results/runs/glue_sweep
    python experiments/sgnet_glue.py summarize --out docs/results/runs/glue_sweep --json docs/results/glue_sweep_archived.json

``runs/`` is not committed, and a new checkout starts without it: ``archive`` copies what the summaries and figures
read of each finished run (``metrics.json``, ``run.json``, ``dev_predictions.json``; no weights) into a folder that
is committed and has the same layout, so ``summarize``, ``syntaxformer plot`` and ``syntaxformer significance``
recompute every number and figure later from the repository alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault(
    "SYNTAXFORMER_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)  # the library reads data only where told

# Per-task budget for 2 CPU cores (training sets subsampled with the run's seed-independent data_seed=0).
TASK_PRESETS: dict[str, dict] = {
    "sst2": {"max_train_samples": 2000, "max_length": 64, "num_train_epochs": 2.0},
    "cola": {"max_train_samples": 2000, "max_length": 64, "num_train_epochs": 2.0},
    "rte": {"max_train_samples": 1000, "max_length": 128, "num_train_epochs": 2.0},
    "mrpc": {"max_train_samples": 1200, "max_length": 128, "num_train_epochs": 2.0},
    "stsb": {"max_train_samples": 1500, "max_length": 96, "num_train_epochs": 2.0},
    "sst2_trees": {"max_train_samples": 2000, "max_length": 64, "num_train_epochs": 2.0},
    "sst5": {"max_train_samples": 2000, "max_length": 64, "num_train_epochs": 2.0},
}
COMMON = {
    "per_device_train_batch_size": 32,
    "per_device_eval_batch_size": 64,
    "learning_rate": 1e-4,
    "warmup_steps": 0.1,
    "eval_strategy": "no",
    "save_strategy": "no",
    "save_model": False,
    "logging_steps": 50,
    "overwrite_output_dir": True,
    "data_seed": 0,
    "disable_tqdm": True,
}
GATE_LR = 1e-2  # CoLA 2k, 126 steps: mean |g| 0.05 (max 0.21) at 1e-2, 0.17 (max 0.61) at 3e-2; 0.00x at 1e-4
VARIANTS: dict[str, dict] = {
    # The paper's classifier reads h0 ([CLS]); `pooling: cls` is pinned since mean pooling became the SGNetConfig
    # default, so these variants keep reproducing the recorded results.
    "baseline": {"use_sg_layer": False, "pooling": "cls"},
    "sgnet": {"use_sg_layer": True, "pooling": "cls"},  # paper defaults: alpha 0.5, cls pooling
    "baseline_mean": {"use_sg_layer": False, "pooling": "mean"},
    "sgnet_mean": {"use_sg_layer": True, "pooling": "mean"},
    "sgnet_mean_copy": {"use_sg_layer": True, "pooling": "mean", "sg_init": "copy_last"},
    "sgnet_mean_learned": {"use_sg_layer": True, "pooling": "mean", "alpha_mode": "learned"},
    "sgnet_mean_lr": {"use_sg_layer": True, "pooling": "mean", "new_params_lr": 3e-4},
    # Table 6 control: the extra layer without the SDOI mask (H̄ = H'), to separate capacity from syntax.
    "vanilla_layer_mean": {"use_sg_layer": True, "pooling": "mean", "aggregation": "vanilla_layer"},
    # Syntax-BERT: the plain encoder with the Syntax-BERT head, Syntax-BERT, Syntax-BERT + LISA.
    "sbert_baseline": {"model_type": "syntax_bert", "use_syntax": False},
    "sbert": {"model_type": "syntax_bert"},
    "sbert_lisa": {"model_type": "syntax_bert", "lisa_layer": 3},
    # Syntax-BERT Table 5 ablations and one attempt to close the gap (the vanilla attention as one more candidate).
    "sbert_sum": {"model_type": "syntax_bert", "syntax_bert_options": {"aggregation": "sum"}},
    "sbert_random": {"model_type": "syntax_bert", "syntax_bert_options": {"random_masks": True}},
    "sbert_dep": {"model_type": "syntax_bert", "trees": "dependency"},
    "sbert_const": {"model_type": "syntax_bert", "trees": "constituency"},
    "sbert_full": {"model_type": "syntax_bert", "syntax_bert_options": {"full_attention_candidate": True}},
    # The GLUE sweep: syntax that can act (SG-Net's default mean pooling; the gated Syntax-BERT, zero at init, and its
    # random-mask control). `sgnet_default` / `baseline_default` take the library's defaults as they are.
    "baseline_default": {"use_sg_layer": False},
    "sgnet_default": {"use_sg_layer": True},
    # The gates train at their own rate (GATE_LR): at the encoder's 1e-4 they barely leave 0 in ~500 steps (first
    # gated CoLA runs: predictions identical with real and random masks; docs/results.md).
    "sbert_gate": {"model_type": "syntax_bert", "syntax_bert_options": {"gate": "head"}, "gate_lr": GATE_LR},
    "sbert_gate_layer": {"model_type": "syntax_bert", "syntax_bert_options": {"gate": "layer"}, "gate_lr": GATE_LR},
    "sbert_gate_random": {
        "model_type": "syntax_bert",
        "syntax_bert_options": {"gate": "head", "random_masks": True},
        "gate_lr": GATE_LR,
    },
    # Where a data set has gold trees (the SST tree tasks): the same systems on the gold trees only (`given`: the
    # annotated constituency tree, dependencies from it by head rules) and on the parser's trees only (`parser`: spaCy
    # on the raw text, constituency read off its dependency tree); the default (`auto`) mixes gold constituency with
    # parsed dependencies. The random-tree controls are `sgnet_default --noise 1.0` and `sbert_gate_random`.
    "sgnet_default_gold": {"use_sg_layer": True, "syntax": "given"},
    "sgnet_default_parsed": {"use_sg_layer": True, "syntax": "parser"},
    "sbert_gate_gold": {
        "model_type": "syntax_bert",
        "syntax_bert_options": {"gate": "head"},
        "gate_lr": GATE_LR,
        "syntax": "given",
    },
    "sbert_gate_parsed": {
        "model_type": "syntax_bert",
        "syntax_bert_options": {"gate": "head"},
        "gate_lr": GATE_LR,
        "syntax": "parser",
    },
}
# Syntax-BERT Table 5 ablations re-run with the gated model: each removes one part of sbert_gate.
_TABLE5 = {
    "sum": {"aggregation": "sum"},
    "nodep": {"use_dependency": False},
    "noconst": {"use_constituency": False},
    "noparent": {"parent_masks": False},
    "nochild": {"child_masks": False},
    "nosibling": {"sibling_masks": False},
    "nopairwise": {"pairwise_masks": False},
}
for _name, _opts in _TABLE5.items():
    VARIANTS[f"sbert_gate_{_name}"] = {
        "model_type": "syntax_bert",
        "gate_lr": GATE_LR,
        "syntax_bert_options": {"gate": "head", **_opts},
    }
#: `--full` (the GLUE sweep): the full training sets (SST-2: 10,000 sentences), 2 epochs, full dev sets.
FULL_PRESETS: dict[str, dict] = {
    task: {**preset, "max_train_samples": 10000 if task == "sst2" else None} for task, preset in TASK_PRESETS.items()
}
#: `--preset gpu` (the GLUE sweep on a GPU): every training set whole (SST-2: all 67,349 sentences), 3 epochs.
GPU_PRESETS: dict[str, dict] = {
    task: {**preset, "max_train_samples": None, "num_train_epochs": 3.0} for task, preset in TASK_PRESETS.items()
}
PRESETS = {"cpu": TASK_PRESETS, "full": FULL_PRESETS, "gpu": GPU_PRESETS}


def _sizes(args: argparse.Namespace) -> list:
    """--sizes as a list: training-set sizes, None for "all" (the whole set); ["preset"] when not given."""
    return [None if x == "all" else int(x) for x in args.sizes.split(",")] if args.sizes else ["preset"]


def _run(args: argparse.Namespace) -> None:
    from syntaxformer.training import RunConfig, train

    noises = [float(x) for x in args.noise.split(",")] if args.noise else [None]
    # learning curve: training-set sizes ("all" = the whole training set); None = the preset's size
    sizes = _sizes(args)
    save_seeds = {int(s) for s in args.save_model_seeds.split(",")} if args.save_model_seeds else set()
    shard, n_shards = (int(x) for x in args.shard.split("/")) if args.shard else (0, 1)
    k = -1
    for task in args.tasks.split(","):
        for variant in args.variants.split(","):
            for seed in [int(s) for s in args.seeds.split(",")]:
                for noise, size in [(n, z) for n in noises for z in sizes]:
                    name = variant if noise is None else f"{variant}_noise{noise:g}"
                    if size != "preset":
                        name += f"_n{size or 'all'}"
                    out = Path(args.out) / task / name / f"seed{seed}"
                    k += 1
                    if k % n_shards != shard:  # --shard I/N: this process takes every N-th run
                        continue
                    done = (out / "metrics.json").exists() and (out / "dev_predictions.json").exists()
                    if (
                        done
                        and args.suite
                        and not (out / "suites" / args.suite / "report.json").exists()
                        and (out / "model.safetensors").exists()
                    ):
                        _score_suite(args, out)  # trained, then stopped before its suite was scored
                        continue
                    if done:
                        continue
                    options = {
                        **COMMON,
                        **_presets(args)[task],
                        **VARIANTS[variant],
                        "task": task,
                        "seed": seed,
                        "output_dir": str(out),
                    }
                    if args.parser:
                        options["parser"] = args.parser
                    if args.mixed_precision:
                        options["mixed_precision"] = args.mixed_precision
                    if noise is not None:
                        options["parser_noise"] = noise
                    if size != "preset":
                        options["max_train_samples"] = size
                    n_train = options.get("max_train_samples")
                    if args.min_steps and n_train:  # a small training set trains at least --min-steps steps
                        steps = (
                            math.ceil(n_train / options["per_device_train_batch_size"]) * options["num_train_epochs"]
                        )
                        if steps < args.min_steps:
                            options["max_steps"] = args.min_steps
                    if seed in save_seeds or args.suite:
                        options["save_model"] = True
                    t0 = time.time()
                    m = train(RunConfig.from_dict(options))
                    print(
                        json.dumps(
                            {
                                "task": task,
                                "variant": name,
                                "seed": seed,
                                "dev": m["dev"],
                                "train_s": m["train"]["runtime_s"],
                                "wall_s": round(time.time() - t0, 1),
                            }
                        ),
                        flush=True,
                    )
                    if args.suite:
                        _score_suite(args, out)


def _score_suite(args: argparse.Namespace, out: Path) -> None:
    """Score a finished run on the minimal-pair suite (``suites/<name>/`` in the run folder)."""
    from syntaxformer.analysis.minimal_pairs import evaluate_suite

    t0 = time.time()
    report = evaluate_suite(out, args.suite, overwrite=True)
    print(
        json.dumps(
            {
                "run": str(out),
                "suite": args.suite,
                "accuracy": round(report["overall"]["accuracy"], 4),
                "suite_s": round(time.time() - t0, 1),
            }
        ),
        flush=True,
    )


def _presets(args: argparse.Namespace) -> dict[str, dict]:
    return PRESETS["full" if args.full else args.preset]


def _export_parses(args: argparse.Namespace) -> None:
    """Parse (here, with spaCy and its parse cache) every text the sweep's tasks read -- train and dev, texts and
    the gold-token lists of gold trees -- into one syntaxformer JSONL file, for a machine without spaCy (the GPU
    machine): there ``--parser jsonl:FILE`` looks each text up instead of parsing it (same parses, same
    features: checked by ``check-parses``)."""
    from syntaxformer.data import make_annotator
    from syntaxformer.data.sentence import write_jsonl
    from syntaxformer.tasks import get_task
    from syntaxformer.training import RunConfig

    texts: dict[str, None] = {}
    token_lists: dict[tuple[str, ...], None] = {}
    # --sizes: the learning curves' training subsets (seeded, not nested: each size is its own draw)
    sizes = _sizes(args)
    for task_name in filter(None, args.tasks.split(",")):  # --tasks "" with --suite: the suite's sentences alone
        task = get_task(task_name)
        config = RunConfig.from_dict({**COMMON, **_presets(args)[task_name], "task": task_name})
        splits = [("train", config.max_train_samples if z == "preset" else z) for z in sizes]
        for split, n in [*dict.fromkeys(splits), ("dev", config.max_eval_samples)]:
            for e in task.load_split(split, config.data_options(split, n)).examples:
                for side in ("a", "b"):
                    text, tree = getattr(e, f"text_{side}"), getattr(e, f"tree_{side}")
                    if text is None or getattr(e, f"syntax_{side}") is not None:
                        continue
                    if tree is not None:
                        token_lists[tuple(tree.leaves())] = None
                    else:
                        texts[text] = None
    if args.suite:  # every sentence of a minimal-pair suite (both sides of each pair), as the suite runner parses it
        from syntaxformer.analysis.minimal_pairs import read_minimal_pairs, suite_folder

        for pair in read_minimal_pairs(suite_folder(args.suite)[1]):
            texts[pair.good] = texts[pair.bad] = None
    annotator = make_annotator(None)
    docs = annotator.annotate(list(texts))
    sentences = annotator.annotate_pretokenized([list(w) for w in token_lists])
    n = write_jsonl([*docs, *sentences], args.out_file)
    print(json.dumps({"file": args.out_file, "records": n, "texts": len(docs), "token_lists": len(sentences)}))


def _check_parses(args: argparse.Namespace) -> None:
    """The features of each task's dev split built with ``--parser`` (the exported file) equal those built with
    spaCy, for an SG-Net and a Syntax-BERT context (every array, exactly)."""
    from syntaxformer.tasks import get_task
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import build_context, build_model, load_tokenizer

    tokenizer = load_tokenizer(RunConfig().resolved_model())
    for task_name in args.tasks.split(","):
        task = get_task(task_name)
        for variant in ("sgnet_default", "sbert_gate"):
            config = RunConfig.from_dict(
                {**COMMON, **_presets(args)[task_name], **VARIANTS[variant], "task": task_name, "max_eval_samples": 300}
            )
            data = task.load_split("dev", config.data_options("dev", config.max_eval_samples))
            model_config = build_model(config, task).config
            features = []
            for parser in (config.parser, args.parser):
                context = build_context(config.replace(parser=parser), tokenizer, model_config)
                context.use_cache = False
                features.append(task.featurize(data, context, "dev"))
            a, b = features
            same = set(a.arrays) == set(b.arrays) and all(np.array_equal(a.arrays[k], b.arrays[k]) for k in a.arrays)
            print(
                json.dumps(
                    {
                        "task": task_name,
                        "variant": variant,
                        "examples": len(data.examples),
                        "arrays": sorted(a.arrays),
                        "equal": bool(same and np.array_equal(a.offsets, b.offsets)),
                    }
                )
            )
            if not same:
                raise SystemExit(f"{task_name}: features differ between spaCy and {args.parser}")


def _metric_fn(task: str):
    from syntaxformer.tasks import get_task
    from syntaxformer.tasks.metrics import compute_metrics

    spec = get_task(task)
    main = spec.main_metric

    def fn(preds: np.ndarray, labels: np.ndarray) -> float:  # preds [S, N] -> metric averaged over seeds
        return float(np.mean([compute_metrics([main], p, labels)[main] for p in preds]))

    return spec, main, fn


def _spread(pred: dict, regression: bool) -> float:
    """How far a run's dev predictions are from a constant: the prediction std over the label std (regression),
    or the share of the most-predicted class (classification; 1.0 = one class for every example)."""
    p = np.asarray(pred["predictions"], dtype=float)
    if regression:
        return float(np.std(p) / max(np.std(np.asarray(pred["labels"], dtype=float)), 1e-12))
    return float(np.max(np.unique(p, return_counts=True)[1]) / len(p))


#: What ``archive`` keeps of a finished run: all that ``summarize``, ``syntaxformer plot`` (results, length buckets)
#: and ``syntaxformer significance`` read (not the model weights).
ARCHIVED_FILES = ("metrics.json", "run.json", "dev_predictions.json")


def _in_dataset_order(run: Path, pred: dict) -> dict:
    """``pred`` (a run's dev predictions), which must be in dataset order to be paired with another run's."""
    if pred.get("order") != "dataset":
        raise SystemExit(f"{run}: predictions not in dataset order; run `reorder` first")
    return pred


def _read_run_folder(run: Path) -> tuple[dict, dict]:
    """A finished run folder's metrics and dev predictions."""
    pred = _in_dataset_order(run, json.loads((run / "dev_predictions.json").read_text()))
    return json.loads((run / "metrics.json").read_text()), pred


def _archive(args: argparse.Namespace) -> None:
    """Copy every finished run under ``--out`` to the same place under ``--to`` (:data:`ARCHIVED_FILES`, as compact
    JSON, each written atomically), so that ``--to`` is itself a sweep folder every tool reads. A run already there
    is kept if its files hold the same content and refused if they differ: an archived run is never silently
    replaced (delete its folder to replace it on purpose)."""
    written = kept = 0
    for metrics_file in sorted(Path(args.out).glob("*/*/seed*/metrics.json")):
        run = metrics_file.parent
        if not all((run / name).is_file() for name in ARCHIVED_FILES):  # still running, or stopped before the end
            continue
        dest = Path(args.to) / run.relative_to(args.out)
        files = {name: json.loads((run / name).read_text()) for name in ARCHIVED_FILES}
        _in_dataset_order(run, files["dev_predictions.json"])
        if _keep_archived(dest, files, f"a different run than {run}"):
            written += 1
        else:
            kept += 1
    suites = _archive_suites(args)
    print(json.dumps({"archive": args.to, "written": written, "already_there": kept, **suites}))


def _keep_archived(dest: Path, files: dict, what: str) -> bool:
    """Write ``files`` (name -> JSON content) into ``dest`` as compact JSON, each atomically; ``False`` if ``dest``
    already holds the same content. Different content is refused: an archived result is never replaced silently."""
    from syntaxformer.utils import atomic_write

    if dest.exists():
        if any(
            not (dest / name).is_file() or json.loads((dest / name).read_text()) != content
            for name, content in files.items()
        ):
            raise SystemExit(f"{dest} already holds {what}; delete it to replace it")
        return False
    for name, content in files.items():
        with atomic_write(dest / name) as f:
            json.dump(content, f, separators=(",", ":"))
    return True


def _archive_suites(args: argparse.Namespace) -> dict:
    """Keep each run's minimal-pair results (``suites/<name>/``) as ``report.json`` plus the compact records
    (:func:`~syntaxformer.analysis.minimal_pairs.compact_records`: which pairs and whether each was correct), under
    the same rules as the runs: never replaced by different content."""
    from syntaxformer.analysis.minimal_pairs import COMPACT_FILE, compact_records, read_suite_records

    written = kept = 0
    for report_file in sorted(Path(args.out).glob("*/*/seed*/suites/*/report.json")):
        folder = report_file.parent
        if not (folder / "pairs.jsonl").is_file():
            continue
        dest = Path(args.to) / folder.relative_to(args.out)
        report = json.loads(report_file.read_text())
        # paths of this machine out: the run as its place in the sweep, the suite's data as its folder name
        report = {**report, "run": str(folder.parent.parent.relative_to(args.out)), "data": Path(report["data"]).name}
        files = {"report.json": report, COMPACT_FILE: compact_records(read_suite_records(folder / "pairs.jsonl"))}
        if _keep_archived(dest, files, f"a different suite result than {folder}"):
            written += 1
        else:
            kept += 1
    return {"suites_written": written, "suites_already_there": kept}


def _summarize(args: argparse.Namespace) -> dict:
    from syntaxformer.tasks.significance import paired_bootstrap, paired_t_test

    root = Path(args.out)
    summary: dict = {"out": str(root), "date": time.strftime("%Y-%m-%d"), "tasks": {}}
    for task_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        task = task_dir.name
        spec, main, fn = _metric_fn(task)
        regression = getattr(spec, "is_regression", False)
        runs: dict[str, dict[int, dict]] = {}
        for metrics_file in sorted(task_dir.glob("*/seed*/metrics.json")):
            if not (metrics_file.parent / "dev_predictions.json").is_file():  # still running
                continue
            variant, seed = metrics_file.parent.parent.name, int(metrics_file.parent.name[4:])
            m, p = _read_run_folder(metrics_file.parent)
            runs.setdefault(variant, {})[seed] = {
                "score": m["dev"][main],
                "all": m["dev"],
                "pred": p,
                "train_s": m["train"]["runtime_s"],
                "sizes": m["sizes"],
                "subsample": m["subsample"],
            }
        rows = {}
        for variant, by_seed in runs.items():
            scores = [r["score"] for r in by_seed.values()]
            first = next(iter(by_seed.values()))
            rows[variant] = {
                "seeds": sorted(by_seed),
                "scores": scores,
                "mean": float(np.mean(scores)),
                "spread": [_spread(r["pred"], regression) for r in by_seed.values()],
                "std": float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0,
                "train_s_mean": float(np.mean([r["train_s"] for r in by_seed.values()])),
                "sizes": first["sizes"],
                "subsample": first["subsample"],
            }
        tests = {}
        for variant, ref in _pairs(runs):
            common = sorted(set(runs[variant]) & set(runs[ref]))
            if not common:
                continue
            ids = {json.dumps(runs[v][s]["pred"].get("ids")) for v in (variant, ref) for s in common} - {"null"}
            if len(ids) > 1:
                raise SystemExit(f"{task}: {variant} and {ref} were evaluated on different dev examples")
            a = np.array([runs[ref][s]["pred"]["predictions"] for s in common])
            b = np.array([runs[variant][s]["pred"]["predictions"] for s in common])
            y = np.array(runs[ref][common[0]]["pred"]["labels"])
            boot = paired_bootstrap(
                lambda p, labels, fn=fn: fn(p.T, labels),
                a.T,
                b.T,
                y,
                n_resamples=args.resamples,
                seed=0,
                two_sided=True,
            )
            entry = {
                "vs": ref,
                "seeds": common,
                "difference": boot.difference,
                "bootstrap_p": boot.p_value,
                "bootstrap_ci95": boot.details["ci95"],
            }
            if len(common) > 1:
                t = paired_t_test([runs[ref][s]["score"] for s in common], [runs[variant][s]["score"] for s in common])
                entry["t_test_p"] = t.p_value
            tests.setdefault(variant, []).append(entry)
        summary["tasks"][task] = {"metric": main, "regression": regression, "variants": rows, "tests": tests}
    return summary


def _pairs(runs: dict) -> list[tuple[str, str]]:
    """Which variant is compared with which: sgnet* with the baseline of the same pooling; noise with clean."""
    out = []
    glue_sweep = any(re.fullmatch(r"(baseline_default|sbert_gate)(_n(\d+|all))?", v) for v in runs)
    for v in runs:
        m = re.fullmatch(r"(.+?)(_n(?:\d+|all))?", v)
        base, suffix = m.group(1), m.group(2) or ""  # learning-curve runs pair with the same training-set size
        if glue_sweep and "_noise" not in v and base != "baseline_default":
            # The GLUE sweep: every system vs the plain model with the same head and pooling, and the controls.
            ref = "sbert_baseline" if base.startswith("sbert") and base != "sbert_baseline" else "baseline_default"
            if ref + suffix in runs:
                out.append((v, ref + suffix))
            control = {"sgnet_default": "vanilla_layer_mean", "sbert_gate": "sbert_gate_random"}.get(base)
            if base.startswith("sbert_gate_") and base != "sbert_gate_random":  # Table 5 (gated): vs the whole
                control = "sbert_gate"
            if control and control + suffix in runs:
                out.append((v, control + suffix))
            continue
        if v.startswith("sbert") and v != "sbert_baseline":
            if "sbert_baseline" in runs:
                out.append((v, "sbert_baseline"))
            if v not in ("sbert", "sbert_lisa") and "sbert" in runs:  # Table 5 ablations: also vs full Syntax-BERT
                out.append((v, "sbert"))
        elif v.startswith(("sgnet", "vanilla_layer")) and "_noise" not in v:
            ref = "baseline_mean" if "_mean" in v else "baseline"
            if ref in runs:
                out.append((v, ref))
        elif "_noise" in v and not v.endswith("_noise0"):
            ref = v.split("_noise")[0] + "_noise0"
            if ref in runs:
                out.append((v, ref))
    return out


def _p(p: float) -> str:
    """A p-value for a table: 3 decimals, or "<0.001" (the bootstrap's resolution is 1 / resamples)."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _markdown(summary: dict) -> str:
    lines = []
    for task, t in summary["tasks"].items():
        lines.append(f"\n**{task}** (dev {t['metric']})\n")
        lines.append("| variant | seeds | mean ± std | per seed | vs | Δ | bootstrap p (two-sided) | t-test p |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for v, r in t["variants"].items():
            tests = t["tests"].get(v) or [{}]
            if isinstance(tests, dict):  # summaries written before several comparisons per variant
                tests = [tests]
            for k, test in enumerate(tests):
                head = (
                    (
                        f"| {v} | {len(r['seeds'])} | {r['mean']:.4f} ± {r['std']:.4f} | "
                        f"{', '.join(f'{s:.4f}' for s in r['scores'])} | "
                    )
                    if k == 0
                    else "| | | | | "
                )
                lines.append(
                    head
                    + f"{test.get('vs', '')} | "
                    + (f"{test['difference']:+.4f} | {_p(test['bootstrap_p'])} | " if test else " | | ")
                    + (f"{_p(test['t_test_p'])} |" if "t_test_p" in test else " |")
                )
    return "\n".join(lines)


def _reorder(args: argparse.Namespace) -> None:
    """Repair ``dev_predictions.json`` files written before the evaluation-order fix.

    Until that fix, transformers 5 length-grouped the evaluation batches (seeded with ``data_seed``), so the saved
    predictions were in sampler order, not dataset order (metrics were right: labels travelled with the batches).
    The sampler is deterministic, so its order is rebuilt from the run's own cached dev features and inverted;
    a file is rewritten only if the reordered predictions reproduce the run's dev metric exactly.
    """
    import torch
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from syntaxformer.tasks.metrics import compute_metrics
    from syntaxformer.training.run import RUN_FILE, build_context, build_model, load_run, load_tokenizer

    for pred_file in sorted(Path(args.out).glob("*/*/seed*/dev_predictions.json")):
        p = json.loads(pred_file.read_text())
        if p.get("order") == "dataset":
            continue
        run = pred_file.parent
        if not (run / RUN_FILE).is_file():
            print(f"{run}: no {RUN_FILE} (a run of an older version); left as is", flush=True)
            continue
        config, task = load_run(run)
        tokenizer = load_tokenizer(str(run))
        data = task.load_split("dev", config.data_options("dev", config.max_eval_samples))
        ds = task.featurize(data, build_context(config, tokenizer, build_model(config, task).config), "dev")
        gen = torch.Generator().manual_seed(config.resolved_data_seed)
        order = list(
            LengthGroupedSampler(
                int(config.per_device_eval_batch_size), dataset=ds, model_input_name="input_ids", generator=gen
            )
        )
        fixed = [None] * len(order)
        for k, i in enumerate(order):
            fixed[i] = p["predictions"][k]
        main = task.main_metric
        want = json.loads((run / "metrics.json").read_text())["dev"][main]
        got = compute_metrics([main], fixed, p["labels"])[main]
        if abs(got - want) > 1e-9:
            print(f"{run}: reordered {main} {got:.6f} != run's {want:.6f}; left as is", flush=True)
            continue
        p.update(predictions=fixed, order="dataset", reordered="sampler order rebuilt and inverted")
        pred_file.write_text(json.dumps(p))
        print(f"{run}: reordered ({main} {got:.4f} reproduced)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["run", "summarize", "archive", "reorder", "export-parses", "check-parses"])
    parser.add_argument("--tasks", default="sst2,cola,rte,mrpc,stsb")
    parser.add_argument("--variants", default="baseline,sgnet")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--noise", default=None, help="comma-separated parser-noise fractions")
    parser.add_argument(
        "--sizes",
        default=None,
        help="learning curve: comma-separated training-set sizes, "
        "'all' for the whole set (run folders <variant>_n<size>)",
    )
    parser.add_argument(
        "--min-steps",
        type=int,
        default=0,
        help="learning curves: a run whose training subset gives fewer optimisation steps than this (subset / batch "
        "x epochs) trains this many steps instead (max_steps), e.g. 200: 100 sentences = 64 epochs",
    )
    parser.add_argument("--out", default="runs/sgnet_glue")
    parser.add_argument(
        "--full", action="store_true", help="full training sets (SST-2: 10,000), for the GLUE sweep; use its own --out"
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="cpu",
        help="per-task sizes: cpu (subsets, 2 epochs), full (= --full), gpu (every training set "
        "whole, SST-2 included, 3 epochs)",
    )
    parser.add_argument(
        "--parser",
        default=None,
        help="annotator spec for every run, e.g. jsonl:parses.jsonl (made by export-parses) on a machine without spaCy",
    )
    parser.add_argument(
        "--mixed-precision",
        choices=["auto", "no", "bf16", "fp16"],
        default=None,
        help="run: the runs' mixed_precision (default: the library's, auto = bf16 on a GPU that supports it)",
    )
    parser.add_argument(
        "--shard", default=None, help="I/N: run only every N-th run, starting at the I-th (N processes share one GPU)"
    )
    parser.add_argument("--out-file", default="parses.jsonl", help="export-parses: the JSONL file to write")
    parser.add_argument(
        "--save-model-seeds",
        default="",
        help="comma-separated seeds whose models are saved in their run folders (for probes, `syntaxformer show`)",
    )
    parser.add_argument("--json", default=None, help="write the summary JSON here")
    parser.add_argument(
        "--to",
        default=None,
        help="archive: the folder (committed) that keeps the record files of "
        "each finished run of --out, in the same layout",
    )
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument(
        "--suite",
        default=None,
        help="run: after training, score each run on this minimal-pair "
        "suite (e.g. blimp; the model is saved for it); archive keeps the results; export-parses: parse its sentences",
    )
    args = parser.parse_args(argv)
    if args.action == "run":
        _run(args)
        return 0
    if args.action == "export-parses":
        _export_parses(args)
        return 0
    if args.action == "check-parses":
        _check_parses(args)
        return 0
    if args.action == "archive":
        if not args.to:
            parser.error("archive needs --to FOLDER")
        _archive(args)
        return 0
    if args.action == "reorder":
        _reorder(args)
        return 0
    summary = _summarize(args)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=1))
    print(_markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
