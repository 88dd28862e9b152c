"""How far each syntax configuration moves a pretrained encoder *before any training* (numbers for docs/results.md).

A thin driver around :func:`syntaxformer.analysis.diagnose.diagnose` (also ``syntaxformer diagnose``): for ``--n``
seeded STS-B dev pairs and the offline MiniLM it prints one JSON line per configuration with the token-state cosine
to the plain encoder, the zero-shot similarity signal (Pearson r of the cosine of the two texts' mean states vs the
gold score; the plain encoder's alongside) and the gradient norms that reach the syntax parameters from the head.

Configurations: Syntax-BERT as in the paper (``gate="none"``), with the vanilla attention as one more candidate,
gated per layer and per head (``g = 0`` at init: exactly the encoder); SG-Net with first-token pooling (the paper)
and mean pooling (the default).

Usage: ``python experiments/sbert_init_drift.py [--n 200]`` (a few minutes on one CPU core).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault(
    "SYNTAXFORMER_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)  # the library reads data only where told

CONFIGURATIONS = [
    ("syntax_bert", {"gate": "none"}),
    ("syntax_bert", {"full_attention_candidate": True}),
    ("syntax_bert", {"gate": "layer"}),
    ("syntax_bert", {"gate": "head"}),
    ("sgnet", {"pooling": "cls"}),
    ("sgnet", {"pooling": "mean"}),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="dev pairs (seeded subsample, seed 0)")
    args = parser.parse_args(argv)

    from syntaxformer.analysis.diagnose import diagnose

    for system, options in CONFIGURATIONS:
        print(json.dumps(diagnose(None, system, options, n=args.n, seed=0)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
