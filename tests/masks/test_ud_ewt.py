"""SDOI masks and dependency relation groups on every sentence of UD English-EWT dev (real trees).

Reads ``../shared/data/ud_ewt/en_ewt-ud-dev.conllu`` (relative to the repository root) and skips if it is absent.
Each word gets ``1 + len(word) // 4`` pieces; the reference is vectorised per sentence with numpy over explicit
ancestor sets (from :func:`syntaxformer.data.tree.ancestors`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from syntaxformer.data import tree as T
from syntaxformer.data.collate import encode_syntax
from syntaxformer.data.readers.conllu import read_conllu
from syntaxformer.masks import relation_groups_from_features, sdoi_mask_from_features
from tests.conftest import data_path
from tests.masks.reference import Spec, dependency_nodes, make_example, pad

D = 15

pytestmark = pytest.mark.slow


def _read(path: Path) -> list[tuple[list[str], list[int]]]:
    return [(s.words, s.heads) for s in read_conllu(path)]


def _reference(heads: list[int], nodes: list[int], L: int) -> tuple[np.ndarray, np.ndarray]:
    """(SDOI [L, L], dependency groups [L, L]) for one example, vectorised over node pairs."""
    N = len(heads)
    depth = T.depths(heads)
    anc = np.zeros((N, N), dtype=bool)  # anc[v, u]: u is an ancestor-or-self of v
    for v in range(N):
        anc[v, [v] + T.ancestors(heads, v)] = True
    common = anc[:, None, :] & anc[None, :, :]
    lca = np.argmax(common * (depth + 1), axis=-1)  # deepest common ancestor
    dist = depth[:, None] + depth[None, :] - 2 * depth[lca]
    ids = np.arange(N)
    kind = np.where(lca == ids[None, :], 0, np.where(lca == ids[:, None], 1, 2))  # parent, child, sibling
    groups = np.where((dist >= 1) & (dist <= D), kind * D + dist, 0)
    pos = np.array([i for i in range(L) if nodes[i] >= 0])
    node = np.array([nodes[i] for i in pos])
    sdoi = np.eye(L, dtype=bool)
    sdoi[np.ix_(pos, pos)] = anc[np.ix_(node, node)]
    g = np.zeros((L, L), dtype=np.int64)
    g[np.ix_(pos, pos)] = groups[np.ix_(node, node)]
    return sdoi, g


@pytest.mark.parametrize("criterion", ["share", "children"])
def test_ud_ewt_dev_sdoi_and_relations(criterion: str):
    sentences = _read(data_path("ud_ewt", "en_ewt-ud-dev.conllu"))
    assert len(sentences) == 2001
    examples = [make_example(Spec([[(heads, None)]], [1 + len(w) // 4 for w in words])) for words, heads in sentences]
    order = sorted(range(len(examples)), key=lambda i: len(examples[i]))
    checked = 0
    for start in range(0, len(order), 64):
        chunk = [examples[i] for i in order[start : start + 64]]
        batch = pad([encode_syntax(ex, criterion, max_distance=D, constituency=False) for ex in chunk])
        sdoi = sdoi_mask_from_features(batch).numpy()
        groups, _ = relation_groups_from_features(batch, D, pairwise=False, constituency=False)
        groups = groups.numpy()
        for b, ex in enumerate(chunk):
            L = len(ex)
            heads, nodes = dependency_nodes(ex, criterion)
            ref_sdoi, ref_groups = _reference(heads, nodes, L)
            assert np.array_equal(sdoi[b, :L, :L], ref_sdoi), f"sentence {order[start + b]}"
            assert np.array_equal(groups[b, :L, :L], ref_groups), f"sentence {order[start + b]}"
            checked += 1
    assert checked == 2001
