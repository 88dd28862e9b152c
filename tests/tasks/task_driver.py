"""A stand-in for the generic runner (``training/run.py``), for the task tests: exactly the runner's contract.

``get_task(name, **options)`` → ``load_split`` → ``featurize`` → ``collator`` → ``model_class(system, head)`` with
``model_options()`` → Trainer (``label_names``) → ``Trainer.predict`` → ``postprocess(..., auxiliary=...)`` (one
more model per ``auxiliary_models()`` entry) → ``compute_metrics`` / ``run_files``. Test code, not library code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

#: SG-Net's syntax inputs (the SDOI arrays).
SGNET_INPUTS = ("syntax_tree", "dep_tin", "dep_tout")


from syntaxformer.modeling import model_class  # noqa: E402


def run_task(
    task: Any,
    model_dir: str,
    data: Mapping[str, Any],
    output_dir: str,
    *,
    annotator: Any,
    max_length: int,
    max_steps: int = 2,
    batch_size: int = 4,
    seed: int = 42,
    syntax_inputs: tuple[str, ...] = SGNET_INPUTS,
    system: str = "sgnet",
) -> dict[str, Any]:
    """Train ``task`` briefly on its ``train`` split and evaluate on ``dev``; returns what the runner would have."""
    import transformers
    from transformers import AutoTokenizer, TrainingArguments

    from syntaxformer.tasks.base import TaskContext
    from syntaxformer.training.trainer import SyntaxTrainer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    context = TaskContext(
        tokenizer=tokenizer, annotator=annotator, syntax_inputs=syntax_inputs, max_length=max_length, progress=False
    )
    train, dev = task.load_split("train", data), task.load_split("dev", data)
    train_features, dev_features = task.featurize(train, context, "train"), task.featurize(dev, context, "dev")
    defaults = task.training_defaults()
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    sampling = (
        {"train_sampling_strategy": "group_by_length" if defaults.get("group_by_length", True) else "random"}
        if "train_sampling_strategy" in fields
        else {"group_by_length": defaults.get("group_by_length", True)}
    )

    def train_and_predict(options: Mapping[str, Any], folder: str) -> tuple[Any, Any]:
        transformers.set_seed(seed)
        model = model_class(system, task.head).from_encoder_pretrained(model_dir, **options)
        model.train()
        args = TrainingArguments(
            output_dir=folder,
            max_steps=max_steps,
            per_device_train_batch_size=batch_size,
            per_device_eval_batch_size=16,
            learning_rate=1e-3,
            report_to="none",
            seed=seed,
            label_names=task.label_names,
            remove_unused_columns=False,
            save_strategy="no",
            disable_tqdm=True,
            use_cpu=True,
            **sampling,
        )
        trainer = SyntaxTrainer(
            model=model,
            args=args,
            data_collator=task.collator(context),
            train_dataset=train_features,
            processing_class=tokenizer,
        )
        trainer.train()
        ignore = ["span_loss", "verifier_loss", "hidden_states", "attentions", "sg_attentions"]
        return model, trainer.predict(dev_features, ignore_keys=ignore).predictions

    model, raw = train_and_predict(task.model_options(), output_dir)
    auxiliary = {
        name: train_and_predict({**task.model_options(), **options}, f"{output_dir}/{name}")[1]
        for name, options in task.auxiliary_models().items()
    }
    predictions = task.postprocess(dev, dev_features, raw, auxiliary=auxiliary)
    return {
        "model": model,
        "train": train,
        "dev": dev,
        "features": dev_features,
        "raw": raw,
        "auxiliary": auxiliary,
        "predictions": predictions,
        "metrics": task.compute_metrics(dev, predictions),
        "files": task.run_files(dev, predictions),
        "records": task.prediction_records(dev, predictions),
    }
