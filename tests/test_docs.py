"""The documentation stays true: every ```python block of README.md and docs/*.md runs as written, and every source /
test file a page names in backticks exists (links: tests/test_links.py).

A page's python blocks run in order in one fresh interpreter (later blocks may use names of earlier ones, as a
reader would run them), from an empty temporary folder, with the environment of the test run (``HF_HUB_OFFLINE``,
``SYNTAXFORMER_DATA`` ...). A block directly preceded by the line ``<!-- no-test -->`` is skipped (use it only for
long trainings); one preceded by ``<!-- requires: MODULE -->`` runs only where that optional package is installed
(e.g. ``datasets``); one preceded by ``<!-- excerpt: PATH -->`` is an abridged excerpt of a repository file that the
test suite runs (the file must exist). Pages whose blocks read the shared data sets skip when the data is absent.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NO_TEST = "<!-- no-test -->"
#: ``<!-- excerpt: tests/x.py -->`` before a block: an abridged excerpt of that file, which the test suite runs; the
#: block itself is not run, the file must exist.
_EXCERPT = re.compile(r"^<!-- excerpt: (\S+) -->$")
#: ``<!-- requires: datasets -->`` before a block: run it only where that optional package can be imported.
_REQUIRES = re.compile(r"^<!-- requires: ([\w.]+) -->$")

_FENCE = re.compile(r"^```(\w*)\s*$")
_CODE_PATH = re.compile(r"`([\w./-]+\.(?:py|md))`")
#: First path components that mean "a file of this repository" (top-level folders, the package and its packages).
_REPO_ROOTS = {
    "src",
    "tests",
    "docs",
    "experiments",
    "benchmarks",
    "syntaxformer",
    *(d.name for d in (REPO / "src" / "syntaxformer").iterdir() if d.is_dir() and d.name != "__pycache__"),
}


def python_blocks(page: Path) -> list[tuple[int, str, bool]]:
    """``(first line number, code, runnable)`` of each ```python block of ``page``; ``runnable`` is False when the
    last non-blank line before the fence is :data:`NO_TEST` or an excerpt marker, or a ``requires`` marker names a
    package that is not installed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if lang == "python":
            before = [ln.strip() for ln in lines[:i] if ln.strip()]
            marker = before[-1] if before else ""
            requires = _REQUIRES.match(marker)
            missing = requires is not None and importlib.util.find_spec(requires.group(1)) is None
            blocks.append(
                (start + 1, "\n".join(lines[start:j]), not (marker == NO_TEST or _EXCERPT.match(marker) or missing))
            )
        i = j + 1
    return blocks


def _pages_with_code() -> list[Path]:
    return [p for p in PAGES if any(runnable for _, _, runnable in python_blocks(p))]


@pytest.mark.slow
@pytest.mark.own_work_unit
@pytest.mark.parametrize("page", _pages_with_code(), ids=lambda p: str(p.relative_to(REPO)))
def test_python_blocks_run(page: Path, tmp_path: Path) -> None:
    blocks = [(line, code) for line, code, runnable in python_blocks(page) if runnable]
    source = "\n".join(code for _, code in blocks)
    if "shared_data_dir()" in source:
        from syntaxformer.defaults import shared_data_dir

        if shared_data_dir() is None:
            pytest.skip(f"{page.name} reads the shared data sets: set SYNTAXFORMER_DATA")
    script = []
    for line, code in blocks:  # one script, with a marker per block so a failure names its block
        script.append(f"print('--- block at {page.name}:{line}', flush=True)\n{code}\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("SYNTAXFORMER_NO_PROGRESS", "1")
    env.setdefault("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    result = subprocess.run(
        [sys.executable, "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, (
        f"a python block of {page.name} fails:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )


def test_no_test_marker_only_before_blocks() -> None:
    """``<!-- no-test -->`` is used sparingly and always right before a python block."""
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, ln in enumerate(lines):
            if ln.strip() == NO_TEST:
                nxt = next((x for x in lines[i + 1 :] if x.strip()), "")
                assert nxt.startswith("```python"), f"{page.name}:{i + 1}: {NO_TEST} not followed by a python block"


def test_excerpts_name_existing_files() -> None:
    for page in PAGES:
        for ln in page.read_text(encoding="utf-8").splitlines():
            m = _EXCERPT.match(ln.strip())
            if m:
                assert (REPO / m.group(1)).exists(), f"{page.name}: excerpt of a missing file {m.group(1)}"


def _code_path_exists(name: str) -> bool:
    """A backticked path of a page, relative to the repo, ``src/``, the package, or one of its packages."""
    package = REPO / "src" / "syntaxformer"
    roots = [REPO, REPO / "src", package, *(d for d in package.iterdir() if d.is_dir())]
    return any((root / name).exists() for root in roots)


def _names_repo_file(name: str) -> bool:
    """Whether a backticked path points into this repository (not ``../shared/...``, not another library's file)."""
    return "/" in name and name.split("/", 1)[0] in _REPO_ROOTS


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_named_source_files_exist(page: Path) -> None:
    """Every ``path/to/file.py`` a page names in backticks exists (a moved module leaves no stale path behind)."""
    text = page.read_text(encoding="utf-8")
    missing = sorted({p for p in _CODE_PATH.findall(text) if _names_repo_file(p) and not _code_path_exists(p)})
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_docs_index_lists_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert not {p for p in pages if f"]({p})" not in index}, "docs/README.md must link every docs page"


def test_requires_marker_runs_a_block_only_where_its_package_is_installed(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- requires: no_such_package_xyz -->\n```python\nimport no_such_package_xyz\n```\n\n"
        "<!-- requires: json -->\n```python\nimport json\n```\n\n```python\nx = 1\n```\n"
    )
    assert [runnable for _, _, runnable in python_blocks(page)] == [False, True, True]


def test_architecture_module_map_names_every_module() -> None:
    """The module map of docs/architecture.md has a row for every module of the package (``__init__.py`` aside);
    a row's first cell names modules by path, a bare name meaning the folder of the path before it, and its
    second cell may name the parts of a module the same way."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Module map", 1)[1].split("\n\n", 2)[2].split("\n\n", 1)[0]
    named = set()
    for row in table.splitlines()[2:]:
        folder = ""
        for name in re.findall(r"`([\w/.]+\.py)`", "|".join(row.split("|")[1:3])):
            folder = name.rpartition("/")[0] + "/" if "/" in name else folder
            named.add(name if "/" in name else folder + name)
    package = REPO / "src" / "syntaxformer"
    modules = {p.relative_to(package).as_posix() for p in package.rglob("*.py") if p.name != "__init__.py"}
    assert not sorted(modules - named), f"docs/architecture.md's module map misses {sorted(modules - named)}"
