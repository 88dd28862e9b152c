"""Every reader decodes its files the same way: UTF-8 with an optional byte-order mark. A BOM is accepted (the file
reads exactly as without it); any other encoding is a FormatError naming the file."""

from __future__ import annotations

import json

import pytest

from syntaxformer.errors import FormatError

_CONLLU = (
    "# text = café au lait\n1\tcafé\t_\t_\t_\t_\t0\troot\t_\t_\n2\tau\t_\t_\t_\t_\t1\tdep\t_\t_\n"
    "3\tlait\t_\t_\t_\t_\t1\tdep\t_\t_\n\n"
)
_SNLI = (
    json.dumps(
        {
            "pairID": "1",
            "gold_label": "neutral",
            "sentence1_parse": "(ROOT (S (NN café)))",
            "sentence2_parse": "(ROOT (S (NN lait)))",
        },
        ensure_ascii=False,
    )
    + "\n"
)
_SQUAD = json.dumps(
    {
        "version": "v2.0",
        "data": [
            {
                "title": "Café",
                "paragraphs": [
                    {
                        "context": "Un café.",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Quoi ?",
                                "answers": [{"text": "café", "answer_start": 3}],
                                "is_impossible": False,
                            }
                        ],
                    }
                ],
            }
        ],
    },
    ensure_ascii=False,
)
_RACE = json.dumps(
    {
        "id": "1.txt",
        "article": "Un café.",
        "questions": ["Quoi ?"],
        "options": [["a", "b", "c", "d"]],
        "answers": ["A"],
    },
    ensure_ascii=False,
)


def _read(kind: str, path):
    """The reader of ``kind`` on ``path``, materialised (plain data to compare)."""
    if kind == "conllu":
        from syntaxformer.data.readers.conllu import read_conllu

        return [s.to_dict() for s in read_conllu(path)]
    if kind == "ptb":
        from syntaxformer.data.readers.ptb import read_ptb

        return [s.to_dict() for s in read_ptb(path)]
    if kind == "sst":
        from syntaxformer.data.readers.sst import read_sst

        return [s.to_dict() for s in read_sst(path)]
    if kind == "snli":
        from syntaxformer.data.readers.snli import read_snli_jsonl

        return [(p.premise.to_dict(), p.hypothesis.to_dict(), p.label) for p in read_snli_jsonl(path)]
    if kind == "squad":
        from syntaxformer.data.readers.squad import read_squad

        return [repr(e) for e in read_squad(path)]
    if kind == "race":
        from syntaxformer.data.readers.race import read_race_file

        return [repr(e) for e in read_race_file(path, "high")]
    if kind == "parallel":
        from syntaxformer.data.readers.parallel import read_parallel

        return read_parallel(path).sources
    if kind == "sgm":
        from syntaxformer.data.readers.parallel import read_sgm

        return [repr(s) for s in read_sgm(path)]
    if kind == "jsonl":
        from syntaxformer.data.sentence import read_jsonl

        return [s.to_dict() for s in read_jsonl(str(path))]
    if kind == "glue":
        from syntaxformer.data.readers.glue import TsvLayout, read_glue_tsv

        layout = TsvLayout("SST-2", {"text_a": "sentence", "label": "label"}, ("0", "1"))
        return [repr(e) for e in read_glue_tsv(layout, path)]
    raise AssertionError(kind)


READERS = {
    "conllu": ("x.conllu", _CONLLU),
    "ptb": ("x.mrg", "( (S (NP (NN café)) (VP (VBZ is) (ADJP (JJ good)))) )\n"),
    "sst": ("x.txt", "(3 (2 café) (3 good))\n"),
    "snli": ("x.jsonl", _SNLI),
    "squad": ("x.json", _SQUAD),
    "race": ("x.txt", _RACE),
    "parallel": ("x.en", "café au lait\nun thé\n"),
    "sgm": ("x.sgm", '<refset><doc docid="d"><seg id="1">café au lait</seg></doc></refset>\n'),
    "jsonl": ("x.jsonl", json.dumps({"words": ["café"], "heads": [-1]}, ensure_ascii=False) + "\n"),
    "glue": ("x.tsv", "sentence\tlabel\ncafé au lait\t1\n"),
}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_readers_accept_a_byte_order_mark(tmp_path, kind):
    name, text = READERS[kind]
    plain, bom = tmp_path / "plain" / name, tmp_path / "bom" / name
    plain.parent.mkdir()
    bom.parent.mkdir()
    plain.write_bytes(text.encode("utf-8"))
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert _read(kind, bom) == _read(kind, plain) != []


@pytest.mark.parametrize("kind", sorted(READERS))
def test_readers_name_a_file_that_is_not_utf8(tmp_path, kind):
    name, text = READERS[kind]
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(FormatError, match=rf"{path.name}.*not UTF-8 text"):
        _read(kind, path)
