"""Trust boundaries of a run folder: loading one imports no module its ``run.json`` names unless trusted, and no
command writes its output over the run it reads or the input it reads."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from syntaxformer.errors import ConfigError
from tests.conftest import tiny_sst2_run

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory, tiny_model) -> Path:
    """A tiny finished run of the plain encoder on SST-2 (nothing parsed)."""
    return Path(tiny_sst2_run(tmp_path_factory.mktemp("trust") / "run", tiny_model, "plain"))


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(run, out)
    return out


def _cli(args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), HF_HUB_OFFLINE="1", SYNTAXFORMER_NO_PROGRESS="1")
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "syntaxformer.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_trust_a_run_naming_another_module_is_refused_unless_trusted(plain_run, tmp_path):
    run = _copy(plain_run, tmp_path)
    record = json.loads((run / "run.json").read_text())
    record["system"]["module"] = "this"  # the standard library's Zen of Python: prints on import
    (run / "run.json").write_text(json.dumps(record))
    (tmp_path / "x.txt").write_text("A fine film.\n")
    done = _cli(["predict", str(run), "--input", "x.txt"], tmp_path)
    assert done.returncode == 1 and "Beautiful is better" not in done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "'this'" in done.stderr and "--trust-run-code" in done.stderr
    assert not (tmp_path / "predictions.jsonl").exists() and done.stdout == ""

    from syntaxformer.training.run import load_run

    if "this" not in sys.modules:  # in this process: refused before anything is imported
        with pytest.raises(ConfigError, match="'this'"):
            load_run(run)
        assert "this" not in sys.modules

    trusted = _cli(["predict", str(run), "--input", "x.txt", "--trust-run-code"], tmp_path)
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    assert "Beautiful is better" in trusted.stdout  # what loading such a run did before, now only when asked
    assert json.loads(trusted.stdout.strip().splitlines()[-1])["text"] == "A fine film."


def test_trust_built_in_parts_load_without_the_flag(plain_run):
    from syntaxformer.training.run import load_run

    config, task = load_run(plain_run)
    assert config.model_type == "plain" and task.name == "sst2"
