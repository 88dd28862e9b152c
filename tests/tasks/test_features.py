"""Features: real SST-2 / RTE sentences parsed with the offline spaCy pipeline and aligned to the MiniLM tokenizer;
the processed-features cache; parser noise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.masks.sdoi import sdoi_mask_from_features
from syntaxformer.tasks import get_task, load_split, subsample
from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig
from syntaxformer.tasks.features import FeatureDataset, FeatureOptions, build_features
from tests.conftest import data_path


def syntax_bert_keys(dependency: bool = True, constituency: bool = True) -> tuple[str, ...]:
    """What a Syntax-BERT model with these trees and LISA reads (its config's ``syntax_inputs``)."""
    return SyntaxBertConfig(use_dependency=dependency, use_constituency=constituency, lisa_layer=0).syntax_inputs


#: What SG-Net reads with its default options.
SGNET_KEYS = SGNetConfig().syntax_inputs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("sf-cache")


def _data(name: str, n: int):
    task = get_task(name)
    return task, subsample(load_split(task, "dev", data_dir=data_path(task.folder)), n, seed=0)


def test_features_sst2_arrays_labels_and_sdoi(minilm_tokenizer, cache):
    task, data = _data("sst2", 12)
    ds = build_features(task, data, minilm_tokenizer, FeatureOptions(max_length=64, syntax_keys=SGNET_KEYS),
                        split="dev", cache_dir=cache / "features", parse_cache=cache / "parses", progress=False)
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
    opts = FeatureOptions(max_length=48)
    first = build_features(task, data, minilm_tokenizer, opts, split="dev", cache_dir=cache / "features",
                           parse_cache=cache / "parses", progress=False)
    assert first.meta["cache"] == "miss" and first.meta["n_truncated"] > 0  # RTE premises are long

    import syntaxformer.data.annotate as annotate

    def no_parsing(*args, **kwargs):
        raise AssertionError("the parser must not run on a features-cache hit")

    monkeypatch.setattr(annotate.SpacyAnnotator, "__init__", no_parsing)
    second = build_features(task, data, minilm_tokenizer, opts, split="dev", cache_dir=cache / "features",
                            parse_cache=cache / "parses", progress=False)
    assert second.meta["cache"] == "hit"
    assert second.guids == first.guids and np.array_equal(second.offsets, first.offsets)
    for k in first.arrays:
        assert np.array_equal(first.arrays[k], second.arrays[k]), k
    assert max(len(second[i]["input_ids"]) for i in range(len(second))) <= 48
    # Another option is another key: it has to be built (and would need the parser).
    with pytest.raises(AssertionError, match="must not run"):
        build_features(task, data, minilm_tokenizer, FeatureOptions(max_length=40), split="dev",
                       cache_dir=cache / "features", parse_cache=cache / "parses", progress=False)


def test_features_corrupt_cache_file_is_rebuilt(minilm_tokenizer, cache):
    task, data = _data("sst2", 5)
    opts = FeatureOptions(max_length=32)
    ds = build_features(task, data, minilm_tokenizer, opts, split="dev", cache_dir=cache / "f2",
                        parse_cache=cache / "parses", progress=False)
    path = ds.meta["cache_file"]
    with open(path, "wb") as f:
        f.write(b"not an npz file")
    again = build_features(task, data, minilm_tokenizer, opts, split="dev", cache_dir=cache / "f2",
                           parse_cache=cache / "parses", progress=False, log=lambda m: None)
    assert again.meta["cache"] == "miss" and FeatureDataset.load(path).guids == ds.guids


def test_features_parser_noise_is_seeded_and_changes_trees(minilm_tokenizer, cache):
    task, data = _data("sst2", 20)
    kw = dict(split="dev", cache_dir=cache / "features", parse_cache=cache / "parses", progress=False)
    clean = build_features(task, data, minilm_tokenizer, FeatureOptions(max_length=64), **kw)
    noisy = build_features(task, data, minilm_tokenizer, FeatureOptions(max_length=64, parser_noise=0.4), **kw)
    again = build_features(task, data, minilm_tokenizer, FeatureOptions(max_length=64, parser_noise=0.4),
                           use_cache=False, **{k: v for k, v in kw.items() if k != "cache_dir"})
    other = build_features(task, data, minilm_tokenizer,
                           FeatureOptions(max_length=64, parser_noise=0.4, noise_seed=1), **kw)
    assert np.array_equal(clean.arrays["input_ids"], noisy.arrays["input_ids"])  # same tokens
    assert not np.array_equal(clean.arrays["dep_tout"], noisy.arrays["dep_tout"])  # other trees
    assert np.array_equal(noisy.arrays["dep_tout"], again.arrays["dep_tout"])  # seeded
    assert not np.array_equal(noisy.arrays["dep_tout"], other.arrays["dep_tout"])
    assert noisy.meta["parser_noise"] == 0.4


def test_features_snli_given_parses_need_no_parser(minilm_tokenizer, cache, monkeypatch):
    from syntaxformer.tasks.data import TaskData, read_snli

    import syntaxformer.data.annotate as annotate

    monkeypatch.setattr(annotate.SpacyAnnotator, "__init__", lambda *a, **k: (_ for _ in ()).throw(
        AssertionError("no parser for given parses")))
    examples, files = read_snli(data_path("snli", "snli_1.0_dev_partial.jsonl"), "dev")
    data = TaskData(examples[:8], files[0], "test-fingerprint", 8)
    ds = build_features(get_task("snli"), data, minilm_tokenizer, FeatureOptions(max_length=64), split="dev",
                        cache_dir=cache / "features", progress=False)
    assert ds.meta["parser"] == "given" and len(ds) == 8
    segs = ds[0]["syntax_segment"]
    assert set(segs.tolist()) == {-1, 0, 1}  # premise and hypothesis trees


def test_features_constituency_from_dependency_fallback(minilm_tokenizer, cache):
    """GLUE pairs have no constituency parse: the fallback reads one off each dependency tree, so Syntax-BERT's
    constituency relations are no longer empty; the default ("given") keeps them empty."""
    from syntaxformer.masks.relations import relation_groups_from_features
    from syntaxformer.tasks.features import syntax_source

    task, data = _data("rte", 4)
    kw = dict(split="dev", cache_dir=cache / "features", parse_cache=cache / "parses", progress=False)
    plain = FeatureOptions(max_length=96, syntax_keys=syntax_bert_keys())
    filled = FeatureOptions(max_length=96, syntax_keys=syntax_bert_keys(), constituency="from_dependency")
    a = build_features(task, data, minilm_tokenizer, plain, **kw)
    b = build_features(task, data, minilm_tokenizer, filled, **kw)
    assert "read off the dependency" in syntax_source(data, filled)["constituency"]
    assert "empty" in syntax_source(data, plain)["constituency"]
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
        FeatureOptions(constituency="parser")
