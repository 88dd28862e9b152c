"""The Hugging Face spellings of run options (``max_seq_length``, ``validation_file``, ``warmup_ratio``, ``bf16`` ...)
and the options they set, the fields of ``transformers.Seq2SeqTrainingArguments``, and the merging of layers of
options written in either spelling (:func:`merge_options`; which layer wins is
:func:`syntaxformer.training.options.resolve_config`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

from syntaxformer.errors import ConfigError
from syntaxformer.training.values import typed_value

__all__ = ["HF_SPELLINGS", "from_hf_spellings", "merge_options", "training_argument_names"]

#: Hugging Face spellings (``TrainingArguments`` and the ``run_glue.py`` / ``run_qa.py`` example scripts) of run
#: options that this library names otherwise, and the option they set.
HF_SPELLINGS: dict[str, str] = {
    "max_seq_length": "max_length",
    "validation_file": "dev_file",
    "dataset_name": "dataset",
    "dataset_config_name": "dataset_config",
    "text_column_name": "text_column",
    "label_column_name": "label_column",
    "evaluation_strategy": "eval_strategy",
    "resume_from_checkpoint": "resume",
    "warmup_ratio": "warmup_steps",
    "bf16": "mixed_precision",
    "fp16": "mixed_precision",
}
#: The nested sections of a config, merged key by key across the layers.
_SECTIONS = ("model", "task_options", "training_args")


def from_hf_spellings(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the Hugging Face spellings of :data:`HF_SPELLINGS` replaced by the options they set.

    ``warmup_ratio`` (a fraction below 1) becomes ``warmup_steps`` (below 1 it is a fraction); ``bf16: true`` /
    ``fp16: true`` become ``mixed_precision: bf16`` / ``fp16``, and ``false`` (with the other not true) ``no``.

    Raises:
        ConfigError: a spelling given beside the option it sets with another value; ``warmup_ratio`` of 1 or more;
            ``bf16`` and ``fp16`` both true.
    """
    out = {k: v for k, v in data.items() if k not in HF_SPELLINGS}
    if typed_value("bf16", data.get("bf16", False), bool) and typed_value("fp16", data.get("fp16", False), bool):
        raise ConfigError("bf16 and fp16 are both true; choose one (or --mixed-precision auto|no|bf16|fp16)")
    for hf, ours in HF_SPELLINGS.items():
        if hf not in data:
            continue
        value = data[hf]
        if hf in ("bf16", "fp16"):
            other = "fp16" if hf == "bf16" else "bf16"
            if not typed_value(hf, value, bool):
                if typed_value(other, data.get(other, False), bool):
                    continue
                value = "no"
            else:
                value = hf
        elif hf == "warmup_ratio":
            value = typed_value(hf, value, float)
            if not 0 <= value < 1:
                raise ConfigError(
                    f"warmup_ratio={value} is not a fraction below 1; for a number of steps use warmup_steps"
                )
        if ours in out and out[ours] != value:
            raise ConfigError(f"{hf}={data[hf]!r} and {ours}={out[ours]!r} both given; keep one of them")
        out[ours] = value
    return out


@functools.lru_cache(maxsize=1)
def _training_argument_fields() -> tuple[dataclasses.Field, ...]:
    from transformers import Seq2SeqTrainingArguments

    return tuple(f for f in dataclasses.fields(Seq2SeqTrainingArguments) if f.init and not f.name.startswith("_"))


def training_argument_names() -> frozenset[str]:
    """The fields of ``transformers.Seq2SeqTrainingArguments`` (a superset of ``TrainingArguments``)."""
    return frozenset(f.name for f in _training_argument_fields())


def merge_options(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """The layers merged, later ones winning; the nested sections (``model``, ``task_options``, ``training_args``)
    are merged key by key, and each layer's Hugging Face spellings are read first (:func:`from_hf_spellings`), so
    a later layer's ``--bf16`` wins over an earlier ``mixed_precision``."""
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in from_hf_spellings(layer or {}).items():
            if key in _SECTIONS and isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out
