"""Small shared helpers (atomic file writes, progress bars)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import IO, Iterator


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file in the same folder and rename it over ``path`` only on success.

    An interrupted write never leaves a truncated ``path`` behind.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def progress(iterable=None, total: int | None = None, desc: str | None = None, disable: bool | None = None, **kw):
    """A tqdm progress bar that hides itself on short runs and when output is not a terminal-friendly log."""
    from tqdm.auto import tqdm

    if disable is None:
        disable = os.environ.get("SYNTAXFORMER_NO_PROGRESS", "") not in ("", "0")
    return tqdm(iterable, total=total, desc=desc, disable=disable, mininterval=1.0, **kw)
