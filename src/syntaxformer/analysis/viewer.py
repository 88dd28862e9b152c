"""See what the model sees: :func:`build_view` collects one text's or pair's trees, masks, attention and prediction,
:class:`AttentionView` is its self-contained HTML page (``syntaxformer show``; ``docs/viewer.md``)."""

from __future__ import annotations

import contextlib
import html
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModel

from syntaxformer import registry as _registry
from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators import make_annotator
from syntaxformer.data.collate import TOKEN_KEYS, SyntaxCollator
from syntaxformer.data.constituency import with_dependency_trees
from syntaxformer.defaults import DEFAULT_HF_MODEL_HUB, default_hf_model
from syntaxformer.errors import ConfigError, DataError, InputError, SyntaxformerError
from syntaxformer.inference import Predictor, model_head
from syntaxformer.masks.relations import group_name, relation_groups_from_features
from syntaxformer.masks.sdoi import sdoi_mask
from syntaxformer.modeling import SGNetModel, SyntaxBertModel
from syntaxformer.modeling.syntax_attention_core import SyntaxAttentionRecorder
from syntaxformer.tasks import get_task
from syntaxformer.training.blocks import saved_system
from syntaxformer.training.run import RUN_FILE, load_tokenizer, load_trained_model
from syntaxformer.training.saved import loading_model
from syntaxformer.utils import atomic_write

logger = logging.getLogger(__name__)

__all__ = ["AttentionView", "ViewModel", "build_view", "load_view_models"]

#: Placeholder of the page data in the template.
_DATA_MARK = "/*__SYNTAXFORMER_VIEW_DATA__*/null"

#: Digits kept for attention values in the page (3 decimals: enough for colour, keeps pages small).
_DIGITS = 3


@dataclass
class ViewModel:
    """One model shown on the page: its label (``name``), ``system`` (``"plain"``, ``"sgnet"``, ``"syntax_bert"``), the
    backbone or a task model holding one (``model``) and where it was loaded from (``source``)."""

    name: str
    system: str
    model: Any
    source: str


@dataclass
class AttentionView:
    """The viewer page of one text or pair: ``data``, everything it shows (JSON-ready), drawn by ``viewer.html``."""

    data: dict[str, Any] = field(repr=False)

    def html(self) -> str:
        """The self-contained page (inline CSS, SVG drawn by inline JavaScript; no network)."""
        template = resources.files("syntaxformer.analysis").joinpath("viewer.html").read_text(encoding="utf-8")
        payload = json.dumps(self.data, separators=(",", ":")).replace("</", "<\\/")  # no early </script>
        return template.replace(_DATA_MARK, payload)

    def save(self, path: str | Path) -> Path:
        """Write the page to ``path`` (atomically) and return the path."""
        path = Path(path)
        with atomic_write(path) as f:
            f.write(self.html())
        return path

    def _repr_html_(self) -> str:
        """Jupyter: the page in an ``iframe`` (``srcdoc``), so its scripts run inside the notebook output."""
        return (
            f'<iframe srcdoc="{html.escape(self.html(), quote=True)}" style="width:100%;height:900px;'
            f'border:1px solid #ddd" sandbox="allow-scripts"></iframe>'
        )

    def __repr__(self) -> str:
        names = ", ".join(m["name"] for m in self.data.get("models", []))
        return f"AttentionView({len(self.data.get('tokens', []))} tokens; models: {names})"


def load_view_models(specs: Sequence[str] | None = None, plain: str | None = None, seed: int = 0) -> list[ViewModel]:
    """The models of a page: the plain encoder first, then the syntax models. Arguments: specs: run folders, folders of
    saved models, or pretrained encoders (then SG-Net and Syntax-BERT are built on it, untrained, new layers seeded with
    ``seed``); default the offline MiniLM; plain: the plain encoder (a checkpoint, or a run folder's encoder); default
    the checkpoint the first syntax model was built from. Raises ConfigError: a spec that loads no model."""
    specs = list(specs or [default_hf_model()])
    models: list[ViewModel] = []
    base = None
    for spec in specs:
        torch.manual_seed(seed)
        loaded, origin = _load_spec(spec)
        models.extend(loaded)
        base = base or origin
    return [_load_plain(plain or base or default_hf_model()), *models]


def _load_spec(spec: str) -> tuple[list[ViewModel], str | None]:
    """The syntax models one spec names, and the pretrained checkpoint they were built from (if known)."""
    path = Path(spec)
    run_file = path / RUN_FILE
    if saved_system(str(path)) is not None:
        origin = head = None
        if run_file.is_file():
            record = json.loads(run_file.read_text(encoding="utf-8"))
            origin = record.get("config", {}).get("model_name_or_path")
            with contextlib.suppress(Exception):  # a task registered outside the package: the backbone is enough
                head = get_task(record["task"]["name"], **record["task"].get("options", {})).head
        saved, model = load_trained_model(path, head)
        model.eval()
        name = f"{path.name} ({_system_title(saved, model)})"
        if saved not in ("sgnet", "syntax_bert"):  # the plain encoder, or a system the page has no view of: its encoder
            return [ViewModel(name, "plain", model.base_model.encoder.eval(), str(path))], origin
        return [ViewModel(name, saved, model, str(path))], origin
    if run_file.is_file():
        raise ConfigError(
            f"{spec} is a run folder without a saved syntaxformer model (trained with "
            "save_model=false?); give a run folder that holds config.json"
        )
    try:
        with loading_model(spec, "encoder"):
            sg = SGNetModel.from_encoder_pretrained(spec)
            sb = SyntaxBertModel.from_encoder_pretrained(spec)
    except DataError as e:
        raise ConfigError(f"--model {spec!r} is neither a run folder nor a loadable encoder: {e}") from e
    return [
        ViewModel(f"SG-Net (untrained, {_short(spec)})", "sgnet", sg, spec),
        ViewModel(f"Syntax-BERT (untrained, {_short(spec)})", "syntax_bert", sb, spec),
    ], spec


def _load_plain(spec: str) -> ViewModel:
    """The plain encoder: a pretrained checkpoint (``AutoModel``) or the encoder of a saved model / run."""
    if saved_system(spec) == "syntax_bert":
        raise ConfigError(
            f"--plain {spec}: a Syntax-BERT model has no plain encoder; give a checkpoint or a baseline / SG-Net run"
        )
    if saved_system(spec) is not None:
        encoder = load_trained_model(spec)[1].encoder
        return ViewModel(f"plain encoder ({Path(spec).name})", "plain", encoder.eval(), spec)
    try:
        with loading_model(spec, "plain encoder"):
            encoder = AutoModel.from_pretrained(spec)
    except DataError as e:
        raise ConfigError(f"cannot load the plain encoder {spec!r}: {e}; give --plain a checkpoint or run") from e
    return ViewModel(f"plain encoder ({_short(spec)})", "plain", encoder.eval(), spec)


def _short(spec: str) -> str:
    """A spec's short name: the offline MiniLM by its model's name, another folder by its name, a hub name as is."""
    if spec in (default_hf_model(), DEFAULT_HF_MODEL_HUB):
        return DEFAULT_HF_MODEL_HUB.split("/")[-1]
    return Path(spec).name or spec


def _system_title(system: str, model: Any) -> str:
    cfg = model.config
    if system == "syntax_bert":
        gate = getattr(cfg, "gate", "none")
        return "Syntax-BERT" + ("" if gate == "none" else f", gate={gate}")
    return _registry.system(system).label_for(cfg)


def build_view(
    text_a: str,
    text_b: str | None = None,
    models: Sequence[str] | Sequence[ViewModel] | None = None,
    *,
    plain: str | None = None,
    parser: Any = None,
    max_length: int = 64,
    criterion: str = "share",
    parse_cache: Any = True,
    seed: int = 0,
) -> AttentionView:
    """Annotate a text (or pair), run the models and collect what the page shows. Arguments: models: specs or
    :class:`ViewModel` s; plain, seed, and ``None`` models: as :func:`load_view_models`; parser, parse_cache: the
    annotator (:func:`~syntaxformer.data.annotators.make_annotator`); max_length: tokens kept, special tokens included
    (a longer text is cut, and the page says so); criterion: the SDOI mask's subword criterion. Raises InputError: an
    empty text. ConfigError: a model that loads from no spec or returns no attention."""
    texts = [t for t in (text_a, text_b) if t is not None]
    for k, t in enumerate(texts):
        if not str(t).strip():
            raise InputError(f"text {'AB'[k]} is empty; give the words to show")
    loaded: list[ViewModel]
    if models and all(isinstance(m, ViewModel) for m in models):
        loaded = [m for m in models if isinstance(m, ViewModel)]
    else:
        loaded = load_view_models([str(m) for m in models or []], plain, seed)
    syntax_models = [m for m in loaded if m.system != "plain"]
    tokenizer = load_tokenizer((syntax_models or loaded)[0].source)

    annotator = make_annotator(parser, cache=parse_cache, progress=False)
    docs = annotator.annotate(texts)
    derived = [s.tree is None for d in docs for s in d.sentences]
    docs = [with_dependency_trees(d) for d in docs]
    window = SyntaxAligner(tokenizer, max_length=max_length)(docs[0], docs[1] if len(docs) > 1 else None)[0]
    D = max((int(getattr(m.model.config, "max_distance", 15) or 15) for m in syntax_models), default=15)
    batch = SyntaxCollator(pad_token_id=tokenizer.pad_token_id or 0, criterion=criterion, max_distance=D)([window])
    L = int(batch["input_ids"].shape[1])

    sdoi = sdoi_mask(batch["dep_tin"], batch["dep_tout"], batch["syntax_tree"])[0]  # (L, L)
    dep_groups, con_groups = relation_groups_from_features(batch, max_distance=D)
    assert con_groups is not None  # constituency=True (the default) always builds the constituency partition
    groups = {"dependency": dep_groups[0], "constituency": con_groups[0]}
    sb = next((m for m in syntax_models if m.system == "syntax_bert"), None)
    groups_note = "relation_groups_from_features (all kinds, pairwise on)"
    if sb is None and syntax_models:  # Syntax-BERT's relation groups belong on a page with a Syntax-BERT model only
        groups = {}
    if sb is not None:
        backbone = sb.model.base_model
        built = backbone.build_groups(batch, torch.device("cpu"), batch["input_ids"])
        names = (["dependency"] if backbone.config.use_dependency else []) + (
            ["constituency"] if backbone.config.use_constituency else []
        )
        groups = {n: g[0] for n, g in zip(names, built.partitions)}
        groups_note = f"as {sb.name} builds them (its options and ablations)"

    words, sentences = _forest(docs, derived)
    data: dict[str, Any] = {
        "texts": texts,
        "parser": annotator.source,
        "input_ids": batch["input_ids"][0].tolist(),
        "tokens": tokenizer.convert_ids_to_tokens(batch["input_ids"][0].tolist()),
        "token_word": window.word_index.tolist(),
        "words": words,
        "sentences": sentences,
        "sdoi": sdoi.int().tolist(),
        "criterion": criterion,
        "groups": {n: g.int().tolist() for n, g in groups.items()},
        "groups_note": groups_note,
        "max_distance": D,
        "length": _length(window, L, max_length),
        "models": [],
    }
    if data["length"]["cut"]:
        n = data["length"]
        logger.warning(
            "viewer: the text is cut to its first %d of %d tokens (max_length=%d); raise max_length "
            "(syntaxformer show --max-length) to see all of it",
            n["shown"],
            n["total"],
            max_length,
        )
    for m in loaded:
        entry = _model_data(m, batch, L, D)
        entry["prediction"] = _prediction(m, texts, parser, parse_cache)
        data["models"].append(entry)
    logger.info("viewer: %d tokens, %d words, models %s", L, len(data["words"]), ", ".join(m.name for m in loaded))
    return AttentionView(data)


def _length(window: Any, shown: int, max_length: int) -> dict[str, Any]:
    """How much of the text the page's tokens cover: tokens shown and in the whole text (special tokens
    included), words with a token shown and all words, and whether the text was cut at ``max_length``."""
    # n_pieces counts every word's pieces in the full tokenization; word_index < 0: the special tokens
    total = int(window.n_pieces.sum()) + int((window.word_index < 0).sum())
    return {
        "shown": shown,
        "total": max(total, shown),
        "words_shown": len({int(w) for w in window.word_index.tolist() if w >= 0}),
        "words_total": len(window.n_pieces),
        "max_length": int(max_length),
        "cut": total > shown,
    }


def _prediction(m: ViewModel, texts: Sequence[str], parser: Any, parse_cache: Any) -> dict[str, Any] | None:
    """A trained run's prediction for the page's text as ``syntaxformer predict`` makes it (``None`` for other models;
    a note where the model cannot predict the text)."""
    if m.system == "plain" or not (Path(m.source) / RUN_FILE).is_file():
        return None
    try:
        head = model_head(m.model)
    except ConfigError:  # the backbone alone: nothing to predict with
        return None
    out: dict[str, Any] = {"head": head, "record": None, "note": None, "parser": None, "max_length": None}
    if head == "sequence_classification":
        inputs: list[Any] = [texts[0] if len(texts) == 1 else (texts[0], texts[1])]
    elif head == "question_answering":
        if len(texts) < 2:
            out["note"] = "a span-QA model answers a question about a passage: give two texts, the question first"
            return out
        inputs = [{"question": texts[0], "context": texts[1]}]
    else:
        out["note"] = f"the page shows no prediction of a {head} model"
        return out
    device = next(m.model.parameters()).device
    cache = None if parse_cache is True else (parse_cache or False)
    try:
        predictor = Predictor.from_run(
            m.source,
            changes={"parser": parser} if isinstance(parser, str) else None,
            model=m.model,
            device=device,
            parse_cache=cache,
        )
        (record,) = predictor.predict(inputs)
    except SyntaxformerError as e:
        logger.warning("viewer: no prediction of %s: %s", m.name, e)
        out["note"] = f"no prediction: {e}"
        return out
    drop = ("text", "text_pair", "question", "context", "id")
    out["record"] = {k: v for k, v in record.items() if k not in drop}
    out["parser"] = str(getattr(predictor.context, "parser", None))
    out["max_length"] = int(predictor.context.max_length)
    return out


def _forest(docs: Sequence[Any], derived: Sequence[bool]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every word of the example in forest order (the aligner's word index), with its head in that order; and per
    sentence its first and last word and its constituency tree as nested dicts (leaves are forest word indices)."""
    words: list[dict[str, Any]] = []
    sentences: list[dict[str, Any]] = []
    for seg, doc in enumerate(docs):
        for s in doc.sentences:
            start = len(words)
            for i, w in enumerate(s.words):
                h = s.heads[i]
                deprel, pos = (s.deprels or [""] * len(s))[i], (s.upos or [""] * len(s))[i]
                words.append(
                    {"text": w, "head": -1 if h < 0 else start + h, "deprel": deprel, "pos": pos, "segment": seg}
                )
            from_dependency = bool(derived[len(sentences)])
            tree = _tree_dict(s.tree, iter(range(start, len(words))), from_dependency)
            sentences.append({"start": start, "end": len(words), "tree": tree, "derived": from_dependency})
    return words, sentences


def _tree_dict(tree: Any, leaves: Iterator[int], derived: bool = False) -> dict[str, Any]:
    """A tree as nested dicts; ``derived`` marks the phrases (not pre-terminals) of a tree derived from dependencies."""
    children = [{"leaf": next(leaves)} if isinstance(c, str) else _tree_dict(c, leaves, derived) for c in tree.children]
    phrase = any(not isinstance(c, str) for c in tree.children)
    return {"label": tree.label, "children": children, "derived": bool(derived and phrase)}


def _model_data(m: ViewModel, batch: dict[str, torch.Tensor], L: int, D: int) -> dict[str, Any]:
    """Attention per layer and head (plus SG-Net's layer "SG"), topical weights and gates of one model."""
    net = m.model.base_model if hasattr(m.model, "base_model") else m.model
    device = next(net.parameters()).device
    inputs = {k: v.to(device) for k, v in batch.items() if k != "labels"}
    out: dict[str, Any] = {
        "name": m.name,
        "system": m.system,
        "source": m.source,
        "layers": [],
        "topical": None,
        "gate": None,
    }
    with torch.no_grad():
        if m.system == "syntax_bert":
            rec = SyntaxAttentionRecorder()
            net(**inputs, syntax_record=rec)
            n_layers = net.config.encoder.num_hidden_layers
            missing = [i for i in range(n_layers) if i not in rec.attentions]
            if missing:
                raise ConfigError(f"{m.name}: no attention was recorded for layers {missing}")
            out["layers"] = [{"name": str(i), "attn": _round(rec.attentions[i][0])} for i in range(n_layers)]
            out["topical"] = _topical(rec, D)
            if net.gate is not None:
                out["gate"] = _round(net.gate.weight.float())
        else:
            encoder = net if m.system == "plain" else net.encoder
            with _eager(encoder):
                given = {k: v for k, v in inputs.items() if m.system != "plain" or k in TOKEN_KEYS}
                res = net(**given, output_attentions=True, return_dict=True)
            sg = None if m.system == "plain" else res.sg_attentions
            attentions = res.attentions
            n_layers = encoder.config.num_hidden_layers
            if not attentions or len(attentions) != n_layers or any(a is None for a in attentions):
                raise ConfigError(
                    f"{m.name} returned no attention weights (attention implementation "
                    f"{encoder.config._attn_implementation!r}); the viewer needs an encoder that "
                    "supports output_attentions with eager attention"
                )
            out["layers"] = [{"name": str(i), "attn": _round(a[0])} for i, a in enumerate(attentions)]
            if sg is not None:
                out["layers"].append({"name": "SG", "attn": _round(sg[0])})
    return out


@contextlib.contextmanager
def _eager(model: Any) -> Iterator[None]:
    """Run ``model`` with eager attention (the only one that returns weights), then restore its implementation."""
    before = model.config._attn_implementation
    if before != "eager":
        model.set_attn_implementation("eager")
    try:
        yield
    finally:
        if before != "eager":
            model.set_attn_implementation(before)


def _topical(rec: Any, D: int) -> dict[str, Any]:
    """Topical weights per layer ``[L, C']`` over the columns that are a candidate for some token."""
    names = (
        ["dependency", "constituency"][: len(rec.num_buckets)]
        if len(rec.num_buckets) <= 2
        else [f"partition {p}" for p in range(len(rec.num_buckets))]
    )
    columns = []
    for p, n in enumerate(rec.num_buckets):
        for g in range(n):
            kind, dist = group_name(g, D) if g <= 3 * D + 3 else ("other", 0)
            columns.append({"partition": names[p], "group": g, "kind": kind, "distance": dist})
    if rec.full_candidate:
        columns.append({"partition": "full", "group": -1, "kind": "full", "distance": 0})
    layers = []
    for layer in sorted(rec.topical):
        alpha, cand = rec.topical[layer][0], rec.candidates[layer][0]  # (L, C)
        keep = cand.any(0).nonzero().flatten().tolist()
        layers.append(
            {
                "layer": layer,
                "columns": [columns[c] for c in keep],
                "weights": _round(alpha[:, keep]),
                "candidate": cand[:, keep].int().tolist(),
            }
        )
    return {"layers": layers}


def _round(t: torch.Tensor) -> list:
    return np.round(t.detach().double().cpu().numpy(), _DIGITS).tolist()  # float64: 0.261, not 0.26100000739
