"""What the ``"syntax"`` attention writes down during a forward pass, beside its output: the LISA head's log
attention probabilities for the LISA loss (:class:`LisaRecorder`, ``syntax_lisa=``) and, for analysis, every
layer's effective attention and topical weights (:class:`SyntaxAttentionRecorder`, ``syntax_record=``).

Both are re-exported by :mod:`syntaxformer.modeling.syntax_attention`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from syntaxformer.errors import ConfigError
from syntaxformer.modeling.syntax_attention_modules import AddedLisaHead
from syntaxformer.modeling.syntax_attention_options import SYNTAX_ATTENTION


@dataclass
class LisaRecorder:
    """Collects the log attention probabilities of the LISA head (passed as ``syntax_lisa=``).

    After the forward pass, ``log_probs`` is ``[B, L, L]``: row ``i`` is the log-softmax of head ``head`` of layer
    ``layer`` over the non-padding keys (masked keys get a very negative finite value).
    """

    layer: int
    head: int = 0
    log_probs: torch.Tensor | None = field(default=None, repr=False)
    added: AddedLisaHead | None = field(default=None, repr=False)

    def loss(self, parent: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the recorded rows against ``parent`` ``[B, L]`` (key position of each token's
        syntactic parent; rows with ``parent < 0`` — roots, special tokens, padding — are ignored). 0 if no row
        counts."""
        if self.log_probs is None:
            raise ConfigError(
                f"no attention was recorded for the LISA head (layer {self.layer}); is the model "
                f"running attn_implementation='{SYNTAX_ATTENTION}' with at least {self.layer + 1} "
                "layers?"
            )
        parent = parent.to(self.log_probs.device).long()
        logp = self.log_probs.float()
        keep = parent >= 0  # (B, L)
        picked = logp.gather(-1, parent.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, L)
        n = keep.sum()
        return -(picked * keep).sum() / n.clamp(min=1)


@dataclass
class SyntaxAttentionRecorder:
    """Collects, for analysis, what every layer of a forward pass attended to (passed as ``syntax_record=``; the
    Syntax-BERT models take it as ``model(..., syntax_record=recorder)``). Recording never changes the model's
    outputs: the extra tensors are computed beside the layer's own computation, without gradients.

    After the pass, per layer index ``l`` (the keys are the layers that ran):

    * ``attentions[l]``: ``[B, H, L, L]`` the effective attention (what the function returns for a syntax layer:
      ``Σ_g α_g A_g``, gated; for a layer without sub-networks, which runs the host's fused attention and returns
      no weights, the plain softmax of its scores), so no layer is ever missing whatever the implementation.
    * ``topical[l]``: ``[B, L, C]`` syntax layers only: the weight α of each candidate sub-network per query token
      (Eq. 3; the uniform average for ``"mean"``, 1 per non-empty group for ``"sum"``), computed by the exact path.
    * ``candidates[l]``: bool ``[B, L, C]`` which sub-networks are non-empty (candidates) for each query token.

    The ``C`` columns are, in order, the group ids ``0..num_buckets[p]-1`` of each partition ``p`` (dependency
    first, then constituency; id 0 = no sub-network, never a candidate; see
    :func:`syntaxformer.masks.relations.group_name`), then one column for the full attention when
    ``full_attention_candidate`` is on. ``num_buckets`` and ``full_candidate`` record that layout.
    """

    attentions: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    topical: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    candidates: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    num_buckets: tuple[int, ...] = ()
    full_candidate: bool = False
