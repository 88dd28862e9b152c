"""Bad input on the surfaces a user touches directly: their own files (``train --train-file``, ``predict --input``),
runs that cannot be read, analyses of runs that cannot be compared, concurrent writers of one run folder, outputs
that would destroy data, full disks, pre-parsed files and the Python API. Each case ends in one clear
:class:`~syntaxformer.errors.SyntaxformerError` line or in the right result (docs/reliability.md lists them).

The runs are tiny custom-data runs (a random 2-layer BERT, 16 training rows, one step), trained once per module.
A full disk is the kernel's own ``ENOSPC``: the file a writer opens is ``/dev/full``.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from syntaxformer.cli import main
from syntaxformer.errors import ConfigError, DataError, FormatError, InputError
from tests.conftest import write_tiny_bert

SRC = str(Path(__import__("syntaxformer").__file__).resolve().parents[1])  # the package under test, for subprocesses
GOOD = [
    "a fine and moving film",
    "the best thing this year",
    "warm , funny and wise",
    "a real pleasure to watch",
    "bright and clever work",
    "simply wonderful acting",
    "it lifts the heart",
    "smart and sweet",
]
BAD = [
    "a dull and lifeless film",
    "the worst thing this year",
    "cold , flat and long",
    "a real chore to watch",
    "tired and clumsy work",
    "simply dreadful acting",
    "it sinks the heart",
    "dumb and sour",
]
FAST = [
    "--max-steps",
    "1",
    "--batch-size",
    "8",
    "--max-length",
    "32",
    "--seed",
    "1",
    "--no-progress",
    "--eval-batch-size",
    "16",
]


def _csv(path: Path, header, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


_RAW_ERR: list[str] = [""]  # the whole standard error of the last _cli call (log lines included)


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    _RAW_ERR[0] = err
    return (
        code,
        out,
        "\n".join(
            line
            for line in err.splitlines()
            if line.strip() and not line.startswith("[syntaxformer]") and "it/s]" not in line
        ),
    )


def _one_line(code: int, err: str, command: str, *needles: str) -> str:
    assert code == 1, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"syntaxformer {command}: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three tiny custom runs: ``a`` and ``b`` (the same training file, other dev files), ``reg`` (regression)."""
    root = tmp_path_factory.mktemp("user-runs")
    model = write_tiny_bert(root / "tiny")
    rows = [(t, "pos") for t in GOOD] + [(t, "neg") for t in BAD]
    _csv(root / "train.csv", ["text", "label"], rows)
    _csv(root / "dev.csv", ["text", "label"], rows[::2])
    _csv(root / "dev2.csv", ["text", "label"], [(t, "neg" if y == "pos" else "pos") for t, y in rows[1::2]])
    _csv(root / "reg.csv", ["text", "label"], [(t, str(0.5 + (y == "pos"))) for t, y in rows])
    env = {"SYNTAXFORMER_CACHE": str(root / "cache")}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for name, train, dev in (
            ("a", "train.csv", "dev.csv"),
            ("b", "train.csv", "dev2.csv"),
            ("reg", "reg.csv", "reg.csv"),
        ):
            assert (
                main(
                    [
                        "train",
                        "--train-file",
                        str(root / train),
                        "--validation-file",
                        str(root / dev),
                        "--model",
                        model,
                        "--output-dir",
                        str(root / name),
                        *FAST,
                    ]
                )
                == 0
            )
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"root": root, "model": model, **{k: str(root / k) for k in ("a", "b", "reg")}}


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


# -- 1. predict --input reads files as training does ------------------------------------------------------------
def _inputs(tmp_path: Path, name: str, data: bytes, **kw):
    from syntaxformer.inference import read_inputs

    path = tmp_path / name
    path.write_bytes(data)
    return read_inputs(path, **kw)


def test_predict_input_bom_is_not_text(tmp_path):
    assert _inputs(tmp_path, "x.txt", "\ufeffA fine film.\nDull.\n".encode()) == [
        {"text": "A fine film."},
        {"text": "Dull."},
    ]
    assert _inputs(tmp_path, "x.csv", "\ufefftext,id\nA fine film.,7\n".encode()) == [
        {"text": "A fine film.", "id": "7"}
    ]


def test_predict_input_tsv_quotes_are_text(tmp_path):
    assert _inputs(tmp_path, "x.tsv", b'text\n"Good" fun\n') == [{"text": '"Good" fun'}]


def test_predict_input_unquoted_comma_is_refused(tmp_path):
    with pytest.raises(FormatError, match=r"x.csv:2: 2 values for the 1 columns.*quote values"):
        _inputs(tmp_path, "x.csv", b"text\nGood, fun\n")


@pytest.mark.parametrize("char", ["\u2028", "\x0c", "\x85", "\x1e", "\r"])
def test_predict_input_lines_end_at_newline_only(tmp_path, char):
    text = f"Dull{char}stuff."
    assert _inputs(tmp_path, "x.txt", f"{text}\nFine.\r\n".encode()) == [{"text": text}, {"text": "Fine."}]
    assert _inputs(tmp_path, "x.jsonl", (json.dumps({"text": text}, ensure_ascii=False) + "\n").encode()) == [
        {"text": text}
    ]


@pytest.mark.parametrize("value", [["a", "b"], {"a": 1}, 5, True])
def test_predict_input_text_field_must_be_a_string(tmp_path, value):
    with pytest.raises(FormatError, match=r"x.jsonl:1: 'text' holds .* not a text"):
        _inputs(tmp_path, "x.jsonl", (json.dumps({"text": value}) + "\n").encode())


def test_predict_input_duplicated_header_is_refused(tmp_path):
    with pytest.raises(FormatError, match=r"x.csv:1: the header names column\(s\) \['text'\] twice"):
        _inputs(tmp_path, "x.csv", b"text,text\na,b\n")


@pytest.mark.parametrize("name", ["x.jsonl", "x.json"])
def test_predict_input_duplicated_json_key_is_refused(tmp_path, name):
    row = '{"text": "kept?", "text": "or this?"}'
    with pytest.raises(FormatError, match=rf"{name}(:1)?: the key 'text' appears twice"):
        _inputs(tmp_path, name, (row if name.endswith("l") else f"[{row}]").encode())


def test_predict_input_ragged_row_is_one_clear_error(tmp_path):
    with pytest.raises(FormatError, match=r"x.csv:3: 4 values for the 2 columns"):
        _inputs(tmp_path, "x.csv", b"text,id\na,1\nb,2,3,4\n")


def test_predict_input_cli_reads_as_train_does(runs, tmp_path, capsys):
    """End to end: a .txt with a BOM and a U+2028 through `predict --input`, and a list as a JSONL text."""
    (tmp_path / "in.txt").write_bytes("\ufeffA fine\u2028film.\nDull.\n".encode())
    code, out, err = _cli(["predict", runs["a"], "--input", str(tmp_path / "in.txt")], capsys)
    assert code == 0, err
    assert out.count("\n") == len(out.splitlines()) == 2  # U+2028 is written escaped: one record per line
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["A fine\u2028film.", "Dull."]
    (tmp_path / "in.jsonl").write_text(json.dumps({"text": ["a", "b"]}) + "\n")
    _one_line(
        *_cli(["predict", runs["a"], "--input", str(tmp_path / "in.jsonl")], capsys)[::2],
        "predict",
        "in.jsonl:1",
        "'text'",
    )


# -- 2. training labels and text cells ----------------------------------------------------------------------------
def _train_task(path: Path, **options):
    from syntaxformer.tasks import get_task

    task = get_task("custom", **options)
    return task, task.load_split("train", {"train_file": str(path), "dev_file": str(path)})


def test_training_nan_label_is_refused_not_a_class(tmp_path):
    path = _csv(tmp_path / "r.csv", ["text", "label"], [["a", "0.5"], ["b", "nan"], ["c", "1.5"]])
    with pytest.raises(DataError, match=r"r.csv:3: the label 'nan' is not a value"):
        _train_task(path)


def test_training_empty_label_is_refused_naming_the_row(tmp_path):
    path = _csv(tmp_path / "e.csv", ["text", "label"], [["a", "x"], ["b", " "], ["c", "y"]])
    with pytest.raises(DataError, match=r"e.csv:3: no label in column 'label'"):
        _train_task(path)


def test_training_stray_number_among_word_labels_is_refused(tmp_path):
    path = _csv(tmp_path / "m.csv", ["text", "label"], [["a", "pos"], ["b", "neg"], ["c", "3.5"], ["d", "pos"]])
    with pytest.raises(DataError, match=r"m.csv:4: the label '3.5' .* is a number among class names"):
        _train_task(path)


def test_training_list_in_the_text_column_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join(json.dumps(r) for r in ({"text": "fine", "label": "x"}, {"text": ["not", "a", "text"], "label": "y"}))
        + "\n"
    )
    with pytest.raises(FormatError, match=r"t.jsonl:2: 'text' holds a list"):
        _train_task(path)


def test_training_long_csv_cell_is_read(tmp_path):
    long = "word " * 40_000  # 200,000 characters: over the csv module's default field limit
    path = _csv(tmp_path / "l.csv", ["text", "label"], [[long, "x"], ["short", "y"]])
    task, data = _train_task(path)
    assert data.examples[0].text_a == long and task.label_list == ["x", "y"]


def test_training_same_column_as_text_and_label_is_refused(tmp_path):
    path = _csv(tmp_path / "s.csv", ["text", "label"], [["a", "x"], ["b", "y"]])
    with pytest.raises(
        ConfigError,
        match=r"text_column \(--text-column\) and label_column \(--label-column\) both "
        r"name the column 'label'",
    ):
        _train_task(path, text_column="label", label_column="label")


# -- 3. runs that cannot be read ---------------------------------------------------------------------------------
def _damaged_copy(run: str, tmp_path: Path, content: bytes | None) -> Path:
    copy = tmp_path / "damaged"
    shutil.copytree(run, copy)
    weights = copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000] if content is None else content)
    return copy


@pytest.mark.parametrize("content", [None, b"\x00garbage" * 100], ids=["truncated", "garbage"])
def test_damaged_weights_are_one_line(runs, tmp_path, capsys, content):
    run = _damaged_copy(runs["a"], tmp_path, content)
    (tmp_path / "in.txt").write_text("A fine film.\n")
    _one_line(
        *_cli(["predict", str(run), "--input", str(tmp_path / "in.txt")], capsys)[::2],
        "predict",
        str(run),
        "model.safetensors",
    )
    _one_line(
        *_cli(["show", "A fine film.", "--model", str(run), "-o", str(tmp_path / "x.html")], capsys)[::2],
        "show",
        str(run),
        "model.safetensors",
    )
    _one_line(*_cli(["diagnose", str(run)], capsys)[::2], "diagnose", str(run), "model.safetensors")
    _one_line(
        *_cli(
            [
                "plot",
                "--kind",
                "attention",
                "--model",
                str(run),
                "--text",
                "A film.",
                "--output",
                str(tmp_path / "plots"),
            ],
            capsys,
        )[::2],
        "plot",
        str(run),
        "model.safetensors",
    )
    from syntaxformer.inference import Predictor

    with pytest.raises(DataError, match="model.safetensors is truncated or damaged"):
        Predictor.from_run(run)


def test_missing_weights_are_one_line(runs, tmp_path, capsys):
    run = _damaged_copy(runs["a"], tmp_path, b"")
    (run / "model.safetensors").unlink()
    (tmp_path / "in.txt").write_text("A fine film.\n")
    _one_line(
        *_cli(["predict", str(run), "--input", str(tmp_path / "in.txt")], capsys)[::2],
        "predict",
        str(run),
        "no model weights",
    )


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path, capsys):
    folder = tmp_path / "notrun"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    _one_line(
        *_cli(["show", "A film.", "--model", str(folder), "-o", str(tmp_path / "x.html")], capsys)[::2],
        "show",
        str(folder),
        "model_type",
    )
    _one_line(
        *_cli(["predict", str(folder), "--input", str(tmp_path / "none.txt")], capsys)[::2],
        "predict",
        str(folder),
        "not a run folder",
    )
    for argv in (
        ["diagnose", str(folder)],
        ["probe", str(folder)],
        [
            "plot",
            "--kind",
            "attention",
            "--model",
            str(folder),
            "--text",
            "A film.",
            "--output",
            str(tmp_path / "plots"),
        ],
    ):
        _one_line(*_cli(argv, capsys)[::2], argv[0], str(folder), "model_type")


def test_predict_max_length_beyond_positions_is_checked_before_the_input(runs, tmp_path, capsys):
    missing = tmp_path / "not-read.txt"  # never read: the model's limit is checked first
    _one_line(
        *_cli(["predict", runs["a"], "--input", str(missing), "--max-length", "1000"], capsys)[::2],
        "predict",
        "max_length=1000",
        "max_position_embeddings 128",
    )
    from syntaxformer.inference import Predictor

    with pytest.raises(ConfigError, match="max_length=1000 is longer than"):
        Predictor.from_run(runs["a"], changes={"max_length": 1000})
    with pytest.raises(ConfigError, match="max_length=1000 is longer than"):
        Predictor.from_pretrained(runs["model"], max_length=1000)
    _one_line(
        *_cli(["evaluate", runs["a"], "--max-length", "1000", "--file", str(missing)], capsys)[::2],
        "evaluate",
        "max_length=1000",
    )


# -- 4. comparing runs that cannot be compared -------------------------------------------------------------------
@pytest.mark.parametrize("command", ["significance", "analyze"])
def test_runs_on_other_dev_files_are_refused(runs, capsys, command):
    line = _one_line(*_cli([command, runs["a"], runs["b"]], capsys)[::2], command, runs["a"], runs["b"])
    assert "different dev examples" in line


@pytest.mark.parametrize("command", ["significance", "analyze"])
def test_runs_of_other_tasks_are_refused(runs, capsys, command):
    line = _one_line(*_cli([command, runs["a"], runs["reg"]], capsys)[::2], command, runs["a"], runs["reg"])
    assert "regression" in line and "different tasks" in line


def test_runs_of_the_same_dev_data_still_compare(runs, tmp_path, capsys):
    copy = tmp_path / "a2"
    shutil.copytree(runs["a"], copy)
    code, out, err = _cli(["significance", runs["a"], str(copy), "--resamples", "50"], capsys)
    assert code == 0, err
    assert "B − A +0.0000" in out


# -- 5. one writer per run folder --------------------------------------------------------------------------------
_HOLD = (
    "import sys, time; sys.path.insert(0, sys.argv[1]); from syntaxformer.training.lock import RunLock\n"
    "with RunLock(sys.argv[2]):\n    print('held', flush=True); time.sleep(120)\n"
)


def _train_into(runs, folder: Path) -> list[str]:
    return [
        "train",
        "--train-file",
        str(runs["root"] / "train.csv"),
        "--validation-file",
        str(runs["root"] / "dev.csv"),
        "--model",
        runs["model"],
        "--output-dir",
        str(folder),
        *FAST,
    ]


def test_second_writer_of_a_run_folder_is_refused_at_once(runs, tmp_path, capsys):
    folder = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, SRC, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        line = _one_line(*_cli(_train_into(runs, folder), capsys)[::2], "train", str(folder), f"process {holder.pid}")
        assert "being written by" in line
        assert sorted(p.name for p in folder.iterdir()) == [".syntaxformer.lock"]  # nothing else written
    finally:
        holder.kill()
        holder.wait()


def test_evaluate_into_a_folder_being_written_is_refused_at_once(runs, tmp_path, capsys):
    out = tmp_path / "scores"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, SRC, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        argv = ["evaluate", runs["a"], "--output-dir", str(out), "--no-progress"]
        line = _one_line(*_cli(argv, capsys)[::2], "evaluate", str(out), f"process {holder.pid}")
        assert "being written by" in line
        assert sorted(p.name for p in out.iterdir()) == [".syntaxformer.lock"]  # nothing written
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(
    ("command", "files"),
    [
        (["evaluate", "--split", "dev"], ["eval_dev.json"]),
        (["predict", "--split", "dev"], ["predictions_dev.tsv", "predictions_dev.jsonl"]),
    ],
)
def test_split_results_are_replaced_only_with_overwrite(runs, tmp_path, capsys, command, files):
    out = tmp_path / "out"
    argv = [command[0], runs["a"], *command[1:], "--output-dir", str(out), "--no-progress"]
    code, _, err = _cli(argv, capsys)
    assert code == 0, err

    def written() -> dict[str, object]:  # what the outputs say (an eval file also records its run time)
        return {
            n: json.loads((out / n).read_text())["scores"] if n.endswith(".json") else (out / n).read_bytes()
            for n in files
        }

    first = written()
    (out / files[0]).write_text("kept", encoding="utf-8")  # an earlier result the user may still need
    _one_line(*_cli(argv, capsys)[::2], command[0], str(out / files[0]), "--overwrite")
    assert (out / files[0]).read_text(encoding="utf-8") == "kept"
    code, _, err = _cli([*argv, "--overwrite"], capsys)
    assert code == 0, err
    assert written() == first  # the same model, data and outputs


def test_stale_lock_of_a_dead_process_is_taken_over(runs, tmp_path, capsys, caplog):
    folder = tmp_path / "run"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder.mkdir()
    (folder / ".syntaxformer.lock").write_text(json.dumps({"pid": dead.pid, "host": os.uname().nodename, "started": 0}))
    with caplog.at_level(logging.WARNING, logger="syntaxformer.training.lock"):
        code, _, err = _cli(_train_into(runs, folder), capsys)
    assert code == 0, err
    assert f"process {dead.pid}" in caplog.text and "taking over" in caplog.text
    assert (folder / "metrics.json").is_file() and not (folder / ".syntaxformer.lock").exists()


def test_run_lock_is_released_by_a_refused_run(tmp_path, capsys):
    """A run refused before it writes anything leaves no lock and no folder behind."""
    folder = tmp_path / "never"
    code, _, err = _cli(
        ["train", "--train-file", str(tmp_path / "missing.csv"), "--output-dir", str(folder), "--no-progress"], capsys
    )
    assert code == 1 and not folder.exists(), err


# -- 6. outputs never destroy data -------------------------------------------------------------------------------
def test_predict_output_equal_to_input_is_refused(runs, tmp_path, capsys):
    path = _csv(tmp_path / "in.csv", ["text"], [["A fine film."]])
    before = path.read_bytes()
    _one_line(
        *_cli(["predict", runs["a"], "--input", str(path), "--output", str(path)], capsys)[::2],
        "predict",
        "is the input file",
    )
    _one_line(
        *_cli(
            ["predict", runs["a"], "--input", str(path), "--output", str(tmp_path / "." / "in.csv"), "--overwrite"],
            capsys,
        )[::2],
        "predict",
        "is the input file",
    )
    assert path.read_bytes() == before


def test_predict_existing_output_needs_overwrite(runs, tmp_path, capsys):
    path = _csv(tmp_path / "in.csv", ["text"], [["A fine film."]])
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")
    _one_line(
        *_cli(["predict", runs["a"], "--input", str(path), "--output", str(out)], capsys)[::2],
        "predict",
        str(out),
        "--overwrite",
    )
    assert out.read_text() == "earlier results\n"
    code, _, err = _cli(["predict", runs["a"], "--input", str(path), "--output", str(out), "--overwrite"], capsys)
    assert code == 0, err
    assert json.loads(out.read_text().splitlines()[0])["text"] == "A fine film."


def test_annotate_output_equal_to_input_is_refused(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"words": ["Hi", "."], "heads": [-1, 0]}) + "\n")
    before = path.read_bytes()
    _one_line(
        *_cli(["annotate", str(path), "--format", "jsonl", "-o", str(path)], capsys)[::2],
        "annotate",
        "is the input file",
    )
    assert path.read_bytes() == before


# -- 7. full disks -----------------------------------------------------------------------------------------------
def _full_disk_mkstemp(monkeypatch):
    """Every atomic write's temporary file is /dev/full: the kernel answers its writes with ENOSPC."""
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, path = real(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), path

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux) for a real ENOSPC")
def test_predict_on_a_full_disk_is_one_line_and_keeps_the_old_output(runs, tmp_path, capsys, monkeypatch):
    path = _csv(tmp_path / "in.csv", ["text"], [["A fine film."]] * 50)
    out = tmp_path / "out.jsonl"
    out.write_text("earlier results\n")
    _full_disk_mkstemp(monkeypatch)
    _one_line(
        *_cli(["predict", runs["a"], "--input", str(path), "--output", str(out), "--overwrite"], capsys)[::2],
        "predict",
        str(out),
        "disk is full",
    )
    assert out.read_text() == "earlier results\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


_FULL_TRAIN = (
    "import resource, sys; sys.path.insert(0, sys.argv[1]); from syntaxformer.cli import main\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="RLIMIT_FSIZE: Linux")
def test_train_on_a_full_disk_is_one_line_and_no_finished_run(runs, tmp_path):
    """No room for the final weights (4 MB): the kernel refuses every write past 1 MB with EFBIG, which
    safetensors' own writer meets; one line, no finished run, no lock left behind."""
    folder = tmp_path / "run"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "SYNTAXFORMER_NO_PROGRESS": "1",
        "OMP_NUM_THREADS": "1",
        "SYNTAXFORMER_CACHE": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_TRAIN, SRC, *_train_into(runs, folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and not line.startswith("[syntaxformer]") and "it/s]" not in line
    ]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith(f"syntaxformer train: error: cannot write the run in {folder}: the disk is full")
    assert "File too large" in lines[0] or "FileTooLarge" in lines[0] or "os error 27" in lines[0]
    assert not (folder / "metrics.json").exists() and not (folder / ".syntaxformer.lock").exists()


def _cache_fills_up(monkeypatch):
    """Every parse-cache connection may not grow the database: SQLite's own SQLITE_FULL ("database or disk is
    full") on the first store."""
    from syntaxformer.data.annotators.cache import ParseCache

    real = ParseCache._connect

    def connect(self):
        conn = real(self)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return conn

    monkeypatch.setattr(ParseCache, "_connect", connect)


def test_a_full_cache_disk_never_fails_annotate(annotator, tmp_path, capsys, monkeypatch):
    _cache_fills_up(monkeypatch)
    lines = [f"The {n}th cat sat on the mat near the door of the old house." for n in range(40)]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")  # ~40 kB of parses: more than the free pages
    code, _, err = _cli(
        [
            "annotate",
            str(tmp_path / "in.txt"),
            "--format",
            "text",
            "-o",
            str(tmp_path / "o.jsonl"),
            "--cache",
            str(tmp_path / "c" / "parses.sqlite3"),
        ],
        capsys,
    )
    assert code == 0, err
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 40
    assert "cannot be written (database or disk is full); going on without it" in _RAW_ERR[0]


def test_an_unwritable_cache_is_bypassed_with_a_warning(annotator, tmp_path, capsys):
    (tmp_path / "a-file").write_text("not a folder")
    (tmp_path / "in.txt").write_text("The cat sat on the mat.\n")
    code, _, err = _cli(
        [
            "annotate",
            str(tmp_path / "in.txt"),
            "--format",
            "text",
            "-o",
            str(tmp_path / "o.jsonl"),
            "--cache",
            str(tmp_path / "a-file" / "parses.sqlite3"),
        ],
        capsys,
    )
    assert code == 0, err
    assert "cannot be written" in _RAW_ERR[0] and "going on without it" in _RAW_ERR[0]


# -- 8. pre-parsed input -----------------------------------------------------------------------------------------
def _preparsed(tmp_path: Path, records: list[dict]):
    from syntaxformer.data.annotators import PreparsedAnnotator

    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return PreparsedAnnotator(path)


def test_preparsed_words_that_are_substrings_are_refused(tmp_path):
    with pytest.raises(FormatError, match=r"p.jsonl: the words 'og ar' do not spell the text 'Dogs bark'"):
        _preparsed(tmp_path, [{"text": "Dogs bark", "words": ["og", "ar"], "heads": [-1, 0]}])


def test_preparsed_words_covering_part_of_the_text_are_refused(tmp_path):
    with pytest.raises(FormatError, match=r"do not spell the text 'Dogs bark loudly\.'"):
        _preparsed(tmp_path, [{"text": "Dogs bark loudly.", "words": ["Dogs", "bark"], "heads": [1, -1]}])
    conllu = tmp_path / "p.conllu"
    conllu.write_text(
        "# text = Dogs bark loudly.\n1\tDogs\t_\t_\t_\t_\t2\tnsubj\t_\t_\n2\tbark\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    )
    from syntaxformer.data.annotators import PreparsedAnnotator

    with pytest.raises(FormatError, match="do not spell the text"):
        PreparsedAnnotator(conllu)


def test_preparsed_jsonl_offsets_must_point_at_their_words(tmp_path):
    with pytest.raises(FormatError, match=r"offsets \[5, 9\] of word 0 'Dogs' point at 'bark'"):
        _preparsed(
            tmp_path, [{"text": "Dogs bark", "words": ["Dogs", "bark"], "heads": [1, -1], "offsets": [[5, 9], [0, 4]]}]
        )
    ok = _preparsed(
        tmp_path, [{"text": "Dogs  bark", "words": ["Dogs", "bark"], "heads": [1, -1], "offsets": [[0, 4], [6, 10]]}]
    )
    assert ok.annotate(["Dogs bark"])[0].sentences[0].offsets == [(0, 4), (5, 9)]


# -- 9. the Python API -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [None, 5, 2.5, b"bytes"], ids=["None", "int", "float", "bytes"])
def test_pipeline_non_text_input_is_an_input_error(runs, value):
    from transformers import pipeline

    import syntaxformer  # noqa: F401

    clf = pipeline("syntax-text-classification", model=runs["a"])
    with pytest.raises(InputError, match="takes a str or dict or a list of them"):
        clf(value)
    with pytest.raises(InputError, match="input 1"):
        clf(["fine", value])
    from syntaxformer.inference import Predictor

    with pytest.raises(InputError):
        Predictor.from_run(runs["a"]).predict(value)
    assert isinstance(clf("A fine film.")[0]["score"], float)
