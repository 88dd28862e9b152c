"""The typed Task contract (tasks/base.py): what the runner reads of a task, its split data and its features."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from syntaxformer.data.examples import TaskData, TaskExample, content_fingerprint
from syntaxformer.data.readers.parallel import ParallelCorpus
from syntaxformer.data.readers.squad import SquadExample
from syntaxformer.errors import ConfigError
from syntaxformer.tasks.base import Predictions, Task, sample_limit
from syntaxformer.tasks.featurize import FeatureDataset


class _Outside(Task[TaskData]):
    """A task defined outside the package: not a SentenceTask, featurized by the shared pipeline."""

    name = "outside"
    metric_names = ("accuracy",)

    def load_split(self, split: str, data: Any) -> TaskData:
        return TaskData([TaskExample("a", "x", label=1)], "mem", "fp", 1)

    def featurize(self, data: TaskData, context: Any, split: str) -> FeatureDataset:
        raise NotImplementedError

    def postprocess(self, data: TaskData, features: Any, raw: Any, auxiliary: Any = None) -> Predictions:
        return Predictions(ids=[], values=[])

    def compute_metrics(self, data: TaskData, predictions: Predictions) -> dict[str, float]:
        return {}


def test_base_feature_facts_of_the_shared_pipeline_for_any_task():
    import datasets

    rows = datasets.Dataset.from_dict({"guid": ["a", "b"], "labels": [1, 0], "input_ids": [[0, 1], [2, 3]]})
    ds = FeatureDataset(rows, {"cache": "hit"})
    facts = _Outside().feature_facts(ds)
    assert facts["cache"] == "hit" and facts["labels"].tolist() == [1, 0] and facts["labels"].dtype == np.int64
    assert _Outside().feature_facts([{"input_ids": np.arange(2)}]) == {}  # features the runner knows nothing of


def test_base_split_data_of_every_kind():
    pairs = ParallelCorpus(["a b", "c"], ["x", "y z"], ["1", "2"], "corpus.en")
    assert pairs.source == "corpus.en" and pairs.total == 2 and pairs.sample_note is None and pairs.has_labels
    assert pairs.fingerprint == content_fingerprint([["a b", "x"], ["c", "y z"]])
    assert not ParallelCorpus(["a"], None, ["1"]).has_labels  # source-only: no references to score
    squad = TaskData([SquadExample(qid="q", title="t", context="c", question="?")], "mem", "fp", 1)
    assert squad.has_labels  # examples without a `label` field count as labeled, as before
    assert not TaskData([TaskExample("a", "x")], "mem", "fp", 1).has_labels


def test_base_sample_limit_reads_the_runners_and_the_splits_key():
    assert sample_limit({"max_samples": 5, "max_eval_samples": 9, "data_seed": 3}, "dev") == (5, 3)
    assert sample_limit({"max_samples": None, "max_eval_samples": 9}, "dev") == (9, 0)
    assert sample_limit({}, "train") == (None, 0)
    with pytest.raises(ConfigError, match="max_predict_samples=0 must be a positive number of questions"):
        sample_limit({"max_samples": 0}, "test", "questions")


def test_base_raw_records_default_serves_sequence_classification_only():
    task = _Outside()
    task.head = "token_classification"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="makes no records of raw inputs"):
        task.raw_records([], task.load_split("dev", {}), None, {}, None, {})


def test_base_task_option_types_come_from_the_constructor(monkeypatch):
    from syntaxformer import registry
    from syntaxformer.tasks.base import task_option_names, task_option_types

    squad = task_option_types("squad2")
    assert tuple(squad) == task_option_names("squad2") and squad["doc_stride"] is int
    assert task_option_types("no-such-task") == {} and task_option_names("no-such-task") == ()

    def unresolved(window: UndefinedType = None, plain=1) -> Any:  # type: ignore[name-defined]  # noqa: F821
        raise AssertionError("not built")

    monkeypatch.setitem(registry.TASKS._entries, "unresolved-task", unresolved)
    # the names still come (for --set); the types say none resolves, so `train --help` offers no flags for them
    assert task_option_names("unresolved-task") == ("window", "plain")
    assert task_option_types("unresolved-task") == {"window": None, "plain": None}
