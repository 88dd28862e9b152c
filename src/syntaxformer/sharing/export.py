"""Export a finished run as a self-contained Hugging Face model folder: ``syntaxformer export RUN_DIR OUT_DIR``.

The folder holds what a user of the model needs and nothing of the training: the final weights
(``model.safetensors``), ``config.json``, the tokenizer files (translation: ``source_tokenizer/`` and
``target_tokenizer/``), the model card ``README.md``, the run's featurization options
(:data:`~syntaxformer.sharing.syntax_pipeline.OPTIONS_FILE`) and the code: the definitions that the model's config,
its model class and the pipeline of its head use, directly or not (:func:`code_exports`: an SG-Net classifier
carries no Syntax-BERT, translation or span-QA code, no other head, no parse cache), each in a copy of its library
module cut to them, copied flat beside ``config.json`` with every ``from syntaxformer.x.y import z`` rewritten to
``from .y import z`` (:func:`code_files`), plus one entry module (:data:`ENTRY_MODULE`) that imports all of them.
No checkpoints, optimizer state, metrics files or absolute paths of this machine.

``config.json`` names the code the transformers way: ``auto_map`` (``AutoConfig`` and the head's Auto class) and
``custom_pipelines`` (the head's pipeline under its standard task name), both pointing at the entry module. So in
an environment with only torch, transformers, spaCy and the run's spaCy pipeline package::

    from transformers import pipeline
    pipeline(model=OUT_DIR, trust_remote_code=True)("A fine film.")   # [{"label": "positive", "score": ...}]

The entry module imports every copied module directly because transformers' loader copies a local folder's code
into its module cache by following the *direct* relative imports of the module it loads (a hub repository's are
followed recursively); importing all of them from the entry module gets every file copied either way.

An export is a transaction (:func:`export_model`): the run and the output are checked first (a finished, complete
run; an output that is not the run, inside it or above it), the folder is built beside ``OUT_DIR`` under its lock
and put in place in one atomic step; an existing non-empty ``OUT_DIR`` is replaced only with ``overwrite=True``.
``push_to_hub=REPO`` then pushes the folder to the Hugging Face hub (:mod:`syntaxformer.sharing.hub`).
"""

from __future__ import annotations

import ast
import contextlib
import errno
import functools
import glob
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
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
#: Tokenizer files that hold no vocabulary (a tokenizer folder needs one of the others).
_TOKENIZER_EXTRAS = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt")
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


def _bound(stmt: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in stmt.names}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    out: set[str] = set()
    todo: list[ast.AST] = [stmt]
    while todo:  # names stored at module level (not inside the functions and classes a compound statement defines)
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not stmt:
            out.add(node.name)
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {a.asname or a.name.split(".")[0] for a in node.names}
        todo += ast.iter_child_nodes(node)
    return out


def _is_type_checking(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name) and stmt.test.id == "TYPE_CHECKING"


def _uses(stmt: ast.stmt, module: str) -> tuple[set[str], list[tuple[str, str]]]:
    """What a kept statement needs: the names it reads (string constants that are identifiers too, for names
    looked up by name), and the ``(module, name)`` pairs its nested library imports take (not those for the type
    checker only)."""
    skip = _type_checking_only(stmt)
    names: set[str] = set()
    for node in ast.walk(stmt):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    nested = [
        (target, a.name)
        for node, target in _library_imports(stmt, module, runtime=True)
        if node is not stmt
        for a in node.names
    ]
    return names, nested


def _runs_for_effect(stmt: ast.stmt) -> bool:
    """A top-level statement that is not a definition or an import (a call, a loop, a conditional)."""
    defines = (
        ast.Import,
        ast.ImportFrom,
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.ClassDef,
        ast.Assign,
        ast.AnnAssign,
    )
    is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    return not (isinstance(stmt, defines) or is_doc or _is_type_checking(stmt)) and not (
        isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == "__all__"
    )


@functools.cache
def _effects(module: str) -> bool:
    """Whether a library module calls something at the top level on import (e.g. registers an attention
    function): a copied module that imports it keeps that import."""
    if module.split(".")[0] != "syntaxformer" or _is_package(module):
        return False
    body = ast.parse(_source(module).read_text(encoding="utf-8")).body
    return any(isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) for stmt in body)


class _Shaker:
    """The definitions an exported model uses: from the classes the entry module exports, every top-level
    definition they reach, across modules, through names, imports at any depth and identifiers written as strings.
    A module's statements that are not definitions (calls, loops, conditionals) are always kept."""

    def __init__(self) -> None:
        self.trees: dict[str, ast.Module] = {}
        self.paths: dict[str, Path] = {}
        self.binders: dict[str, dict[str, list[int]]] = {}
        self.kept: dict[str, dict[int, set[str] | None]] = {}  # module -> statement -> kept import aliases
        self.todo: list[tuple[str, str]] = []

    def module(self, module: str) -> ast.Module:
        if module not in self.trees:
            path = _source(module)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            _library_imports(tree, module)  # refuse what a flat folder cannot hold
            self.trees[module], self.paths[module], self.kept[module] = tree, path, {}
            binders: dict[str, list[int]] = {}
            for i, stmt in enumerate(tree.body):
                for name in _bound(stmt):
                    binders.setdefault(name, []).append(i)
            self.binders[module] = binders
            for i, stmt in enumerate(tree.body):
                is_doc = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                if is_doc or _is_type_checking(stmt):
                    self.kept[module][i] = None
                    self.todo += [(module, "TYPE_CHECKING")] if not is_doc else []
                elif isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                    self.kept[module][i] = None
                elif _runs_for_effect(stmt):
                    self.keep(module, i)
                elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and _effects(stmt.module or ""):
                    self.todo.append((module, stmt.names[0].asname or stmt.names[0].name))  # imported to run it
        return self.trees[module]

    def keep(self, module: str, i: int) -> None:
        if i in self.kept[module]:
            return
        self.kept[module][i] = None
        names, nested = _uses(self.trees[module].body[i], module)
        self.todo += [(module, n) for n in names] + nested

    def need(self, module: str, name: str) -> None:
        tree = self.module(module)
        for i in self.binders[module].get(name, []):
            stmt = tree.body[i]
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                aliases = self.kept[module].setdefault(i, set())
                if aliases is None or name in aliases:
                    continue
                aliases.add(name)
                if (
                    isinstance(stmt, ast.ImportFrom)
                    and stmt.level == 0
                    and (stmt.module or "").startswith("syntaxformer")
                ):
                    self.todo += [(stmt.module, a.name) for a in stmt.names if (a.asname or a.name) == name]
            elif not (isinstance(stmt, (ast.Assign, ast.AugAssign)) and name == "__all__"):
                self.keep(module, i)

    def run(self, exports: Mapping[str, Sequence[str]]) -> None:
        self.todo = [(module, name) for module, names in exports.items() for name in names]
        while self.todo:
            self.need(*self.todo.pop())


def _closure(roots: Mapping[str, Sequence[str]]) -> dict[str, Path]:
    """The library modules the exported classes ``roots`` (module -> names) use, directly or not, at module level
    or inside functions (not for the type checker only)."""
    shaker = _Shaker()
    shaker.run(roots)
    return dict(shaker.paths)


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
            rf"\bfrom\s+{re.escape(target)}\s+import\b", f"from .{_flat(target, names)} import", lines[i], count=1
        )
        if n != 1:
            raise ConfigError(
                f"{module} line {node.lineno}: cannot rewrite the import of {target} (expected "
                f"`from {target} import` on that line)"
            )
        lines[i] = new
    return "".join(lines)


def _flat(module: str, names: Mapping[str, str]) -> str:
    """The flat name of a carried module; the last name of one the folder does not carry (imported only for the
    type checker, or by a statement the copy leaves out)."""
    return names.get(module, module.rsplit(".", 1)[-1])


def _kept_text(
    text: str, module: str, tree: ast.Module, kept: Mapping[int, set[str] | None], names: Mapping[str, str]
) -> str:
    """The copy of a module: its kept top-level statements (each with the comments above it), imports made
    relative and cut to the names the kept code uses."""
    lines = _rewrite(text, module, names).splitlines(keepends=True)
    out: list[str] = []
    start = 0
    for i, stmt in enumerate(tree.body):
        first, start = start, stmt.end_lineno or stmt.lineno
        if i not in kept:
            continue
        aliases = kept[i]
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and aliases is not None:
            used = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) in aliases]
            if len(used) < len(stmt.names):
                if isinstance(stmt, ast.Import):
                    node: ast.stmt = ast.Import(names=used)
                elif stmt.level == 0 and (stmt.module or "").startswith("syntaxformer"):
                    node = ast.ImportFrom(module=_flat(stmt.module or "", names), names=used, level=1)
                else:
                    node = ast.ImportFrom(module=stmt.module, names=used, level=stmt.level)
                out += [*lines[first : stmt.lineno - 1], ast.unparse(node) + "\n"]
                continue
        out += lines[first:start]
    return "".join(out)


def code_exports(model_type: str | None, architecture: str, head: str) -> dict[str, list[str]]:
    """What the exported code of one model exports: defining module -> the classes ``auto_map`` and
    ``custom_pipelines`` name (the config class, the model class ``architecture`` and the pipeline of ``head``).

    Raises:
        ConfigError: a model export does not carry (a system of another package, a class its system has not).
    """
    from syntaxformer.sharing.syntax_pipeline import PIPELINE_CLASSES

    config_module, config_class, models = _model_classes(model_type)
    model_module, model_class = models.get(head, ":").split(":")
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
            carries every top-level definition they use, directly or not (:class:`_Shaker`), each module cut to
            its used definitions in their order (with the comments above them) and its statements run for their
            effect.

    Every ``from syntaxformer.a.b import x`` becomes ``from .b import x``; the result imports nothing named
    ``syntaxformer``. The entry module (:data:`ENTRY_MODULE`) imports every copied module and, when the folder
    carries Syntax-BERT's attention, registers it (as :mod:`syntaxformer.modeling` does on import).
    """
    shaker = _Shaker()
    shaker.run(exports)
    attention = "syntaxformer.modeling.syntax_attention"
    if attention in shaker.trees:
        shaker.run({attention: ["register_syntax_attention"]})
    modules = shaker.paths
    names = _flat_names(sorted(modules))
    files = {}
    for module, path in sorted(modules.items()):
        text = _kept_text(path.read_text(encoding="utf-8"), module, shaker.trees[module], shaker.kept[module], names)
        header = (
            f"# Copied from {module} (syntaxformer) by `syntaxformer export`: the definitions this model uses, "
            "imports made relative.\n"
        )
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
def _check_run(run_dir: Path) -> dict[str, Any]:
    """Refuse, with one line naming what is missing, a run that is not finished or not complete; its
    ``config.json`` content otherwise.

    Raises:
        DataError: not a run folder, unfinished (no ``metrics.json``), no saved model, an unreadable
            ``config.json``, missing or damaged weights, missing tokenizer files. ConfigError: a ``model_type``
            export does not carry (checked before transformers reads the folder, which would ask on stdin
            whether to run code).
    """
    from syntaxformer.training.run import METRICS_FILE, RUN_FILE

    if not run_dir.is_dir():
        raise DataError(f"{run_dir} is not a folder; give the output folder of a finished `syntaxformer train` run")
    if not (run_dir / RUN_FILE).is_file():
        raise DataError(
            f"{run_dir} is not a run folder of `syntaxformer train` (no {RUN_FILE}); give the "
            "--output-dir of a finished run"
        )
    if not (run_dir / METRICS_FILE).is_file():
        raise DataError(
            f"{run_dir} holds an unfinished run (no {METRICS_FILE}, which train writes last); let it finish, "
            "or train it again"
        )
    if not (run_dir / "config.json").is_file():
        raise DataError(
            f"{run_dir} holds no saved model (no config.json): the run was stopped before the end or "
            "trained with save_model=false; train it again with the model saved"
        )
    try:
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise ValueError(f"a JSON {type(config).__name__}, not an object")
    except (OSError, ValueError) as e:
        raise DataError(f"{run_dir}/config.json is not a readable model config ({e}); train the run again") from None
    try:
        _model_classes(config.get("model_type"))
    except ConfigError as e:
        raise ConfigError(f"{run_dir}/config.json has {e}") from None
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
    two = config.get("model_type") == "syntax_infused_translation"  # translation: one tokenizer per language
    for folder in (run_dir / "source_tokenizer", run_dir / "target_tokenizer") if two else (run_dir,):
        if not (folder / "tokenizer_config.json").is_file() or not any(
            (folder / name).is_file() for name in TOKENIZER_FILES if name not in _TOKENIZER_EXTRAS
        ):
            raise DataError(
                f"{folder} has no tokenizer (tokenizer_config.json and a vocabulary such as tokenizer.json are "
                "needed); the run's tokenizer files were removed: train it again"
            )
    return config


def _model_classes(model_type: str | None) -> tuple[str, str, dict[str, str]]:
    """The config's defining module and class of ``model_type`` (a built-in system's, or translation's) and its model
    classes by head (``"module:Class"``).

    Raises:
        ConfigError: a model type export does not carry.
    """
    from syntaxformer.registry import BUILTIN_SYSTEMS, system_for_model_type

    spec = system_for_model_type(model_type)
    if spec is not None and spec.name in BUILTIN_SYSTEMS:
        config_module, config_class = str(spec.config).split(":")
        return config_module, config_class, {head: str(model) for head, model in spec.models.items()}
    if model_type == "syntax_infused_translation":
        module, config_class, model_class = _TRANSLATION
        return module, config_class, {"seq2seq": f"{module}:{model_class}"}
    known = [t for s in BUILTIN_SYSTEMS.values() for t in (s.saved_model_type, *s.aliases)]
    raise ConfigError(
        f"model_type {model_type!r}, not a model export can carry "
        f"({', '.join([*known, 'syntax_infused_translation'])}; systems of other packages are not exported)"
    )


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
    run_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    overwrite: bool = False,
    license: str | None = None,
    push_to_hub: str | None = None,
    token: str | None = None,
) -> Path:
    """Write the final model of a finished run as a self-contained Hugging Face model folder (a transaction).

    Everything is checked before anything is written; the folder is built in a temporary folder beside
    ``out_dir`` while this process holds ``out_dir``'s lock (a second export into it is refused), and replaces an
    old ``out_dir`` in one atomic exchange where the system has one (Linux), else by two renames whose
    interruption the next export into ``out_dir`` repairs. An export's own temporaries left by a killed export
    are removed by the next one.

    Args:
        run_dir: the output folder of a finished ``syntaxformer train`` run (``run.json``, ``metrics.json``, the
            saved model and tokenizer).
        out_dir: the folder to write; never the run, a folder inside it or a folder that holds it, nor a link.
        overwrite: replace an existing non-empty ``out_dir``.
        license: the card's license (an id of the Hugging Face hub, e.g. ``apache-2.0``); default: the encoder's
            when it is the offline MiniLM (``apache-2.0``), else ``other``.
        push_to_hub: a hub repository id (``NAME`` or ``OWNER/NAME``): push the written folder there
            (:func:`~syntaxformer.sharing.hub.push_export`); checked (online, a token) before anything is done
            (:func:`~syntaxformer.sharing.hub.check_hub_push`).
        token: the hub access token (default: ``HF_TOKEN`` or the one ``hf auth login`` saved).

    Returns:
        the written folder.

    Raises:
        DataError: ``run_dir`` is not a finished, complete run with readable final weights, ``out_dir`` is one
            export must not write, exists and is not empty without ``overwrite``, or is being written by another
            export. ConfigError: a run export does not support (a head without a pipeline, two models, a parser
            that is a path, a system of another package); a push that cannot happen.
    """
    import transformers

    import syntaxformer.modeling
    import syntaxformer.modeling.seq2seq  # noqa: F401
    from syntaxformer.sharing.hub import check_hub_push, push_export
    from syntaxformer.sharing.syntax_pipeline import OPTIONS_FILE
    from syntaxformer.training.model_card import write_model_card
    from syntaxformer.training.run import load_run
    from syntaxformer.utils import write_json

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    token = check_hub_push(push_to_hub, token) if push_to_hub else None
    _check_run(run_dir)
    _check_output(run_dir, out_dir)
    config, task = load_run(run_dir)
    model_config = transformers.AutoConfig.from_pretrained(str(run_dir), trust_remote_code=False)
    head = _head(model_config)
    options = _options(run_dir, config, task, model_config, head)
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _output_lock(out_dir):
        _clean_temporaries(out_dir)
        if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())) and not overwrite:
            raise DataError(f"{out_dir} exists and is not empty; choose a new folder or pass --overwrite to replace it")
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{_BUILDING}", dir=out_dir.parent))
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
            annotator = _annotator(options.get("parser"))
            run_config = config.to_dict()
            write_model_card(
                tmp, metrics, run_config, model_config, head, annotator=annotator, export=options, license=license,
                folder=out_dir,
            )  # fmt: skip
            os.chmod(tmp, 0o755)
            _replace(tmp, out_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    logger.info("exported %s to %s (%s, %d files)", run_dir, out_dir, head, sum(1 for _ in out_dir.rglob("*")))
    if push_to_hub:
        push_export(out_dir, push_to_hub, token=token)
    return out_dir


def _annotator(parser: str | None) -> Any:
    """The spaCy annotator an exported folder parses with (for the card's parser name and version), or its name
    alone where the pipeline is not installed here."""
    if not parser:
        return None
    from syntaxformer.data.annotators import make_annotator
    from syntaxformer.errors import SyntaxformerError

    try:
        return make_annotator(parser, cache=False, progress=False)
    except (SyntaxformerError, OSError, ValueError):
        return f"spacy:{parser}"


#: The name parts of an export's temporaries beside ``OUT_DIR``: ``.OUT.export-*`` (the folder being built; after an
#: atomic exchange, the old folder being removed), ``.OUT.old-*`` (the old folder moved aside by the two-rename
#: fallback), ``.OUT.lock`` (the lock).
_BUILDING, _OLD, _LOCK = ".export-", ".old-", ".lock"


def _check_output(run_dir: Path, out_dir: Path) -> None:
    """Refuse an output whose writing or replacing would touch the run: the run itself, a folder inside it, a
    folder that holds it (``export runs/a runs --overwrite`` would remove every run), and a symbolic link."""
    if out_dir.is_symlink():
        raise DataError(
            f"{out_dir} is a symbolic link (to {os.readlink(out_dir)}); give a real folder: the folder it points to "
            "or a new one"
        )
    run, out = run_dir.resolve(), out_dir.resolve()
    if out == run or run in out.parents:
        raise DataError(f"{out_dir} is the run folder or inside it; export to a folder of its own")
    if out in run.parents:
        raise DataError(
            f"{out_dir} holds the run folder {run_dir}; replacing it would remove the run: export to a folder of "
            "its own"
        )


@contextlib.contextmanager
def _output_lock(out_dir: Path) -> Iterator[None]:
    """Hold the lock of ``out_dir`` (the run lock of :mod:`syntaxformer.training.lock` on ``.OUT.lock`` beside it),
    or refuse at once when another export writes ``out_dir``."""
    from syntaxformer.training.lock import RunLock, lock_owner

    folder = out_dir.parent / f".{out_dir.name}{_LOCK}"
    lock = RunLock(folder)
    try:
        lock.acquire()
    except DataError as e:
        if "is being written" not in str(e):  # not another export: the folder cannot be written at all
            raise
        owner = lock_owner(folder) or {}
        raise DataError(
            f"{out_dir} is being written by another export (process {owner.get('pid', '?')} on "
            f"{owner.get('host', '?')}); wait until it ends, or choose another OUT_DIR"
        ) from None
    try:
        yield
    finally:
        lock.release()
        with contextlib.suppress(OSError):
            folder.rmdir()  # a lock folder left by a killed export


def _clean_temporaries(out_dir: Path) -> None:
    """Remove what an interrupted export into ``out_dir`` left beside it (called under the lock, so nothing of a
    running export): half-built folders, and an old folder moved aside, which goes back in place when the new one
    never arrived."""
    for path in sorted(out_dir.parent.glob(f".{glob.escape(out_dir.name)}{_OLD}*")):
        if not out_dir.exists() and not out_dir.is_symlink():
            logger.warning("%s: an interrupted export left the old folder in %s; restoring it", out_dir, path.name)
            os.replace(path, out_dir)
        else:
            _remove(path)
    for path in out_dir.parent.glob(f".{glob.escape(out_dir.name)}{_BUILDING}*"):
        logger.info("%s: removing %s, left by an interrupted export", out_dir, path.name)
        _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where the system
    or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a C library without it
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _replace(tmp: Path, out_dir: Path) -> None:
    """Put the complete folder ``tmp`` at ``out_dir``: a rename when ``out_dir`` is new or empty; else one atomic
    exchange (then the old folder, now at ``tmp``, is removed), or where there is none, the old folder is moved
    aside, the new one renamed in and the old one removed (:func:`_clean_temporaries` repairs an interruption)."""
    if not out_dir.exists():
        os.replace(tmp, out_dir)
    elif out_dir.is_dir() and not any(out_dir.iterdir()):
        out_dir.rmdir()
        os.replace(tmp, out_dir)
    elif _exchange(tmp, out_dir):
        _remove(tmp)
    else:
        old = out_dir.parent / f".{out_dir.name}{_OLD}{os.getpid()}"
        os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        _remove(old)
