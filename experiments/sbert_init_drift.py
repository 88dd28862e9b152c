"""How far Syntax-BERT moves a pretrained encoder *before any training* (diagnostic for docs/results.md).

For ``--n`` seeded dev pairs of STS-B (full model, no fine-tuning) it reports, for the plain encoder, Syntax-BERT
(paper setting: topical attention over the sub-networks, zero query = their mean at initialisation) and
Syntax-BERT with the vanilla attention as one more candidate (``full_attention_candidate``):

* the zero-shot similarity signal: Pearson r between the gold score and the cosine of the mean last-layer states of
  the two sentences' tokens (all-MiniLM-L6-v2 is a sentence-embedding model, so the plain encoder has a strong one);
* the mean cosine between each token's last-layer state and the plain encoder's.

Usage: ``python experiments/sbert_init_drift.py [--n 200]`` (about a minute on one CPU core). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200, help="dev pairs (seeded subsample, seed 0)")
    args = parser.parse_args(argv)

    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.defaults import default_hf_model, shared_data_dir
    from syntaxformer.modeling import SyntaxBertForSequenceClassification
    from syntaxformer.tasks import get_task
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import build_context, build_model, load_tokenizer

    root = shared_data_dir()
    if root is None:
        raise SystemExit("../shared/data not found (set SYNTAXFORMER_DATA)")
    torch.manual_seed(0)
    config = RunConfig(task="stsb", model_type="syntax_bert", max_length=96, disable_tqdm=True)
    task = get_task("stsb")
    data = task.load_split("dev", {"data_dir": root / "glue" / "STS-B", "max_samples": args.n, "data_seed": 0})
    context = build_context(config, load_tokenizer(default_hf_model()), build_model(config, task).config)
    ds = task.featurize(data, context, "dev")
    batch = SyntaxCollator()([ds[i] for i in range(len(ds))])
    labels = batch.pop("labels").numpy()
    systems = {"plain": {"syntax_layers": []}, "syntax_bert": {},
               "syntax_bert_full_candidate": {"full_attention_candidate": True}}
    out: dict = {"n_pairs": len(ds), "constituency": "read off the dependency parse (default fallback)"}
    states = {}
    for name, options in systems.items():
        model = SyntaxBertForSequenceClassification.from_encoder_pretrained(
            default_hf_model(), num_labels=1, problem_type="regression", **options).eval()
        with torch.no_grad():
            h = model(**batch, output_hidden_states=True).hidden_states[-1]
        seg = batch["syntax_segment"]
        sims = [torch.cosine_similarity(h[i][seg[i] == 0].mean(0), h[i][seg[i] == 1].mean(0), dim=0).item()
                for i in range(h.shape[0])]
        out[f"{name}_zero_shot_pearson"] = round(float(np.corrcoef(sims, labels)[0, 1]), 4)
        states[name] = h
    mask = batch["attention_mask"].bool()
    for name in ("syntax_bert", "syntax_bert_full_candidate"):
        cos = torch.cosine_similarity(states[name][mask], states["plain"][mask], dim=-1).mean().item()
        out[f"{name}_token_cosine_to_plain"] = round(cos, 4)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
