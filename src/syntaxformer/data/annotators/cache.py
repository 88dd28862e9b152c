"""A persistent cache of parses, keyed by content + the annotator's :meth:`~.base.Annotator.cache_key` + mode.

Storage: one SQLite file (standard library), one row per parse, each row with a SHA-256 checksum of its value.
Why SQLite rather than one file per entry: a corpus has 10^5-10^7 texts, and as many small files waste inodes and
make look-ups slow; SQLite gives one file, transactions that are atomic (a crash mid-write leaves the previous
state), concurrent readers across processes, and batched look-ups (``WHERE key IN (...)``).

Corruption is never used silently:

* a row whose value does not match its checksum (or is not valid JSON) is reported as a miss and deleted, so the
  caller parses again and overwrites it;
* a file that is not a database, or is truncated / malformed (any :class:`sqlite3.DatabaseError` while using it),
  is moved aside as ``<name>.corrupt-<time>`` and replaced by an empty cache; the run goes on (with a warning)
  and re-parses what was lost.

The key is the SHA-256 of a JSON list ``[schema, mode, annotator key, content]``. The annotator key identifies the
parser by content (e.g. a hash of a spaCy pipeline's files), so a retrained parser (or a new storage schema)
simply misses. Values are JSON-serialisable dicts (``Document.to_dict()`` /
``Sentence.to_dict()``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["ParseCache", "default_cache_dir", "make_key"]

logger = logging.getLogger(__name__)

SCHEMA = 1  # bump when the stored value format changes: old entries then miss instead of being misread
_FILENAME = "parses.sqlite3"
_CHUNK = 500  # keys per "IN (...)" query, well below SQLite's variable limit


def default_cache_dir() -> str:
    """``$SYNTAXFORMER_CACHE`` if set, else ``~/.cache/syntaxformer``."""
    return os.environ.get("SYNTAXFORMER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "syntaxformer")


def make_key(content: str | Sequence[str], annotator: str, mode: str) -> str:
    """Cache key of one parse.

    Args:
        content: the text, or the list of pre-tokenized words.
        annotator: the annotator's :meth:`~syntaxformer.data.annotators.base.Annotator.cache_key` (its identity by
            content: anything that changes the output is in it).
        mode: what was asked of the parser, e.g. ``"text"`` or ``"pretokenized"``.

    Returns:
        A 64-character hex digest.
    """
    payload = [SCHEMA, mode, annotator, content if isinstance(content, str) else list(content)]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def _checksum(key: str, value: str) -> str:
    # The key is part of the checksum, so a value copied onto another row is caught too.
    return hashlib.sha256((key + "\0" + value).encode("utf-8")).hexdigest()


class ParseCache:
    """SQLite-backed parse cache (see the module docstring for the design).

    Args:
        path: the database file, or a folder (then ``parses.sqlite3`` inside it); default
            :func:`default_cache_dir`.

    Example::

        cache = ParseCache("/tmp/sf-cache")
        key = make_key("A text.", annotator.cache_key(), "text")
        cache.put_many({key: {"sentences": []}})
        cache.get_many([key])  # {key: {"sentences": []}}
    """

    def __init__(self, path: str | os.PathLike | None = None):
        path = os.path.expanduser(os.fspath(path)) if path is not None else default_cache_dir()
        if os.path.isdir(path) or not os.path.splitext(path)[1]:
            path = os.path.join(path, _FILENAME)
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self.recovered = 0  # how many times a corrupt file was replaced
        self.corrupt_rows = 0  # how many rows failed their checksum

    # -- connection ------------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60.0)
            try:
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS parses (key TEXT PRIMARY KEY, parser TEXT NOT NULL, "
                    "value TEXT NOT NULL, checksum TEXT NOT NULL, created REAL NOT NULL)")
                conn.commit()
            except sqlite3.DatabaseError:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _recover(self, error: Exception) -> None:
        """Move a corrupt database file aside and start an empty one."""
        self.close()
        moved = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        try:
            os.replace(self.path, moved)
        except FileNotFoundError:
            moved = "(already gone)"
        for suffix in ("-journal", "-wal", "-shm"):
            try:
                os.unlink(self.path + suffix)
            except FileNotFoundError:
                pass
        self.recovered += 1
        logger.warning("parse cache %s was unreadable (%s); moved it to %s and started an empty cache (lost entries "
                       "will be parsed again)", self.path, error, moved)

    def _run(self, fn, *args):
        """Run ``fn(conn, *args)``; on a corrupt database recover once and retry on the fresh file."""
        for attempt in (0, 1):
            try:
                return fn(self._connect(), *args)
            except sqlite3.DatabaseError as e:
                if isinstance(e, sqlite3.OperationalError) and "locked" in str(e):
                    raise
                if attempt == 1:
                    raise
                self._recover(e)
        raise AssertionError("unreachable")

    # -- public API ------------------------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Values of the keys found (and intact); missing or corrupt keys are absent from the result."""
        keys = list(dict.fromkeys(keys))
        return self._run(self._get_many, keys) if keys else {}

    def _get_many(self, conn: sqlite3.Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        bad: list[str] = []
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, value, checksum in conn.execute(
                    f"SELECT key, value, checksum FROM parses WHERE key IN ({marks})", chunk):
                try:
                    if not isinstance(value, str) or _checksum(key, value) != checksum:
                        raise ValueError("checksum mismatch")  # caught just below: the entry is parsed again
                    data = json.loads(value)
                    if not isinstance(data, dict):
                        raise ValueError("value is not a JSON object")  # caught just below, as above
                except (ValueError, TypeError, UnicodeError) as e:
                    logger.warning("parse cache %s: entry %s is corrupt (%s); it will be parsed again",
                                   self.path, key[:12], e)
                    bad.append(key)
                    continue
                out[key] = data
        if bad:
            self.corrupt_rows += len(bad)
            conn.executemany("DELETE FROM parses WHERE key = ?", [(k,) for k in bad])
            conn.commit()
        return out

    def get(self, key: str) -> dict[str, Any] | None:
        """The value of ``key``, or ``None`` if missing or corrupt."""
        return self.get_many([key]).get(key)

    def put_many(self, items: Mapping[str, dict[str, Any]], parser: str = "") -> None:
        """Store values (one transaction: all or nothing).

        Args:
            items: key -> JSON-serialisable dict.
            parser: the annotator's ``source``, stored for inspection and :meth:`clear` by parser.
        """
        if not items:
            return
        now = time.time()
        rows = []
        for key, value in items.items():
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            rows.append((key, parser, text, _checksum(key, text), now))
        self._run(self._put_many, rows)

    @staticmethod
    def _put_many(conn: sqlite3.Connection, rows: list[tuple]) -> None:
        with conn:  # commits on success, rolls back on error
            conn.executemany("INSERT OR REPLACE INTO parses VALUES (?, ?, ?, ?, ?)", rows)

    def put(self, key: str, value: dict[str, Any], parser: str = "") -> None:
        """Store one value."""
        self.put_many({key: value}, parser)

    def clear(self, parser: str | None = None) -> int:
        """Delete all entries (or those of one parser). Returns the number deleted."""
        def _clear(conn: sqlite3.Connection) -> int:
            with conn:
                if parser is None:
                    return conn.execute("DELETE FROM parses").rowcount
                return conn.execute("DELETE FROM parses WHERE parser = ?", (parser,)).rowcount

        return self._run(_clear)

    def __len__(self) -> int:
        return self._run(lambda conn: conn.execute("SELECT COUNT(*) FROM parses").fetchone()[0])

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def close(self) -> None:
        """Close the database connection (it reopens on next use)."""
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None

    def __enter__(self) -> "ParseCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParseCache({self.path!r})"

    # pickling (e.g. for multiprocessing) carries only the path; the connection is reopened where it is used
    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "recovered": self.recovered, "corrupt_rows": self.corrupt_rows}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._conn = None
