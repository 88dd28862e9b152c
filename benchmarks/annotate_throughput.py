"""Throughput of syntaxformer's spaCy annotation against raw ``nlp.pipe`` on the same real texts.

Three things are timed on the same texts with the same loaded pipeline (NER excluded in both):

* ``raw``: ``for doc in nlp.pipe(texts, batch_size=B): pass`` — spaCy alone;
* ``ours``: ``SpacyAnnotator(nlp, cache=None).annotate(texts)`` — spaCy plus conversion to Documents;
* ``cached``: the same annotator with a cache in a temporary folder: a first run that fills it, then re-runs
  that are served from it.

``raw`` and ``ours`` are interleaved (the order alternates every repeat) and the median of the repeats is taken,
so drift in machine load hits both alike. ``ratio_ours_vs_raw`` is our throughput divided by raw throughput
(goal: >= 0.9).

Workers (corpus-scale parsing; ``scaling`` in the JSON): the first ``--scale-n`` sentences of the SST-2
*training* file (more texts than dev, so that starting workers does not dominate), parsed at 1 and 2 workers by

* ``spacy_pipe``: raw ``nlp.pipe(texts, n_process=k)`` — the reference; its 1-worker throughput is the baseline of
  every ratio;
* ``ours``: ``SpacyAnnotator(n_process=k).annotate(texts)`` (spaCy's own multiprocessing inside our annotator);
* ``datasets``: ``Dataset.map(BatchAnnotator(...), batched=True, num_proc=k)`` (in-process for k = 1);
* ``ray``: Ray Data ``map_batches(BatchAnnotator, compute=ActorPoolStrategy(size=k))`` on a local instance
  (``ray.init(num_cpus=2)``, started before timing), skipped with a note when Ray is not installed.

The parse cache is **off** in every measurement (``cache=None``): every text is parsed. Each timing is end to end:
worker start-up (process pools, actors, loading the pipeline in fresh processes) included. ``fixed_s`` is the time
of the same call on 32 texts, a measure of that start-up; ``marginal_texts_per_s`` = (N - 32) / (time - fixed_s),
an estimate of the throughput once workers run (noisy: two timings subtracted). Methods are run in a rotating
order in each repeat; medians are reported.

The last line printed is one JSON object with all the figures.

Usage::

    python benchmarks/annotate_throughput.py --quick          # within a minute (no Ray: its start-up alone is 8-12 s)
    python benchmarks/annotate_throughput.py --n 872 --repeats 5 --scale-n 4000 --scale-repeats 3
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_DATA = os.environ.get("SYNTAXFORMER_DATA") or os.path.join(_HERE, "..", "..", "shared", "data")
_SST2 = os.path.join(_DATA, "glue", "SST-2", "dev.tsv")
_UD = os.path.join(_DATA, "ud_ewt", "en_ewt-ud-dev.conllu")
_SST2_TRAIN = os.path.join(_DATA, "glue", "SST-2", "train.tsv")
_SMALL = 32  # texts of the start-up measurement


def load_texts(n: int, path: str | None = None) -> tuple[list[str], str]:
    """The first ``n`` SST-2 dev sentences (or ``# text`` lines of UD EWT dev if SST-2 is absent)."""
    path = path or (_SST2 if os.path.exists(_SST2) else _UD)
    if not os.path.exists(path):
        sys.exit(f"no benchmark texts: neither {_SST2} nor {_UD} exists; pass --texts FILE (one text per line)")
    texts: list[str] = []
    with open(path, encoding="utf-8") as f:
        if path.endswith(".conllu"):
            texts = [line[len("# text = ") :].rstrip("\n") for line in f if line.startswith("# text = ")]
        elif path.endswith(".tsv"):
            rows = [line.rstrip("\n").split("\t") for line in f]
            col = rows[0].index("sentence") if "sentence" in rows[0] else 0
            texts = [r[col] for r in rows[1:] if len(r) > col]
        else:
            texts = [line.rstrip("\n") for line in f if line.strip()]
    return texts[:n], os.path.relpath(path)


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=872, help="number of texts (default: all 872 SST-2 dev)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of each method (median reported)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--model", default="en_core_web_sm")
    parser.add_argument("--texts", default=None, help="file with texts (.tsv SST-style, .conllu, or one per line)")
    parser.add_argument("--scale-n", type=int, default=4000, help="SST-2 training sentences of the workers part")
    parser.add_argument("--scale-repeats", type=int, default=3, help="timed repeats of the workers part")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts (default 1 2)")
    parser.add_argument("--no-ray", action="store_true", help="leave Ray out of the workers part")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="300 texts, 3 repeats; workers part: 400 "
        "sentences, 1 repeat, no Ray (its actors take 8-12 s to start); within a minute",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeats = min(args.n, 300), min(args.repeats, 3)
        args.scale_n, args.scale_repeats, args.no_ray = min(args.scale_n, 400), 1, True

    os.environ.setdefault("SYNTAXFORMER_NO_PROGRESS", "1")
    import spacy

    from syntaxformer.data.annotators import ParseCache, make_annotator
    from syntaxformer.data.annotators.spacy import load_pipeline

    texts, source = load_texts(args.n, args.texts)
    nlp = load_pipeline(args.model)
    ours = make_annotator(nlp, cache=None, batch_size=args.batch_size, progress=False)

    def run_raw() -> None:
        for _ in nlp.pipe(texts, batch_size=args.batch_size):
            pass

    def run_ours() -> None:
        ours.annotate(texts)

    # warm-up (first-call allocations, string-store growth)
    run_raw()
    docs = ours.annotate(texts)
    raw_t, ours_t = [], []
    for r in range(args.repeats):
        if r % 2 == 0:
            raw_t.append(_time(run_raw))
            ours_t.append(_time(run_ours))
        else:
            ours_t.append(_time(run_ours))
            raw_t.append(_time(run_raw))

    with tempfile.TemporaryDirectory() as tmp:
        cache = ParseCache(tmp)
        cached = make_annotator(nlp, cache=cache, batch_size=args.batch_size, progress=False)
        first = _time(lambda: cached.annotate(texts))
        cached_t = [_time(lambda: cached.annotate(texts)) for _ in range(args.repeats)]
        cache.close()

    raw_s, ours_s, cached_s = (statistics.median(x) for x in (raw_t, ours_t, cached_t))
    n_words = sum(len(s) for d in docs for s in d)
    result = {
        "texts": len(texts),
        "words": n_words,
        "source": source,
        "pipeline": ours.source,
        "spacy": spacy.__version__,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "raw_s": round(raw_s, 4),
        "ours_s": round(ours_s, 4),
        "raw_texts_per_s": round(len(texts) / raw_s, 1),
        "ours_texts_per_s": round(len(texts) / ours_s, 1),
        "ratio_ours_vs_raw": round(raw_s / ours_s, 3),
        "cache_fill_s": round(first, 4),
        "cached_s": round(cached_s, 4),
        "cached_texts_per_s": round(len(texts) / cached_s, 1),
        "cached_speedup": round(ours_s / cached_s, 2),
    }
    for name, times in (("raw", raw_t), ("ours", ours_t), ("cached", cached_t)):
        print(f"{name:>7}: " + " ".join(f"{t:.3f}s" for t in times), file=sys.stderr)
    if args.scale_n > 0:
        result["scaling"] = scaling(args, nlp)
    print(json.dumps(result))
    return 0


# -- workers: spaCy n_process, datasets.map(num_proc), Ray map_batches -----------------------------------------
def _methods(nlp, texts: list[str], args, use_ray: bool):
    """name -> fn(texts, k) that parses ``texts`` with ``k`` workers, parse cache off."""
    import datasets

    from syntaxformer.data.annotators import make_annotator
    from syntaxformer.data.annotators.batch import BatchAnnotator

    datasets.disable_progress_bars()
    batch = args.batch_size

    def spacy_pipe(items: list[str], k: int) -> None:
        for _ in nlp.pipe(items, batch_size=batch, n_process=k):
            pass

    def ours(items: list[str], k: int) -> None:
        make_annotator(args.model, cache=None, progress=False, batch_size=batch, n_process=k).annotate(items)

    def with_datasets(items: list[str], k: int) -> None:
        parse = BatchAnnotator(args.model, column="text", cache=None, batch_size=batch)
        ds = datasets.Dataset.from_dict({"text": items})
        ds.map(
            parse,
            batched=True,
            batch_size=batch,
            num_proc=k if k > 1 else None,
            load_from_cache_file=False,
            features=parse.features(ds.features),
        )

    def with_ray(items: list[str], k: int) -> None:
        import ray.data

        ds = ray.data.from_items([{"text": t} for t in items], override_num_blocks=max(1, min(4 * k, len(items) // 8)))
        ds.map_batches(
            BatchAnnotator,
            fn_constructor_kwargs={"spec": args.model, "column": "text", "cache": None},
            batch_size=batch,
            compute=ray.data.ActorPoolStrategy(size=k),
        ).materialize()

    methods = {"spacy_pipe": spacy_pipe, "ours": ours, "datasets": with_datasets}
    if use_ray:
        methods["ray"] = with_ray
    return methods


def _start_ray(workers: int) -> str | None:
    """Start a local Ray instance (its workers import this checkout); ``None``, or why Ray is left out."""
    try:
        import ray
        import ray.data
    except ImportError:
        return "not installed (pip install 'syntaxformer[ray]')"
    import syntaxformer

    src = os.path.dirname(os.path.dirname(os.path.abspath(syntaxformer.__file__)))
    path = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, "SYNTAXFORMER_NO_PROGRESS": "1"}},
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    return None


def scaling(args, nlp) -> dict:
    """Throughput at each worker count of every method on the first ``--scale-n`` SST-2 training sentences."""
    texts, source = load_texts(args.scale_n, _SST2_TRAIN if os.path.exists(_SST2_TRAIN) else None)
    workers = sorted(set(args.workers))
    ray_note = "left out (--no-ray)" if args.no_ray else _start_ray(max(workers))
    methods = _methods(nlp, texts, args, use_ray=ray_note is None)
    runs = [(name, k) for name in methods for k in workers]
    fixed = {}
    for name, k in runs:  # warm-up, then the start-up cost on a few texts
        methods[name](texts[:_SMALL], k)
        fixed[name, k] = _time(functools.partial(methods[name], texts[:_SMALL], k))
    times: dict[tuple[str, int], list[float]] = {run: [] for run in runs}
    for r in range(args.scale_repeats):
        shift = r % len(runs)
        for name, k in runs[shift:] + runs[:shift]:
            times[name, k].append(_time(functools.partial(methods[name], texts, k)))
    base = statistics.median(times["spacy_pipe", 1]) if ("spacy_pipe", 1) in times else None
    table: dict[str, dict[str, dict]] = {}
    for name, k in runs:
        t = statistics.median(times[name, k])
        marginal = t - fixed[name, k]
        table.setdefault(name, {})[str(k)] = {
            "s": round(t, 3),
            "texts_per_s": round(len(texts) / t, 1),
            "ratio_vs_raw_1": round(base / t, 3) if base else None,
            "fixed_s": round(fixed[name, k], 3),
            "marginal_texts_per_s": round((len(texts) - _SMALL) / marginal, 1) if marginal > 0 else None,
        }
        print(
            f"{name:>10} x{k}: "
            + " ".join(f"{x:.2f}s" for x in times[name, k])
            + f"  (start-up on {_SMALL} texts {fixed[name, k]:.2f}s)",
            file=sys.stderr,
        )
    if ray_note is None:
        import ray

        ray.shutdown()
    return {
        "texts": len(texts),
        "words": sum(len(t.split()) for t in texts),
        "source": source,
        "workers": workers,
        "repeats": args.scale_repeats,
        "parse_cache": "off",
        "baseline": "spacy_pipe x1",
        "ray": ray_note or f"local instance, ray.init(num_cpus={max(workers)})",
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "methods": table,
    }


if __name__ == "__main__":
    sys.exit(main())
