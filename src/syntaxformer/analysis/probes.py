"""Structural probes (Hewitt & Manning 2019) and linear POS / dependency-label probes per layer of an encoder, on
UD English-EWT dev split by document (``syntaxformer probe``; ``docs/probes.md``): the data split, the probes and the
runs; the word vectors are in :mod:`.probe_vectors`, the tree targets and scores in :mod:`.probe_metrics`."""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from syntaxformer.analysis.probe_metrics import (
    PUNCTUATION_UPOS,
    SPEARMAN_LENGTHS,
    root_accuracy,
    spearman_by_length,
    tree_distance_matrix,
    uuas,
)
from syntaxformer.analysis.probe_vectors import ProbedModel, load_probed_model, word_representations
from syntaxformer.data.readers.conllu import read_conllu
from syntaxformer.data.sentence import Sentence
from syntaxformer.data.tree import depths
from syntaxformer.defaults import shared_data_dir
from syntaxformer.errors import ConfigError, DataError
from syntaxformer.utils import progress as progress_bar
from syntaxformer.utils import subsample

logger = logging.getLogger(__name__)

__all__ = [
    "METRICS",
    "UD_EWT_DEV",
    "ProbeData",
    "ProbeSettings",
    "format_probe_table",
    "linear_probe_accuracy",
    "load_probe_data",
    "predict_structural",
    "probe_model",
    "probe_models",
    "split_documents",
    "train_structural_probe",
]


#: Metric names, in the order of the table.
METRICS: tuple[str, ...] = (
    "uuas",
    "distance_spearman",
    "root_accuracy",
    "depth_spearman",
    "pos_accuracy",
    "label_accuracy",
)

#: The EWT dev file under the shared data folder.
UD_EWT_DEV = ("ud_ewt", "en_ewt-ud-dev.conllu")


# -- data -----------------------------------------------------------------------------------------------------
@dataclass
class ProbeData:
    """The probe-train and probe-test sentences (after subsampling), the ``# newdoc id`` of every document of each part
    (before), and ``info`` (file, split rule, sizes; JSON-ready)."""

    train: list[Sentence]
    test: list[Sentence]
    train_documents: list[str]
    test_documents: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def split_documents(
    sentences: Sequence[Sentence], test_every: int = 4
) -> tuple[list[list[Sentence]], list[list[Sentence]], list[str], list[str]]:
    """Split sentences into documents (a ``newdoc id`` comment starts one) and those into probe-train and probe-test:
    document ``k`` (0-based, file order) is a test document when ``k % test_every == test_every - 1`` (so every
    genre of EWT, grouped in the file, is in both parts). Returns ``(train documents, test documents, train ids,
    test ids)``; ConfigError: ``test_every`` below 2."""
    if test_every < 2:
        raise ConfigError(f"test_every={test_every} must be at least 2 (one test document in every test_every)")
    docs: list[list[Sentence]] = []
    ids: list[str] = []
    for s in sentences:
        doc_id = (s.metadata or {}).get("newdoc id")
        if doc_id is not None or not docs:
            docs.append([])
            ids.append(str(doc_id) if doc_id is not None else f"<document {len(ids)}>")
        docs[-1].append(s)
    test = [k for k in range(len(docs)) if k % test_every == test_every - 1]
    train = [k for k in range(len(docs)) if k % test_every != test_every - 1]
    return [docs[k] for k in train], [docs[k] for k in test], [ids[k] for k in train], [ids[k] for k in test]


def load_probe_data(
    path: str | os.PathLike | None = None,
    *,
    max_train_sentences: int | None = 1000,
    max_test_sentences: int | None = None,
    seed: int = 0,
    test_every: int = 4,
) -> ProbeData:
    """Read a CoNLL-U file with ``# newdoc id`` comments (default: UD English-EWT dev in the shared data folder), split
    it by document (:func:`split_documents`) and take seeded subsamples (``None`` = all) of both parts. Raises
    DataError: no file given and no EWT dev file in the shared data folder; sentences without UPOS or labels."""
    if path is None:
        root = shared_data_dir()
        if root is None or not root.joinpath(*UD_EWT_DEV).is_file():
            raise DataError(
                "UD English-EWT dev not found: set SYNTAXFORMER_DATA to the shared data folder (it has "
                f"{'/'.join(UD_EWT_DEV)}), or give a CoNLL-U file"
            )
        path = root.joinpath(*UD_EWT_DEV)
    sentences = list(read_conllu(path))
    for s in sentences:
        if s.upos is None or s.deprels is None:
            raise DataError(
                f"{path}: sentence {s.sent_id or '?'} has no UPOS or DEPREL column; the probes need "
                "both (a treebank in CoNLL-U with gold tags and labels)"
            )
    train_docs, test_docs, train_ids, test_ids = split_documents(sentences, test_every)
    train_all = [s for d in train_docs for s in d]
    test_all = [s for d in test_docs for s in d]
    if not train_all or not test_all:
        raise DataError(
            f"{path}: {len(train_docs) + len(test_docs)} document(s) give no probe-test or no "
            f"probe-train sentence with test_every={test_every}; the file needs # newdoc id comments"
        )
    train = subsample(train_all, max_train_sentences, seed)
    test = subsample(test_all, max_test_sentences, seed)
    info = {
        "file": str(path),
        "split": f"documents in file order; document k (0-based) is probe-test when "
        f"k % {test_every} == {test_every - 1}, else probe-train",
        "documents": {"train": len(train_ids), "test": len(test_ids)},
        "sentences_available": {"train": len(train_all), "test": len(test_all)},
        "sentences": {"train": len(train), "test": len(test)},
        "words": {"train": sum(len(s) for s in train), "test": sum(len(s) for s in test)},
        "subsample_seed": seed,
    }
    return ProbeData(train, test, train_ids, test_ids, info)


# -- the probes -----------------------------------------------------------------------------------------------
@dataclass
class ProbeSettings:
    """Budget and hyper-parameters of the probes (defaults: small enough for a shared CPU): ``rank`` of the structural
    probes' ``B`` (H&M find 64 enough for BERT), ``epochs`` over the probe-train sentences / words, Adam ``lr`` of the
    structural probes (H&M: 0.001) and ``linear_lr`` of the linear ones, ``batch_size`` in sentences and
    ``linear_batch_size`` in words, and the ``seed`` of every initialisation and batch order."""

    rank: int = 64
    epochs: int = 10
    lr: float = 1e-3
    linear_lr: float = 1e-2
    batch_size: int = 20
    linear_batch_size: int = 256
    seed: int = 0


def _project(kind: str, proj: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[B, n, n]`` squared distances ``||(h_i - h_j) B||²`` (``"distance"``) or ``[B, n]`` squared norms
    ``||h_i B||²`` (``"depth"``) of the vectors ``x`` ``[B, n, H]``."""
    if kind not in ("distance", "depth"):
        raise ConfigError(f"structural probe kind {kind!r} is not valid; choose 'distance' or 'depth'")
    t = x @ proj  # (B, n, k)
    if kind == "distance":
        t = t.unsqueeze(2) - t.unsqueeze(1)  # (B, n, n, k)
    return (t * t).sum(-1)


def train_structural_probe(
    kind: str, vectors: Sequence[np.ndarray], targets: Sequence[np.ndarray], settings: ProbeSettings | None = None
) -> torch.Tensor:
    """Train H&M's distance (``kind="distance"``) or depth (``"depth"``) probe with Adam on the L1 loss per sentence
    (divided by its words, squared for distances). Arguments: vectors: per sentence, ``[n, H]`` word vectors;
    targets: per sentence, ``[n, n]`` gold tree distances or ``[n]`` depths; settings: budget and seed (default
    :class:`ProbeSettings`). Returns ``B`` ``[H, rank]`` (predictions: :func:`predict_structural`)."""
    settings = settings or ProbeSettings()
    gen = torch.Generator().manual_seed(settings.seed)
    proj = ((torch.rand(vectors[0].shape[1], settings.rank, generator=gen) * 2 - 1) * 0.05).requires_grad_(True)
    opt = torch.optim.Adam([proj], lr=settings.lr)
    rng = np.random.default_rng(settings.seed)
    for _ in range(settings.epochs):
        order = rng.permutation(len(vectors))
        for start in range(0, len(order), settings.batch_size):
            idx = order[start : start + settings.batch_size]
            x = torch.nn.utils.rnn.pad_sequence(
                [torch.from_numpy(np.asarray(vectors[i], dtype=np.float32)) for i in idx], batch_first=True
            )  # (B, n, H), zero-padded
            mask = torch.arange(x.shape[1]) < torch.tensor([len(vectors[i]) for i in idx])[:, None]  # (B, n)
            pred = _project(kind, proj, x)
            y = torch.zeros(pred.shape)
            for b, i in enumerate(idx):
                target = torch.from_numpy(np.asarray(targets[i], dtype=np.float32))
                y[b][tuple(slice(m) for m in target.shape)] = target
            if kind == "distance":
                mask = mask.unsqueeze(1) & mask.unsqueeze(2)  # (B, n, n)
            n = mask.flatten(1).sum(1).float()  # words (depth) or word pairs (distance) per sentence
            loss = (((pred - y).abs() * mask).flatten(1).sum(1) / n).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return proj.detach()


def predict_structural(kind: str, proj: torch.Tensor, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per sentence, the ``[n, n]`` distances (``kind="distance"``) or ``[n]`` depths (``"depth"``) of a structural
    probe ``B`` ``[H, rank]``."""
    with torch.no_grad():
        batches = (torch.from_numpy(np.asarray(v, dtype=np.float32)).unsqueeze(0) for v in vectors)
        return [_project(kind, proj, x)[0].numpy().astype(np.float64) for x in batches]


def linear_probe_accuracy(
    train_x: np.ndarray,
    train_y: Sequence[str],
    test_x: np.ndarray,
    test_y: Sequence[str],
    settings: ProbeSettings | None = None,
) -> float:
    """Accuracy on ``test_x`` of a softmax regression (one linear layer) trained on ``train_x`` ``[N, H]`` with
    labels ``train_y`` (Adam, cross-entropy, ``settings.epochs`` passes; a test label never seen in training
    counts as an error)."""
    settings = settings or ProbeSettings()
    labels = sorted(set(train_y))
    index = {lab: k for k, lab in enumerate(labels)}
    gen = torch.Generator().manual_seed(settings.seed)
    layer = torch.nn.Linear(train_x.shape[1], len(labels))
    with torch.no_grad():
        bound = 1 / np.sqrt(train_x.shape[1])
        layer.weight.copy_((torch.rand(layer.weight.shape, generator=gen) * 2 - 1) * bound)
        layer.bias.zero_()
    opt = torch.optim.Adam(layer.parameters(), lr=settings.linear_lr)
    x = torch.from_numpy(np.asarray(train_x, dtype=np.float32))
    y = torch.tensor([index[t] for t in train_y])
    rng = np.random.default_rng(settings.seed)
    for _ in range(settings.epochs):
        order = torch.from_numpy(rng.permutation(len(y)))
        for start in range(0, len(order), settings.linear_batch_size):
            idx = order[start : start + settings.linear_batch_size]
            loss = torch.nn.functional.cross_entropy(layer(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = layer(torch.from_numpy(np.asarray(test_x, dtype=np.float32))).argmax(-1).numpy()
    gold = np.array([index.get(t, -1) for t in test_y])
    return float((pred == gold).mean()) if len(gold) else float("nan")


# -- the runs -------------------------------------------------------------------------------------------------
def _word_labels(sentences: Sequence[Sentence], column: str) -> list[str]:
    """Every word's UPOS (``"upos"``) or universal relation (``"deprels"``: the part before ':')."""
    return [t.split(":", 1)[0] for s in sentences for t in getattr(s, column) or ()]


def _layer_scores(
    train_v: list[np.ndarray],
    test_v: list[np.ndarray],
    train: list[Sentence],
    test: list[Sentence],
    settings: ProbeSettings,
) -> dict[str, float]:
    pred = {}
    for kind, target in (("distance", tree_distance_matrix), ("depth", depths)):
        probe = train_structural_probe(kind, train_v, [target(s.heads) for s in train], settings)
        pred[kind] = predict_structural(kind, probe, test_v)
    tx, vx = np.concatenate(train_v), np.concatenate(test_v)
    pos, lab = (
        linear_probe_accuracy(tx, _word_labels(train, column), vx, _word_labels(test, column), settings)
        for column in ("upos", "deprels")
    )
    scores = {
        "uuas": uuas(pred["distance"], test),
        "distance_spearman": spearman_by_length(pred["distance"], [tree_distance_matrix(s.heads) for s in test]),
        "root_accuracy": root_accuracy(pred["depth"], test),
        "depth_spearman": spearman_by_length(pred["depth"], [depths(s.heads) for s in test]),
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
    settings = settings or ProbeSettings()
    t0 = time.time()
    everyone = data.train + data.test
    vectors, kept = word_representations(
        probed,
        everyone,
        layers,
        word_vector=word_vector,
        syntax=syntax,
        batch_size=batch_size,
        max_length=max_length,
        progress=progress,
    )
    train_pos = [k for k, i in enumerate(kept) if i < len(data.train)]
    test_pos = [k for k, i in enumerate(kept) if i >= len(data.train)]
    train, test = [everyone[kept[k]] for k in train_pos], [everyone[kept[k]] for k in test_pos]
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
    MiniLM) on one data split (:func:`load_probe_data`, subsample seed
    ``settings.seed``): what ``syntaxformer probe`` runs. Every asked layer must exist in every model. Returns
    JSON-ready: ``data`` (file, split rule, sizes, document ids of both parts), ``settings``, ``models`` (one
    :func:`probe_model` result each), ``date``."""
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
