"""The package's layers: data flows one way (text -> Sentence -> aligned tensors -> masks -> model -> head ->
metrics), so no module imports a module of a higher layer, and no two subpackages import each other.

Read from the source with ``ast``: every ``import`` / ``from ... import`` statement of every module under
``src/syntaxformer``, at module level or inside a function (an import inside a function is still a dependency;
only its time differs). Modules loaded by name through ``importlib.import_module`` (the lazy attributes of the
package roots) are not statements and are not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "syntaxformer"

#: The layers, lowest first. A module belongs to the layer of its longest listed prefix; it may import modules of
#: its own layer and of lower layers only.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "syntaxformer.errors",
        "syntaxformer.utils",
        "syntaxformer.secrets",
        "syntaxformer.defaults",
        "syntaxformer.registry",
        "syntaxformer.registration",
    ),
    ("syntaxformer.data", "syntaxformer.masks"),
    ("syntaxformer.modeling",),
    ("syntaxformer.tasks", "syntaxformer.hf_datasets"),
    ("syntaxformer.training",),
    ("syntaxformer.analysis", "syntaxformer.inference", "syntaxformer.sharing", "syntaxformer.pipelines"),
    ("syntaxformer.commands", "syntaxformer.cli"),
)

#: Upward imports that are known and allowed, each with its reason.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}  # none: the registrations name the modules above them by string


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _resolve(name: str) -> str:
    """The module of ``name`` (a module, or an attribute of one: its nearest enclosing module)."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str) -> list[tuple[int, str]]:
    """``(line, imported module)`` for every ``syntaxformer`` import of ``module``, at any depth."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, _resolve(a.name)) for a in node.names if a.name.split(".")[0] == ROOT]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                package = module if _is_package(module) else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            if base.split(".")[0] != ROOT:
                continue
            out += [(node.lineno, _resolve(f"{base}.{a.name}")) for a in node.names]
    return out


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s longest listed prefix. The package root sits with the data model
    it re-exports (``Sentence``, ``Document``, ``Tree``; the rest of its names load lazily, by name)."""
    if module == ROOT:
        return layer_of("syntaxformer.data")
    best = None
    for k, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > len(best[1])):
                best = (k, p)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best[0]


def unit_of(module: str) -> str:
    """The subpackage (or top-level module) that ``module`` belongs to: ``syntaxformer.x``."""
    return ".".join(module.split(".")[:2])


def test_layers_cover_every_module():
    for module in MODULES:
        layer_of(module)  # raises for a module of no layer


def test_no_module_imports_a_higher_layer():
    wrong = []
    for module in MODULES:
        for line, target in sorted(set(imports_of(module))):
            # Importing the package root adds no dependency: Python has run it before any of its modules.
            if target == ROOT or (module, target) in ALLOWED_UPWARD:
                continue
            if layer_of(target) > layer_of(module):
                wrong.append(
                    f"{_shown(MODULES[module])}:{line} {module} (layer {layer_of(module)}) "
                    f"imports {target} (layer {layer_of(target)})"
                )
    assert not wrong, "imports that run up the layers:\n" + "\n".join(wrong)


def test_no_cycle_between_subpackages():
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        for _, target in imports_of(module):
            a, b = unit_of(module), unit_of(target)
            if a != b and target != ROOT and (module, target) not in ALLOWED_UPWARD:
                graph.setdefault(a, set()).add(b)
    cycles = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(unit: str) -> None:
        state[unit] = 1
        path.append(unit)
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(path[path.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[unit] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit)
    assert not cycles, "subpackages that import each other:\n" + "\n".join(cycles)


def test_no_import_cycle_between_modules():
    """No two modules import each other, directly or through others (``a -> b -> c -> a``): every module can be read
    (and imported) after the modules it uses. Imports inside functions count (module docstring)."""
    graph = {
        module: {t for _, t in imports_of(module) if t != ROOT and t != module and (module, t) not in ALLOWED_UPWARD}
        for module in MODULES
    }
    assert not _cycles(graph), "modules that import each other:\n" + "\n".join(_cycles(graph))


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """One cycle (``a -> b -> a``) per group of modules that reach each other (Tarjan's strongly connected
    components, each shown as one path through it)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [" -> ".join(_path_round(graph, group)) for group in sorted(groups)]


def _path_round(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A path from the group's first module back to it, through the group (breadth first: the shortest)."""
    start, members = group[0], set(group)
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, set()) & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return group  # not reached: the members of a group reach each other


def test_an_import_cycle_is_reported(monkeypatch, tmp_path):
    """Two modules that import each other (one of them inside a function) fail the cycle check, naming both."""
    low = tmp_path / "low"
    low.mkdir()
    monkeypatch.setitem(MODULES, "syntaxformer.errors", _write(tmp_path, "import syntaxformer.utils\n"))
    monkeypatch.setitem(
        MODULES, "syntaxformer.utils", _write(low, "def f():\n    from syntaxformer.errors import ConfigError\n")
    )
    with pytest.raises(AssertionError, match=r"syntaxformer.errors -> syntaxformer.utils -> syntaxformer.errors"):
        test_no_import_cycle_between_modules()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from syntaxformer.modeling.syntax_attention import SyntaxGroups", "syntaxformer.modeling.syntax_attention"),
        (
            "from syntaxformer.modeling import syntax_attention_triton as T",
            "syntaxformer.modeling.syntax_attention_triton",
        ),
        ("import syntaxformer.analysis.probes", "syntaxformer.analysis.probes"),
        ("from syntaxformer.training import RunConfig", "syntaxformer.training"),
        (
            "def f():\n    from syntaxformer.analysis.compare_runs import compare_runs",
            "syntaxformer.analysis.compare_runs",
        ),
    ],
)
def test_import_reader_resolves_modules(monkeypatch, tmp_path, source, expected):
    """The reader sees imports inside functions and resolves an imported name to its module."""
    monkeypatch.setitem(MODULES, "syntaxformer.errors", _write(tmp_path, source))
    assert [t for _, t in imports_of("syntaxformer.errors")] == [expected]


def test_an_upward_import_is_reported(monkeypatch, tmp_path):
    """A low module that imports the runner (inside a function) fails the layer check, naming the line."""
    monkeypatch.setitem(
        MODULES, "syntaxformer.utils", _write(tmp_path, "def f():\n    from syntaxformer.training import run\n")
    )
    with pytest.raises(
        AssertionError, match=r"utils.py:2 syntaxformer.utils \(layer 0\) imports syntaxformer.training.run"
    ):
        test_no_module_imports_a_higher_layer()


def _write(folder: Path, source: str) -> Path:
    path = folder / "utils.py"
    path.write_text(source, encoding="utf-8")
    return path


def _shown(path: Path) -> str:
    return str(path.relative_to(SRC.parent)) if path.is_relative_to(SRC.parent) else str(path)


#: Files allowed over :data:`MAX_LINES`, each with its reason.
LONG_FILES = {"syntaxformer.data.headrules": "the head-rule tables: data, one table per category"}
MAX_LINES = 800


def test_no_source_file_over_800_lines():
    """One job per module: a file that grows past 800 lines has more than one (the head-rule tables excepted)."""
    long = {
        module: n
        for module, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES and module not in LONG_FILES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}; split them by job"
