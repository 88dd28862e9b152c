"""Reading comprehension runs: SQuAD 2.0 span QA (+ answer verifier) and RACE multiple choice.

:func:`run_qa` fine-tunes SG-Net (or the plain-encoder baseline) with :class:`~syntaxformer.training.trainer.
SyntaxTrainer` (progress bars, seeds, checkpoints / ``resume`` from the ``transformers.Trainer``) and evaluates
on the held-out / dev questions. Behind ``syntaxformer train --task squad2|race``.

Data (defaults need ``../shared/data``, found by :func:`syntaxformer.defaults.shared_data_dir`):

* ``squad2``: ``squad2/dev-v2.0-half.json`` split **by article** (:func:`~syntaxformer.tasks.squad.
  split_by_article`, ``held_out_fraction`` / ``split_seed``): the train articles are the training set, the
  held-out articles the evaluation set. ``train_file`` / ``dev_file`` give explicit SQuAD json files instead
  (``train_file`` alone is split by article too); ``dataset`` (e.g. ``rajpurkar/squad_v2``) loads the hub
  ``train`` / ``validation`` splits.
* ``race``: training questions read straight from ``race/RACE_train.tar.gz`` (a seeded subset of passages,
  ``max_train_samples`` questions), evaluation on every question of ``race/dev/{middle,high}``;
  ``train_file`` / ``dev_file`` may be a tarball or a split folder; ``dataset`` (``ehovy/race``, config
  ``dataset_config`` = ``all``) loads the hub ``train`` / ``validation`` splits.

Files in ``output_dir``:

* ``qa_experiment.json``: the resolved config; ``metrics.json``: scores, sizes, runtimes (written last, so its
  presence means the run finished);
* SQuAD: ``predictions.json`` (``qid -> answer`` for every evaluation question at the headline
  ``best_f1_threshold`` threshold; scored on the test-part questions it gives the headline numbers),
  ``best_texts.json`` (best non-null span per question) and ``na_probs.json`` (``qid -> no-answer score``; with
  these two files, restricted to the test part, the official ``evaluate-v2.0.py --na-prob-file`` prints the
  ``official_best_*`` numbers), ``per_question.json`` (per question: its ``part``, tuning or test; EM / F1 and
  prediction at the fixed and at the headline threshold; question length);
* RACE: ``predictions.json`` (``qid -> {prediction, gold, level, probs}``);
* the model and tokenizer (``save_model``), ``checkpoint-*`` folders when ``save_strategy`` saves them.

The no-answer threshold (SQuAD). The evaluation articles are split **by article** (``threshold_tuning_fraction``,
default 0.5, ``threshold_split_seed``; :func:`threshold_split`) into a *tuning* part and a *test* part;
``metrics["threshold_protocol"]`` names the articles and counts the questions of each. Every reported score is on
the **test part**:

* ``best_f1_threshold`` (the headline) / ``best_exact_threshold``: at the threshold with the best F1 / EM on the
  **tuning** part, applied to the test part (an honest held-out choice);
* ``fixed_threshold``: at ``null_threshold`` (0 by default: "no answer" when the null score beats the best span;
  untuned);
* ``same_set_best_f1_threshold``: at the best-F1 threshold of the test part itself (what the official script's
  ``best_f1`` does; optimistic by the tuning), with the official script's own ``official_best_f1`` /
  ``official_best_exact`` (these can be unreachable when no-answer scores tie; see
  :mod:`syntaxformer.tasks.squad_metric`).

Thresholds come from the reachable sweep, so applying ``na_score > threshold`` → no answer reproduces each
reported EM / F1 exactly. ``threshold_tuning_fraction=0`` is the old protocol: thresholds tuned on the scored
questions (then ``best_f1_threshold`` equals ``same_set_best_f1_threshold``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from syntaxformer.errors import SyntaxformerError
from syntaxformer.training.config import RunConfig
from syntaxformer.training.run import environment as _environment
from syntaxformer.training.run import load_tokenizer as _load_tokenizer
from syntaxformer.training.run import resume_checkpoint as _resume_checkpoint
from syntaxformer.utils import write_json as _write_json

_say = __import__("logging").getLogger(__name__).info  # TODO(H4): log directly

__all__ = ["QAExperimentConfig", "QA_TASKS", "run_qa", "run_squad", "run_race", "evaluate_qa", "load_qa_config",
           "squad_data", "race_data", "question_words", "length_bucket", "LENGTH_BUCKETS", "QA_CONFIG_FILE"]

#: The tasks handled here (everything else goes to :func:`syntaxformer.training.run_experiment`).
QA_TASKS: tuple[str, ...] = ("squad2", "race")
QA_CONFIG_FILE = "qa_experiment.json"
METRICS_FILE = "metrics.json"
#: Question-length buckets in words (SG-Net TPAMI Fig. 4 groups questions by length).
LENGTH_BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 5), (6, 10), (11, 15), (16, 20), (21, None))


@dataclass
class QAExperimentConfig:
    """One reading-comprehension run (SQuAD 2.0 or RACE). Field names follow
    :class:`~syntaxformer.training.config.ExperimentConfig` where they mean the same.

    Data:
        task: ``squad2`` or ``race``.
        data_dir: the task's folder (default ``<shared data>/squad2`` or ``<shared data>/race``).
        train_file, dev_file: explicit sources (SQuAD json; RACE tarball or split folder).
        dataset, dataset_config: a hub data set (``rajpurkar/squad_v2``; ``ehovy/race`` with ``all``); network.
        max_train_samples, max_eval_samples: seeded subsets (``data_seed``) of training / evaluation questions
            (RACE training from the tarball: whole passages in a seeded order until that many questions).
        data_seed: seed of the subsets (default 0, independent of ``seed`` so all seeds see the same data).
        held_out_fraction, split_seed: SQuAD article split of a single file (held-out = evaluation part).
    Features:
        max_length: tokens per window / option sequence incl. special tokens (paper: 384).
        doc_stride: SQuAD: passage tokens shared by consecutive windows, i.e. the **overlap** between windows (as
            ``doc_stride`` in Hugging Face's ``run_qa``; BERT's original ``doc_stride`` is the step between window
            starts instead).
        question_first: SQuAD: ``[CLS] question [SEP] passage [SEP]`` instead of SG-Net's passage-first order.
        parser, criterion, parse_cache: spaCy pipeline, subword criterion, parse cache (as in ExperimentConfig).
    Model:
        model_name_or_path (default: offline MiniLM), use_sg_layer (false = baseline), alpha, alpha_mode,
        sg_init, aggregation, pooling (RACE head), model_kwargs (other :class:`SGNetConfig` options).
    SQuAD decoding / verifier:
        verifier: ``none``, ``joint`` (the [CLS] answerability classifier trained with the span head on one
            encoder) or ``parallel`` (a second model trained only as verifier, paper §3.4.1; twice the training).
        verifier_loss_weight: weight of the verifier's cross-entropy (joint).
        beta1, beta2: Eq. 14 weights of ``score_diff`` and ``score_ext``.
        n_best, max_answer_length: span decoding; null_threshold: the fixed no-answer threshold δ.
        threshold_tuning_fraction, threshold_split_seed: the evaluation articles are split by article
            (:func:`~syntaxformer.tasks.squad.split_by_article` with ``threshold_split_seed``) into a *tuning*
            part (about this share of the articles) where the best-F1 / best-EM no-answer thresholds are chosen,
            and a *test* part where they are applied and everything is scored (default 0.5). 0 = the old
            protocol: threshold chosen on the scored questions themselves (optimistic).
    Optimisation / output: as in ExperimentConfig (``resume``, ``save_strategy`` give resumable checkpoints).
    """

    task: str = "squad2"
    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    dataset: str | None = None
    dataset_config: str | None = None
    max_train_samples: int | None = None
    max_eval_samples: int | None = None
    data_seed: int | None = 0
    held_out_fraction: float = 0.25
    split_seed: int = 0
    max_length: int = 384
    doc_stride: int = 128
    question_first: bool = False
    parser: str = "en_core_web_sm"
    criterion: str = "share"
    parse_cache: bool | str = True
    model_name_or_path: str | None = None
    use_sg_layer: bool = True
    alpha: float = 0.5
    alpha_mode: str = "fixed"
    sg_init: str = "random"
    aggregation: str = "dual"
    pooling: str = "cls"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    verifier: str = "none"
    verifier_loss_weight: float = 1.0
    beta1: float = 1.0
    beta2: float = 1.0
    n_best: int = 20
    max_answer_length: int = 30
    null_threshold: float = 0.0
    threshold_tuning_fraction: float = 0.5
    threshold_split_seed: int = 0
    learning_rate: float = 3e-5
    new_params_lr: float | None = None
    num_train_epochs: float = 2.0
    max_steps: int = -1
    per_device_train_batch_size: int = 16
    per_device_eval_batch_size: int = 32
    gradient_accumulation_steps: int = 1
    weight_decay: float = 0.01
    warmup_steps: float = 0.1
    lr_scheduler_type: str = "linear"
    max_grad_norm: float = 1.0
    seed: int = 42
    group_by_length: bool = True
    mixed_precision: str = "auto"
    save_strategy: str = "no"
    save_steps: int | None = None
    save_total_limit: int | None = 1
    logging_steps: int = 50
    dataloader_num_workers: int = 0
    disable_tqdm: bool | None = None
    training_args: dict[str, Any] = field(default_factory=dict)
    output_dir: str = "runs/qa"
    overwrite_output_dir: bool = False
    resume: bool | str = False
    save_model: bool = True

    # Fixed for these runs (read by the shared TrainingArguments builder): one evaluation at the end.
    eval_strategy = "no"
    eval_steps = None

    def __post_init__(self) -> None:
        if isinstance(self.model_kwargs, dict) and self.model_kwargs.get("pos_embeddings"):
            raise SyntaxformerError("model_kwargs.pos_embeddings (BERT+POS) is supported by the classification "
                                    "models only; the SQuAD / RACE features carry no pos_ids")
        self.validate()

    def validate(self) -> None:
        """Check the values; raises :class:`SyntaxformerError` naming the bad option."""
        choices = {"task": QA_TASKS, "verifier": ("none", "joint", "parallel"), "criterion": ("share", "children"),
                   "alpha_mode": ("fixed", "learned"), "sg_init": ("random", "copy_last"), "pooling": ("cls", "mean"),
                   "mixed_precision": ("auto", "no", "bf16", "fp16"), "save_strategy": ("no", "steps", "epoch")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SyntaxformerError(f"{name}={getattr(self, name)!r} is not valid; choose one of {allowed}")
        if self.verifier != "none" and self.task != "squad2":
            raise SyntaxformerError(f"verifier={self.verifier!r} is a SQuAD 2.0 option (task={self.task!r})")
        if not 0.0 <= float(self.held_out_fraction) < 1.0:
            raise SyntaxformerError(f"held_out_fraction={self.held_out_fraction} must lie in [0, 1)")
        if not 0.0 <= float(self.threshold_tuning_fraction) < 1.0:
            raise SyntaxformerError(f"threshold_tuning_fraction={self.threshold_tuning_fraction} must lie in [0, 1) "
                                    "(0 = tune the no-answer threshold on the scored questions themselves)")
        if int(self.max_length) < 16:
            raise SyntaxformerError(f"max_length={self.max_length} is too small (at least 16)")
        if self.task == "squad2" and not 0 <= int(self.doc_stride) < int(self.max_length):
            raise SyntaxformerError(f"doc_stride={self.doc_stride} (tokens shared by consecutive windows) must be "
                                    f">= 0 and below max_length={self.max_length}")
        for name in ("max_train_samples", "max_eval_samples"):
            v = getattr(self, name)
            if v is not None and int(v) < 1:
                raise SyntaxformerError(f"{name}={v} must be a positive number of questions (or null for all)")

    # the same derivations as the classification config (they read only seed / data_seed / model_name_or_path)
    resolved_data_seed = RunConfig.resolved_data_seed
    resolved_model = RunConfig.resolved_model

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "QAExperimentConfig":
        """Build from a dict; unknown keys are an error naming them."""
        from syntaxformer.training.config import _coerce

        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SyntaxformerError(f"option(s) {unknown} do not apply to reading comprehension (squad2 / race); "
                                    f"known options: {sorted(known)}")
        return cls(**{k: _coerce(cls, k, v) for k, v in data.items()})

    def replace(self, **changes: Any) -> "QAExperimentConfig":
        return self.from_dict({**self.to_dict(), **changes})

    def save(self, path: str | os.PathLike) -> None:
        _write_json(path, self.to_dict())


def load_qa_config(model_dir: str | os.PathLike, overrides: Mapping[str, Any] | None = None) -> QAExperimentConfig:
    """The config saved with a trained reading-comprehension model, with changes; the model is ``model_dir``."""
    path = Path(model_dir) / QA_CONFIG_FILE
    if not path.is_file():
        raise SyntaxformerError(f"{model_dir} holds no {QA_CONFIG_FILE}; it was not trained by `syntaxformer train "
                                "--task squad2|race`")
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(overrides or {})
    data["model_name_or_path"] = str(model_dir)
    return QAExperimentConfig.from_dict(data)


# ----------------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------------
def _task_dir(config: QAExperimentConfig) -> Path:
    if config.data_dir:
        return Path(config.data_dir)
    from syntaxformer.defaults import shared_data_dir

    root = shared_data_dir()
    if root is None:
        raise SyntaxformerError(f"no data for {config.task}: ../shared/data was not found (set SYNTAXFORMER_DATA, "
                                "or give data_dir / train_file / dev_file / dataset)")
    return root / config.task


def _subset(items: list, n: int | None, seed: int) -> tuple[list, str | None]:
    """A seeded random subset of ``n`` items in their original order, and a note saying so."""
    if n is None or n >= len(items):
        return items, None
    keep = np.sort(np.random.default_rng(seed).choice(len(items), size=int(n), replace=False))
    return [items[i] for i in keep], f"random subset of {n} of {len(items)} questions (seed {seed})"


def squad_data(config: QAExperimentConfig) -> dict[str, Any]:
    """``{"train", "eval": list[SquadExample], "source": {...}}`` as the config says (see the module doc)."""
    from syntaxformer.tasks.squad import load_squad_hub, read_squad, split_by_article

    seed = config.resolved_data_seed
    if config.dataset:
        train = load_squad_hub(config.dataset, "train")
        held = load_squad_hub(config.dataset, "validation")
        source = {"train": f"hub:{config.dataset}/train", "eval": f"hub:{config.dataset}/validation"}
    else:
        train_file = Path(config.train_file) if config.train_file else _task_dir(config) / "dev-v2.0-half.json"
        for f in (train_file, Path(config.dev_file) if config.dev_file else None):
            if f is not None and not f.is_file():
                raise SyntaxformerError(f"SQuAD file {f} not found")
        examples = read_squad(train_file)
        if config.dev_file:
            train, held = examples, read_squad(config.dev_file)
            source = {"train": str(train_file), "eval": str(config.dev_file)}
        else:
            if config.held_out_fraction <= 0:
                raise SyntaxformerError("held_out_fraction must be > 0 when no dev_file is given (the held-out "
                                        "articles are the evaluation set)")
            train, held = split_by_article(examples, config.held_out_fraction, seed=config.split_seed)
            source = {"train": f"{train_file} (train articles)", "eval": f"{train_file} (held-out articles)",
                      "split": f"by article: {len({e.title for e in held})} of {len({e.title for e in examples})} "
                               f"articles held out (held_out_fraction {config.held_out_fraction}, split_seed "
                               f"{config.split_seed})",
                      "held_out_titles": sorted({e.title for e in held})}
    for name, part in (("train", train), ("evaluation", held)):
        if not part:
            raise SyntaxformerError(f"the SQuAD {name} part is empty ({source})")
    n_train, n_eval = len(train), len(held)
    train, train_note = _subset(train, config.max_train_samples, seed)
    held, eval_note = _subset(held, config.max_eval_samples, seed)
    tuning_qids, protocol = threshold_split(held, config.threshold_tuning_fraction, config.threshold_split_seed)
    return {"train": train, "eval": held, "source": source, "totals": {"train": n_train, "eval": n_eval},
            "subsample": {"train": train_note, "eval": eval_note}, "tuning_qids": tuning_qids,
            "threshold_protocol": protocol}


def threshold_split(examples: Sequence[Any], fraction: float, seed: int = 0) -> tuple[list[str], dict[str, Any]]:
    """The evaluation questions whose articles tune the no-answer threshold, and a description of the split.

    The articles of ``examples`` are split with :func:`~syntaxformer.tasks.squad.split_by_article`
    (``held_out_fraction = 1 - fraction``, ``seed``): the held-out share is the *test* part (at least one
    article), the rest the *tuning* part (about ``fraction`` of the articles, at least one). ``fraction = 0``:
    no split, the threshold is tuned on the scored questions themselves (``tuning_qids == []``).

    Returns:
        ``(tuning_qids, protocol)``; ``protocol`` names the articles of each part and counts their questions.
    """
    from syntaxformer.tasks.squad import split_by_article, squad_counts

    fraction = float(fraction)
    if fraction <= 0:
        return [], {"threshold_tuning_fraction": 0.0, "tuned_on": "the scored (test) questions themselves",
                    "test_articles": sorted({e.title for e in examples}), "test_questions": len(examples),
                    "test_counts": squad_counts(examples),
                    "note": "threshold_tuning_fraction=0: best_f1_threshold is tuned on the questions it scores "
                            "(as the official script's best_f1), so it is optimistic."}
    titles = sorted({e.title for e in examples})
    if len(titles) < 2:
        raise SyntaxformerError(f"threshold_tuning_fraction={fraction} splits the evaluation articles into a tuning "
                                f"and a test part, but the evaluation questions come from {len(titles)} article(s); "
                                "use more evaluation questions / articles or threshold_tuning_fraction=0 (tune on "
                                "the scored questions themselves)")
    tuning, test = split_by_article(examples, 1.0 - fraction, seed=int(seed))
    return [e.qid for e in tuning], {
        "threshold_tuning_fraction": fraction, "threshold_split_seed": int(seed),
        "tuned_on": "the tuning part (other articles than the scored test part)",
        "tuning_articles": sorted({e.title for e in tuning}), "test_articles": sorted({e.title for e in test}),
        "tuning_questions": len(tuning), "test_questions": len(test),
        "tuning_counts": squad_counts(tuning), "test_counts": squad_counts(test),
        "note": "The evaluation (held-out) articles are split by article: no-answer thresholds are chosen on the "
                "tuning part and applied to the test part; fixed_threshold, best_f1_threshold and "
                "best_exact_threshold score the test part only. same_set_best_f1_threshold tunes on the test part "
                "itself (optimistic; as the official script's best_f1). per_question.json marks each question's "
                "part."}


def _read_race_source(path: Path, max_questions: int | None, seed: int) -> tuple[list, str | None]:
    from syntaxformer.tasks.race import read_race_dir, read_race_tarball

    if path.is_dir():
        examples = read_race_dir(path)
        return _subset(examples, max_questions, seed)
    if path.is_file():
        examples = read_race_tarball(path, max_questions=max_questions, seed=seed)
        note = None if max_questions is None else \
            f"passages of {path.name} in a seeded order (seed {seed}) until {max_questions} questions"
        return examples, note
    raise SyntaxformerError(f"RACE data {path} not found (a split folder with middle/ and high/, or a tarball)")


def race_data(config: QAExperimentConfig) -> dict[str, Any]:
    """``{"train", "eval": list[RaceExample], "source": {...}}`` as the config says (see the module doc)."""
    from syntaxformer.tasks.race import load_race_hub

    seed = config.resolved_data_seed
    if config.dataset:
        cfg = config.dataset_config or "all"
        train, train_note = _subset(load_race_hub(config.dataset, cfg, "train"), config.max_train_samples, seed)
        held, eval_note = _subset(load_race_hub(config.dataset, cfg, "validation"), config.max_eval_samples, seed)
        source = {"train": f"hub:{config.dataset}/{cfg}/train", "eval": f"hub:{config.dataset}/{cfg}/validation"}
    else:
        train_path = Path(config.train_file) if config.train_file else _task_dir(config) / "RACE_train.tar.gz"
        dev_path = Path(config.dev_file) if config.dev_file else _task_dir(config) / "dev"
        train, train_note = _read_race_source(train_path, config.max_train_samples, seed)
        held, eval_note = _read_race_source(dev_path, config.max_eval_samples, seed)
        source = {"train": str(train_path), "eval": str(dev_path)}
    return {"train": train, "eval": held, "source": source, "subsample": {"train": train_note, "eval": eval_note}}


def question_words(question: str) -> int:
    """Question length in words (whitespace tokens), the unit of the length buckets."""
    return len(question.split())


def length_bucket(n_words: int, buckets: Sequence[tuple[int, int | None]] = LENGTH_BUCKETS) -> str:
    """``"1-5"``, ``"6-10"`` ... ``">20"``: the bucket of a question of ``n_words`` words."""
    for lo, hi in buckets:
        if n_words >= lo and (hi is None or n_words <= hi):
            return f">{lo - 1}" if hi is None else f"{lo}-{hi}"
    return f"<{buckets[0][0]}"


# ----------------------------------------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------------------------------------
class _ListDataset:
    """A list of pre-computed per-item dicts (``torch.utils.data.Dataset`` protocol)."""

    def __init__(self, items: list[dict[str, Any]]):
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return self.items[i]


#: Token and label arrays of a SQuAD window; the syntax arrays are the model config's ``syntax_inputs``.
_QA_KEYS = ("input_ids", "attention_mask", "token_type_ids", "start_positions", "end_positions", "is_impossible")
_IGNORE_OUTPUTS = ["span_loss", "verifier_loss", "hidden_states", "attentions", "sg_attentions"]


def _annotator(config: QAExperimentConfig) -> Any:
    from syntaxformer.data.annotators import make_annotator

    return make_annotator(config.parser, cache=config.parse_cache, progress=not config.disable_tqdm)


def _model_options(config: QAExperimentConfig) -> dict[str, Any]:
    return {"use_sg_layer": bool(config.use_sg_layer), "alpha": float(config.alpha),
            "alpha_mode": config.alpha_mode, "sg_init": config.sg_init, "aggregation": config.aggregation,
            "pooling": config.pooling, **config.model_kwargs}


def _build_model(model_cls: Any, config: QAExperimentConfig, **options: Any) -> Any:
    """The head around the pretrained encoder, or a model saved by a previous run (loaded as it is)."""
    path = config.resolved_model()
    if (Path(path) / QA_CONFIG_FILE).is_file() or _is_syntax_model(path):
        return model_cls.from_pretrained(path)
    try:
        return model_cls.from_encoder_pretrained(path, **{**_model_options(config), **options})
    except OSError as e:
        raise SyntaxformerError(f"cannot load the encoder {path!r}: {e}") from e


def _is_syntax_model(path: str) -> bool:
    cfg = Path(path) / "config.json"
    try:
        return cfg.is_file() and json.loads(cfg.read_text(encoding="utf-8")).get("model_type") == "syntaxformer"
    except (OSError, ValueError):
        return False


def _trainer(config: QAExperimentConfig, model: Any, tokenizer: Any, output_dir: str, collate: Any,
             train_ds: Any, label_names: list[str], **overrides: Any) -> Any:
    from syntaxformer.training.run import training_arguments as _training_arguments
    from syntaxformer.training.trainer import SyntaxTrainer

    args = _training_arguments(config, output_dir, label_names=label_names, **overrides)  # type: ignore[arg-type]
    return SyntaxTrainer(model=model, args=args, data_collator=collate, train_dataset=train_ds,
                         processing_class=tokenizer, new_params_lr=config.new_params_lr)


def _train(config: QAExperimentConfig, trainer: Any, output_dir: str) -> dict[str, Any]:
    resume_from = _resume_checkpoint(config, output_dir)  # type: ignore[arg-type]
    t0 = time.time()
    result = trainer.train(resume_from_checkpoint=resume_from)
    return {"loss": result.training_loss, "global_step": trainer.state.global_step, "epochs": trainer.state.epoch,
            "runtime_s": round(time.time() - t0, 2), "resumed_from": resume_from}


def _prepare_output(config: QAExperimentConfig) -> str:
    output_dir = os.path.abspath(config.output_dir)
    if (Path(output_dir) / METRICS_FILE).is_file() and not (config.overwrite_output_dir or config.resume):
        raise SyntaxformerError(f"{output_dir} already holds a finished run (metrics.json); use "
                                "--overwrite-output-dir to run again there")
    os.makedirs(output_dir, exist_ok=True)
    config.save(Path(output_dir) / QA_CONFIG_FILE)
    return output_dir


def run_qa(config: QAExperimentConfig) -> dict[str, Any]:
    """Train and evaluate by ``config.task`` (:func:`run_squad` or :func:`run_race`); returns ``metrics.json``."""
    return run_squad(config) if config.task == "squad2" else run_race(config)


# -- SQuAD 2.0 ---------------------------------------------------------------------------------------------
def _qa_syntax_inputs(config: QAExperimentConfig, **options: Any) -> tuple[str, ...]:
    """The syntax arrays the QA model of a run reads (its config's ``syntax_inputs``)."""
    from transformers import AutoConfig

    from syntaxformer.modeling import SGNetConfig

    path = config.resolved_model()
    try:
        loaded = AutoConfig.from_pretrained(path)
    except OSError as e:
        raise SyntaxformerError(f"cannot load the config of the model {path!r}: {e}") from e
    if isinstance(loaded, SGNetConfig):
        return loaded.syntax_inputs
    return SGNetConfig(encoder=loaded, **{**_model_options(config), **options}).syntax_inputs


def _squad_items(features: Sequence[Any], criterion: str, syntax_inputs: Sequence[str]) -> list[dict[str, np.ndarray]]:
    from syntaxformer.tasks.squad import feature_arrays

    keys = (*_QA_KEYS, *syntax_inputs)
    out = []
    for f in features:
        arrays = feature_arrays(f, criterion)
        out.append({k: arrays[k] for k in keys if k in arrays})
    return out


def _squad_features(config: QAExperimentConfig, tokenizer: Any, examples: list, annotator: Any) -> list:
    from syntaxformer.tasks.squad import SquadFeaturizer

    featurizer = SquadFeaturizer(tokenizer, annotator, max_length=config.max_length, stride=config.doc_stride,
                                 question_first=config.question_first)
    try:
        return featurizer(examples)
    except ValueError as e:  # window room (max_length - question - specials) too small for the stride
        raise SyntaxformerError(f"SQuAD windows: {e} (max_length={config.max_length}, doc_stride="
                                f"{config.doc_stride}); raise max_length or lower doc_stride") from e


def _train_squad_model(config: QAExperimentConfig, tokenizer: Any, train_ds: Any, output_dir: str,
                       pad: int, **options: Any) -> tuple[Any, Any, dict[str, Any]]:
    import transformers

    from syntaxformer.data.collate import pad_arrays
    from syntaxformer.modeling import SGNetForQuestionAnswering

    transformers.set_seed(int(config.seed))
    model = _build_model(SGNetForQuestionAnswering, config, **options)
    model.train()
    trainer = _trainer(config, model, tokenizer, output_dir, lambda items: pad_arrays(items, pad), train_ds,
                       ["start_positions", "end_positions"])
    return model, trainer, _train(config, trainer, output_dir)


def _squad_logits(trainer: Any, ds: Any) -> tuple[Any, Any, Any]:
    out = trainer.predict(ds, ignore_keys=_IGNORE_OUTPUTS, metric_key_prefix="eval")
    preds = out.predictions if isinstance(out.predictions, tuple) else (out.predictions,)
    return preds[0], preds[1], (preds[2] if len(preds) > 2 else None)


def squad_scores(examples: Sequence[Any], best_texts: Mapping[str, str], na_scores: Mapping[str, float],
                 null_threshold: float = 0.0, tuning_qids: Sequence[str] | None = None) -> dict[str, Any]:
    """SQuAD 2.0 metrics at the fixed threshold and at no-answer thresholds tuned on the tuning questions.

    The questions in ``tuning_qids`` only choose thresholds; all other questions (the *test* part) are scored.
    With no ``tuning_qids`` the thresholds are tuned on the scored questions themselves (the official script's
    optimistic ``best_f1`` protocol). Thresholds come from the reachable sweep
    (:func:`~syntaxformer.tasks.squad_metric.find_reachable_best_threshold`): applying ``na > t`` → no answer
    reproduces the scores reported for them exactly. "Answer nobody" is written as a threshold below every
    evaluation question's score, so it answers nobody on the test part too.

    Returns:
        ``{"fixed_threshold", "best_f1_threshold", "best_exact_threshold", "same_set_best_f1_threshold",
        "per_question"}``. Each metric dict holds EM / F1 overall, HasAns, NoAns of the test part (percent) at its
        ``threshold``:

        * ``fixed_threshold``: at ``null_threshold`` (untuned); also the sweeps on the test part itself:
          ``best_exact`` / ``best_f1`` and ``_thresh`` (reachable) and ``official_best_*`` (the official script's
          numbers, possibly unreachable on tied scores, ``_thresh`` 0.0 for "answer nobody").
        * ``best_f1_threshold`` (headline) / ``best_exact_threshold``: at the threshold with the best F1 / EM on
          the tuning part (``tuning_f1`` / ``tuning_exact`` there, ``tuning_questions``, ``tuned_on``).
        * ``same_set_best_f1_threshold``: at the best-F1 threshold of the test part itself (optimistic), with the
          official script's ``official_best_f1`` / ``official_best_exact`` (and ``_thresh``) on the test part.

        ``per_question``: ``qid -> {part ("tuning" / "test"), question_words, has_answer, best_text, na_score,
        prediction_/em_/f1_fixed, prediction_/em_/f1_best}`` (``_best``: at ``best_f1_threshold``'s threshold).
    """
    from syntaxformer.tasks.squad import gold_answers
    from syntaxformer.tasks.squad_metric import (
        answer_nobody_threshold,
        apply_no_answer_threshold,
        find_reachable_best_threshold,
        normalize_answer,
        raw_scores,
        squad_evaluate,
    )

    gold = gold_answers(examples)
    probs = {q: float(na_scores.get(q, 0.0)) for q in gold}
    tune_set = set(tuning_qids or ()) & set(gold)
    same_set = not tune_set
    test_q = list(gold) if same_set else [q for q in gold if q not in tune_set]
    tune_q = test_q if same_set else [q for q in gold if q in tune_set]
    if not test_q:
        raise SyntaxformerError("every evaluation question is a threshold-tuning question: no test part is left")
    has = {q: any(a for a in answers) for q, answers in gold.items()}
    scored = {q: [a for a in answers if normalize_answer(a)] or [""] for q, answers in gold.items()}
    em, f1 = raw_scores(scored, best_texts)
    nobody = answer_nobody_threshold(probs.values())  # below every evaluation question: nobody answered anywhere
    sweep_keys = ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh", "reachable_best_exact",
                  "reachable_best_exact_thresh", "reachable_best_f1", "reachable_best_f1_thresh")

    def tuned(per_q: Mapping[str, float], qids: list[str]) -> tuple[float, float]:
        best, t = find_reachable_best_threshold({q: per_q[q] for q in qids}, probs, has)
        if not any(probs[q] <= t for q in qids):
            t = nobody
        return best, t

    def at(qids: list[str], t: float) -> tuple[dict[str, Any], dict[str, Any]]:
        r = squad_evaluate({q: gold[q] for q in qids}, best_texts, {q: probs[q] for q in qids}, na_prob_thresh=t)
        out = {k: v for k, v in r.items() if k not in sweep_keys}
        out["threshold"] = t
        return out, r

    fixed, sweeps = at(test_q, null_threshold)
    same_f1, same_t = tuned(f1, test_q)
    same_em, same_em_t = tuned(em, test_q)
    official = {f"official_{k}": sweeps[k] for k in ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh")}
    fixed.update({"best_exact": same_em, "best_exact_thresh": same_em_t, "best_f1": same_f1, "best_f1_thresh": same_t,
                  **official})
    tuned_on = ("the same (test) questions" if same_set else "the tuning part") + f" ({len(tune_q)} questions)"
    tune_f1, t_f1 = tuned(f1, tune_q)
    tune_em, t_em = tuned(em, tune_q)
    best_f1, _ = at(test_q, t_f1)
    best_f1.update({"tuned_on": tuned_on, "tuning_questions": len(tune_q), "tuning_f1": tune_f1,
                    "tuning_exact": 100.0 * sum(apply_no_answer_threshold({q: em[q] for q in tune_q}, probs, has,
                                                                          t_f1).values()) / len(tune_q)})
    best_em, _ = at(test_q, t_em)
    best_em.update({"tuned_on": tuned_on, "tuning_questions": len(tune_q), "tuning_exact": tune_em})
    same, _ = at(test_q, same_t)
    same.update({"tuned_on": f"the scored (test) questions themselves ({len(test_q)} questions; optimistic)",
                 **official})

    per_q: dict[str, dict[str, Any]] = {}
    at_t = {name: (apply_no_answer_threshold(em, probs, has, t), apply_no_answer_threshold(f1, probs, has, t))
            for name, t in (("fixed", null_threshold), ("best", t_f1))}
    test_set = set(test_q)
    for e in examples:
        q = e.qid
        text = best_texts.get(q, "")
        per_q[q] = {"part": "test" if q in test_set else "tuning", "question_words": question_words(e.question),
                    "has_answer": has[q], "best_text": text, "na_score": probs[q],
                    "prediction_fixed": "" if probs[q] > null_threshold else text,
                    "prediction_best": "" if probs[q] > t_f1 else text,
                    "em_fixed": int(at_t["fixed"][0][q]), "f1_fixed": float(at_t["fixed"][1][q]),
                    "em_best": int(at_t["best"][0][q]), "f1_best": float(at_t["best"][1][q])}
    return {"fixed_threshold": fixed, "best_f1_threshold": best_f1, "best_exact_threshold": best_em,
            "same_set_best_f1_threshold": same, "per_question": per_q}


def _finite(d: Mapping[str, float]) -> dict[str, float]:
    """JSON-safe no-answer scores (a question with no valid span has score +inf: written as 1e30)."""
    return {k: (float(v) if math.isfinite(v) else math.copysign(1e30, v)) for k, v in d.items()}


def run_squad(config: QAExperimentConfig) -> dict[str, Any]:
    """Fine-tune and evaluate span QA on SQuAD 2.0 (see the module doc for data and files).

    Returns:
        the content of ``metrics.json``.
    """
    from syntaxformer.tasks.squad import postprocess_predictions, squad_counts

    t0 = time.time()
    output_dir = _prepare_output(config)
    tokenizer = _load_tokenizer(config.resolved_model())
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    t_data = time.time()
    data = squad_data(config)
    annotator = _annotator(config)
    train_feats = _squad_features(config, tokenizer, data["train"], annotator)
    eval_feats = _squad_features(config, tokenizer, data["eval"], annotator)
    syntax_inputs = _qa_syntax_inputs(config)
    train_ds = _ListDataset(_squad_items(train_feats, config.criterion, syntax_inputs))
    eval_ds = _ListDataset(_squad_items(eval_feats, config.criterion, syntax_inputs))
    data_s = time.time() - t_data
    _say(f"SQuAD 2.0: {len(data['train'])} train questions ({len(train_feats)} windows), {len(data['eval'])} "
         f"evaluation questions ({len(eval_feats)} windows); {data['source'].get('split', '')}")

    verifier_opts = {"qa_verifier": True, "verifier_loss_weight": float(config.verifier_loss_weight),
                     "verifier_beta1": float(config.beta1), "verifier_beta2": float(config.beta2)}
    main_opts = verifier_opts if config.verifier == "joint" else {}
    model, trainer, train_info = _train_squad_model(config, tokenizer, train_ds, output_dir, pad, **main_opts)
    t_eval = time.time()
    start, end, ver = _squad_logits(trainer, eval_ds)
    if config.save_model:
        trainer.save_model(output_dir)
    verifier_info = None
    if config.verifier == "parallel":  # a second model trained only to tell answerable from unanswerable
        vdir = str(Path(output_dir) / "verifier")
        _, vtrainer, verifier_info = _train_squad_model(config, tokenizer, train_ds, vdir, pad, span_loss_weight=0.0,
                                                        **verifier_opts)
        _, _, ver = _squad_logits(vtrainer, eval_ds)
        if config.save_model:
            vtrainer.save_model(vdir)
    result = postprocess_predictions(data["eval"], eval_feats, start, end, ver, n_best=config.n_best,
                                     max_answer_length=config.max_answer_length, beta1=config.beta1,
                                     beta2=config.beta2, null_threshold=config.null_threshold)
    scores = squad_scores(data["eval"], result.best_texts, result.na_scores, config.null_threshold,
                          tuning_qids=data["tuning_qids"])
    eval_s = time.time() - t_eval

    per_q = scores.pop("per_question")
    out = Path(output_dir)
    _write_json(out / "predictions.json", {q: r["prediction_best"] for q, r in per_q.items()})
    _write_json(out / "best_texts.json", result.best_texts)
    _write_json(out / "na_probs.json", _finite(result.na_scores))
    _write_json(out / "per_question.json", _finite_per_q(per_q))
    from syntaxformer.training.run import model_label, system_kind

    metrics = {
        "task": "squad2", "model": config.resolved_model(), "model_label": model_label(config.resolved_model()),
        "model_type": system_kind("sgnet", model) + (f" + verifier ({config.verifier})" if config.verifier != "none" else ""),
        "seed": config.seed, "data_seed": config.resolved_data_seed, "data": data["source"],
        "sizes": {"train_questions": len(data["train"]), "train_windows": len(train_feats),
                  "train_questions_total": data["totals"]["train"], "eval_questions": len(data["eval"]),
                  "eval_windows": len(eval_feats), "eval_questions_total": data["totals"]["eval"]},
        "counts": {"train": squad_counts(data["train"]), "eval": squad_counts(data["eval"])},
        "threshold_protocol": data["threshold_protocol"],
        "subsample": data["subsample"], "max_length": config.max_length, "doc_stride": config.doc_stride,
        "question_first": config.question_first, "verifier": config.verifier,
        "beta": [config.beta1, config.beta2], "parser": getattr(annotator, "source", config.parser),
        "learning_rate": config.learning_rate, "new_params_lr": config.new_params_lr,
        "num_train_epochs": config.num_train_epochs, "batch_size": config.per_device_train_batch_size,
        **scores,
        "threshold_note": _threshold_note(config.threshold_tuning_fraction),
        "train": train_info, "verifier_train": verifier_info, "data_prep_s": round(data_s, 2),
        "eval_s": round(eval_s, 2), "runtime_s": round(time.time() - t0, 2), "environment": _environment(),
    }
    _write_json(out / METRICS_FILE, metrics)
    b, same = scores["best_f1_threshold"], scores["same_set_best_f1_threshold"]
    _say(f"{metrics['model_type']} SQuAD 2.0 test part ({b['total']} questions): EM {b['exact']:.2f} F1 "
         f"{b['f1']:.2f} at the threshold {b['threshold']:.3f} tuned on {b['tuned_on']} (fixed threshold: EM "
         f"{scores['fixed_threshold']['exact']:.2f} F1 {scores['fixed_threshold']['f1']:.2f}; tuned on the test "
         f"part itself: F1 {same['f1']:.2f}); {out / METRICS_FILE}")
    return metrics


def _threshold_note(fraction: float) -> str:
    if fraction > 0:
        return ("All SQuAD scores are on the TEST part of the evaluation articles (threshold_protocol). "
                "best_f1_threshold (headline) / best_exact_threshold: the no-answer threshold with the best F1 / EM "
                "on the TUNING part (other articles), applied to the test part. fixed_threshold: the untuned "
                "null_threshold. same_set_best_f1_threshold and fixed_threshold.best_* / official_best_*: "
                "thresholds tuned on the test part itself (optimistic; official_best_* are the official script's "
                "numbers, which can be unreachable when no-answer scores tie).")
    return ("threshold_tuning_fraction=0: best_f1_threshold / best_exact_threshold are tuned on the same evaluation "
            "questions they score (as the official script's best_f1; optimistic). fixed_threshold: untuned. "
            "official_best_*: the official script's sweep (can be unreachable when no-answer scores tie).")


def _finite_per_q(per_q: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {q: {**r, "na_score": r["na_score"] if math.isfinite(r["na_score"]) else 1e30} for q, r in per_q.items()}


# -- RACE --------------------------------------------------------------------------------------------------
def _race_items(features: Sequence[Any], criterion: str) -> list[dict[str, Any]]:
    from syntaxformer.tasks.race import feature_arrays

    return [feature_arrays(f, criterion) for f in features]


def run_race(config: QAExperimentConfig) -> dict[str, Any]:
    """Fine-tune and evaluate multiple choice on RACE (accuracy on RACE-M, RACE-H and all of the dev set)."""
    import transformers

    from syntaxformer.modeling import SGNetForMultipleChoice
    from syntaxformer.tasks.race import RaceFeaturizer, race_accuracy, race_collate, race_counts

    t0 = time.time()
    output_dir = _prepare_output(config)
    tokenizer = _load_tokenizer(config.resolved_model())
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    t_data = time.time()
    data = race_data(config)
    featurizer = RaceFeaturizer(tokenizer, _annotator(config), max_length=config.max_length)
    train_feats = featurizer(data["train"])
    eval_feats = featurizer(data["eval"])
    train_ds = _ListDataset(_race_items(train_feats, config.criterion))
    eval_ds = _ListDataset(_race_items(eval_feats, config.criterion))
    data_s = time.time() - t_data
    truncated = {"train": sum(f.truncated for f in train_feats), "eval": sum(f.truncated for f in eval_feats)}
    _say(f"RACE: {len(train_feats)} train / {len(eval_feats)} dev questions; passage cut to fit max_length "
         f"{config.max_length} in {truncated['train']} / {truncated['eval']} of them")

    transformers.set_seed(int(config.seed))
    model = _build_model(SGNetForMultipleChoice, config)
    model.train()
    trainer = _trainer(config, model, tokenizer, output_dir, lambda items: race_collate(items, pad), train_ds,
                       ["labels"], train_sampling_strategy="random")
    train_info = _train(config, trainer, output_dir)
    t_eval = time.time()
    out = trainer.predict(eval_ds, ignore_keys=["hidden_states", "attentions", "sg_attentions"],
                          metric_key_prefix="eval")
    logits = np.asarray(out.predictions[0] if isinstance(out.predictions, tuple) else out.predictions)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    pred = logits.argmax(-1)
    acc = race_accuracy(data["eval"], pred.tolist())
    eval_s = time.time() - t_eval
    if config.save_model:
        trainer.save_model(output_dir)
    letters = "ABCDEFGHIJ"
    _write_json(Path(output_dir) / "predictions.json", {
        e.qid: {"prediction": letters[int(p)], "gold": e.answer, "level": e.level,
                "correct": bool(int(p) == e.label), "question_words": question_words(e.question),
                "probs": [round(float(x), 5) for x in pr]}
        for e, p, pr in zip(data["eval"], pred, probs)})
    from syntaxformer.training.run import model_label, system_kind

    metrics = {
        "task": "race", "model": config.resolved_model(), "model_label": model_label(config.resolved_model()),
        "model_type": system_kind("sgnet", model), "seed": config.seed, "data_seed": config.resolved_data_seed,
        "data": data["source"], "subsample": data["subsample"],
        "counts": {"train": race_counts(data["train"]), "eval": race_counts(data["eval"])},
        "max_length": config.max_length, "passage_truncated": truncated,
        "learning_rate": config.learning_rate, "new_params_lr": config.new_params_lr,
        "num_train_epochs": config.num_train_epochs, "batch_size": config.per_device_train_batch_size,
        "accuracy": acc, "eval_loss": (out.metrics or {}).get("eval_loss"),
        "train": train_info, "data_prep_s": round(data_s, 2), "eval_s": round(eval_s, 2),
        "runtime_s": round(time.time() - t0, 2), "environment": _environment(),
    }
    _write_json(Path(output_dir) / METRICS_FILE, metrics)
    _say(f"{metrics['model_type']} RACE dev accuracy: middle {acc['middle']:.2f} high {acc['high']:.2f} all "
         f"{acc['all']:.2f} ({Path(output_dir) / METRICS_FILE})")
    return metrics


# -- evaluate a saved model ----------------------------------------------------------------------------------
def evaluate_qa(model_dir: str | os.PathLike, overrides: Mapping[str, Any] | None = None,
                output_dir: str | None = None) -> dict[str, Any]:
    """Score a model saved by :func:`run_qa` on its evaluation questions (or ``dev_file`` etc. in
    ``overrides``); writes ``eval_dev.json`` to ``output_dir`` (default: the model folder). SQuAD scores follow
    the same threshold protocol as training (``threshold_tuning_fraction``; see the module doc). For a
    ``verifier="parallel"`` run the verifier model saved in ``<model_dir>/verifier`` is loaded and applied as in
    training (an error if that folder is missing)."""
    config = load_qa_config(model_dir, {**(overrides or {}), "num_train_epochs": 0.0})
    verifier_dir = Path(model_dir) / "verifier"
    if config.task == "squad2" and config.verifier == "parallel" and not (verifier_dir / "config.json").is_file():
        raise SyntaxformerError(f"{model_dir} was trained with verifier='parallel' but holds no saved verifier "
                                f"model ({verifier_dir}/config.json); without it the no-answer scores, and so the "
                                "scores, would differ from the run's metrics.json")
    t0 = time.time()
    tokenizer = _load_tokenizer(str(model_dir))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out_dir = os.path.abspath(output_dir or str(model_dir))
    annotator = _annotator(config)
    if config.task == "squad2":
        from syntaxformer.data.collate import pad_arrays
        from syntaxformer.modeling import SGNetForQuestionAnswering
        from syntaxformer.tasks.squad import postprocess_predictions

        data = squad_data(config)
        examples = data["eval"]
        feats = _squad_features(config, tokenizer, examples, annotator)
        model = SGNetForQuestionAnswering.from_pretrained(str(model_dir))
        trainer = _trainer(config, model, tokenizer, out_dir, lambda items: pad_arrays(items, pad), None,
                           ["start_positions", "end_positions"], save_strategy="no")
        eval_ds = _ListDataset(_squad_items(feats, config.criterion, model.config.syntax_inputs))
        start, end, ver = _squad_logits(trainer, eval_ds)
        if config.verifier == "parallel":  # the second, verifier-only model gives the verifier logits
            vmodel = SGNetForQuestionAnswering.from_pretrained(str(verifier_dir))
            vtrainer = _trainer(config, vmodel, tokenizer, out_dir, lambda items: pad_arrays(items, pad), None,
                                ["start_positions", "end_positions"], save_strategy="no")
            _, _, ver = _squad_logits(vtrainer, eval_ds)
        res = postprocess_predictions(examples, feats, start, end, ver, n_best=config.n_best,
                                      max_answer_length=config.max_answer_length, beta1=config.beta1,
                                      beta2=config.beta2, null_threshold=config.null_threshold)
        scores = squad_scores(examples, res.best_texts, res.na_scores, config.null_threshold,
                              tuning_qids=data["tuning_qids"])
        scores.pop("per_question")
        result = {"task": "squad2", "model": str(model_dir), "size": len(examples),
                  "threshold_protocol": data["threshold_protocol"], **scores,
                  "threshold_note": _threshold_note(config.threshold_tuning_fraction)}
    else:
        from syntaxformer.modeling import SGNetForMultipleChoice
        from syntaxformer.tasks.race import RaceFeaturizer, race_accuracy, race_collate

        examples = race_data(config)["eval"]
        feats = RaceFeaturizer(tokenizer, annotator, max_length=config.max_length)(examples)
        model = SGNetForMultipleChoice.from_pretrained(str(model_dir))
        trainer = _trainer(config, model, tokenizer, out_dir, lambda items: race_collate(items, pad), None,
                           ["labels"], save_strategy="no", train_sampling_strategy="random")
        out = trainer.predict(_ListDataset(_race_items(feats, config.criterion)),
                              ignore_keys=["hidden_states", "attentions", "sg_attentions"])
        logits = np.asarray(out.predictions[0] if isinstance(out.predictions, tuple) else out.predictions)
        result = {"task": "race", "model": str(model_dir), "size": len(examples),
                  "accuracy": race_accuracy(examples, logits.argmax(-1).tolist())}
    result["runtime_s"] = round(time.time() - t0, 2)
    _write_json(Path(out_dir) / "eval_dev.json", result)
    return result
