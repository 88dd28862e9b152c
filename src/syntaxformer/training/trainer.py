"""Hugging Face ``Trainer`` integration: a separate learning rate for new parameters, the LISA loss log, precision.

The engine is ``transformers.Trainer`` itself (progress bars, checkpoints, resume, DDP/FSDP/DeepSpeed, mixed
precision and logging come from it); this module only adds what SG-Net and Syntax-BERT fine-tuning need on top:
the new parameters' learning rate, and the LISA loss of Syntax-BERT logged beside the total loss.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedModel, Trainer, TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback


__all__ = ["SyntaxTrainer", "encoder_parameter_prefix", "new_parameter_names", "precision_flags",
           "StderrLogCallback"]


def encoder_parameter_prefix(model: nn.Module) -> str | None:
    """Name prefix (``"sgnet.encoder."``, ``"syntax_bert.encoder."``) of the wrapped pretrained encoder's
    parameters, or ``None``.

    The encoder is the outermost sub-module that is a ``PreTrainedModel`` of another model type than the
    wrapper (for SG-Net, the ``AutoModel`` inside ``SGNetModel``; for Syntax-BERT the one inside
    ``SyntaxBertModel``).
    """
    own_type = getattr(getattr(model, "config", None), "model_type", None)
    for name, module in model.named_modules():
        if not name or not isinstance(module, PreTrainedModel):
            continue
        if getattr(module.config, "model_type", None) != own_type:
            return name + "."
    return None


def new_parameter_names(model: nn.Module) -> set[str]:
    """Names of the trainable parameters that are not part of the pretrained encoder.

    SG-Net: the syntax-guided layer, aggregation, pooler and classifier. Syntax-BERT: the topical-attention task
    queries (``syntax_bert.topical.query``), pooler and classifier. Syntax-BERT's LISA head has no parameters of
    its own: it is a pretrained head of the encoder, trained through the LISA loss at the encoder's rate.
    """
    prefix = encoder_parameter_prefix(model)
    return {n for n, p in model.named_parameters() if p.requires_grad and (prefix is None or not n.startswith(prefix))}


class SyntaxTrainer(Trainer):
    """``Trainer`` whose optimizer gives the new (non-encoder) parameters their own learning rate.

    Args:
        new_params_lr: learning rate of the parameters outside the pretrained encoder (the syntax-guided layer,
            aggregation, pooler and classifier); ``None`` = ``args.learning_rate`` for everything (plain Trainer).
        *args, **kwargs: as for ``transformers.Trainer``.

    Four parameter groups are built (encoder / new x weight decay / none), with the Trainer's own rule for which
    parameters get weight decay (not biases and norms). The scheduler scales every group's rate by the same
    factor, so warm-up and decay apply to both rates.

    Models whose output has a ``lisa_loss`` (Syntax-BERT with a LISA head): its mean over the batches since the
    last log is logged as ``lisa_loss`` next to the Trainer's ``loss`` (which is the total: task loss +
    ``lisa_loss_weight * lisa_loss``), and as ``eval_lisa_loss`` with the evaluation metrics.

    The syntax models return per-batch mean losses, so the Trainer is told not to pass ``num_items_in_batch`` to
    them (their ``**kwargs`` would otherwise make it skip the division by the gradient-accumulation steps).
    """

    def __init__(self, *args: Any, new_params_lr: float | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.new_params_lr = new_params_lr
        self.model_accepts_loss_kwargs = False
        self._lisa_sums = {"train": [0.0, 0], "eval": [0.0, 0]}
        # Loss / metric logs go to stderr, so that stdout carries only a command's result (e.g. JSON).
        self.remove_callback(PrinterCallback)
        if self.pop_callback(ProgressCallback) is not None:
            self.add_callback(_BarsOnlyCallback)
        self.add_callback(StderrLogCallback)

    def create_optimizer(self, model: nn.Module | None = None) -> torch.optim.Optimizer:
        opt_model = self.model if model is None else model
        if self.optimizer is None and self.new_params_lr is not None:
            decay = set(self.get_decay_parameter_names(opt_model))
            new = new_parameter_names(opt_model)
            groups: list[dict[str, Any]] = []
            for is_new in (False, True):
                for wd in (True, False):
                    params = [p for n, p in opt_model.named_parameters()
                              if p.requires_grad and (n in new) == is_new and (n in decay) == wd]
                    if not params:
                        continue
                    group: dict[str, Any] = {"params": params, "weight_decay": self.args.weight_decay if wd else 0.0}
                    if is_new:
                        group["lr"] = float(self.new_params_lr)
                    groups.append(group)
            if self.optimizer_cls_and_kwargs is not None:
                optimizer_cls, optimizer_kwargs = self.optimizer_cls_and_kwargs
            else:
                optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
            optimizer_kwargs = {k: v for k, v in optimizer_kwargs.items() if k not in ("params", "model")}
            self.optimizer = optimizer_cls(groups, **optimizer_kwargs)
        return super().create_optimizer(model)


    # -- LISA loss logging ------------------------------------------------------------------------------------
    def compute_loss(self, model: nn.Module, inputs: dict[str, Any], return_outputs: bool = False,
                     num_items_in_batch: Any = None) -> Any:
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        lisa = outputs.get("lisa_loss") if isinstance(outputs, dict) else None
        if lisa is not None:  # kept on the device: no host sync per step
            acc = self._lisa_sums["train" if model.training else "eval"]
            acc[0] = acc[0] + lisa.detach().float().mean()
            acc[1] += 1
        return (loss, outputs) if return_outputs else loss

    def prediction_step(self, model: nn.Module, inputs: dict[str, Any], prediction_loss_only: bool,
                        ignore_keys: list[str] | None = None) -> Any:
        if ignore_keys is None:  # the 0-d LISA loss is not a prediction
            ignore_keys = list(getattr(getattr(self.model, "config", None), "keys_to_ignore_at_inference",
                                       ["past_key_values"]))
            ignore_keys.append("lisa_loss")
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)

    def _take_lisa(self, split: str) -> float | None:
        total, n = self._lisa_sums[split]
        self._lisa_sums[split] = [0.0, 0]
        return float(total) / n if n else None

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if "loss" in logs and self._lisa_sums["train"][1]:
            logs["lisa_loss"] = self._take_lisa("train")
        if "eval_loss" in logs and self._lisa_sums["eval"][1]:
            logs["eval_lisa_loss"] = self._take_lisa("eval")
        super().log(logs, *args, **kwargs)

    def _get_eval_sampler(self, eval_dataset: Any) -> Any:
        """Evaluate and predict in dataset order.

        transformers 5 also length-groups *evaluation* batches when ``train_sampling_strategy`` is
        ``group_by_length`` (a seeded shuffle of megabatches), so ``predict(...).predictions`` would come back
        permuted and could not be written next to the example ids. Metrics were unaffected (labels travel with
        the batches); predictions files were not. One process: sequential order; distributed: the Trainer's own.
        """
        if eval_dataset is not None and self.args.world_size <= 1:
            return torch.utils.data.SequentialSampler(eval_dataset)
        return super()._get_eval_sampler(eval_dataset)

    def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        self._lisa_sums["eval"] = [0.0, 0]
        return super().evaluate(*args, **kwargs)

    def predict(self, test_dataset: Any, ignore_keys: list[str] | None = None,
                metric_key_prefix: str = "test") -> Any:
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


class StderrLogCallback(TrainerCallback):
    """Write the Trainer's logs (loss, learning rate, eval metrics) to stderr, numbers to 4 significant digits."""

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102
        if not state.is_world_process_zero or not logs:
            return
        shown = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in logs.items() if k != "total_flos"}
        from tqdm.auto import tqdm

        tqdm.write(str(shown), file=sys.stderr)


def precision_flags(mode: str) -> dict[str, bool]:
    """``{"bf16": ..., "fp16": ...}`` for ``TrainingArguments``.

    ``"auto"``: bf16 on a CUDA GPU that supports it, else fp16 on a CUDA GPU, else full precision (CPU training
    stays in float32: CPU autocast is slower than float32 for these models and gains nothing).
    ``"bf16"`` / ``"fp16"`` force it (fp16 needs a GPU); ``"no"`` disables it.
    """
    if mode == "no":
        return {"bf16": False, "fp16": False}
    if mode == "bf16":
        return {"bf16": True, "fp16": False}
    if mode == "fp16":
        return {"bf16": False, "fp16": True}
    if torch.cuda.is_available():
        bf16 = bool(torch.cuda.is_bf16_supported())
        return {"bf16": bf16, "fp16": not bf16}
    return {"bf16": False, "fp16": False}
