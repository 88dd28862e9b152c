"""End-to-end raw-text throughput: the syntax pipeline (parse included) against the plain model's
``pipeline("text-classification")`` on the same real SST-2 dev texts, side by side in one run.

Models: the offline all-MiniLM-L6-v2 encoder under a 2-class head, untrained (speed does not depend on the
weights), saved to a temporary folder: the plain ``BertForSequenceClassification`` and the syntax systems built on
the same encoder (SG-Net; Syntax-BERT unless ``--systems`` says otherwise). Each is used through its
``transformers`` pipeline: ``pipeline("syntax-text-classification", model=folder, parse_cache=False)`` (every text is
parsed with spaCy in the timed call: no parse cache) and ``pipeline("text-classification", model=folder)``, both
with ``batch_size`` texts per model call, on the same texts, the same torch threads. Our pipelines batch texts
longest first, ``text-classification`` in input order, so the plain model is also run through
``syntax-text-classification`` (``plain_sorted``: tokenized, not parsed, sorted batches): the ratio to it is the
cost of the syntax alone. A warm-up call on 8 texts loads spaCy and the weights first. The pipelines are run in interleaved rounds (order alternating) and the median time per
pipeline is kept. For the syntax pipelines, where the time goes: ``parse`` (spaCy), ``featurize`` (subword
alignment and the compact syntax arrays), ``forward`` (batching, the model, softmax), from the Predictor's timings.

The last line printed is one JSON object; ``ratio`` = syntax texts/s divided by plain ``text-classification``
texts/s; ``ratio_vs_plain_sorted`` = divided by the plain model in sorted batches.

Usage::

    python benchmarks/predict_throughput.py --quick        # 128 texts, 1 round, SG-Net only (about a minute)
    python benchmarks/predict_throughput.py                # all 872 dev texts, 3 rounds, SG-Net and Syntax-BERT
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
sys.path.insert(0, os.path.join(_HERE, "..", "src"))


def load_texts(n: int) -> tuple[list[str], str]:
    """The first ``n`` sentences of SST-2 dev (``$SYNTAXFORMER_DATA/glue/SST-2/dev.tsv`` or ../shared/data)."""
    root = os.environ.get("SYNTAXFORMER_DATA") or os.path.join(_HERE, "..", "..", "shared", "data")
    path = os.path.join(root, "glue", "SST-2", "dev.tsv")
    if not os.path.exists(path):
        sys.exit(f"no SST-2 dev file at {path}: set SYNTAXFORMER_DATA to the shared data folder")
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    col = rows[0].index("sentence")
    return [r[col] for r in rows[1:] if len(r) > col][:n], path


def build_models(folder: str, systems: list[str]) -> dict[str, str]:
    """Save the plain classifier and each syntax system (untrained head) on the offline MiniLM; name -> folder."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from syntaxformer.defaults import default_hf_model
    from syntaxformer.modeling import model_class

    encoder = default_hf_model()
    labels = {"id2label": {0: "negative", 1: "positive"}, "label2id": {"negative": 0, "positive": 1}}
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    out = {}
    torch.manual_seed(0)
    plain = AutoModelForSequenceClassification.from_pretrained(encoder, num_labels=2, **labels)
    out["plain"] = os.path.join(folder, "plain")
    plain.save_pretrained(out["plain"])
    tokenizer.save_pretrained(out["plain"])
    for system in systems:
        model = model_class(system, "sequence_classification").from_encoder_pretrained(
            encoder, num_labels=2, problem_type="single_label_classification", **labels
        )
        out[system] = os.path.join(folder, system)
        model.save_pretrained(out[system])
        tokenizer.save_pretrained(out[system])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="128 texts, 1 round, SG-Net only")
    parser.add_argument("--n", type=int, default=None, help="texts (default 872 = all of SST-2 dev; quick: 128)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3; quick: 1)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--systems", default=None, help="comma-separated (default sgnet,syntax_bert; quick: sgnet)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--device", default=None, help="cpu / cuda (default: cuda when available)")
    args = parser.parse_args(argv)
    n = args.n or (128 if args.quick else 872)
    rounds = args.rounds or (1 if args.quick else 3)
    systems = (args.systems or ("sgnet" if args.quick else "sgnet,syntax_bert")).split(",")

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("SYNTAXFORMER_NO_PROGRESS", "1")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    from transformers import pipeline
    from transformers.utils import logging as hf_logging

    import syntaxformer  # noqa: F401  (registers the syntax pipelines)

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    texts, source = load_texts(n)
    with tempfile.TemporaryDirectory() as tmp:
        folders = build_models(tmp, systems)
        pipes = {
            "plain": pipeline(
                "text-classification",
                model=folders["plain"],
                device=device,
                batch_size=args.batch_size,
                truncation=True,
                max_length=args.max_length,
            )
        }
        # the plain model through our pipeline: length-sorted batches, tokenized only (the syntax-free floor)
        pipes["plain_sorted"] = pipeline(
            "syntax-text-classification",
            model=folders["plain"],
            device=device,
            batch_size=args.batch_size,
            max_length=args.max_length,
        )
        for system in systems:
            pipes[system] = pipeline(
                "syntax-text-classification",
                model=folders[system],
                device=device,
                batch_size=args.batch_size,
                parse_cache=False,
                max_length=args.max_length,
            )
        for pipe in pipes.values():  # warm-up: spaCy, weights, first-call allocations
            pipe(texts[:8])
        times: dict[str, list[float]] = {name: [] for name in pipes}
        parts: dict[str, list[dict[str, float]]] = {s: [] for s in [*systems, "plain_sorted"]}
        labels: dict[str, list[str]] = {}
        for r in range(rounds):
            order = list(pipes) if r % 2 == 0 else list(reversed(pipes))
            for name in order:
                t0 = time.perf_counter()
                out = pipes[name](texts)
                times[name].append(time.perf_counter() - t0)
                labels[name] = [o["label"] for o in out]
                if name in parts:
                    parts[name].append(dict(pipes[name].predictor.timings))
            print(
                f"round {r + 1}: " + ", ".join(f"{k} {len(texts) / times[k][-1]:.1f} texts/s" for k in order),
                file=sys.stderr,
            )
    assert all(len(v) == len(texts) for v in labels.values())
    median = {k: statistics.median(v) for k, v in times.items()}
    plain_tps = len(texts) / median["plain"]
    sorted_tps = len(texts) / median["plain_sorted"]
    result: dict = {
        "benchmark": "predict_throughput",
        "date": time.strftime("%Y-%m-%d"),
        "data": f"SST-2 dev, first {len(texts)} sentences ({source})",
        "n": len(texts),
        "rounds": rounds,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "encoder": "all-MiniLM-L6-v2 (untrained 2-class head)",
        "plain_texts_per_s": round(plain_tps, 1),
        "plain_sorted_texts_per_s": round(sorted_tps, 1),
        "systems": {},
    }
    for system in systems:
        tps = len(texts) / median[system]
        mid = sorted(parts[system], key=lambda t: t["total_s"])[len(parts[system]) // 2]
        total = mid["total_s"]
        result["systems"][system] = {
            "texts_per_s": round(tps, 1),
            "ratio": round(tps / plain_tps, 3),
            "ratio_vs_plain_sorted": round(tps / sorted_tps, 3),
            "seconds": {k: round(mid[k], 3) for k in ("parse_s", "featurize_s", "forward_s", "total_s")},
            "share": {k[:-2]: round(mid[k] / total, 3) for k in ("parse_s", "featurize_s", "forward_s")},
            "pipeline_overhead_s": round(median[system] - total, 3),
        }
    for system, r in result["systems"].items():
        print(
            f"{system}: {r['texts_per_s']} texts/s vs plain {result['plain_texts_per_s']} texts/s = "
            f"{r['ratio']}x ({r['ratio_vs_plain_sorted']}x the plain model in sorted batches, "
            f"{result['plain_sorted_texts_per_s']} texts/s); parse {r['share']['parse']:.0%}, "
            f"featurize {r['share']['featurize']:.0%}, forward {r['share']['forward']:.0%}"
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
