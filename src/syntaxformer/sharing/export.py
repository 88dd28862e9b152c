"""Export a finished run as a self-contained Hugging Face model folder: ``syntaxformer export RUN_DIR OUT_DIR``.

The folder holds what a user of the model needs and nothing of the training: the final weights
(``model.safetensors``), ``config.json``, the tokenizer files (translation: ``source_tokenizer/`` and
``target_tokenizer/``), the model card ``README.md``, the run's featurization options
(:data:`~syntaxformer.sharing.syntax_pipeline.OPTIONS_FILE`) and the code: the library modules that the model's
config, its model class and the pipeline of its head import (:func:`code_exports`: an SG-Net classifier carries no
Syntax-BERT, translation or span-QA code), copied flat beside ``config.json`` with every
``from syntaxformer.x.y import z`` rewritten to ``from .y import z`` (:func:`code_files`), plus one entry module
(:data:`ENTRY_MODULE`) that imports all of them.
No checkpoints, optimizer state, metrics files or absolute paths of this machine.

``config.json`` names the code the transformers way: ``auto_map`` (``AutoConfig`` and the head's Auto class) and
``custom_pipelines`` (the head's pipeline under its standard task name), both pointing at the entry module. So in
an environment with only torch, transformers, spaCy and the run's spaCy pipeline package::

    from transformers import pipeline
    pipeline(model=OUT_DIR, trust_remote_code=True)("A fine film.")   # [{"label": "positive", "score": ...}]

The entry module imports every copied module directly because transformers' loader copies a local folder's code
into its module cache by following the *direct* relative imports of the module it loads (a hub repository's are
followed recursively); importing all of them from the entry module gets every file copied either way.

The folder is built in a temporary folder beside ``OUT_DIR`` and renamed into place at the end; an existing
non-empty ``OUT_DIR`` is replaced only with ``overwrite=True``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from syntaxformer.errors import ConfigError, DataError

__all__ = ["CARD_FILE", "ENTRY_MODULE", "TOKENIZER_FILES", "code_exports", "code_files", "export_model"]

logger = logging.getLogger(__name__)

#: The generated module that ``auto_map`` and ``custom_pipelines`` name (it imports every copied module).
ENTRY_MODULE = "syntax_model"
#: Tokenizer files copied when the run folder has them.
TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
CARD_FILE = "README.md"
_WEIGHTS = "model.safetensors"
_WEIGHTS_INDEX = "model.safetensors.index.json"
#: The model of a translation run (not a system of the registry): its config and model class.
_TRANSLATION = (
    "syntaxformer.modeling.seq2seq",
    "SyntaxInfusedTranslationConfig",
    "SyntaxInfusedForConditionalGeneration",
)
#: Third-party top-level modules a flat file must not shadow by its name.
_RESERVED = {"spacy", "torch", "transformers", "numpy", "tokenizers", "huggingface_hub", "safetensors", "tqdm"}


# -- the code ------------------------------------------------------------------------------------------------
def _source(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ConfigError(
            f"cannot find the source of {module}; export needs syntaxformer installed from source files (.py)"
        )
    return Path(spec.origin)


def _is_package(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return bool(spec is not None and spec.submodule_search_locations is not None)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks (imports for the type checker, never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _library_imports(tree: ast.AST, module: str, runtime: bool = False) -> list[tuple[ast.stmt, str]]:
    """Every ``syntaxformer`` import statement of a module (at any depth; ``runtime``: not those under
    ``if TYPE_CHECKING:``) with the module it imports from.

    Raises:
        ConfigError: an ``import syntaxformer...`` statement or an import from a package (``__init__``): the flat
            folder has no packages, so copied modules import names from modules only.
    """
    out: list[tuple[ast.stmt, str]] = []
    skip = _type_checking_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "syntaxformer" for a in node.names):
            raise ConfigError(
                f"{module} line {node.lineno}: `import syntaxformer...` cannot be made relative; "
                "use `from syntaxformer.x import y`"
            )
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "syntaxformer"
        ):
            if _is_package(node.module):
                raise ConfigError(
                    f"{module} line {node.lineno} imports from the package {node.module}; an exported "
                    "module must import from modules (the folder has no packages)"
                )
            out.append((node, node.module))
    return out


def _closure(roots: Iterable[str]) -> dict[str, Path]:
    """The library modules ``roots`` import, directly or not, at module level or inside functions (not for the
    type checker only)."""
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = _source(module)
        seen[module] = path
        todo += [m for _, m in _library_imports(ast.parse(path.read_text(encoding="utf-8")), module, runtime=True)]
    return seen


def _flat_names(modules: list[str]) -> dict[str, str]:
    """``syntaxformer.a.b`` -> ``b`` (``a_b`` where two modules share a last name or ``b`` is the name of a
    standard or third-party module)."""
    last = [m.rsplit(".", 1)[-1] for m in modules]
    out = {}
    for module, name in zip(modules, last):
        if last.count(name) > 1 or name in _RESERVED or name in sys.stdlib_module_names or name == ENTRY_MODULE:
            parts = module.split(".")
            name = f"{parts[-2]}_{parts[-1]}"
        out[module] = name
    if len(set(out.values())) != len(out):
        raise ConfigError(f"flat module names collide: {sorted(out.values())}")
    return out


def _rewrite(text: str, module: str, names: Mapping[str, str]) -> str:
    """``text`` with each ``from syntaxformer.a.b import`` statement turned into ``from .<flat> import`` (only real
    import statements, found with the parser: docstrings and comments stay as they are)."""
    lines = text.splitlines(keepends=True)
    for node, target in _library_imports(ast.parse(text), module):
        i = node.lineno - 1
        new, n = re.subn(
            rf"\bfrom\s+{re.escape(target)}\s+import\b", f"from .{names[target]} import", lines[i], count=1
        )
        if n != 1:
            raise ConfigError(
                f"{module} line {node.lineno}: cannot rewrite the import of {target} (expected "
                f"`from {target} import` on that line)"
            )
        lines[i] = new
    return "".join(lines)


def code_exports(model_type: str | None, architecture: str, head: str) -> dict[str, list[str]]:
    """What the exported code of one model exports: defining module -> the classes ``auto_map`` and
    ``custom_pipelines`` name (the config class, the model class ``architecture`` and the pipeline of ``head``).

    Raises:
        ConfigError: a model export does not carry (a system of another package, a class its system has not).
    """
    from syntaxformer.registry import BUILTIN_SYSTEMS, system_for_model_type
    from syntaxformer.sharing.syntax_pipeline import PIPELINE_CLASSES

    spec = system_for_model_type(model_type)
    if spec is not None and spec.name in BUILTIN_SYSTEMS:
        config_module, config_class = str(spec.config).split(":")
        model_module, model_class = str(spec.models.get(head, ":")).split(":")
    elif model_type == "syntax_infused_translation":
        config_module, config_class, model_class = _TRANSLATION
        model_module = config_module
    else:
        known = [t for s in BUILTIN_SYSTEMS.values() for t in (s.saved_model_type, *s.aliases)]
        raise ConfigError(
            f"model_type {model_type!r} is not a model export can carry "
            f"({', '.join([*known, 'syntax_infused_translation'])}; systems of other packages are not exported)"
        )
    if model_class != architecture:
        raise ConfigError(
            f"the model class {architecture} is not the {head} model of model_type {model_type!r} "
            f"({model_class or 'none'}), which export carries"
        )
    pipeline_module, pipeline_class = PIPELINE_CLASSES[head][:2]
    out: dict[str, list[str]] = {}
    for module, name in ((config_module, config_class), (model_module, model_class), (pipeline_module, pipeline_class)):
        out.setdefault(module, []).append(name)
    return out


def code_files(exports: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The code of an exported folder: file name -> text (the rewritten library modules and the entry module).

    Args:
        exports: defining module -> the classes the entry module exports (:func:`code_exports`); the folder
            carries these modules and every library module they import, at module level or inside functions.

    Every ``from syntaxformer.a.b import x`` becomes ``from .b import x``; the result imports nothing named
    ``syntaxformer``. The entry module (:data:`ENTRY_MODULE`) imports every copied module and, when the folder
    carries Syntax-BERT's attention, registers it (as :mod:`syntaxformer.modeling` does on import).
    """
    modules = _closure(exports)
    names = _flat_names(sorted(modules))
    files = {}
    for module, path in sorted(modules.items()):
        text = _rewrite(path.read_text(encoding="utf-8"), module, names)
        header = f"# Copied from {module} (syntaxformer) by `syntaxformer export`; imports made relative.\n"
        files[f"{names[module]}.py"] = header + text
    lines = [
        '"""The code entry point of this model folder (written by `syntaxformer export`).',
        "",
        "config.json's `auto_map` and `custom_pipelines` name the classes below. This module imports every",
        "code file of the folder directly, so that transformers' remote-code loader copies all of them.",
        '"""',
        "",
    ]
    for module in sorted(modules):
        wanted = exports.get(module)
        if wanted:
            lines.append(f"from .{names[module]} import {', '.join(wanted)}  # noqa: F401")
        else:
            lines.append(f"from .{names[module]} import __name__ as _{names[module]}  # noqa: F401")
    attention = "syntaxformer.modeling.syntax_attention"
    if attention in modules:
        lines += [
            f"from .{names[attention]} import register_syntax_attention",
            "",
            'register_syntax_attention()  # attn_implementation="syntax" (Syntax-BERT)',
        ]
    files[f"{ENTRY_MODULE}.py"] = "\n".join([*lines, ""])
    return files


# -- the run -------------------------------------------------------------------------------------------------
def _check_run(run_dir: Path) -> None:
    from syntaxformer.training.run import RUN_FILE

    if not run_dir.is_dir():
        raise DataError(f"{run_dir} is not a folder; give the output folder of a finished `syntaxformer train` run")
    if not (run_dir / RUN_FILE).is_file():
        raise DataError(
            f"{run_dir} is not a run folder of `syntaxformer train` (no {RUN_FILE}); give the "
            "--output-dir of a finished run"
        )
    if not (run_dir / "config.json").is_file():
        raise DataError(
            f"{run_dir} holds no saved model (no config.json): the run was stopped before the end or "
            "trained with save_model=false; train it again with the model saved"
        )
    index = run_dir / _WEIGHTS_INDEX
    shards = (
        sorted(set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values()))
        if index.is_file()
        else [_WEIGHTS]
    )
    for shard in shards:
        path = run_dir / shard
        if not path.is_file():
            raise DataError(
                f"{run_dir} has no final weights ({shard} is missing): export needs the "
                "model.safetensors the run saves at the end"
            )
        try:
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as f:
                if not list(f.keys()):
                    raise DataError(f"{path} holds no tensors; the run's weights are damaged, train it again")
        except DataError:
            raise
        except Exception as e:
            raise DataError(
                f"{path} is not a readable safetensors file ({type(e).__name__}: {e}); the run's "
                "weights are damaged, train it again"
            ) from e


def _head(config: Any) -> str:
    from syntaxformer.modeling.raw_text import class_head

    arch = (getattr(config, "architectures", None) or [""])[0]
    head = class_head(arch)
    if head in ("sequence_classification", "question_answering", "seq2seq"):
        return head
    raise ConfigError(
        f"export makes pipelines for text classification, span QA and translation models; this run's "
        f"model is {arch or 'of no known head'} (multiple choice and token classification models load "
        "with the Auto classes of the run folder itself)"
    )


def _options(run_dir: Path, config: Any, task: Any, model_config: Any, head: str) -> dict[str, Any]:
    """The run's featurization options for the exported pipeline (as :meth:`Predictor.from_run` builds them)."""
    from syntaxformer.defaults import DEFAULT_SPACY_MODEL
    from syntaxformer.inference import tuned_null_threshold
    from syntaxformer.sharing.syntax_pipeline import PipelineOptions
    from syntaxformer.training.run import build_context

    context = build_context(config, None, model_config)
    parser = context.parser or (DEFAULT_SPACY_MODEL if context.syntax_inputs else None)
    if parser is not None and (not isinstance(parser, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", parser)):
        raise ConfigError(
            f"the run parsed with {parser!r}; an exported model parses with a spaCy pipeline package "
            "named in the folder (e.g. en_core_web_sm), not a path or a pre-parsed file; train with "
            "--parser <package name>"
        )
    options = PipelineOptions(
        head=head,
        parser=parser if context.syntax_inputs else None,
        syntax_inputs=tuple(context.syntax_inputs),
        max_length=int(config.max_length),
        criterion=context.criterion,
        max_distance=int(context.max_distance),
        pos_tags=context.pos_tags,
        constituency=context.constituency,
    )
    if head == "question_answering":
        task_options = task.options()
        if task_options.get("verifier") == "parallel":
            raise ConfigError(
                "the run decodes with a second, parallel verifier model (verifier='parallel'); "
                "export supports one model per folder: train with verifier='joint' or 'none'"
            )
        tuned = tuned_null_threshold(run_dir)
        options.qa = {
            k: task_options[k]
            for k in ("doc_stride", "question_first", "n_best", "max_answer_length", "beta1", "beta2", "verifier")
        }
        options.qa["null_threshold"] = float(task_options["null_threshold"]) if tuned is None else tuned
        options.qa["null_threshold_source"] = (
            "the task's fixed null_threshold" if tuned is None else "the best-F1 threshold on the run's dev articles"
        )
    if head == "seq2seq":
        beams = config.training_args.get("generation_num_beams") or task.training_defaults().get(
            "generation_num_beams", 5
        )
        options.translation = {
            "max_source_length": int(task.max_eval_source_length),
            "max_target_length": int(task.max_target_length),
            "num_beams": int(beams),
        }
    return options.to_dict()


def _scrub_paths(data: Any) -> Any:
    """``config.json`` content without ``_name_or_path`` entries (absolute paths of the training machine)."""
    if isinstance(data, dict):
        return {k: _scrub_paths(v) for k, v in data.items() if k != "_name_or_path"}
    if isinstance(data, list):
        return [_scrub_paths(v) for v in data]
    return data


def _config_json(run_dir: Path, head: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The exported ``config.json`` (``auto_map``, ``custom_pipelines``) and the code it names
    (:func:`code_exports`)."""
    from syntaxformer.registry import BUILTIN_SYSTEMS, system_for_model_type
    from syntaxformer.sharing.syntax_pipeline import PIPELINE_CLASSES

    data = _scrub_paths(json.loads((run_dir / "config.json").read_text(encoding="utf-8")))
    _, pipeline_class, task_name, auto = PIPELINE_CLASSES[head]
    arch = data["architectures"][0]
    try:
        exports = code_exports(data.get("model_type"), arch, head)
    except ConfigError as e:
        raise ConfigError(f"{run_dir}/config.json: {e}") from None
    spec = system_for_model_type(data.get("model_type"))
    if spec is not None and spec.name in BUILTIN_SYSTEMS:
        data["model_type"] = spec.saved_model_type  # a config saved under an older name: the system's own
    config_class = next(iter(exports.values()))[0]
    data["auto_map"] = {"AutoConfig": f"{ENTRY_MODULE}.{config_class}", auto: f"{ENTRY_MODULE}.{arch}"}
    data["custom_pipelines"] = {
        task_name: {"impl": f"{ENTRY_MODULE}.{pipeline_class}", "pt": [auto], "tf": [], "type": "text"}
    }
    return data, exports


# -- the folder ----------------------------------------------------------------------------------------------
def export_model(
    run_dir: str | os.PathLike, out_dir: str | os.PathLike, *, overwrite: bool = False, license: str | None = None
) -> Path:
    """Write the final model of a finished run as a self-contained Hugging Face model folder.

    Args:
        run_dir: the output folder of a finished ``syntaxformer train`` run (``run.json`` and the saved model).
        out_dir: the folder to write (built beside it, then renamed into place).
        overwrite: replace an existing non-empty ``out_dir``.
        license: the card's license (an id of the Hugging Face hub, e.g. ``apache-2.0``); default: the encoder's
            when it is the offline MiniLM (``apache-2.0``), else ``other``.

    Returns:
        the written folder.

    Raises:
        DataError: ``run_dir`` is not a finished run with readable final weights, or ``out_dir`` exists, is not
            empty and ``overwrite`` is false. ConfigError: a run export does not support (a head without a
            pipeline, two models, a parser that is a path).
    """
    import transformers

    import syntaxformer.modeling
    import syntaxformer.modeling.seq2seq  # noqa: F401
    from syntaxformer.sharing.model_card import export_card
    from syntaxformer.sharing.syntax_pipeline import OPTIONS_FILE
    from syntaxformer.training.run import load_run
    from syntaxformer.utils import write_json

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    _check_run(run_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())) and not overwrite:
        raise DataError(f"{out_dir} exists and is not empty; choose a new folder or pass --overwrite to replace it")
    if out_dir.resolve() == run_dir.resolve() or run_dir.resolve() in out_dir.resolve().parents:
        raise DataError(f"{out_dir} is the run folder or inside it; export to a folder of its own")
    config, task = load_run(run_dir)
    model_config = transformers.AutoConfig.from_pretrained(str(run_dir))
    head = _head(model_config)
    options = _options(run_dir, config, task, model_config, head)
    metrics_path = run_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else {}

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.export-", dir=out_dir.parent))
    try:
        index = run_dir / _WEIGHTS_INDEX
        weights = (
            [_WEIGHTS_INDEX, *sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))]
            if index.is_file()
            else [_WEIGHTS]
        )
        for name in (*weights, "generation_config.json", *TOKENIZER_FILES):
            if (run_dir / name).is_file():
                shutil.copyfile(run_dir / name, tmp / name)
        for sub in ("source_tokenizer", "target_tokenizer"):
            if (run_dir / sub).is_dir():
                (tmp / sub).mkdir()
                for name in TOKENIZER_FILES:
                    if (run_dir / sub / name).is_file():
                        shutil.copyfile(run_dir / sub / name, tmp / sub / name)
        config_json, exports = _config_json(run_dir, head)
        write_json(tmp / "config.json", config_json)
        write_json(tmp / OPTIONS_FILE, options)
        for name, text in code_files(exports).items():
            (tmp / name).write_text(text, encoding="utf-8")
        export_card(metrics, config, task, model_config, head, options, folder_name=out_dir.name, license=license).save(
            str(tmp / CARD_FILE)
        )
        os.chmod(tmp, 0o755)
        _replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("exported %s to %s (%s, %d files)", run_dir, out_dir, head, sum(1 for _ in out_dir.rglob("*")))
    return out_dir


def _replace(tmp: Path, out_dir: Path) -> None:
    """Rename ``tmp`` to ``out_dir``; an existing ``out_dir`` is moved aside first and removed after."""
    old = None
    if out_dir.exists():
        if out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            old.rmdir()
            os.replace(out_dir, old)
    os.replace(tmp, out_dir)
    if old is not None and old.is_dir():
        shutil.rmtree(old)
    elif old is not None:
        old.unlink()
