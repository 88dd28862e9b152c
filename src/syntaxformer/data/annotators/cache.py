"""A persistent cache of parses, keyed by content + the annotator's :meth:`~.base.Annotator.cache_key` + mode.

One SQLite file (atomic transactions, readers across processes, batched look-ups), one row per parse with a SHA-256
checksum of its value; corruption is never used silently and a cache never makes a run fail (docs/reliability.md,
*Caches*).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from syntaxformer.errors import DataError
from syntaxformer.utils import disk_full

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["ParseCache", "default_cache_dir", "make_key"]

logger = logging.getLogger(__name__)

SCHEMA = 1  # bump when the stored value format changes: old entries then miss instead of being misread
_FILENAME = "parses.sqlite3"
_CHUNK = 500  # keys per "IN (...)" query, well below SQLite's variable limit
#: The one table: a parse per content key, with the parser that made it and the checksum of its value.
_CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS parses (key TEXT PRIMARY KEY, parser TEXT NOT NULL, value TEXT NOT NULL, "
    "checksum TEXT NOT NULL, created REAL NOT NULL)"
)
_BUSY_TIMEOUT = 60.0  # seconds a connection waits for another process's write to finish
_SALVAGE_WINDOW = 256  # rowids read at once when copying the intact rows out of a damaged file
_RAISE = object()


def _unwritable(error: Exception) -> bool:
    """Whether ``error`` says the cache cannot be written at all (the disk or quota is full, the folder is read-only,
    missing or a file): a state a repair cannot mend and that must not fail the run."""
    if disk_full(error):
        return True
    if isinstance(error, OSError):
        return True  # the lock file or the folder cannot be made (permission, read-only, a file in the way)
    text = str(error).lower()
    return "readonly" in text or "read-only" in text or "unable to open database file" in text


def _salvage(path: str) -> list[tuple]:
    """The rows of a damaged cache file that can still be read and pass their checksum.

    Reads by windows of rowids, so a damaged page loses the rows on it and the rest are kept; a file that is
    not a database gives nothing.
    """
    rows: dict[str, tuple] = {}
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=_BUSY_TIMEOUT)
    except sqlite3.Error:
        return []
    with contextlib.closing(conn), contextlib.suppress(sqlite3.Error):
        try:
            top = conn.execute("SELECT max(rowid) FROM parses").fetchone()[0] or 0
        except sqlite3.Error:  # the b-tree's right edge is damaged: bound the rowids by the file size
            top = os.path.getsize(path) // 16
        query = "SELECT key, parser, value, checksum, created FROM parses WHERE rowid >= ? AND rowid < ?"
        for start in range(0, top + 1, _SALVAGE_WINDOW):
            try:
                found = conn.execute(query, (start, start + _SALVAGE_WINDOW)).fetchall()
            except sqlite3.Error:  # a damaged page in this window: read its rows one by one
                found = []
                for rowid in range(start, start + _SALVAGE_WINDOW):
                    with contextlib.suppress(sqlite3.Error):
                        found += conn.execute(query, (rowid, rowid + 1)).fetchall()
            for row in found:
                key, value, checksum = row[0], row[2], row[3]
                if isinstance(key, str) and isinstance(value, str) and _checksum(key, value) == checksum:
                    rows[key] = row
    return list(rows.values())


def default_cache_dir() -> str:
    """``$SYNTAXFORMER_CACHE`` if set, else ``~/.cache/syntaxformer``."""
    return os.environ.get("SYNTAXFORMER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "syntaxformer")


def make_key(content: str | Sequence[str], annotator: str, mode: str) -> str:
    """Cache key of one parse: the SHA-256 hex digest of ``[schema, mode, annotator, content]``.

    Args:
        content: the text, or the list of pre-tokenized words.
        annotator: the annotator's :meth:`~syntaxformer.data.annotators.base.Annotator.cache_key`.
        mode: what was asked of the parser, e.g. ``"text"`` or ``"pretokenized"``.
    """
    payload = [SCHEMA, mode, annotator, content if isinstance(content, str) else list(content)]
    # surrogatepass: a lone surrogate (text decoded with errors="surrogateescape") still gets a key of its own
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def _checksum(key: str, value: str) -> str:
    # The key is part of the checksum, so a value copied onto another row is caught too.
    return hashlib.sha256((key + "\0" + value).encode("utf-8")).hexdigest()


class ParseCache:
    """SQLite-backed parse cache (see the module docstring for the design).

    Args:
        path: the database file, or a folder (then ``parses.sqlite3`` inside it); default
            :func:`default_cache_dir`.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        path = os.path.expanduser(os.fspath(path)) if path is not None else default_cache_dir()
        if os.path.isdir(path) or not os.path.splitext(path)[1]:
            path = os.path.join(path, _FILENAME)
        self.path = path
        self.recovered = 0  # how many times a corrupt file was replaced
        self.corrupt_rows = 0  # how many rows failed their checksum
        self._bypassed = False  # whether the cache could not be written (warned once)

    # -- connection ------------------------------------------------------------------------------------
    # Every operation opens its own connection under a shared lock on ``<path>.lock``, a repair takes it exclusively:
    # no connection is open while a repair moves files (renaming an open database is how SQLite files get corrupted).
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(_BUSY_TIMEOUT * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer, nor it them
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_CREATE_TABLE)
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        """Hold the cache's lock file (shared for an operation, exclusive for a repair), its folder made first."""
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        if fcntl is None:  # no advisory locks (Windows): operations still work, repairs are not serialised
            yield
            return
        fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _repair(self, error: Exception) -> None:
        """Under the exclusive lock: if the file is still unusable, copy its intact rows into a fresh database,
        move the damaged file aside as ``<name>.corrupt-<time>-<pid>`` and put the fresh one in its place."""
        with self._locked(exclusive=True):
            if self._healthy():  # another process repaired it while we waited for the lock
                return
            rows = _salvage(self.path)
            fresh = f"{self.path}.repair-{os.getpid()}"
            for suffix in ("", "-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(fresh + suffix)
            with contextlib.closing(sqlite3.connect(fresh)) as conn:
                # WAL from the start: a database that other processes open while it is still in rollback mode
                # must be switched by one of them, and SQLite answers "locked" at once, without waiting, to a
                # reader that wants to switch while another one holds the file.
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_CREATE_TABLE)
                conn.executemany("INSERT OR REPLACE INTO parses VALUES (?, ?, ?, ?, ?)", rows)
                conn.commit()
            moved = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            try:
                os.replace(self.path, moved)
            except FileNotFoundError:
                moved = "(already gone)"
            for suffix in ("-journal", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path + suffix)
            os.replace(fresh, self.path)
        self.recovered += 1
        logger.warning(
            "parse cache %s was unreadable (%s); kept its %d intact entries in a repaired cache and moved "
            "the damaged file to %s (lost entries will be parsed again)",
            self.path,
            error,
            len(rows),
            moved,
        )

    def _healthy(self) -> bool:
        """Whether the file opens and passes SQLite's quick check (a missing file counts as healthy)."""
        if not os.path.exists(self.path):
            return True
        try:
            with contextlib.closing(sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT)) as conn:
                ok = conn.execute("PRAGMA quick_check").fetchone()
                conn.execute("SELECT COUNT(*) FROM parses").fetchone()
        except sqlite3.DatabaseError:
            return False
        return ok is not None and ok[0] == "ok"

    def _run(self, fn, *args, default: Any = _RAISE):
        """Run ``fn(conn, *args)`` on a fresh connection under the shared lock; a corrupt database is repaired
        (once) and the operation retried. A database still locked after the busy timeout, or one that cannot be
        written, gives ``default`` with a warning when one is given.

        SQLite answers "locked" at once, without its busy timeout, where waiting could deadlock (e.g. two readers
        that both want to write in rollback mode): such answers are retried here until the same timeout."""
        deadline = time.monotonic() + _BUSY_TIMEOUT
        pause = 0.01
        repaired = False
        while True:
            try:
                with self._locked(exclusive=False), contextlib.closing(self._connect()) as conn:
                    return fn(conn, *args)
            except (OSError, sqlite3.OperationalError) as e:
                if _unwritable(e):  # a full disk, a read-only or missing folder: never repaired, never fatal
                    if default is _RAISE:
                        raise DataError(
                            f"parse cache {self.path} cannot be written ({e}); free some space, or give "
                            "another --cache / --no-cache"
                        ) from e
                    if not self._bypassed:
                        logger.warning(
                            "parse cache %s cannot be written (%s); going on without it (texts are parsed, not stored)",
                            self.path,
                            e,
                        )
                    self._bypassed = True
                    return default
                if isinstance(e, OSError):
                    raise
                if "locked" in str(e) or "busy" in str(e):
                    if time.monotonic() < deadline:
                        time.sleep(pause)
                        pause = min(2 * pause, 1.0)
                        continue
                    if default is _RAISE:
                        raise DataError(
                            f"parse cache {self.path} stayed locked by another process for "
                            f"{_BUSY_TIMEOUT:.0f} s; try again, or give another --cache"
                        ) from e
                    logger.warning(
                        "parse cache %s is locked by another process (%s); going on without it", self.path, e
                    )
                    return default
                if repaired:
                    raise DataError(
                        f"parse cache {self.path} cannot be used ({e}); check that its folder is "
                        "writable, or give another --cache / --no-cache"
                    ) from e
                self._repair(e)
                repaired = True
            except sqlite3.DatabaseError as e:
                if repaired:
                    raise DataError(
                        f"parse cache {self.path} is still unreadable after a repair ({e}); delete "
                        "it, or give another --cache / --no-cache"
                    ) from e
                self._repair(e)
                repaired = True

    # -- public API ------------------------------------------------------------------------------------
    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Values of the keys found (and intact); missing or corrupt keys are absent from the result."""
        keys = list(dict.fromkeys(keys))
        return self._run(self._get_many, keys, default={}) if keys else {}

    def _get_many(self, conn: sqlite3.Connection, keys: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        bad: list[str] = []
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, value, checksum in conn.execute(
                f"SELECT key, value, checksum FROM parses WHERE key IN ({marks})", chunk
            ):
                try:
                    if not isinstance(value, str) or _checksum(key, value) != checksum:
                        raise ValueError("checksum mismatch")  # caught just below: the entry is parsed again
                    data = json.loads(value)
                    if not isinstance(data, dict):
                        raise ValueError("value is not a JSON object")  # caught just below, as above
                except (ValueError, TypeError, UnicodeError) as e:
                    logger.warning(
                        "parse cache %s: entry %s is corrupt (%s); it will be parsed again", self.path, key[:12], e
                    )
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
        self._run(self._put_many, rows, default=None)

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
        """Nothing to release: every operation opens and closes its own connection (kept for ``with``)."""

    def __enter__(self) -> ParseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParseCache({self.path!r})"

    # pickling (e.g. for multiprocessing) carries only the path; the connection is reopened where it is used
    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "recovered": self.recovered, "corrupt_rows": self.corrupt_rows, "_bypassed": False}
