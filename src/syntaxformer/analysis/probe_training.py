"""Training and applying the probes (:mod:`syntaxformer.analysis.probes`): Hewitt & Manning's distance and depth
probes (a rank-``k`` projection ``B`` trained with Adam on L1 losses, with a fixed seed) and linear softmax
probes (:func:`linear_probe_accuracy`), under one budget (:class:`ProbeSettings`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "ProbeSettings",
    "linear_probe_accuracy",
    "predict_depths",
    "predict_distances",
    "train_depth_probe",
    "train_distance_probe",
]


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


def _padded(vectors: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, n, H]`` zero-padded vectors and the ``[B, n]`` word mask."""
    x = torch.nn.utils.rnn.pad_sequence(
        [torch.from_numpy(np.asarray(v, dtype=np.float32)) for v in vectors], batch_first=True
    )
    return x, torch.arange(x.shape[1]) < torch.tensor([len(v) for v in vectors])[:, None]


def _project_distances(proj: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    t = x @ proj  # (B, n, k)
    diff = t.unsqueeze(2) - t.unsqueeze(1)  # (B, n, n, k)
    return (diff * diff).sum(-1)  # (B, n, n)


def _project_depths(proj: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    t = x @ proj  # (B, n, k)
    return (t * t).sum(-1)  # (B, n)


def _train_structural(
    vectors: Sequence[np.ndarray], targets: Sequence[np.ndarray], kind: str, settings: ProbeSettings
) -> torch.Tensor:
    gen = torch.Generator().manual_seed(settings.seed)
    dim = vectors[0].shape[1]
    proj = ((torch.rand(dim, settings.rank, generator=gen) * 2 - 1) * 0.05).requires_grad_(True)
    opt = torch.optim.Adam([proj], lr=settings.lr)
    rng = np.random.default_rng(settings.seed)
    for _ in range(settings.epochs):
        order = rng.permutation(len(vectors))
        for start in range(0, len(order), settings.batch_size):
            idx = order[start : start + settings.batch_size]
            x, mask = _padded([vectors[i] for i in idx])
            n = mask.sum(1).float()  # (B,)
            if kind == "distance":
                y = torch.zeros(x.shape[0], x.shape[1], x.shape[1])
                for b, i in enumerate(idx):
                    m = len(targets[i])
                    y[b, :m, :m] = torch.from_numpy(np.asarray(targets[i], dtype=np.float32))
                pair = mask.unsqueeze(1) & mask.unsqueeze(2)  # (B, n, n)
                err = ((_project_distances(proj, x) - y).abs() * pair).sum((1, 2)) / (n * n)
            else:
                y = torch.zeros(x.shape[:2])
                for b, i in enumerate(idx):
                    y[b, : len(targets[i])] = torch.from_numpy(np.asarray(targets[i], dtype=np.float32))
                err = ((_project_depths(proj, x) - y).abs() * mask).sum(1) / n
            loss = err.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return proj.detach()


def train_distance_probe(
    vectors: Sequence[np.ndarray], distances: Sequence[np.ndarray], settings: ProbeSettings | None = None
) -> torch.Tensor:
    """Train H&M's distance probe. Returns ``B`` ``[H, rank]``; predicted distances are ``||(h_i - h_j) B||²``.
    Arguments: vectors: per sentence, ``[n, H]`` word vectors; distances: per sentence, ``[n, n]`` gold tree distances;
    settings: budget and seed (default :class:`ProbeSettings`)."""
    return _train_structural(vectors, distances, "distance", settings or ProbeSettings())


def train_depth_probe(
    vectors: Sequence[np.ndarray], depths: Sequence[np.ndarray], settings: ProbeSettings | None = None
) -> torch.Tensor:
    """Train H&M's depth probe. Returns ``B`` ``[H, rank]``; predicted depths are ``||h_i B||²``."""
    return _train_structural(vectors, depths, "depth", settings or ProbeSettings())


def predict_distances(proj: torch.Tensor, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per sentence, the ``[n, n]`` distances ``||(h_i - h_j) B||²`` of a distance probe ``B`` ``[H, rank]``."""
    return _predict(_project_distances, proj, vectors)


def predict_depths(proj: torch.Tensor, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per sentence, the ``[n]`` depths ``||h_i B||²`` of a depth probe ``B`` ``[H, rank]``."""
    return _predict(_project_depths, proj, vectors)


def _predict(
    project: Callable[..., torch.Tensor], proj: torch.Tensor, vectors: Sequence[np.ndarray]
) -> list[np.ndarray]:
    with torch.no_grad():
        batches = (torch.from_numpy(np.asarray(v, dtype=np.float32)).unsqueeze(0) for v in vectors)
        return [project(proj, x)[0].numpy().astype(np.float64) for x in batches]


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
