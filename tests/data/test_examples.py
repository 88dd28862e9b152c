"""Fingerprints of examples (data/examples.py): they key the features cache, so they must change with the content
and stay the same byte for byte across versions."""

from __future__ import annotations

import hashlib

from syntaxformer.data.examples import TaskData, TaskExample, content_fingerprint, file_fingerprint


def test_examples_content_fingerprint_is_sha256_of_nul_separated_json():
    records = [["q1", "Titel", "Ein Kontext — mit Ümlauten.", ["a"], False], ["q2", "t", "c", [], True]]
    expected = hashlib.sha256(
        b'["q1", "Titel", "Ein Kontext \xe2\x80\x94 mit \xc3\x9cmlauten.", ["a"], false]\0["q2", "t", "c", [], true]\0'
    ).hexdigest()
    assert content_fingerprint(records) == expected
    assert content_fingerprint(tuple(r) for r in records) == expected  # a record is its fields, in order
    assert content_fingerprint(records[::-1]) != expected and content_fingerprint([]) == hashlib.sha256().hexdigest()


def test_examples_file_fingerprint_and_subsampled(tmp_path):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_bytes(b"x\ty\n")
    b.write_bytes(b"")
    assert file_fingerprint([a, b]) == hashlib.sha256(b"4\0x\ty\n0\0").hexdigest()
    data = TaskData([TaskExample(f"train-{i}", f"text {i}", label=i % 2) for i in range(10)], "a.tsv", "fp", 10)
    assert data.subsampled(None, 1) is data and data.subsampled(10, 1) is data
    small = data.subsampled(4, 1)
    assert len(small) == 4 and small.total == 10 and small.fingerprint != "fp"
    assert [e.guid for e in small.examples] == [e.guid for e in data.subsampled(4, 1).examples]
