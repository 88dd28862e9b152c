"""Running documented shell code as a user would: in an empty folder, with ``syntaxformer`` and ``python`` either
this checkout's (``src/`` on ``PYTHONPATH``, this interpreter) or those of the installed wheel's environment
(``SYNTAXFORMER_WHEEL_ENV``, which ``make test`` builds: the wheel of this checkout installed, not editable, with its
``models`` extra; no ``PYTHONPATH``). Used by tests/test_wheel.py and tests/test_tutorial.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def fenced_blocks(page: Path, language: str = "bash") -> list[str]:
    """The code of each fenced block of ``language`` on ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


def wheel_env() -> Path:
    """The environment the wheel is installed in (``SYNTAXFORMER_WHEEL_ENV``); skips the test where it is not set
    (``make test`` sets it). Checks that it imports syntaxformer from its own site-packages, not from the checkout."""
    env = os.environ.get("SYNTAXFORMER_WHEEL_ENV")
    if not env:
        pytest.skip("no installed wheel: `make test` builds one (SYNTAXFORMER_WHEEL_ENV names its environment)")
    python = Path(env) / "bin" / "python"
    assert python.is_file(), f"SYNTAXFORMER_WHEEL_ENV={env} holds no bin/python"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import syntaxformer; print(syntaxformer.__file__)"],
        cwd="/",
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "site-packages" in where and REPO / "src" not in Path(where).resolve().parents, (
        f"the wheel's environment imports syntaxformer from {where}, not from an installed wheel"
    )
    return Path(env)


def run_shell(code: str, folder: Path, wheel: Path | None = None, **env_vars: str) -> subprocess.CompletedProcess:
    """Run ``code`` (bash, ``set -euo pipefail``) in ``folder`` with the wheel's environment ``wheel`` (its
    ``bin`` first on ``PATH``, no ``PYTHONPATH``) or, for ``None``, this checkout; offline, one torch thread, a parse
    cache and a transformers module cache of the folder's own."""
    # a user's shell: no PYTHONPATH, no shared data folder unless the code is given one
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SYNTAXFORMER_DATA")}
    env.update(
        HF_HUB_OFFLINE="1",
        SYNTAXFORMER_NO_PROGRESS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        SYNTAXFORMER_CACHE=str(folder / ".cache"),
        HF_MODULES_CACHE=str(folder / ".hf-modules"),
        **env_vars,
    )
    prelude = "set -euo pipefail\n"
    if wheel is None:
        env["PYTHONPATH"] = str(REPO / "src")
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        prelude += (
            f'python() {{ {shlex.quote(sys.executable)} "$@"; }}\n'
            f'syntaxformer() {{ {shlex.quote(sys.executable)} -m syntaxformer.cli "$@"; }}\n'
        )
    else:
        env["PATH"] = os.pathsep.join([str(wheel / "bin"), env.get("PATH", "")])
        env["VIRTUAL_ENV"] = str(wheel)
    return subprocess.run(
        ["bash", "-c", prelude + code], cwd=folder, env=env, capture_output=True, text=True, timeout=900
    )
