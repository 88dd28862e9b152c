"""Structural probes (Hewitt & Manning 2019) and linear POS / dependency-label probes per layer of an encoder, on
UD English-EWT dev split by document (``syntaxformer probe``; the method: ``docs/probes.md``).

This module runs the probes (:func:`probe_model`, :func:`probe_models`, :func:`format_probe_table`); its parts are
the data (:mod:`.probe_data`), the word vectors (:mod:`.probe_vectors`), the metrics (:mod:`.probe_metrics`) and the
probes (:mod:`.probe_training`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from syntaxformer.analysis.probe_data import ProbeData, load_probe_data
from syntaxformer.analysis.probe_metrics import (
    PUNCTUATION_UPOS,
    SPEARMAN_LENGTHS,
    depth_spearman,
    distance_spearman,
    root_accuracy,
    tree_distance_matrix,
    uuas,
)
from syntaxformer.analysis.probe_training import (
    ProbeSettings,
    linear_probe_accuracy,
    predict_depths,
    predict_distances,
    train_depth_probe,
    train_distance_probe,
)
from syntaxformer.analysis.probe_vectors import ProbedModel, load_probed_model, word_representations
from syntaxformer.data.sentence import Sentence

logger = logging.getLogger(__name__)

__all__ = ["METRICS", "format_probe_table", "probe_model", "probe_models"]


#: Metric names, in the order of the table.
METRICS: tuple[str, ...] = (
    "uuas",
    "distance_spearman",
    "root_accuracy",
    "depth_spearman",
    "pos_accuracy",
    "label_accuracy",
)


def _universal(label: str) -> str:
    return label.split(":", 1)[0]


def _tags(values: list[str] | None) -> list[str]:
    """A sentence's UPOS or DEPREL column, which every probe sentence has."""
    assert values is not None  # for the type checker: load_probe_data refuses sentences without UPOS or DEPREL
    return values


def _layer_scores(
    train_v: list[np.ndarray],
    test_v: list[np.ndarray],
    train: list[Sentence],
    test: list[Sentence],
    settings: ProbeSettings,
) -> dict[str, float]:
    from syntaxformer.data.tree import depths as tree_depths

    train_dist = [tree_distance_matrix(s.heads) for s in train]
    test_dist = [tree_distance_matrix(s.heads) for s in test]
    train_depth = [tree_depths(s.heads) for s in train]
    test_depth = [tree_depths(s.heads) for s in test]
    dist_probe = train_distance_probe(train_v, train_dist, settings)
    pred_dist = predict_distances(dist_probe, test_v)
    depth_probe = train_depth_probe(train_v, train_depth, settings)
    pred_depth = predict_depths(depth_probe, test_v)
    tx, vx = np.concatenate(train_v), np.concatenate(test_v)
    pos = linear_probe_accuracy(
        tx, [t for s in train for t in _tags(s.upos)], vx, [t for s in test for t in _tags(s.upos)], settings
    )
    lab = linear_probe_accuracy(
        tx,
        [_universal(t) for s in train for t in _tags(s.deprels)],
        vx,
        [_universal(t) for s in test for t in _tags(s.deprels)],
        settings,
    )
    scores = {
        "uuas": uuas(pred_dist, test),
        "distance_spearman": distance_spearman(pred_dist, test_dist),
        "root_accuracy": root_accuracy(pred_depth, test),
        "depth_spearman": depth_spearman(pred_depth, test_depth),
        "pos_accuracy": pos,
        "label_accuracy": lab,
    }
    return {k: round(float(v), 4) for k, v in scores.items()}


def probe_model(
    probed: ProbedModel,
    data: ProbeData,
    layers: Sequence[str] | None = None,
    settings: ProbeSettings | None = None,
    *,
    word_vector: str = "mean",
    syntax: str = "gold",
    batch_size: int = 32,
    max_length: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """All probes at every asked layer (default all) of one model; ``word_vector``, ``syntax``, ``batch_size``,
    ``max_length`` as :func:`~syntaxformer.analysis.probe_vectors.word_representations`. Returns JSON-ready: ``model``
    (what was loaded), ``sentences`` (train / test kept), ``layers`` (one dict per layer: ``layer`` and the
    :data:`METRICS`), ``seconds``."""
    from syntaxformer.utils import progress as progress_bar

    settings = settings or ProbeSettings()
    t0 = time.time()
    vectors, kept_train = word_representations(
        probed,
        data.train + data.test,
        layers,
        word_vector=word_vector,
        syntax=syntax,
        batch_size=batch_size,
        max_length=max_length,
        progress=progress,
    )
    n_train = len(data.train)
    everyone = data.train + data.test
    train_pos = [k for k, i in enumerate(kept_train) if i < n_train]
    test_pos = [k for k, i in enumerate(kept_train) if i >= n_train]
    train = [everyone[kept_train[k]] for k in train_pos]
    test = [everyone[kept_train[k]] for k in test_pos]
    t1 = time.time()
    rows = []
    for name in progress_bar(list(vectors), desc="probes", disable=None if progress else True):
        v = vectors[name]
        scores = _layer_scores([v[k] for k in train_pos], [v[k] for k in test_pos], train, test, settings)
        rows.append({"layer": name, **scores})
        logger.info("probes %s %s", name, json.dumps(scores))
    return {
        "model": probed.description,
        "sentences": {"train": len(train), "test": len(test)},
        "words": {"train": sum(map(len, train)), "test": sum(map(len, test))},
        "layers": rows,
        "seconds": {"word_vectors": round(t1 - t0, 1), "probes": round(time.time() - t1, 1)},
    }


def probe_models(
    models: Sequence[str | None],
    *,
    system: str | None = None,
    options: Mapping[str, Any] | None = None,
    data_file: str | os.PathLike | None = None,
    max_train_sentences: int | None = 1000,
    max_test_sentences: int | None = None,
    layers: Sequence[str] | None = None,
    settings: ProbeSettings | None = None,
    word_vector: str = "mean",
    syntax: str = "gold",
    progress: bool = True,
) -> dict[str, Any]:
    """Probe several models (:func:`~syntaxformer.analysis.probe_vectors.load_probed_model`; ``None`` = the offline
    MiniLM) on one data split (:func:`~syntaxformer.analysis.probe_data.load_probe_data`, subsample seed
    ``settings.seed``): what ``syntaxformer probe`` runs. Every asked layer must exist in every model. Returns
    JSON-ready: ``data`` (file, split rule, sizes, document ids of both parts), ``settings``, ``models`` (one
    :func:`probe_model` result each), ``date``."""
    import datetime

    settings = settings or ProbeSettings()
    data = load_probe_data(
        data_file, max_train_sentences=max_train_sentences, max_test_sentences=max_test_sentences, seed=settings.seed
    )
    results = []
    for model in models:
        probed = load_probed_model(model, system, options, seed=settings.seed)
        results.append(
            probe_model(probed, data, layers, settings, word_vector=word_vector, syntax=syntax, progress=progress)
        )
    return {
        "data": {**data.info, "train_documents": data.train_documents, "test_documents": data.test_documents},
        "settings": {
            **dataclasses.asdict(settings),
            "word_vector": word_vector,
            "syntax": syntax,
            "punctuation_upos": sorted(PUNCTUATION_UPOS),
            "spearman_lengths": list(SPEARMAN_LENGTHS),
            "label": "universal relation (the part before ':')",
            "threads": torch.get_num_threads(),
        },
        "models": results,
        "date": datetime.date.today().isoformat(),
    }


def format_probe_table(result: Mapping[str, Any]) -> str:
    """One model's result (an item of ``probe_models(...)["models"]``) as a Markdown table, one row per layer."""
    head = (
        "| layer | UUAS | dist. Spearman | root acc. | depth Spearman | POS acc. | label acc. |\n"
        "|---|---|---|---|---|---|---|"
    )
    rows = [f"| {r['layer']} | " + " | ".join(f"{r[m]:.3f}" for m in METRICS) + " |" for r in result["layers"]]
    return "\n".join([head, *rows])
