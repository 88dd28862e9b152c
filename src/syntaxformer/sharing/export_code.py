"""The code of an exported model folder (:mod:`syntaxformer.sharing.export`): the library definitions the classes
of :func:`code_exports` use, directly or not (:class:`_Shaker`), each module cut to them and copied flat with relative
imports, and the entry module (:data:`ENTRY_MODULE`) that imports every copy (``docs/inference.md``).
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeGuard

from syntaxformer.errors import ConfigError
from syntaxformer.registry import BUILTIN_SYSTEMS, system_for_model_type
from syntaxformer.sharing.syntax_pipeline import PIPELINE_CLASSES

__all__ = ["ENTRY_MODULE", "code_exports", "code_files", "model_classes"]

#: The generated module that ``auto_map`` and ``custom_pipelines`` name (it imports every copied module).
ENTRY_MODULE = "syntax_model"
#: The model of a translation run (not a system of the registry): its config and model class.
_TRANSLATION = (
    "syntaxformer.modeling.seq2seq",
    "SyntaxInfusedTranslationConfig",
    "SyntaxInfusedForConditionalGeneration",
)
#: Syntax input (prefix) -> the data module the library imports on demand for it
#: (:func:`syntaxformer.data.sentence.on_demand`, by its last name, which its flat copy keeps). A folder that carries
#: it carries the names its kept code takes from it (``on_demand("constituency").encode_constituency``).
_ON_DEMAND: dict[str, str] = {"con_": "syntaxformer.data.constituency", "pos_ids": "syntaxformer.data.subword_features"}
#: Third-party top-level modules a flat file must not shadow by its name.
_RESERVED = {"spacy", "torch", "transformers", "numpy", "tokenizers", "huggingface_hub", "safetensors", "tqdm"}


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
        if _is_type_checking(node):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def _library_imports(tree: ast.AST, module: str, runtime: bool = False) -> list[tuple[ast.ImportFrom, str]]:
    """Every ``syntaxformer`` import statement of a module (at any depth; ``runtime``: not those under
    ``if TYPE_CHECKING:``) with the module it imports from.

    Raises:
        ConfigError: an ``import syntaxformer...`` statement or an import from a package (``__init__``): the flat
            folder has no packages, so copied modules import names from modules only.
    """
    out: list[tuple[ast.ImportFrom, str]] = []
    skip = _type_checking_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import) and any(_is_library(a.name) for a in node.names):
            raise ConfigError(
                f"{module} line {node.lineno}: `import syntaxformer...` cannot be made relative; "
                "use `from syntaxformer.x import y`"
            )
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_library(node.module):
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


def _is_library(module: str | None) -> bool:
    return (module or "").split(".")[0] == "syntaxformer"


def _is_type_checking(stmt: ast.AST) -> TypeGuard[ast.If]:
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


def _on_demand_names(stmt: ast.stmt) -> list[tuple[str, str]]:
    """``(module, name)`` for every ``on_demand("<module>").<name>`` in a statement (a data module imported on
    demand: :data:`_ON_DEMAND`)."""
    modules = {module.rsplit(".", 1)[-1]: module for module in _ON_DEMAND.values()}
    out = []
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Call):
            continue
        call = node.value
        if (
            isinstance(call.func, ast.Name)
            and call.func.id == "on_demand"
            and len(call.args) == 1
            and isinstance(call.args[0], ast.Constant)
            and call.args[0].value in modules
        ):
            out.append((modules[call.args[0].value], node.attr))
    return out


def _runs_for_effect(stmt: ast.stmt) -> bool:
    """A top-level statement that is not a definition, an import or a docstring (a call, a loop, a conditional)."""
    defines = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
    assigns = isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign))
    return not (isinstance(stmt, defines) or assigns or is_doc or _is_type_checking(stmt))


@functools.cache
def _effects(module: str | None) -> bool:
    """Whether a library module calls something at the top level on import (e.g. registers an attention
    function): a copied module that imports it keeps that import."""
    if module is None or not _is_library(module) or _is_package(module):
        return False
    body = ast.parse(_source(module).read_text(encoding="utf-8")).body
    return any(isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) for stmt in body)


class _Shaker:
    """The definitions an exported model uses: every top-level definition the exported classes reach, across
    modules, through names, imports at any depth and identifiers written as strings; statements run for their
    effect are always kept, the methods in ``unused`` (:func:`_unused_methods`) left out of their classes."""

    def __init__(self, unused: Mapping[tuple[str, str], set[str]] | None = None) -> None:
        self.unused = dict(unused or {})
        self.trees: dict[str, ast.Module] = {}
        self.paths: dict[str, Path] = {}
        self.binders: dict[str, dict[str, list[int]]] = {}
        self.kept: dict[str, dict[int, set[str] | None]] = {}  # module -> statement -> kept import aliases
        self.todo: list[tuple[str, str]] = []
        self.on_demand: set[tuple[str, str]] = set()  # names kept code takes from a module imported on demand

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
                elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and _effects(stmt.module):
                    self.todo.append((module, stmt.names[0].asname or stmt.names[0].name))  # imported to run it
        return self.trees[module]

    def keep(self, module: str, i: int) -> None:
        if i in self.kept[module]:
            return
        self.kept[module][i] = None
        stmt = self.statement(module, i)
        names, nested = _uses(stmt, module)
        self.todo += [(module, n) for n in names] + nested
        self.on_demand.update(_on_demand_names(stmt))

    def statement(self, module: str, i: int) -> ast.stmt:
        """Top-level statement ``i`` of ``module``; a class without its :attr:`unused` methods."""
        stmt = self.trees[module].body[i]
        if not isinstance(stmt, ast.ClassDef) or not self.unused.get((module, stmt.name)):
            return stmt
        left_out = self.unused[(module, stmt.name)]
        cut = copy.copy(stmt)
        cut.body = [s for s in stmt.body if not (isinstance(s, ast.FunctionDef) and s.name in left_out)]
        return cut

    def need(self, module: str, name: str) -> None:
        tree = self.module(module)
        for i in self.binders[module].get(name, []):
            stmt = tree.body[i]
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                aliases = self.kept[module].setdefault(i, set())
                if aliases is None or name in aliases:
                    continue
                aliases.add(name)
                source = stmt.module if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 else None
                if source is not None and _is_library(source):
                    self.todo += [(source, a.name) for a in stmt.names if (a.asname or a.name) == name]
            elif not (isinstance(stmt, (ast.Assign, ast.AugAssign)) and name == "__all__"):
                self.keep(module, i)

    def run(self, exports: Mapping[str, Sequence[str]]) -> None:
        """Keep what ``exports`` (module -> names; a module with no names is carried for what the rest takes from
        it on demand) use."""
        for module, names in exports.items():
            self.module(module)
            self.todo += [(module, name) for name in names]
        done: set[tuple[str, str]] = set()
        while self.todo:
            while self.todo:
                self.need(*self.todo.pop())
            # what kept code takes on demand from a module the folder carries (the others are never imported)
            self.todo = [pair for pair in self.on_demand - done if pair[0] in self.trees]
            done.update(self.todo)


def _unused_methods(shaker: _Shaker) -> dict[tuple[str, str], set[str]]:
    """The methods no kept code names, of the kept classes that are plain classes (no base class, and the base of
    no kept class: never mixed into a third-party class, which may call a method by its name): (module, class) ->
    method names. A method is named by an attribute, a name, a keyword or a string that is an identifier anywhere in
    the kept code; dunder methods are always kept."""
    kept = [(m, shaker.statement(m, i)) for m, statements in shaker.kept.items() for i in statements]
    used: set[str] = set()
    for _, stmt in kept:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.keyword) and node.arg:
                used.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                used.add(node.value)
    bases = {ast.unparse(b).rsplit(".", 1)[-1] for _, s in kept if isinstance(s, ast.ClassDef) for b in s.bases}
    out: dict[tuple[str, str], set[str]] = {}
    for module, statements in shaker.kept.items():
        for i in statements:
            stmt = shaker.trees[module].body[i]
            if not isinstance(stmt, ast.ClassDef) or stmt.bases or stmt.keywords or stmt.name in bases:
                continue
            unused = {
                s.name
                for s in stmt.body
                if isinstance(s, ast.FunctionDef) and not s.name.startswith("__") and s.name not in used
            }
            if unused:
                out[(module, stmt.name)] = unused
    return out


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
    for module in _ON_DEMAND.values():  # imported by their last name (on_demand), which their copies must keep
        if module in out and out[module] != module.rsplit(".", 1)[-1]:
            raise ConfigError(f"{module} is imported on demand by its name but would be copied as {out[module]}")
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
    text: str,
    module: str,
    tree: ast.Module,
    kept: Mapping[int, set[str] | None],
    names: Mapping[str, str],
    unused: Mapping[tuple[str, str], set[str]],
) -> str:
    """The copy of a module: its kept top-level statements (each with the comments above it), imports made
    relative and cut to the names the kept code uses, classes without their ``unused`` methods. An import for the
    type checker of a module the folder does not carry is left out (transformers copies every module a relative
    import names)."""
    lines = _rewrite(text, module, names).splitlines(keepends=True)
    if len(kept) < len(tree.body) or any(m == module for m, _ in unused):
        _first_paragraph(lines, tree)
    for stmt in tree.body:
        left_out = unused.get((module, stmt.name), set()) if isinstance(stmt, ast.ClassDef) else set()
        for method in stmt.body if isinstance(stmt, ast.ClassDef) else []:
            if isinstance(method, ast.FunctionDef) and method.name in left_out:
                first = min([method.lineno, *(d.lineno for d in method.decorator_list)])
                first -= 1 if not lines[first - 2].strip() else 0  # with the blank line above it
                lines[first - 1 : method.end_lineno] = [""] * ((method.end_lineno or first) - first + 1)
    for stmt in tree.body:
        if not _is_type_checking(stmt):
            continue
        absent = [
            node
            for node in stmt.body
            if isinstance(node, ast.ImportFrom) and _is_library(node.module) and node.module not in names
        ]
        whole = len(absent) == len(stmt.body)
        for cut in [stmt] if whole else absent:
            lines[cut.lineno - 1 : cut.end_lineno] = [""] * ((cut.end_lineno or cut.lineno) - cut.lineno + 1)
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
                elif stmt.level == 0 and _is_library(stmt.module):
                    node = ast.ImportFrom(module=_flat(stmt.module or "", names), names=used, level=1)
                else:
                    node = ast.ImportFrom(module=stmt.module, names=used, level=stmt.level)
                out += [*lines[first : stmt.lineno - 1], ast.unparse(node) + "\n"]
                continue
        out += lines[first:start]
    return "".join(out)


def _first_paragraph(lines: list[str], tree: ast.Module) -> None:
    """Cut the module docstring in ``lines`` to its first paragraph, in place (the lines after it become empty, so
    the statements keep their line numbers): the copy of a module cut to some of its definitions carries its summary,
    not the rest of its prose, which describes the definitions the copy leaves out."""
    doc = tree.body[0] if tree.body else None
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
        return
    first, last = doc.lineno - 1, (doc.end_lineno or doc.lineno) - 1
    blank = next((i for i in range(first + 1, last) if not lines[i].strip()), None)
    if blank is None:
        return
    quote = '"' * 3 if '"' * 3 in lines[first] else "'" * 3
    lines[blank : last + 1] = [quote + "\n"] + [""] * (last - blank)


def code_exports(
    model_type: str | None, architecture: str, head: str, syntax_inputs: Sequence[str] | None = None
) -> dict[str, list[str]]:
    """What the exported code of one model exports: defining module -> the classes ``auto_map`` and
    ``custom_pipelines`` name (the config class, the model class ``architecture``, the pipeline of ``head``), plus
    the data modules imported on demand (:data:`_ON_DEMAND`) that ``syntax_inputs`` need (``None``: those of the
    system's default config).

    Raises:
        ConfigError: a model export does not carry (a system of another package, a class its system has not).
    """
    config_module, config_class, models = model_classes(model_type)
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
    if syntax_inputs is None:
        spec = system_for_model_type(model_type)
        syntax_inputs = spec.config_class()().syntax_inputs if spec is not None else ()
    for prefix, module in _ON_DEMAND.items():
        if any(k.startswith(prefix) for k in syntax_inputs):
            out.setdefault(module, [])
    return out


def code_files(exports: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The code of an exported folder: file name -> text. ``exports``: defining module -> the classes the entry
    module exports (:func:`code_exports`). The entry module (:data:`ENTRY_MODULE`) imports every copied module
    and, when the folder carries Syntax-BERT's attention, registers it (as :mod:`syntaxformer.modeling` does)."""
    attention = "syntaxformer.modeling.syntax_attention"
    unused: dict[tuple[str, str], set[str]] = {}
    while True:  # leaving methods out can leave more unused (the definitions only they used): until none is left
        shaker = _Shaker(unused)
        shaker.run(exports)
        if attention in shaker.trees:
            shaker.run({attention: ["register_syntax_attention"]})
        more = _unused_methods(shaker)
        if more == unused:
            break
        unused = more
    modules = shaker.paths
    names = _flat_names(sorted(modules))
    files = {}
    for module, path in sorted(modules.items()):
        tree, kept = shaker.trees[module], shaker.kept[module]
        text = _kept_text(path.read_text(encoding="utf-8"), module, tree, kept, names, unused)
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
    if attention in modules:
        lines += [
            f"from .{names[attention]} import register_syntax_attention",
            "",
            'register_syntax_attention()  # attn_implementation="syntax" (Syntax-BERT)',
        ]
    files[f"{ENTRY_MODULE}.py"] = "\n".join([*lines, ""])
    return files


def model_classes(model_type: str | None) -> tuple[str, str, dict[str, str]]:
    """The config's defining module and class of ``model_type`` (a built-in system's, or translation's) and its model
    classes by head (``"module:Class"``).

    Raises:
        ConfigError: a model type export does not carry.
    """
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
