"""masks/ sits on torch and the tree algorithms only: it never imports the data model or anything above it."""

from __future__ import annotations

import ast
from pathlib import Path

import syntaxformer.masks

ALLOWED = ("syntaxformer.masks", "syntaxformer.data.tree", "syntaxformer.errors")


def test_layering_masks_import_nothing_above_data_tree():
    folder = Path(syntaxformer.masks.__file__).parent
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                names = names[:1] if node.module != "syntaxformer.data" else names[1:]
            for name in names:
                if name.startswith("syntaxformer"):
                    assert name.startswith(ALLOWED), f"{path.name} imports {name}"
