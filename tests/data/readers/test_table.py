"""Tests of syntaxformer.data.readers.table: CSV / TSV / JSON / JSONL rows, and the errors a user's file causes."""

import json

import pytest

from syntaxformer.data.readers.table import read_table, require_columns
from syntaxformer.errors import DataError, FormatError

ROWS = [{"review": 'a "fine", witty film', "stars": "5"}, {"review": "dull", "stars": "1"}]


def _write(path, kind):
    if kind == "csv":
        path.write_text('review,stars\n"a ""fine"", witty film",5\ndull,1\n', encoding="utf-8")
    elif kind == "tsv":
        path.write_text('review\tstars\na "fine", witty film\t5\n\ndull\t1\n', encoding="utf-8")
    elif kind == "json":
        path.write_text(json.dumps({"data": ROWS}), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")


@pytest.mark.parametrize("kind", ["csv", "tsv", "json", "jsonl"])
def test_table_reads_every_format_to_the_same_rows(tmp_path, kind):
    path = tmp_path / f"reviews.{kind}"
    _write(path, kind)
    table = read_table(path)
    assert table.columns == ["review", "stars"]
    assert table.rows == ROWS  # the CSV quotes are undone; the TSV quote is text
    assert len(table.fingerprint) == 64 and table.source == str(path)
    if kind in ("csv", "jsonl"):  # the second row: after the header line in CSV
        assert table.where(1) == f"{path}:{3 if kind == 'csv' else 2}"


def test_table_json_values_keep_their_types(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text('{"text": "a", "score": 0.5, "label": 1}\n{"text": "b", "score": 2, "extra": true}\n')
    table = read_table(path)
    assert table.columns == ["text", "score", "label", "extra"]
    assert table.rows[0]["score"] == 0.5 and table.rows[0]["label"] == 1 and "label" not in table.rows[1]


def test_table_errors_name_the_file_and_what_is_wrong(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="empty.csv holds no rows"):
        read_table(empty)
    header = tmp_path / "header.csv"
    header.write_text("text,label\n")
    with pytest.raises(DataError, match=r"only the header \['text', 'label'\]"):
        read_table(header)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("text,label\na, b, c,1\n")
    with pytest.raises(FormatError, match=r"ragged.csv:2: 4 values for the 2 columns.*quote values"):
        read_table(ragged)
    with pytest.raises(DataError, match="not found"):
        read_table(tmp_path / "missing.csv")
    odd = tmp_path / "data.xlsx"
    odd.write_text("x")
    with pytest.raises(FormatError, match="extension '.xlsx'.*.csv, .tsv"):
        read_table(odd)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n[1, 2]\n')
    with pytest.raises(FormatError, match="bad.jsonl:2: expected one JSON object per line"):
        read_table(bad)
    lines = tmp_path / "lines.json"
    lines.write_text('{"text": "a"}\n{"text": "b"}\n')
    with pytest.raises(FormatError, match="name the file .jsonl"):
        read_table(lines)


def test_table_missing_column_lists_the_columns_and_suggests_one(tmp_path):
    path = tmp_path / "reviews.csv"
    _write(path, "csv")
    table = read_table(path)
    require_columns(table, {"text": "review", "label": "stars", "id": None})
    with pytest.raises(
        DataError,
        match=r"no column 'reveiw' \(--text-column\); its columns are \['review', "
        r"'stars'\]; did you mean 'review'\?",
    ):
        require_columns(table, {"text": "reveiw"})
    require_columns(table, {"label": "gold"}, optional=("label",))


def test_table_datasets_folder_round_trip(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the datasets package is not installed")
    dd = datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(ROWS), "validation": datasets.Dataset.from_list(ROWS[:1])}
    )
    dd.save_to_disk(str(tmp_path / "saved"))
    assert list(read_table(tmp_path / "saved", "train").rows) == ROWS
    assert list(read_table(tmp_path / "saved", "dev").rows) == ROWS[:1]
    with pytest.raises(DataError, match="none of them 'test'"):
        read_table(tmp_path / "saved", "test")
