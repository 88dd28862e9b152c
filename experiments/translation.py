"""English→German translation on Multi30k: baseline vs syntax-infused vs SG-Net encoder vs both, by data fraction.

The question (Sundararaman et al., Table 1): does the gain of source-side syntax grow as training data shrinks?
Every arm of one fraction shares the seeded training subset (nested across fractions) and the BPE vocabularies
learned on it, the Transformer size, the seed, and the **same budget of optimizer updates** for every fraction
and arm (the paper trains every fraction for the same 100k steps; equal epochs would give the 10% models a tenth
of the updates and confound "little data" with "little training"). Small fractions see their data for more
epochs; the checkpoint kept is the best by validation loss (Multi30k val, every 50 steps), which guards against
over-fitting. Test set: Multi30k test2016 (1,000 pairs; beam 5; sacreBLEU, signature printed); the 100% models
also translate WMT newstest2013 (3,000 segments, from the ``.sgm`` release; far out of domain for a 29k-sentence
image-caption corpus, so expect low scores). After every validation the model also translates the validation set
greedily (:class:`DevBleuCurve`, ``dev_bleu.json``: the dev-BLEU curve, to check that training went on until dev
BLEU stopped rising; the training itself is unchanged by it).

Arms (``syntaxformer.tasks.translation.ARMS``): ``baseline``, ``syntax`` (UPOS, case, subword position), ``sgnet``,
``both``, controls ``vanilla_layer``, ``syntax_xpos`` and the tag controls of ``syntax``: ``shuffled_tags`` (each
sentence's UPOS tags permuted among its words) and ``random_tags`` (tags drawn uniformly from the UPOS tags).

``archive`` copies each finished run's hypotheses, ``metrics.json`` and curve into ``docs/results/runs/translation/``
(never overwriting); ``summarize`` reads that archive, recomputes every BLEU from the hypotheses and gives per pair
of arms the tests over seeds (95% t-interval, paired t-test, exact sign-flip test; Holm across all pairs) and per
run against the baseline of its seed sacreBLEU's paired bootstrap (1,000 resamples, two-sided;
``syntaxformer.tasks.significance.paired_bleu_test``), which resamples test sentences and so speaks about those
trained models only.

Model and budget (preset ``cpu``), the same for every run:
    Marian-style post-LN Transformer from random init (``transformers.MarianMTModel``), d_model 128, 3 + 3 layers,
    4 heads, FFN 512, ReLU, dropout 0.1; separate BPE vocabularies of up to 4,000 pieces learned on each
    fraction's training subset (shared by its arms). 2.41M parameters for the 100% baseline (2.36M at 10%, where
    the source vocabulary stops at 3,569); syntax arms: token embedding 123 + features 5 (d/D = 20/512 as in the paper: the task's default ``feature_dim``); SG arms: one
    extra 128-d layer (+0.2M). 400 updates of 128 sentence pairs (≈1.8 epochs of the 29k pairs, ≈18 epochs of the
    10% subset), Adam (0.9, 0.98), peak lr 1.5e-3 after 100 warm-up steps, then inverse square root, label
    smoothing 0.1, gradient clipping 1.0, validation loss every 50 updates.
    A model this small is far from the papers' Transformer-base (and from converged Multi30k systems at ~35 BLEU):
    it is what trains in minutes on 2 CPU cores, so absolute BLEU will be low and the comparison is between arms.

Measured (shared 2-core box with another experiment using ~1 core; torch on 1 thread, ``--threads 1``, because
with 2 threads under that contention a training step ran ~2x slower for a d=256 model and ~100x slower for a tiny
one, OpenMP threads waiting on each other):
    * one update: 0.85-0.95 s (``both`` at 10%: 100 updates in 91 s incl. 2 validations; ``baseline`` at 100%:
      ~0.85 s/update once the machine was otherwise idle of my jobs). 400 updates ≈ 6 min per run under this
      contention; on 2 free cores with ``--threads 2`` expect ≈3-4 min.
    * preparing a run: parsing the 29k training sources with spaCy en_core_web_sm took ≈60 s (≈480 sentences/s)
      the first time, cached afterwards (``$SYNTAXFORMER_CACHE`` or ``~/.cache/syntaxformer``); BPE + alignment
      + features ≈15-45 s per run.
    * decoding test2016 (1,000 sentences, beam 5, batches of 64): 23-25 s with a barely trained model.
    * a 20-update run of 2 arms at 10% (``--max-steps 20``): 50 s wall per arm, decode included.
    Full sweep (4 fractions x 4 arms x 1 seed = 16 runs): ≈16 x 7.5 min ≈ 2 h under this contention (≈1-1.2 h on
    free cores), plus the newstest2013 decodes (3,000 longer sentences) of the four 100% models, ≈2-5 min each.

Usage (from the repository root, in the project environment)::

    bash experiments/translation_sweep.sh     # the study: 4 arms, 10% x seeds 1-5, 100% x seeds 1-3, each archived
    python experiments/translation.py run --fractions 0.1 --arms baseline,syntax,shuffled_tags,random_tags --seeds 1
    python experiments/translation.py archive                  # runs/translation -> docs/results/runs/translation
    python experiments/translation.py summarize                # tables + docs/results/translation_study.json
    # controls: the extra layer without the SDOI mask (capacity, no syntax); fine PTB tags instead of UPOS
    python experiments/translation.py run --fractions 0.1,1.0 --arms vanilla_layer,syntax_xpos
    # the parses of every source sentence for a machine without spaCy (the GPU runs: experiments/device/README.md)
    python experiments/translation.py export-parses --fractions 1.0 --out-file parses.jsonl
    python experiments/translation.py run --fractions 1.0 --arms syntax --parser jsonl:parses.jsonl
    # quick check of the whole pipeline (a few minutes):
    python experiments/translation.py run --fractions 0.1 --arms baseline,both --max-steps 50 --out runs/tr_smoke
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault(
    "SYNTAXFORMER_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)  # the library reads data only where told

FRACTION_TAG = "f{:g}"
ARCHIVE = "docs/results/runs/translation_steps600"


def _run_dir(out: Path, fraction: float, arm: str, seed: int) -> Path:
    return out / FRACTION_TAG.format(fraction) / arm / f"seed{seed}"


class DevBleuCurve:
    """A ``TrainerCallback``: after each validation (every 50 updates) the model translates the validation set
    greedily and the corpus BLEU against the validation references as the model sees them (the target pieces,
    at most 64, detokenised) is appended to :attr:`curve` as ``{"step", "dev_bleu"}``. It translates the evaluation
    set in the evaluation's batches and restores torch's random state, so the training itself is unchanged.

    Args:
        run_dir: the run folder (``target_tokenizer/`` is written there before training; ``dev_bleu.json`` goes
            there after each point).
    """

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        path = run_dir / "dev_bleu.json"  # a resumed run keeps the points before its checkpoint
        self.curve: list[dict] = json.loads(path.read_text()) if path.is_file() else []

    def __getattr__(self, name: str):  # the other TrainerCallback events: nothing to do
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_evaluate(self, args, state, control, model=None, eval_dataloader=None, **kwargs) -> None:
        import numpy as np
        import torch

        from syntaxformer.data.bpe import load_tokenizers
        from syntaxformer.data.translation_pairs import decode_translations
        from syntaxformer.modeling.raw_text import padded
        from syntaxformer.modeling.seq2seq import generate_ids
        from syntaxformer.tasks.metrics import corpus_bleu
        from syntaxformer.utils import write_json

        if model is None or eval_dataloader is None:
            return
        target = load_tokenizers(self.run_dir)[1]
        items = eval_dataloader.dataset  # translated in the evaluation's batches (the library's one decoding path)
        rng, was_training = torch.get_rng_state(), model.training
        hyps = decode_translations(generate_ids(model, items, args.eval_batch_size, num_beams=1), target)
        refs = decode_translations(padded([item["labels"] for item in items], -100, np.int64), target)
        model.train(was_training)
        torch.set_rng_state(rng)
        self.curve = [c for c in self.curve if c["step"] < state.global_step]
        self.curve.append({"step": state.global_step, "dev_bleu": round(corpus_bleu(hyps, refs)["bleu"], 2)})
        write_json(self.run_dir / "dev_bleu.json", self.curve, indent=1)


def _task_options(args: argparse.Namespace, fraction: float, arm: str) -> dict:
    """The translation task's options of one run: Multi30k from the shared data folder, test2016 (and, at 100%,
    newstest2013 unless ``--no-newstest``), the preset, and the BPE vocabularies of the fraction shared by its arms."""
    from syntaxformer.defaults import shared_data_dir

    data = shared_data_dir()
    if data is None:
        raise SystemExit("../shared/data not found (set SYNTAXFORMER_DATA)")
    m30k = data / "multi30k"
    nt13 = data / "wmt14_ende" / "newstest2013"
    eval_sets = {"test2016": [str(m30k / "test_2016_flickr.en"), str(m30k / "test_2016_flickr.de")]}
    if fraction == 1.0 and not args.no_newstest:
        eval_sets["newstest2013"] = [str(nt13 / "newstest2013-src.en.sgm"), str(nt13 / "newstest2013-ref.de.sgm")]
    return {
        "arm": arm,
        "fraction": fraction,
        "data_seed": 0,
        "train_source": str(m30k / "train.en"),
        "train_target": str(m30k / "train.de"),
        "valid_source": str(m30k / "val.en"),
        "valid_target": str(m30k / "val.de"),
        "eval_sets": eval_sets,
        "preset": args.preset,
        # one vocabulary per (fraction, data seed), shared by the arms
        "tokenizer_dir": str(Path(args.out) / FRACTION_TAG.format(fraction) / "tokenizers"),
    }


def _run(args: argparse.Namespace) -> None:
    import torch

    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    for fraction in [float(x) for x in args.fractions.split(",")]:
        for seed in [int(s) for s in args.seeds.split(",")]:
            for arm in args.arms.split(","):
                run = _run_dir(out, fraction, arm, seed)
                if (run / "metrics.json").is_file():
                    print(f"skip {run} (finished)", flush=True)
                    continue
                every = {"eval_steps": args.eval_steps, "save_steps": args.eval_steps, "logging_steps": args.eval_steps}
                config = RunConfig(
                    task="translation",
                    task_options=_task_options(args, fraction, arm),
                    output_dir=str(run),
                    max_steps=args.max_steps,
                    seed=seed,
                    disable_tqdm=args.no_progress,
                    resume=True,  # an interrupted run continues from its last checkpoint
                    **({"training_args": every} if args.eval_steps else {}),
                    **({"parser": args.parser} if args.parser else {}),
                    **({"mixed_precision": args.mixed_precision} if args.mixed_precision else {}),
                )
                t0 = time.time()
                m = train(config, callbacks=[DevBleuCurve(run)])
                if not args.keep_checkpoints:
                    for folder in run.glob("checkpoint-*"):
                        shutil.rmtree(folder)
                print(
                    json.dumps(
                        {
                            "fraction": fraction,
                            "arm": arm,
                            "seed": seed,
                            "bleu": {k: round(v["bleu"], 2) for k, v in m["eval"].items()},
                            "train_s": m["train"]["runtime_s"],
                            "wall_s": round(time.time() - t0, 1),
                        }
                    ),
                    flush=True,
                )


def _export_parses(args: argparse.Namespace) -> None:
    """Parse here (spaCy, with its parse cache) every source sentence the runs of ``--fractions`` read -- training
    subset, validation set, evaluation sets -- into one syntaxformer JSONL file, for a machine without spaCy (the GPU
    machine), where ``run --parser jsonl:FILE`` looks each sentence up instead of parsing it."""
    from syntaxformer.data import make_annotator
    from syntaxformer.data.sentence import write_jsonl
    from syntaxformer.tasks import get_task

    texts: dict[str, None] = {}
    for fraction in [float(x) for x in args.fractions.split(",")]:
        task = get_task("translation", **_task_options(args, fraction, "syntax"))
        for split in ("train", "dev", *task.eval_set_names()):
            texts.update(dict.fromkeys(task.load_split(split).sources))
    docs = make_annotator(args.parser or None, progress=not args.no_progress).annotate(list(texts))
    n = write_jsonl(docs, args.out_file)
    print(json.dumps({"file": args.out_file, "records": n}), flush=True)


#: What the archive keeps of a finished run: enough to recompute every BLEU and read the dev curve.
ARCHIVED_FILES = ("metrics.json", "dev_bleu.json", "hyp.*.txt")


def _archive(args: argparse.Namespace) -> None:
    """Copy each finished run's :data:`ARCHIVED_FILES` from ``--out`` into ``--to`` (same layout); a run already
    archived is left as it is unless its files differ, which is an error (an archive is never overwritten)."""
    out, to = Path(args.out), Path(args.to)
    for mf in sorted(out.glob("f*/*/seed*/metrics.json")):
        run = mf.parent
        dest = to / run.relative_to(out)
        files = [f for pattern in ARCHIVED_FILES for f in sorted(run.glob(pattern))]
        if dest.is_dir():
            differ = [
                f.name for f in files if not (dest / f.name).is_file() or (dest / f.name).read_bytes() != f.read_bytes()
            ]
            if differ:
                raise SystemExit(f"{dest} is archived already and differs from {run} in {differ}; not overwritten")
            continue
        tmp = dest.with_name(dest.name + ".part")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for f in files:
            shutil.copyfile(f, tmp / f.name)
        tmp.rename(dest)
        print(f"archived {dest}", flush=True)


def references(run_metrics: dict, name: str) -> list[str]:
    """The references of eval set ``name`` of a run (its recorded files; where they are not on this machine, the file
    of the same name in the shared data folder)."""
    from syntaxformer.data.readers.parallel import read_corpus
    from syntaxformer.defaults import shared_data_dir

    files = [Path(f) for f in run_metrics["task_options"]["eval_sets"][name]]
    if not files[1].is_file():
        data = shared_data_dir()
        found = [next(iter(sorted(data.rglob(f.name))), None) if data else None for f in files]
        if None in found:
            raise SystemExit(f"the references of {name!r} ({files[1]}) are not on this machine")
        files = [Path(f) for f in found if f is not None]
    targets = read_corpus(str(files[0]), str(files[1])).targets
    assert targets is not None
    return targets


def read_archive(root: Path) -> dict:
    """fraction -> arm -> seed -> {"dir", "metrics", "hyps": {set: lines}, "curve"} of every archived run."""
    runs: dict = {}
    for mf in sorted(root.glob("f*/*/seed*/metrics.json")):
        m = json.loads(mf.read_text(encoding="utf-8"))
        hyps = {
            f.name[len("hyp.") : -len(".txt")]: f.read_text(encoding="utf-8").split("\n")[:-1]
            for f in sorted(mf.parent.glob("hyp.*.txt"))
        }
        curve_file = mf.parent / "dev_bleu.json"
        curve = json.loads(curve_file.read_text()) if curve_file.is_file() else []
        runs.setdefault(m["fraction"], {}).setdefault(m["arm"], {})[m["seed"]] = {
            "dir": mf.parent,
            "metrics": m,
            "hyps": hyps,
            "curve": curve,
        }
    return runs


def _summarize(args: argparse.Namespace) -> dict:
    """Every BLEU recomputed from the archived hypotheses; per pair of arms the tests over seeds (Holm across all
    of them); per run against the baseline of its seed, sacreBLEU's paired bootstrap (about those trained models)."""
    from syntaxformer.analysis.minimal_pairs import holm
    from syntaxformer.tasks.metrics import corpus_bleu
    from syntaxformer.tasks.significance import paired_bleu_test, seed_comparison

    root = Path(args.to)
    runs = read_archive(root)
    refs: dict = {}
    summary: dict = {"archive": str(root), "signature": None, "resamples": args.resamples, "fractions": {}}
    tests = []  # (fraction, set, arm_a, arm_b, result): the family Holm adjusts
    for fraction in sorted(runs):
        exact: dict = {}
        arms = runs[fraction]
        out: dict = {"arms": {}, "comparisons": []}
        for arm in sorted(arms, key=_arm_order):
            rows = []
            for seed, run in sorted(arms[arm].items()):
                m = run["metrics"]
                row = {
                    "seed": seed,
                    "parameters": m["parameters"],
                    "train_seconds": m["train"]["runtime_s"],
                    "epochs": round(m["train"]["epochs"], 2),
                    "best_step": m["train"]["best_step"],
                    "train_pairs": m["sizes"]["train"],
                    "bleu": {},
                    "dev_bleu_curve": run["curve"],
                }
                for name, hyps in run["hyps"].items():
                    if name not in refs:
                        refs[name] = references(m, name)
                    score = corpus_bleu(hyps, refs[name])
                    summary["signature"] = summary["signature"] or score["signature"]
                    row["bleu"][name] = round(score["bleu"], 2)
                    exact[arm, seed, name] = score["bleu"]  # the tests use the unrounded scores
                    if abs(score["bleu"] - m["eval"][name]["bleu"]) > 1e-6:
                        raise SystemExit(
                            f"{run['dir']}: BLEU {score['bleu']} from hyp.{name}.txt, recorded {m['eval'][name]['bleu']}"
                        )
                base = arms.get("baseline", {}).get(seed)
                if base is not None and arm != "baseline":
                    row["vs_baseline_fixed_models"] = {}
                    for name, hyps in run["hyps"].items():
                        if name in base["hyps"]:
                            t = paired_bleu_test(base["hyps"][name], hyps, refs[name], n_resamples=args.resamples)
                            row["vs_baseline_fixed_models"][name] = {
                                "delta": round(t.difference, 2),
                                "p_two_sided": t.p_value,
                                "ci95": [round(x, 2) for x in t.details["ci95"]],
                            }
                rows.append(row)
            out["arms"][arm] = rows
        names = sorted({n for arm in arms.values() for r in arm.values() for n in r["hyps"]})
        ordered = sorted(arms, key=_arm_order)
        for k, arm_b in enumerate(ordered):
            for arm_a in ordered[:k]:
                seeds = sorted(set(arms[arm_a]) & set(arms[arm_b]))
                for name in names:
                    have = [s for s in seeds if name in arms[arm_a][s]["hyps"] and name in arms[arm_b][s]["hyps"]]
                    if len(have) < 2:
                        continue
                    score = {arm: [exact[arm, seed, name] for seed in have] for arm in (arm_a, arm_b)}
                    r = seed_comparison(score[arm_a], score[arm_b])
                    entry = {**r, "set": name, "a": arm_a, "b": arm_b, "seeds": have}
                    out["comparisons"].append(entry)
                    tests.append(entry)
        summary["fractions"][f"{fraction:g}"] = out
    for entry, adjusted in zip(tests, holm([t["t_p"] for t in tests])):
        entry["holm"] = adjusted
    summary["holm_family"] = len(tests)
    return summary


ARM_ORDER = ("baseline", "syntax", "shuffled_tags", "random_tags")


def _arm_order(arm: str) -> tuple[int, str]:
    return (ARM_ORDER.index(arm) if arm in ARM_ORDER else len(ARM_ORDER), arm)


def _markdown(summary: dict) -> str:
    """The tables of docs/results.md's translation study: BLEU per run, the tests over seeds, the paired tests of
    fixed models, the dev-BLEU curves."""

    def pv(p: float) -> str:
        return "<0.001" if p < 0.001 else f"{p:.3f}"

    lines = [f"sacreBLEU signature: `{summary['signature']}`"]
    for fraction, f in summary["fractions"].items():
        sets = sorted({n for rows in f["arms"].values() for r in rows for n in r["bleu"]})
        lines += ["", f"Fraction {fraction} — BLEU per run, recomputed from the archived hypotheses:", ""]
        lines += ["| arm | seed | params | train s | best step | " + " | ".join(f"{n} BLEU" for n in sets) + " |"]
        lines += ["|---" * (5 + len(sets)) + "|"]
        for arm, rows in f["arms"].items():
            for r in rows:
                cells = [f"{r['bleu'][n]:.2f}" if n in r["bleu"] else "–" for n in sets]
                lines.append(
                    f"| {arm} | {r['seed']} | {r['parameters'] / 1e6:.2f}M | {r['train_seconds']:.0f} | "
                    f"{r['best_step']} | " + " | ".join(cells) + " |"
                )
        lines += ["", "Tests over seeds (B − A; 95% t-interval; paired t-test; exact sign flip; Holm over all):", ""]
        if f["comparisons"]:
            lines += ["| set | B − A | seeds | Δ BLEU [95% t-interval] | t p | sign-flip p | Holm p |"]
            lines += ["|---|---|---|---|---|---|---|"]
            for c in f["comparisons"]:
                lo, hi = c["ci95"]
                lines.append(
                    f"| {c['set']} | {c['b']} − {c['a']} | {','.join(map(str, c['seeds']))} | "
                    f"{c['difference']:+.2f} [{lo:+.2f}, {hi:+.2f}] | {pv(c['t_p'])} | {pv(c['sign_flip_p'])} | "
                    f"{pv(c['holm'])} |"
                )
        else:
            lines.append("none yet: no pair of arms shares two seeds.")
        lines += [
            "",
            "Against the baseline of the same seed, for these trained models only (sacreBLEU's paired bootstrap, "
            f"{summary['resamples']:,} resamples, two-sided; it resamples test sentences, not training):",
            "",
        ]
        if any(r.get("vs_baseline_fixed_models") for rows in f["arms"].values() for r in rows):
            lines += ["| arm | seed | set | Δ BLEU [95% CI] | p (two-sided) |", "|---|---|---|---|---|"]
        else:
            lines.append("none yet: no arm has a run of the same seed as a baseline run.")
        for arm, rows in f["arms"].items():
            for r in rows:
                for name, t in r.get("vs_baseline_fixed_models", {}).items():
                    lo, hi = t["ci95"]
                    lines.append(
                        f"| {arm} | {r['seed']} | {name} | {t['delta']:+.2f} [{lo:+.2f}, {hi:+.2f}] | "
                        f"{pv(t['p_two_sided'])} |"
                    )
        steps = sorted({c["step"] for rows in f["arms"].values() for r in rows for c in r["dev_bleu_curve"]})
        lines += ["", "Dev BLEU (greedy, Multi30k val) after each validation:", ""]
        lines += ["| arm | seed | " + " | ".join(str(s) for s in steps) + " |", "|---" * (2 + len(steps)) + "|"]
        for arm, rows in f["arms"].items():
            for r in rows:
                at = {c["step"]: c["dev_bleu"] for c in r["dev_bleu_curve"]}
                lines.append(
                    f"| {arm} | {r['seed']} | " + " | ".join(f"{at[s]:.2f}" if s in at else "–" for s in steps) + " |"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["run", "archive", "summarize", "export-parses"])
    parser.add_argument("--fractions", default="0.1,0.25,0.5,1.0")
    parser.add_argument("--arms", default="baseline,syntax,sgnet,both")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--max-steps", type=int, default=600, help="updates per run, the same for every run (600)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1; see the docstring)")
    parser.add_argument(
        "--eval-steps", type=int, default=None, help="validation and checkpoint every N updates (the recipe's 50)"
    )
    parser.add_argument(
        "--parser", default=None, help="annotator spec (default spaCy), e.g. jsonl:FILE made by export-parses"
    )
    parser.add_argument("--out-file", default="parses.jsonl", help="export-parses: the JSONL file to write")
    parser.add_argument(
        "--mixed-precision",
        choices=["auto", "no", "bf16", "fp16"],
        default=None,
        help="the runs' mixed_precision (default: the library's auto, bf16 on a GPU; `no` = fp32 on any device)",
    )
    parser.add_argument("--no-newstest", action="store_true", help="skip newstest2013 for the 100%% models")
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep the checkpoint-* folders after a run")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--out", default="runs/translation", help="the runs (run, archive)")
    parser.add_argument("--to", default=ARCHIVE, help="the archive (archive: where to; summarize: what to read)")
    parser.add_argument(
        "--json", default="docs/results/translation_study.json", help="where the summary JSON goes ('' = nowhere)"
    )
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.action == "run":
        _run(args)
        return 0
    if args.action == "archive":
        _archive(args)
        return 0
    if args.action == "export-parses":
        _export_parses(args)
        return 0
    summary = _summarize(args)
    if args.json:
        from syntaxformer.utils import write_json

        write_json(args.json, summary)
    print(_markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
