"""``syntaxformer demo``: the main job on the embedded defaults.

Annotates real sentences (SST-2 dev from ``$SYNTAXFORMER_DATA`` when set, else a few built-in ones) with the
default spaCy pipeline, aligns them to the default MiniLM tokenizer, builds the syntax tensors and masks, and
prints, for one sentence, its dependency tree, its subwords and its SDOI mask (plus Syntax-BERT relation counts).
"""

from __future__ import annotations

import argparse
import time

from transformers import AutoTokenizer

from syntaxformer.commands.arguments import add_parser_options
from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators import make_annotator
from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.defaults import default_hf_model, shared_data_dir
from syntaxformer.masks import relation_groups_from_features, sdoi_mask
from syntaxformer.masks.relations import KINDS, group_id

BUILTIN = [
    "The movie's sharp script makes up for its slow start.",
    "Researchers who parse sentences often align subwords with words.",
    "It is not as funny as the trailer suggests, but the cast is charming.",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--text",
        action="append",
        help="a text to annotate (repeatable); default: real SST-2 dev "
        "sentences from $SYNTAXFORMER_DATA, else built-in examples",
    )
    parser.add_argument("--n", type=int, default=64, help="how many data sentences to annotate (default 64)")
    parser.add_argument("--index", type=int, default=None, help="which sentence to show (default: a mid-length one)")
    add_parser_options(parser, batches=False)
    parser.add_argument(
        "--model", help="Hugging Face model name or folder for the tokenizer (default: the offline all-MiniLM-L6-v2)"
    )
    parser.add_argument(
        "--criterion",
        choices=["share", "children"],
        default="share",
        help="subword criterion of SG-Net (default share)",
    )


def _load_texts(args: argparse.Namespace) -> tuple[list[str], str]:
    if args.text:
        return list(args.text), "command line"
    data = shared_data_dir()
    path = data / "glue" / "SST-2" / "dev.tsv" if data else None
    if path is not None and path.exists():
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
        texts = [line.split("\t")[0] for line in lines if line.strip()][: args.n]
        return texts, f"{path} (first {len(texts)} sentences)"
    return BUILTIN, "built-in examples (SYNTAXFORMER_DATA names no folder with glue/SST-2/dev.tsv)"


def _draw_tree(sentence) -> list[str]:
    """Indented dependency tree, children under their head."""
    lines: list[str] = []

    def visit(i: int, prefix: str, last: bool, top: bool) -> None:
        label = (sentence.deprels or [""] * len(sentence))[i]
        branch = "" if top else ("└─ " if last else "├─ ")
        lines.append(f"{prefix}{branch}{sentence.words[i]}  [{label}]")
        kids = sentence.children(i)
        for k, c in enumerate(kids):
            visit(c, prefix + ("" if top else ("   " if last else "│  ")), k == len(kids) - 1, False)

    for r in sentence.roots:
        visit(r, "", True, True)
    return lines


def run(args: argparse.Namespace) -> int:
    texts, where = _load_texts(args)
    t0 = time.perf_counter()
    annotator = make_annotator(args.parser, cache=None if args.no_cache else "default")
    docs = annotator.annotate(texts)
    t_parse = time.perf_counter() - t0
    n_sent = sum(len(d) for d in docs)
    print(f"annotated {len(texts)} texts ({n_sent} sentences) from {where} with {annotator.source} in {t_parse:.2f}s")

    sentences = [s for d in docs for s in d]
    if not sentences:
        print("nothing to show: the texts contain no words")
        return 0
    if args.index is None:
        idx = min(range(len(sentences)), key=lambda i: abs(len(sentences[i]) - 12))
    else:
        idx = max(0, min(args.index, len(sentences) - 1))
    sent = sentences[idx]

    model = args.model or default_hf_model()
    tok = AutoTokenizer.from_pretrained(model)
    aligner = SyntaxAligner(tok, max_length=128)
    windows = [w for s in sentences for w in aligner(s)]
    collate = SyntaxCollator(pad_token_id=tok.pad_token_id or 0, criterion=args.criterion)
    batch = collate(windows)
    t1 = time.perf_counter()
    masks = sdoi_mask(batch["dep_tin"], batch["dep_tout"], batch["syntax_tree"])
    dep_groups, con_groups = relation_groups_from_features(batch)
    groups = {"dependency": dep_groups, **({"constituency": con_groups} if con_groups is not None else {})}
    t_mask = time.perf_counter() - t1
    print(
        f"aligned to {model} ({type(tok).__name__}); batch {tuple(batch['input_ids'].shape)}; "
        f"SDOI masks + relation groups for the whole batch in {t_mask * 1e3:.1f} ms\n"
    )

    print(f"sentence #{idx}: {' '.join(sent.words)}\n")
    print(sent.pretty())
    print()
    print("\n".join(_draw_tree(sent)))

    n = int(batch["attention_mask"][idx].sum())
    tokens = tok.convert_ids_to_tokens(batch["input_ids"][idx, :n].tolist())
    m = masks[idx, :n, :n]
    width = max(len(t) for t in tokens)
    print(f"\nSDOI mask ({args.criterion} criterion): row = subword, ■ = may attend (ancestors + self)")
    for i, t in enumerate(tokens):
        row = " ".join("■" if m[i, j] else "·" for j in range(n))
        print(f"{t:>{width}} {row}")
    if "constituency" in groups and not (groups["constituency"] > 0).any():
        print(
            "(no constituency relations: spaCy gives dependency trees only; gold bracketed input "
            "(PTB, SST, SNLI parses) carries constituency trees)"
        )
        del groups["constituency"]
    for kind, g in groups.items():
        gi = g[idx, :n, :n]
        D = collate.max_distance
        counts = {name: int(((gi >= group_id(name, 1, D)) & (gi <= group_id(name, D, D))).sum()) for name in KINDS}
        print(f"Syntax-BERT {kind} relation pairs (d <= {D}): {counts}")
    return 0
