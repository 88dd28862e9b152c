"""``syntaxformer annotate`` and ``syntaxformer evaluate-parser``, run in-process with the real pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from syntaxformer.cli import main
from syntaxformer.data.readers.conllu import read_conllu
from syntaxformer.data.sentence import Document, Sentence, read_jsonl
from tests.conftest import data_path

pytestmark = pytest.mark.slow

CONLLU = "\n".join(
    [
        "# newdoc id = d1",
        "# sent_id = s1",
        "# text = I don't know.",
        "1\tI\tI\tPRON\tPRP\tCase=Nom\t4\tnsubj\t4:nsubj\t_",
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
        "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_",
        "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_",
        "4\tknow\tknow\tVERB\tVB\t_\t0\troot\t0:root\tSpaceAfter=No",
        "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_",
        "",
        "",
    ]
)

MRG = """( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )
( (S (NP-SBJ (PRP It)) (VP (VBD purred) (NP-TMP (-NONE- *T*-1))) (. .)) )
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


def test_cli_annotate_text_to_jsonl(tmp_path, capsys):
    src = tmp_path / "passages.txt"
    src.write_text("The cat sat. It purred loudly!\n\nA dog\u00a0barked.\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["annotate", str(src), "--format", "text", "--output", str(out), "--batch-size", "2"]) == 0
    docs = list(read_jsonl(str(out)))
    assert len(docs) == 3 and all(isinstance(d, Document) for d in docs)
    assert [len(d) for d in docs] == [2, 0, 1]
    assert docs[0].doc_id == "passages.txt:1" and docs[0].sentences[1].sent_id == "passages.txt:1:2"
    assert docs[2].sentences[0].words == ["A", "dog", "barked", "."]
    for d in docs:
        for s in d:
            assert [d.text[a:b] for a, b in s.offsets] == s.words
    assert "wrote 3 documents (3 sentences" in capsys.readouterr().err
    # cached second run gives the same output
    out2 = tmp_path / "out2.jsonl"
    assert main(["annotate", str(src), "--output", str(out2)]) == 0
    assert out2.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


def test_cli_annotate_text_to_conllu(tmp_path):
    src = tmp_path / "passages.txt"
    src.write_text("The cat sat. It purred.\nDogs bark.\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert main(["annotate", str(src), "--output", str(out), "--no-cache"]) == 0
    sents = list(read_conllu(out))
    assert [s.text for s in sents] == ["The cat sat.", "It purred.", "Dogs bark."]
    assert sents[0].metadata["newdoc id"] == "passages.txt:1" and sents[2].metadata["newdoc id"] == "passages.txt:2"
    assert "newdoc id" not in sents[1].metadata
    assert sents[0].deprels[2] == "ROOT" and sents[0].sent_id == "passages.txt:1:1"


def test_cli_annotate_gold_conllu_through_jsonl_and_back(tmp_path):
    src = tmp_path / "gold.conllu"
    src.write_text(CONLLU, encoding="utf-8")
    mid, back = tmp_path / "gold.jsonl", tmp_path / "back.conllu"
    assert main(["annotate", str(src), "--output", str(mid)]) == 0
    (s,) = read_jsonl(str(mid))
    assert isinstance(s, Sentence) and s.words == ["I", "do", "n't", "know", "."] and s.source == "gold:conllu"
    assert main(["annotate", str(mid), "--format", "jsonl", "--output", str(back)]) == 0
    assert back.read_text(encoding="utf-8") == CONLLU


def test_cli_annotate_ptb(tmp_path):
    src = tmp_path / "tiny.mrg"
    src.write_text(MRG, encoding="utf-8")
    out = tmp_path / "tiny.jsonl"
    assert main(["annotate", str(src), "--output", str(out)]) == 0  # format from the .mrg extension
    sents = list(read_jsonl(str(out)))
    assert [s.words for s in sents] == [["The", "cat", "sat", "on", "the", "mat", "."], ["It", "purred", "."]]
    assert sents[0].tree is not None


@pytest.mark.parametrize(
    "args, message",
    [
        (["annotate", "{src}", "--output", "{tmp}/out.txt"], "use a .jsonl or .conllu"),
        (["annotate", "{tmp}/missing.txt", "--output", "{tmp}/out.jsonl"], "not found"),
        (["annotate", "{bad}", "--output", "{tmp}/out.jsonl"], "bad.conllu:1"),
        (["evaluate-parser", "--gold", "{tmp}/missing.conllu", "--json"], "not found"),
    ],
)
def test_cli_errors_are_one_clear_line(tmp_path, capsys, args, message):
    src = tmp_path / "in.txt"
    src.write_text("Hello.\n", encoding="utf-8")
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tonly three\tcolumns\n", encoding="utf-8")
    argv = [a.format(src=src, tmp=tmp_path, bad=bad) for a in args]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_evaluate_parser_on_ud_json(capsys):
    gold = data_path("ud_ewt", "en_ewt-ud-dev.conllu")
    assert main(["evaluate-parser", "--gold", str(gold), "--format", "conllu", "--limit", "40", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    assert result["n_sentences"] == 40 and result["n_tokens"] > 300
    assert 0.3 < result["uas"] < 0.8 and 0.3 < result["uas_no_punct"] < 0.8
    assert result["las"] is None and result["las_no_punct"] is None and "differ" in result["note"]
    assert result["parser"].startswith("en_core_web_sm") and result["gold"].endswith("en_ewt-ud-dev.conllu")


def test_cli_evaluate_parser_on_ptb_compares_labels(capsys):
    gold = data_path("ptb_sample", "treebank", "combined")
    assert main(["evaluate-parser", "--gold", str(gold), "--format", "ptb", "--limit", "25", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_sentences"] == 25 and result["uas"] > 0.7
    if result["gold_label_scheme"] == result["parser_label_scheme"] == "clearnlp":
        assert result["las"] is not None and result["las"] <= result["uas"]


def test_cli_evaluate_parser_help_explains_labels(capsys):
    with pytest.raises(SystemExit) as info:
        main(["evaluate-parser", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert "ClearNLP" in text and "LAS is null" in text and "--limit" in text


def test_cli_train_needs_a_task_and_takes_hf_spellings(tmp_path, capsys, monkeypatch):
    """No silent SST-2 default; Hugging Face flag spellings are aliases of ours; a misspelt option gets a hint."""
    import argparse

    from syntaxformer.commands.train import add_arguments, config_from_args

    assert main(["train", "--output-dir", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert "no task given" in err and "--task" in err and err.count("\n") == 1
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [
            "--task",
            "rte",
            "--max_seq_length",
            "64",
            "--per_device_train_batch_size",
            "8",
            "--learning_rate",
            "3e-5",
            "--num_train_epochs",
            "2",
            "--output_dir",
            "runs/y",
        ]
    )
    config = config_from_args(args)
    assert (
        config.max_length,
        config.per_device_train_batch_size,
        config.learning_rate,
        config.num_train_epochs,
        config.output_dir,
    ) == (64, 8, 3e-5, 2.0, "runs/y")
    assert main(["train", "--task", "rte", "--set", "learning_rat=1e-4", "--output-dir", str(tmp_path / "z")]) == 1
    assert "did you mean 'learning_rate'" in capsys.readouterr().err


@pytest.mark.parametrize(("switch", "bars"), [("1", False), ("", True)])
def test_no_progress_switch_silences_hugging_face_bars_too(switch, bars):
    """SYNTAXFORMER_NO_PROGRESS=1 also turns off transformers' and huggingface_hub's bars (weights loading and
    writing), whether they were imported before the command ran or not; unset, they stay on."""
    code = (
        "import transformers.utils.logging as hl, huggingface_hub.utils as hu\n"
        "from syntaxformer.cli import quiet_progress_if_asked\n"
        "quiet_progress_if_asked()\n"
        "print(hl.is_progress_bar_enabled(), not hu.are_progress_bars_disabled())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_DISABLE_PROGRESS_BARS", "SYNTAXFORMER_NO_PROGRESS")}
    env["SYNTAXFORMER_NO_PROGRESS"] = switch
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(bars), str(bars)]
