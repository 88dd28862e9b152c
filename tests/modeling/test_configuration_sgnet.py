"""SGNetConfig: the batch keys it declares (``syntax_inputs``) per option combination, and the shared head options."""

from __future__ import annotations

import pytest
from transformers import AutoConfig, BertConfig

from syntaxformer.data.subword_features import feature_vocab_size
from syntaxformer.modeling import SGNetConfig

SG = ("syntax_tree", "dep_tin", "dep_tout")


def config(**kw) -> SGNetConfig:
    return SGNetConfig(
        encoder=BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37), **kw
    )


@pytest.mark.parametrize(
    "options, expected",
    [
        (dict(), SG),
        (dict(use_sg_layer=False), ("syntax_tree",)),  # the default mean pooling marks the special tokens
        (dict(use_sg_layer=False, pooling="cls"), ()),
        (dict(pooling="cls"), SG),
        (dict(use_sg_layer=False, pooling="mean"), ("syntax_tree",)),
        (dict(pooling="mean"), SG),
        (dict(aggregation="vanilla_layer", pooling="cls"), ()),  # the extra layer is unmasked
        (dict(aggregation="vanilla_layer", mask_special_in_aggregation=True), ("syntax_tree",)),
        (dict(aggregation="concat"), SG),
        (dict(pos_embeddings="upos"), SG + ("pos_ids",)),
        (dict(use_sg_layer=False, pooling="cls", pos_embeddings="xpos"), ("pos_ids",)),
        (dict(use_sg_layer=False, pooling="cls", mask_special_in_aggregation=True), ()),  # no layer, nothing to mask
    ],
)
def test_config_sgnet_syntax_inputs(options, expected):
    assert config(**options).syntax_inputs == expected


def test_config_sgnet_pos_vocab_size_and_head_options_round_trip(tmp_path):
    c = config(pos_embeddings="xpos", qa_verifier=True, verifier_loss_weight=0.5, verifier_beta2=2)
    assert c.pos_vocab_size == feature_vocab_size("xpos") and config().pos_vocab_size is None
    assert (c.qa_verifier, c.verifier_loss_weight, c.span_loss_weight, c.verifier_beta1, c.verifier_beta2) == (
        True,
        0.5,
        1.0,
        1.0,
        2.0,
    )
    assert c.classifier_dropout == c.sg_dropout == 0.1 and c.initializer_range == 0.02
    c.save_pretrained(tmp_path)
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(loaded, SGNetConfig) and loaded.model_type == "sgnet"
    assert loaded.syntax_inputs == c.syntax_inputs and loaded.pos_vocab_size == c.pos_vocab_size
    assert loaded.verifier_beta2 == 2.0


@pytest.mark.parametrize(
    "bad", [dict(pooling="max"), dict(classifier_dropout=1.0), dict(span_loss_weight=-1.0), dict(qa_verifier="yes")]
)
def test_config_sgnet_rejects_bad_head_options(bad):
    with pytest.raises(Exception) as err:
        config(**bad)
    assert next(iter(bad)) in str(err.value)


def test_config_sgnet_saved_under_its_older_model_type_is_read_as_sgnet():
    """A config saved as ``"syntaxformer"`` (SG-Net's model type before the rename) read by the class itself is an
    SG-Net config; the alias comes from the system's registry entry, the one place that declares it."""
    from syntaxformer.registry import system

    assert SGNetConfig.older_model_types == dict.fromkeys(system("sgnet").aliases, "sgnet")
    old = {**config().to_dict(), "model_type": "syntaxformer"}
    loaded = SGNetConfig.from_dict(old)
    assert loaded.model_type == "sgnet" and loaded.to_dict()["model_type"] == "sgnet"
    assert SGNetConfig.from_dict({**old, "model_type": "syntax_bert"}).model_type == "syntax_bert"  # not an alias
