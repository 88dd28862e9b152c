"""What a syntax model's forward accepts: every syntax batch key (named in its signature, so a plain
``transformers.Trainer`` keeps those columns), what ``transformers`` passes, and nothing else."""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest
import torch
from transformers import Trainer, TrainingArguments

from syntaxformer.data.collate import SyntaxCollator, example_arrays
from syntaxformer.errors import InputError
from syntaxformer.modeling import (
    SGNetConfig,
    SGNetForQuestionAnswering,
    SGNetForSequenceClassification,
    SGNetModel,
    SyntaxBertConfig,
    SyntaxBertForMultipleChoice,
    SyntaxBertForSequenceClassification,
    SyntaxBertModel,
)
from syntaxformer.modeling.configuration import SYNTAX_INPUT_KEYS, check_forward_inputs
from tests.masks.reference import random_example
from tests.modeling.test_modeling_sgnet import tiny_bert

MODELS = [
    SGNetModel,
    SGNetForSequenceClassification,
    SGNetForQuestionAnswering,
    SyntaxBertModel,
    SyntaxBertForSequenceClassification,
    SyntaxBertForMultipleChoice,
]


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_inputs_signature_names_every_syntax_key_and_no_var_keyword(cls):
    params = inspect.signature(cls.forward).parameters
    assert set(SYNTAX_INPUT_KEYS) <= set(params)
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    assert cls.accepts_loss_kwargs is False  # per-batch mean losses: the Trainer scales for accumulation itself


def test_inputs_check_names_unknown_keys_and_hints_at_labels():
    model = SGNetForSequenceClassification(SGNetConfig(encoder=tiny_bert(), num_labels=2))
    check_forward_inputs(model, {"dep_depth": 1, "con_key": 2, "num_items_in_batch": 3})  # accepted
    with pytest.raises(InputError, match=r"got unexpected keyword arguments \['sentence'\]; it accepts \['input_ids'"):
        check_forward_inputs(model, {"sentence": ["a"], "dep_tin": 1})
    with pytest.raises(InputError, match="the label key is 'labels'"):
        check_forward_inputs(model, {"label_ids": 1})


def _rows(n: int = 8, seed: int = 0) -> list[dict]:
    """Featurized rows as a user's data set holds them: token + syntax arrays, a ``label`` and a text column."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        arrays = example_arrays(random_example(rng, max_words=6))
        arrays["input_ids"] = nrng.integers(3, 100, size=len(arrays["input_ids"]))
        rows.append({**arrays, "label": i % 2, "sentence": f"sentence {i}"})
    return rows


@pytest.mark.parametrize("system", ["sgnet", "syntax_bert"])
def test_inputs_plain_trainer_keeps_the_syntax_columns_with_default_arguments(system, tmp_path):
    """``Trainer`` with its defaults (``remove_unused_columns=True``) drops the text column, keeps the syntax
    columns, and the collator turns ``label`` into ``labels``: the model gets a loss and trains its syntax parts."""
    torch.manual_seed(0)
    if system == "sgnet":
        model = SGNetForSequenceClassification(SGNetConfig(encoder=tiny_bert(), num_labels=2))
        syntax_part = "sgnet.sg_layer."
    else:
        model = SyntaxBertForSequenceClassification(SyntaxBertConfig(encoder=tiny_bert(), num_labels=2))
        syntax_part = "syntax_bert.topical."
    before = {n: p.detach().clone() for n, p in model.named_parameters() if n.startswith(syntax_part)}
    assert before
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
    )
    assert args.remove_unused_columns  # the default
    seen = []

    def collate(features):
        seen.append(sorted(features[0]))
        return SyntaxCollator()(features)

    trainer = Trainer(model=model, args=args, train_dataset=_rows(), data_collator=collate)
    result = trainer.train()
    assert np.isfinite(result.training_loss)
    assert "sentence" not in seen[0] and "label" in seen[0] and set(seen[0]) >= {"dep_tin", "syntax_tree"}
    assert any(not torch.equal(p, before[n]) for n, p in model.named_parameters() if n in before)


def test_inputs_syntax_bert_accepts_its_keys_and_precomputed_groups_and_rejects_others():
    from tests.modeling.test_modeling_syntax_bert import make_batch

    torch.manual_seed(0)
    model = SyntaxBertForSequenceClassification(SyntaxBertConfig(encoder=tiny_bert(), num_labels=2)).eval()
    batch = make_batch()
    with torch.no_grad():
        reference = model(**batch).logits
        groups = model.syntax_bert.build_groups(batch, torch.device("cpu"), batch["input_ids"])
        precomputed = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            syntax_groups=groups,
            syntax_tree=batch["syntax_tree"],
        ).logits
    assert torch.allclose(precomputed, reference, atol=1e-6)
    with pytest.raises(
        InputError,
        match=r"SyntaxBertForSequenceClassification.forward got unexpected keyword "
        r"arguments \['dep_tinn'\]",
    ):
        model(**batch, dep_tinn=batch["dep_tin"])
    with pytest.raises(InputError, match=r"SyntaxBertModel.forward got unexpected keyword arguments \['labels'\]"):
        model.syntax_bert(**batch, labels=torch.zeros(3, dtype=torch.long))
