"""SyntaxBertConfig: the batch keys it declares (``syntax_inputs``) per option combination."""

from __future__ import annotations

import pytest
from transformers import BertConfig

from syntaxformer.errors import ConfigError
from syntaxformer.modeling import SyntaxBertConfig
from syntaxformer.modeling.syntax_attention_core import SyntaxAttentionOptions

BASE = ("syntax_tree", "syntax_segment")
DEP = ("dep_tin", "dep_tout", "dep_depth", "dep_anc_lo", "dep_anc_hi", "dep_anc_head")
CON = ("con_key", "con_depth", "con_anc_lo", "con_anc_hi", "con_anc_head")


def config(**kw) -> SyntaxBertConfig:
    return SyntaxBertConfig(
        encoder=BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37), **kw
    )


@pytest.mark.parametrize(
    "options, expected",
    [
        (dict(), BASE + DEP + CON),
        (dict(use_constituency=False), BASE + DEP),
        (dict(use_dependency=False), BASE + CON),
        (
            dict(lisa_layer=1),
            (
                "syntax_tree",
                "syntax_segment",
                "dep_tin",
                "dep_tout",
                "dep_depth",
                "dep_parent",
                "dep_anc_lo",
                "dep_anc_hi",
                "dep_anc_head",
            )
            + CON,
        ),
        (dict(syntax_layers=[1], use_constituency=False), BASE + DEP),  # groups in some layers
        (dict(syntax_layers=[]), ()),  # no sub-networks, no LISA: the plain encoder
        (dict(syntax_layers=[], lisa_layer=0), ("dep_parent",)),
        (dict(syntax_layers=[], pooling="mean"), ("syntax_tree",)),
        (dict(random_masks=True, use_constituency=False), BASE + DEP),
        (dict(pairwise="sentence", use_constituency=False), ("syntax_tree",) + DEP),  # sentence ids, no text ids
        (dict(self_group=True, special_keys=True), BASE + DEP + CON),
    ],
)
def test_config_syntax_bert_syntax_inputs(options, expected):
    assert config(**options).syntax_inputs == expected


def test_config_syntax_bert_shares_the_head_options():
    c = config(qa_verifier=True, span_loss_weight=0, verifier_beta1=0.5, pooling="mean", classifier_dropout=0.2)
    assert (c.qa_verifier, c.span_loss_weight, c.verifier_beta1, c.pooling, c.classifier_dropout) == (
        True,
        0.0,
        0.5,
        "mean",
        0.2,
    )
    assert config().classifier_dropout == 0.1  # the encoder's hidden dropout
    assert config().model_type == "syntax_bert"


def test_config_topical_projections_default_and_inputs():
    assert config().topical_projections == "shared", "numbers do not change: the shared form stays the default"
    own = config(topical_projections="own")
    assert own.syntax_inputs == config().syntax_inputs == BASE + DEP + CON, "own projections read no new inputs"
    assert SyntaxBertConfig.from_dict(own.to_dict()).topical_projections == "own"


def test_config_lisa_head_mode_default_and_inputs():
    assert config().lisa_head_mode == "existing", "numbers do not change: the existing head stays the default"
    added = config(lisa_layer=1, lisa_head_mode="added")
    assert added.syntax_inputs == config(lisa_layer=1).syntax_inputs, "the added head reads the same dep_parent"
    assert SyntaxBertConfig.from_dict(added.to_dict()).lisa_head_mode == "added"


def test_config_refuses_the_removed_flex_naming_the_choices(tmp_path):
    """``"flex"`` was removed: options and a saved config that name it get a ConfigError listing the choices."""
    with pytest.raises(ConfigError, match=r"'flex' was removed.*'fast', 'exact', 'triton', 'auto'"):
        SyntaxAttentionOptions(implementation="flex")
    config().save_pretrained(tmp_path)
    saved = tmp_path / "config.json"
    saved.write_text(saved.read_text().replace('"implementation": "fast"', '"implementation": "flex"'))
    with pytest.raises(ConfigError, match=r"SyntaxBertConfig.implementation='flex' was removed"):
        SyntaxBertConfig.from_pretrained(tmp_path)
