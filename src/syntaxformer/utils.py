"""Small shared helpers: atomic file writes, reading text files, the JSON writer, seeded subsampling, progress bars."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, TypeVar

import numpy as np

from syntaxformer.errors import ConfigError, DataError, FormatError

__all__ = [
    "DISK_FULL_ERRNOS",
    "DuplicateKeyError",
    "atomic_write",
    "check_not_inside",
    "check_output",
    "disk_full",
    "json_lines",
    "open_text",
    "progress",
    "readable_outputs",
    "subsample",
    "unique_keys",
    "write_json",
]

logger = logging.getLogger(__name__)

#: ``errno`` values of a write that failed for lack of room: no space, quota exceeded, file too large.
DISK_FULL_ERRNOS: frozenset[int] = frozenset(
    e for e in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG) if e is not None
)
#: How other libraries word those errors (safetensors' Rust ``io::Error``, torch's stream writer, SQLite).
_DISK_FULL_WORDS = (
    "no space left on device",
    "storagefull",
    "disk quota exceeded",
    "file too large",
    "database or disk is full",
    "os error 28",
    "error code: 28",
    "filetoolarge",
    "pytorchstreamwriter failed writing file",
)


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) is a write that failed because the disk is full: an
    ``OSError`` with an errno of :data:`DISK_FULL_ERRNOS`, or an error of another library (safetensors, torch's
    ``PytorchStreamWriter``, SQLite) whose message says so."""
    seen = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in DISK_FULL_ERRNOS:
            return True
        if any(w in str(e).lower() for w in _DISK_FULL_WORDS):
            return True
        e = e.__cause__ or e.__context__
    return False


def little_room(folder: str | os.PathLike, minimum: int = 1 << 20) -> bool:
    """Whether the file system of ``folder`` (or of its nearest existing parent) has less than ``minimum`` bytes
    free: how a write error whose message does not say why (torch's stream writer: ``unexpected pos``) is
    recognised as a full disk."""
    path = os.path.abspath(os.fspath(folder))
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        return shutil.disk_usage(path).free < minimum
    except OSError:
        return False


def check_output(
    path: str | os.PathLike,
    inputs: Iterable[str | os.PathLike | None] = (),
    *,
    overwrite: bool = True,
    option: str = "--output",
    folders: Iterable[str | os.PathLike | None] = (),
) -> None:
    """Before anything is computed: an output file never replaces an input nor lands in a folder the command
    reads (:func:`check_not_inside`), and replaces an existing file only with ``overwrite``.

    Args:
        path: the output file (``-`` = standard output: nothing to check).
        inputs: the files read (``-`` and ``None`` are skipped).
        option: the option that named ``path``, for messages.
        folders: the folders read (a run folder): ``path`` may not be one of them or inside one.

    Raises:
        ConfigError: ``path`` is one of ``inputs`` (the same file, by path or by inode), or in ``folders``.
        DataError: ``path`` exists and ``overwrite`` is false, or is a folder.
    """
    out = os.fspath(path)
    if out == "-":
        return
    check_not_inside(out, [*folders, *(i for i in inputs if i is not None and os.path.isdir(i))], option)
    for given in inputs:
        if given is None or os.fspath(given) == "-":
            continue
        same = os.path.abspath(out) == os.path.abspath(os.fspath(given))
        if not same and os.path.exists(out) and os.path.exists(given):
            with contextlib.suppress(OSError):
                same = os.path.samefile(out, given)
        if same:
            raise ConfigError(
                f"{option} {out} is the input file {os.fspath(given)}; writing it would destroy the "
                "input: give another output file"
            )
    if os.path.isdir(out):
        raise DataError(f"{option} {out} is a folder; give a file name")
    if os.path.exists(out) and not overwrite:
        raise DataError(f"{option} {out} already exists; choose another file or pass --overwrite to replace it")


T = TypeVar("T")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file in the same folder and rename it over ``path`` only on success, so an interrupted
    write never leaves a truncated ``path``. The file gets the permissions ``open(path, "w")`` would give it
    (:func:`_mode_of`), not the owner-only ``0600`` of a temporary file.

    Raises:
        DataError: ``path`` cannot be written (no permission, a file where its folder should be, disk full ...);
            a write inside the ``with`` block that finds the disk full (``ENOSPC``, ``EDQUOT``, ``EFBIG``) is one
            too; other errors raised by the caller's own code inside the block pass through unchanged.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    except OSError as e:
        raise DataError(f"cannot write {path}: {e.strerror or e}") from e
    with contextlib.suppress(OSError):  # mkstemp makes 0600 files; as open(path, "w") would: the old file's mode
        os.fchmod(fd, _mode_of(path))
    syncing = False
    try:
        try:
            with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
                yield f
                syncing = True
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # the flush, fsync or close; in the block only a write that found the disk full
            full = disk_full(e)
            if not (syncing or full):
                raise
            why = " (the disk is full); free some space or write elsewhere; nothing was replaced" if full else ""
            raise DataError(f"cannot write {path}: {e.strerror or e}{why}") from e
        try:
            os.replace(tmp, path)
        except OSError as e:
            raise DataError(f"cannot write {path}: {e.strerror or e}") from e
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def readable_outputs(folder: str | os.PathLike) -> None:
    """Give the files under ``folder`` that other libraries wrote owner-only (``0600``: e.g. model weights
    written through a temporary file) the mode of an ordinary new file (``0666`` less the umask)."""
    mode = 0o666 & ~_umask()
    for root, _, files in os.walk(os.fspath(folder)):
        for name in files:
            path = os.path.join(root, name)
            with contextlib.suppress(OSError):
                if os.stat(path).st_mode & 0o777 == 0o600 and mode != 0o600:
                    os.chmod(path, mode)


def _umask() -> int:
    """The process's umask: from ``/proc/self/status`` where there is one (no change to process state, so safe
    with threads), else by setting it and putting it back."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def open_text(path: str | os.PathLike, encoding: str = "utf-8-sig", **kwargs: Any) -> Iterator[IO[str]]:
    """``open(path)`` for reading text, with the errors a user causes turned into one clear line; the default
    encoding (``utf-8-sig``) reads a file saved with a byte-order mark exactly as the same file without it.

    Raises:
        DataError: ``path`` does not exist, is a folder or cannot be read (the message names it).
        FormatError: the file is not text in ``encoding`` (raised while reading inside the ``with`` block; a
            reader that yields inside the block is covered too).
    """
    name = os.fspath(path)
    try:
        f = open(path, encoding=encoding, **kwargs)  # noqa: SIM115 - closed by the `with f:` below, after errors are named
    except FileNotFoundError:
        raise DataError(f"file not found: {name}") from None
    except IsADirectoryError:
        raise DataError(f"{name} is a folder; expected a file") from None
    except OSError as e:
        raise DataError(f"cannot read {name}: {e.strerror or e}") from e
    with f:
        try:
            yield f
        except UnicodeDecodeError as e:
            raise FormatError(
                f"not {encoding.upper().replace('-SIG', '')} text ({e.reason}); save the file as UTF-8", name
            ) from e


class DuplicateKeyError(ValueError):
    """A JSON object that names a key twice (``json.loads`` would keep the last value without a word)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads`` that refuses an object naming a key twice (:class:`DuplicateKeyError`),
    as a CSV / TSV header may not name a column twice."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"the key {key!r} appears twice in one object; keys must be unique")
        out[key] = value
    return out


def json_lines(
    lines: Iterable[str], source: str, what: str = "one JSON object per line", *, unique: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of a JSON-lines file (the one loop every JSONL reader
    uses); ``source`` names the file in errors, ``what`` what each line should be, and ``unique`` refuses an object
    that names a key twice (:func:`unique_keys`).

    Raises:
        FormatError: a line that is not a JSON object (or names a key twice), naming ``source`` and the line.
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=unique_keys if unique else None)
        except json.JSONDecodeError as e:
            raise FormatError(f"invalid JSON: {e.msg} (column {e.colno})", source, lineno) from None
        except DuplicateKeyError as e:
            raise FormatError(str(e), source, lineno) from None
        if not isinstance(row, dict):
            raise FormatError(
                f"expected {what}, got a JSON {type(row).__name__} ({line.strip()[:40]!r})", source, lineno
            )
        yield lineno, row


def progress(iterable=None, total: int | None = None, desc: str | None = None, disable: bool | None = None, **kw):
    """A tqdm progress bar that hides itself on short runs and when output is not a terminal-friendly log."""
    from tqdm.auto import tqdm

    if disable is None:
        disable = os.environ.get("SYNTAXFORMER_NO_PROGRESS", "") not in ("", "0")
    return tqdm(iterable, total=total, desc=desc, disable=disable, mininterval=1.0, **kw)


def write_json(path: str | os.PathLike, data: Any, *, indent: int = 2) -> None:
    """Write ``data`` as JSON (UTF-8, non-ASCII kept as is), atomically; numpy scalars become numbers and any
    other non-JSON value its ``str``."""
    with atomic_write(path) as f:
        json.dump(data, f, indent=indent, ensure_ascii=False, default=_json_default)
        f.write("\n")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def subsample(items: Sequence[T], max_samples: int | None, seed: int) -> list[T]:
    """A seeded random subset of ``max_samples`` items, in their original order (all items if ``max_samples`` is
    ``None`` or not smaller than ``len(items)``); the kept positions depend only on ``(len(items), max_samples,
    seed)``.

    Raises:
        ConfigError: ``max_samples`` is smaller than 1.
    """
    n = len(items)
    if max_samples is None or max_samples >= n:
        return list(items)
    if max_samples < 1:
        raise ConfigError(f"max samples must be a positive number of examples, got {max_samples}")
    keep = np.sort(np.random.default_rng(seed).choice(n, size=max_samples, replace=False))
    return [items[i] for i in keep]


def check_not_inside(
    path: str | os.PathLike, folders: Iterable[str | os.PathLike | None], option: str = "--output"
) -> None:
    """An output never lands on what a command reads: ``path`` is refused when it is one of ``folders`` (the run
    or model folder a command reads, a folder of inputs) or lies inside one, whatever ``--overwrite`` says (links
    and ``..`` resolved; ``-`` = standard output and ``None`` folders are skipped).

    Raises:
        ConfigError: ``path`` is a read folder or inside one.
    """
    out = os.fspath(path)
    if out == "-":
        return
    real = os.path.realpath(out)
    for folder in folders:
        if folder is None or not os.path.isdir(folder):
            continue
        base = os.path.realpath(os.fspath(folder))
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            raise ConfigError(
                f"{option} {out} is {'the folder' if real == base else 'inside the folder'} {os.fspath(folder)}, "
                "which this command reads; writing there could destroy what it reads: give a path outside it"
            )


def _mode_of(path: str) -> int:
    """The permissions ``open(path, "w")`` leaves ``path`` with: those of the existing file, else ``0o666`` less
    the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()
