"""Sanity checks behind the SQuAD results in docs/results.md (no-learning is not a labelling bug).

1. Label check: for the first 200 training-article questions (preset split), every answerable window's labelled
   token span, decoded by the tokenizer, is compared with the gold answer (case and spaces ignored).
2. Overfitting check: MiniLM + span head trained 25 epochs on the answerable windows of 24 answerable questions
   (lr 1e-4, batch 8, seed 0, max_length 192, stride 64); how many of their start/end labels it then reproduces.

Usage: ``python experiments/squad_sanity.py`` (about 2 minutes on 2 cores); prints one JSON object.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault(
    "SYNTAXFORMER_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")
)  # the library reads data only where told


def _data(examples):
    """A TaskData of these SQuAD examples (what ``SquadTask.featurize`` takes)."""
    from syntaxformer.data.examples import TaskData

    return TaskData(list(examples), "squad2 subset", "", len(examples))


def main() -> None:
    from transformers import AutoTokenizer

    from syntaxformer.data import make_annotator
    from syntaxformer.data.collate import pad_arrays
    from syntaxformer.defaults import default_hf_model
    from syntaxformer.modeling import SGNetConfig, SGNetForQuestionAnswering
    from syntaxformer.tasks import TaskContext, get_task
    from syntaxformer.tasks.span_qa import SquadFeaturizer

    torch.manual_seed(0)
    np.random.seed(0)
    out: dict = {}
    # The preset's data: SQuAD 2.0 split by article (held_out_fraction 0.25), 300 training questions (data seed 0).
    task = get_task("squad2", doc_stride=128)
    tok = AutoTokenizer.from_pretrained(default_hf_model())
    annotator = make_annotator()
    sg_inputs = SGNetConfig(use_sg_layer=True).syntax_inputs
    train = task.load_split("train", {"max_samples": 300, "data_seed": 0}).examples
    examples = train[:200]
    feats = SquadFeaturizer(tok, annotator, max_length=256, stride=task.doc_stride)(examples)  # the task's windows
    labelled = [f for f in feats if f.is_impossible == 0]
    norm = lambda t: t.replace(" ", "").lower()
    misses = [
        (
            tok.decode(f.aligned.input_ids[f.start_position : f.end_position + 1]),
            examples[f.example_index].answers[0]["text"],
        )
        for f in labelled
    ]
    misses = [m for m in misses if norm(m[0]) != norm(m[1])]
    out["label_check"] = {"answerable_windows": len(labelled), "mismatches": len(misses), "examples": misses[:5]}

    answerable = [e for e in train if not e.is_impossible][:24]
    small = get_task("squad2", doc_stride=64)
    ds = small.featurize(_data(answerable), TaskContext(tok, annotator, sg_inputs, max_length=192), "train")
    items = [item for item in (ds[i] for i in range(len(ds))) if item["is_impossible"] == 0]
    model = SGNetForQuestionAnswering.from_encoder_pretrained(default_hf_model(), use_sg_layer=True)  # eval mode
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(25):
        for b in range(0, len(items), 8):
            perm = np.random.permutation(len(items))
            batch = {k: torch.as_tensor(v) for k, v in pad_arrays([items[i] for i in perm[b : b + 8]], 0).items()}
            model(**batch).loss.backward()
            opt.step()
            opt.zero_grad()
    model.eval()
    hit = 0
    with torch.no_grad():
        for b in range(0, len(items), 8):
            batch = {k: torch.as_tensor(v) for k, v in pad_arrays(items[b : b + 8], 0).items()}
            labels = {k: batch.pop(k) for k in ("start_positions", "end_positions", "is_impossible") if k in batch}
            o = model(**batch)
            hit += int(
                (
                    (o.start_logits.argmax(-1) == labels["start_positions"])
                    & (o.end_logits.argmax(-1) == labels["end_positions"])
                ).sum()
            )
    out["overfit_check"] = {"windows": len(items), "exact_spans_after_25_epochs": hit}
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
