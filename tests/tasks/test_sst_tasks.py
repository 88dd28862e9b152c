"""SST tree tasks (sst5 = SST-1, sst2_trees): counts and labels of the real treebank files, PTB unescaping, the
phrases option, and features with the gold constituency trees + spaCy dependencies on the gold tokens."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from syntaxformer.errors import FormatError, SyntaxformerError
from syntaxformer.tasks import get_task, load_split, read_sst_task, subsample
from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig
from syntaxformer.tasks.features import FeatureOptions, build_features, syntax_source
from tests.conftest import data_path


def syntax_bert_keys(dependency: bool = True, constituency: bool = True) -> tuple[str, ...]:
    """What a Syntax-BERT model with these trees and LISA reads (its config's ``syntax_inputs``)."""
    return SyntaxBertConfig(use_dependency=dependency, use_constituency=constituency, lisa_layer=0).syntax_inputs


#: What SG-Net reads with its default options.
SGNET_KEYS = SGNetConfig().syntax_inputs

pytestmark = pytest.mark.slow

# Root-label counts of the real files (../shared/data/sst_trees; PROVENANCE.txt: 8,544 / 1,101 trees).
SST5_COUNTS = {"train": {0: 1092, 1: 2218, 2: 1624, 3: 2322, 4: 1288},
               "dev": {0: 139, 1: 289, 2: 229, 3: 279, 4: 165}}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("sf-sst-cache")


@pytest.mark.parametrize("split", ["train", "dev"])
def test_sst_tasks_real_counts_and_labels(split):
    folder = data_path("sst_trees")
    five = load_split(get_task("sst5"), split, data_dir=folder)
    assert len(five) == five.total == {"train": 8544, "dev": 1101}[split]
    assert dict(Counter(e.label for e in five.examples)) == SST5_COUNTS[split]
    assert five.metadata == {"constituency_source": "gold SST trees", "examples": "sentences"}
    # Binary: very negative / negative -> 0, positive / very positive -> 1, neutral dropped.
    two = load_split(get_task("sst2_trees"), split, data_dir=folder)
    counts = SST5_COUNTS[split]
    assert len(two) == {"train": 6920, "dev": 872}[split] == len(five) - counts[2]
    assert dict(Counter(e.label for e in two.examples)) == {0: counts[0] + counts[1], 1: counts[3] + counts[4]}
    by_guid = {e.guid: e for e in five.examples}
    for e in two.examples:
        assert e.text_a == by_guid[e.guid].text_a and e.label == (by_guid[e.guid].label >= 3)
    # Every example is a full sentence with its gold tree over its gold tokens, escapes undone.
    for e in five.examples:
        assert e.tree_a is not None and e.syntax_a is None and e.text_b is None
        assert e.tree_a.leaves() == e.text_a.split(" ")
        assert "-LRB-" not in e.text_a and "\\/" not in e.text_a
    assert len({e.guid for e in five.examples}) == len(five)


def test_sst_tasks_unescape_aliases_and_errors(tmp_path):
    dev = load_split(get_task("SST-1"), "dev", data_dir=data_path("sst_trees"))
    assert get_task("sst-5").name == get_task("sst1").name == "sst5"
    assert get_task("SST2_trees").name == get_task("sst2-trees").name == "sst2_trees"
    bracketed = [e for e in dev.examples if "(" in e.text_a]
    assert bracketed and all(")" in e.text_a for e in bracketed)

    bad = tmp_path / "dev.txt"
    bad.write_text("(3 (2 fine) (3 film))\n(7 (2 bad) (2 label))\n", encoding="utf-8")
    with pytest.raises(FormatError, match="dev.txt:2"):
        read_sst_task(get_task("sst5"), bad)
    with pytest.raises(SyntaxformerError, match="no trees"):  # no hub copy of SST has the trees
        load_split(get_task("sst5"), "dev", dataset="SetFit/sst5")
    with pytest.raises(SyntaxformerError, match="SST tree task"):
        load_split(get_task("sst2"), "dev", data_dir=data_path("glue", "SST-2"), phrases=True)


def test_sst_tasks_phrases_option():
    """The paper trains on every phrase of more than 3 words; ``phrases=True`` adds them (unique word sequences)."""
    task = get_task("sst2_trees")
    folder = data_path("sst_trees")
    sentences = load_split(task, "train", data_dir=folder)
    both = load_split(task, "train", data_dir=folder, phrases=True)
    assert len(both) == 56283 and both.metadata["examples"] == "sentences+phrases"
    assert dict(Counter(e.label for e in both.examples)) == {0: 26129, 1: 30154}
    assert both.fingerprint != sentences.fingerprint
    texts = [e.text_a for e in both.examples]
    assert len(set(texts)) == len(texts)
    phrases = [e for e in both.examples if "." in e.guid]
    assert all(len(e.tree_a.leaves()) > 3 for e in phrases)
    assert {e.text_a for e in sentences.examples} <= set(texts)


def test_sst_features_gold_constituency_and_spacy_dependencies(minilm_tokenizer, cache, monkeypatch):
    task = get_task("sst5")
    data = subsample(load_split(task, "dev", data_dir=data_path("sst_trees")), 6, seed=0)
    opts = FeatureOptions(max_length=96, syntax_keys=syntax_bert_keys())
    ds = build_features(task, data, minilm_tokenizer, opts, split="dev", cache_dir=cache / "features",
                        parse_cache=cache / "parses", progress=False)
    assert ds.meta["cache"] == "miss" and ds.meta["n_parsed_texts"] == 6 and ds.meta["parser"].startswith("spacy")
    assert syntax_source(data, opts) == {"dependency": "spaCy en_core_web_sm on gold tokens",
                                         "constituency": "gold SST trees"}
    for i in range(len(ds)):
        item = ds[i]
        words = item["syntax_tree"] >= 0
        assert set(item) >= set(syntax_bert_keys()) and "labels" in item
        assert (item["con_depth"][words] >= 0).all()  # every word is under the gold tree
        assert (item["con_anc_hi"][words][:, 0] >= 0).any()  # phrases above the pre-terminals
        assert int((item["dep_parent"] >= 0).sum()) > 0
    # the tokens the model sees are the tokenizer's own tokens of the unescaped text
    assert ds[0]["input_ids"].tolist() == minilm_tokenizer(data.examples[0].text_a)["input_ids"]

    # SG-Net's keys and Syntax-BERT's keys are different cache entries
    sg = build_features(task, data, minilm_tokenizer, FeatureOptions(max_length=96, syntax_keys=SGNET_KEYS),
                        split="dev",
                        cache_dir=cache / "features", parse_cache=cache / "parses", progress=False)
    assert sg.meta["cache"] == "miss" and set(sg[0]) == {"input_ids", "attention_mask", "token_type_ids", "labels",
                                                         *SGNET_KEYS}
    assert sg.meta["cache_file"] != ds.meta["cache_file"]

    # syntax="given": no parser at all, dependencies by the head rules from the gold trees
    import syntaxformer.data.annotate as annotate

    def no_parsing(*args, **kwargs):
        raise AssertionError("syntax='given' must not run the parser")

    monkeypatch.setattr(annotate.SpacyAnnotator, "__init__", no_parsing)
    given = FeatureOptions(max_length=96, syntax_keys=syntax_bert_keys(), syntax="given")
    hr = build_features(task, data, minilm_tokenizer, given, split="dev", cache_dir=cache / "features",
                        parse_cache=cache / "parses", progress=False)
    assert hr.meta["parser"] == "given" and syntax_source(data, given)["dependency"].startswith("head rules")
    np.testing.assert_array_equal(hr[0]["con_depth"], ds[0]["con_depth"])  # same gold constituency tree
