"""SyntaxTrainer: a separate learning rate for the parameters outside the pretrained encoder."""

from __future__ import annotations

import pytest
from transformers import BertConfig, BertModel, TrainingArguments

from syntaxformer.modeling import SGNetForSequenceClassification
from syntaxformer.training.trainer import SyntaxTrainer, encoder_parameter_prefix, new_parameter_names, precision_flags


def _tiny(use_sg_layer: bool = True) -> SGNetForSequenceClassification:
    enc = BertModel(
        BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    )
    from syntaxformer.modeling import SGNetConfig

    return SGNetForSequenceClassification(
        SGNetConfig(encoder=enc.config, num_labels=2, use_sg_layer=use_sg_layer), encoder=enc
    )


def test_trainer_new_params_get_their_own_learning_rate(tmp_path):
    model = _tiny()
    assert encoder_parameter_prefix(model) == "sgnet.encoder."
    new = new_parameter_names(model)
    assert any(n.startswith("sgnet.sg_layer.") for n in new) and "classifier.weight" in new
    assert not any(n.startswith("sgnet.encoder.") for n in new)
    args = TrainingArguments(
        output_dir=str(tmp_path), learning_rate=2e-5, weight_decay=0.01, report_to="none", use_cpu=True
    )
    trainer = SyntaxTrainer(model=model, args=args, new_params_lr=1e-3)
    decay = set(trainer.get_decay_parameter_names(model))  # the Trainer's own rule: not biases and norms
    opt = trainer.create_optimizer()
    by_id = {id(p): n for n, p in model.named_parameters()}
    seen = set()
    for group in opt.param_groups:
        names = {by_id[id(p)] for p in group["params"]}
        seen |= names
        is_new = {n in new for n in names}
        assert len(is_new) == 1  # groups do not mix encoder and new parameters
        assert group["lr"] == (1e-3 if is_new.pop() else 2e-5)
        assert {n in decay for n in names} == {group["weight_decay"] > 0}
    assert seen == {n for n, p in model.named_parameters() if p.requires_grad}


def test_trainer_without_new_params_lr_is_the_plain_trainer(tmp_path):
    model = _tiny(use_sg_layer=False)
    args = TrainingArguments(output_dir=str(tmp_path), learning_rate=3e-5, report_to="none", use_cpu=True)
    opt = SyntaxTrainer(model=model, args=args).create_optimizer()
    assert {g["lr"] for g in opt.param_groups} == {3e-5} and len(opt.param_groups) == 2


def test_trainer_precision():
    assert precision_flags("no") == {"bf16": False, "fp16": False}
    assert precision_flags("bf16")["bf16"]
    import torch

    if not torch.cuda.is_available():
        assert precision_flags("auto") == {"bf16": False, "fp16": False}
    else:  # pragma: no cover - GPU machines
        assert any(precision_flags("auto").values())


@pytest.mark.parametrize("mode", ["fixed", "learned"])
def test_trainer_alpha_parameter_is_new(mode, tmp_path):
    from syntaxformer.modeling import SGNetConfig

    enc = BertModel(
        BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    )
    model = SGNetForSequenceClassification(SGNetConfig(encoder=enc.config, alpha_mode=mode), encoder=enc)
    learned = [n for n in new_parameter_names(model) if "alpha" in n]
    assert (len(learned) == 1) == (mode == "learned")


def test_trainer_predict_keeps_dataset_order_with_length_grouping(tmp_path):
    """transformers 5 length-groups eval batches too; our predictions must still come back in dataset order."""
    import numpy as np
    import torch

    from syntaxformer.data.collate import pad_arrays

    torch.manual_seed(0)
    model = _tiny(use_sg_layer=False).eval()
    rng = np.random.default_rng(0)
    rows = []
    for n in rng.integers(3, 20, size=40):  # very different lengths: grouping would reorder them
        ids = rng.integers(5, 50, size=int(n))
        rows.append(
            {
                "input_ids": ids,
                "attention_mask": np.ones(int(n), dtype=np.int64),
                "labels": np.asarray(int(rng.integers(0, 2))),
            }
        )

    class _DS(torch.utils.data.Dataset):
        def __len__(self):
            return len(rows)

        def __getitem__(self, i):
            return rows[i]

    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_eval_batch_size=4,
        report_to="none",
        use_cpu=True,
        train_sampling_strategy="group_by_length",
        label_names=["labels"],
        remove_unused_columns=False,
    )
    trainer = SyntaxTrainer(model=model, args=args, data_collator=lambda f: pad_arrays(f))
    out = trainer.predict(_DS())
    with torch.no_grad():
        direct = np.stack([model(**pad_arrays([r])).logits[0].numpy() for r in rows])
    np.testing.assert_allclose(out.predictions, direct, atol=1e-4)
    assert out.label_ids.tolist() == [int(r["labels"]) for r in rows]
