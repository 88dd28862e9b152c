"""The model card (``README.md``) written into every saved run folder: what the model is and how it was made.

:func:`write_model_card` is called by :func:`syntaxformer.training.run.train` at the end of a successful run that
saved its model. The card says, from the run's own records (``metrics.json``, ``run.json``, the model config): the
system and its paper, the encoder, the head and labels, pooling and the syntax options, the parser and its version,
where the trees come from, the data and its sizes (with the subsampling), the scores with the seed, the training
settings, and the command (the command line when trained from the CLI, and always the config that
``syntaxformer train --config`` reproduces). The YAML header is the Hugging Face hub's (``library_name``, ``tags``,
``base_model``; no ``pipeline_tag``: a run folder's model answers through syntaxformer's pipelines, not a standard
one). The card of a folder made to share is :mod:`syntaxformer.sharing.model_card` (``syntaxformer export``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["MODEL_CARD_FILE", "PAPERS", "cli_command", "model_card", "write_model_card"]

MODEL_CARD_FILE = "README.md"

#: System -> the paper it implements.
PAPERS: dict[str, str] = {
    "SG-Net": "Zhang et al., *SG-Net: Syntax Guided Transformer for Language Representation*, IEEE TPAMI 2022 "
    "(and *SG-Net: Syntax-Guided Machine Reading Comprehension*, AAAI 2020)",
    "Syntax-BERT": "Bai et al., *Syntax-BERT: Improving Pre-trained Transformers with Syntax Trees*, EACL 2021",
    "LISA": "Strubell et al., *Linguistically-Informed Self-Attention for Semantic Role Labeling*, EMNLP 2018",
    "Syntax-Infused Transformer": "Sundararaman et al., *Syntax-Infused Transformer and BERT models for Machine "
    "Translation and Natural Language Understanding*, 2019",
}

_SYNTAX_PIPELINES = {
    "sequence_classification": "syntax-text-classification",
    "question_answering": "syntax-question-answering",
    "seq2seq": "syntax-translation",
}
#: Config keys that are not model options (bookkeeping of transformers, or shown elsewhere in the card).
_NOT_OPTIONS = {
    "encoder",
    "seq2seq",
    "architectures",
    "auto_map",
    "id2label",
    "label2id",
    "transformers_version",
    "model_type",
    "dtype",
    "torch_dtype",
    "_name_or_path",
    "num_labels",
    "problem_type",
    "relation_names",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "use_cache",
}


def cli_command(argv: list[str] | None = None) -> str | None:
    """The ``syntaxformer ...`` command line of this process, or ``None`` when it is not the CLI."""
    argv = list(sys.argv if argv is None else argv)
    if not argv:
        return None
    prog = argv[0].replace(os.sep, "/")
    if Path(prog).name == "syntaxformer" or prog.endswith(("syntaxformer/cli.py", "syntaxformer/__main__.py")):
        return shlex.join(["syntaxformer", *argv[1:]])
    return None


def _papers(metrics: Mapping[str, Any]) -> list[str]:
    kind = str(metrics.get("model_type", ""))
    out = []
    if metrics.get("model_family") == "translation" or kind.startswith("Syntax-Infused"):
        out.append(PAPERS["Syntax-Infused Transformer"])
        if metrics.get("use_sg_layer"):
            out.append(PAPERS["SG-Net"])
        return out
    if "SG-Net" in kind:
        out.append(PAPERS["SG-Net"])
    if "Syntax-BERT" in kind:
        out.append(PAPERS["Syntax-BERT"])
    if "LISA" in kind:
        out.append(PAPERS["LISA"])
    return out


def _short(value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"{len(value)} items: {json.dumps(list(value[:4]))[:-1]}, ...]"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _model_options(model_config: Any) -> dict[str, Any]:
    try:
        data = model_config.to_diff_dict()
    except Exception:  # noqa: BLE001 - a config that cannot diff itself: every key
        data = model_config.to_dict()
    return {k: v for k, v in sorted(data.items()) if k not in _NOT_OPTIONS and not k.startswith("_")}


def _base_model(path: str) -> str | None:
    """A hub id for the YAML header (the offline MiniLM folder is its hub name), or ``None`` for local folders."""
    from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model

    if path in (default_hf_model(), DEFAULT_HF_MODEL_HUB):
        return DEFAULT_HF_MODEL_HUB
    if not Path(path).exists() and path.count("/") == 1:
        return path
    return None


def _parser(metrics: Mapping[str, Any], config: Mapping[str, Any], annotator: Any) -> str:
    if not metrics.get("syntax_keys"):
        return "none (the model reads no syntax; nothing is parsed)"
    name = getattr(annotator, "name", None) or config.get("parser")
    version = getattr(annotator, "version", None)
    identity = str(metrics.get("parser") or "")
    spacy = next((p for p in identity.split("|") if p.startswith("spacy-")), None)
    parts = [f"spaCy pipeline `{name}`" if identity.startswith("spacy") else f"`{name}`"]
    if version:
        parts.append(f"version {version}")
    if spacy:
        parts.append(f"({spacy.replace('spacy-', 'spaCy ')})")
    return " ".join(parts)


def model_card(
    metrics: Mapping[str, Any],
    run_config: Mapping[str, Any],
    model_config: Any,
    head: str,
    *,
    annotator: Any = None,
    command: str | None = None,
    folder: str | None = None,
) -> str:
    """The text of the model card.

    Args:
        metrics: the run's ``metrics.json`` content.
        run_config: the resolved run config (``RunConfig.to_dict()``).
        model_config: the trained model's config.
        head: the task's head.
        annotator: the run's parser, when it was built (for its name and version).
        command: the command line that trained it (``None``: trained through the Python API).
        folder: the model folder's name (for the usage examples; default ``MODEL_DIR``): no absolute path of
            this machine goes into the card.
    """
    folder = folder or "MODEL_DIR"
    kind = str(metrics.get("model_type", "model"))
    title = str(metrics.get("task_title") or metrics.get("task"))
    tags = ["syntaxformer", str(metrics.get("model_family", "")), str(metrics.get("task", ""))]
    # No pipeline_tag: transformers' standard pipelines reject a run folder's model (it reads syntax inputs);
    # `syntaxformer export` makes a folder whose card names the tag of the pipeline it carries.
    header = ["---", "library_name: transformers", "tags:", *[f"- {t}" for t in dict.fromkeys(tags) if t]]
    scratch = head == "seq2seq"  # the translation model is trained from random init: no pretrained encoder
    base = None if scratch else _base_model(str(metrics.get("model", "")))
    if base:
        header.append(f"base_model: {base}")
    header.append("---")
    lines = [
        *header,
        "",
        f"# {kind} on {title}",
        "",
        f"A {kind} model for {title} trained with syntaxformer "
        f"(syntaxformer {metrics.get('environment', {}).get('syntaxformer', '?')}).",
        "",
    ]
    papers = _papers(metrics)
    lines += [
        "**System.** "
        + (kind + ": " + "; ".join(papers) if papers else f"{kind} (the plain encoder under the same head: no syntax)"),
        "",
    ]

    # -- use
    lines += [
        "## Use",
        "",
        "```python",
        "import syntaxformer  # registers the model and the pipelines with transformers",
        "from transformers import pipeline",
        "",
    ]
    if head == "sequence_classification":
        lines += [f'clf = pipeline("syntax-text-classification", model="{folder}")', 'clf("A fine film.")']
    elif head == "question_answering":
        lines += [
            f'qa = pipeline("syntax-question-answering", model="{folder}")',
            'qa(question="Who wrote it?", context="It was written by Ann.")',
        ]
    elif head == "seq2seq":
        lines += [f'mt = pipeline("syntax-translation", model="{folder}")', 'mt("A man rides a horse.")']
    else:
        lines += [f"# {head}: load the model with the Auto classes; no pipeline for this head"]
    lines += [
        "```",
        "",
        f"or `syntaxformer predict {folder} --input texts.txt` (one JSON record per text). "
        "`AutoConfig` / `AutoModelFor...` load the folder after `import syntaxformer` (or with "
        "`trust_remote_code=True` where syntaxformer is installed: `auto_map` names its code). To share the "
        f"model with people who do not use syntaxformer, `syntaxformer export {folder} OUT_DIR` writes a "
        "folder that loads with transformers alone (`pipeline(model=OUT_DIR, trust_remote_code=True)`).",
        "",
    ]

    # -- model
    mc = model_config
    labels = getattr(mc, "id2label", None) or {}
    encoder = (
        "none: a Transformer trained from random init"
        if scratch
        else f"`{metrics.get('model_label') or metrics.get('model')}`"
    )
    rows = [("system", kind), ("encoder", encoder), ("head", head)]
    if head == "sequence_classification":
        if getattr(mc, "problem_type", None) == "regression":
            rows.append(("output", "regression (one value)"))
        else:
            rows.append(("labels", ", ".join(f"{i}: {labels[i]}" for i in sorted(labels, key=int))))
    if getattr(mc, "pooling", None) is not None:
        rows.append(("pooling", str(mc.pooling)))
    rows.append(
        (
            "trainable parameters",
            f"{metrics.get('parameters', '?'):,}" if isinstance(metrics.get("parameters"), int) else "?",
        )
    )
    for key in ("arm", "features", "use_sg_layer", "sg_mask", "preset", "vocab"):  # translation's describe_run
        if metrics.get("model_family") == "translation" and metrics.get(key) not in (None, [], {}):
            rows.append((key, _short(metrics[key])))
    lines += ["## Model", "", "| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows], ""]
    model_options = _model_options(mc)
    if model_options:
        lines += [
            "Model options (`config.json`):",
            "",
            "| option | value |",
            "|---|---|",
            *[f"| `{k}` | `{_short(v)}` |" for k, v in model_options.items()],
            "",
        ]

    # -- syntax
    sources = metrics.get("syntax_source") or {}
    if not sources and metrics.get("syntax_keys"):  # tasks that do not describe it: the parser on the raw texts
        sources = {"dependency": "the parser on the raw (source) texts", "constituency": "none"}
    options = metrics.get("task_options") or {}
    max_length = (
        f"{options['max_source_length']} source pieces"
        if scratch and "max_source_length" in options
        else f"{metrics.get('max_length', run_config.get('max_length'))} tokens"
    )
    lines += [
        "## Syntax",
        "",
        "| | |",
        "|---|---|",
        f"| parser | {_parser(metrics, run_config, annotator)} |",
        f"| dependency trees | {sources.get('dependency', 'none')} |",
        f"| constituency trees | {sources.get('constituency', 'none')} |",
        f"| syntax inputs | {', '.join(f'`{k}`' for k in metrics.get('syntax_keys') or []) or 'none'} |",
        f"| max length | {max_length} |",
        f"| parser noise | {metrics.get('parser_noise', 0.0)} |",
        "",
    ]

    # -- data
    sizes = metrics.get("sizes") or {}
    data = metrics.get("data") or {}
    sub = metrics.get("subsample") or {}
    lines += ["## Data", "", "| split | examples | of | source | subsample |", "|---|---|---|---|---|"]
    for split in ("train", "dev"):
        if split in sizes:
            lines.append(
                f"| {split} | {sizes[split]} | {sizes.get(split + '_total', '')} | "
                f"{data.get(split) or ''} | {sub.get(split) or 'all'} |"
            )
    lines.append("")

    # -- results
    seed = metrics.get("seed")
    lines += [
        "## Results",
        "",
        f"Scores of the final model (seed {seed}; data seed {metrics.get('data_seed')}):",
        "",
        "| split | metric | value | seed |",
        "|---|---|---|---|",
    ]
    for split, scores in (metrics.get("eval") or {"dev": metrics.get("dev") or {}}).items():
        for name, value in (scores or {}).items():
            if isinstance(value, (int, float)) and name not in ("seconds", "n"):
                lines.append(f"| {split} | {name} | {value:.4f} | {seed} |")
    main = metrics.get("main_metric")
    if main:
        lines += [
            "",
            f"Headline metric: `{main}`. One seed is one sample: compare systems over several seeds "
            "(`syntaxformer compare`, `syntaxformer significance`).",
        ]
    lines.append("")

    # -- training
    train = metrics.get("train") or {}
    env = metrics.get("environment") or {}
    lines += [
        "## Training",
        "",
        "| | |",
        "|---|---|",
        f"| learning rate | {metrics.get('learning_rate')} (new parameters: "
        f"{metrics.get('new_params_lr') or 'same'}) |",
        f"| epochs / max steps | {metrics.get('num_train_epochs')} / {run_config.get('max_steps')} |",
        f"| batch size | {metrics.get('batch_size')} |",
        f"| optimizer steps | {train.get('global_step')} |",
        f"| final training loss | {train.get('loss')} |",
        f"| runtime | {metrics.get('runtime_s')} s on {env.get('device', '?')} |",
        f"| versions | transformers {env.get('transformers')}, torch {env.get('torch')}, python {env.get('python')} |",
        "",
    ]

    # -- command
    lines += ["## Command", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    else:
        lines += ["Trained through the Python API (`syntaxformer.training.run.train`).", ""]
    config = {k: v for k, v in run_config.items() if v is not None}
    lines += [
        "The resolved run config; saved as `config.json` elsewhere, `syntaxformer train --config config.json` "
        "trains the same model (same seeds, same data):",
        "",
        "```json",
        json.dumps(config, indent=2, ensure_ascii=False, default=str),
        "```",
        "",
    ]
    return "\n".join(lines)


def write_model_card(
    output_dir: str | os.PathLike,
    metrics: Mapping[str, Any],
    run_config: Mapping[str, Any],
    model_config: Any,
    head: str,
    *,
    annotator: Any = None,
    command: str | None = None,
) -> Path:
    """Write :func:`model_card` to ``<output_dir>/README.md`` (atomically); returns its path."""
    from syntaxformer.utils import atomic_write

    path = Path(output_dir) / MODEL_CARD_FILE
    text = model_card(
        metrics,
        run_config,
        model_config,
        head,
        annotator=annotator,
        command=command if command is not None else cli_command(),
        folder=Path(output_dir).name,
    )
    with atomic_write(path) as f:
        f.write(text)
    return path
