"""A user's own data as a table of rows: CSV, TSV, JSON and JSONL files, a ``datasets`` folder saved with
``save_to_disk``, or a Hugging Face hub data set; column checks whose errors list the columns present.

Pipeline (what :mod:`syntaxformer.tasks.custom` does with it)::

    table = read_table("reviews.csv")                        # Table(columns, rows, source, fingerprint)
    require_columns(table, {"text": "review", "label": "stars"})   # DataError naming the columns present
    texts = [row["review"] for row in table.rows]

Formats, by file extension: ``.csv`` (comma-separated, standard quoting, a header line), ``.tsv`` / ``.tab``
(tab-separated, a header line, *no* quoting: a ``"`` is an ordinary character, as in the GLUE files), ``.json``
(a list of objects, or an object whose ``"data"`` member is one) and ``.jsonl`` / ``.ndjson`` (one object per
line). CSV / TSV values are strings; JSON values keep their types (a label ``1`` is an int, ``0.5`` a float).
A folder is read with ``datasets.load_from_disk`` and a name that is neither a file nor a folder with
``datasets.load_dataset`` (both need the ``datasets`` package).
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from syntaxformer.data.examples import file_fingerprint
from syntaxformer.errors import DataError, FormatError, MissingDependencyError
from syntaxformer.utils import json_lines, open_text

__all__ = ["Table", "TABLE_FORMATS", "table_format", "read_table", "load_dataset_table", "require_columns",
           "HUB_SPLITS"]

#: File extension -> format.
TABLE_FORMATS: dict[str, str] = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".json": "json", ".jsonl": "jsonl",
                                 ".ndjson": "jsonl"}
#: Split names of this library -> the names a ``datasets`` DatasetDict may use for them, in order of preference.
HUB_SPLITS: dict[str, tuple[str, ...]] = {"train": ("train",), "dev": ("validation", "dev", "valid"),
                                          "test": ("test",)}


@dataclass
class Table:
    """Rows of named columns, in file order.

    Attributes:
        columns: the column names (a CSV / TSV header; for JSON, every key in order of first appearance).
        rows: one mapping per row (a column a JSON row lacks is absent from its mapping).
        source: where the rows came from (a path, ``hub:<name>[split]``).
        fingerprint: hex digest of the content (the file's bytes, or the data set's own fingerprint).
        lines: the 1-based line of each row in the file (for messages), or ``None`` when rows are not lines.
    """

    columns: list[str]
    rows: list[dict[str, Any]]
    source: str
    fingerprint: str
    lines: list[int] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def where(self, index: int) -> str:
        """``"<source>:<line>"`` (or ``"<source> row <n>"``) of row ``index``, for messages."""
        if self.lines is not None:
            return f"{self.source}:{self.lines[index]}"
        return f"{self.source} row {index + 1}"


def table_format(path: str | os.PathLike) -> str:
    """The format of a file by its extension (:data:`TABLE_FORMATS`).

    Raises:
        FormatError: an extension that is none of them (the message lists them).
    """
    suffix = Path(path).suffix.lower()
    if suffix not in TABLE_FORMATS:
        raise FormatError(f"cannot tell the format of {path} from its extension {suffix or '(none)'!r}; name it "
                          f"with one of {', '.join(TABLE_FORMATS)}")
    return TABLE_FORMATS[suffix]


def read_table(path: str | os.PathLike, split: str = "train") -> Table:
    """Read a CSV / TSV / JSON / JSONL file, or a ``datasets`` folder (``split`` picks its part).

    Raises:
        DataError: the file does not exist, or holds no rows.
        FormatError: a malformed file (the message names the file and line).
        MissingDependencyError: a ``datasets`` folder without the ``datasets`` package.
    """
    p = Path(path)
    if p.is_dir():
        return load_dataset_table(str(p), split=split)
    if not p.is_file():
        raise DataError(f"data file {path} not found")
    kind = table_format(p)
    reader = {"csv": _read_delimited, "tsv": _read_delimited, "json": _read_json, "jsonl": _read_jsonl}[kind]
    columns, rows, lines = reader(p, kind)
    if not rows:
        raise DataError(f"{path} holds no rows" + (f" (only the header {columns})" if columns else " (empty file)"))
    return Table(columns, rows, str(p), file_fingerprint([p]), lines)


def _read_delimited(path: Path, kind: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    with open_text(path, encoding="utf-8-sig", newline="") as f:
        if kind == "csv":
            reader = csv.reader(f)
        else:  # TSV: split on tabs only; quotes are text (GLUE / MRPC files have unbalanced ones)
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            header = next(reader, None)
            if header is None:
                return [], [], []
            header = [h.strip() for h in header]
            if len(set(header)) != len(header):
                dup = sorted({h for h in header if header.count(h) > 1})
                raise FormatError(f"the header names column(s) {dup} twice; column names must be unique",
                                  str(path), 1)
            rows, lines = [], []
            for values in reader:
                if not values or (len(values) == 1 and not values[0].strip()):
                    continue  # blank line
                if len(values) != len(header):
                    raise FormatError(f"{len(values)} values for the {len(header)} columns of the header {header}"
                                      + ("" if kind == "tsv" else "; quote values that contain commas"),
                                      str(path), reader.line_num)
                rows.append(dict(zip(header, values)))
                lines.append(reader.line_num)
        except csv.Error as e:
            raise FormatError(f"not valid {kind.upper()}: {e}", str(path), reader.line_num) from None
    return header, rows, lines


def _columns_of(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def _read_json(path: Path, kind: str) -> tuple[list[str], list[dict[str, Any]], None]:
    with open_text(path, encoding="utf-8-sig") as f:
        text = f.read()
    if not text.strip():
        return [], [], None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"not valid JSON: {e.msg} (one object per line? name the file .jsonl)", str(path),
                          e.lineno) from None
    if isinstance(data, Mapping) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise FormatError("expected a list of objects (or an object whose \"data\" member is one), got "
                          f"{type(data).__name__}", str(path))
    for i, row in enumerate(data):
        if not isinstance(row, Mapping):
            raise FormatError(f"item {i} is a {type(row).__name__}, not an object of column values", str(path))
    rows = [dict(r) for r in data]
    return _columns_of(rows), rows, None


def _read_jsonl(path: Path, kind: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    rows, lines = [], []
    with open_text(path, encoding="utf-8-sig") as f:
        for lineno, row in json_lines(f, str(path)):
            rows.append(row)
            lines.append(lineno)
    return _columns_of(rows), rows, lines


def _import_datasets(what: str) -> Any:
    try:
        import datasets
    except ImportError as e:
        raise MissingDependencyError(
            f"{what} needs the 'datasets' package: pip install datasets (or pip install 'syntaxformer[hub]'); "
            "CSV, TSV, JSON and JSONL files need no extra package") from e
    return datasets


def load_dataset_table(name: str, config: str | None = None, split: str = "train") -> Table:
    """One split of a ``datasets`` folder (``save_to_disk``) or a hub data set as a :class:`Table`.

    Args:
        name: a folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``, or a hub name.
        config: the hub config name (hub data sets only).
        split: ``train``, ``dev`` (the data set's ``validation``, ``dev`` or ``valid``) or ``test``.

    Raises:
        MissingDependencyError: ``datasets`` is not installed.
        DataError: the data set cannot be loaded, lacks the split (the message lists its splits) or is empty.
    """
    folder = Path(name).is_dir()
    datasets = _import_datasets(f"reading the datasets folder {name}" if folder else f"the hub data set {name!r}")
    try:
        ds = datasets.load_from_disk(name) if folder else datasets.load_dataset(name, config)
    except Exception as e:  # offline, unknown name, not a saved data set ... : one clear line
        raise DataError(f"could not load {'the datasets folder' if folder else 'the hub data set'} {name!r}: "
                        f"{type(e).__name__}: {e}") from e
    if isinstance(ds, Mapping):  # a DatasetDict (a dict of splits)
        names = list(ds.keys())
        wanted = next((s for s in HUB_SPLITS.get(split, (split,)) if s in names), None)
        if wanted is None:
            raise DataError(f"{name} has the splits {names}, none of them {split!r} "
                            f"(looked for {list(HUB_SPLITS.get(split, (split,)))})")
        ds, source = ds[wanted], f"{name}[{wanted}]"
    else:  # one Dataset: it is every split asked for
        source = name
    rows = [dict(r) for r in ds]
    if not rows:
        raise DataError(f"{source} holds no rows")
    fp = getattr(ds, "_fingerprint", None) or hashlib.sha256(
        json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()
    return Table(list(ds.column_names), rows, source if folder else f"hub:{source}",
                 hashlib.sha256(f"datasets|{source}|{config}|{fp}".encode()).hexdigest())


def require_columns(table: Table, columns: Mapping[str, str | None], *, optional: tuple[str, ...] = ()) -> None:
    """Check that ``table`` has every column named in ``columns`` (role -> column name; ``None`` = not used).

    Args:
        table: the table.
        columns: e.g. ``{"text": "review", "label": "stars"}``; roles name the command-line option in messages
            (``--text-column``).
        optional: roles whose column may be missing (a test file without labels).

    Raises:
        DataError: a missing column; the message names the option, lists the columns present and suggests the
            closest one.
    """
    for role, column in columns.items():
        if column is None or role in optional or column in table.columns:
            continue
        close = difflib.get_close_matches(column, table.columns, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        flag = "--" + role.replace("_", "-") + "-column"
        raise DataError(f"{table.source} has no column {column!r} ({flag}); its columns are {table.columns}{hint}")
