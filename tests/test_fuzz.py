"""The property / fuzz layer: every reader and every command, fed malformed, truncated, binary, huge and odd-Unicode
input, either succeeds correctly or stops with a :class:`~syntaxformer.errors.SyntaxformerError` naming the input
(the command line: exit 1 and one line) -- never a traceback, a hang or a silent change.

Inputs are derived from a small valid file per format: the file itself (must read, and match a property), truncated,
with random text inserted or a slice deleted, a byte-order mark or NUL bytes added, digits swapped for non-ASCII
digits, lines repeated (huge), one huge token, random bytes, random Unicode (lone surrogates included, which no UTF-8
decoder accepts). Examples are derandomised (the same inputs on every run) and bounded so that the whole module
runs in about a minute.

Counting outcomes (docs/reliability.md): ``SYNTAXFORMER_FUZZ_RECORD=out.json pytest tests/test_fuzz.py`` records
every example's outcome instead of failing, and writes the counts per reader / command to ``out.json``.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syntaxformer.errors import SyntaxformerError

RECORD = os.environ.get("SYNTAXFORMER_FUZZ_RECORD")
OUTCOMES: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
TIME_LIMIT = 20  # seconds per example before it counts as a hang

FUZZ = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int):
    def alarm(*_):
        raise _Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _record(name: str, outcome: str, detail: str) -> None:
    OUTCOMES[name][outcome] += 1
    if RECORD is None:
        assert outcome in ("ok", "error"), f"{name}: {outcome}: {detail}"


@pytest.fixture(scope="module", autouse=True)
def _write_counts():
    yield
    if RECORD is not None:
        Path(RECORD).write_text(json.dumps({k: dict(v) for k, v in sorted(OUTCOMES.items())}, indent=1) + "\n")


# -- inputs -------------------------------------------------------------------------------------------------
def _variants(sample: str) -> st.SearchStrategy[bytes]:
    """Bad (and good) file contents around a valid ``sample``."""
    raw = sample.encode("utf-8")
    odd_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=200)
    at = st.integers(0, len(raw))
    return st.one_of(
        st.just(raw),  # the valid file
        at.map(lambda k: raw[:k]),  # truncated
        st.tuples(at, odd_text).map(lambda a: raw[: a[0]] + a[1].encode("utf-8", "surrogatepass") + raw[a[0] :]),
        st.tuples(at, at).map(lambda a: raw[: min(a)] + raw[max(a) :]),  # a slice deleted
        st.just(b"\xef\xbb\xbf" + raw),  # byte-order mark
        at.map(lambda k: raw[:k] + b"\x00" + raw[k:]),  # NUL byte
        st.just(sample.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")).encode()),  # Arabic-Indic digits
        st.just(sample.encode("latin-1", "replace")),  # another encoding
        st.just(raw * 300),  # huge: repeated
        st.just(raw[: len(raw) // 2] + b"x" * 200_000 + raw[len(raw) // 2 :]),  # huge: one token
        st.binary(max_size=600),  # binary
        odd_text.map(lambda t: t.encode("utf-8", "surrogatepass")),  # odd Unicode
    )


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _run_reader(
    name: str, read: Callable[[Path], Any], check: Callable[[Any, bytes], None], path: Path, data: bytes
) -> None:
    try:
        with _time_limit(TIME_LIMIT):
            result = read(path)
    except _Hang as e:
        _record(name, "hang", str(e))
        return
    except SyntaxformerError as e:
        named = path.name in str(e)
        _record(name, "error" if named and "\n" not in str(e) else "unnamed error", str(e)[:300])
        return
    except RecursionError as e:
        _record(name, "traceback", f"RecursionError: {e}")
        return
    except Exception as e:  # noqa: BLE001 - any other exception is the failure this layer looks for
        _record(name, "traceback", f"{type(e).__name__}: {e}"[:300])
        return
    try:
        check(result, data)
    except AssertionError as e:
        _record(name, "silently wrong", str(e)[:300])
        return
    _record(name, "ok", "")


# -- readers ------------------------------------------------------------------------------------------------
_CONLLU = (
    "# sent_id = s1\n# text = The cat sat.\n1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n"
)
_PTB = "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )\n"
_SST = "(3 (2 (2 The) (2 film)) (4 (3 (2 is) (4 great)) (2 .)))\n"
_SNLI = (
    json.dumps(
        {
            "pairID": "p1",
            "gold_label": "neutral",
            "sentence1_parse": "(ROOT (S (NP (DT A) (NN man)) (VP (VBZ sleeps)) (. .)))",
            "sentence2_parse": "(ROOT (S (NP (DT A) (NN man)) (VP (VBZ rests)) (. .)))",
        }
    )
    + "\n"
)
_JSONL = (
    json.dumps(
        {
            "words": ["The", "cat", "sat", "."],
            "heads": [1, 2, -1, 2],
            "text": "The cat sat.",
            "offsets": [[0, 3], [4, 7], [8, 11], [11, 12]],
            "deprels": ["det", "nsubj", "ROOT", "punct"],
        }
    )
    + "\n"
    + json.dumps(
        {
            "text": "Hi there.",
            "sentences": [{"words": ["Hi", "there", "."], "heads": [-1, 0, 0], "offsets": [[0, 2], [3, 8], [8, 9]]}],
        }
    )
    + "\n"
)
_SQUAD = json.dumps(
    {
        "version": "v2.0",
        "data": [
            {
                "title": "T",
                "paragraphs": [
                    {
                        "context": "The cat sat.",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Who sat?",
                                "answers": [{"text": "The cat", "answer_start": 0}],
                                "is_impossible": False,
                            },
                            {"id": "q2", "question": "Why?", "answers": [], "is_impossible": True},
                        ],
                    }
                ],
            }
        ],
    }
)
_RACE = json.dumps(
    {
        "id": "1.txt",
        "article": "The cat sat.",
        "questions": ["Who sat?"],
        "options": [["the cat", "a dog", "nobody", "me"]],
        "answers": ["A"],
    }
)
_SGM = '<refset setid="x"><doc docid="d1" genre="news">\n<seg id="1">The cat sat.</seg>\n<seg id="2">Hi.</seg>\n</doc></refset>\n'
_TSV = "sentence\tlabel\nthe cat sat .\t1\na bad film .\t0\n"


def _conllu(path):
    from syntaxformer.data.readers.conllu import read_conllu

    return list(read_conllu(path))


def _check_conllu(sentences, data):
    from syntaxformer.data.readers.conllu import format_conllu, parse_conllu

    again = parse_conllu(format_conllu(sentences))
    assert [(s.words, s.heads) for s in again] == [(s.words, s.heads) for s in sentences], "CoNLL-U round trip"
    if data == _CONLLU.encode():
        assert [s.heads for s in sentences] == [[1, 2, -1, 2]]


def _ptb(path):
    from syntaxformer.data.readers.ptb import read_ptb

    return list(read_ptb(path))


def _check_trees(sentences, data):
    for s in sentences:
        assert s.tree is None or s.tree.leaves() == s.words, "tree leaves are the words"
        assert len(s.heads) == len(s.words)
    if data == _PTB.encode():
        assert [s.words for s in sentences] == [["The", "cat", "sat", "on", "the", "mat", "."]]


def _sst(path):
    from syntaxformer.data.readers.sst import read_sst

    return list(read_sst(path))


def _snli(path):
    from syntaxformer.data.readers.snli import read_snli_jsonl

    return list(read_snli_jsonl(path))


def _check_snli(pairs, data):
    from syntaxformer.data.readers.snli import SNLI_LABELS

    for p in pairs:
        assert p.label in SNLI_LABELS or p.label == "-", f"label {p.label!r}"
        _check_trees([p.premise, p.hypothesis], b"")


def _jsonl(path):
    from syntaxformer.data.sentence import read_jsonl

    return list(read_jsonl(str(path)))


def _check_jsonl(items, data):
    for item in items:
        assert type(item).from_dict(json.loads(json.dumps(item.to_dict()))) == item, "JSONL round trip"
        for s in getattr(item, "sentences", [item]):
            text = s.text if s.text is not None else getattr(item, "text", None)
            for a, b in s.offsets or []:
                assert 0 <= a <= b and (text is None or b <= len(text)), f"offsets ({a}, {b})"


def _squad(path):
    from syntaxformer.data.readers.squad import read_squad

    return read_squad(path)


def _race(path):
    from syntaxformer.data.readers.race import read_race_file

    return read_race_file(path, "high")


def _parallel(path):
    from syntaxformer.data.readers.parallel import read_parallel

    return read_parallel(path)


def _check_parallel(corpus, data):
    text = data.decode("utf-8-sig")
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []
    assert len(corpus.sources) == len(lines), "one sentence per line"


def _sgm(path):
    from syntaxformer.data.readers.parallel import read_sgm

    return read_sgm(path)


def _tsv(path):
    from syntaxformer.data.readers.glue import TsvLayout, read_glue_tsv

    return read_glue_tsv(TsvLayout("SST-2", {"text_a": "sentence", "label": "label"}, ("0", "1")), path)


def _check_labels(examples, data):
    labels = {e.label for e in examples}
    assert labels <= {0, 1} or labels == {None}, "labels are class ids (or none: a file without a label column)"


def _preparsed(path):
    from syntaxformer.data.annotators.preparsed import PreparsedAnnotator

    return PreparsedAnnotator(path, format="conllu").annotate(["The cat sat."])


def _check_preparsed(docs, data):
    for s in docs[0].sentences:
        for (a, b), w in zip(s.offsets, s.words):
            assert "The cat sat."[a:b].replace(" ", "") == w.replace(" ", ""), "offsets point at the words"


_NOTHING = lambda result, data: None

READERS: dict[str, tuple[str, str, Callable, Callable]] = {
    "conllu": ("x.conllu", _CONLLU, _conllu, _check_conllu),
    "ptb": ("x.mrg", _PTB, _ptb, _check_trees),
    "sst": ("x.txt", _SST, _sst, _check_trees),
    "snli-jsonl": ("x.jsonl", _SNLI, _snli, _check_snli),
    "annotations-jsonl": ("x.jsonl", _JSONL, _jsonl, _check_jsonl),
    "squad": ("x.json", _SQUAD, _squad, _NOTHING),
    "race": ("x.txt", _RACE, _race, _NOTHING),
    "parallel": ("x.en", "The cat sat.\nHi there.\n", _parallel, _check_parallel),
    "sgm": ("x.sgm", _SGM, _sgm, _NOTHING),
    "glue-tsv": ("x.tsv", _TSV, _tsv, _check_labels),
    "preparsed-conllu": ("p.conllu", _CONLLU, _preparsed, _check_preparsed),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_fuzz_readers(reader, tmp_path_factory):
    name, sample, read, check = READERS[reader]
    folder = tmp_path_factory.mktemp(reader)

    @FUZZ
    @given(data=_variants(sample))
    def run(data: bytes) -> None:
        _run_reader(reader, read, check, _write(folder, name, data), data)

    run()


# -- the command line ---------------------------------------------------------------------------------------
def _cli(name: str, argv: list[str], input_name: str | None) -> None:
    from syntaxformer.cli import main

    err, out = io.StringIO(), io.StringIO()
    try:
        with _time_limit(TIME_LIMIT * 3), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(argv)
    except _Hang as e:
        _record(name, "hang", str(e))
        return
    except SystemExit as e:  # argparse
        rc = e.code
    except BaseException as e:  # noqa: BLE001 - a traceback is the failure looked for
        _record(name, "traceback", f"{type(e).__name__}: {e}"[:300])
        return
    lines = [line for line in err.getvalue().splitlines() if line.strip() and not line.startswith("[syntaxformer]")]
    if rc == 0:
        _record(name, "ok", "")
    elif rc == 1 and len(lines) == 1 and lines[0].startswith(f"syntaxformer {argv[0]}: error: "):
        named = input_name is None or input_name in lines[0]
        _record(name, "error" if named else "unnamed error", lines[0][:300])
    else:
        _record(name, "traceback" if "Traceback" in err.getvalue() else f"exit {rc}", err.getvalue()[-300:])


@pytest.fixture
def _cli_env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


COMMAND_INPUTS = {  # command -> (file name, valid sample, argv built from the file's path and the folder)
    "annotate-conllu": (
        "in.conllu",
        _CONLLU,
        lambda p, d: ["annotate", str(p), "--format", "conllu", "-o", str(d / "o.jsonl"), "--overwrite"],
    ),
    "annotate-ptb": (
        "in.mrg",
        _PTB,
        lambda p, d: ["annotate", str(p), "--format", "ptb", "-o", str(d / "o.conllu"), "--overwrite"],
    ),
    "annotate-text": (
        "in.txt",
        "The cat sat on the mat.\nHi there.\n",
        lambda p, d: ["annotate", str(p), "--format", "text", "-o", str(d / "o.jsonl"), "--overwrite"],
    ),
    "evaluate-parser": (
        "gold.conllu",
        _CONLLU,
        lambda p, d: ["evaluate-parser", "--gold", str(p), "--parser", f"conllu:{p}"],
    ),
    "evaluate-parser-parses": (
        "parses.conllu",
        _CONLLU,
        lambda p, d: [
            "evaluate-parser",
            "--gold",
            str(_write(d, "gold.conllu", _CONLLU.encode())),
            "--parser",
            f"conllu:{p}",
        ],
    ),
    # an option no config has keeps every example from training: the config file is read, checked, refused
    "train-config": (
        "config.yaml",
        "task: sst2\nmax_length: 32\nseed: 1\n",
        lambda p, d: ["train", "--config", str(p), "--set", "no_such_option=1", "--output-dir", str(d / "r")],
    ),
    "compare-config": (
        "config.yaml",
        "task: sst2\nmax_length: 32\n",
        lambda p, d: ["compare", "--config", str(p), "--set", "no_such_option=1", "--output-dir", str(d / "c")],
    ),
    "evaluate-run": ("run/run.json", json.dumps({"task": "sst2"}), lambda p, d: ["evaluate", str(p.parent)]),
    "predict-run": ("run/run.json", json.dumps({"task": "sst2"}), lambda p, d: ["predict", str(p.parent)]),
    "translate-run": (
        "run/run.json",
        json.dumps({"task": "translation"}),
        lambda p, d: [
            "translate",
            str(p.parent),
            "--input",
            str(_write(d, "in.txt", b"Hello .\n")),
            "--output",
            str(d / "out.txt"),
            "--overwrite",
        ],
    ),
    "significance": (
        "a/metrics.json",
        json.dumps({"dev": {"accuracy": 0.5}}),
        lambda p, d: ["significance", str(p.parent), "--vs", str(p.parent)],
    ),
    "diagnose": ("m/config.json", json.dumps({"model_type": "bert"}), lambda p, d: ["diagnose", str(p.parent)]),
}
# a command whose input is a run / model folder names the folder, not the file inside it; a config error names the
# config file or the option that is wrong (reliability class 1, docs/reliability.md), so only the one-line form is required there
_NAMED = {k: (lambda p: p.parent.name) if "/" in v[0] else (lambda p: p.name) for k, v in COMMAND_INPUTS.items()}
_NAMED.update({"train-config": lambda p: None, "compare-config": lambda p: None})
_FEW = {"annotate-text": 10, "diagnose": 10, "translate-run": 10, "train-config": 15, "compare-config": 15}


@pytest.mark.parametrize("command", sorted(COMMAND_INPUTS))
def test_fuzz_commands(command, tmp_path_factory, _cli_env):
    name, sample, argv = COMMAND_INPUTS[command]
    folder = tmp_path_factory.mktemp(command)

    @settings(FUZZ, max_examples=_FEW.get(command, 25))
    @given(data=_variants(sample))
    def run(data: bytes) -> None:
        path = _write(folder, name, data)
        _cli(command, argv(path, folder), _NAMED[command](path))

    run()


@settings(FUZZ, max_examples=8)
@given(text=st.text(st.characters(codec=None, exclude_categories=()), min_size=1, max_size=80))
def test_fuzz_demo_text(text):
    """``demo --text`` with odd Unicode (argv decodes undecodable bytes to lone surrogates)."""
    _cli("demo-text", ["demo", "--text", text, "--model", _tiny_encoder()], None)


def _tiny_encoder() -> str:
    from syntaxformer.defaults import default_hf_model

    return default_hf_model()


# -- the files `predict --input` reads (the reader of every user file) -------------------------------------------
def _strip_bom(data: bytes) -> str:
    text = data.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


def _predict_inputs(path):
    from syntaxformer.inference import read_inputs

    return read_inputs(path)


def _check_inputs(records, data):
    for r in records:
        assert isinstance(r["text"], str) and r["text"].strip(), f"text {r['text']!r}"
        assert not r["text"].startswith("\ufeff"), "a byte-order mark is not text"


def _check_txt_inputs(records, data):
    """One record per non-blank line, lines ending at \\n or \\r\\n only (a reference without the reader's helpers)."""
    _check_inputs(records, data)
    import re

    lines = [line.strip() for line in re.split(r"\r?\n", _strip_bom(data)) if line.strip()]
    assert [r["text"] for r in records] == lines, "one text per line, split at \\n / \\r\\n only"


def _check_jsonl_inputs(records, data):
    _check_inputs(records, data)
    rows = [json.loads(line) for line in _strip_bom(data).split("\n") if line.strip()]
    assert [r["text"] for r in records] == [row["text"] for row in rows], "the text fields, as written"


def _check_tsv_inputs(records, data):
    _check_inputs(records, data)
    lines = [line[:-1] if line.endswith("\r") else line for line in _strip_bom(data).split("\n")]
    header = lines[0].split("\t")
    texts = [line.split("\t")[header.index("text")] for line in lines[1:] if line.strip()]
    assert [r["text"] for r in records] == texts, "TSV fields as written: tabs only, quotes are text"


_INPUT_TXT = "A fine film.\nDull\u2028and long.\r\n\nIt is\x0cfine.\n"
_INPUT_CSV = 'id,text\n1,"A fine, moving film."\n2,Dull.\n'
_INPUT_TSV = 'id\ttext\n1\t"Good" fun\n2\tDull.\n'
_INPUT_JSONL = (
    json.dumps({"id": 1, "text": "A fine film."})
    + "\n"
    + json.dumps({"id": 2, "text": "Dull\u2028stuff."}, ensure_ascii=False)
    + "\n"
)
INPUT_READERS: dict[str, tuple[str, str, Callable, Callable]] = {
    "predict-input-txt": ("x.txt", _INPUT_TXT, _predict_inputs, _check_txt_inputs),
    "predict-input-csv": ("x.csv", _INPUT_CSV, _predict_inputs, _check_inputs),
    "predict-input-tsv": ("x.tsv", _INPUT_TSV, _predict_inputs, _check_tsv_inputs),
    "predict-input-jsonl": ("x.jsonl", _INPUT_JSONL, _predict_inputs, _check_jsonl_inputs),
}


@pytest.mark.parametrize("reader", sorted(INPUT_READERS))
def test_fuzz_predict_inputs(reader, tmp_path_factory):
    """The files of `predict --input` (read as training reads its files): texts as written, or a named error."""
    name, sample, read, check = INPUT_READERS[reader]
    folder = tmp_path_factory.mktemp(reader)

    @FUZZ
    @given(data=_variants(sample))
    def run(data: bytes) -> None:
        _run_reader(reader, read, check, _write(folder, name, data), data)

    run()


# -- the pre-parsed matcher: a parse is accepted exactly when its words spell its text --------------------------
_WORD = st.text(st.sampled_from("abcdeXYZ.,'é"), min_size=1, max_size=6)


@settings(FUZZ, max_examples=60)
@given(
    words=st.lists(_WORD, min_size=1, max_size=6),
    gaps=st.lists(st.sampled_from([" ", "  ", "\t", "\n", ""]), min_size=6, max_size=6),
    change=st.sampled_from(["none", "drop", "substring", "split", "extra"]),
    k=st.integers(0, 5),
)
def test_fuzz_preparsed_matcher(tmp_path_factory, words, gaps, change, k):
    """JSONL parses of a text, true or changed: accepted (offsets pointing at the words) exactly when the words
    spell the text with whitespace ignored; else a FormatError naming the file."""
    from syntaxformer.data.annotators.preparsed import PreparsedAnnotator

    text = "".join(w + (gaps[i] or " ") for i, w in enumerate(words)).rstrip() or words[0]
    parsed = list(words)
    k %= len(parsed)
    if change == "drop" and len(parsed) > 1:
        del parsed[k]
    elif change == "substring" and len(parsed[k]) > 1:
        parsed[k] = parsed[k][1:]
    elif change == "split" and len(parsed[k]) > 1:
        parsed[k : k + 1] = [parsed[k][:1], parsed[k][1:]]
    elif change == "extra":
        parsed.append("zz")
    path = tmp_path_factory.mktemp("pp") / "p.jsonl"
    path.write_text(
        json.dumps({"text": text, "words": parsed, "heads": [-1] + [0] * (len(parsed) - 1)}) + "\n", encoding="utf-8"
    )
    spells = "".join(parsed) == "".join(text.split())
    try:
        with _time_limit(TIME_LIMIT):
            docs = PreparsedAnnotator(path).annotate([text])
    except SyntaxformerError as e:
        _record("preparsed-matcher", "error" if not spells and "p.jsonl" in str(e) else "wrong error", str(e)[:300])
        return
    except Exception as e:  # noqa: BLE001
        _record("preparsed-matcher", "traceback", f"{type(e).__name__}: {e}"[:300])
        return
    sentence = docs[0].sentences[0]
    if not spells:
        _record("preparsed-matcher", "silently wrong", f"accepted {parsed} for {text!r}")
    elif [text[a:b] for a, b in sentence.offsets] != parsed:
        _record("preparsed-matcher", "silently wrong", f"offsets {sentence.offsets} for {parsed} in {text!r}")
    else:
        _record("preparsed-matcher", "ok", "")


# -- the pipelines and the Predictor: any Python value ------------------------------------------------------------
@pytest.fixture(scope="module")
def _classifier(tmp_path_factory):
    """``syntax-text-classification`` on a tiny plain classifier (tokenized only: the input handling is tested)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    import syntaxformer  # noqa: F401
    from tests.conftest import write_tiny_bert

    folder = tmp_path_factory.mktemp("clf")
    write_tiny_bert(folder)
    AutoModelForSequenceClassification.from_pretrained(folder, num_labels=2).save_pretrained(folder)
    AutoTokenizer.from_pretrained(folder).save_pretrained(folder)
    return pipeline("syntax-text-classification", model=str(folder))


_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.binary(max_size=8),
        st.text(st.characters(codec=None, exclude_categories=()), max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.sampled_from(["text", "text_pair", "id", "x"]), inner, max_size=3),
    ),
    max_leaves=6,
)


@settings(FUZZ, max_examples=40)
@given(value=_VALUES)
def test_fuzz_pipeline_inputs(_classifier, value):
    """Whatever a caller passes, the pipeline answers (a label per text) or raises an InputError."""
    from syntaxformer.errors import InputError

    try:
        with _time_limit(TIME_LIMIT):
            out = _classifier(value)
    except InputError as e:
        _record("pipeline-inputs", "error" if "\n" not in str(e) else "unnamed error", str(e)[:300])
        return
    except Exception as e:  # noqa: BLE001
        _record("pipeline-inputs", "traceback", f"{type(e).__name__}: {e}"[:300])
        return
    ok = isinstance(out, list) and all(isinstance(r, dict) and r.get("label") in ("LABEL_0", "LABEL_1") for r in out)
    _record("pipeline-inputs", "ok" if ok else "silently wrong", repr(out)[:300])


# -- the analyses' inputs: damaged metrics.json / dev_predictions.json of a real run --------------------------------
@pytest.fixture(scope="module")
def _tiny_run(tmp_path_factory):
    """A tiny custom-data run (one step) whose files the analyses read."""
    import csv as _csv

    from syntaxformer.cli import main
    from tests.conftest import write_tiny_bert

    root = tmp_path_factory.mktemp("analysis-run")
    rows = [(f"a good film number {i}", "pos") for i in range(6)] + [(f"a bad film {i}", "neg") for i in range(6)]
    with open(root / "d.csv", "w", newline="", encoding="utf-8") as f:
        _csv.writer(f).writerows([("text", "label"), *rows])
    before = os.environ.get("SYNTAXFORMER_CACHE")
    os.environ["SYNTAXFORMER_CACHE"] = str(root / "cache")
    try:
        assert (
            main(
                [
                    "train",
                    "--train-file",
                    str(root / "d.csv"),
                    "--validation-file",
                    str(root / "d.csv"),
                    "--model",
                    write_tiny_bert(root / "tiny"),
                    "--output-dir",
                    str(root / "run"),
                    "--max-steps",
                    "1",
                    "--max-length",
                    "32",
                    "--no-progress",
                ]
            )
            == 0
        )
    finally:
        if before is None:
            os.environ.pop("SYNTAXFORMER_CACHE", None)
        else:
            os.environ["SYNTAXFORMER_CACHE"] = before
    return root / "run"


@pytest.mark.parametrize("target", ["metrics.json", "dev_predictions.json"])
def test_fuzz_analysis_inputs(_tiny_run, tmp_path_factory, _cli_env, target):
    """`significance` and `analyze` of a run against a copy whose metrics or predictions file is damaged: a result,
    or one line naming the copy."""
    import shutil

    folder = tmp_path_factory.mktemp(f"an-{target}")
    sample = (_tiny_run / target).read_text(encoding="utf-8")

    @settings(FUZZ, max_examples=15)
    @given(data=_variants(sample))
    def run(data: bytes) -> None:
        copy = folder / "copy"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(_tiny_run, copy)
        (copy / target).write_bytes(data)
        _cli(f"significance-{target}", ["significance", str(_tiny_run), str(copy), "--resamples", "20"], "copy")
        _cli(
            f"analyze-{target}",
            ["analyze", str(_tiny_run), str(copy), "--output", str(folder / "b.json"), "--overwrite"],
            "copy",
        )

    run()
