"""What a syntax configuration does to a pretrained encoder before training (``syntaxformer diagnose``;
the measures: ``docs/analysis.md``)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from transformers import PreTrainedModel

from syntaxformer.data.collate import TOKEN_KEYS, SyntaxCollator
from syntaxformer.defaults import shared_data_dir
from syntaxformer.errors import ConfigError, DataError, InputError
from syntaxformer.modeling import SyntaxBertModel
from syntaxformer.modeling.raw_text import batches as length_batches
from syntaxformer.registry import SYSTEMS
from syntaxformer.tasks import get_task
from syntaxformer.training import RunConfig
from syntaxformer.training.run import build_context, build_model, load_run, load_tokenizer

logger = logging.getLogger(__name__)

__all__ = ["SYNTAX_PARAMETERS", "diagnose"]

#: Name endings of the parameters whose gradients :func:`diagnose` reports.
SYNTAX_PARAMETERS: tuple[str, ...] = (
    "sg_layer.query.weight",
    "sg_layer.key.weight",
    "sg_layer.value.weight",
    "topical.query",
    "gate.weight",
)

#: The syntax keys the diagnostic needs in every batch (pair segments for the zero-shot signal).
_SEGMENT_KEYS = ("syntax_tree", "syntax_segment")


def diagnose(
    model: str | None = None,
    system: str = "syntax_bert",
    options: Mapping[str, Any] | None = None,
    *,
    task: str = "stsb",
    n: int = 200,
    seed: int = 0,
    max_length: int = 96,
    batch_size: int = 50,
    data_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Diagnose one configuration at initialisation (or a trained run) on a seeded dev subset (``docs/analysis.md``).
    Arguments: model: a pretrained encoder (default the offline MiniLM), a saved model, or a run folder (then its own
    system and options are used); system, options: a registered system and its model-config options (``{"gate":
    "layer"}`` ...); task: a registered sentence-pair regression task with a dev split; n: dev pairs (seeded; ``0`` =
    all); seed: seed of the subsample and of the gradient probe. Returns JSON-ready: ``system``, ``options``, ``model``,
    ``n_pairs``, ``token_cosine_to_plain``, ``zero_shot_pearson``, ``plain_zero_shot_pearson``, ``syntax_gradients``
    (name -> norm). Raises SyntaxformerError: unknown system or task, data not found, a model that cannot be loaded."""
    if model is not None and (Path(model) / "run.json").is_file():
        run_config, _ = load_run(model)
        system, options = run_config.model_type, dict(run_config.model)
    options = dict(options or {})
    if system not in SYSTEMS:
        raise ConfigError(f"diagnose --system must be one of {', '.join(SYSTEMS)}, got {system!r}")
    config = RunConfig(
        task=task,
        model_type=system,
        model_name_or_path=model,
        model=options,
        max_length=max_length,
        seed=seed,
        disable_tqdm=True,
    )
    the_task = get_task(task)
    if the_task.head != "sequence_classification":
        raise ConfigError(f"diagnose needs a sentence-pair regression task (stsb), got {task!r}")
    torch.manual_seed(seed)
    net = build_model(config, the_task).eval()
    if getattr(net.config, "num_labels", 1) != 1:
        raise ConfigError(f"diagnose reads a similarity score: {task!r} must be a regression task (stsb)")
    options_dir = {}
    if data_dir is None and task == "stsb":
        root = shared_data_dir()
        if root is None:
            raise DataError("STS-B not found: set SYNTAXFORMER_DATA to the shared data folder, or pass data_dir")
        data_dir = root / "glue" / "STS-B"
    if data_dir is not None:
        options_dir["data_dir"] = Path(data_dir)
    data = the_task.load_split("dev", {**options_dir, "max_samples": n or None, "data_seed": seed})
    tokenizer = load_tokenizer(config.resolved_model())
    context = build_context(config, tokenizer, net.config)
    needed = tuple(dict.fromkeys(tuple(context.syntax_inputs) + _SEGMENT_KEYS))
    context = dataclasses.replace(context, syntax_inputs=needed)
    features = the_task.featurize(data, context, "dev")
    collate = SyntaxCollator(pad_token_id=tokenizer.pad_token_id or 0)
    rows = cast("Sequence[Mapping[str, Any]]", features)  # indexable rows (a list or an Arrow data set)
    batches = [collate([features[int(i)] for i in idx]) for idx in length_batches(rows, batch_size)]

    gold, sims, plain_sims, cos_sum, n_tokens = [], [], [], 0.0, 0
    for batch in batches:
        gold.extend(batch.pop("labels").tolist())
        with torch.no_grad():
            h, h_plain = _states(net, system, batch)
        mask = batch["attention_mask"].bool()
        cos = torch.cosine_similarity(h[mask].float(), h_plain[mask].float(), dim=-1)
        cos_sum += float(cos.sum())
        n_tokens += int(mask.sum())
        seg = batch["syntax_segment"]
        sims.extend(_pair_cosines(h, seg))
        plain_sims.extend(_pair_cosines(h_plain, seg))
    gradients = _syntax_gradients(net, batches, seed)
    candidates = _candidate_counts(net, system, batches)
    result = {
        "system": system,
        "options": options,
        "model": config.resolved_model(),
        "task": task,
        "n_pairs": len(gold),
        "seed": seed,
        "token_cosine_to_plain": round(cos_sum / max(n_tokens, 1), 4),
        "zero_shot_pearson": _pearson(sims, gold),
        "plain_zero_shot_pearson": _pearson(plain_sims, gold),
        "syntax_gradients": gradients,
    }
    if candidates is not None:
        result["subnetworks_per_token"] = candidates
    logger.debug("diagnose %s", json.dumps(result))
    return result


def _states(net: PreTrainedModel, system: str, batch: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Last hidden states ``[B, L, H]`` of the system and of the plain encoder (same weights, no syntax)."""
    backbone: Any = net.base_model  # an SGNetModel or a SyntaxBertModel
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    if system == "sgnet":
        out = backbone(**inputs)
        return out.last_hidden_state, out.encoder_hidden_state
    if system != "syntax_bert":  # the plain encoder, or another system: its wrapped encoder alone is the reference
        h = backbone(**inputs).last_hidden_state
        encoder = getattr(backbone, "encoder", None)
        if encoder is None:
            raise ConfigError(f"diagnose: the {system} backbone {type(backbone).__name__} has no wrapped `encoder`")
        token_inputs = {k: inputs[k] for k in TOKEN_KEYS if k in inputs}
        return h, encoder(**token_inputs, return_dict=True).last_hidden_state
    h = backbone(**inputs).last_hidden_state
    saved = backbone.config.syntax_layers
    try:
        backbone.config.syntax_layers = []  # no syntax layer: exactly the wrapped encoder
        h_plain = backbone(**inputs).last_hidden_state
    finally:
        backbone.config.syntax_layers = saved
    return h, h_plain


def _candidate_counts(net: PreTrainedModel, system: str, batches: list[dict[str, Any]]) -> dict[str, float] | None:
    """Syntax-BERT: mean and max number of non-empty sub-networks (candidates of the topical softmax, both
    partitions) per word token; ``None`` for other systems or without sub-networks."""
    if system != "syntax_bert":
        return None
    backbone = cast(SyntaxBertModel, net.base_model)
    if not backbone.config.uses_groups:  # the task model's config object
        return None
    counts = []
    for batch in batches:
        groups = backbone.build_groups(batch, torch.device("cpu"), batch["input_ids"])
        words = batch["syntax_tree"] >= 0  # (B, L)
        total = torch.zeros(words.shape, dtype=torch.long)
        for g, n in zip(groups.partitions, groups.num_buckets):
            present = torch.zeros(*g.shape[:2], n, dtype=torch.bool).scatter_(2, g, True)  # (B, L, n)
            total += present[..., 1:].sum(-1)  # id 0 is no sub-network
        counts.append(total[words])
    flat = torch.cat(counts).float()
    return {"mean": round(float(flat.mean()), 2), "max": int(flat.max()), "tokens": int(flat.numel())}


def _pair_cosines(h: torch.Tensor, segment: torch.Tensor) -> list[float]:
    """Per pair, the cosine of the mean states of text 0 and text 1 (``syntax_segment``)."""
    out = []
    for i in range(h.shape[0]):
        a, b = h[i][segment[i] == 0], h[i][segment[i] == 1]
        if len(a) == 0 or len(b) == 0:
            raise InputError("diagnose needs sentence pairs (syntax_segment 0 and 1 in every example)")
        out.append(float(torch.cosine_similarity(a.float().mean(0), b.float().mean(0), dim=0)))
    return out


def _pearson(x: list[float], y: list[float]) -> float | None:
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return round(float(np.corrcoef(x, y)[0, 1]), 4)


def _syntax_gradients(net: torch.nn.Module, batches: list[dict[str, Any]], seed: int) -> dict[str, float]:
    """Gradient norms of :data:`SYNTAX_PARAMETERS` from ``Σ probe · logits`` over the batches (eval mode)."""
    names = [n for n, p in net.named_parameters() if p.requires_grad and n.endswith(SYNTAX_PARAMETERS)]
    if not names:
        return {}
    net.zero_grad()
    gen = torch.Generator().manual_seed(seed)
    for batch in batches:
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        logits = net(**inputs).logits  # (B, 1)
        probe = torch.randn(logits.shape, generator=gen).to(logits.device, logits.dtype)
        (logits * probe).sum().backward()
    params = dict(net.named_parameters())
    grads = {n: 0.0 if (grad := params[n].grad) is None else float(grad.norm()) for n in names}
    net.zero_grad()
    return {n: float(f"{g:.3g}") for n, g in grads.items()}
