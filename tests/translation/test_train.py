"""End to end on real Multi30k pairs: train a tiny model a few steps, resume exactly, translate, BLEU; the CLI."""

from __future__ import annotations

import json

import pytest
import torch

from syntaxformer.cli import main
from syntaxformer.translation.evaluate import (
    corpus_bleu,
    load_translation_model,
    paired_bootstrap_bleu,
    translate,
)
from syntaxformer.translation.train import TranslationConfig, train_translation

pytestmark = pytest.mark.slow


def _files(tmp_path, m30k_small):
    train, valid = m30k_small
    paths = {}
    for name, corpus in (("train", train), ("valid", valid)):
        for side, lines in (("en", corpus.sources), ("de", corpus.targets)):
            p = tmp_path / f"{name}.{side}"
            p.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
            paths[f"{name}_{side}"] = str(p)
    return paths


def _config(tmp_path, paths, out, **options) -> TranslationConfig:
    base = dict(output_dir=str(tmp_path / out), train_source=paths["train_en"], train_target=paths["train_de"],
                valid_source=paths["valid_en"], valid_target=paths["valid_de"],
                eval_sets={"val20": [paths["valid_en"], paths["valid_de"]]}, preset="tiny", feature_dim=8,
                source_vocab_size=300, target_vocab_size=300, max_steps=6, batch_size=16, eval_every=3,
                warmup_steps=2, learning_rate=3e-3, eval_batch_size=8, num_beams=5, show_progress=False)
    base.update(options)
    return TranslationConfig(**base)


def test_train_translate_bleu_and_exact_resume(tmp_path, m30k_small, annotator):
    paths = _files(tmp_path, m30k_small)
    m = train_translation(_config(tmp_path, paths, "full", arm="both"), annotator=annotator)
    assert m["sizes"]["train"] == 60 and m["features"] == ["upos", "case", "subword"] and m["use_sg_layer"]
    assert [h["step"] for h in m["history"]] == [3, 6] and m["best_step"] in (3, 6)
    assert m["history"][-1]["train_loss"] < 5.8  # ln(300) = 5.7: it learns, label smoothing included
    ev = m["eval"]["val20"]
    assert ev["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a") and 0.0 <= ev["bleu"] <= 100.0
    hyps = (tmp_path / "full" / "hyp.val20.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(hyps) == 20 and corpus_bleu(hyps, m30k_small[1].targets)["bleu"] == pytest.approx(ev["bleu"])

    # the saved model translates the same way through the public API
    tm = load_translation_model(tmp_path / "full", annotator=annotator)
    assert translate(tm, m30k_small[1].sources, batch_size=8, show_progress=False) == hyps
    assert translate(tm, ["", "A dog runs."], show_progress=False)[0] == ""

    # interrupted after 3 steps, then resumed to 6: the same weights as the straight run
    half = _config(tmp_path, paths, "resumed", arm="both", max_steps=3, eval_sets={})
    train_translation(half, annotator=annotator)
    (tmp_path / "resumed" / "metrics.json").unlink()
    train_translation(_config(tmp_path, paths, "resumed", arm="both", eval_sets={}), annotator=annotator)
    a = torch.load(tmp_path / "full" / "checkpoint" / "last.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "resumed" / "checkpoint" / "last.pt", weights_only=False)["model"]
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)

    # paired bootstrap against a second system on the same sentences
    t = paired_bootstrap_bleu(hyps, m30k_small[1].targets, m30k_small[1].targets, n_resamples=200)
    assert t["bleu_b"] == pytest.approx(100.0) and t["difference"] > 0 and t["p_value"] < 0.05


def test_train_translate_cli_and_train_route(tmp_path, m30k_small, annotator, monkeypatch, capsys):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    paths = _files(tmp_path, m30k_small)
    # the `syntaxformer train --task translation` route: the train command's parsed flags
    cfg = tmp_path / "tr.json"
    cfg.write_text(json.dumps(_config(tmp_path, paths, "x", arm="syntax", max_steps=3).to_dict()), encoding="utf-8")
    assert main(["train", "--task", "translation", "--config", str(cfg), "--set", "eval_sets={}",
                 "--output-dir", str(tmp_path / "cli_model"), "--max-steps", "2", "--seed", "3",
                 "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["arm"] == "syntax" and summary["output_dir"] == str(tmp_path / "cli_model")
    saved = json.loads((tmp_path / "cli_model" / "translation.json").read_text())
    assert saved["max_steps"] == 2 and saved["seed"] == 3 and saved["eval_sets"] == {}

    # `syntaxformer translate`: file in (plain text and .sgm), file out, BLEU with the signature
    out = tmp_path / "hyp.de"
    assert main(["translate", str(tmp_path / "cli_model"), "--input", paths["valid_en"], "--output", str(out),
                 "--reference", paths["valid_de"], "--batch-size", "7", "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == 20 and "tok:13a" in result["signature"]
    assert len(out.read_text(encoding="utf-8").split("\n")) == 21
    sgm = tmp_path / "in.sgm"
    sgm.write_text('<srcset>\n<doc docid="d1">\n<seg id="1">A man rides a bike.</seg>\n'
                   '<seg id="2">Two dogs play.</seg>\n</doc>\n</srcset>\n', encoding="utf-8")
    assert main(["translate", str(tmp_path / "cli_model"), "--input", str(sgm), "--output", str(out),
                 "--no-progress"]) == 0
    assert len(out.read_text(encoding="utf-8").split("\n")) == 3
    assert main(["translate", str(tmp_path), "--input", str(sgm), "--output", str(out)]) == 1
    assert "config.json" in capsys.readouterr().err

