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
    config, task = load_run(plain_run)  # built-in parts load without being trusted
    assert config.model_type == "plain" and task.name == "sst2"

    trusted = _cli(["predict", str(run), "--input", "x.txt", "--trust-run-code"], tmp_path)
    assert trusted.returncode == 0, trusted.stderr[-2000:]
    assert "Beautiful is better" in trusted.stdout  # what loading such a run did before, now only when asked
    assert json.loads(trusted.stdout.strip().splitlines()[-1])["text"] == "A fine film."


# -- outputs never land on inputs -----------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["model.safetensors", "run.json", "new.jsonl", ".", "sub/new.jsonl"])
def test_trust_predict_never_writes_into_the_run_it_reads(plain_run, tmp_path, monkeypatch, capsys, target):
    from syntaxformer.cli import main

    run = _copy(plain_run, tmp_path)
    (tmp_path / "x.txt").write_text("A fine film.\n")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    monkeypatch.chdir(tmp_path)
    code = main(["predict", "run", "--input", "x.txt", "--output", f"run/{target}", "--overwrite"])
    err = capsys.readouterr().err
    assert code == 1 and "which this command reads" in err and err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    assert not (run / "sub").exists()


def test_trust_an_output_through_a_link_or_dots_is_still_inside(plain_run, tmp_path):
    from syntaxformer.utils import check_not_inside, check_output

    run = _copy(plain_run, tmp_path)
    (tmp_path / "link").symlink_to(run, target_is_directory=True)
    for out in (tmp_path / "link" / "model.safetensors", tmp_path / "other" / ".." / "run" / "config.json"):
        with pytest.raises(ConfigError, match="inside the folder"):
            check_output(out, overwrite=True, folders=[run])
    with pytest.raises(ConfigError, match="is the folder"):
        check_not_inside(tmp_path / "link", [run])
    check_not_inside(tmp_path / "runs-figures", [run])  # beside it, or a prefix of its name: fine
    check_not_inside(str(run) + "2", [run])
    check_output("-", folders=[run])


def test_trust_plot_and_annotate_refuse_an_output_in_what_they_read(plain_run, tmp_path, monkeypatch, capsys):
    from syntaxformer.cli import main

    run = _copy(plain_run, tmp_path)
    monkeypatch.chdir(tmp_path)
    for out in ("run", "run/figures"):
        assert main(["plot", "run", "--output", out, "--overwrite"]) == 1
        assert "which this command reads" in capsys.readouterr().err
    assert not (run / "figures").exists() and not list(run.glob("*.png"))
    gold = tmp_path / "wsj"
    gold.mkdir()
    (gold / "wsj_0001.mrg").write_text("( (S (NP (DT The) (NN film)) (VP (VBD ended)) (. .)) )\n")
    assert main(["annotate", "wsj", "--format", "ptb", "--output", "wsj/out.jsonl"]) == 1
    assert "which this command reads" in capsys.readouterr().err and not (gold / "out.jsonl").exists()
    (tmp_path / "t.txt").write_text("A film.\n")
    (tmp_path / "parses.sqlite3").write_bytes(b"")
    code = main(["annotate", "t.txt", "--cache", "parses.sqlite3", "--output", "parses.sqlite3", "--output-format", "jsonl",
                 "--overwrite"])  # fmt: skip
    assert code == 1 and "destroy the input" in capsys.readouterr().err


def test_trust_the_python_api_asks_for_trust_too(plain_run, tmp_path, capsys):
    from syntaxformer.inference import Predictor
    from syntaxformer.registry import trust_run_code

    run = _copy(plain_run, tmp_path)
    record = json.loads((run / "run.json").read_text())
    record["task"]["module"] = "tests.trusted_part"  # importable here, not imported yet
    (run / "run.json").write_text(json.dumps(record))
    assert "tests.trusted_part" not in sys.modules
    with pytest.raises(ConfigError, match="tests.trusted_part"):
        Predictor.from_run(run)
    assert "tests.trusted_part" not in sys.modules
    assert Predictor.from_run(run, trust_remote_code=True).predict(["A fine film."])[0]["label"]
    assert "tests.trusted_part" in sys.modules
    del sys.modules["tests.trusted_part"]
    with trust_run_code():
        Predictor.from_run(run)
    assert "tests.trusted_part" in sys.modules
