"""SST tree tasks (sst5 = SST-1, sst2_trees): counts and labels of the real treebank files, PTB unescaping, the
phrases option, and features with the gold constituency trees + spaCy dependencies on the gold tokens."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from syntaxformer.data.readers.sst import read_sst_examples
from syntaxformer.defaults import DEFAULT_SPACY_MODEL
from syntaxformer.errors import FormatError, SyntaxformerError
from syntaxformer.tasks import TaskContext, get_task
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


def load_split(task, split, *, phrases=False, **data):
    if phrases:
        task = get_task(task.name, phrases=True)
    return task.load_split(split, data)


def features(task, data, tokenizer, cache, **options):
    context = TaskContext(
        tokenizer=tokenizer,
        parser=DEFAULT_SPACY_MODEL,
        parse_cache=str(cache / "parses"),
        cache_dir=str(cache / "features"),
        progress=False,
        **options,
    )
    return task.featurize(data, context, "dev")


pytestmark = pytest.mark.slow

# Root-label counts of the real files (../shared/data/sst_trees; PROVENANCE.txt: 8,544 / 1,101 trees).
SST5_COUNTS = {"train": {0: 1092, 1: 2218, 2: 1624, 3: 2322, 4: 1288}, "dev": {0: 139, 1: 289, 2: 229, 3: 279, 4: 165}}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("sf-sst-cache")


@pytest.mark.parametrize("split", ["train", "dev"])
def test_sst_real_counts_and_labels(split):
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


def test_sst_unescape_aliases_and_errors(tmp_path):
    dev = load_split(get_task("SST-1"), "dev", data_dir=data_path("sst_trees"))
    assert get_task("sst-5").name == get_task("sst1").name == "sst5"
    assert get_task("SST2_trees").name == get_task("sst2-trees").name == "sst2_trees"
    bracketed = [e for e in dev.examples if "(" in e.text_a]
    assert bracketed and all(")" in e.text_a for e in bracketed)

    bad = tmp_path / "dev.txt"
    bad.write_text("(3 (2 fine) (3 film))\n(7 (2 bad) (2 label))\n", encoding="utf-8")
    with pytest.raises(FormatError, match="dev.txt:2"):
        read_sst_examples(bad)
    with pytest.raises(SyntaxformerError, match="no trees"):  # no hub copy of SST has the trees
        load_split(get_task("sst5"), "dev", dataset="SetFit/sst5")
    with pytest.raises(SyntaxformerError, match="'sst2' takes no options"):
        get_task("sst2", phrases=True)
    with pytest.raises(SyntaxformerError, match="phrases='yes' must be true or false"):
        get_task("sst5", phrases="yes")
    assert get_task("sst5", phrases=True).options() == {"phrases": True} and get_task("sst5").options() == {}


def test_sst_phrases_option():
    """The paper trains on every phrase of more than 3 words; ``phrases=True`` adds them (unique word sequences)."""
    task = get_task("sst2_trees")
    folder = data_path("sst_trees")
    sentences = load_split(task, "train", data_dir=folder)
    both = load_split(task, "train", data_dir=folder, phrases=True)
    assert len(both) == 56283 and both.metadata["examples"] == "sentences+phrases"
    assert dict(Counter(e.label for e in both.examples)) == {0: 26129, 1: 30154}
    assert both.fingerprint != sentences.fingerprint
    dev = load_split(task, "dev", data_dir=folder, phrases=True)  # phrases are training examples only
    assert dev.metadata["examples"] == "sentences" and all("." not in e.guid for e in dev.examples)
    texts = [e.text_a for e in both.examples]
    assert len(set(texts)) == len(texts)
    phrases = [e for e in both.examples if "." in e.guid]
    assert all(len(e.tree_a.leaves()) > 3 for e in phrases)
    assert {e.text_a for e in sentences.examples} <= set(texts)


def test_sst_features_gold_constituency_and_spacy_dependencies(minilm_tokenizer, cache, monkeypatch):
    task = get_task("sst5")
    data = load_split(task, "dev", data_dir=data_path("sst_trees")).subsampled(6, seed=0)
    ds = features(task, data, minilm_tokenizer, cache, max_length=96, syntax_inputs=SYNTAX_BERT_KEYS)
    assert ds.meta["cache"] == "miss" and ds.meta["n_parsed_texts"] == 6 and ds.meta["parser"].startswith("spacy")
    assert ds.meta["syntax_source"] == {
        "dependency": f"spaCy {DEFAULT_SPACY_MODEL} on gold tokens",
        "constituency": "gold SST trees",
    }
    for i in range(len(ds)):
        item = ds[i]
        words = item["syntax_tree"] >= 0
        assert set(item) == {"input_ids", "attention_mask", "token_type_ids", "labels", *SYNTAX_BERT_KEYS}
        assert (item["con_depth"][words] >= 0).all()  # every word is under the gold tree
        assert (item["con_anc_hi"][words][:, 0] >= 0).any()  # phrases above the pre-terminals
        assert int((item["dep_parent"] >= 0).sum()) > 0
    # the tokens the model sees are the tokenizer's own tokens of the unescaped text
    assert ds[0]["input_ids"].tolist() == minilm_tokenizer(data.examples[0].text_a)["input_ids"]

    # SG-Net's keys and Syntax-BERT's keys are different cache entries
    sg = features(task, data, minilm_tokenizer, cache, max_length=96, syntax_inputs=SGNET_KEYS)
    assert sg.meta["cache"] == "miss" and set(sg[0]) == {
        "input_ids",
        "attention_mask",
        "token_type_ids",
        "labels",
        *SGNET_KEYS,
    }
    assert sg.meta["cache_file"] != ds.meta["cache_file"]

    # syntax="given": no parser at all, dependencies by the head rules from the gold trees
    import syntaxformer.data.annotators.spacy as annotate

    def no_parsing(*args, **kwargs):
        raise AssertionError("syntax='given' must not run the parser")

    monkeypatch.setattr(annotate.SpacyAnnotator, "__init__", no_parsing)
    hr = features(task, data, minilm_tokenizer, cache, max_length=96, syntax_inputs=SYNTAX_BERT_KEYS, syntax="given")
    assert hr.meta["parser"] == "given" and hr.meta["syntax_source"]["dependency"].startswith("head rules")
    np.testing.assert_array_equal(hr[0]["con_depth"], ds[0]["con_depth"])  # same gold constituency tree
