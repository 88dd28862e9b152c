"""``syntaxformer diagnose`` / :func:`syntaxformer.analysis.diagnose.diagnose` on real STS-B pairs and MiniLM: a
zero gate keeps the checkpoint exactly; SG-Net's first-token pooling sends no gradient to W_Q / W_K."""

from __future__ import annotations

import json

import pytest

from syntaxformer.analysis.diagnose import diagnose
from syntaxformer.cli import main
from tests.conftest import data_path, minilm_path

pytestmark = pytest.mark.slow


def test_diagnose_cli_gated_syntax_bert_is_the_encoder_at_init(capsys):
    data = data_path("glue", "STS-B")
    assert (
        main(
            [
                "diagnose",
                minilm_path(),
                "--system",
                "syntax_bert",
                "--set",
                "gate=layer",
                "--n",
                "8",
                "--data-dir",
                str(data),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["n_pairs"] == 8 and out["options"] == {"gate": "layer"}
    assert out["token_cosine_to_plain"] == pytest.approx(1.0, abs=1e-4)
    assert out["zero_shot_pearson"] == pytest.approx(out["plain_zero_shot_pearson"], abs=1e-3)
    assert out["syntax_gradients"]["syntax_bert.gate.weight"] > 0
    assert main(["diagnose", "--system", "syntax_bert", "--set", "gate"]) == 1  # one-line error, no traceback
    assert "KEY=VALUE" in capsys.readouterr().err


def test_diagnose_sgnet_cls_pooling_gives_no_query_key_gradient():
    data = data_path("glue", "STS-B")
    cls = diagnose(minilm_path(), "sgnet", {"pooling": "cls"}, n=8, data_dir=data)["syntax_gradients"]
    mean = diagnose(minilm_path(), "sgnet", {}, n=8, data_dir=data)["syntax_gradients"]
    for name in ("sgnet.sg_layer.query.weight", "sgnet.sg_layer.key.weight"):
        assert (
            cls[name] < 1e-6 * cls["sgnet.sg_layer.value.weight"]
            and mean[name] > 1e-3 * mean["sgnet.sg_layer.value.weight"]
        ), (cls, mean)
