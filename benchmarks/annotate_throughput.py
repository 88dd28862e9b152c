"""Throughput of syntaxformer's spaCy annotation against raw ``nlp.pipe`` on the same real texts.

Three things are timed on the same texts with the same loaded pipeline (NER excluded in both):

* ``raw``: ``for doc in nlp.pipe(texts, batch_size=B): pass`` — spaCy alone;
* ``ours``: ``SpacyAnnotator(nlp, cache=None).annotate(texts)`` — spaCy plus conversion to Documents;
* ``cached``: the same annotator with a cache in a temporary folder: a first run that fills it, then re-runs
  that are served from it.

``raw`` and ``ours`` are interleaved (the order alternates every repeat) and the median of the repeats is taken,
so drift in machine load hits both alike. The last line printed is one JSON object with the figures;
``ratio_ours_vs_raw`` is our throughput divided by raw throughput (goal: >= 0.9).

Usage::

    python benchmarks/annotate_throughput.py --quick          # < 1 minute
    python benchmarks/annotate_throughput.py --n 872 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_SST2 = os.path.join(_HERE, "..", "..", "shared", "data", "glue", "SST-2", "dev.tsv")
_UD = os.path.join(_HERE, "..", "..", "shared", "data", "ud_ewt", "en_ewt-ud-dev.conllu")


def load_texts(n: int, path: str | None = None) -> tuple[list[str], str]:
    """The first ``n`` SST-2 dev sentences (or ``# text`` lines of UD EWT dev if SST-2 is absent)."""
    path = path or (_SST2 if os.path.exists(_SST2) else _UD)
    if not os.path.exists(path):
        sys.exit(f"no benchmark texts: neither {_SST2} nor {_UD} exists; pass --texts FILE (one text per line)")
    texts: list[str] = []
    with open(path, encoding="utf-8") as f:
        if path.endswith(".conllu"):
            texts = [line[len("# text = "):].rstrip("\n") for line in f if line.startswith("# text = ")]
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
    parser.add_argument("--quick", action="store_true", help="300 texts, 3 repeats (well under a minute)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeats = min(args.n, 300), min(args.repeats, 3)

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
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
