"""User errors end as one line: every command through ``syntaxformer.cli.main`` with a bad input, and the library
errors behind them (``SyntaxformerError`` subclasses that name the input)."""

from __future__ import annotations

import pytest

from syntaxformer.cli import main
from syntaxformer.errors import (
    AnnotatorError,
    ConfigError,
    DataError,
    FormatError,
    InputError,
    SyntaxformerError,
    TreeError,
    UnknownTaskError,
)

GOOD_CONLLU = "1\tHello\thello\tINTJ\tUH\t_\t0\troot\t_\t_\n2\t.\t.\tPUNCT\t.\t_\t1\tpunct\t_\t_\n\n"

# (argv with {tmp} / {good} / {latin1} / {textfile} placeholders, exit status, text the one line must contain)
CASES = [
    # annotate
    (["annotate", "{tmp}/missing.txt", "-o", "{tmp}/out.jsonl"], 1, "missing.txt"),
    (["annotate", "{good}", "-o", "{tmp}/out.txt"], 1, "--output"),
    (["annotate", "{latin1}", "--format", "jsonl", "-o", "{tmp}/out.conllu"], 1, "latin1.jsonl"),
    (["annotate", "{good}", "-o", "{textfile}/sub/out.jsonl"], 1, "cannot write"),
    (["annotate", "{good}", "-o", "{tmp}/out.jsonl", "--bogus"], 2, "--bogus"),
    (["annotate", "{good}", "--format", "xml", "-o", "{tmp}/out.jsonl"], 2, "--format"),
    # evaluate-parser
    (["evaluate-parser", "--gold", "{tmp}/missing.conllu"], 1, "missing.conllu"),
    (["evaluate-parser", "--gold", "{good}", "--limit", "0"], 1, "--limit"),
    (["evaluate-parser", "--gold", "{good}", "--limit", "many"], 2, "--limit"),
    (["evaluate-parser"], 2, "--gold"),
    # demo
    (["demo", "--text", "Hello.", "--parser", "conllu:{tmp}/missing.conllu"], 1, "missing.conllu"),
    (["demo", "--criterion", "nearest"], 2, "--criterion"),
    # train / evaluate / predict / compare (the run config)
    (["train", "--config", "{tmp}/missing.yaml"], 1, "missing.yaml"),
    (["train", "--config", "{textfile}"], 1, "notes.txt"),
    (["train", "--task", "sst2", "--set", "learning_rate"], 1, "learning_rate"),
    (["train", "--task", "sst2", "--set", "max_length=2"], 1, "max_length=2"),
    (["train", "--task", "no_such_task"], 1, "no_such_task"),
    (["train", "--epochs", "three"], 2, "--epochs"),
    (["evaluate", "{tmp}/no_model"], 1, "no_model"),
    (["evaluate", "{tmp}/no_model", "--split", "holdout"], 2, "--split"),
    (["predict", "{tmp}/no_model"], 1, "no_model"),
    (["compare", "--task", "sst2", "--systems", "baseline,telepathy"], 1, "telepathy"),
    (["compare", "--config", "{tmp}/missing.json"], 1, "missing.json"),
    # translate
    (["translate", "{tmp}/no_model", "--input", "{good}", "--output", "{tmp}/hyp.txt"], 1, "no_model"),
    (["translate", "{tmp}/no_model", "--input", "{good}", "--output", "{tmp}/hyp.txt", "--beams", "0"], 1, "--beams"),
    (["translate", "{tmp}/no_model", "--input", "{good}"], 2, "--output"),
    # no command / unknown command
    (["telepathy"], 2, "telepathy"),
]


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")
    good = tmp_path / "good.conllu"
    good.write_text(GOOD_CONLLU, encoding="utf-8")
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"words": ["café"], "heads": [-1]}\n'.encode("latin-1"))
    textfile = tmp_path / "notes.txt"
    textfile.write_text("just some notes\n", encoding="utf-8")
    return {"tmp": tmp_path, "good": good, "latin1": latin1, "textfile": textfile}


@pytest.mark.parametrize("argv, status, named", CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_cli_user_errors_are_one_line(files, capsys, argv, status, named):
    argv = [a.format(**files) for a in argv]
    assert main(argv) == status
    captured = capsys.readouterr()
    err = captured.err
    lines = [line for line in err.splitlines() if not line.startswith("[syntaxformer] ")]  # log lines
    command = argv[0] if argv[0] != "telepathy" else None
    prefix = f"syntaxformer {command}: error: " if command else "syntaxformer: error: "
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), err
    assert named.format(**files) in lines[0], err
    assert "Traceback" not in err and "Traceback" not in captured.out


def test_cli_real_bugs_keep_their_traceback(monkeypatch, files):
    """An exception that is not the user's (here a TypeError from inside a command) is not turned into a line."""
    import syntaxformer.commands.annotate as annotate

    def broken(args):
        raise TypeError("a bug")

    monkeypatch.setattr(annotate, "run", broken)
    with pytest.raises(TypeError, match="a bug"):
        main(["annotate", str(files["good"]), "-o", str(files["tmp"] / "out.jsonl")])


def test_cli_os_error_without_a_file_is_a_bug(monkeypatch, files):
    import syntaxformer.commands.annotate as annotate

    def broken(args):
        raise OSError("device not ready")

    monkeypatch.setattr(annotate, "run", broken)
    with pytest.raises(OSError, match="device not ready"):
        main(["annotate", str(files["good"]), "-o", str(files["tmp"] / "out.jsonl")])


def test_cli_undecodable_file_read_without_a_check_is_one_line_naming_it(monkeypatch, files, capsys):
    import syntaxformer.commands.annotate as annotate

    def reads_plainly(args):
        with open(files["latin1"], encoding="utf-8") as f:
            return len(f.read())

    monkeypatch.setattr(annotate, "run", reads_plainly)
    assert main(["annotate", str(files["good"]), "-o", str(files["tmp"] / "out.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("syntaxformer annotate: error: ") and str(files["latin1"]) in err and err.count("\n") == 1


def test_cli_os_error_naming_a_file_is_one_line(monkeypatch, files, capsys):
    import syntaxformer.commands.annotate as annotate

    def denied(args):
        raise PermissionError(13, "Permission denied", "/data/locked.conllu")

    monkeypatch.setattr(annotate, "run", denied)
    assert main(["annotate", str(files["good"]), "-o", str(files["tmp"] / "out.jsonl")]) == 1
    assert capsys.readouterr().err == "syntaxformer annotate: error: /data/locked.conllu: Permission denied\n"


# -- the library errors behind the lines ------------------------------------------------------------------------


def test_errors_are_the_builtin_kinds_too():
    for cls in (FormatError, TreeError, ConfigError, InputError, DataError, AnnotatorError):
        assert issubclass(cls, SyntaxformerError) and issubclass(cls, ValueError)
    assert issubclass(UnknownTaskError, KeyError)
    assert str(UnknownTaskError("unknown task 'x'")) == "unknown task 'x'"  # no KeyError quotes


def test_errors_readers_name_the_file(tmp_path):
    from syntaxformer.data.readers.conllu import read_conllu
    from syntaxformer.data.readers.snli import read_snli_tokenized
    from syntaxformer.data.sentence import read_jsonl

    with pytest.raises(DataError, match="missing.conllu"):
        list(read_conllu(str(tmp_path / "missing.conllu")))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes('{"words": ["caf\xe9"]}\n'.encode("latin-1"))
    with pytest.raises(FormatError, match="bad.jsonl.*not UTF-8"):
        list(read_jsonl(str(bad)))
    with pytest.raises(DataError, match=r"s1\.dev"):
        list(read_snli_tokenized(tmp_path, "dev"))


def test_errors_atomic_write_names_the_output(tmp_path):
    from syntaxformer.utils import atomic_write

    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match="cannot write .*file/out.json"), atomic_write(blocker / "out.json") as f:
        f.write("{}")
    with pytest.raises(KeyError), atomic_write(tmp_path / "ok.json") as f:  # the caller's own errors pass through
        raise KeyError("caller")
    assert not (tmp_path / "ok.json").exists()


def test_errors_library_options_name_the_option():
    from syntaxformer.data.noise import corrupt_heads
    from syntaxformer.masks.relations import group_id
    from syntaxformer.modeling import SGNetConfig
    from syntaxformer.training.config import RunConfig, parse_override
    from syntaxformer.utils import subsample

    with pytest.raises(ConfigError, match="fraction"):
        corrupt_heads([-1, 0], 1.5, rng=0)
    with pytest.raises(InputError, match="'cousin'"):
        group_id("cousin", 1, 15)
    with pytest.raises(ConfigError, match="max samples"):
        subsample([1, 2, 3], 0, seed=0)
    with pytest.raises(ConfigError, match="learning_rate"):
        parse_override("learning_rate")
    with pytest.raises(ConfigError, match="parser_noise=2"):
        RunConfig(task="sst2", parser_noise=2.0)
    with pytest.raises(Exception, match="alpha") as info:  # wrapped by huggingface_hub's strict validation
        SGNetConfig(alpha=3.0)
    assert isinstance(info.value.__cause__, ConfigError)


def test_errors_sentence_and_collate_inputs():
    from syntaxformer.data.collate import pad_arrays
    from syntaxformer.data.sentence import Sentence

    with pytest.raises(InputError, match="2 heads for 1 words"):
        Sentence(["a"], [-1, 0])
    with pytest.raises(TreeError):
        Sentence(["a", "b"], [1, 0])
    with pytest.raises(FormatError, match="'words' and 'heads'"):
        Sentence.from_dict({"words": ["a"]})
    with pytest.raises(InputError, match="empty list"):
        pad_arrays([])
