"""Pushing an exported model folder to the Hugging Face hub (``syntaxformer export RUN OUT --push-to-hub REPO``):
:func:`push_export` uploads it in one commit; :func:`check_hub_push` (:mod:`syntaxformer.secrets`) says, before
any work, whether a push can happen.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import huggingface_hub
from huggingface_hub import CommitOperationAdd, CommitOperationDelete

from syntaxformer.errors import ConfigError, DataError
from syntaxformer.secrets import check_hub_push
from syntaxformer.sharing.syntax_pipeline import OPTIONS_FILE

__all__ = ["check_hub_push", "push_export"]

logger = logging.getLogger(__name__)


def push_export(
    folder: str | os.PathLike, repo_id: str, *, token: str | None = None, private: bool | None = None, api: Any = None
) -> str:
    """Push an exported folder (never a run folder) to the hub model repository ``repo_id`` in one commit: every
    file of the folder; files of an earlier push that the folder no longer has are deleted.

    Args:
        folder: a folder written by :func:`export_model`.
        repo_id: the hub repository (created if missing).
        token: the access token (default: :func:`check_hub_push`'s).
        private: create a new repository private.
        api: the ``huggingface_hub.HfApi`` to use (default: a new one with ``token``).

    Returns:
        the URL of the commit.

    Raises:
        ConfigError: the push cannot happen (:func:`check_hub_push`), or ``folder`` is not an exported folder.
        DataError: the hub refused or could not be reached (the folder stays as it is).
    """
    root = Path(folder)
    if not (root / OPTIONS_FILE).is_file() or (root / "run.json").exists():
        raise ConfigError(
            f"{folder} is not a folder written by `syntaxformer export` (no {OPTIONS_FILE}); export the run "
            "first: only self-contained folders are pushed"
        )
    token = check_hub_push(repo_id, token)
    api = api if api is not None else huggingface_hub.HfApi(token=token)  # looked up at call time: tests replace it
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    try:
        api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        stale = sorted(set(api.list_repo_files(repo_id, repo_type="model")) - {*files, ".gitattributes"})
        operations: list[Any] = [CommitOperationAdd(path_in_repo=f, path_or_fileobj=str(root / f)) for f in files]
        operations += [CommitOperationDelete(path_in_repo=f) for f in stale]
        info = api.create_commit(
            repo_id, operations=operations, commit_message="Upload model exported by syntaxformer", repo_type="model"
        )
    except Exception as e:  # noqa: BLE001 - the hub's and the network's errors: one line, the folder is kept
        first = (str(e).splitlines() or [""])[0]
        raise DataError(
            f"pushing {folder} to the hub repository {repo_id} failed ({type(e).__name__}: {first}); the folder "
            "is complete: push it again later"
        ) from None
    url = str(getattr(info, "commit_url", None) or f"https://huggingface.co/{repo_id}")
    logger.info("pushed %s (%d files) to %s", folder, len(files), url)
    return url
