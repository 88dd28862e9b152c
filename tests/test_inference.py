"""Raw-text inference (syntaxformer.inference): records of tiny trained runs, checked against a one-example-at-a-time
reference (classification), the runner's own split predictions (span QA, translation); the input readers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from syntaxformer.errors import SyntaxformerError
from tests.conftest import data_path

TEXTS = ["A fine, moving film.", "Dull and far too long.", "It is neither good nor bad, and the actors know it."]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("SYNTAXFORMER_NO_PROGRESS", "1")


def _reference_probabilities(run_dir: str, texts: list[str]) -> np.ndarray:
    """Each text alone: the task's featurization of one example, the task's collator, the model, a softmax."""
    import torch

    return torch.softmax(torch.from_numpy(reference_logits(run_dir, texts)), -1).numpy()


def reference_logits(run_dir: str, texts: list[str]) -> np.ndarray:
    """Each text alone: the task's featurization of one example, the task's collator, the model's logits
    (float64, ``[N, num_labels]``)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from syntaxformer.data.examples import TaskData, TaskExample
    from syntaxformer.training.run import build_context, load_run, load_tokenizer

    config, task = load_run(run_dir)
    model = AutoModelForSequenceClassification.from_pretrained(run_dir).eval()
    context = build_context(config, load_tokenizer(run_dir), model.config)
    context.use_cache = False
    rows = []
    for i, text in enumerate(texts):
        data = TaskData([TaskExample(f"ref-{i}", text)], "reference", f"ref-{i}-{text}", 1)
        features = task.featurize(data, context, "reference")
        batch = task.collator(context)([features[0]])
        with torch.no_grad():
            rows.append(model(**batch).logits[0].double().numpy())
    return np.stack(rows)


@pytest.mark.parametrize("system", ["sgnet", "syntax_bert"])
def test_inference_classification_records_match_one_at_a_time_reference(sst2_runs, system, one_thread):
    from syntaxformer.inference import Predictor

    predictor = Predictor.from_run(sst2_runs[system])
    records = predictor.predict([{"text": t, "id": f"t{i}"} for i, t in enumerate(TEXTS)], batch_size=2)
    assert [r["text"] for r in records] == TEXTS and [r["id"] for r in records] == ["t0", "t1", "t2"]
    assert predictor.label_names == ["negative", "positive"]
    reference = _reference_probabilities(sst2_runs[system], TEXTS)
    for r, p in zip(records, reference):
        assert list(r["scores"]) == ["negative", "positive"]
        assert sum(r["scores"].values()) == pytest.approx(1.0)
        assert [r["scores"]["negative"], r["scores"]["positive"]] == pytest.approx(p.tolist(), abs=1e-5)
        assert r["label"] == ["negative", "positive"][int(p.argmax())] and r["score"] == pytest.approx(
            p.max(), abs=1e-5
        )
    t = predictor.timings
    assert t["n"] == 3 and t["parse_s"] >= 0 and t["featurize_s"] >= 0 and t["forward_s"] > 0
    assert t["total_s"] == pytest.approx(t["parse_s"] + t["featurize_s"] + t["forward_s"])
    with pytest.raises(SyntaxformerError, match="input 1.*non-empty"):
        predictor.predict(["fine", "  "])
    # text pairs (a pair task's inputs; here only the path is checked): a mapping or a (text, text_pair) tuple
    pair = predictor.predict([{"text": TEXTS[0], "text_pair": TEXTS[1]}, (TEXTS[1], TEXTS[2])])
    assert [r["text_pair"] for r in pair] == TEXTS[1:] and all(
        sum(r["scores"].values()) == pytest.approx(1.0) for r in pair
    )


def test_inference_cli_predict_input_txt_csv_jsonl_and_stdout(sst2_runs, tmp_path, capsys, one_thread):
    from syntaxformer.cli import main

    run = sst2_runs["sgnet"]
    txt = tmp_path / "texts.txt"
    txt.write_text("\n".join([TEXTS[0], "", TEXTS[1]]) + "\n", encoding="utf-8")
    out = tmp_path / "preds.jsonl"
    assert main(["predict", run, "--input", str(txt), "--output", str(out), "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["size"] == 2 and summary["output"] == str(out) and summary["texts_per_s"] > 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["text"] for r in records] == TEXTS[:2]  # blank lines skipped
    for r in records:
        assert r["label"] in ("negative", "positive") and sum(r["scores"].values()) == pytest.approx(1.0)

    # stdout, a CSV with its own column names and ids, and JSONL: the same predictions
    assert main(["predict", run, "--input", str(txt), "--no-progress"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == records
    csv_file = tmp_path / "texts.csv"
    csv_file.write_text('id,review\nr1,"' + TEXTS[0].replace('"', '""') + f'"\nr2,{TEXTS[1]}\n', encoding="utf-8")
    assert main(["predict", run, "--input", str(csv_file), "--text-column", "review", "--no-progress"]) == 0
    from_csv = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r.pop("id") for r in from_csv] == ["r1", "r2"] and from_csv == records
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS[:2]), encoding="utf-8")
    assert main(["predict", run, "--input", str(jsonl), "--no-progress"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == records

    # errors are one line naming the input
    assert main(["predict", run, "--input", str(csv_file), "--text-column", "sentence"]) == 1
    assert "'sentence'" in capsys.readouterr().err
    assert main(["predict", run, "--input", str(tmp_path / "missing.txt")]) == 1
    assert "missing.txt" in capsys.readouterr().err
    assert main(["predict", run, "--output", str(out)]) == 1
    assert "--input" in capsys.readouterr().err


def _jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_inference_split_and_input_records_name_their_fields_alike(sst2_runs, tmp_path, one_thread):
    """``predict --split`` and ``predict --input`` on the same texts: the prediction is ``label`` in both (the
    same class), the text ``text``; the split's records add only the gold answer (``gold_label``)."""
    from syntaxformer.cli import main
    from syntaxformer.training.run import predict

    run = sst2_runs["sgnet"]
    predict(run, "dev", changes={"max_predict_samples": 4}, output_dir=str(tmp_path))
    split = _jsonl(tmp_path / "predictions_dev.jsonl")
    inputs = tmp_path / "dev.jsonl"
    inputs.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in split), encoding="utf-8")
    assert main(["predict", run, "--input", str(inputs), "--output", str(tmp_path / "raw.jsonl")]) == 0
    raw = _jsonl(tmp_path / "raw.jsonl")
    assert len(split) == len(raw) == 4
    for s, r in zip(split, raw):
        assert set(s) - {"gold_label"} <= set(r) and s["gold_label"] in ("negative", "positive")
        assert (s["id"], s["text"], s["label"]) == (r["id"], r["text"], r["label"])
    tsv = (tmp_path / "predictions_dev.tsv").read_text(encoding="utf-8").splitlines()
    # the TSV keeps the data's own label strings (GLUE's submission format: SST-2's 0 / 1)
    assert [line.split("\t")[2] for line in tsv[1:]] == [str(("negative", "positive").index(r["label"])) for r in raw]


def test_inference_read_inputs_formats(tmp_path):
    from syntaxformer.inference import read_inputs

    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("premise\thypothesis\tid\nA man sleeps.\tNobody sleeps.\t7\n", encoding="utf-8")
    assert read_inputs(tsv, text_column="premise", text_pair_column="hypothesis") == [
        {"text": "A man sleeps.", "text_pair": "Nobody sleeps.", "id": "7"}
    ]
    qa = tmp_path / "q.json"
    qa.write_text(json.dumps([{"question": "Who?", "context": "Ann did."}]), encoding="utf-8")
    assert read_inputs(qa, head="question_answering") == [{"question": "Who?", "context": "Ann did."}]
    glue = tmp_path / "glue.csv"  # the columns `train` reads without being told: sentence1 / sentence2
    glue.write_text("sentence1,sentence2,label\nA man sleeps.,Nobody sleeps.,0\n", encoding="utf-8")
    assert read_inputs(glue) == [{"text": "A man sleeps.", "text_pair": "Nobody sleeps."}]
    own = tmp_path / "own.csv"  # a run trained on columns of its own names reads them by default
    own.write_text("review,other,more\nGood.,x,y\n", encoding="utf-8")
    assert read_inputs(own, run_columns={"text_column": "review", "text_pair_column": "other"}) == [
        {"text": "Good.", "text_pair": "x"}
    ]
    assert read_inputs(own, text_column="more", run_columns={"text_column": "review"}) == [{"text": "y"}]
    one = tmp_path / "one.csv"
    one.write_text("review\nGood.\n", encoding="utf-8")
    assert read_inputs(one) == [{"text": "Good."}]  # the only column
    two = tmp_path / "two.csv"
    two.write_text("a,b\nGood.,x\n", encoding="utf-8")
    with pytest.raises(SyntaxformerError, match="--text-column"):
        read_inputs(two)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n[1]\n', encoding="utf-8")
    with pytest.raises(SyntaxformerError, match=r"bad\.jsonl:2: expected one JSON object per line, got a JSON list"):
        read_inputs(bad)
    with pytest.raises(SyntaxformerError, match="unknown input format"):
        read_inputs(_touch(tmp_path / "x.xlsx"))
    with pytest.raises(SyntaxformerError, match="one text per line"):
        read_inputs(_touch(tmp_path / "q.txt"), head="question_answering")


def _touch(path):
    path.write_text("x\n", encoding="utf-8")
    return path


def _tiny_squad_run(tmp_path, tiny_model, system: str, verifier: str) -> str:
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    squad = data_path("squad2", "dev-v2.0-sample.json")
    out = tmp_path / f"squad-{system}"
    train(
        RunConfig(
            task="squad2",
            model_type=system,
            model_name_or_path=tiny_model,
            train_file=str(squad),
            task_options={"verifier": verifier, "doc_stride": 32, "threshold_tuning_fraction": 0.0},
            max_train_samples=8,
            max_eval_samples=6,
            max_steps=2,
            max_length=96,
            per_device_train_batch_size=4,
            disable_tqdm=True,
            features_cache=False,
            parse_cache=str(tmp_path / "parses.sqlite3"),
            output_dir=str(out),
        )
    )
    return str(out)


@pytest.mark.parametrize("system,verifier", [("sgnet", "parallel"), ("syntax_bert", "joint")])
def test_inference_span_qa_matches_the_runner(tiny_model, tmp_path, system, verifier, one_thread):
    """Raw questions over passages give the best span and no-answer score of the runner's own decoding of the
    same questions (``predict`` on the dev split: the Trainer, the task's windows and postprocessing)."""
    from syntaxformer.inference import Predictor
    from syntaxformer.training.run import load_run, predict

    run = _tiny_squad_run(tmp_path, tiny_model, system, verifier)
    predict(run, "dev", output_dir=str(tmp_path / "split"))
    by_id = {
        r["id"]: r
        for r in map(
            json.loads, (tmp_path / "split" / "predictions_dev.jsonl").read_text(encoding="utf-8").splitlines()
        )
    }
    config, task = load_run(run)
    dev = task.load_split("dev", config.data_options("dev", config.max_eval_samples))
    inputs = [{"id": e.qid, "question": e.question, "context": e.context} for e in dev.examples]
    predictor = Predictor.from_run(run, null_threshold=task.null_threshold)
    records = predictor.predict(inputs, batch_size=3)
    assert [r["id"] for r in records] == [e.qid for e in dev.examples]
    for r, e in zip(records, dev.examples):
        ref = by_id[e.qid]
        assert set(ref) - {"gold_answers"} <= set(r)  # the split's records name their fields as these do
        assert r["best_answer"] == ref["best_answer"]
        assert r["null_score"] == pytest.approx(ref["null_score"], abs=1e-4)
        assert r["answer"] == ref["answer"] and ref["gold_answers"] == e.answer_texts
        assert r["best_answer"] == e.context[r["best_start"] : r["best_end"]]
        if r["answer"]:
            assert e.context[r["start"] : r["end"]] == r["answer"]
    # the pipeline answers like the predictor (threshold: the one tuned on the run's dev articles)
    from transformers import pipeline

    import syntaxformer  # noqa: F401

    qa = pipeline("syntax-question-answering", model=run)
    one = qa(question=inputs[0]["question"], context=inputs[0]["context"])
    assert one["best_answer"] == records[0]["best_answer"]
    assert one["null_score"] == pytest.approx(records[0]["null_score"], abs=1e-4)
    assert set(one) == {"answer", "start", "end", "score", "null_score", "best_answer"}
    assert len(qa(inputs[:2])) == 2

    # top_k: the k best spans of different positions, best first, the first the best answer
    context = inputs[0]["context"]
    top = qa(question=inputs[0]["question"], context=context, top_k=3)
    assert len(top) == 3 and all(set(a) == {"answer", "start", "end", "score"} for a in top)
    assert len({(a["start"], a["end"]) for a in top}) == 3
    assert [a["score"] for a in top] == sorted((a["score"] for a in top), reverse=True)
    assert top[0]["answer"] == one["best_answer"] and top[0]["score"] == pytest.approx(one["score"])
    assert all(context[a["start"] : a["end"]] == a["answer"] for a in top)
    assert qa(question=inputs[0]["question"], context=context, top_k=1) == one  # one answer: the usual dict
    assert [len(x) for x in qa(inputs[:2], top_k=2)] == [2, 2]
    # max_answer_len (transformers' name; max_answer_length too): every span is one token of the passage's windows
    task_data = task.inference_data(inputs[:1])
    from syntaxformer.tasks.squad import stored_windows

    windows = stored_windows(task.featurize(task_data, predictor.context, "tokens"))
    tokens = {(int(a), int(b)) for w in windows for a, b in w.passage_offsets if a >= 0}
    wide = qa(question=inputs[0]["question"], context=context, top_k=5)
    assert any((a["start"], a["end"]) not in tokens for a in wide)  # without it, spans of several tokens
    short = qa(question=inputs[0]["question"], context=context, top_k=5, max_answer_len=1)
    assert len(short) == 5 and all((a["start"], a["end"]) in tokens for a in short)
    assert qa(question=inputs[0]["question"], context=context, top_k=5, max_answer_length=1) == short
    from syntaxformer.errors import ConfigError

    with pytest.raises(ConfigError, match=r"takes no option\(s\) \['doc_stride'\]"):
        qa(question="Who?", context="Ann.", doc_stride=8)
    with pytest.raises(ConfigError, match="max_answer_len=0"):
        qa(question="Who?", context="Ann.", max_answer_len=0)
    # the classification pipeline on a span-QA run: refused, naming the QA pipeline (no untrained classifier)
    with pytest.raises(ConfigError, match=r'holds a span QA model .*pipeline\("syntax-question-answering"'):
        pipeline("syntax-text-classification", model=run)
    # transformers 5 has no "question-answering" task; its message names the syntax pipeline
    with pytest.raises(KeyError, match="syntax-question-answering"):
        pipeline("question-answering", model=run)


def test_inference_multiple_choice_matches_the_runner(tiny_model, tmp_path, one_thread):
    """Raw RACE-style questions (passage, question, options) get the option probabilities of the runner's own
    predictions; questions with different numbers of options are batched apart, each scored as when alone."""
    from syntaxformer.inference import Predictor
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import load_run, predict, train

    data_path("race", "RACE_train.tar.gz")
    out = tmp_path / "race"
    train(
        RunConfig(
            task="race",
            model_name_or_path=tiny_model,
            max_train_samples=8,
            max_eval_samples=6,
            max_steps=2,
            max_length=64,
            per_device_train_batch_size=4,
            disable_tqdm=True,
            features_cache=False,
            parse_cache=str(tmp_path / "parses.sqlite3"),
            output_dir=str(out),
        )
    )
    ref = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    config, task = load_run(out)
    dev = task.load_split("dev", config.data_options("dev", config.max_eval_samples))
    inputs = [{"id": e.qid, "question": e.question, "context": e.article, "options": e.options} for e in dev.examples]
    predictor = Predictor.from_run(out)
    records = predictor.predict(inputs, batch_size=4)
    assert [r["id"] for r in records] == [e.qid for e in dev.examples]
    predict(out, "dev", changes={"max_predict_samples": 6}, output_dir=str(tmp_path / "split"))
    split = {s["id"]: s for s in _jsonl(tmp_path / "split" / "predictions_dev.jsonl")}
    assert set(split) == {e.qid for e in dev.examples}
    for r, e in zip(records, dev.examples):
        s = split[e.qid]
        assert r["prediction"] == ref[e.qid]["prediction"] and r["option"] == e.options[r["index"]]
        assert r["scores"] == pytest.approx(ref[e.qid]["probs"], abs=1e-4)
        assert set(s) - {"gold_label"} <= set(r) and s["gold_label"] == e.answer  # the split's records: same names
        assert (s["prediction"], s["index"], s["option"]) == (r["prediction"], r["index"], r["option"])
        assert s["scores"] == pytest.approx(r["scores"], abs=1e-4)
    three = {**inputs[1], "id": "three", "options": inputs[1]["options"][:3]}
    mixed = predictor.predict([inputs[0], three, inputs[2]], batch_size=8)
    alone = predictor.predict([three])[0]
    assert len(mixed[1]["scores"]) == 3 and mixed[1]["scores"] == pytest.approx(alone["scores"], abs=1e-5)
    assert mixed[0]["scores"] == pytest.approx(records[0]["scores"], abs=1e-5)
    with pytest.raises(SyntaxformerError, match="input 0 .*'options' must be a list of at least two"):
        predictor.predict([{**inputs[0], "options": ["only one"]}])
    with pytest.raises(SyntaxformerError, match="'question' must be a non-empty text"):
        predictor.predict([{"context": "A passage.", "options": ["a", "b"]}])
    bare = predictor.predict([{"question": "Which one is red?", "options": ["a rose", "the sky", "snow"]}])[0]
    assert "context" not in bare and len(bare["scores"]) == 3 and sum(bare["scores"]) == pytest.approx(1.0)
    # the CLI reads the same questions from JSONL and writes the same records
    from syntaxformer.cli import main

    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in inputs[:3]), encoding="utf-8")
    assert main(["predict", str(out), "--input", str(tmp_path / "q.jsonl"), "--output", str(tmp_path / "p.jsonl")]) == 0
    written = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [w["prediction"] for w in written] == [r["prediction"] for r in records[:3]]
    assert written[2]["scores"] == pytest.approx(records[2]["scores"], abs=1e-6)
    (tmp_path / "bad.jsonl").write_text(json.dumps({**inputs[0], "options": "A or B"}) + "\n", encoding="utf-8")
    assert main(["predict", str(out), "--input", str(tmp_path / "bad.jsonl")]) == 1


def test_inference_translation_matches_the_runs_split_translations(tmp_path, one_thread):
    """A tiny translation run: raw sources through the Predictor give the run's own split translations (same beams),
    and the pipeline gives the Predictor's."""
    from syntaxformer.inference import Predictor
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    folder = data_path("multi30k")
    files = {}
    for name, source, n in (("tr", "train", 60), ("va", "val", 8)):
        for lang in ("en", "de"):
            lines = (folder / f"{source}.{lang}").read_text(encoding="utf-8").splitlines()[:n]
            files[f"{name}.{lang}"] = tmp_path / f"{name}.{lang}"
            files[f"{name}.{lang}"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "nmt"
    train(
        RunConfig(
            task="translation",
            task_options={
                "arm": "both",
                "train_source": str(files["tr.en"]),
                "train_target": str(files["tr.de"]),
                "valid_source": str(files["va.en"]),
                "valid_target": str(files["va.de"]),
                "eval_sets": {"val": [str(files["va.en"]), str(files["va.de"])]},
                "source_vocab_size": 300,
                "target_vocab_size": 300,
            },
            max_steps=2,
            disable_tqdm=True,
            parse_cache=str(tmp_path / "parses.sqlite3"),
            training_args={"eval_steps": 1, "save_steps": 1, "generation_num_beams": 2},
            output_dir=str(out),
        )
    )
    sources = ["A man rides a horse.", "Two dogs play in the snow."]
    predictor = Predictor.from_run(out)
    assert predictor.num_beams == 2
    records = predictor.predict([{"text": s} for s in sources])
    assert [r["text"] for r in records] == sources and (out / "README.md").is_file()
    # the split's records name their fields as these do, and add the reference
    from syntaxformer.training.run import predict

    predict(out, "dev", output_dir=str(tmp_path / "split"))
    split = _jsonl(tmp_path / "split" / "predictions_dev.jsonl")
    lines = {x: files[f"va.{x}"].read_text(encoding="utf-8").splitlines() for x in ("en", "de")}
    assert [(s["text"], s["reference"]) for s in split] == list(zip(lines["en"], lines["de"]))
    assert all(set(s) - {"id", "reference"} == set(records[0]) for s in split)
    # raw sentences through the Predictor give the split's translations (the same batch, the same decoding path)
    assert [r["translation"] for r in predictor.predict(lines["en"])] == [s["translation"] for s in split]
    from transformers import pipeline

    import syntaxformer  # noqa: F401

    mt = pipeline("syntax-translation", model=str(out))
    assert mt(sources) == [[{"translation_text": r["translation"]}] for r in records]
    assert mt(sources[0]) == [{"translation_text": records[0]["translation"]}]
    # the model and its tokenizers load from the folder with the Auto classes
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    assert type(AutoModelForSeq2SeqLM.from_pretrained(str(out))).__name__ == "SyntaxInfusedForConditionalGeneration"
    src = AutoTokenizer.from_pretrained(str(out), subfolder="source_tokenizer")
    assert src("A man.")["input_ids"] == predictor.context.tokenizer("A man.")["input_ids"]


def test_inference_plain_classifier_matches_the_text_classification_pipeline(tiny_model, tmp_path, one_thread):
    """A plain transformers classifier through the Predictor (tokenized, no parse, length-sorted batches) gives
    ``pipeline("text-classification")``'s probabilities, text by text."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    from syntaxformer.inference import Predictor

    torch.manual_seed(0)
    folder = tmp_path / "plain"
    labels = {0: "negative", 1: "positive"}
    AutoModelForSequenceClassification.from_pretrained(tiny_model, num_labels=2, id2label=labels).save_pretrained(
        folder
    )
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(folder)
    predictor = Predictor.from_pretrained(str(folder), max_length=64)
    assert predictor.context.syntax_inputs == ()
    records = predictor.predict(TEXTS, batch_size=2)
    reference = pipeline("text-classification", model=str(folder), top_k=None)(TEXTS)
    for r, ref in zip(records, reference):
        assert r["scores"] == pytest.approx({d["label"]: d["score"] for d in ref}, abs=1e-5)
    assert predictor.timings["parse_s"] == 0.0
