"""Benchmark: compact syntax encoding and batched mask building for 128-subword examples.

Run from the repository root::

    python benchmarks/mask_build.py [--quick]

Examples are real UD English-EWT dev sentences (``../shared/data/ud_ewt/en_ewt-ud-dev.conllu``; seeded random
trees if the file is absent), packed into passages of 128 positions (``[CLS]`` + 126 pieces + ``[SEP]``), each word
split into ``1 + len(word) // 4`` pieces. Constituency trees are derived from the dependency trees (one phrase per
word with dependents, for projective sentences; a flat phrase otherwise), so both partitions have real shapes.

Measured (best of several repeats, microseconds per example): ``encode_syntax`` (numpy, per example), the SDOI
mask and the relation groups (dependency + constituency) built batched (``--batch`` examples per call), and the
brute-force references of ``tests/masks/reference.py`` (Python loops over pairs) on a few examples, which the fast
results are also checked against. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
UD_DEV = ROOT / ".." / "shared" / "data" / "ud_ewt" / "en_ewt-ud-dev.conllu"


def _read_sentences(path: Path, limit: int) -> tuple[list[tuple[list[str], list[int]]], str]:
    if not path.exists():
        rng = random.Random(0)
        out = []
        for _ in range(limit):
            n = rng.randint(5, 30)
            heads = [-1] + [rng.randrange(i) for i in range(1, n)]
            out.append(([f"word{i}" for i in range(n)], heads))
        return out, "synthetic random trees (UD EWT dev not found)"
    from syntaxformer.data.readers.conllu import read_conllu

    out = []
    for s in read_conllu(path):
        out.append((s.words, s.heads))
        if len(out) >= limit:
            break
    return out, str(path.resolve().relative_to(ROOT.parent))


def _tree_from_heads(words: list[str], heads: list[int]):
    """A constituency tree whose phrases are the dependency subtrees (projective) or one flat phrase."""
    from syntaxformer.data import tree as T
    from syntaxformer.data.constituency import Tree

    if not T.is_projective(heads) or len(T.roots(heads)) != 1:
        return Tree("S", [Tree("X", [w]) for w in words])
    kids = T.children(heads)

    def node(w: int) -> Tree:
        pre = Tree("X", [words[w]])
        if not kids[w]:
            return pre
        left = [node(d) for d in kids[w] if d < w]
        right = [node(d) for d in kids[w] if d > w]
        return Tree("P", left + [pre] + right)

    return node(T.roots(heads)[0])


def _passages(sentences, n_examples: int, length: int):
    """AlignedExamples of exactly ``length`` positions, packing consecutive sentences (one text)."""
    from tests.masks.reference import Spec, make_example, window

    examples, i = [], 0
    while len(examples) < n_examples:
        group, pieces = [], 0
        while pieces < length - 2:
            words, heads = sentences[i % len(sentences)]
            group.append((words, heads))
            pieces += sum(1 + len(w) // 4 for w in words)
            i += 1
        spec = Spec([[(h, _tree_from_heads(w, h)) for w, h in group]], [1 + len(x) // 4 for w, _ in group for x in w])
        full = make_example(spec)
        ex, _ = window(full, 1, length - 1)  # new [CLS] + the first length-2 pieces + new [SEP]
        examples.append(ex)
    return examples


def _best(fn: Callable[[], object], repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer batches and repeats (< 1 minute)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--max-distance", type=int, default=15)
    parser.add_argument("--criterion", default="share", choices=["share", "children"])
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (default 1: stable timings on a shared machine)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(ROOT))  # for tests.masks.reference (the brute-force reference)
    from syntaxformer.data.collate import encode_syntax
    from syntaxformer.masks import relation_groups_from_features, sdoi_mask_from_features
    from tests.masks.reference import pad, ref_con_groups, ref_dep_groups, ref_sdoi

    n_batches, repeats, n_ref = (1, 5, 2) if args.quick else (4, 20, 6)
    B, D = args.batch, args.max_distance
    sentences, source = _read_sentences(UD_DEV, 2001)
    examples = _passages(sentences, n_batches * B, args.length)

    # encode (numpy, per example)
    t_enc = _best(lambda: [encode_syntax(ex, args.criterion, D) for ex in examples], max(1, repeats // 5))
    t_enc_dep = _best(
        lambda: [encode_syntax(ex, args.criterion, D, constituency=False) for ex in examples], max(1, repeats // 5)
    )
    encs = [encode_syntax(ex, args.criterion, D) for ex in examples]
    batches = [pad(encs[k * B : (k + 1) * B]) for k in range(n_batches)]
    t_sdoi = sum(_best(lambda b=b: sdoi_mask_from_features(b), repeats) for b in batches)
    t_rel = sum(_best(lambda b=b: relation_groups_from_features(b, D), repeats) for b in batches)
    t_rel_dep = sum(
        _best(lambda b=b: relation_groups_from_features(b, D, constituency=False), repeats) for b in batches
    )
    n = n_batches * B

    # brute-force references on a few examples (and check the fast results against them)
    sdoi = sdoi_mask_from_features(batches[0]).numpy()
    dep, con = (g.numpy() for g in relation_groups_from_features(batches[0], D))
    ref_examples = examples[:n_ref]
    t0 = time.perf_counter()
    ref_s = [ref_sdoi(ex, args.criterion) for ex in ref_examples]
    t_ref_sdoi = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref_g = [(ref_dep_groups(ex, args.criterion, D), ref_con_groups(ex, D)) for ex in ref_examples]
    t_ref_rel = time.perf_counter() - t0
    for k, ex in enumerate(ref_examples):
        L = len(ex)
        assert np.array_equal(sdoi[k, :L, :L], ref_s[k]), "SDOI differs from the reference"
        assert np.array_equal(dep[k, :L, :L], ref_g[k][0]), "dependency groups differ from the reference"
        assert np.array_equal(con[k, :L, :L], ref_g[k][1]), "constituency groups differ from the reference"

    us = 1e6
    result = {
        "benchmark": "mask_build",
        "data": source,
        "examples": n,
        "batch": B,
        "length": args.length,
        "max_distance": D,
        "criterion": args.criterion,
        "mean_sentences_per_example": round(float(np.mean([e["syntax_tree"].max() + 1 for e in encs])), 2),
        "device": "cpu",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "encode_us_per_example": round(t_enc / n * us, 1),
        "encode_dep_only_us_per_example": round(t_enc_dep / n * us, 1),
        "sdoi_us_per_example": round(t_sdoi / n * us, 2),
        "relations_dep_con_us_per_example": round(t_rel / n * us, 1),
        "relations_dep_us_per_example": round(t_rel_dep / n * us, 1),
        "reference_examples": n_ref,
        "reference_sdoi_us_per_example": round(t_ref_sdoi / n_ref * us, 1),
        "reference_relations_dep_con_us_per_example": round(t_ref_rel / n_ref * us, 1),
        "sdoi_speedup_vs_reference": round(t_ref_sdoi / n_ref / (t_sdoi / n), 1),
        "relations_speedup_vs_reference": round(t_ref_rel / n_ref / (t_rel / n), 1),
        "checked_against_reference": True,
        "sdoi_goal_us": 20.0,
        "quick": args.quick,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
