"""Slow reference of Syntax-BERT's ``"syntax"`` attention, written from the paper (Bai et al., 2021, §3.2-3.3).

For every sub-network (group g of a partition) a masked softmax over the keys the group links to the query,
``A_g = softmax(S + M_g)`` (rows with no key in g take no part), its output ``O_g = A_g V``, the topical score of
each non-empty group per token ``s_g = q_l · K(O(O_g)) / sqrt(hidden)`` (Eq. 2, with the layer's pretrained output
and key projections), a softmax over the token's non-empty groups ``α = softmax(s)`` (Eq. 3; ``"sum"``: α = 1,
``"mean"``: α = 1 / #groups) and the mix ``Σ_g α_g O_g``. Rows with no non-empty group attend as the pretrained
layer (``empty_rows="full"``) or to themselves (``"self"``); the LISA head attends to every non-padding key. With
a gate ``g`` (per layer or per head) the output is ``P_full V + g (Σ_g α_g O_g - P_full V)``. With the topical
attention's own projections (``topical_projections="own"``) the score uses its own key projection ``W_Kt`` in
place of the layer's and the mixed output ``Σ_g α_g O_g`` goes through its own value projection ``W_Vt``.

Everything is computed in float64 with explicit loops and masks, on the device of the inputs. It shares no code with
:mod:`syntaxformer.modeling.syntax_attention`: it reads only the inputs of the attention call (the group ids, the
options, the task queries and the projections they are bound to) and writes the LISA log-probabilities into the
given recorder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface

from syntaxformer.modeling.syntax_attention import register_syntax_attention
from syntaxformer.modeling.syntax_attention_core import SYNTAX_ATTENTION, SyntaxAttentionOptions, SyntaxGroups


def _partitions(groups: Any) -> list[torch.Tensor]:
    if groups is None:
        return []
    if isinstance(groups, SyntaxGroups):
        return list(groups.partitions)
    if isinstance(groups, torch.Tensor):
        return [groups]
    return [g for g in groups if g is not None]


def _allowed_keys(mask: torch.Tensor | None, B: int, L: int, device: torch.device) -> torch.Tensor:
    """``[B, L, L]`` bool, True = the query may attend to the key (bool mask, or additive 0 / very negative)."""
    if mask is None:
        return torch.ones(B, L, L, dtype=torch.bool, device=device)
    m = mask[:, 0]
    allowed = m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2
    return allowed.expand(B, L, L)


def _masked_softmax(scores: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Softmax of ``scores`` ``[..., L]`` over the entries where ``keep``; all-zero rows where nothing is kept."""
    x = scores.masked_fill(~keep, float("-inf"))
    top = x.max(-1, keepdim=True).values
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(x - top) * keep
    total = e.sum(-1, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(e))


def _own_projections(topical: Any) -> bool:
    """The topical attention has its own key / value projections (``topical_projections="own"``)."""
    return topical is not None and getattr(topical, "key_weight", None) is not None


def _topical_scores(topical: Any, layer: int, outputs: torch.Tensor) -> torch.Tensor:
    """Eq. 2: ``q_l · W_K(W_O(o)) / sqrt(hidden)`` for ``outputs`` ``[..., H * d]`` -> ``[...]`` (float64).

    ``W_O`` is the layer's output projection (the paper's ``H_j = (A_1,j ⊕ ... ⊕ A_k,j) W^O``); ``W_K`` is the
    layer's key projection (shared) or the topical attention's own ``W_Kt`` (the paper's own key projection)."""
    key, out = topical.site(layer)
    hidden = torch.nn.functional.linear(outputs, out.weight.double(), out.bias.double())  # H_g[i]
    if _own_projections(topical):
        keyed = hidden @ topical.key_weight[layer].double().T  # H_g[i] W_Kt
    else:
        keyed = torch.nn.functional.linear(hidden, key.weight.double(), key.bias.double())
    return keyed @ topical.query[layer].double() * topical.scale


def reference_syntax_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    syntax_groups: Any = None,
    syntax_options: SyntaxAttentionOptions | None = None,
    syntax_topical: Any = None,
    syntax_lisa: Any = None,
    syntax_gate: Any = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Same contract as :func:`syntaxformer.modeling.syntax_attention.syntax_attention_forward` (no dropout):
    ``([B, L, H, d] output, [B, H, L, L] effective attention Σ_g α_g A_g)``."""
    opts = syntax_options or SyntaxAttentionOptions()
    layer = getattr(module, "syntax_layer_idx", None)
    layer = getattr(module, "layer_idx", None) if layer is None else layer
    B, H, L, d = query.shape
    dev = query.device
    scale = d**-0.5 if scaling is None else scaling
    scores = (query.double() @ key.double().transpose(-1, -2)) * scale  # (B, H, L, L)
    v = value.double()
    allowed = _allowed_keys(attention_mask, B, L, dev)  # (B, L, L)
    p_full = _masked_softmax(scores, allowed.unsqueeze(1))  # (B, H, L, L)
    o_full = p_full @ v  # (B, H, L, d)

    lisa_head = added = p_added = None
    if syntax_lisa is not None and layer == syntax_lisa.layer and getattr(syntax_lisa, "added", None) is not None:
        # LISA as a new head: its own projections of the layer's queries / keys (per output unit e:
        # q_a[e] = Σ_h Σ_c Q[h, c] W_Qa[e, h d + c]), a softmax over the non-padding keys
        added = syntax_lisa.added
        wq = added.query_weight.double().view(-1, H, d)  # (d_a, H, d)
        wk = added.key_weight.double().view(-1, H, d)
        qa = torch.einsum("bhic,ehc->bie", query.double(), wq)  # (B, L, d_a)
        ka = torch.einsum("bhjc,ehc->bje", key.double(), wk)
        logits = (qa @ ka.transpose(-1, -2)) * scale  # (B, L, L)
        p_added = _masked_softmax(logits, allowed)  # (B, L, L)
        syntax_lisa.log_probs = torch.log_softmax(
            logits.masked_fill(~allowed, torch.finfo(torch.float32).min), -1
        ).float()  # (B, L, L), as for an existing head
    elif syntax_lisa is not None and layer == syntax_lisa.layer:
        lisa_head = syntax_lisa.head
        logits = scores[:, lisa_head].masked_fill(~allowed, torch.finfo(torch.float32).min)
        syntax_lisa.log_probs = torch.log_softmax(logits, -1).float()  # (B, L, L)

    def with_added(out: torch.Tensor) -> torch.Tensor:
        """``out`` ``[B, H, L, d]`` plus the added LISA head: head h's context gets ``m_h P_a V_h``."""
        if added is None:
            return out
        return torch.stack([out[:, h] + added.mix[h].double() * (p_added @ v[:, h]) for h in range(H)], 1)

    partitions = _partitions(syntax_groups)
    use_syntax = bool(partitions) and (opts.layers is None or layer is None or layer in opts.layers)
    if not use_syntax:
        return with_added(o_full).transpose(1, 2).to(value.dtype), p_full.float()

    # One candidate per non-empty group (and the full attention as an optional extra candidate).
    cand_probs, cand_rows = [], []
    for ids in partitions:
        for g in range(1, int(ids.max()) + 1):
            link = (ids == g) & allowed  # (B, L, L)
            if not bool(link.any()):
                continue
            cand_probs.append(_masked_softmax(scores, link.unsqueeze(1)))  # (B, H, L, L), zero on empty rows
            cand_rows.append(link.any(-1))  # (B, L)
    if opts.full_attention_candidate:
        cand_probs.append(p_full)
        cand_rows.append(allowed.any(-1))
    if lisa_head is not None:  # the LISA head keeps the full softmax in every candidate
        cand_probs = [
            torch.cat([p[:, :lisa_head], p_full[:, lisa_head : lisa_head + 1], p[:, lisa_head + 1 :]], 1)
            for p in cand_probs
        ]
    cand_out = [(p @ v).transpose(1, 2).reshape(B, L, H * d) for p in cand_probs]  # (B, L, H*d) each: O_g

    # Topical attention over each token's candidates (Eq. 3).
    alpha = torch.zeros(B, L, len(cand_out), dtype=torch.float64, device=dev)
    for b in range(B):
        for i in range(L):
            cs = [c for c in range(len(cand_out)) if cand_rows[c][b, i]]
            if not cs:
                continue
            if opts.aggregation == "sum":
                weights = torch.ones(len(cs), dtype=torch.float64, device=dev)
            elif opts.aggregation == "mean" or syntax_topical is None:
                weights = torch.full((len(cs),), 1.0 / len(cs), dtype=torch.float64, device=dev)
            else:
                s = torch.stack([_topical_scores(syntax_topical, layer, cand_out[c][b, i]) for c in cs])
                weights = torch.exp(s - s.max())
                weights = weights / weights.sum()
            for c, w in zip(cs, weights):
                alpha[b, i, c] = w

    out = torch.zeros(B, L, H * d, dtype=torch.float64, device=dev)
    eff = torch.zeros(B, H, L, L, dtype=torch.float64, device=dev)
    for c in range(len(cand_out)):
        out = out + alpha[..., c : c + 1] * cand_out[c]
        eff = eff + alpha[..., c].view(B, 1, L, 1) * cand_probs[c]
    out = out.view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)

    has_group = torch.stack(cand_rows, -1).any(-1) if cand_rows else torch.zeros(B, L, dtype=torch.bool, device=dev)
    rows = (~has_group).view(B, 1, L, 1)
    if opts.empty_rows == "full":
        out = torch.where(rows, o_full, out)
        eff = torch.where(rows, p_full, eff)
    else:
        out = torch.where(rows, v, out)
        eff = torch.where(rows, torch.eye(L, dtype=torch.float64, device=dev).expand(B, H, L, L), eff)
    if lisa_head is not None:
        head = (torch.arange(H, device=dev) == lisa_head).view(1, H, 1, 1)
        out = torch.where(head, o_full, out)
        eff = torch.where(head, p_full, eff)
    if opts.aggregation == "topical" and _own_projections(syntax_topical):
        # the paper's own value projection W_Vt on the concatenated heads of every row (before the layer's W_O)
        flat = out.transpose(1, 2).reshape(B, L, H * d) @ syntax_topical.value_weight[layer].double().T
        out = flat.view(B, L, H, d).transpose(1, 2)  # (B, H, L, d)
    if syntax_gate is not None:  # ctx = P_full V + g (Σ α O_g - P_full V), g per layer (all heads) or per head
        g = syntax_gate.weight[layer].double()
        g = g.expand(H) if g.numel() == 1 else g
        out = torch.stack([o_full[:, h] + g[h] * (out[:, h] - o_full[:, h]) for h in range(H)], 1)
        eff = torch.stack([p_full[:, h] + g[h] * (eff[:, h] - p_full[:, h]) for h in range(H)], 1)
    return with_added(out).transpose(1, 2).contiguous().to(value.dtype), eff.float()


@contextmanager
def reference_attention() -> Iterator[None]:
    """Run every ``"syntax"`` attention call through :func:`reference_syntax_attention` inside the block (whole
    models against the reference)."""
    AttentionInterface.register(SYNTAX_ATTENTION, reference_syntax_attention)
    try:
        yield
    finally:
        register_syntax_attention()


def reference_option_groups(
    partitions: list[torch.Tensor],
    tree: torch.Tensor,
    segment: torch.Tensor,
    max_distance: int,
    pairwise: str | None,
    self_group: bool = False,
    special_keys: bool = False,
) -> list[torch.Tensor]:
    """The sub-networks of Syntax-BERT's options, written pair by pair from their definitions, added to
    ``partitions`` (``[B, L, L]`` group ids built *without* the pairwise group):

    * ``pairwise="text"``: i and j are words of different texts (``segment``); ``"sentence"`` (the paper, §3.2):
      words of different sentences (``tree``), also inside one text; ``None``: no pairwise group. Id 3D+1, in
      every partition.
    * ``self_group``: the pair (i, i) of every word i. Id 3D+2, first partition only.
    * ``special_keys``: word rows i and keys j that are not words (special tokens; padding is masked by the
      attention anyway). Id 3D+3, first partition only.
    """
    D = max_distance
    out = [p.clone().long() for p in partitions]
    B, L = tree.shape
    for b in range(B):
        for i in range(L):
            if int(tree[b, i]) < 0:
                continue
            for j in range(L):
                word_j = int(tree[b, j]) >= 0
                if pairwise is not None and word_j:
                    ids = tree if pairwise == "sentence" else segment
                    if int(ids[b, i]) != int(ids[b, j]):
                        for p in out:
                            p[b, i, j] = 3 * D + 1
                if special_keys and not word_j:
                    out[0][b, i, j] = 3 * D + 3
                if self_group and i == j:
                    out[0][b, i, j] = 3 * D + 2
    return out
