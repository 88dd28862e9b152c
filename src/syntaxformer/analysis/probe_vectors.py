"""The model side of the probes (:mod:`syntaxformer.analysis.probes`): the encoder to probe (:class:`ProbedModel`,
:func:`load_probed_model`) and its word vectors at every layer (:func:`word_representations`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModel

from syntaxformer import registry as _registry
from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators import make_annotator
from syntaxformer.data.collate import TOKEN_KEYS, pad_arrays
from syntaxformer.data.constituency import with_dependency_trees
from syntaxformer.data.sentence import Sentence
from syntaxformer.defaults import default_hf_model
from syntaxformer.errors import ConfigError, DataError
from syntaxformer.modeling import SyntaxModelConfig
from syntaxformer.tasks.base import HEADS, TaskContext
from syntaxformer.training.run import load_run, load_tokenizer, load_trained_model
from syntaxformer.training.saved import loading_model, model_folder_problem
from syntaxformer.utils import progress as progress_bar

logger = logging.getLogger(__name__)

__all__ = ["ProbedModel", "load_probed_model", "word_representations"]


@dataclass
class ProbedModel:
    """An encoder to probe, in evaluation mode. Attributes: net: the backbone (plain ``AutoModel``, ``SGNetModel`` or
    ``SyntaxBertModel``); tokenizer: its fast tokenizer; system: ``"plain"``, ``"sgnet"`` or ``"syntax_bert"``;
    description: what was loaded (JSON-ready); criterion, constituency_from_dependency: how its syntax arrays are built
    (as the run's config says); parser: the parser spec for ``syntax="parser"`` (``None``: the default spaCy pipeline).
    """

    net: Any
    tokenizer: Any
    system: str
    description: dict[str, Any]
    criterion: str = "share"
    constituency_from_dependency: bool = True
    parser: str | None = None

    @property
    def syntax_inputs(self) -> tuple[str, ...]:
        """The syntax batch keys the model reads (none for a plain encoder)."""
        return tuple(getattr(self.net.config, "syntax_inputs", ()) or ())

    def layer_names(self) -> list[str]:
        """``embeddings``, ``layer1`` .. ``layerN`` and, for SG-Net with its syntax-guided layer, ``sg`` and
        ``aggregated``."""
        encoder = self.net.encoder if self.system in ("sgnet", "syntax_bert") else self.net
        n = int(encoder.config.num_hidden_layers)
        names = ["embeddings"] + [f"layer{k}" for k in range(1, n + 1)]
        if self.system == "sgnet" and getattr(self.net.config, "use_sg_layer", False):
            names += ["sg", "aggregated"]
        return names


def load_probed_model(
    model: str | os.PathLike | None = None,
    system: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
) -> ProbedModel:
    """Load what :func:`~syntaxformer.analysis.probes.probe_model` probes: a run folder's or a saved model's backbone,
    or a pretrained encoder (default the offline MiniLM) as it is (``system=None``) or with an untrained ``"sgnet"`` /
    ``"syntax_bert"`` with ``options`` built on it (new parts seeded with ``seed``). Raises ConfigError: an unknown
    system, a translation run, an encoder that cannot be loaded; DataError: a run folder without a saved model."""
    path = str(model) if model is not None else default_hf_model()
    options = dict(options or {})
    if (Path(path) / "run.json").is_file():
        config, task = load_run(path)
        if task.head not in HEADS[:4]:  # the encoder heads (model_class serves them for every system)
            raise ConfigError(
                f"{path} is a {task.head} run; the probes read an encoder's word states (train a "
                "classification, QA or multiple-choice run)"
            )
        kind, net = load_trained_model(path, task.head)
        net = net.base_model
        if kind not in ("sgnet", "syntax_bert"):  # the plain encoder or another system: its wrapped encoder's layers
            net, kind = net.encoder, "plain"
        return ProbedModel(
            net.eval(),
            load_tokenizer(path),
            kind,
            {
                "model": path,
                "run": path,
                "system": config.model_type,
                "options": dict(config.model),
                "task": config.task,
            },
            criterion=config.criterion,
            constituency_from_dependency=config.constituency_fallback == "dependency",
            parser=config.parser,
        )
    problem = model_folder_problem(path, weights=False) if Path(path).is_dir() else None
    if problem:  # before the tokenizer: name what the folder lacks
        raise DataError(f"cannot load a model from {path}: {problem}")
    tokenizer = load_tokenizer(path)
    try:
        saved = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot load a model from {path!r}: {' '.join(str(e).split())}") from e
    if isinstance(saved, SyntaxModelConfig) or system in (None, "plain"):
        with loading_model(path):
            net = AutoModel.from_pretrained(path)
        kind = "plain"
        if isinstance(saved, SyntaxModelConfig):  # a saved syntax model, in a folder or on the hub
            spec = _registry.system_for_model_type(saved.model_type)
            kind = spec.name if spec is not None else "plain"
            if kind not in ("sgnet", "syntax_bert"):  # another system: its wrapped encoder's layers
                net, kind = net.encoder, "plain"
        return ProbedModel(net.eval(), tokenizer, kind, {"model": path, "system": kind, "options": {}})
    if system not in _registry.SYSTEMS:
        raise ConfigError(f"system={system!r} is not valid; choose one of {', '.join(_registry.SYSTEMS)}")
    torch.manual_seed(seed)
    problem = model_folder_problem(path) if Path(path).is_dir() else None
    if problem:  # not "invalid model options": the folder is no encoder
        raise DataError(f"cannot load the encoder in {path}: {problem}")
    try:
        net = _registry.system(system).backbone_class().from_encoder_pretrained(path, **options)
    except (TypeError, ValueError) as e:
        raise ConfigError(
            f"invalid model options {options} for {system} on {path!r}: {' '.join(str(e).split())}"
        ) from e
    return ProbedModel(
        net.eval(), tokenizer, system, {"model": path, "system": system, "options": options, "init_seed": seed}
    )


def _syntax_sentences(probed: ProbedModel, sentences: Sequence[Sentence], syntax: str) -> list[Sentence]:
    """The sentences the model reads: gold trees, or a parser's trees on the gold words; with a constituency tree
    read off the dependency tree when the model reads constituency inputs."""
    if syntax not in ("gold", "parser"):
        raise ConfigError(f"syntax={syntax!r} is not valid; choose 'gold' (the treebank's trees) or 'parser'")
    out = list(sentences)
    if not probed.syntax_inputs:
        return out
    if syntax == "parser":
        annotator = make_annotator(probed.parser, progress=False)
        out = list(annotator.annotate_pretokenized([s.words for s in sentences]))
        for gold, parsed in zip(sentences, out):
            if len(parsed) != len(gold):
                raise DataError(
                    f"the parser gave {len(parsed)} words for sentence {gold.sent_id} of "
                    f"{len(gold)} words; it must keep the given tokens"
                )
    if probed.constituency_from_dependency and any(k.startswith("con_") for k in probed.syntax_inputs):
        out = [with_dependency_trees(s) for s in out]
    return out


def word_representations(
    probed: ProbedModel,
    sentences: Sequence[Sentence],
    layers: Sequence[str] | None = None,
    *,
    word_vector: str = "mean",
    syntax: str = "gold",
    batch_size: int = 32,
    max_length: int | None = None,
    progress: bool = True,
) -> tuple[dict[str, list[np.ndarray]], list[int]]:
    """Word vectors of every sentence at every asked layer (default all), computed once under ``torch.no_grad``.
    Arguments: word_vector: ``"mean"`` of the word's subword vectors, or the ``"first"`` subword's; syntax: a syntax
    model's input: the sentences' ``"gold"`` trees, or a ``"parser"``'s on their words; batch_size: sentences per
    forward pass (sorted by length); max_length: tokens per sentence (default the tokenizer's limit); a longer sentence,
    or one with a word that overlaps no subword, is left out (logged). Returns ``(vectors, kept)``: ``vectors[layer]``
    holds one float32 ``[n_words, H]`` array per kept sentence; ``kept`` are the indices of the kept sentences."""
    if word_vector not in ("mean", "first"):
        raise ConfigError(f"word_vector={word_vector!r} is not valid; choose 'mean' or 'first'")
    names = probed.layer_names()
    layers = list(names if layers is None else layers)
    unknown = [n for n in layers if n not in names]
    if unknown:
        raise ConfigError(f"unknown layer(s) {unknown} for this model; it has {names}")
    inputs = _syntax_sentences(probed, sentences, syntax)
    aligner = SyntaxAligner(probed.tokenizer, max_length=max_length)
    context = TaskContext(
        tokenizer=probed.tokenizer,
        syntax_inputs=probed.syntax_inputs,
        criterion=probed.criterion,
        max_distance=int(getattr(probed.net.config, "max_distance", 15) or 15),
    )
    windows, pools, kept = [], [], []
    for k, windows_k in enumerate(aligner.align_batch(inputs)):
        pool = _word_pooling(windows_k[0], inputs[k], word_vector) if len(windows_k) == 1 else None
        if pool is None:
            continue
        windows.append(windows_k[0])
        pools.append(pool)
        kept.append(k)
    if len(kept) < len(sentences):
        logger.info(
            "left out %d of %d sentences (longer than the model's limit, or a word that overlaps no subword)",
            len(sentences) - len(kept),
            len(sentences),
        )
    order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
    out: dict[str, list[np.ndarray | None]] = {name: [None] * len(windows) for name in layers}
    pad = probed.tokenizer.pad_token_id or 0
    starts = range(0, len(order), batch_size)
    for start in progress_bar(starts, desc="word vectors", disable=None if progress else True):
        idx = order[start : start + batch_size]
        batch = pad_arrays([context.window_arrays(windows[i]) for i in idx], pad_token_id=pad)
        with torch.no_grad():
            states = _layer_states(probed, batch)
        for b, i in enumerate(idx):
            weights = torch.from_numpy(pools[i])  # (n, L_i)
            for name in layers:
                h = states[name][b, : weights.shape[1]].float()  # (L_i, H)
                out[name][i] = (weights @ h).numpy()  # (n, H)
    return {name: list(v) for name, v in out.items()}, kept  # type: ignore[arg-type]  # the loop filled every slot


def _word_pooling(window: Any, sentence: Sentence, word_vector: str) -> np.ndarray | None:
    """``[n_words, L]`` weights that turn the window's subword states into word vectors: the mean of the word's
    pieces, or its first piece. A word that owns no piece (a multiword token's second word, ``can|not`` in one
    piece ``cannot``) takes the piece(s) whose characters overlap it. ``None`` if a word overlaps no piece."""
    n, L = len(sentence), len(window.input_ids)
    pool = np.zeros((n, L), dtype=np.float32)
    word = np.asarray(window.word_index)
    own = word >= 0
    if word_vector == "first":
        own &= np.asarray(window.piece_index) == 0
    pool[word[own], np.flatnonzero(own)] = 1.0
    _, offsets = sentence.detokenized()
    piece_off = np.asarray(window.offsets).reshape(-1, 2)
    real = np.asarray(window.sequence_ids) >= 0
    for i in np.flatnonzero(pool.sum(1) == 0):
        a, b = offsets[i]
        hit = np.flatnonzero(real & (np.maximum(piece_off[:, 0], a) < np.minimum(piece_off[:, 1], b)))
        if len(hit) == 0:
            return None
        pool[i, hit[:1] if word_vector == "first" else hit] = 1.0
    return pool / pool.sum(1, keepdims=True)


def _layer_states(probed: ProbedModel, batch: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Hidden states ``[B, L, H]`` of every layer of :meth:`ProbedModel.layer_names`."""
    inputs = {k: v for k, v in batch.items() if probed.system != "plain" or k in TOKEN_KEYS}
    out = probed.net(**inputs, output_hidden_states=True, return_dict=True)
    names = probed.layer_names()
    states = dict(zip(names, out.hidden_states))
    if "sg" in names:
        states["sg"] = out.syntax_hidden_state
        states["aggregated"] = out.last_hidden_state
    return states
