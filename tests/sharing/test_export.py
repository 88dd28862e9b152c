"""``syntaxformer export`` (sharing/export.py): the folder's contents, its code (relative imports only, every file
reachable by transformers' loader, only the dependencies a user has), its model card, refusals, and its
pipeline loaded with the installed transformers without importing syntaxformer."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from syntaxformer.errors import SyntaxformerError

#: What a user of an exported model has installed (besides the standard library).
USER_PACKAGES = {"torch", "transformers", "numpy", "spacy", "tokenizers", "huggingface_hub", "safetensors", "tqdm"}


@pytest.fixture(scope="module")
def exported(sst2_runs, tmp_path_factory) -> dict[str, Path]:
    """The tiny SG-Net and Syntax-BERT SST-2 runs, exported: system -> folder."""
    from syntaxformer.sharing import export_model

    root = tmp_path_factory.mktemp("exported")
    return {s: export_model(run, root / f"sst2-{s}") for s, run in sst2_runs.items()}


def _absolute_paths(text: str) -> list[str]:
    return re.findall(r"(?<![\w.])/(?:tmp|work|home|root|usr|opt|var|private|Users)/[^\s\"'`)]*", text)


def test_export_folder_holds_the_model_and_nothing_of_the_training(exported, sst2_runs):
    folder = exported["sgnet"]
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*")}
    assert {
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "README.md",
        "syntax_pipeline.json",
        "syntax_model.py",
        "syntax_pipeline.py",
        "modeling_sgnet.py",
    } <= names
    training = {
        n
        for n in names
        if n.startswith("checkpoint")
        or n.endswith((".pt", ".pth", ".bin"))
        or n in ("run.json", "metrics.json", "training_args.bin", "dev_predictions.json")
    }
    assert training == set()
    assert (folder / "model.safetensors").read_bytes() == (Path(sst2_runs["sgnet"]) / "model.safetensors").read_bytes()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["auto_map"] == {
        "AutoConfig": "syntax_model.SGNetConfig",
        "AutoModelForSequenceClassification": "syntax_model.SGNetForSequenceClassification",
    }
    assert config["custom_pipelines"] == {
        "text-classification": {
            "impl": "syntax_model.SyntaxTextClassificationPipeline",
            "pt": ["AutoModelForSequenceClassification"],
            "tf": [],
            "type": "text",
        }
    }
    options = json.loads((folder / "syntax_pipeline.json").read_text(encoding="utf-8"))
    assert options["parser"] == "en_core_web_sm" and options["max_length"] == 32
    assert options["syntax_inputs"] == ["syntax_tree", "dep_tin", "dep_tout"]
    for name in ("config.json", "syntax_pipeline.json", "README.md"):
        assert _absolute_paths((folder / name).read_text(encoding="utf-8")) == [], name
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_export_code_has_relative_imports_only_and_every_file_reaches_the_loader(exported):
    from transformers.dynamic_module_utils import get_imports, get_relative_imports

    folder = exported["syntax_bert"]
    code = {p.stem: p for p in folder.glob("*.py")}
    for name, path in code.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "syntaxformer" for a in node.names), (name, node.lineno)
            if isinstance(node, ast.ImportFrom):
                assert node.level == 1 or (node.module or "").split(".")[0] != "syntaxformer", (name, node.lineno)
        # what transformers' loader reads: the relative imports name files of the folder; the other imports
        # (those outside try blocks, at any depth: the hub checks every file) are packages a user has
        assert set(get_relative_imports(path)) <= set(code), name
        assert set(get_imports(path)) - set(sys.stdlib_module_names) <= USER_PACKAGES, name
    # a local folder's loader copies the direct relative imports of the module it loads: the entry imports all
    assert set(get_relative_imports(folder / "syntax_model.py")) == set(code) - {"syntax_model"}


def test_export_model_card_metadata_and_usage(exported, sst2_runs):
    from huggingface_hub import ModelCard

    card = ModelCard.load(exported["sgnet"] / "README.md")
    metrics = json.loads((Path(sst2_runs["sgnet"]) / "metrics.json").read_text(encoding="utf-8"))
    data = card.data
    assert data.library_name == "transformers" and data.pipeline_tag == "text-classification"
    assert data.license == "other" and "custom_code" in data.tags and data.datasets == ["nyu-mll/glue"]
    [result] = data.eval_results
    assert (result.metric_type, result.metric_value) == ("accuracy", metrics["dev"]["accuracy"])
    assert result.metric_args == {"seed": 42} and result.dataset_config == "sst2" and result.dataset_split == "dev"
    text = card.text
    assert "pip install" in text and "torch" in text and "python -m spacy download en_core_web_sm" in text
    assert 'pipeline(model="sst2-sgnet", trust_remote_code=True)' in text
    assert "syntaxformer is not needed" in text and "import syntaxformer" not in text


def test_export_refuses_bad_runs_and_an_existing_folder(sst2_runs, tmp_path):
    import shutil

    from syntaxformer.cli import main
    from syntaxformer.sharing import export_model

    run = Path(sst2_runs["sgnet"])
    out = tmp_path / "out"
    export_model(run, out)
    (out / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(SyntaxformerError, match=rf"{re.escape(str(out))} exists and is not empty.*--overwrite"):
        export_model(run, out)
    assert (out / "mine.txt").is_file()
    assert main(["export", str(run), str(out)]) == 1
    assert main(["export", str(run), str(out), "--overwrite"]) == 0
    assert not (out / "mine.txt").exists() and (out / "model.safetensors").is_file()
    with pytest.raises(SyntaxformerError, match="not a run folder of `syntaxformer train` .no run.json"):
        export_model(tmp_path, tmp_path / "x")
    bad = tmp_path / "bad-run"
    shutil.copytree(run, bad)
    (bad / "model.safetensors").write_bytes((run / "model.safetensors").read_bytes()[:100])
    with pytest.raises(SyntaxformerError, match=r"bad-run/model.safetensors is not a readable safetensors file"):
        export_model(bad, tmp_path / "y")
    (bad / "model.safetensors").unlink()
    with pytest.raises(SyntaxformerError, match=r"no final weights \(model.safetensors is missing\)"):
        export_model(bad, tmp_path / "y")
    (bad / "config.json").unlink()
    with pytest.raises(SyntaxformerError, match="holds no saved model .no config.json"):
        export_model(bad, tmp_path / "y")
    assert not (tmp_path / "y").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _baseline_run(folder: Path, tiny_model: str) -> str:
    """A tiny plain-encoder SST-2 run (SG-Net without its layer, first-token pooling: the model reads no syntax)."""
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train

    train(
        RunConfig(
            task="sst2",
            model_type="sgnet",
            model_name_or_path=tiny_model,
            model={"use_sg_layer": False, "pooling": "cls"},
            max_train_samples=16,
            max_eval_samples=8,
            max_steps=2,
            max_length=32,
            per_device_train_batch_size=8,
            eval_strategy="no",
            save_strategy="no",
            disable_tqdm=True,
            features_cache=False,
            output_dir=str(folder),
        )
    )
    return str(folder)


def test_export_pipeline_in_a_process_that_never_imports_syntaxformer(
    exported, sst2_runs, tiny_model, tmp_path, one_thread
):
    """The installed transformers (the newest the project supports) loads the folders through ``custom_pipelines``
    with syntaxformer on the path but never imported; the answers are the library Predictor's, for a Syntax-BERT
    model and for a plain baseline (nothing parsed: no parser in its options)."""
    from syntaxformer.inference import Predictor
    from syntaxformer.sharing import export_model

    baseline = _baseline_run(tmp_path / "baseline", tiny_model)
    runs = {"syntax_bert": sst2_runs["syntax_bert"], "baseline": baseline}
    folders = {
        "syntax_bert": str(exported["syntax_bert"]),
        "baseline": str(export_model(baseline, tmp_path / "shared" / "baseline")),
    }
    options = json.loads((Path(folders["baseline"]) / "syntax_pipeline.json").read_text(encoding="utf-8"))
    assert options["syntax_inputs"] == [] and options["parser"] is None
    texts = ["A fine, moving film.", "Dull and far too long."]
    code = f"""
import json, sys
from transformers import pipeline
out = {{name: pipeline(model=folder, trust_remote_code=True)({texts!r}, top_k=None)
        for name, folder in {folders!r}.items()}}
print(json.dumps({{"out": out, "loaded": sorted(m for m in sys.modules if m.startswith("syntaxformer"))}}))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules"), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    for name, run in runs.items():
        want = Predictor.from_run(run).predict(texts)
        assert len(result["out"][name]) == len(want) == 2
        for got, ref in zip(result["out"][name], want):
            assert {d["label"]: d["score"] for d in got} == pytest.approx(ref["scores"], abs=1e-5), name


def test_export_carries_only_the_code_of_its_system_and_head(exported):
    """An SG-Net classifier carries no Syntax-BERT attention (Triton kernels included), translation or span-QA
    code; a Syntax-BERT classifier no SG-Net code: exactly the modules its config, model and pipeline import."""
    from syntaxformer.sharing.export_code import code_exports, code_files

    files = {s: {p.name for p in folder.glob("*.py")} for s, folder in exported.items()}
    assert files["sgnet"] == set(
        code_files(code_exports("sgnet", "SGNetForSequenceClassification", "sequence_classification"))
    )
    foreign = {
        "modeling_syntax_bert.py",
        "seq2seq.py",
        "span_qa.py",
        "qa_pipeline.py",
        "translation_pipeline.py",
        "bpe.py",
    }
    assert not files["sgnet"] & foreign and not [n for n in files["sgnet"] if "attention" in n or "triton" in n]
    assert {"syntax_attention.py", "modeling_syntax_bert.py"} <= files["syntax_bert"]
    assert not files["syntax_bert"] & {"modeling_sgnet.py", "sg_layer.py", "seq2seq.py", "qa_pipeline.py"}
    assert "register_syntax_attention()" in (exported["syntax_bert"] / "syntax_model.py").read_text(encoding="utf-8")
    assert "register_syntax_attention" not in (exported["sgnet"] / "syntax_model.py").read_text(encoding="utf-8")


#: Every model export carries: (model_type, model class, head).
EXPORTS = [
    ("sgnet", "SGNetForSequenceClassification", "sequence_classification"),
    ("plain_encoder", "PlainEncoderForSequenceClassification", "sequence_classification"),
    ("syntax_bert", "SyntaxBertForSequenceClassification", "sequence_classification"),
    ("sgnet", "SGNetForQuestionAnswering", "question_answering"),
    ("syntax_bert", "SyntaxBertForQuestionAnswering", "question_answering"),
    ("syntax_infused_translation", "SyntaxInfusedForConditionalGeneration", "seq2seq"),
]


def _undefined_names(text: str, name: str) -> set[str]:
    """The global names a module reads (at module level, in classes or functions) that nothing in it defines
    and that are no builtins (the reference check of a cut copy: every definition it uses is still there)."""
    import builtins
    import symtable

    top = symtable.symtable(text, name, "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    defined |= set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}
    missing: set[str] = set()
    todo = [top]
    while todo:
        table = todo.pop()
        for symbol in table.get_symbols():
            implicit = table is top or symbol.is_global() or (table.get_type() == "class" and not symbol.is_local())
            if implicit and symbol.is_referenced() and symbol.get_name() not in defined:
                missing.add(symbol.get_name())
        todo += table.get_children()
    return missing


@pytest.mark.parametrize("model_type,model_class,head", EXPORTS)
def test_export_code_keeps_every_definition_it_uses_and_drops_the_others(model_type, model_class, head):
    """The exported code of every model: each file defines every global name it reads (a definition left out
    that the code uses would fail only when that line runs), is a part of its library module (definitions kept
    in their order, none added) and none is empty of definitions."""
    from syntaxformer.sharing.export_code import ENTRY_MODULE, code_exports, code_files

    exports = code_exports(model_type, model_class, head)
    files = code_files(exports)
    full = 0
    for name, text in files.items():
        assert _undefined_names(text, name) == set(), name
        if name == f"{ENTRY_MODULE}.py":
            continue
        module = text.splitlines()[0].split()[3]  # "# Copied from syntaxformer.x.y (syntaxformer) ..."
        import importlib.util

        source = Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")
        full += len(source.splitlines())
        kept = [n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        defined = [n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert kept == [n for n in defined if n in kept], name  # a subsequence of the module's own definitions
    assert sum(len(t.splitlines()) for t in files.values()) < full  # something was left out


def test_export_code_of_an_sgnet_classifier_leaves_out_other_heads_the_registry_and_the_parse_cache():
    """What the SG-Net classifier's pipeline and model never reach is not in its folder: the other heads, the
    registry (a config saved under an older model_type is recognised without it), the parse cache and its
    progress bar; a Syntax-BERT model keeps the import that registers its attention function."""
    from syntaxformer.sharing.export_code import code_exports, code_files

    files = code_files(code_exports("sgnet", "SGNetForSequenceClassification", "sequence_classification"))
    assert "registry.py" not in files and "cache.py" not in files and "annotators_cache.py" not in files
    heads = {n.name for n in ast.parse(files["heads.py"]).body if isinstance(n, ast.ClassDef)}
    assert "SequenceClassificationHead" in heads and not heads & {"QuestionAnsweringHead", "MultipleChoiceHead"}
    spacy = {n.name for n in ast.parse(files["annotators_spacy.py"]).body if isinstance(n, ast.ClassDef)}
    assert "SpacyParser" in spacy and "SpacyAnnotator" not in spacy
    bert = code_files(code_exports("syntax_bert", "SyntaxBertForSequenceClassification", "sequence_classification"))
    assert "from .syntax_attention import syntax_attention_forward" in bert["modeling_syntax_bert.py"]
    assert "\nregister_syntax_attention()" in bert["syntax_attention.py"]


def test_export_code_leaves_out_methods_nothing_names_and_takes_on_demand_names_only_where_used():
    """A plain class (no base, the base of no class) loses the methods no kept code names, and with them what only
    they used (``Sentence.pretty``, ``Sentence.ancestors`` and ``tree.ancestors``); a class mixed into a
    third-party class keeps every method (transformers may call one by its name). A module imported on demand
    carries the names kept code takes from it: the classifier's pipeline fills constituency trees from the
    dependency trees, the span-QA pipeline does not."""
    from syntaxformer.sharing.export_code import code_exports, code_files

    def methods(text: str, cls: str) -> set[str]:
        node = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == cls)
        return {n.name for n in node.body if isinstance(n, ast.FunctionDef)}

    def defined(text: str) -> set[str]:
        return {n.name for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}

    keys = ("syntax_tree", "dep_tin", "dep_tout", "pos_ids")
    files = code_files(code_exports("sgnet", "SGNetForSequenceClassification", "sequence_classification", keys))
    sentence = methods(files["sentence.py"], "Sentence")
    assert {"to_dict", "from_dict", "validate", "__post_init__"} <= sentence
    assert not sentence & {"pretty", "ancestors"} and "ancestors" not in defined(files["tree.py"])
    assert "from_encoder_pretrained" in methods(files["wrapped_encoder.py"], "WrappedEncoderMixin")
    assert {"feature_vocab_size", "subword_feature_ids"} <= defined(files["subword_features.py"])
    bert = code_files(code_exports("syntax_bert", "SyntaxBertForSequenceClassification", "sequence_classification"))
    bert_qa = code_files(code_exports("syntax_bert", "SyntaxBertForQuestionAnswering", "question_answering"))
    assert {"Tree", "encode_constituency", "with_dependency_trees"} <= defined(bert["constituency.py"])
    assert "encode_constituency" in defined(bert_qa["constituency.py"])
    assert "with_dependency_trees" not in defined(bert_qa["constituency.py"])


def test_export_code_cut_modules_carry_the_first_paragraph_of_their_docstring():
    """A copy cut to some of its module's definitions carries the first paragraph of the module's docstring (the
    rest describes what the copy leaves out); a module copied whole keeps all of it. Every copy still parses."""
    import syntaxformer.data.collate as collate
    from syntaxformer.sharing.export_code import code_exports, code_files

    files = code_files(code_exports("sgnet", "SGNetForSequenceClassification", "sequence_classification"))
    for text in files.values():
        ast.parse(text)
    doc = ast.get_docstring(ast.parse(files["collate.py"]), clean=True)
    full = collate.__doc__ or ""
    assert "\n\n" in full.strip() and doc == full.strip().split("\n\n")[0].strip()
    masks = code_files(code_exports("sgnet", "SGNetForSequenceClassification", "sequence_classification"))["sdoi.py"]
    import syntaxformer.masks.sdoi as sdoi

    kept_whole = ast.get_docstring(ast.parse(masks), clean=True)
    assert kept_whole is not None and kept_whole.startswith((sdoi.__doc__ or "").strip().split("\n")[0])


def test_export_pipeline_refuses_inputs_as_the_library_and_caps_max_length(exported, sst2_runs, tmp_path, one_thread):
    """The exported pipeline checks its inputs with the library's own check (the same message for ``None``, ``5``
    ...), and a ``max_length`` above the model's positions in ``syntax_pipeline.json`` is capped: a 2,400-word text
    is truncated at the model's limit and answered as the library answers it at that ``max_length``."""
    import shutil

    from transformers import AutoConfig, pipeline

    from syntaxformer.inference import Predictor
    from syntaxformer.modeling.raw_text import position_limit

    folder = tmp_path / "long"
    shutil.copytree(exported["sgnet"], folder)
    options = json.loads((folder / "syntax_pipeline.json").read_text(encoding="utf-8"))
    (folder / "syntax_pipeline.json").write_text(json.dumps({**options, "max_length": 2000}), encoding="utf-8")
    long_text = " ".join(["The film is long , slow and far too dull ."] * 240)  # 2,400 words (and commas)
    bad = [None, 5, ["A fine film.", 5], ["  "], [{"txt": "A fine film."}], b"bytes"]
    code = f"""
import json, sys
from transformers import pipeline
clf = pipeline(model={str(folder)!r}, trust_remote_code=True)
errors = []
for bad in {bad!r}:
    try:
        clf(bad)
        errors.append(None)
    except Exception as e:
        errors.append([type(e).__name__, str(e)])
out = {{"errors": errors, "long": clf({long_text!r}, top_k=None), "max_length": clf.options.max_length}}
print(json.dumps({{**out, "loaded": sorted(m for m in sys.modules if m.startswith("syntaxformer"))}}))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_MODULES_CACHE": str(tmp_path / "modules"), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    ours = pipeline("syntax-text-classification", model=sst2_runs["sgnet"])
    want = []
    for x in bad:
        with pytest.raises(SyntaxformerError) as e:
            ours(x)
        want.append([type(e.value).__name__, str(e.value)])
    assert result["errors"] == want
    assert "SyntaxTextClassificationPipeline takes a str or dict or a list of them, got NoneType (None)" in want[0][1]
    assert "input 1" in want[2][1]
    limit = position_limit(AutoConfig.from_pretrained(sst2_runs["sgnet"]))
    assert limit is not None and limit < 2000 and result["max_length"] == limit
    ref = Predictor.from_run(sst2_runs["sgnet"], changes={"max_length": limit}).predict([long_text])[0]
    assert {d["label"]: d["score"] for d in result["long"]} == pytest.approx(ref["scores"], abs=1e-5)


def test_exported_qa_pipeline_reads_the_runs_tag_set_as_predict_does(tiny_model, tmp_path, one_thread):
    """A span-QA run whose model reads PTB tags (``pos_embeddings="xpos"``): the exported folder's pipeline builds
    the tag inputs from the same tag set as the library's Predictor, so its answers and scores are the same (with the
    UD tags instead, the tag embeddings trained for two steps move the scores)."""
    from transformers import pipeline

    from syntaxformer.inference import Predictor
    from syntaxformer.sharing import export_model
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train
    from tests.conftest import data_path

    data_path("squad2", "dev-v2.0-half.json")
    run = tmp_path / "squad"
    options = {"max_steps": 2, "per_device_train_batch_size": 4, "learning_rate": 1e-2, "max_train_samples": 8}
    options |= {"max_eval_samples": 4, "max_length": 96, "doc_stride": 32, "parse_cache": False, "disable_tqdm": True}
    config = {"model_name_or_path": tiny_model, "output_dir": str(run), "task": "squad2", "pos_embeddings": "xpos"}
    train(RunConfig.from_dict({**config, **options}))
    folder = export_model(run, tmp_path / "exported")
    assert json.loads((folder / "syntax_pipeline.json").read_text(encoding="utf-8"))["pos_tags"] == "xpos"
    inputs = [
        {"question": "Who wrote the letter?", "context": "The letter was written by Anna in Paris. She sent it home."},
        {"question": "Where did she go?", "context": "After lunch she went to the old market near the river."},
    ]
    want = Predictor.from_run(run).predict(inputs)
    got = pipeline(model=str(folder), trust_remote_code=True)(inputs)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert [g[k] for k in ("answer", "start", "end", "best_answer")] == [
            w[k] for k in ("answer", "start", "end", "best_answer")
        ]
        assert (g["score"], g["null_score"]) == pytest.approx((w["span_score"], w["null_score"]), abs=1e-6)
