"""Structural probes (Hewitt & Manning 2019) and linear POS / dependency-label probes, per layer of an encoder.

For a model (a plain pretrained encoder, an SG-Net or Syntax-BERT built on one, or a trained run folder) and the
UD English-EWT dev file split by document (:func:`load_probe_data`), :func:`probe_model` computes word vectors
once per layer (``torch.no_grad``; a word's vector is the **mean of its subword vectors**, or its first subword's
with ``word_vector="first"``; words are mapped to subwords by :class:`~syntaxformer.data.align.SyntaxAligner`) and
trains on the probe-train documents, with a fixed seed:

* **distance probe**: ``B`` (``[H, rank]``) so that ``||B(h_i - h_j)||²`` approximates the tree distance
  ``d(i, j)``; loss ``Σ_s Σ_ij |pred - d| / n_s²`` averaged over the sentences of a batch (H&M §2). Metrics:
  ``uuas``, the undirected attachment score of the minimum spanning tree of the predicted distances against the
  gold tree, pooled over the test sentences; ``distance_spearman``, the Spearman correlation of every word's row
  of predicted distances with its gold row, averaged over the words of each sentence length, then over the
  lengths 5-50 (H&M's "DSpr.").
* **depth probe**: ``||B h_i||²`` approximates the depth (root = 0); loss ``Σ_i |pred - depth| / n_s``.
  ``root_accuracy``: the share of test sentences whose non-punctuation word of smallest predicted depth is the
  gold root; ``depth_spearman``: per sentence, averaged per length, then over lengths 5-50 ("NSpr.").
* **linear probes** (softmax regression on the word vectors): ``pos_accuracy`` (UPOS) and ``label_accuracy``
  (the universal part of the label of the arc to the head: ``nmod:poss`` counts as ``nmod``).

Punctuation: words whose UPOS is ``PUNCT`` are removed before the minimum spanning tree is taken and from the gold
arcs (a gold arc counts when neither end is ``PUNCT``), and never count as the predicted root (H&M exclude the PTB
punctuation tags the same way). The Spearman correlations and the linear probes use every word.

The layers: ``embeddings`` (the encoder's embedding output) and ``layer1`` .. ``layerN`` for every system; SG-Net
adds ``sg`` (H', the syntax-guided layer's output) and ``aggregated`` (H̄, what the task heads read). A syntax model
gets the gold UD trees of the dev file as its syntax input (``syntax="gold"``), or the parses of a parser on the
gold words (``syntax="parser"``: the run's parser, else the default spaCy pipeline); the probes' targets are always
the gold trees.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import ConfigError, DataError, MissingDependencyError
from syntaxformer.training.saved import loading_model, model_folder_problem

logger = logging.getLogger(__name__)

__all__ = [
    "ProbeData",
    "ProbeSettings",
    "ProbedModel",
    "load_probe_data",
    "split_documents",
    "load_probed_model",
    "word_representations",
    "tree_distance_matrix",
    "minimum_spanning_tree_edges",
    "uuas",
    "distance_spearman",
    "root_accuracy",
    "depth_spearman",
    "train_distance_probe",
    "train_depth_probe",
    "predict_distances",
    "predict_depths",
    "linear_probe_accuracy",
    "probe_model",
    "probe_models",
    "format_probe_table",
    "PUNCTUATION_UPOS",
    "SPEARMAN_LENGTHS",
    "UD_EWT_DEV",
]

#: UPOS tags removed before the minimum spanning tree and from the root candidates.
PUNCTUATION_UPOS: frozenset[str] = frozenset({"PUNCT"})
#: Sentence lengths (words, punctuation included) over which the Spearman correlations are averaged (H&M).
SPEARMAN_LENGTHS: tuple[int, int] = (5, 50)
#: The EWT dev file under the shared data folder.
UD_EWT_DEV = ("ud_ewt", "en_ewt-ud-dev.conllu")
#: Metric names, in the order of the table.
METRICS: tuple[str, ...] = (
    "uuas",
    "distance_spearman",
    "root_accuracy",
    "depth_spearman",
    "pos_accuracy",
    "label_accuracy",
)


# ----------------------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------------------
@dataclass
class ProbeData:
    """The probe-train and probe-test sentences and where they came from.

    Attributes:
        train: probe-train sentences (gold trees; after the ``max_train_sentences`` subsample).
        test: probe-test sentences.
        train_documents: ``# newdoc id`` of every document of the probe-train part (before subsampling).
        test_documents: the same for the probe-test part.
        info: file, split rule, sizes (JSON-ready).
    """

    train: list[Sentence]
    test: list[Sentence]
    train_documents: list[str]
    test_documents: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def split_documents(
    sentences: Sequence[Sentence], test_every: int = 4
) -> tuple[list[list[Sentence]], list[list[Sentence]], list[str], list[str]]:
    """Split sentences into documents (a sentence with a ``newdoc id`` comment starts one) and the documents into
    probe-train and probe-test: in file order, document number ``k`` (0-based) is a test document when
    ``k % test_every == test_every - 1`` (every ``test_every``-th document, so every genre of EWT, whose documents
    come grouped by genre, is in both parts).

    Returns:
        ``(train documents, test documents, train ids, test ids)``; a document is a list of sentences.

    Raises:
        ConfigError: ``test_every`` is smaller than 2.
    """
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
    """Read a CoNLL-U file (default: UD English-EWT dev under the shared data folder) and split it by document.

    Args:
        path: a CoNLL-U file with ``# newdoc id`` comments.
        max_train_sentences: a seeded subsample (:func:`syntaxformer.utils.subsample`) of the probe-train
            sentences; ``None`` = all.
        max_test_sentences: the same for the probe-test sentences (default all).
        seed: seed of the subsamples.
        test_every: see :func:`split_documents`.

    Raises:
        DataError: no file given and the shared data folder (``SYNTAXFORMER_DATA``) has no EWT dev file; a file
            whose sentences lack UPOS or dependency labels.
    """
    from syntaxformer.data.readers.conllu import read_conllu
    from syntaxformer.defaults import shared_data_dir
    from syntaxformer.utils import subsample

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


# ----------------------------------------------------------------------------------------------------------
# models and word vectors
# ----------------------------------------------------------------------------------------------------------
@dataclass
class ProbedModel:
    """An encoder to probe, in evaluation mode.

    Attributes:
        net: the backbone: a plain ``AutoModel``, an :class:`~syntaxformer.modeling.SGNetModel` or a
            :class:`~syntaxformer.modeling.SyntaxBertModel`.
        tokenizer: its fast tokenizer.
        system: ``"plain"``, ``"sgnet"`` or ``"syntax_bert"``.
        description: what was loaded (JSON-ready): model path, run folder, system, options.
        criterion: subword criterion of the syntax arrays (``"share"`` / ``"children"``).
        constituency_from_dependency: give sentences a constituency tree read off their dependency tree (when
            the model reads constituency inputs; Syntax-BERT's default).
        parser: the parser spec for ``syntax="parser"`` (``None``: the default spaCy pipeline).
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
    """Load what :func:`probe_model` probes.

    Args:
        model: a run folder of ``syntaxformer train`` (its saved model's backbone), a folder holding a model saved
            by this library, or a pretrained encoder name / folder (default: the offline MiniLM,
            :func:`syntaxformer.defaults.default_hf_model`).
        system: for a pretrained encoder: ``None`` (the plain encoder), ``"sgnet"`` or ``"syntax_bert"`` (an
            untrained syntax model built on it, new parts initialised with ``seed``). Ignored otherwise.
        options: model-config options of that syntax model (``{"gate": "layer"}`` ...).
        seed: ``torch`` seed of the initialisation of new parts.

    Raises:
        ConfigError: an unknown system, a translation run, an encoder that cannot be loaded.
        DataError: a run folder without a saved model.
    """
    import syntaxformer.modeling  # noqa: F401  (registers the syntax models with the Auto classes)
    from transformers import AutoConfig, AutoModel

    from syntaxformer.defaults import default_hf_model
    from syntaxformer import registry as _registry
    from syntaxformer.modeling import SyntaxModelConfig, model_class
    from syntaxformer.training.run import load_run, load_tokenizer

    path = str(model) if model is not None else default_hf_model()
    options = dict(options or {})
    if (Path(path) / "run.json").is_file():
        config, task = load_run(path)
        if task.head not in (
            "sequence_classification",
            "question_answering",
            "multiple_choice",
            "token_classification",
        ):
            raise ConfigError(
                f"{path} is a {task.head} run; the probes read an encoder's word states (train a "
                "classification, QA or multiple-choice run)"
            )
        if not (Path(path) / "config.json").is_file():
            raise DataError(f"{path} holds no trained model (no config.json); was it trained with save_model=false?")
        with loading_model(path):
            net = model_class(config.model_type, task.head).from_pretrained(path).base_model
        kind = config.model_type
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
    if isinstance(saved, SyntaxModelConfig):
        with loading_model(path):
            net = AutoModel.from_pretrained(path)
        kind = _registry.system_for_model_type(saved.model_type).name
        if kind not in ("sgnet", "syntax_bert"):
            net, kind = net.encoder, "plain"
        return ProbedModel(net.eval(), tokenizer, kind, {"model": path, "system": kind, "options": {}})
    if system is None or system == "plain":
        with loading_model(path):
            net = AutoModel.from_pretrained(path)
        return ProbedModel(net.eval(), tokenizer, "plain", {"model": path, "system": "plain", "options": {}})
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
    from syntaxformer.tasks.featurize import with_dependency_trees

    if syntax not in ("gold", "parser"):
        raise ConfigError(f"syntax={syntax!r} is not valid; choose 'gold' (the treebank's trees) or 'parser'")
    out = list(sentences)
    if not probed.syntax_inputs:
        return out
    if syntax == "parser":
        from syntaxformer.data import make_annotator

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
    """Word vectors of every sentence at every asked layer, computed once under ``torch.no_grad``.

    Args:
        probed: the model (:func:`load_probed_model`).
        sentences: the sentences (their words; their trees are the syntax input when ``syntax="gold"``).
        layers: names from :meth:`ProbedModel.layer_names` (default all).
        word_vector: ``"mean"`` of the word's subword vectors, or the ``"first"`` subword's.
        syntax: ``"gold"`` or ``"parser"`` (see the module docstring); unused for a plain encoder.
        batch_size: sentences per forward pass (sorted by length).
        max_length: tokens per sentence with special tokens (default: the tokenizer's limit); a longer sentence,
            or one with a word that overlaps no subword, is left out (logged; none in EWT dev with MiniLM).
        progress: show a progress bar.

    Returns:
        ``(vectors, kept)``: ``vectors[layer]`` holds one float32 array ``[n_words, H]`` per kept sentence;
        ``kept`` are the indices (into ``sentences``) of the kept sentences, in order.
    """
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.collate import pad_arrays
    from syntaxformer.tasks.base import TaskContext
    from syntaxformer.utils import progress as progress_bar

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
            pool = torch.from_numpy(pools[i])  # (n, L_i)
            for name in layers:
                h = states[name][b, : pool.shape[1]].float()  # (L_i, H)
                out[name][i] = (pool @ h).numpy()  # (n, H)
    return {name: list(v) for name, v in out.items()}, kept  # type: ignore[arg-type]


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
    if probed.system == "plain":
        keep = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        out = probed.net(**keep, output_hidden_states=True, return_dict=True)
    else:
        out = probed.net(**batch, output_hidden_states=True, return_dict=True)
    names = probed.layer_names()
    states = dict(zip(names, out.hidden_states))
    if "sg" in names:
        states["sg"] = out.syntax_hidden_state
        states["aggregated"] = out.last_hidden_state
    return states


# ----------------------------------------------------------------------------------------------------------
# tree targets and metrics
# ----------------------------------------------------------------------------------------------------------
def _scipy(what: str) -> Any:
    try:
        import scipy.sparse.csgraph  # noqa: F401
        import scipy.stats  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(f"{what} needs scipy: pip install 'syntaxformer[analysis]'") from e
    import scipy

    return scipy


def tree_distance_matrix(heads: Sequence[int]) -> np.ndarray:
    """``[n, n]`` number of arcs on the path between every two words of a dependency tree (``heads`` 0-based,
    -1 = root)."""
    scipy = _scipy("tree distances")
    n = len(heads)
    child = np.array([i for i, h in enumerate(heads) if h >= 0], dtype=np.int64)
    parent = np.array([h for h in heads if h >= 0], dtype=np.int64)
    graph = scipy.sparse.csr_matrix((np.ones(len(child)), (child, parent)), shape=(n, n))
    dist = scipy.sparse.csgraph.shortest_path(graph, directed=False, unweighted=True)
    if np.isinf(dist).any():
        raise DataError(f"heads {list(heads)} do not form one tree (some words are not connected)")
    return dist.astype(np.int64)


def minimum_spanning_tree_edges(distances: np.ndarray) -> set[tuple[int, int]]:
    """The edges ``(i, j)``, ``i < j``, of a minimum spanning tree of the complete graph whose edge weights are
    the symmetric matrix ``distances`` ``[n, n]`` (the diagonal is ignored).

    scipy treats a zero weight as a missing edge, so the off-diagonal weights are shifted to start at 1 first:
    adding a constant to every edge changes no spanning tree's rank (all have ``n - 1`` edges).
    """
    scipy = _scipy("the minimum spanning tree")
    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    if n < 2:
        return set()
    d = (d + d.T) / 2
    off = ~np.eye(n, dtype=bool)
    shifted = np.where(off, d - d[off].min() + 1.0, 0.0)
    tree = scipy.sparse.csgraph.minimum_spanning_tree(np.triu(shifted)).tocoo()
    return {(int(min(i, j)), int(max(i, j))) for i, j in zip(tree.row, tree.col)}


def _keep(sentence: Sentence) -> np.ndarray:
    return np.array([t not in PUNCTUATION_UPOS for t in sentence.upos or [""] * len(sentence)], dtype=bool)


def uuas(predicted: Sequence[np.ndarray], sentences: Sequence[Sentence]) -> float:
    """Undirected unlabeled attachment score of the minimum spanning trees of the predicted distance matrices,
    pooled over the sentences: correct arcs / gold arcs, both without punctuation (:data:`PUNCTUATION_UPOS`)."""
    correct = total = 0
    for d, s in zip(predicted, sentences):
        mask = _keep(s)
        keep = np.flatnonzero(mask)
        gold = {
            (min(int(i), s.heads[i]), max(int(i), s.heads[i])) for i in keep if s.heads[i] >= 0 and mask[s.heads[i]]
        }
        sub = np.asarray(d)[np.ix_(keep, keep)]
        pred = {(int(keep[i]), int(keep[j])) for i, j in minimum_spanning_tree_edges(sub)}
        correct += len(pred & gold)
        total += len(gold)
    return correct / total if total else float("nan")


def _rank_rows(x: np.ndarray) -> np.ndarray:
    scipy = _scipy("Spearman correlations")
    return scipy.stats.rankdata(x, axis=-1)


def _row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r of every row of ``a`` with the same row of ``b`` (0 where a row is constant)."""
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(-1) / den
    return np.where(den > 0, r, 0.0)


def _by_length(values: Sequence[tuple[int, float]], lengths: tuple[int, int]) -> float:
    lo, hi = lengths
    per: dict[int, list[float]] = {}
    for n, v in values:
        if lo <= n <= hi:
            per.setdefault(n, []).append(v)
    if not per:
        return float("nan")
    return float(np.mean([np.mean(v) for v in per.values()]))


def distance_spearman(
    predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray], lengths: tuple[int, int] = SPEARMAN_LENGTHS
) -> float:
    """H&M's DSpr.: for every word, Spearman's rho of its row of predicted distances with its gold row (diagonal
    included); averaged over the words of all sentences of one length, then over the lengths in ``lengths``
    (inclusive; punctuation counted in the length). ``nan`` if no sentence has such a length."""
    values = []
    for p, g in zip(predicted, gold):
        n = len(g)
        if not lengths[0] <= n <= lengths[1]:
            continue
        rho = _row_pearson(_rank_rows(np.asarray(p, dtype=np.float64)), _rank_rows(np.asarray(g, dtype=np.float64)))
        values.extend((n, float(r)) for r in rho)
    return _by_length(values, lengths)


def depth_spearman(
    predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray], lengths: tuple[int, int] = SPEARMAN_LENGTHS
) -> float:
    """H&M's NSpr.: per sentence, Spearman's rho of predicted and gold depths; averaged per sentence length, then
    over the lengths in ``lengths``."""
    values = []
    for p, g in zip(predicted, gold):
        n = len(g)
        if not lengths[0] <= n <= lengths[1]:
            continue
        rho = _row_pearson(
            _rank_rows(np.asarray(p, dtype=np.float64)[None]), _rank_rows(np.asarray(g, dtype=np.float64)[None])
        )
        values.append((n, float(rho[0])))
    return _by_length(values, lengths)


def root_accuracy(predicted: Sequence[np.ndarray], sentences: Sequence[Sentence]) -> float:
    """Share of the sentences whose non-punctuation word of smallest predicted depth is the gold root (sentences
    whose root is punctuation are not counted)."""
    hits = total = 0
    for p, s in zip(predicted, sentences):
        keep = _keep(s)
        root = [i for i, h in enumerate(s.heads) if h < 0]
        if len(root) != 1 or not keep[root[0]]:
            continue
        cand = np.flatnonzero(keep)
        hits += int(cand[np.argmin(np.asarray(p)[cand])] == root[0])
        total += 1
    return hits / total if total else float("nan")


# ----------------------------------------------------------------------------------------------------------
# probes
# ----------------------------------------------------------------------------------------------------------
@dataclass
class ProbeSettings:
    """Budget and hyper-parameters of the probes (defaults: small enough for a shared CPU).

    Attributes:
        rank: rank ``k`` of the structural probes' ``B`` (H&M find 64 enough for BERT).
        epochs: passes over the probe-train sentences (structural probes) / words (linear probes).
        lr: Adam learning rate of the structural probes (H&M: 0.001).
        linear_lr: Adam learning rate of the linear probes.
        batch_size: sentences per step (structural probes).
        linear_batch_size: words per step (linear probes).
        seed: seed of every probe's initialisation and batch order.
    """

    rank: int = 64
    epochs: int = 10
    lr: float = 1e-3
    linear_lr: float = 1e-2
    batch_size: int = 20
    linear_batch_size: int = 256
    seed: int = 0


def _padded(vectors: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, n, H]`` zero-padded vectors and the ``[B, n]`` word mask."""
    n = max(len(v) for v in vectors)
    x = torch.zeros(len(vectors), n, vectors[0].shape[1])
    mask = torch.zeros(len(vectors), n, dtype=torch.bool)
    for b, v in enumerate(vectors):
        x[b, : len(v)] = torch.from_numpy(np.asarray(v, dtype=np.float32))
        mask[b, : len(v)] = True
    return x, mask


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

    Args:
        vectors: per sentence, ``[n, H]`` word vectors.
        distances: per sentence, ``[n, n]`` gold tree distances.
        settings: budget and seed (default :class:`ProbeSettings`).
    """
    return _train_structural(vectors, distances, "distance", settings or ProbeSettings())


def train_depth_probe(
    vectors: Sequence[np.ndarray], depths: Sequence[np.ndarray], settings: ProbeSettings | None = None
) -> torch.Tensor:
    """Train H&M's depth probe. Returns ``B`` ``[H, rank]``; predicted depths are ``||h_i B||²``."""
    return _train_structural(vectors, depths, "depth", settings or ProbeSettings())


def predict_distances(proj: torch.Tensor, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per sentence, the ``[n, n]`` distances ``||(h_i - h_j) B||²`` of a distance probe ``B`` ``[H, rank]``."""
    with torch.no_grad():
        return [
            _project_distances(proj, torch.from_numpy(np.asarray(v, dtype=np.float32)).unsqueeze(0))[0]
            .numpy()
            .astype(np.float64)
            for v in vectors
        ]


def predict_depths(proj: torch.Tensor, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per sentence, the ``[n]`` depths ``||h_i B||²`` of a depth probe ``B`` ``[H, rank]``."""
    with torch.no_grad():
        return [
            _project_depths(proj, torch.from_numpy(np.asarray(v, dtype=np.float32)).unsqueeze(0))[0]
            .numpy()
            .astype(np.float64)
            for v in vectors
        ]


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


def _universal(label: str) -> str:
    return label.split(":", 1)[0]


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
    pos = linear_probe_accuracy(tx, [t for s in train for t in s.upos], vx, [t for s in test for t in s.upos], settings)
    lab = linear_probe_accuracy(
        tx,
        [_universal(t) for s in train for t in s.deprels],
        vx,
        [_universal(t) for s in test for t in s.deprels],
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
    """All probes at every asked layer of one model.

    Args:
        probed: the model (:func:`load_probed_model`).
        data: probe-train / probe-test sentences (:func:`load_probe_data`).
        layers: layer names (default all, :meth:`ProbedModel.layer_names`).
        settings: probe budget and seed.
        word_vector, syntax, batch_size, max_length: see :func:`word_representations`.
        progress: show progress bars.

    Returns:
        JSON-ready: ``model`` (what was loaded), ``sentences`` (train / test kept), ``layers`` (one dict per
        layer: ``layer`` and the :data:`METRICS`), ``seconds``.
    """
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
    """Probe several models on one data split: what ``syntaxformer probe`` runs.

    Args:
        models: run folders, saved models or pretrained encoders (``None`` = the offline MiniLM); see
            :func:`load_probed_model` (``system`` / ``options`` apply to pretrained encoders).
        data_file, max_train_sentences, max_test_sentences: see :func:`load_probe_data` (subsample seed =
            ``settings.seed``).
        layers: layer names to probe (each must exist in every model; default all of each).
        settings, word_vector, syntax: see :func:`probe_model`.

    Returns:
        JSON-ready: ``data`` (file, split rule, sizes, the probe-train and probe-test document ids), ``settings``,
        ``models`` (one :func:`probe_model` result each), ``date``.
    """
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
