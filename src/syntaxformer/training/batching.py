"""Length-grouped batches: pairs of similar length share a batch, so little of each batch is padding
(:func:`length_batches`; :class:`LengthGroupedBatchSampler`, a ``DataLoader`` ``batch_sampler`` whose batches a
resumed run draws again)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler

from syntaxformer.errors import ConfigError

__all__ = ["LengthGroupedBatchSampler", "length_batches"]


def length_batches(
    lengths: Sequence[int], batch_size: int, shuffle: bool, seed: int = 0, bucket: int = 50
) -> list[list[int]]:
    """Indices grouped into batches of similar length. With ``shuffle``: a seeded permutation is cut into chunks of
    ``bucket * batch_size`` items, each sorted by length and cut into batches, and the batches are shuffled. Without:
    batches of the items sorted by length, longest first (memory problems show at once)."""
    n = len(lengths)
    if batch_size < 1:
        raise ConfigError(f"batch_size must be positive, got {batch_size}")
    sizes = np.asarray(lengths)
    if not shuffle:
        order = np.argsort(-sizes, kind="stable")
        return [order[i : i + batch_size].tolist() for i in range(0, n, batch_size)]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    batches: list[list[int]] = []
    step = bucket * batch_size
    for s in range(0, n, step):
        chunk = perm[s : s + step]
        chunk = chunk[np.argsort(sizes[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size].tolist() for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


class LengthGroupedBatchSampler(Sampler[list[int]]):
    """Shuffled length-grouped training batches (:func:`length_batches`); epoch ``e`` (``set_epoch``, set by the
    Trainer) uses seed ``seed * 100_003 + e``. ``bucket``: batches per sorted chunk."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int = 0, bucket: int = 50):
        super().__init__()
        self.lengths = list(lengths)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.bucket = int(bucket)
        self.drop_last = False
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s batches on the next iteration."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        yield from length_batches(self.lengths, self.batch_size, True, self.seed * 100_003 + self.epoch, self.bucket)

    def __len__(self) -> int:
        n, step = len(self.lengths), self.bucket * self.batch_size
        return sum(-(-min(step, n - s) // self.batch_size) for s in range(0, n, step))
