"""What the syntax models need on top of ``transformers.Trainer`` (which stays the engine): a separate learning rate
for new parameters, the LISA loss log, exact resumes, precision flags, and the translation model's batches, decoding
and schedule."""

from __future__ import annotations

import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader
from transformers import PreTrainedModel, Seq2SeqTrainer, Trainer, TrainerCallback, get_inverse_sqrt_schedule
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, PredictionOutput, get_last_checkpoint, speed_metrics

from syntaxformer.errors import InputError
from syntaxformer.modeling.raw_text import padded
from syntaxformer.modeling.seq2seq import generate_ids
from syntaxformer.training.batching import LengthGroupedBatchSampler
from syntaxformer.utils import atomic_write, write_json

__all__ = [
    "EPOCH_RNG_FILE",
    "LOSS_FILE",
    "LoggingCallback",
    "SyntaxSeq2SeqTrainer",
    "SyntaxTrainer",
    "encoder_parameter_prefix",
    "gate_parameter_names",
    "new_parameter_names",
    "precision_flags",
]

logger = logging.getLogger(__name__)


def encoder_parameter_prefix(model: nn.Module) -> str | None:
    """Name prefix (``"sgnet.encoder."`` ...) of the wrapped pretrained encoder's parameters (the outermost
    ``PreTrainedModel`` sub-module of another model type than the wrapper), or ``None``."""
    own_type = getattr(getattr(model, "config", None), "model_type", None)
    for name, module in model.named_modules():
        if not name or not isinstance(module, PreTrainedModel):
            continue
        if getattr(module.config, "model_type", None) != own_type:
            return name + "."
    return None


def new_parameter_names(model: nn.Module) -> set[str]:
    """Names of the trainable parameters outside the pretrained encoder (docs/syntax_bert.md for Syntax-BERT's)."""
    prefix = encoder_parameter_prefix(model)
    return {n for n, p in model.named_parameters() if p.requires_grad and (prefix is None or not n.startswith(prefix))}


def gate_parameter_names(model: nn.Module) -> set[str]:
    """Names of Syntax-BERT's zero-initialised gates (``syntax_bert.gate.weight``), trained at ``gate_lr``
    (docs/results.md)."""
    return {
        n
        for n, p in model.named_parameters()
        if p.requires_grad and n.endswith("gate.weight") and n.split(".")[-2] == "gate"
    }


#: Sum of the training losses of steps 1..N, written into each ``checkpoint-N/`` (see :class:`_Resumable`).
LOSS_FILE = "loss_sum.json"
#: The CPU random state at the start of the epoch a checkpoint lies in (see :class:`_Resumable`).
EPOCH_RNG_FILE = "epoch_rng_state.pt"


if TYPE_CHECKING:
    _TrainerBase = Trainer  # what the mixin below is mixed into
else:
    _TrainerBase = object


class _Resumable(_TrainerBase):
    """What a run needs to be resumed as if it had never stopped, on top of the Trainer's checkpoints
    (docs/reliability.md, "3. Resume"): each checkpoint also records the sum of the step losses 1..N
    (:data:`LOSS_FILE`, added back in :attr:`loss_over_all_steps`) and the CPU random state at the start of its epoch
    (:data:`EPOCH_RNG_FILE`, restored before a resumed mid-epoch's data loader draws its length-grouped order)."""

    loss_sum_before: float | None = 0.0
    loss_over_all_steps: float | None = None
    _epoch_start: tuple[int, Any] | None = None
    _resume_epoch_rng: tuple[int, Any] | None = None

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.model_accepts_loss_kwargs = False  # the syntax models return per-batch mean losses
        self._set_callbacks()

    def _set_callbacks(self) -> None:
        """Loss / metric logs through logging (stdout carries only a command's result); the epoch-state hook."""
        self.remove_callback(PrinterCallback)
        if self.pop_callback(ProgressCallback) is not None:
            self.add_callback(_BarsOnlyCallback)
        self.add_callback(LoggingCallback)
        self.add_callback(_EpochStartCallback(self))

    def train(self, resume_from_checkpoint: Any = None, *args: Any, **kwargs: Any) -> Any:
        path = resume_from_checkpoint
        if path is True:
            path = get_last_checkpoint(self.args.output_dir)
        self.loss_sum_before = 0.0 if not path else _read_loss_sum(path)
        self._resume_epoch_rng = None if not path else _read_epoch_rng(path)
        out = super().train(resume_from_checkpoint, *args, **kwargs)
        if self.loss_sum_before is None or not self.state.global_step:
            self.loss_over_all_steps = None if self.state.global_step else out.training_loss
        else:
            # the sum of this process's step losses (as the checkpoints record it); not ``out.training_loss``,
            # whose divisor after a resume changed within transformers 5.x (all steps in older 5.x releases, the resumed ones in newer)
            total = self.loss_sum_before + self._total_loss_scalar
            self.loss_over_all_steps = total / self.state.global_step
        return out

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)
        folder = os.path.join(self._get_output_dir(trial=trial), f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
        if not self.args.should_save or not os.path.isdir(folder):
            return
        if self.loss_sum_before is not None:
            here = self._total_loss_scalar + float(self._tr_loss.item())
            write_json(
                os.path.join(folder, LOSS_FILE),
                {"global_step": self.state.global_step, "loss_sum": self.loss_sum_before + here},
            )
        if self._epoch_start is not None:
            with atomic_write(os.path.join(folder, EPOCH_RNG_FILE), "wb") as f:
                torch.save({"epoch_start_step": self._epoch_start[0], "cpu_rng_state": self._epoch_start[1]}, f)


class _EpochStartCallback(TrainerCallback):
    """Before an epoch's data loader starts: keeps the CPU random state of a :class:`_Resumable` trainer, or restores
    the one a mid-epoch resume read (at an epoch boundary the Trainer restores its own)."""

    def __init__(self, trainer: _Resumable):
        self.trainer = trainer

    def on_epoch_begin(self, args, state, control, **kwargs):  # noqa: D102
        trainer, step = self.trainer, state.global_step
        resumed, trainer._resume_epoch_rng = trainer._resume_epoch_rng, None
        mid_epoch = state.epoch is not None and not float(state.epoch).is_integer()
        if resumed is not None and resumed[0] < step and mid_epoch:  # resumed in the middle of that epoch
            torch.set_rng_state(resumed[1])
            trainer._epoch_start = resumed
        else:
            trainer._epoch_start = (step, torch.get_rng_state())


def _read_loss_sum(checkpoint: str) -> float | None:
    """The loss sum recorded in a checkpoint, or ``None``."""
    try:
        with open(os.path.join(checkpoint, LOSS_FILE), encoding="utf-8") as f:
            return float(json.load(f)["loss_sum"])
    except (OSError, ValueError, KeyError, TypeError):
        logger.info(
            "%s has no readable %s: the reported training loss covers the resumed steps only", checkpoint, LOSS_FILE
        )
        return None


def _read_epoch_rng(checkpoint: str) -> tuple[int, Any] | None:
    """``(step at the start of the checkpoint's epoch, CPU random state then)``, or ``None``."""
    try:
        saved = torch.load(os.path.join(checkpoint, EPOCH_RNG_FILE), weights_only=True)
        return int(saved["epoch_start_step"]), saved["cpu_rng_state"]
    except Exception:  # noqa: BLE001 - absent (an older version's checkpoint) or unreadable: the Trainer's own behaviour
        logger.info(
            "%s has no readable %s: a resume in the middle of an epoch may see another data order",
            checkpoint,
            EPOCH_RNG_FILE,
        )
        return None


class SyntaxTrainer(_Resumable, Trainer):
    """``Trainer`` whose optimizer puts ``new_params_lr`` on the parameters outside the encoder and ``gate_lr`` on
    Syntax-BERT's gates (``None``: as the encoder / the other new parameters); a model output's ``lisa_loss`` is logged
    (mean since the last log) as ``lisa_loss`` / ``eval_lisa_loss``."""

    def __init__(self, *args: Any, new_params_lr: float | None = None, gate_lr: float | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.new_params_lr = new_params_lr
        self.gate_lr = gate_lr
        self._lisa_sums = {"train": [0.0, 0], "eval": [0.0, 0]}

    def create_optimizer(self, model: nn.Module | None = None) -> torch.optim.Optimizer:
        opt_model = self.model if model is None else model
        if opt_model is None:
            raise InputError("create_optimizer needs a model (the Trainer was built without one)")
        gates = gate_parameter_names(opt_model) if self.gate_lr is not None else set()
        if self.optimizer is None and (self.new_params_lr is not None or gates):
            decay = set(self.get_decay_parameter_names(opt_model)) - gates
            new = new_parameter_names(opt_model) - gates
            rates = {"encoder": None, "new": self.new_params_lr, "gate": self.gate_lr}
            kinds = {
                n: "gate" if n in gates else "new" if n in new else "encoder" for n, _ in opt_model.named_parameters()
            }
            groups: list[dict[str, Any]] = []
            for kind, lr in rates.items():
                for wd in (True, False):
                    params = [
                        p
                        for n, p in opt_model.named_parameters()
                        if p.requires_grad and kinds[n] == kind and (n in decay) == wd
                    ]
                    if not params:
                        continue
                    group: dict[str, Any] = {"params": params, "weight_decay": self.args.weight_decay if wd else 0.0}
                    if lr is not None:
                        group["lr"] = float(lr)
                    groups.append(group)
            # transformers annotates the model as a PreTrainedModel; any module works (its own Trainer passes one)
            chosen = self.optimizer_cls_and_kwargs or self.get_optimizer_cls_and_kwargs(self.args, opt_model)  # type: ignore[arg-type]
            optimizer_cls, optimizer_kwargs = chosen
            optimizer_kwargs = {k: v for k, v in optimizer_kwargs.items() if k not in ("params", "model")}
            self.optimizer = optimizer_cls(groups, **optimizer_kwargs)
        return super().create_optimizer(model)

    # -- LISA loss logging ------------------------------------------------------------------------------------
    def compute_loss(
        self, model: nn.Module, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        lisa = outputs.get("lisa_loss") if isinstance(outputs, dict) else None
        if lisa is not None:  # kept on the device: no host sync per step
            acc = self._lisa_sums["train" if model.training else "eval"]
            acc[0] = acc[0] + lisa.detach().float().mean()
            acc[1] += 1
        return (loss, outputs) if return_outputs else loss

    def prediction_step(
        self, model: nn.Module, inputs: dict[str, Any], prediction_loss_only: bool, ignore_keys: list[str] | None = None
    ) -> Any:
        if ignore_keys is None:  # the 0-d LISA loss is not a prediction
            config = getattr(self.model, "config", None)
            ignore_keys = [*getattr(config, "keys_to_ignore_at_inference", ["past_key_values"]), "lisa_loss"]
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)

    def _take_lisa(self, split: str) -> float | None:
        total, n = self._lisa_sums[split]
        self._lisa_sums[split] = [0.0, 0]
        return float(total) / n if n else None

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if "loss" in logs and self._lisa_sums["train"][1] and (lisa := self._take_lisa("train")) is not None:
            logs["lisa_loss"] = lisa
        if "eval_loss" in logs and self._lisa_sums["eval"][1] and (lisa := self._take_lisa("eval")) is not None:
            logs["eval_lisa_loss"] = lisa
        super().log(logs, *args, **kwargs)

    def _get_eval_sampler(self, eval_dataset: Any) -> Any:
        """Evaluate and predict in dataset order (one process): transformers 5 length-groups evaluation batches too."""
        if eval_dataset is not None and self.args.world_size <= 1:
            return torch.utils.data.SequentialSampler(eval_dataset)
        return super()._get_eval_sampler(eval_dataset)

    def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        self._lisa_sums["eval"] = [0.0, 0]
        return super().evaluate(*args, **kwargs)

    def predict(self, test_dataset: Any, ignore_keys: list[str] | None = None, metric_key_prefix: str = "test") -> Any:
        self._lisa_sums["eval"] = [0.0, 0]
        out = super().predict(test_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)
        lisa = self._take_lisa("eval")
        if lisa is not None and out.metrics is not None:
            out.metrics[f"{metric_key_prefix}_lisa_loss"] = lisa
        return out


class _BarsOnlyCallback(ProgressCallback):
    """The Trainer's progress bars (on stderr) without its log lines (which it writes to stdout)."""

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102
        return


class LoggingCallback(TrainerCallback):
    """Log the Trainer's logs at INFO through this module's logger, numbers to 4 significant digits."""

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102
        if not state.is_world_process_zero or not logs:
            return
        shown = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in logs.items() if k != "total_flos"}
        logger.info("%s", shown)


def precision_flags(mode: str) -> dict[str, bool]:
    """``{"bf16": ..., "fp16": ...}`` for ``TrainingArguments``; ``"auto"``: bf16 on a CUDA GPU that supports it,
    else fp16 on a GPU, else float32 (CPU autocast gains nothing)."""
    if mode == "auto" and torch.cuda.is_available():
        mode = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"bf16": mode == "bf16", "fp16": mode == "fp16"}


class SyntaxSeq2SeqTrainer(_Resumable, Seq2SeqTrainer):
    """``Seq2SeqTrainer`` for the syntax-infused translation model: length-grouped training batches
    (:class:`~syntaxformer.training.batching.LengthGroupedBatchSampler`; ``length_bucket``: batches per sorted chunk),
    validation batches sorted by source length, translations by the library's one decoding path (:meth:`predict`),
    and ``lr_scheduler_type="inverse_sqrt"`` read after the update (update ``k`` runs at the schedule's value for step
    ``k + 1``, never at warm-up's 0). Dataset items are dicts with ``input_ids`` (and ``labels``)."""

    def __init__(self, *args: Any, length_bucket: int = 50, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.length_bucket = int(length_bucket)

    # -- batches -----------------------------------------------------------------------------------------------
    def get_train_dataloader(self) -> DataLoader:
        if self.train_dataset is None:
            raise InputError("SyntaxSeq2SeqTrainer.train needs a train_dataset")
        dataset: Any = self.train_dataset  # map-style: indexable, with a length
        lengths = [len(dataset[i]["input_ids"]) + len(dataset[i].get("labels", ())) for i in range(len(dataset))]
        sampler = LengthGroupedBatchSampler(lengths, self._train_batch_size, self.args.seed, self.length_bucket)
        collator = self._get_collator_with_removed_columns(self.data_collator, description="training")
        loader = DataLoader(
            dataset,
            batch_sampler=sampler,
            collate_fn=collator,
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory and torch.cuda.is_available(),
        )
        return self.accelerator.prepare(loader)

    def _get_eval_sampler(self, eval_dataset: Any) -> Any:
        """Items sorted by source length, longest first (one process)."""
        if eval_dataset is None or self.args.world_size > 1:
            return super()._get_eval_sampler(eval_dataset)
        lengths = np.asarray([len(eval_dataset[i]["input_ids"]) for i in range(len(eval_dataset))])
        return np.argsort(-lengths, kind="stable").tolist()

    def predict(
        self,
        test_dataset: Any,
        ignore_keys: list[str] | None = None,
        metric_key_prefix: str = "test",
        **gen_kwargs: Any,
    ) -> Any:
        """The translations of ``test_dataset`` by :func:`~syntaxformer.modeling.seq2seq.generate_ids` (``gen_kwargs``
        ``num_beams`` / ``max_length`` win over ``generation_*``) as ``predictions`` ``[N, T]`` in dataset order; with
        labels also ``label_ids`` and ``<prefix>_loss``. Every process translates the whole set."""
        args: Any = self.args  # Seq2SeqTrainingArguments
        if not args.predict_with_generate:
            return super().predict(test_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)
        start = time.time()
        metrics: dict[str, Any] = {}
        labels = None
        if len(test_dataset) and "labels" in test_dataset[0]:
            loader = self.get_test_dataloader(test_dataset)
            loop = self.evaluation_loop(loader, "Prediction", True, ignore_keys, metric_key_prefix)
            metrics.update(loop.metrics or {})
            labels = padded([item["labels"] for item in test_dataset], -100, np.int64)
        options = {k: gen_kwargs.get(k) or getattr(args, f"generation_{k}") for k in ("num_beams", "max_length")}
        options = {k: v for k, v in options.items() if v is not None}
        with self.accelerator.autocast():  # the mixed precision of the run, as its evaluations
            ids = generate_ids(self.model, test_dataset, args.per_device_eval_batch_size, **options)
        metrics.update(speed_metrics(metric_key_prefix, start, num_samples=len(test_dataset)))
        self.control = self.callback_handler.on_predict(self.args, self.state, self.control, metrics)
        return PredictionOutput(predictions=ids, label_ids=labels, metrics=metrics)

    # -- schedule ----------------------------------------------------------------------------------------------
    def create_scheduler(self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None) -> Any:
        kind = str(getattr(self.args.lr_scheduler_type, "value", self.args.lr_scheduler_type))
        if self.lr_scheduler is None and kind == "inverse_sqrt":
            optimizer = self.optimizer if optimizer is None else optimizer
            if optimizer is None:
                raise InputError("create_scheduler needs the optimizer (create_optimizer runs first)")
            warmup = self.args.get_warmup_steps(num_training_steps)
            schedule = get_inverse_sqrt_schedule(optimizer, num_warmup_steps=warmup).lr_lambdas[0]
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule(step + 1))
            self._created_lr_scheduler = True
            return self.lr_scheduler
        return super().create_scheduler(num_training_steps, optimizer)
