"""The features pipeline (annotate -> noise -> align -> encode + features cache) on real GLUE / SNLI examples with
the offline MiniLM tokenizer and spaCy parser."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.data.examples import TaskData
from syntaxformer.defaults import DEFAULT_SPACY_MODEL
from syntaxformer.masks.sdoi import sdoi_mask_from_features
from syntaxformer.tasks import TaskContext, get_task
from syntaxformer.tasks.featurize import FeatureDataset, syntax_source
from tests.conftest import data_path

#: What SG-Net reads, and Syntax-BERT with both trees (spelled out here, not imported from the library).
SGNET_KEYS = ("syntax_tree", "syntax_segment", "dep_tin", "dep_tout", "dep_depth", "dep_parent")
SYNTAX_BERT_KEYS = SGNET_KEYS + (
    "dep_anc_lo",
    "dep_anc_hi",
    "dep_anc_head",
    "con_key",
    "con_depth",
    "con_anc_lo",
    "con_anc_hi",
    "con_anc_head",
)


def context(tokenizer, cache_dir=None, parse_cache=False, use_cache=True, **options) -> TaskContext:
    options.setdefault("syntax_inputs", SGNET_KEYS)
    return TaskContext(
        tokenizer=tokenizer,
        parser=DEFAULT_SPACY_MODEL,
        parse_cache=parse_cache,
        cache_dir=None if cache_dir is None else str(cache_dir),
        use_cache=use_cache,
        progress=False,
        **options,
    )


def features(task, data, tokenizer, **kw) -> FeatureDataset:
    return task.featurize(data, context(tokenizer, **kw), "dev")


def _column(ds: FeatureDataset, key: str) -> np.ndarray:
    """``key`` of every row, concatenated."""
    return np.concatenate([ds[i][key] for i in range(len(ds))])


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("sf-cache")


def _data(name: str, n: int):
    task = get_task(name)
    return task, task.load_split("dev", {"data_dir": data_path(task.spec.folder), "max_samples": n, "data_seed": 0})


def test_features_sst2_arrays_labels_and_sdoi(minilm_tokenizer, cache):
    task, data = _data("sst2", 12)
    ds = features(
        task, data, minilm_tokenizer, max_length=64, cache_dir=cache / "features", parse_cache=cache / "parses"
    )
    assert len(ds) == 12 and ds.meta["cache"] == "miss" and ds.meta["n_parsed_texts"] == 12
    item = ds[0]
    assert set(item) == {"input_ids", "attention_mask", "token_type_ids", "labels", *SGNET_KEYS}
    assert item["labels"].dtype == np.int64 and int(item["labels"]) == data.examples[0].label
    ids = minilm_tokenizer(data.examples[0].text_a)["input_ids"]
    assert item["input_ids"].tolist() == ids  # same tokens as the tokenizer itself
    assert item["syntax_tree"][0] == -1 and item["syntax_tree"][-1] == -1  # [CLS] / [SEP]
    batch = SyntaxCollator(pad_token_id=minilm_tokenizer.pad_token_id)([ds[i] for i in range(4)])
    mask = sdoi_mask_from_features(batch)
    assert mask.shape[0] == 4 and bool(mask.diagonal(dim1=-2, dim2=-1).all())  # no empty row
    assert batch["labels"].dtype == torch.int64


def test_features_cache_hit_skips_annotation(minilm_tokenizer, cache, monkeypatch):
    task, data = _data("rte", 6)
    kw = dict(max_length=48, cache_dir=cache / "features", parse_cache=cache / "parses")
    first = features(task, data, minilm_tokenizer, **kw)
    assert first.meta["cache"] == "miss" and first.meta["n_truncated"] > 0  # RTE premises are long

    import syntaxformer.data.annotators.spacy as annotate

    def no_parsing(*args, **kwargs):
        raise AssertionError("the parser must not run on a features-cache hit")

    # the annotator is made (its content key is part of the features key) but spaCy is never loaded
    monkeypatch.setattr(annotate, "load_pipeline", no_parsing)
    second = features(task, data, minilm_tokenizer, **kw)
    assert second.meta["cache"] == "hit"
    assert second.guids == first.guids
    _assert_same_rows(second, [first[i] for i in range(len(first))])
    assert max(len(second[i]["input_ids"]) for i in range(len(second))) <= 48
    # Another option is another key: it is built from the parse cache (still without loading spaCy) ...
    third = features(task, data, minilm_tokenizer, **{**kw, "max_length": 40})
    assert third.meta["cache"] == "miss"
    # ... and without a parse cache it would need the parser.
    with pytest.raises(AssertionError, match="must not run"):
        features(task, data, minilm_tokenizer, **{**kw, "max_length": 40, "parse_cache": False, "use_cache": False})


def test_features_corrupt_cache_file_is_rebuilt(minilm_tokenizer, cache):
    task, data = _data("sst2", 5)
    kw = dict(max_length=32, cache_dir=cache / "f2", parse_cache=cache / "parses")
    ds = features(task, data, minilm_tokenizer, **kw)
    path, guids = ds.meta["cache_file"], ds.guids
    del ds  # its rows are memory-mapped from the file overwritten next
    with open(path, "wb") as f:
        f.write(b"not an arrow file")
    again = features(task, data, minilm_tokenizer, **kw)
    assert again.meta["cache"] == "miss" and FeatureDataset.load(path).guids == guids


def test_features_parser_noise_is_seeded_and_changes_trees(minilm_tokenizer, cache):
    task, data = _data("sst2", 20)
    kw = dict(max_length=64, cache_dir=cache / "features", parse_cache=cache / "parses")
    clean = features(task, data, minilm_tokenizer, **kw)
    noisy = features(task, data, minilm_tokenizer, parser_noise=0.4, **kw)
    again = features(task, data, minilm_tokenizer, parser_noise=0.4, **{**kw, "use_cache": False})
    other = features(task, data, minilm_tokenizer, parser_noise=0.4, noise_seed=1, **kw)
    assert np.array_equal(_column(clean, "input_ids"), _column(noisy, "input_ids"))  # same tokens
    assert not np.array_equal(_column(clean, "dep_tout"), _column(noisy, "dep_tout"))  # other trees
    assert np.array_equal(_column(noisy, "dep_tout"), _column(again, "dep_tout"))  # seeded
    assert not np.array_equal(_column(noisy, "dep_tout"), _column(other, "dep_tout"))
    assert noisy.meta["parser_noise"] == 0.4


def test_features_snli_given_parses_need_no_parser(minilm_tokenizer, cache, monkeypatch):
    import syntaxformer.data.annotators.spacy as annotate
    from syntaxformer.data.readers.snli import read_snli_examples

    monkeypatch.setattr(
        annotate.SpacyAnnotator,
        "__init__",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("no parser for given parses")),
    )
    examples, files = read_snli_examples(data_path("snli", "snli_1.0_dev_partial.jsonl"), "dev")
    data = TaskData(examples[:8], files[0], "test-fingerprint", 8)
    ds = features(get_task("snli"), data, minilm_tokenizer, max_length=64, cache_dir=cache / "features")
    assert ds.meta["parser"] == "given" and len(ds) == 8
    segs = ds[0]["syntax_segment"]
    assert set(segs.tolist()) == {-1, 0, 1}  # premise and hypothesis trees


def test_features_constituency_from_dependency_fallback(minilm_tokenizer, cache):
    """GLUE pairs have no constituency parse: the fallback reads one off each dependency tree, so Syntax-BERT's
    constituency relations are no longer empty; the default ("given") keeps them empty."""
    from syntaxformer.masks.relations import relation_groups_from_features

    task, data = _data("rte", 4)
    kw = dict(max_length=96, syntax_inputs=SYNTAX_BERT_KEYS, cache_dir=cache / "features", parse_cache=cache / "parses")
    a = features(task, data, minilm_tokenizer, **kw)
    b = features(task, data, minilm_tokenizer, constituency="from_dependency", **kw)
    assert "read off the dependency" in b.meta["syntax_source"]["constituency"]
    assert "empty" in syntax_source(data, context(minilm_tokenizer, **kw))["constituency"]
    collate = SyntaxCollator(pad_token_id=minilm_tokenizer.pad_token_id)
    ba, bb = collate([a[i] for i in range(4)]), collate([b[i] for i in range(4)])
    for key in ("input_ids", "dep_tin", "dep_parent"):
        assert torch.equal(ba[key], bb[key])  # the dependency side is untouched
    words = bb["syntax_tree"] >= 0
    assert bool((ba["con_depth"][words] == -1).all()) and bool((bb["con_depth"][words] >= 0).all())
    _, con_a = relation_groups_from_features(ba, pairwise=False)
    _, con_b = relation_groups_from_features(bb, pairwise=False)
    assert int((con_a > 0).sum()) == 0 and int((con_b > 0).sum()) > 0
    with pytest.raises(Exception, match="constituency"):
        features(task, data, minilm_tokenizer, constituency="parser", **kw)


def test_features_only_declared_inputs_and_no_parser_without_syntax(minilm_tokenizer, cache, monkeypatch):
    """Featurization emits the token arrays plus exactly the model's syntax inputs; with none, no parser is built
    and the tokens are the tokenizer's own."""
    import syntaxformer.data.annotators.spacy as annotate

    task, data = _data("rte", 5)
    few = features(
        task,
        data,
        minilm_tokenizer,
        syntax_inputs=("syntax_tree", "pos_ids"),
        pos_tags="upos",
        max_length=64,
        cache_dir=cache / "features",
        parse_cache=cache / "parses",
    )
    assert set(few[0]) == {"input_ids", "attention_mask", "token_type_ids", "labels", "syntax_tree", "pos_ids"}
    monkeypatch.setattr(
        annotate.SpacyAnnotator,
        "__init__",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("no parser for a model without syntax inputs")),
    )
    plain = features(task, data, minilm_tokenizer, syntax_inputs=(), max_length=64, use_cache=False)
    assert set(plain[0]) == {"input_ids", "attention_mask", "token_type_ids", "labels"}
    assert plain.meta["parser"] == "none" and plain.meta["syntax_source"]["dependency"].startswith("none")
    for i, e in enumerate(data.examples):
        want = minilm_tokenizer(e.text_a, e.text_b, truncation=True, max_length=64)["input_ids"]
        assert plain[i]["input_ids"].tolist() == want
    assert np.array_equal(plain[0]["input_ids"], few[0]["input_ids"])  # same tokens as the aligned route


def test_features_cache_keyed_by_the_exact_examples(minilm_tokenizer, cache):
    """Two subsamples of the same size whose data fingerprints agree (a task that subsamples without saying so)
    must not share features: the key holds the examples' own content."""
    import dataclasses

    task = get_task("sst2")
    options = {"data_dir": data_path(task.spec.folder), "max_samples": 8}
    a = task.load_split("dev", {**options, "data_seed": 0})
    b = task.load_split("dev", {**options, "data_seed": 1})
    assert [e.guid for e in a.examples] != [e.guid for e in b.examples]
    b = dataclasses.replace(b, fingerprint=a.fingerprint)  # the fingerprint no longer tells them apart
    kw = dict(max_length=32, cache_dir=cache / "f-exact", parse_cache=cache / "parses")
    first = features(task, a, minilm_tokenizer, **kw)
    second = features(task, b, minilm_tokenizer, **kw)
    assert first.meta["cache"] == "miss" and second.meta["cache"] == "miss"
    assert second.guids == [e.guid for e in b.examples]
    assert second.labels.tolist() == [e.label for e in b.examples]
    assert features(task, a, minilm_tokenizer, **kw).meta["cache"] == "hit"  # the same examples still hit


def _reference_rows(data, ctx) -> list[dict[str, np.ndarray]]:
    """The featurization before Arrow, kept here as the slow reference: every example analysed at once, one
    aligner over the whole split, one dict of arrays per example (token arrays only from the tokenizer itself
    when the model reads no syntax)."""
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.tasks.featurize import example_analyses

    if not ctx.syntax_inputs:
        rows = []
        for e in data.examples:
            enc = ctx.tokenizer(e.text_a, e.text_b, truncation=True, max_length=ctx.max_length)
            rows.append(
                {k: np.asarray(enc[k], dtype=np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
            )
    else:
        docs_a, docs_b, _ = example_analyses(data.examples, ctx)
        aligner = SyntaxAligner(ctx.tokenizer, max_length=ctx.max_length, window_segment=None if docs_b else 0)
        rows = [ctx.window_arrays(w[0]) for w in aligner.align_batch(docs_a, docs_b)]
    if data.has_labels:
        for row, e in zip(rows, data.examples):
            row["labels"] = np.asarray(e.label, dtype=np.float32 if isinstance(e.label, float) else np.int64)
    return rows


def _assert_same_rows(ds, reference) -> None:
    assert len(ds) == len(reference)
    for i, want in enumerate(reference):
        got = ds[i]
        assert set(got) == set(want), i
        for k, v in want.items():
            g = np.asarray(got[k])
            assert g.dtype == v.dtype and g.shape == v.shape and np.array_equal(g, v), (i, k)


@pytest.fixture()
def rte_csv(tmp_path):
    """RTE dev (277 premise / hypothesis pairs) rewritten as the user's own CSV file."""
    import csv

    with open(data_path("glue", "RTE", "dev.tsv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    path = tmp_path / "pairs.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, ["premise", "hypothesis", "label"])
        writer.writeheader()
        writer.writerows({"premise": r["sentence1"], "hypothesis": r["sentence2"], "label": r["label"]} for r in rows)
    return path


@pytest.mark.parametrize("keys", [SYNTAX_BERT_KEYS, ()], ids=["syntax-bert", "tokens-only"])
def test_features_arrow_rows_equal_the_reference_sst2_and_custom_csv(
    minilm_tokenizer, tmp_path, rte_csv, monkeypatch, keys
):
    """Rows written by Dataset.map in blocks and read back from Arrow (from the cache file, again on a hit, and
    from memory without a cache) are the reference's arrays, element by element, with their dtypes and shapes."""
    import syntaxformer.tasks.featurize as featurize

    monkeypatch.setattr(featurize, "BLOCK_SIZE", 64)  # several map batches and Arrow record batches
    sst2, sst2_data = _data("sst2", 300)
    custom = get_task("custom", text_column="premise", text_pair_column="hypothesis", label_column="label")
    custom_data = custom.load_split("train", {"train_file": str(rte_csv), "dev_file": str(rte_csv)})
    assert len(custom_data) == 277 and custom_data.examples[0].text_b is not None
    for task, data in ((sst2, sst2_data), (custom, custom_data)):
        kw = dict(max_length=64, syntax_inputs=keys, constituency="from_dependency", cache_dir=tmp_path / task.name)
        reference = _reference_rows(data, context(minilm_tokenizer, **kw))
        if task is custom and keys:
            assert any(len(r["input_ids"]) == 64 for r in reference)  # truncated pairs are part of the check
        built = features(task, data, minilm_tokenizer, **kw)
        hit = features(task, data, minilm_tokenizer, **kw)
        in_memory = features(task, data, minilm_tokenizer, **{**kw, "use_cache": False})
        assert (built.meta["cache"], hit.meta["cache"], in_memory.meta["cache"]) == ("miss", "hit", "miss")
        assert "cache_file" not in in_memory.meta and not in_memory.dataset.cache_files
        sent = pickle.dumps(hit)  # what a DataLoader worker receives: the file's name, not its rows
        assert len(sent) < 20_000
        for ds in (built, hit, in_memory, pickle.loads(sent)):
            _assert_same_rows(ds, reference)
            assert ds.guids == [e.guid for e in data.examples]


def _reading_rows(task, data, ctx) -> tuple[list[dict], list]:
    """Span QA and multiple choice before Arrow, kept here as the slow reference: the whole split parsed and
    windowed at once, one dict of arrays per window / question (``feature_arrays``), and the windows or questions
    themselves."""
    from syntaxformer.tasks import race, squad
    from syntaxformer.tasks.featurize import annotator_for

    annotator = annotator_for(ctx) if ctx.syntax_inputs else None
    if task.head == "question_answering":
        featurizer = squad.SquadFeaturizer(ctx.tokenizer, annotator, ctx.max_length, task.doc_stride)
        windows = featurizer(data.examples)
        return [squad.feature_arrays(w, ctx) for w in windows], windows
    questions = race.RaceFeaturizer(ctx.tokenizer, annotator, max_length=ctx.max_length)(data.examples)
    return [race.feature_arrays(f, ctx) for f in questions], questions


def _assert_same_items(ds, reference) -> None:
    """Rows equal to ``reference``; multiple-choice rows option by option."""
    assert len(ds) == len(reference)
    for i, want in enumerate(reference):
        got = ds[i]
        assert set(got) == set(want), i
        if "options" in want:
            assert len(got["options"]) == len(want["options"]), i
            _assert_same_rows(got["options"], want["options"])
            got, want = {"labels": got["labels"]}, {"labels": want["labels"]}
        for k, v in want.items():
            g = np.asarray(got[k])
            assert g.dtype == v.dtype and g.shape == v.shape and np.array_equal(g, v), (i, k)


@pytest.mark.parametrize("keys", [SYNTAX_BERT_KEYS, ()], ids=["syntax-bert", "tokens-only"])
def test_features_arrow_rows_equal_the_reference_span_qa_and_multiple_choice(
    minilm_tokenizer, tmp_path, monkeypatch, keys
):
    """SQuAD 2.0 windows (several per long passage) and RACE questions (four options each, passages cut to fit)
    written by Dataset.map in blocks and read back from Arrow (cache file, cache hit, in memory, pickled) are the
    reference's arrays element by element; decoding the same logits over the stored windows gives the same
    answers, no-answer scores and metrics as over the reference's windows; RACE batches are the same tensors."""
    import syntaxformer.tasks.featurize as featurize
    from syntaxformer.tasks.squad import stored_windows

    monkeypatch.setattr(featurize, "BLOCK_SIZE", 16)  # several map batches and Arrow record batches
    squad = get_task("squad2", doc_stride=32)
    race = get_task("race")
    qa_data = squad.load_split("dev", {"max_samples": 40, "data_seed": 0})
    mc_data = race.load_split("dev", {"max_samples": 24, "data_seed": 0})
    parses = str(tmp_path / "parses.sqlite3")
    for task, data in ((squad, qa_data), (race, mc_data)):
        kw = dict(max_length=96, syntax_inputs=keys, cache_dir=tmp_path / task.name, parse_cache=parses)
        reference, made = _reading_rows(task, data, context(minilm_tokenizer, **kw))
        built = features(task, data, minilm_tokenizer, **kw)
        hit = features(task, data, minilm_tokenizer, **kw)
        in_memory = features(task, data, minilm_tokenizer, **{**kw, "use_cache": False})
        assert (built.meta["cache"], hit.meta["cache"], in_memory.meta["cache"]) == ("miss", "hit", "miss")
        assert "cache_file" not in in_memory.meta and not in_memory.dataset.cache_files
        sent = pickle.dumps(hit)
        assert len(sent) < 20_000
        for ds in (built, hit, in_memory, pickle.loads(sent)):
            _assert_same_items(ds, reference)
            assert ds.guids == [m.qid for m in made]
        if task is squad:
            assert len(built) > len(data) and built.meta["n_examples"] == len(data)  # long passages: several windows
            assert any(r["start_positions"] > 0 for r in reference)  # answers inside windows are part of the check
            for ds in (built, hit):
                windows = stored_windows(ds)
                assert [(w.example_index, w.window) for w in windows] == [(m.example_index, m.window) for m in made]
                assert all(np.array_equal(w.passage_offsets, m.passage_offsets) for w, m in zip(windows, made))
            rng = np.random.default_rng(0)
            logits = (rng.normal(size=(len(made), 96)), rng.normal(size=(len(made), 96)))
            want, got = squad.postprocess(data, made, logits), squad.postprocess(data, built, logits)
            assert (got.ids, got.values, got.scores, got.extra) == (want.ids, want.values, want.scores, want.extra)
            assert squad.compute_metrics(data, got) == squad.compute_metrics(data, want)
        else:
            assert built.meta["n_truncated"] == sum(q.truncated for q in made) > 0  # cut passages are checked too
            collate = task.collator(context(minilm_tokenizer, **kw))
            a, b = collate([built[i] for i in range(len(built))]), collate(reference)
            assert set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)
