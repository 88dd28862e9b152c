"""Sanity checks behind the SQuAD results in docs/results.md (no-learning is not a labelling bug).

1. Label check: for the first 200 training-article questions (preset split), every answerable window's labelled
   token span, decoded by the tokenizer, is compared with the gold answer (case and spaces ignored).
2. Overfitting check: MiniLM + span head trained 25 epochs on the answerable windows of 24 answerable questions
   (lr 1e-4, batch 8, seed 0, max_length 192, stride 64); how many of their start/end labels it then reproduces.

Usage: ``python experiments/squad_sanity.py`` (about 2 minutes on 2 cores); prints one JSON object.
"""

from __future__ import annotations

import json

import numpy as np
import torch


def main() -> None:
    from transformers import AutoTokenizer

    from syntaxformer.data.collate import pad_arrays
    from syntaxformer.modeling import SGNetForQuestionAnswering
    from syntaxformer.training.qa import (QAExperimentConfig, _annotator, _build_model, _squad_features,
                                          _squad_items, squad_data)

    torch.manual_seed(0)
    np.random.seed(0)
    out: dict = {}
    cfg = QAExperimentConfig(task="squad2", max_train_samples=300, max_length=256, doc_stride=128)
    tok = AutoTokenizer.from_pretrained(cfg.resolved_model())
    train = squad_data(cfg)["train"]
    examples = train[:200]
    feats = _squad_features(cfg, tok, examples, _annotator(cfg))
    labelled = [f for f in feats if f.is_impossible == 0]
    norm = (lambda t: t.replace(" ", "").lower())
    misses = [(tok.decode(f.aligned.input_ids[f.start_position:f.end_position + 1]),
               examples[f.example_index].answers[0]["text"]) for f in labelled]
    misses = [m for m in misses if norm(m[0]) != norm(m[1])]
    out["label_check"] = {"answerable_windows": len(labelled), "mismatches": len(misses), "examples": misses[:5]}

    cfg = QAExperimentConfig(task="squad2", max_train_samples=300, max_length=192, doc_stride=64)
    answerable = [e for e in train if not e.is_impossible][:24]
    items = _squad_items([f for f in _squad_features(cfg, tok, answerable, _annotator(cfg)) if f.is_impossible == 0],
                         "share")
    model = _build_model(SGNetForQuestionAnswering, cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(25):
        for b in range(0, len(items), 8):
            perm = np.random.permutation(len(items))
            batch = {k: torch.as_tensor(v) for k, v in pad_arrays([items[i] for i in perm[b:b + 8]], 0).items()}
            model(**batch).loss.backward()
            opt.step()
            opt.zero_grad()
    model.eval()
    hit = 0
    with torch.no_grad():
        for b in range(0, len(items), 8):
            batch = {k: torch.as_tensor(v) for k, v in pad_arrays(items[b:b + 8], 0).items()}
            labels = {k: batch.pop(k) for k in ("start_positions", "end_positions", "is_impossible")}
            o = model(**batch)
            hit += int(((o.start_logits.argmax(-1) == labels["start_positions"])
                        & (o.end_logits.argmax(-1) == labels["end_positions"])).sum())
    out["overfit_check"] = {"windows": len(items), "exact_spans_after_25_epochs": hit}
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
