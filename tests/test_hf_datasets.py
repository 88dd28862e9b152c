"""add_syntax_features: the runner's features for a Hugging Face data set, only the keys the model declares,
datasets' fingerprint cache reused, worker processes, and a plain Trainer on the result."""

from __future__ import annotations

import json

import numpy as np
import pytest

from syntaxformer.data.annotators import Annotator
from syntaxformer.data.examples import TaskData, TaskExample
from syntaxformer.errors import ConfigError, InputError
from syntaxformer.hf_datasets import add_syntax_features, syntax_features
from syntaxformer.modeling import SGNetConfig, SyntaxBertConfig
from syntaxformer.tasks.base import TaskContext
from syntaxformer.tasks.featurize import TOKEN_KEYS, build_features
from tests.conftest import minilm_path

ROWS = [
    ("A gripping, beautifully shot film.", "It is good.", 1),
    ("The plot never quite comes together, and the ending drags.", "It is bad.", 0),
    ("Nothing here surprised me.", "It is dull.", 0),
    ("Warm, funny and surprisingly wise.  A delight.", "It is good.", 1),
    ("I left before the end.", "It is bad.", 0),
]


class CountingAnnotator(Annotator):
    """The spaCy annotator behind a counter of the texts it is asked to annotate."""

    def __init__(self, inner: Annotator):
        self.inner, self.source, self.calls = inner, inner.source, 0

    def cache_key(self) -> str:
        return self.inner.cache_key()

    def annotate(self, texts):
        self.calls += len(texts)
        return self.inner.annotate(texts)

    def annotate_pretokenized(self, words):
        return self.inner.annotate_pretokenized(words)


def _sgnet_config(**options) -> SGNetConfig:
    from transformers import AutoConfig

    return SGNetConfig(encoder=AutoConfig.from_pretrained(minilm_path()), **options)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path())


@pytest.fixture(scope="module")
def datasets():
    import datasets

    return datasets


@pytest.fixture()
def json_dataset(tmp_path, datasets):
    """A data set loaded from a JSON Lines file, so ``map`` results are cached on disk (in-memory data sets are
    never cached by ``datasets``)."""
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"sentence": a, "hypothesis": b, "label": y}) + "\n" for a, b, y in ROWS))
    return datasets.load_dataset("json", data_files=str(path), cache_dir=str(tmp_path / "hf-cache"))["train"]


def _runner_features(
    tokenizer, annotator, syntax_inputs, pair: bool, constituency: str = "given", max_distance: int = 15
):
    """The runner's featurization (tasks.featurize.build_features) of the same rows."""
    data = TaskData(
        [TaskExample(f"x-{i}", a, b if pair else None, y) for i, (a, b, y) in enumerate(ROWS)],
        source="inline",
        fingerprint="rows",
    )
    context = TaskContext(
        tokenizer,
        annotator=annotator,
        syntax_inputs=tuple(syntax_inputs),
        max_length=32,
        use_cache=False,
        progress=False,
        constituency=constituency,
        max_distance=max_distance,
    )
    return build_features("rows", data, context, "train")


@pytest.mark.parametrize("pair", [False, True])
def test_hf_datasets_adds_the_runner_features_and_only_the_declared_keys(json_dataset, tokenizer, annotator, pair):
    config = _sgnet_config()
    assert config.syntax_inputs == ("syntax_tree", "dep_tin", "dep_tout")
    ds = add_syntax_features(
        json_dataset,
        tokenizer,
        "sentence",
        "hypothesis" if pair else None,
        config=config,
        annotator=annotator,
        max_length=32,
    )
    added = set(ds.column_names) - set(json_dataset.column_names)
    assert added == {k for k in TOKEN_KEYS if k in ds.column_names} | set(config.syntax_inputs)
    reference = _runner_features(tokenizer, annotator, config.syntax_inputs, pair)
    for i in range(len(ROWS)):
        for key, value in reference[i].items():
            if key != "labels":
                np.testing.assert_array_equal(np.asarray(ds[i][key]), value, err_msg=f"row {i} {key}")


def test_hf_datasets_syntax_bert_keys_and_constituency_from_dependency(json_dataset, tokenizer, annotator):
    from transformers import AutoConfig

    config = SyntaxBertConfig(encoder=AutoConfig.from_pretrained(minilm_path()), max_distance=4)
    ds = add_syntax_features(json_dataset, tokenizer, "sentence", config=config, annotator=annotator, max_length=32)
    assert set(ds.column_names) - set(json_dataset.column_names) - set(TOKEN_KEYS) == set(config.syntax_inputs)
    reference = _runner_features(
        tokenizer, annotator, config.syntax_inputs, False, constituency="from_dependency", max_distance=4
    )
    row = ds[1]
    for key in config.syntax_inputs:
        np.testing.assert_array_equal(np.asarray(row[key]), reference[1][key], err_msg=key)
    assert np.asarray(row["con_anc_lo"]).shape[1] >= 4 and (np.asarray(row["con_depth"]) > 0).any()


def test_hf_datasets_second_call_is_a_cache_hit(json_dataset, tokenizer, annotator):
    counting = CountingAnnotator(annotator)
    config = _sgnet_config()
    first = add_syntax_features(json_dataset, tokenizer, "sentence", config=config, annotator=counting, max_length=32)
    assert counting.calls == len(ROWS)
    again = add_syntax_features(json_dataset, tokenizer, "sentence", config=config, annotator=counting, max_length=32)
    assert counting.calls == len(ROWS)  # nothing parsed: datasets loaded the cached result
    assert again._fingerprint == first._fingerprint and again.cache_files == first.cache_files
    other = add_syntax_features(json_dataset, tokenizer, "sentence", config=config, annotator=counting, max_length=16)
    assert other._fingerprint != first._fingerprint and counting.calls == 2 * len(ROWS)  # an option changes the key


def test_hf_datasets_worker_processes_give_the_same_rows(json_dataset, tokenizer, annotator):
    config = _sgnet_config()
    one = add_syntax_features(
        json_dataset,
        tokenizer,
        "sentence",
        config=config,
        annotator=annotator,
        max_length=32,
        load_from_cache_file=False,
    )
    two = add_syntax_features(
        json_dataset,
        tokenizer,
        "sentence",
        config=config,
        annotator=annotator,
        max_length=32,
        num_proc=2,
        batch_size=2,
        load_from_cache_file=False,
    )
    assert one.to_dict() == two.to_dict()


def test_hf_datasets_plain_model_needs_no_parser_and_errors_are_clear(json_dataset, tokenizer, datasets):
    plain = _sgnet_config(use_sg_layer=False, pooling="cls")
    assert plain.syntax_inputs == ()
    ds = add_syntax_features(json_dataset, tokenizer, "sentence", config=plain, annotator="no-such-parser")
    assert ds[0]["input_ids"] == tokenizer(ROWS[0][0])["input_ids"]
    with pytest.raises(ConfigError, match=r"needs the model \(model=...\) or its config"):
        add_syntax_features(json_dataset, tokenizer, "sentence")
    with pytest.raises(InputError, match="no column 'text'"):
        add_syntax_features(json_dataset, tokenizer, "text", config=plain)
    split = add_syntax_features(datasets.DatasetDict(train=json_dataset), tokenizer, "sentence", config=plain)
    assert split["train"][0]["input_ids"] == ds[0]["input_ids"]


def test_hf_datasets_plain_trainer_trains_on_the_result(json_dataset, tokenizer, annotator, tmp_path):
    """The own-loop journey: data set -> add_syntax_features -> transformers.Trainer with default arguments."""
    import torch
    from transformers import Trainer, TrainingArguments

    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.modeling import SGNetForSequenceClassification

    torch.manual_seed(0)
    model = SGNetForSequenceClassification.from_encoder_pretrained(minilm_path(), num_labels=2)
    ds = add_syntax_features(json_dataset, tokenizer, "sentence", model=model, annotator=annotator, max_length=32)
    args = TrainingArguments(
        output_dir=str(tmp_path / "run"),
        max_steps=2,
        per_device_train_batch_size=4,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
    )
    trainer = Trainer(
        model=model.train(), args=args, train_dataset=ds, data_collator=SyntaxCollator(tokenizer.pad_token_id)
    )
    assert np.isfinite(trainer.train().training_loss)


@pytest.mark.parametrize("pair", [False, True])
def test_hf_datasets_syntax_features_of_a_list_are_the_runner_features(tokenizer, annotator, pair):
    """Without ``datasets``: one dict of arrays per text (pair), equal to the runner's featurization."""
    config = _sgnet_config()
    rows = syntax_features(
        [a for a, _, _ in ROWS],
        tokenizer,
        [b for _, b, _ in ROWS] if pair else None,
        config=config,
        annotator=annotator,
        max_length=32,
    )
    reference = _runner_features(tokenizer, annotator, config.syntax_inputs, pair)
    assert len(rows) == len(ROWS)
    for i, row in enumerate(rows):
        assert set(row) == set(reference[i]) - {"labels"}
        for key, value in row.items():
            np.testing.assert_array_equal(value, reference[i][key], err_msg=f"row {i} {key}")
    with pytest.raises(InputError, match="5 texts but 1 text_pairs"):
        syntax_features([a for a, _, _ in ROWS], tokenizer, ["x"], config=config, annotator=annotator)
    assert syntax_features([], tokenizer, config=config, annotator=annotator) == []
