"""One writer per run folder: ``with RunLock(folder):`` holds the advisory lock file ``<folder>/.syntaxformer.lock``
while ``train`` writes the folder; a second writer gets a DataError at once, naming the owner (docs/reliability.md,
"Run folders: one writer": a killed run's lock is taken over; POSIX ``flock``, elsewhere an exclusive file)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

from syntaxformer.errors import DataError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "RunLock", "lock_owner", "run_lock"]

logger = logging.getLogger(__name__)

#: The lock file inside a run folder.
LOCK_FILE = ".syntaxformer.lock"


def lock_owner(folder: str | os.PathLike) -> dict[str, Any] | None:
    """What the lock file of ``folder`` says about its owner (``pid``, ``host``, ``started``), or ``None``."""
    try:
        record = json.loads((Path(folder) / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _alive(pid: Any, host: Any) -> bool:
    """Whether process ``pid`` runs (on this host; a lock of another host counts as held)."""
    if host not in (None, socket.gethostname()):
        return True
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's process
        return True
    except OSError:  # ProcessLookupError: no such process
        return False
    return True


def _describe(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "another process"
    started = owner.get("started")
    when = (
        time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else ""
    )
    return f"process {owner.get('pid')} on {owner.get('host')}{when}"


class RunLock:
    """The advisory lock of one run folder (a context manager; module docstring); ``folder`` is created if missing and
    removed again on release if the lock file was all it held. Raises DataError: (on entering) another live process
    holds the lock; the folder cannot be written."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None
        self._created = False

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, or refuse at once (:class:`~syntaxformer.errors.DataError`)."""
        try:
            self._created = not self.folder.exists()
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DataError(f"cannot write the run folder {self.folder}: {e.strerror or e}") from e
        previous = lock_owner(self.folder)
        fd = self._flock() if fcntl is not None else self._exclusive()
        if previous and previous.get("pid") != os.getpid():
            logger.warning(
                "%s: taking over the lock left by %s, which no longer runs", self.folder, _describe(previous)
            )
        record = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        try:
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps(record) + "\n").encode())
        except OSError as e:
            os.close(fd)
            raise DataError(f"cannot write the lock file {self.path}: {e.strerror or e}") from e
        self._fd = fd

    def _flock(self) -> int:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise DataError(f"cannot write the lock file {self.path}: {e.strerror or e}") from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise self._held(lock_owner(self.folder)) from None
            try:  # the file may have been released and removed between open and flock: lock the current one
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)

    def _exclusive(self) -> int:  # pragma: no cover - without fcntl
        for _ in range(2):
            try:
                return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                owner = lock_owner(self.folder)
                if owner is not None and _alive(owner.get("pid"), owner.get("host")):
                    raise self._held(owner) from None
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
        raise DataError(f"cannot take the lock file {self.path}")

    def _held(self, owner: dict[str, Any] | None) -> DataError:
        return DataError(
            f"{self.folder} is being written by {_describe(owner)} (lock file {LOCK_FILE}); wait until that run "
            "ends, or choose another --output-dir"
        )

    def release(self) -> None:
        """Remove the lock file and let go (and remove the folder if it was created here and is empty)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = None
        if self._created:
            with contextlib.suppress(OSError):
                self.folder.rmdir()  # only if empty: a run that was refused before writing anything


def run_lock(folder: str | os.PathLike) -> contextlib.AbstractContextManager[Any]:
    """The :class:`RunLock` of ``folder`` in world process zero (``RANK``, as the distributed state may not be set up
    yet), which takes it for every process of a launch; a no-op in the others."""
    return RunLock(folder) if os.environ.get("RANK", "0") in ("", "0") else contextlib.nullcontext()
