"""GLUE TSV files (SST-2, CoLA, MRPC, STS-B, QNLI, RTE, WNLI and any file in their layout) -> task examples.

Files are read by splitting lines on tabs, never with ``csv`` quoting: MRPC and others contain unbalanced ``"``
characters that a CSV reader would merge across lines. Where the texts, labels and ids are is a :class:`TsvLayout`
(the GLUE layouts are in :mod:`syntaxformer.tasks.glue`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from syntaxformer.data.examples import TaskExample
from syntaxformer.data.readers.table import split_lines
from syntaxformer.errors import FormatError
from syntaxformer.utils import open_text

__all__ = ["TsvLayout", "read_glue_tsv"]


@dataclass(frozen=True)
class TsvLayout:
    """Where a TSV file's texts, labels and ids are.

    Attributes:
        title: the task's usual name (for messages).
        columns: role (``"text_a"``, ``"text_b"`` for pairs, ``"label"``, optional ``"id"``) -> column name.
        labels: the label strings, in class-id order; ``None`` for regression (labels are numbers).
        headerless: role -> column position for files without a header (CoLA's train/dev), else ``None``.
        test_columns: like ``columns``, for unlabeled test files (no label column, maybe another id column).
    """

    title: str
    columns: Mapping[str, str]
    labels: tuple[str, ...] | None
    headerless: Mapping[str, int] | None = None
    test_columns: Mapping[str, str] | None = None


def _label_id(layout: TsvLayout, raw: str, path: str, lineno: int) -> int | float:
    raw = raw.strip()
    if layout.labels is None:
        try:
            return float(raw)
        except ValueError:
            raise FormatError(f"{layout.title} score {raw!r} is not a number", path, lineno) from None
    try:
        return layout.labels.index(raw)
    except ValueError:
        raise FormatError(
            f"unknown {layout.title} label {raw!r}; expected one of {list(layout.labels)}", path, lineno
        ) from None


def read_glue_tsv(layout: TsvLayout, path: str | os.PathLike, split: str = "dev") -> list[TaskExample]:
    """Read one TSV file in a GLUE layout.

    The layout is detected from the first line: if it names the layout's columns (``columns``, or
    ``test_columns`` for unlabeled test files) it is a header; otherwise the file must be one of the layout's
    header-less files (CoLA train/dev: source, label, original judgement, sentence). A UTF-8 BOM is ignored.

    ``split`` names the example ids; ``label`` is ``None`` for files without a label column.

    Raises:
        FormatError: the layout is not the layout's, a row has too few fields, or a label is unknown (file, line).
    """
    path = os.fspath(path)
    with open_text(path, newline="") as f:
        lines = split_lines(f.read())
    if not lines:
        return []
    first = lines[0].rstrip("\r").split("\t")
    positions: dict[str, int] | None = None
    for columns in (layout.columns, layout.test_columns):
        # A header names at least the text columns; the label and id columns are optional (test files).
        if columns and all(columns[r] in first for r in ("text_a", "text_b") if r in columns):
            positions = {role: first.index(name) for role, name in columns.items() if name in first}
            body, start = lines[1:], 2
            break
    if positions is None:
        if layout.headerless is None:
            expected = list(layout.columns.values())
            raise FormatError(
                f"first line {first!r} is not a {layout.title} header (expected the columns {expected})", path, 1
            )
        positions = dict(layout.headerless)
        body, start = lines, 1
    need = max(positions.values()) + 1
    out = []
    for k, line in enumerate(body):
        lineno = start + k
        line = line.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < need:
            raise FormatError(
                f"{len(fields)} tab-separated fields, expected at least {need} for {layout.title}", path, lineno
            )
        label = _label_id(layout, fields[positions["label"]], path, lineno) if "label" in positions else None
        # Ids: the file's own index column where it has a unique one, else the line number.
        rid = fields[positions["id"]] if "id" in positions and layout.headerless is None else f"line{lineno}"
        out.append(
            TaskExample(
                guid=f"{split}-{rid}",
                text_a=fields[positions["text_a"]].strip(),
                text_b=fields[positions["text_b"]].strip() if "text_b" in positions else None,
                label=label,
            )
        )
    return out
