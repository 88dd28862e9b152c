"""Parse cache: hits and misses, key components, corrupt rows and corrupt files."""

from __future__ import annotations

import logging
import os
import pickle
import sqlite3

import pytest

from syntaxformer.data.annotators.cache import ParseCache, default_cache_dir, make_key

VALUE = {"sentences": [{"words": ["Hé", "😀"], "heads": [-1, 0]}], "text": "Hé 😀"}


def _key(text="A text.", annotator="spacy|files:abc|spacy-3.8|conv1", mode="text"):
    return make_key(text, annotator, mode)


def test_cache_hit_and_miss(tmp_path):
    cache = ParseCache(tmp_path / "c.sqlite3")
    k = _key()
    assert cache.get(k) is None and len(cache) == 0
    cache.put(k, VALUE, parser="spacy:x")
    assert cache.get(k) == VALUE and k in cache and len(cache) == 1
    assert cache.get_many([k, _key("other"), k]) == {k: VALUE}
    cache.close()
    assert ParseCache(tmp_path / "c.sqlite3").get(k) == VALUE  # persisted


def test_cache_key_changes_with_every_component():
    base = _key()
    assert base == _key()
    variants = [
        _key(text="A text!"),
        _key(annotator="spacy|files:abd|spacy-3.8|conv1"),
        _key(mode="pretokenized"),
        make_key(["A", "text."], "spacy|files:abc|spacy-3.8|conv1", "text"),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_cache_corrupt_row_is_a_miss_and_removed(tmp_path):
    path = tmp_path / "c.sqlite3"
    cache = ParseCache(path)
    good, bad, swapped = _key("good"), _key("bad"), _key("swapped")
    cache.put_many({good: VALUE, bad: VALUE, swapped: {"other": 1}})
    cache.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE parses SET value = ? WHERE key = ?", ('{"sentences": []}', bad))
        # a value moved onto another key (with its own valid checksum) must not be accepted either
        row = conn.execute("SELECT value, checksum FROM parses WHERE key = ?", (good,)).fetchone()
        conn.execute("UPDATE parses SET value = ?, checksum = ? WHERE key = ?", (*row, swapped))
    cache = ParseCache(path)
    assert cache.get_many([good, bad, swapped]) == {good: VALUE}
    assert cache.corrupt_rows == 2 and len(cache) == 1  # corrupt rows deleted, to be re-parsed


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_cache_corrupt_file_is_recovered(tmp_path, damage, caplog):
    path = tmp_path / "c.sqlite3"
    cache = ParseCache(path)
    cache.put_many({_key(str(i)): {"i": i, "pad": "x" * 500} for i in range(200)})
    cache.close()
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    else:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    cache = ParseCache(path)
    with caplog.at_level(logging.WARNING, logger="syntaxformer.data.annotators.cache"):
        found = cache.get_many([_key(str(i)) for i in range(200)])
        assert len(found) < 200  # the lost entries are misses
        cache.put(_key("new"), VALUE)  # and the cache keeps working
    assert [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
    assert cache.get(_key("new")) == VALUE and cache.recovered == 1
    assert any(name.startswith("c.sqlite3.corrupt-") for name in os.listdir(tmp_path))
    with sqlite3.connect(path) as conn:  # the repaired file is in WAL mode before any process opens it
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cache_default_location(monkeypatch, tmp_path):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "here"))
    assert default_cache_dir() == str(tmp_path / "here")
    cache = ParseCache()
    cache.put(_key(), VALUE)
    assert cache.path == str(tmp_path / "here" / "parses.sqlite3") and os.path.exists(cache.path)
    monkeypatch.delenv("SYNTAXFORMER_CACHE")
    assert default_cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "syntaxformer")


def test_cache_pickles_without_its_connection(tmp_path):
    cache = ParseCache(tmp_path)
    cache.put(_key(), VALUE)
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.get(_key()) == VALUE and copy.path == cache.path
    assert cache.clear() == 1 and copy.get(_key()) is None


def _cache_worker(path: str, n: int, go, results) -> None:
    """One of several processes that start together on the same (damaged) cache file."""
    try:
        go.wait(60)
        cache = ParseCache(path)
        found = len(cache.get_many([_key(str(i)) for i in range(n)]))
        cache.put_many({_key(f"{os.getpid()}-{i}"): {"i": i} for i in range(50)})
        results.put(("ok", os.getpid(), found))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put(("error", os.getpid(), f"{type(e).__name__}: {e}"))


def test_cache_concurrent_processes_on_a_corrupt_file_lose_no_healthy_entry(tmp_path):
    """Four processes start at once on a cache with a damaged page: one repair, no OperationalError, every intact
    row kept (as many as one process alone keeps), every row any of them writes kept."""
    import multiprocessing
    import shutil

    n = 3000
    path = tmp_path / "shared" / "parses.sqlite3"
    cache = ParseCache(path)
    cache.put_many({_key(str(i)): {"i": i, "pad": "x" * 200} for i in range(n)})
    size = path.stat().st_size
    with open(path, "r+b") as f:  # one page in the middle overwritten
        f.seek(size // 2 // 4096 * 4096)
        f.write(b"\xff" * 4096)
    (tmp_path / "alone").mkdir()
    shutil.copy(path, tmp_path / "alone" / "parses.sqlite3")
    alone = len(ParseCache(tmp_path / "alone").get_many([_key(str(i)) for i in range(n)]))
    assert 0.95 * n < alone < n  # the damaged page's rows are lost, the others salvaged

    ctx = multiprocessing.get_context("spawn")
    go, results = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_cache_worker, args=(str(path), n, go, results)) for _ in range(4)]
    for w in workers:
        w.start()
    go.set()
    for w in workers:
        w.join(180)
    outcomes = [results.get(timeout=10) for _ in workers]
    assert all(kind == "ok" for kind, _, _ in outcomes), outcomes
    assert all(found == alone for _, _, found in outcomes)  # every process saw every intact row
    final = ParseCache(path)
    assert len(final.get_many([_key(str(i)) for i in range(n)])) == alone
    for _, pid, _ in outcomes:
        assert len(final.get_many([_key(f"{pid}-{i}") for i in range(50)])) == 50
    assert len([p for p in os.listdir(path.parent) if ".corrupt-" in p]) == 1  # repaired once


def test_cache_uses_wal_and_a_busy_timeout(tmp_path):
    cache = ParseCache(tmp_path)
    cache.put(_key(), VALUE)
    with sqlite3.connect(cache.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_cache_retries_an_immediate_locked_answer(tmp_path, monkeypatch):
    """SQLite answers "database is locked" at once (no busy wait) where waiting could deadlock: the cache retries
    such answers until its timeout instead of dropping the look-up (the flaky-CI failure of 2026-11-23)."""
    from syntaxformer.data.annotators import cache as cache_module

    cache = ParseCache(tmp_path)
    cache.put(_key(), VALUE)
    real, calls = cache._connect, []

    def locked_twice():
        calls.append(1)
        if len(calls) <= 2:
            raise sqlite3.OperationalError("database is locked")
        return real()

    monkeypatch.setattr(cache, "_connect", locked_twice)
    assert cache.get(_key()) == VALUE and len(calls) == 3
    monkeypatch.setattr(cache_module, "_BUSY_TIMEOUT", 0.0)  # past the timeout: the look-up is given up
    calls.clear()
    assert cache.get(_key()) is None and len(calls) == 1


def test_cache_held_by_another_writer_is_skipped_after_the_timeout(tmp_path, monkeypatch, caplog):
    from syntaxformer.data.annotators import cache as cache_module
    from syntaxformer.errors import DataError

    cache = ParseCache(tmp_path)
    cache.put(_key(), VALUE)
    monkeypatch.setattr(cache_module, "_BUSY_TIMEOUT", 0.3)
    other = sqlite3.connect(cache.path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process writing (in WAL mode, readers still read)
    try:
        with caplog.at_level(logging.WARNING, logger="syntaxformer.data.annotators.cache"):
            assert cache.get(_key()) == VALUE
            cache.put(_key("dropped"), VALUE)  # a store is dropped with a warning, the run goes on
        assert any("locked by another process" in r.getMessage() for r in caplog.records)
        with pytest.raises(DataError, match="stayed locked by another process"):
            cache.clear()  # an explicit operation says so instead
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert cache.get(_key("dropped")) is None and cache.get(_key()) == VALUE


def test_cache_key_of_a_lone_surrogate():
    assert _key("x\udcff y") != _key("x\udcfe y")  # surrogatepass: a key, and a distinct one
