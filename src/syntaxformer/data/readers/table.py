"""A user's own data as a table of rows: CSV, TSV, JSON, JSONL and (for raw texts) plain text files, a ``datasets``
folder saved with ``save_to_disk``, or a Hugging Face hub data set; column checks whose errors list the columns
present.

The one reader of every file a user hands over, with the same rules for every format (docs/reliability.md, *Users'
own files: one reader*). Formats go by extension (:data:`TABLE_FORMATS`): ``.csv`` (standard quoting), ``.tsv`` /
``.tab`` (*no* quoting, as in the GLUE files), ``.json`` (a list of objects, or an object whose ``"data"`` member is
one), ``.jsonl`` / ``.ndjson``. CSV / TSV values are strings, JSON values keep their types.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np

from syntaxformer.data.examples import file_fingerprint
from syntaxformer.errors import DataError, FormatError
from syntaxformer.utils import DuplicateKeyError, json_lines, open_text, unique_keys

ExampleT = TypeVar("ExampleT")

__all__ = [
    "HUB_SPLITS",
    "TABLE_FORMATS",
    "TEXT_FORMATS",
    "DatasetRows",
    "Table",
    "TableExamples",
    "dataset_splits",
    "decoded_text",
    "load_dataset_table",
    "read_table",
    "require_columns",
    "split_lines",
    "text_value",
]

#: File extension -> format.
TABLE_FORMATS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
#: File extensions read as one text per line (with ``read_table(..., lines=True)``; ``-`` is standard input).
TEXT_FORMATS: tuple[str, ...] = (".txt",)
#: The largest CSV / TSV field read (the ``csv`` module's default, 131,072 characters, refuses valid files).
_FIELD_LIMIT = 2**31 - 1
#: Split names of this library -> the names a ``datasets`` DatasetDict may use for them, in order of preference.
HUB_SPLITS: dict[str, tuple[str, ...]] = {"train": ("train",), "dev": ("validation", "dev", "valid"), "test": ("test",)}


@dataclass
class Table:
    """Rows of named columns, in file order.

    Attributes:
        columns: the column names (a CSV / TSV header; for JSON, every key in order of first appearance).
        rows: one mapping per row (a column a JSON row lacks is absent from its mapping).
        source: where the rows came from (a path, ``hub:<name>[split]``).
        fingerprint: hex digest of the content (the file's bytes, or the data set's own fingerprint).
        lines: the 1-based line of each row in the file (for messages), or ``None`` when rows are not lines.
        label_names: the class names of a column that declares them (a ``datasets`` ``ClassLabel``), in class-id
            order; its rows hold the names.
    """

    columns: list[str]
    rows: Sequence[dict[str, Any]]
    source: str
    fingerprint: str
    lines: list[int] | None = None
    label_names: dict[str, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def where(self, index: int) -> str:
        """``"<source>:<line>"`` (or ``"<source> row <n>"``) of row ``index``, for messages."""
        if self.lines is not None:
            return f"{self.source}:{self.lines[index]}"
        return f"{self.source} row {index + 1}"


def read_table(
    path: str | os.PathLike, split: str = "train", *, lines: bool = False, allow_empty: bool = False
) -> Table:
    """Read a CSV / TSV / JSON / JSONL file, or a ``datasets`` folder (``split`` picks its part).

    Args:
        path: the file or folder.
        split: the part of a ``datasets`` folder.
        lines: also read ``.txt`` files and ``-`` (standard input) as one text per line (column ``text``).
        allow_empty: return a table of no rows instead of refusing an empty file.

    Raises:
        DataError: the file does not exist, or holds no rows.
        FormatError: an extension none of :data:`TABLE_FORMATS`, or a malformed file (naming the file and line).
    """
    numbers: list[int] | None  # line numbers of the rows, where the format has lines
    p, stdin = Path(path), lines and str(path) == "-"
    if stdin:
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        columns, rows, numbers = _text_rows(decoded_text(data, "<stdin>"))
    elif p.is_dir():
        return load_dataset_table(str(p), split=split)
    elif not p.is_file():
        raise DataError(f"data file {path} not found")
    elif lines and p.suffix.lower() in TEXT_FORMATS:
        with open_text(p, newline="") as f:
            columns, rows, numbers = _text_rows(f.read())
    else:
        kind = TABLE_FORMATS.get(p.suffix.lower())
        if kind is None:
            raise FormatError(
                f"cannot tell the format of {path} from its extension {p.suffix or '(none)'!r}; name it "
                f"with one of {', '.join(TABLE_FORMATS)}"
            )
        reader = {"csv": _read_delimited, "tsv": _read_delimited, "json": _read_json, "jsonl": _read_jsonl}[kind]
        columns, rows, numbers = reader(p, kind)
    source = "<stdin>" if stdin else str(p)
    if not rows and not allow_empty:
        raise DataError(f"{source} holds no rows" + (f" (only the header {columns})" if columns else " (empty file)"))
    fingerprint = hashlib.sha256(json.dumps(rows).encode()).hexdigest() if stdin else file_fingerprint([p])
    return Table(columns, rows, source, fingerprint, numbers)


def decoded_text(data: bytes | str, source: str) -> str:
    """Bytes read from a stream as UTF-8 text (a leading byte-order mark dropped), as :func:`open_text` reads files."""
    if isinstance(data, str):
        return data[1:] if data.startswith("\ufeff") else data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text ({e.reason}); save the file as UTF-8", source) from None


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, split at ``\\n`` and ``\\r\\n`` only (``str.splitlines`` also splits at U+2028, form
    feed, NEL and six more characters, which belong to a text); no line terminators kept."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _text_rows(text: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    """One row ``{"text": line}`` per non-blank line (surrounding whitespace removed), with its line number."""
    rows, numbers = [], []
    for lineno, line in enumerate(split_lines(text), 1):
        if line.strip():
            rows.append({"text": line.strip()})
            numbers.append(lineno)
    return ["text"], rows, numbers


def text_value(value: Any, where: str, column: str, *, required: bool = True, error: type | None = None) -> str | None:
    """The text in a field, checked: a string (non-blank when ``required``), else one clear error.

    Args:
        value: the field's value (``None`` = the row has no such field).
        where: the row, for the message (``"x.jsonl:3"``, ``"input 2"``).
        column: the column / key, for the message.
        required: whether a missing or blank text is an error (else ``None`` is returned for it).
        error: the error class raised for either problem (the Python API raises ``InputError``); default as below.

    Raises:
        FormatError: a list, object, number or boolean where a text belongs (naming row and column).
        DataError: a missing or blank text when ``required``.
    """
    if value is None or (isinstance(value, float) and value != value):
        if required:
            raise (error or DataError)(f"{where}: no text in column {column!r}; {column!r} must be a non-empty text")
        return None
    if not isinstance(value, str):
        kind = {list: "a list", tuple: "a list", dict: "an object", bool: "a boolean"}.get(
            type(value), "a number" if isinstance(value, (int, float)) else f"a {type(value).__name__}"
        )
        message = f"{column!r} holds {kind} ({_clip(value)}), not a text; give the text as a string"
        raise error(f"{where}: {message}") if error else FormatError(message, where)
    if required and not value.strip():
        raise (error or DataError)(
            f"{where}: no text in column {column!r} (blank); {column!r} must be a non-empty text"
        )
    return value


def _clip(value: Any, n: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _read_delimited(path: Path, kind: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    with open_text(path, encoding="utf-8-sig", newline="") as f:
        text = io.StringIO(f.read(), newline="\n")  # records end at \n (or \r\n) only
    if kind == "csv":
        reader = csv.reader(text)
    else:  # TSV: split on tabs only; quotes are text (GLUE / MRPC files have unbalanced ones)
        reader = csv.reader(text, delimiter="\t", quoting=csv.QUOTE_NONE)
    try:
        header = next(reader, None)
        if header is None:
            return [], [], []
        header = [h.strip() for h in header]
        if len(set(header)) != len(header):
            dup = sorted({h for h in header if header.count(h) > 1})
            raise FormatError(f"the header names column(s) {dup} twice; column names must be unique", str(path), 1)
        rows, lines = [], []
        for values in reader:
            if not values or (len(values) == 1 and not values[0].strip()):
                continue  # blank line
            if len(values) != len(header):
                raise FormatError(
                    f"{len(values)} values for the {len(header)} columns of the header {header}"
                    + ("" if kind == "tsv" else "; quote values that contain commas"),
                    str(path),
                    reader.line_num,
                )
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
        data = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as e:
        raise FormatError(
            f"not valid JSON: {e.msg} (one object per line? name the file .jsonl)", str(path), e.lineno
        ) from None
    except DuplicateKeyError as e:
        raise FormatError(str(e), str(path)) from None
    if isinstance(data, Mapping) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise FormatError(
            f'expected a list of objects (or an object whose "data" member is one), got {type(data).__name__}',
            str(path),
        )
    for i, row in enumerate(data):
        if not isinstance(row, Mapping):
            raise FormatError(f"item {i} is a {type(row).__name__}, not an object of column values", str(path))
    rows = [dict(r) for r in data]
    return _columns_of(rows), rows, None


def _read_jsonl(path: Path, kind: str) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    rows, lines = [], []
    with open_text(path, encoding="utf-8-sig", newline="") as f:
        for lineno, row in json_lines(split_lines(f.read()), str(path), unique=True):
            rows.append(row)
            lines.append(lineno)
    return _columns_of(rows), rows, lines


def load_dataset_table(name: str, config: str | None = None, split: str = "train") -> Table:
    """One split of a ``datasets`` folder (``save_to_disk``) or a hub data set as a :class:`Table`.

    Args:
        name: a folder written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``, or a hub name.
        config: the hub config name (hub data sets only).
        split: ``train``, ``dev`` (the data set's ``validation``, ``dev`` or ``valid``) or ``test``.

    Raises:
        DataError: the data set cannot be loaded, lacks the split (the message lists its splits) or is empty.
    """
    folder = Path(name).is_dir()
    ds = _load_dataset(name, config)
    if isinstance(ds, Mapping):  # a DatasetDict (a dict of splits)
        names = list(ds.keys())
        wanted = next((s for s in HUB_SPLITS.get(split, (split,)) if s in names), None)
        if wanted is None:
            raise DataError(
                f"{name} has the splits {names}, none of them {split!r} "
                f"(looked for {list(HUB_SPLITS.get(split, (split,)))})"
            )
        ds, source = ds[wanted], f"{name}[{wanted}]"
    else:  # one Dataset: it is every split asked for
        source = name
    if not len(ds):
        raise DataError(f"{source} holds no rows")
    import datasets

    classes = {c: list(f.names) for c, f in ds.features.items() if isinstance(f, datasets.ClassLabel)}
    fp = ds._fingerprint  # datasets fingerprints each data set by its content and history
    return Table(
        list(ds.column_names),
        DatasetRows(ds, classes),
        source if folder else f"hub:{source}",
        hashlib.sha256(f"datasets|{source}|{config}|{fp}".encode()).hexdigest(),
        label_names=classes,
    )


class TableExamples(Sequence[ExampleT]):
    """The examples of a split as a view of its table's rows, each made when it is read (the rows stay where the
    reader keeps them: Arrow for a ``datasets`` folder).

    Args:
        make: the example of the table row at a position.
        positions: the table rows of the split, in order.
    """

    def __init__(self, make: Callable[[int], ExampleT], positions: Sequence[int]):
        self._make = make
        self._positions = np.asarray(positions, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> ExampleT: ...

    @overload
    def __getitem__(self, index: slice) -> list[ExampleT]: ...

    def __getitem__(self, index: int | slice) -> ExampleT | list[ExampleT]:
        if isinstance(index, slice):
            return [self._make(int(i)) for i in self._positions[index]]
        return self._make(int(self._positions[index]))


class DatasetRows(Sequence):
    """The rows of a ``datasets.Dataset`` as a sequence of dicts, read from its Arrow table when asked, a block of
    rows at a time (nothing is copied into Python objects up front, so reading does not grow with the data set).
    A ``ClassLabel`` column holds its class names (``-1``, "no label", is ``None``); other columns their values
    with their types (``Value("float32")`` a float, ``Value("int64")`` an int)."""

    _BLOCK = 1024

    def __init__(self, dataset: Any, label_names: Mapping[str, list[str]] | None = None):
        self._ds = dataset
        self._names = dict(label_names or {})
        self._block: tuple[int, list[dict[str, Any]]] | None = None

    def __len__(self) -> int:
        return int(self._ds.num_rows)

    def _rows(self, batch: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
        columns = {
            c: [None if v is None or v < 0 else self._names[c][v] for v in values] if c in self._names else values
            for c, values in batch.items()
        }
        n = len(next(iter(columns.values()), []))
        return [{c: values[i] for c, values in columns.items()} for i in range(n)]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index) + (len(self) if int(index) < 0 else 0)
        if not 0 <= i < len(self):
            raise IndexError(index)
        start = i - i % self._BLOCK
        if self._block is None or self._block[0] != start:
            self._block = (start, self._rows(self._ds[start : start + self._BLOCK]))
        return self._block[1][i - start]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self._ds.iter(batch_size=self._BLOCK):
            yield from self._rows(batch)


def _load_dataset(name: str, config: str | None) -> Any:
    """A ``datasets`` folder (``load_from_disk``: memory-mapped, cheap) or a hub data set (``load_dataset``, kept
    for this process: the custom tasks ask for its splits several times)."""
    folder = Path(name).is_dir()
    if not folder and (name, config) in _HUB_LOADED:
        return _HUB_LOADED[(name, config)]
    import datasets

    try:
        ds = datasets.load_from_disk(name) if folder else datasets.load_dataset(name, config)
    except Exception as e:  # offline, unknown name, not a saved data set ... : one clear line
        raise DataError(
            f"could not load {'the datasets folder' if folder else 'the hub data set'} {name!r}: "
            f"{type(e).__name__}: {e}"
        ) from e
    if not folder:
        _HUB_LOADED[(name, config)] = ds
    return ds


#: Hub data sets loaded by this process: (name, config) -> the data set.
_HUB_LOADED: dict[tuple[str, str | None], Any] = {}


def dataset_splits(name: str, config: str | None = None) -> tuple[str, ...]:
    """The splits of this library (``train``, ``dev``, ``test``) that a ``datasets`` folder or hub data set holds.

    A ``DatasetDict`` holds those its split names give (:data:`HUB_SPLITS`: ``validation`` is ``dev``); one saved
    ``Dataset`` is ``train`` alone (:func:`load_dataset_table` still reads it for any split it is named for).

    Raises:
        DataError: as :func:`load_dataset_table`.
    """
    ds = _load_dataset(name, config)
    if not isinstance(ds, Mapping):
        return ("train",)
    names = set(ds.keys())
    return tuple(split for split, aliases in HUB_SPLITS.items() if names & set(aliases))


def require_columns(table: Table, columns: Mapping[str, str | None], *, optional: tuple[str, ...] = ()) -> None:
    """Check that ``table`` has every column named in ``columns`` (role -> column name; ``None`` = not used).

    Args:
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
