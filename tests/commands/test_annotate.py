"""``syntaxformer annotate - -o -``: standard input and standard output, in a pipe; written files are 0644."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from syntaxformer.cli import main
from syntaxformer.data.readers.conllu import parse_conllu

REPO = Path(__file__).resolve().parents[2]
CONLLU = "# sent_id = s1\n1\tCats\tcat\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n2\tpurr\tpurr\tVERB\tVBP\t_\t0\troot\t_\t_\n\n"


def test_annotate_conllu_stdin_to_jsonl_stdout(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(CONLLU))
    assert main(["annotate", "-", "--format", "conllu", "-o", "-"]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert record["words"] == ["Cats", "purr"] and record["heads"] == [1, -1]
    assert "to standard output" in captured.err  # the summary never mixes with the records


def test_annotate_jsonl_stdin_to_conllu_stdout_round_trips(monkeypatch, capsys):
    sentence = parse_conllu(CONLLU)[0]
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(sentence.to_dict()) + "\n"))
    assert main(["annotate", "-", "--format", "jsonl", "-o", "-", "--output-format", "conllu"]) == 0
    again = parse_conllu(capsys.readouterr().out)[0]
    assert (again.words, again.heads, again.deprels) == (sentence.words, sentence.heads, sentence.deprels)


def test_annotate_ptb_from_stdin_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("(S (NN x))"))
    assert main(["annotate", "-", "--format", "ptb", "-o", "-"]) == 1
    assert "not standard input" in capsys.readouterr().err


def test_annotate_text_pipe_in_a_subprocess(tmp_path):
    """`echo text | syntaxformer annotate - -o -` parses with the default spaCy pipeline; stdout holds only the
    records; a file output is 0644."""
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO / "src"),
        SYNTAXFORMER_CACHE=str(tmp_path / "cache"),
        HF_HUB_OFFLINE="1",
        SYNTAXFORMER_NO_PROGRESS="1",
    )
    done = subprocess.run(
        [sys.executable, "-m", "syntaxformer.cli", "annotate", "-", "-o", "-"],
        input="The cat sat on the mat.\nIt purred.\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    docs = [json.loads(line) for line in done.stdout.splitlines()]
    assert [d["sentences"][0]["words"][:2] for d in docs] == [["The", "cat"], ["It", "purred"]]
    assert docs[0]["doc_id"] == "stdin:1"
    out = tmp_path / "parsed.conllu"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.umask(0o022); from syntaxformer.cli import "
            f"main; sys.exit(main(['annotate', '-', '-o', {str(out)!r}]))",
        ],
        input="The cat sat.\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert parse_conllu(out.read_text())[0].words == ["The", "cat", "sat", "."]
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
