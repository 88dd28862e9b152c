"""End to end on real Multi30k pairs, the runner's steps for the translation task: tokenizer -> model ->
SyntaxSeq2SeqTrainer -> checkpoint -> exact resume -> predict -> postprocess -> BLEU; the saved folder through
AutoModelForSeq2SeqLM and its tokenizers; the CLI (train route and ``syntaxformer translate``)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainingArguments, set_seed

from syntaxformer.cli import main
from syntaxformer.data.bpe import load_tokenizers
from syntaxformer.inference import Predictor
from syntaxformer.modeling.seq2seq import SyntaxInfusedForConditionalGeneration
from syntaxformer.tasks.base import TaskContext, get_task
from syntaxformer.tasks.metrics import corpus_bleu
from syntaxformer.tasks.significance import paired_bleu_test
from syntaxformer.training.trainer import SyntaxSeq2SeqTrainer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


def _files(tmp_path, m30k_small):
    train, valid = m30k_small
    paths = {}
    for name, corpus in (("train", train), ("valid", valid)):
        for side, lines in (("en", corpus.sources), ("de", corpus.targets)):
            p = tmp_path / f"{name}.{side}"
            p.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
            paths[f"{name}_{side}"] = str(p)
    return paths


def _task_options(paths, **options):
    base = dict(
        train_source=paths["train_en"],
        train_target=paths["train_de"],
        valid_source=paths["valid_en"],
        valid_target=paths["valid_de"],
        eval_sets={"val20": [paths["valid_en"], paths["valid_de"]]},
        preset="tiny",
        feature_dim=8,
        source_vocab_size=300,
        target_vocab_size=300,
    )
    base.update(options)
    return base


def _train(out, paths, annotator, max_steps, resume=False):
    """The runner's steps (training/run.py will make them for every task)."""
    task = get_task("translation", **_task_options(paths, arm="both"))
    context = TaskContext(tokenizer=None, annotator=annotator, progress=False)
    train, valid = task.load_split("train"), task.load_split("dev")
    task.build_tokenizer(train, str(out), context)
    training = {
        **task.training_defaults(),
        "max_steps": max_steps,
        "per_device_train_batch_size": 16,
        "eval_steps": 3,
        "save_steps": 3,
        "logging_steps": 3,
        "warmup_steps": 2,
        "learning_rate": 3e-3,
        "per_device_eval_batch_size": 8,
        "save_total_limit": None,
        "disable_tqdm": True,
        "seed": 1,
    }
    set_seed(training["seed"])
    model = task.build_model(None, {}, context)
    trainer = SyntaxSeq2SeqTrainer(
        model=model,
        args=Seq2SeqTrainingArguments(output_dir=str(out), **training),
        train_dataset=task.featurize(train, context, "train"),
        eval_dataset=task.featurize(valid, context, "dev"),
        data_collator=task.collator(context),
    )
    trainer.train(resume_from_checkpoint=True if resume else None)
    return task, context, trainer


def test_translation_training_checkpoint_resume_predict_bleu_and_reload(tmp_path, m30k_small, annotator):
    paths = _files(tmp_path, m30k_small)
    task, context, trainer = _train(tmp_path / "full", paths, annotator, 6)
    state = trainer.state
    assert [e["step"] for e in state.log_history if "eval_loss" in e] == [3, 6]
    assert state.best_model_checkpoint.endswith(("checkpoint-3", "checkpoint-6"))
    losses = [e["loss"] for e in state.log_history if "loss" in e]
    assert losses[-1] < losses[0] and losses[-1] < 5.8  # ln(300) = 5.7: it learns, label smoothing included
    assert context.syntax_inputs == ("upos_ids", "case_ids", "subword_ids", "dep_tin", "dep_tout", "syntax_tree")

    # predict -> postprocess -> BLEU, in dataset order
    data = task.load_split("val20")
    features = task.featurize(data, context, "val20")
    predictions = task.postprocess(data, features, trainer.predict(features).predictions)
    scores = task.compute_metrics(data, predictions)
    assert scores["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a") and 0.0 <= scores["bleu"] <= 100.0
    assert len(predictions.values) == 20 and predictions.ids == data.ids
    assert corpus_bleu(predictions.values, data.targets)["bleu"] == pytest.approx(scores["bleu"])

    # the saved folder: AutoModelForSeq2SeqLM + the tokenizers; the Predictor gives the Trainer's translations
    trainer.save_model(str(tmp_path / "full"))
    model = AutoModelForSeq2SeqLM.from_pretrained(str(tmp_path / "full")).eval()
    assert isinstance(model, SyntaxInfusedForConditionalGeneration)
    src, tgt = load_tokenizers(tmp_path / "full")
    assert len(src) == len(context.tokenizer) and len(tgt) == len(context.extra["target_tokenizer"])
    predictor = Predictor.from_pretrained(str(tmp_path / "full"))
    predictor.context.annotator = annotator
    assert [r["translation"] for r in predictor.predict(data.sources, batch_size=8)] == predictions.values

    # interrupted after 3 steps, then resumed to 6: the same weights as the straight run
    _train(tmp_path / "resumed", paths, annotator, 3)
    _, _, _resumed = _train(tmp_path / "resumed", paths, annotator, 6, resume=True)
    w_full = load_file(str(tmp_path / "full" / "checkpoint-6" / "model.safetensors"))
    w_resumed = load_file(str(tmp_path / "resumed" / "checkpoint-6" / "model.safetensors"))
    assert set(w_full) == set(w_resumed)
    assert all(torch.equal(w_full[k], w_resumed[k]) for k in w_full)

    # sacreBLEU's paired bootstrap against a second system on the same sentences
    t = paired_bleu_test(predictions.values, data.targets, data.targets, n_resamples=200)
    assert t.details["bleu_b"] == pytest.approx(100.0) and t.difference > 0 and t.p_value < 0.05


def test_translation_training_translate_cli_and_train_route(tmp_path, m30k_small, annotator, monkeypatch, capsys):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    paths = _files(tmp_path, m30k_small)
    # the user's own files are all the run reads: no shared data folder (so no Multi30k) from here on
    (tmp_path / "no-shared-data").mkdir()
    monkeypatch.setenv("SYNTAXFORMER_DATA", str(tmp_path / "no-shared-data"))
    # the `syntaxformer train --task translation` route: the one runner; task options and run-config options
    cfg = tmp_path / "tr.json"
    cfg.write_text(
        json.dumps(
            {
                **_task_options(paths, arm="syntax"),
                "max_steps": 3,
                "per_device_train_batch_size": 16,
                "eval_steps": 2,
                "save_steps": 2,
                "logging_steps": 2,
                "warmup_steps": 2,
                "per_device_eval_batch_size": 8,
            }
        ),
        encoding="utf-8",
    )
    assert (
        main(
            [
                "train",
                "--task",
                "translation",
                "--config",
                str(cfg),
                "--set",
                "eval_sets={}",
                "--output-dir",
                str(tmp_path / "cli_model"),
                "--max-steps",
                "2",
                "--seed",
                "3",
                "--no-progress",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["model_type"] == "Syntax-Infused Transformer (syntax arm)"
    assert summary["output_dir"] == str(tmp_path / "cli_model")
    saved = json.loads((tmp_path / "cli_model" / "run.json").read_text())
    assert saved["config"]["max_steps"] == 2 and saved["config"]["seed"] == 3
    assert saved["task"]["name"] == "translation" and saved["task"]["options"]["eval_sets"] == {}
    metrics = json.loads((tmp_path / "cli_model" / "metrics.json").read_text())
    assert metrics["train"]["best_step"] == 2 and metrics["sizes"]["train"] == 60
    # the headline is BLEU on the user's validation file (20 pairs), the only evaluation set
    assert list(metrics["eval"]) == ["dev"] and metrics["eval"]["dev"]["n"] == 20
    assert metrics["dev"]["bleu"] == metrics["eval"]["dev"]["bleu"]
    assert not (tmp_path / "cli_model" / "tokenizer.json").exists()  # only source_tokenizer/, target_tokenizer/
    # the run folder alone is enough for `evaluate` in a fresh process: task, tokenizers, model
    assert main(["evaluate", str(tmp_path / "cli_model"), "--split", "dev", "--no-progress"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["task"] == "translation" and scored["size"] == 20 and 0.0 <= scored["scores"]["bleu"] <= 100.0
    assert (
        main(
            [
                "train",
                "--task",
                "translation",
                "--config",
                str(cfg),
                "--set",
                "depth=3",
                "--output-dir",
                str(tmp_path / "bad"),
            ]
        )
        == 1
    )
    assert "unknown config option(s) ['depth']" in capsys.readouterr().err

    # `syntaxformer translate`: file in (plain text and .sgm), file out, BLEU with the signature
    out = tmp_path / "hyp.de"
    assert (
        main(
            [
                "translate",
                str(tmp_path / "cli_model"),
                "--input",
                paths["valid_en"],
                "--output",
                str(out),
                "--reference",
                paths["valid_de"],
                "--batch-size",
                "8",
                "--no-progress",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == 20 and "tok:13a" in result["signature"]
    assert len(out.read_text(encoding="utf-8").split("\n")) == 21
    # the run's own evaluation of the same file (its batches of 8, beam 5) gave the same translations
    (hyp,) = (tmp_path / "cli_model").glob("hyp.*.txt")
    assert out.read_text(encoding="utf-8") == hyp.read_text(encoding="utf-8")
    blank = tmp_path / "blank.en"
    blank.write_text("A dog runs.\n\nTwo dogs play.\n", encoding="utf-8")
    assert (
        main(["translate", str(tmp_path / "cli_model"), "--input", str(blank), "--output", str(tmp_path / "b.de")]) == 0
    )
    capsys.readouterr()
    lines = (tmp_path / "b.de").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == ""  # a blank line: an empty translation
    sgm = tmp_path / "in.sgm"
    sgm.write_text(
        '<srcset>\n<doc docid="d1">\n<seg id="1">A man rides a bike.</seg>\n'
        '<seg id="2">Two dogs play.</seg>\n</doc>\n</srcset>\n',
        encoding="utf-8",
    )
    assert (
        main(["translate", str(tmp_path / "cli_model"), "--input", str(sgm), "--output", str(out), "--no-progress"])
        == 1
    )  # an existing output is never replaced silently
    assert "--overwrite" in capsys.readouterr().err
    assert (
        main(
            [
                "translate",
                str(tmp_path / "cli_model"),
                "--input",
                str(sgm),
                "--output",
                str(out),
                "--no-progress",
                "--overwrite",
            ]
        )
        == 0
    )
    assert len(out.read_text(encoding="utf-8").split("\n")) == 3
    assert main(["translate", str(tmp_path), "--input", str(sgm), "--output", str(out), "--overwrite"]) == 1
    assert "config.json" in capsys.readouterr().err
