"""Plugins are isolated: an entry point (``syntaxformer.systems`` / ``.tasks`` / ``.annotators``) that cannot be
loaded (raises on import, calls ``sys.exit``, names a missing attribute or package, is not a SystemSpec) is reported
once as a warning naming its distribution and entry point, and blocks neither the built-ins nor the other plugins;
a name taken twice is reported with both sources, and the built-in keeps it. Each case is a real installed
distribution (a ``*.dist-info`` folder on ``sys.path``) used in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import data_path

REPO = Path(__file__).resolve().parents[1]

FILES = {
    "plug_raise.py": "raise RuntimeError('plugin broken on import')\n",
    "plug_exit.py": "import sys\nsys.exit(3)\n",
    "plug_dep.py": "import no_such_package_xyz\n",
    "plug_kbd.py": "raise KeyboardInterrupt\n",
    "plug_cfg.py": """
        from syntaxformer.modeling.configuration import PlainEncoderConfig
        from syntaxformer.modeling.modeling_plain import PlainEncoderForSequenceClassification, PlainEncoderModel

        class GoodConfig(PlainEncoderConfig):
            model_type = "good_plain"

        class GoodModel(PlainEncoderModel):
            config_class = GoodConfig

        class GoodForSequenceClassification(PlainEncoderForSequenceClassification):
            config_class = GoodConfig
        """,
    "plug_ok.py": """
        import dataclasses
        from syntaxformer.registry import BUILTIN_SYSTEMS

        SYSTEM = dataclasses.replace(
            BUILTIN_SYSTEMS["plain"], name="good", config="plug_cfg:GoodConfig", backbone="plug_cfg:GoodModel",
            models={"sequence_classification": "plug_cfg:GoodForSequenceClassification"}, model_type="good_plain",
            aliases=(), title="good", auto_map=False)
        TWIN = dataclasses.replace(SYSTEM, name="twin")  # the same model_type as "good"
        FAKE_SGNET = dataclasses.replace(SYSTEM, name="sgnet", model_type="fake_sgnet")
        NOT_A_SPEC = 5
        """,
}
DISTS = {
    "bad-plugins": """
        [syntaxformer.systems]
        raiser = plug_raise:SYSTEM
        exiter = plug_exit:SYSTEM
        nodep = plug_dep:SYSTEM
        noattr = plug_ok:MISSING
        wrongtype = plug_ok:NOT_A_SPEC
        sgnet = plug_ok:FAKE_SGNET
        twin = plug_ok:TWIN
        [syntaxformer.tasks]
        broken-task = plug_raise:Task
        [syntaxformer.annotators]
        broken-parser = plug_exit:make
        """,
    "good-plugins": "[syntaxformer.systems]\ngood = plug_ok:SYSTEM\n",
    "other-plugins": "[syntaxformer.systems]\ngood = plug_ok:TWIN\n",
}
BROKEN = ["raiser = plug_raise", "exiter = plug_exit", "nodep = plug_dep", "noattr = plug_ok", "wrongtype = plug_ok"]


def _site(root: Path, dists: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    for dist, entry_points in dists.items():
        info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points).lstrip(), encoding="utf-8")
    return root


def _python(args: list[str], site: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'src'}:{site}", HF_HUB_OFFLINE="1", SYNTAXFORMER_NO_PROGRESS="1")
    env.update(OMP_NUM_THREADS="1", SYNTAXFORMER_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)


_LOOKUPS = """
import json, logging
logging.basicConfig(level=logging.WARNING)
import syntaxformer
from transformers import AutoConfig
from syntaxformer import registry
from syntaxformer.errors import ConfigError
out = {"sgnet": type(AutoConfig.for_model("sgnet")).__name__, "good": type(AutoConfig.for_model("good_plain")).__name__,
       "spec": registry.system("sgnet").config, "types": registry.model_types(), "again": registry.model_types(),
       "task": registry.TASKS.get("sst2").__name__}
for name in ("raiser", "exiter", "wrongtype"):
    try:
        registry.system(name)
    except ConfigError as e:
        out[name] = str(e)
print(json.dumps(out))
"""


def test_registry_broken_plugins_are_reported_once_and_block_nothing(tmp_path):
    site = _site(tmp_path / "site", DISTS)
    done = _python(["-c", _LOOKUPS], site, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["sgnet"] == "SGNetConfig" and out["good"] == "GoodConfig" and out["task"] == "Sst2Task"
    assert out["spec"].endswith("SGNetConfig")  # the built-in keeps its name
    assert (
        out["types"]["sgnet"] == "sgnet" and out["types"]["good_plain"] == "good" and "fake_sgnet" not in out["types"]
    )
    for name in ("raiser", "exiter", "wrongtype"):  # asked for by name: one line naming the distribution
        assert f"bad-plugins: syntaxformer.systems {name} = " in out[name]
    assert "sys.exit(3)" in out["exiter"] and "RuntimeError: plugin broken" in out["raiser"]
    for entry in BROKEN:
        assert done.stderr.count(entry) == 1, (entry, done.stderr)
        assert f"bad-plugins: syntaxformer.systems {entry}" in done.stderr
    assert "No module named 'no_such_package_xyz'" in done.stderr and "no attribute 'MISSING'" in done.stderr
    # duplicates: both sources named, the built-in (or the first plugin) used
    assert "syntaxformer.systems sgnet = plug_ok:FAKE_SGNET is ignored" in done.stderr
    assert "good-plugins: syntaxformer.systems good = plug_ok:SYSTEM (used)" in done.stderr
    assert "other-plugins: syntaxformer.systems good = plug_ok:TWIN (ignored)" in done.stderr
    assert "both save model_type 'good_plain'" in done.stderr and "Traceback" not in done.stderr


def test_registry_a_plugin_interrupting_its_import_is_named(tmp_path):
    site = _site(tmp_path / "site", {"kbd-plugin": "[syntaxformer.systems]\nkbd = plug_kbd:SYSTEM\n"})
    code = "from syntaxformer import registry\nprint(registry.system('sgnet').name)\nregistry.system('kbd')\n"
    done = _python(["-c", code], site, tmp_path)
    assert done.stdout.strip() == "sgnet"  # a built-in by name loads no plugin
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr
    assert "interrupted while importing the system plugin kbd-plugin: syntaxformer.systems kbd = plug_kbd:SYSTEM" in (
        done.stderr
    )


def test_registry_train_of_a_built_in_system_beside_broken_plugins(tmp_path, tiny_model):
    site = _site(tmp_path / "site", DISTS)
    args = ["-m", "syntaxformer.cli", "train", "--task", "sst2", "--data-dir", str(data_path("glue", "SST-2")),
            "--model-type", "plain", "--model", tiny_model, "--output-dir", str(tmp_path / "run"),
            "--max-train-samples", "8", "--max-eval-samples", "8", "--max-steps", "1", "--batch-size", "8",
            "--max-length", "32", "--no-progress"]  # fmt: skip
    done = _python(args, site, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "run" / "metrics.json").is_file() and "Traceback" not in done.stderr
    assert done.stderr.count("exiter = plug_exit:SYSTEM") == 1


@pytest.mark.parametrize("group", ["tasks", "annotators"])
def test_registry_a_broken_task_or_parser_plugin_is_named_when_asked_for(tmp_path, group):
    site = _site(tmp_path / "site", DISTS)
    name, getter = {"tasks": ("broken-task", "TASKS"), "annotators": ("broken-parser", "ANNOTATORS")}[group]
    code = f"from syntaxformer import registry\ntry:\n    registry.{getter}.get({name!r})\nexcept Exception as e:\n    print(e)\n"
    done = _python(["-c", code], site, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"bad-plugins: syntaxformer.{group} {name} = " in done.stdout and "cannot be loaded" in done.stdout
