"""``compare``: fine-tune several syntax systems with the same seed and data, each an ordinary ``train`` run in
``<output_dir>/<name>``, and report their dev scores side by side."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from transformers import AutoConfig

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError, DataError
from syntaxformer.tasks.significance import paired_prediction_tests
from syntaxformer.training.config import RunConfig, model_option_names
from syntaxformer.training.run import train
from syntaxformer.training.run_data import run_references
from syntaxformer.utils import write_json

__all__ = ["SYSTEM_PRESETS", "compare", "format_comparison", "paired_tests", "resolve_systems"]


def _default_lisa_layer(config: RunConfig) -> int:
    """``model.lisa_layer``, else the encoder's middle layer (the paper does not say which)."""
    if config.model.get("lisa_layer") is not None:
        return int(config.model["lisa_layer"])
    enc = AutoConfig.from_pretrained(config.resolved_model())
    n: int | None = getattr(enc, "num_hidden_layers", None)
    if not n:
        n = getattr(getattr(enc, "encoder", None), "num_hidden_layers", 2)
    return int(n) // 2


def _system(system: str, **changes: Any) -> Callable[[RunConfig], tuple[str, dict[str, Any]]]:
    def make(config: RunConfig) -> tuple[str, dict[str, Any]]:
        return system, {k: (v(config) if callable(v) else v) for k, v in changes.items()}

    return make


#: The systems ``compare`` knows by name: ``config -> (model_type, model option changes)``; a value ``None``
#: removes the option. The shared ``model`` options that the system's config class has are kept. ``baseline`` is the
#: plain encoder under the same head (system ``plain``); every registered system is also known by its own name.
SYSTEM_PRESETS: dict[str, Callable[[RunConfig], tuple[str, dict[str, Any]]]] = {
    "baseline": _system("plain"),
    "sgnet": _system("sgnet", use_sg_layer=True),
    "syntax_bert": _system("syntax_bert", lisa_layer=None),
    "syntax_bert_lisa": _system("syntax_bert", lisa_layer=_default_lisa_layer),
    "syntax_bert_baseline": _system("syntax_bert", lisa_layer=None, syntax_layers=[], aggregation="mean"),
    "lisa": _system("syntax_bert", lisa_layer=_default_lisa_layer, syntax_layers=[], aggregation="mean"),
}


def resolve_systems(
    config: RunConfig, systems: Sequence[str | tuple[str, dict[str, Any]]] | str | None
) -> list[tuple[str, dict[str, Any]]]:
    """``(name, config changes)`` pairs from system names (:data:`SYSTEM_PRESETS` or registered systems; a list or a
    comma-separated string) and / or explicit ``(name, changes)`` pairs; ``None`` = ``baseline,sgnet``. A preset's
    changes set ``model_type`` and ``model`` (the shared options its config class knows, under the preset's own).
    Raises ConfigError: an unknown or repeated name."""
    if systems is None:
        systems = ["baseline", "sgnet"]
    if isinstance(systems, str):
        systems = [x.strip() for x in systems.split(",") if x.strip()]
    out: list[tuple[str, dict[str, Any]]] = []
    for item in systems:
        if isinstance(item, str):
            if item in SYSTEM_PRESETS:
                system, changes = SYSTEM_PRESETS[item](config)
            elif item in _registry.SYSTEMS:
                system, changes = item, {}
            else:
                known_names = dict.fromkeys([*SYSTEM_PRESETS, *_registry.SYSTEMS.names()])
                raise ConfigError(f"unknown system {item!r}; known systems: {', '.join(known_names)}")
            known = set(model_option_names(system))
            model = {k: v for k, v in config.model.items() if k in known}
            if system == "syntax_bert" and "syntax_layers" not in changes and model.get("syntax_layers") == []:
                model.pop("syntax_layers")  # a system with sub-networks
            for k, v in changes.items():
                if v is None:
                    model.pop(k, None)
                else:
                    model[k] = v
            out.append((item, {"model_type": system, "model": model}))
        else:
            name, changes = item
            out.append((str(name), dict(changes)))
    names = [n for n, _ in out]
    if not out or len(set(names)) != len(names):
        raise ConfigError(f"systems must be distinct names, got {names}")
    return out


def compare(
    config: RunConfig, systems: Sequence[str | tuple[str, dict[str, Any]]] | str | None = None
) -> dict[str, Any]:
    """Fine-tune ``systems`` (:func:`resolve_systems`) with the shared settings of ``config``, each in
    ``<output_dir>/<name>``, and write ``<output_dir>/comparison.json``. Returns ``{"task", "seed", "main_metric",
    "sizes", "subsample", "systems": {name: metrics.json content}, "tests", "table", "runtime_s"}``."""
    t0 = time.time()
    resolved = resolve_systems(config, systems)
    results: dict[str, dict[str, Any]] = {}
    for name, changes in resolved:
        sub = config.replace(output_dir=str(Path(config.output_dir) / name), **changes)
        results[name] = train(sub)
    task = config.build_task()
    first = next(iter(results.values()))
    summary = {
        "task": task.name,
        "seed": config.seed,
        "main_metric": task.main_metric,
        "sizes": first["sizes"],
        "subsample": first["subsample"],
        "systems": results,
        "runtime_s": round(time.time() - t0, 2),
    }
    summary["tests"] = paired_tests(config.output_dir, list(results), task.main_metric)
    summary["table"] = format_comparison(summary)
    os.makedirs(config.output_dir, exist_ok=True)
    write_json(Path(config.output_dir) / "comparison.json", summary)
    return summary


def format_comparison(summary: dict[str, Any]) -> str:
    """The side-by-side text table of a :func:`compare` result."""
    systems = summary["systems"]
    names = list(systems)
    metric_names = list(dict.fromkeys(k for m in systems.values() for k in m["dev"]))
    first = systems[names[0]]
    sizes = first["sizes"]
    lines = [
        f"{first['task_title']}: {first['model_label']} fine-tuned on {sizes['train']} of "
        f"{sizes['train_total']} train examples, scored on {sizes['dev']} of {sizes['dev_total']} dev "
        f"examples; seed {summary['seed']}, {first['num_train_epochs']:g} epoch(s), batch {first['batch_size']}, "
        f"lr {first['learning_rate']:g} (new layers {first['new_params_lr'] or first['learning_rate']:g}), "
        f"max length {first['max_length']}"
        + (f", parser noise {first['parser_noise']:g}" if first["parser_noise"] else "")
    ]
    if first["subsample"]["train"] or first["subsample"]["dev"]:
        lines.append("subsample: " + "; ".join(f"{k}: {v}" for k, v in first["subsample"].items() if v))
    source = first.get("syntax_source")
    if source and any(m.get("model_family") == "syntax_bert" for m in systems.values()):
        lines.append(f"syntax: dependency trees: {source['dependency']}; constituency trees: {source['constituency']}")
    w = max(10, *(len(n) for n in metric_names))
    nw = max(10, *(len(n) for n in names))
    lines.append(f"{'system':<{nw}} " + " ".join(f"{n:>{w}}" for n in metric_names) + f" {'train_s':>9}")
    for name in names:
        m = systems[name]
        vals = " ".join(f"{m['dev'].get(n, math.nan):>{w}.4f}" for n in metric_names)
        lines.append(f"{name:<{nw}} {vals} {m['train']['runtime_s']:>9.1f}")
    if len(names) >= 2:
        a = systems[names[0]]["dev"].get(summary["main_metric"], math.nan)
        for other in names[1:]:
            b = systems[other]["dev"].get(summary["main_metric"], math.nan)
            line = f"difference ({other} - {names[0]}) in {summary['main_metric']}: {b - a:+.4f}"
            tests = summary.get("tests", {}).get(other)
            if tests:
                boot = tests.get("bootstrap") or tests["bleu"]
                lo, hi = boot["details"]["ci95"]
                n = boot["details"]["n_resamples"]
                p = f"< {1 / n:.3f}" if boot["p_value"] < 1 / n else f"= {boot['p_value']:.3f}"
                kind = "paired bootstrap" if "bootstrap" in tests else "sacreBLEU paired bootstrap"
                line += f", 95% CI [{lo:+.4f}, {hi:+.4f}], {kind} p {p} (two-sided, {n} resamples)"
                if "mcnemar" in tests:
                    line += f"; exact McNemar p = {tests['mcnemar']['p_value']:.3f}"
            lines.append(line)
    return "\n".join(lines)


def paired_tests(
    output_dir: str | os.PathLike, names: Sequence[str], metric: str, n_resamples: int = 1000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Each system of a :func:`compare` folder against the first on the same dev examples, by
    :func:`~syntaxformer.tasks.significance.paired_prediction_tests`: name -> ``{"bootstrap": ..., "mcnemar": ...}`` /
    ``{"bleu": ...}`` (systems without ``dev_predictions.json`` left out)."""
    if len(names) < 2:
        return {}
    runs = {}
    for name in names:
        path = Path(output_dir) / name / "dev_predictions.json"
        if path.is_file():
            try:
                runs[name] = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise DataError(f"{path} is not the JSON `syntaxformer train` writes: {e}") from None
    base = runs.get(names[0])
    if base is None:
        return {}
    references = None
    if metric == "bleu":
        references = run_references(Path(output_dir) / names[0], base.get("ids"), base.get("split", "dev"))
    out: dict[str, dict[str, Any]] = {}
    for name in names[1:]:
        other = runs.get(name)
        if other is None or other.get("ids") != base.get("ids"):
            continue
        tests = paired_prediction_tests(base, other, metric, n_resamples, seed, references)
        if tests:
            out[name] = tests
    return out
