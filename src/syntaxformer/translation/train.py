"""Train a translation model from scratch: :class:`TranslationConfig` -> :func:`train_translation`.

The loop is deliberately plain (one process, CPU or one GPU): length-grouped shuffled batches, Adam
(β = 0.9, 0.98), inverse-square-root schedule with linear warm-up (Vaswani et al.), label smoothing 0.1, gradient
clipping, a fixed budget of ``max_steps`` updates (the same for every arm and data fraction, as the
Syntax-Infused Transformer paper trains every fraction for the same 100k steps), validation loss every
``eval_every`` steps with the best checkpoint kept (the model written at the end is the best by validation loss),
checkpoints for resuming, atomic JSON writes.

Output folder::

    config.json, model.safetensors       the best model (SyntaxTransformerForTranslation.from_pretrained)
    source_tokenizer/, target_tokenizer/ the BPE vocabularies learned on the training data
    translation.json                     the TranslationConfig
    metrics.json                         sizes, times, losses, BLEU of the evaluation sets (with signatures)
    hyp.<set>.txt                        the translations of each evaluation set
    checkpoint/last.pt, checkpoint/best.pt   state for resuming (removed with keep_checkpoints=False)

Command line: ``syntaxformer train --task translation ...`` (see :func:`run_from_train_args`) or
``python -m syntaxformer.translation.train --help`` (:func:`run_translation_cli`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from syntaxformer.errors import SyntaxformerError
from syntaxformer.utils import atomic_write, progress

__all__ = ["TranslationConfig", "ARMS", "train_translation", "run_translation_cli", "run_from_train_args",
           "write_json"]

#: The experiment's arms: syntax options per arm name.
ARMS: dict[str, dict[str, Any]] = {
    "baseline": {"features": [], "use_sg_layer": False},
    "syntax": {"features": ["upos", "case", "subword"], "use_sg_layer": False},
    "sgnet": {"features": [], "use_sg_layer": True},
    "both": {"features": ["upos", "case", "subword"], "use_sg_layer": True},
    # controls: the extra layer without the SDOI mask (capacity without syntax); fine POS tags
    "vanilla_layer": {"features": [], "use_sg_layer": True, "sg_mask": "none"},
    "syntax_xpos": {"features": ["xpos", "case", "subword"], "use_sg_layer": False},
}


@dataclass
class TranslationConfig:
    """Everything one training run needs (saved as ``translation.json``).

    Data (defaults: Multi30k under ``../shared/data``):
        train_source, train_target, valid_source, valid_target: parallel plain-text (or ``.sgm``) files;
            ``None`` = Multi30k train / val (English→German).
        eval_sets: name -> ``[source, reference]`` files translated with beam search after training
            (default: Multi30k test2016 as ``test2016``). ``{}`` = none.
        fraction: fraction of the training pairs used (seeded subsample with ``data_seed``; nested across
            fractions).
        data_seed: seed of the subsample.
        tokenizer_dir: a folder with ``source_tokenizer/`` and ``target_tokenizer/`` to reuse (e.g. shared by the
            arms of one fraction); ``None`` = learn BPE on the (subsampled) training data.
        source_vocab_size, target_vocab_size: BPE vocabulary sizes (separate vocabularies, see
            :mod:`.tokenizer`).
        max_source_length, max_target_length: pieces kept per sentence in training (``</s>`` included).

    Model:
        arm: a key of :data:`ARMS` setting ``features`` / ``use_sg_layer`` / ``sg_mask``; ``None`` = use those
            fields as given.
        feature_dim: ``d``; ``None`` (default) = the paper's share of the width, 20 of 512, at the preset's
            ``d_model`` (20 for ``base``, 5 for ``cpu``): a fixed 20 would take 15.6% of a 128-d model's word
            dimensions.
        features, feature_combine, use_sg_layer, sg_mask, alpha: see
            :class:`~syntaxformer.translation.model.SyntaxTranslationConfig`.
        preset: Transformer size (:data:`~syntaxformer.translation.model.PRESETS`); ``seq2seq_overrides``: any
            ``MarianConfig`` option on top (``dropout`` ...).

    Training:
        max_steps, batch_size (sentence pairs), learning_rate (peak), warmup_steps, adam_betas, weight_decay,
        max_grad_norm, label_smoothing, seed, eval_every (validation loss; also the checkpoint interval),
        eval_batch_size, num_beams, keep_checkpoints, show_progress, threads (torch CPU threads; ``None`` =
        torch's default).
    """

    output_dir: str = "runs/translation"
    train_source: str | None = None
    train_target: str | None = None
    valid_source: str | None = None
    valid_target: str | None = None
    eval_sets: dict[str, list[str]] | None = None
    fraction: float = 1.0
    data_seed: int = 0
    tokenizer_dir: str | None = None
    source_vocab_size: int = 4000
    target_vocab_size: int = 4000
    max_source_length: int = 64
    max_target_length: int = 64
    arm: str | None = None
    features: list[str] = field(default_factory=list)
    feature_dim: int | None = None
    feature_combine: str = "sum"
    use_sg_layer: bool = False
    sg_mask: str = "sdoi"
    alpha: float = 0.5
    preset: str = "cpu"
    seq2seq_overrides: dict[str, Any] = field(default_factory=dict)
    max_steps: int = 400
    batch_size: int = 128
    learning_rate: float = 1.5e-3
    warmup_steps: int = 100
    adam_betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    label_smoothing: float = 0.1
    seed: int = 1
    eval_every: int = 50
    eval_batch_size: int = 64
    num_beams: int = 5
    keep_checkpoints: bool = True
    show_progress: bool = True
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.feature_dim is None:  # the paper's share of the width (20 of 512) at this preset's d_model
            from syntaxformer.translation.model import PRESETS

            d_model = int(self.seq2seq_overrides.get("d_model", PRESETS.get(self.preset, PRESETS["cpu"])["d_model"]))
            self.feature_dim = max(1, round(20 * d_model / 512))
        if self.arm is not None:
            if self.arm not in ARMS:
                raise SyntaxformerError(f"unknown arm {self.arm!r}; expected one of {', '.join(ARMS)}")
            for k, v in ARMS[self.arm].items():
                setattr(self, k, list(v) if isinstance(v, list) else v)
        if isinstance(self.features, str):
            self.features = [f for f in self.features.split(",") if f]
        self.adam_betas = tuple(self.adam_betas)  # type: ignore[assignment]
        for name in ("max_steps", "batch_size", "eval_every", "eval_batch_size", "num_beams"):
            if int(getattr(self, name)) < 1:
                raise SyntaxformerError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0.0 < self.fraction <= 1.0:
            raise SyntaxformerError(f"fraction must lie in (0, 1], got {self.fraction}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TranslationConfig":
        """Build from a dict, naming unknown keys."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SyntaxformerError(f"unknown translation option(s) {unknown}; known: {sorted(known)}")
        return cls(**data)


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename)."""
    with atomic_write(path) as f:
        json.dump(data, f, indent=1, ensure_ascii=False)


# -- data ---------------------------------------------------------------------------------------------------------
def _corpora(config: TranslationConfig):
    from syntaxformer.translation.data import multi30k, read_corpus, subsample

    if config.train_source:
        if not config.train_target:
            raise SyntaxformerError("train_source needs train_target")
        train = read_corpus(config.train_source, config.train_target)
    else:
        train = multi30k("train")
    if config.valid_source:
        if not config.valid_target:
            raise SyntaxformerError("valid_source needs valid_target")
        valid = read_corpus(config.valid_source, config.valid_target)
    else:
        valid = multi30k("val")
    train = subsample(train, config.fraction, config.data_seed)
    return train, valid


def _eval_sets(config: TranslationConfig) -> dict[str, Any]:
    from syntaxformer.translation.data import multi30k, read_corpus

    if config.eval_sets is None:
        return {"test2016": multi30k("test2016")}
    out = {}
    for name, files in config.eval_sets.items():
        if len(files) != 2:
            raise SyntaxformerError(f"eval set {name!r}: expected [source, reference] files, got {files}")
        out[name] = read_corpus(files[0], files[1])
    return out


def _tokenizers(config: TranslationConfig, train):
    from syntaxformer.translation.tokenizer import load_tokenizers, save_tokenizers, train_bpe

    if config.tokenizer_dir and (Path(config.tokenizer_dir) / "source_tokenizer" / "tokenizer.json").is_file():
        return load_tokenizers(config.tokenizer_dir)
    src = train_bpe(train.sources, config.source_vocab_size)
    tgt = train_bpe(train.targets, config.target_vocab_size)
    if config.tokenizer_dir:
        save_tokenizers(src, tgt, config.tokenizer_dir)
    return src, tgt


# -- training -----------------------------------------------------------------------------------------------------
def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _batches_from(lengths: Sequence[int], batch_size: int, seed: int, epoch: int, position: int):
    """Endless ``(epoch, position, indices)`` starting at a saved place (for exact resumption)."""
    from syntaxformer.translation.dataset import length_batches

    while True:
        batches = length_batches(lengths, batch_size, True, seed * 100_003 + epoch)
        for k in range(position, len(batches)):
            yield epoch, k, batches[k]
        epoch, position = epoch + 1, 0


@torch.no_grad()
def validation_loss(model, items, batch_size: int = 64) -> float:
    """Mean label-smoothed loss per target token over ``items`` (teacher forcing, evaluation mode)."""
    from syntaxformer.translation.dataset import collate, length_batches

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for idx in length_batches([len(it["labels"]) for it in items], batch_size, shuffle=False):
        batch = {k: v.to(device) for k, v in collate([items[i] for i in idx]).items()}
        n = int((batch["labels"] != -100).sum())
        total += float(model(**batch).loss) * n
        tokens += n
    model.train(was_training)
    return total / max(tokens, 1)


def count_parameters(model) -> int:
    """Number of distinct trainable parameters (tied weights counted once)."""
    seen, n = set(), 0
    for p in model.parameters():
        if p.requires_grad and p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            n += p.numel()
    return n


def train_translation(config: TranslationConfig, annotator: Any = None) -> dict[str, Any]:
    """Train (or resume) one model, keep the best by validation loss, translate the evaluation sets.

    Args:
        config: the run's options.
        annotator: spaCy annotator for the sources (default: English pipeline, persistent parse cache).

    Returns:
        the metrics written to ``metrics.json``. A finished run (``metrics.json`` present) is not retrained: its
        metrics are returned.
    """
    from transformers import get_inverse_sqrt_schedule

    from syntaxformer.translation.dataset import collate, encode_corpus
    from syntaxformer.translation.evaluate import TranslationModel, translate_and_score
    from syntaxformer.translation.model import SyntaxTransformerForTranslation, build_config
    from syntaxformer.translation.tokenizer import save_tokenizers

    out = Path(config.output_dir)
    if (out / "metrics.json").is_file():
        return json.loads((out / "metrics.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    if config.threads:
        torch.set_num_threads(int(config.threads))
    if not config.show_progress:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    write_json(out / "translation.json", config.to_dict())
    t_start = time.time()
    from syntaxformer.data.annotators import make_annotator

    annotator = make_annotator(annotator, batch_size=512, progress=config.show_progress)
    train, valid = _corpora(config)
    src_tok, tgt_tok = _tokenizers(config, train)
    save_tokenizers(src_tok, tgt_tok, out)
    enc = dict(annotator=annotator, max_source_length=config.max_source_length,
               max_target_length=config.max_target_length, show_progress=config.show_progress)
    train_items = encode_corpus(train, src_tok, tgt_tok, **enc)
    valid_items = encode_corpus(valid, src_tok, tgt_tok, **enc)
    prep_s = time.time() - t_start

    _seed_everything(config.seed)
    model_config = build_config(config.preset, len(src_tok), len(tgt_tok), features=config.features,
                                use_sg_layer=config.use_sg_layer, seq2seq_overrides=config.seq2seq_overrides,
                                feature_dim=config.feature_dim, feature_combine=config.feature_combine,
                                sg_mask=config.sg_mask, alpha=config.alpha, label_smoothing=config.label_smoothing)
    model = SyntaxTransformerForTranslation(model_config)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=config.learning_rate, betas=config.adam_betas)
    # the schedule is read *after* each update (scheduler.step() follows optimizer.step()), so shift it by one:
    # update k (0-based) runs at the schedule's value for step k + 1, never at the warm-up's 0
    warmup = get_inverse_sqrt_schedule(optimizer, num_warmup_steps=config.warmup_steps).lr_lambdas[0]
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup(step + 1))

    ckpt_dir = out / "checkpoint"
    state = {"step": 0, "epoch": 0, "position": 0, "train_seconds": 0.0, "best_loss": math.inf, "best_step": 0,
             "history": []}
    if (ckpt_dir / "last.pt").is_file():
        saved = torch.load(ckpt_dir / "last.pt", map_location=device, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state = saved["state"]
        torch.set_rng_state(saved["rng"]["torch"])
        np.random.set_state(saved["rng"]["numpy"])
        random.setstate(saved["rng"]["python"])

    lengths = [len(it["input_ids"]) + len(it["labels"]) for it in train_items]
    stream = _batches_from(lengths, config.batch_size, config.seed, state["epoch"], state["position"])
    model.train()
    running, running_n = 0.0, 0
    with progress(total=config.max_steps, initial=state["step"], desc=f"training {config.arm or 'model'}",
                  unit="step", disable=None if config.show_progress else True) as bar:
        while state["step"] < config.max_steps:
            t0 = time.time()
            epoch, position, idx = next(stream)
            batch = {k: v.to(device) for k, v in collate([train_items[i] for i in idx]).items()}
            loss = model(**batch).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            state["step"] += 1
            state["epoch"], state["position"] = epoch, position + 1
            running += float(loss.detach())
            running_n += 1
            state["train_seconds"] += time.time() - t0
            bar.update(1)
            if state["step"] % config.eval_every == 0 or state["step"] == config.max_steps:
                t1 = time.time()
                vloss = validation_loss(model, valid_items, config.eval_batch_size)
                entry = {"step": state["step"], "epoch": epoch + (position + 1) / max(1, math.ceil(
                    len(train_items) / config.batch_size)), "train_loss": running / max(running_n, 1),
                         "valid_loss": vloss}
                state["history"].append(entry)
                running, running_n = 0.0, 0
                bar.set_postfix(train=f"{entry['train_loss']:.3f}", valid=f"{vloss:.3f}")
                ckpt_dir.mkdir(exist_ok=True)
                if vloss < state["best_loss"]:
                    state["best_loss"], state["best_step"] = vloss, state["step"]
                    _atomic_torch_save({"model": model.state_dict(), "step": state["step"]}, ckpt_dir / "best.pt")
                state["train_seconds"] += time.time() - t1
                _atomic_torch_save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                    "scheduler": scheduler.state_dict(), "state": state,
                                    "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),
                                            "python": random.getstate()}}, ckpt_dir / "last.pt")

    best = torch.load(ckpt_dir / "best.pt", map_location=device, weights_only=False)
    model.load_state_dict(best["model"])
    model.eval()
    model.save_pretrained(out)
    tm = TranslationModel(model, src_tok, tgt_tok, max_source_length=256, annotator=annotator)
    evaluations = {}
    for name, corpus in _eval_sets(config).items():
        r = translate_and_score(tm, corpus.sources, corpus.targets, config.eval_batch_size, config.num_beams,
                                config.show_progress, name)
        with atomic_write(out / f"hyp.{name}.txt") as f:
            f.write("".join(h + "\n" for h in r.pop("hypotheses")))
        evaluations[name] = r
    metrics = {
        "arm": config.arm, "features": config.features, "use_sg_layer": config.use_sg_layer,
        "sg_mask": config.sg_mask if config.use_sg_layer else None, "fraction": config.fraction,
        "seed": config.seed, "sizes": {"train": len(train), "valid": len(valid),
                                       "source_vocab": len(src_tok), "target_vocab": len(tgt_tok)},
        "parameters": count_parameters(model), "preset": config.preset, "max_steps": config.max_steps,
        "epochs": state["history"][-1]["epoch"] if state["history"] else 0.0,
        "train_seconds": round(state["train_seconds"], 1), "prepare_seconds": round(prep_s, 1),
        "best_step": state["best_step"], "best_valid_loss": state["best_loss"], "history": state["history"],
        "eval": evaluations, "threads": torch.get_num_threads(), "device": str(device),
    }
    write_json(out / "metrics.json", metrics)
    if not config.keep_checkpoints:
        for f in ("last.pt", "best.pt"):
            (ckpt_dir / f).unlink(missing_ok=True)
        if ckpt_dir.is_dir() and not any(ckpt_dir.iterdir()):
            ckpt_dir.rmdir()
    return metrics


def _atomic_torch_save(obj: Any, path: Path) -> None:
    tmp = path.with_name(f".tmp-{path.name}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


# -- command line -------------------------------------------------------------------------------------------------
def build_arg_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Options of ``python -m syntaxformer.translation.train`` (every :class:`TranslationConfig` field)."""
    p = parser or argparse.ArgumentParser(prog="syntaxformer train --task translation",
                                          description="train an encoder-decoder Transformer from scratch "
                                                      "(baseline / syntax-infused / SG-Net encoder)")
    p.add_argument("--config", help="JSON file of TranslationConfig options")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one option (repeatable), e.g. --set fraction=0.1 --set arm=syntax")
    p.add_argument("--output-dir")
    p.add_argument("--arm", choices=sorted(ARMS))
    p.add_argument("--fraction", type=float)
    p.add_argument("--preset")
    p.add_argument("--max-steps", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--learning-rate", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--no-progress", action="store_true")
    return p


def _options(config_file: str | None, overrides: Sequence[str], explicit: dict[str, Any]) -> TranslationConfig:
    from syntaxformer.training.config import apply_overrides, read_config_file

    data = read_config_file(config_file) if config_file else {}
    data = apply_overrides(data, overrides)
    data.update({k: v for k, v in explicit.items() if v is not None})
    data.pop("task", None)
    return TranslationConfig.from_dict(data)


def run_translation_cli(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (see :func:`build_arg_parser`), train, print the metrics summary as JSON."""
    args = build_arg_parser().parse_args(argv)
    explicit = {"output_dir": args.output_dir, "arm": args.arm, "fraction": args.fraction, "preset": args.preset,
                "max_steps": args.max_steps, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                "seed": args.seed}
    if args.no_progress:
        explicit["show_progress"] = False
    return _train_and_print(_options(args.config, args.overrides, explicit))


def run_from_train_args(args: argparse.Namespace) -> int:
    """Entry for ``syntaxformer train --task translation``: reads the train command's parsed flags.

    Used flags: ``--config`` (JSON of :class:`TranslationConfig` options), ``--set KEY=VALUE`` (e.g.
    ``--set arm=syntax --set fraction=0.1``), ``--output-dir``, ``--max-steps``, ``--learning-rate``,
    ``--batch-size``, ``--seed``, ``--use-sg-layer`` (an ``arm`` overrides it), ``--no-progress``. Other flags
    of the GLUE route are ignored.
    """
    explicit = {"output_dir": getattr(args, "output_dir", None), "max_steps": getattr(args, "max_steps", None),
                "learning_rate": getattr(args, "learning_rate", None),
                "batch_size": getattr(args, "per_device_train_batch_size", None),
                "seed": getattr(args, "seed", None)}
    if getattr(args, "use_sg_layer", None) is not None:
        explicit["use_sg_layer"] = args.use_sg_layer
    if getattr(args, "no_progress", False):
        explicit["show_progress"] = False
    return _train_and_print(_options(getattr(args, "config", None), getattr(args, "overrides", []) or [], explicit))


def _train_and_print(config: TranslationConfig) -> int:
    m = train_translation(config)
    print(json.dumps({"arm": m["arm"], "fraction": m["fraction"], "parameters": m["parameters"],
                      "train_seconds": m["train_seconds"], "best_step": m["best_step"],
                      "bleu": {k: v.get("bleu") for k, v in m["eval"].items()},
                      "signature": next((v["signature"] for v in m["eval"].values() if "signature" in v), None),
                      "output_dir": config.output_dir}, indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(run_translation_cli())
