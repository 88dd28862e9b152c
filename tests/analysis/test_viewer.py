"""The viewer page's data (``syntaxformer show``): attention collected under any attention implementation and
equal to an independent eager pass, trees / masks as the library builds them, trained run folders, the CLI."""

from __future__ import annotations

import json
import re

import pytest
import torch

from tests.conftest import minilm_path

TEXT = "The movie's sharp script makes up for its slow start."


def _page_data(page: str) -> dict:
    m = re.search(r'<script id="view-data" type="application/json">(.*?)</script>', page, re.S)
    assert m, "the page carries its data in a JSON script element"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def sdpa_models():
    """Plain MiniLM, SG-Net and Syntax-BERT (layers 0 and 4 only, a gate) all loaded under sdpa."""
    from transformers import AutoModel

    from syntaxformer.analysis.viewer import ViewModel
    from syntaxformer.modeling import SGNetModel, SyntaxBertModel

    path = minilm_path()
    sdpa = {"attn_implementation": "sdpa"}
    plain = AutoModel.from_pretrained(path, **sdpa).eval()
    sg = SGNetModel.from_encoder_pretrained(path, encoder_kwargs=sdpa)
    sb = SyntaxBertModel.from_encoder_pretrained(path, gate="head", syntax_layers=[0, 4])
    with torch.no_grad():
        sb.gate.weight.fill_(0.25)
    assert plain.config._attn_implementation == "sdpa" and sg.encoder.config._attn_implementation == "sdpa"
    return [
        ViewModel("plain", "plain", plain, path),
        ViewModel("sg", "sgnet", sg, path),
        ViewModel("sb", "syntax_bert", sb, path),
    ]


@pytest.fixture(scope="module")
def view(sdpa_models, annotator):
    from syntaxformer.analysis.viewer import build_view

    return build_view(TEXT, models=sdpa_models, parser=annotator)


def test_viewer_collects_attention_of_sdpa_models_equal_to_an_eager_pass(view, sdpa_models):
    from transformers import AutoModel

    plain, sg, sb = view.data["models"]
    L = len(view.data["tokens"])
    assert [m["system"] for m in (plain, sg, sb)] == ["plain", "sgnet", "syntax_bert"]
    assert [x["name"] for x in plain["layers"]] == [str(i) for i in range(6)]
    assert [x["name"] for x in sg["layers"]] == [str(i) for i in range(6)] + ["SG"]
    assert [x["name"] for x in sb["layers"]] == [str(i) for i in range(6)]
    for m in (plain, sg, sb):
        for layer in m["layers"]:
            a = torch.tensor(layer["attn"])  # (H, L, L)
            assert a.shape == (12, L, L)
            torch.testing.assert_close(a.sum(-1), torch.ones(12, L), atol=0.02, rtol=0)  # 3 decimals each
    # the models are back on their own implementation
    assert sdpa_models[0].model.config._attn_implementation == "sdpa"
    assert sdpa_models[1].model.encoder.config._attn_implementation == "sdpa"
    # an independent eager pass of the checkpoint gives the plain encoder's maps
    eager = AutoModel.from_pretrained(minilm_path(), attn_implementation="eager").eval()
    ids = torch.tensor([view.data["input_ids"]])
    with torch.no_grad():
        ref = eager(input_ids=ids, output_attentions=True).attentions
    for layer, r in zip(plain["layers"], ref):
        torch.testing.assert_close(torch.tensor(layer["attn"]), r[0], atol=6e-4, rtol=0)
    # Syntax-BERT's layers without sub-networks (1, 2, 3, 5) are the plain encoder's until layer 0's change
    # propagates: layer 0 with a 0.25 gate differs from the plain encoder
    assert not torch.allclose(torch.tensor(sb["layers"][0]["attn"]), torch.tensor(plain["layers"][0]["attn"]))


def test_viewer_topical_weights_and_gates(view):
    sb = view.data["models"][2]
    layers = sb["topical"]["layers"]
    assert [x["layer"] for x in layers] == [0, 4]  # only the syntax layers
    for x in layers:
        w, cand = torch.tensor(x["weights"]), torch.tensor(x["candidate"])
        assert w.shape == cand.shape and w.shape[1] == len(x["columns"]) > 0
        rows = cand.any(-1)
        torch.testing.assert_close(w.sum(-1)[rows], torch.ones(int(rows.sum())), atol=0.02, rtol=0)
        assert (w[~cand.bool()] == 0).all()
        kinds = {c["kind"] for c in x["columns"]}
        assert kinds <= {"child", "parent", "sibling", "pairwise"} and {"child", "parent"} <= kinds
    assert sb["gate"] == [[0.25] * 12] * 6


def test_viewer_trees_and_masks_match_the_library(view, annotator, minilm_tokenizer):
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.collate import SyntaxCollator
    from syntaxformer.masks.sdoi import sdoi_mask

    d = view.data
    (doc,) = annotator.annotate([TEXT])
    (s,) = doc.sentences
    assert [w["text"] for w in d["words"]] == s.words
    assert [w["head"] for w in d["words"]] == s.heads
    assert d["sentences"][0]["derived"] is True  # spaCy gives no constituency tree: read off the dependencies

    def leaves(node):
        return [node["leaf"]] if "leaf" in node else [x for c in node["children"] for x in leaves(c)]

    assert leaves(d["sentences"][0]["tree"]) == list(range(len(s.words)))
    window = SyntaxAligner(minilm_tokenizer)(doc)[0]
    batch = SyntaxCollator()([window])
    assert d["tokens"] == minilm_tokenizer.convert_ids_to_tokens(window.input_ids.tolist())
    assert d["token_word"] == window.word_index.tolist()
    assert torch.equal(
        torch.tensor(d["sdoi"]).bool(), sdoi_mask(batch["dep_tin"], batch["dep_tout"], batch["syntax_tree"])[0]
    )
    assert set(d["groups"]) == {"dependency", "constituency"}


def test_viewer_page_is_self_contained_and_shows_in_jupyter(view):
    page = view.html()
    assert "/*__SYNTAXFORMER_VIEW_DATA__*/" not in page
    assert _page_data(page)["tokens"] == view.data["tokens"]
    # no network: no external script / style / image, the only URL is the SVG namespace
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(http", page)
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    inline = view._repr_html_()
    assert inline.startswith("<iframe srcdoc=") and "&lt;svg" not in inline[:50]


def test_viewer_escapes_script_end_in_texts(sdpa_models, annotator):
    from syntaxformer.analysis.viewer import build_view

    view = build_view("A </script> tag ends nothing here.", models=sdpa_models[:1], parser=annotator)
    page = view.html()
    assert page.count("</script>") == 2  # the data element's and the code's
    assert "</script>" in _page_data(page)["texts"][0]


def test_viewer_pair_marks_the_second_text(sdpa_models, annotator):
    from syntaxformer.analysis.viewer import build_view
    from syntaxformer.masks.relations import group_id

    view = build_view("A man plays a guitar.", "Someone makes music.", models=sdpa_models, parser=annotator)
    d = view.data
    assert {w["segment"] for w in d["words"]} == {0, 1} and len(d["sentences"]) == 2
    pairwise = group_id("pairwise", max_distance=d["max_distance"])
    assert (torch.tensor(d["groups"]["dependency"]) == pairwise).any()


def train_tiny_run(run, tiny_model) -> None:
    """A gated Syntax-BERT run folder of `train` on 8 SST-2 sentences with the tiny model (a few seconds)."""
    from syntaxformer.training import RunConfig
    from syntaxformer.training.run import train
    from tests.conftest import data_path

    data_path("glue", "SST-2")
    train(
        RunConfig(
            task="sst2",
            model_type="syntax_bert",
            model_name_or_path=tiny_model,
            model={"gate": "layer"},
            max_train_samples=8,
            max_eval_samples=4,
            max_length=32,
            num_train_epochs=1,
            per_device_train_batch_size=4,
            learning_rate=1e-2,
            save_strategy="no",
            eval_strategy="no",
            disable_tqdm=True,
            features_cache=False,
            output_dir=str(run),
            seed=1,
        )
    )


@pytest.mark.slow
def test_viewer_loads_a_trained_run_folder_and_shows_its_prediction(
    tmp_path, tiny_model, annotator, one_thread, capsys
):
    """A run folder of `train` (a gated Syntax-BERT on 8 SST-2 sentences, tiny model): its saved task model, the
    plain encoder it was built from, its trained gates, and its prediction for the text as `predict` makes it."""
    from syntaxformer.analysis.viewer import build_view, load_view_models
    from syntaxformer.inference import Predictor

    run = tmp_path / "run"
    train_tiny_run(run, tiny_model)
    models = load_view_models([str(run)])
    assert [m.system for m in models] == ["plain", "syntax_bert"]
    assert models[0].source == tiny_model  # the plain encoder is the checkpoint the run was built from
    assert type(models[1].model).__name__ == "SyntaxBertForSequenceClassification"
    gates = models[1].model.base_model.gate.weight.detach()
    assert gates.abs().sum() > 0  # trained away from zero
    view = build_view(TEXT, models=models, parser=annotator)
    sb = view.data["models"][1]
    assert torch.allclose(torch.tensor(sb["gate"]), gates, atol=5e-4)
    assert len(sb["layers"]) == 2 and len(sb["layers"][0]["attn"]) == 4 and sb["name"].startswith("run (")

    # the prediction: the run's own Predictor (loaded afresh from the folder) gives the same label and scores
    assert view.data["models"][0]["prediction"] is None  # the plain encoder has no head
    prediction = sb["prediction"]
    assert prediction["head"] == "sequence_classification" and prediction["note"] is None
    assert prediction["max_length"] == 32 and "en_core_web_sm" in prediction["parser"]
    (expected,) = Predictor.from_run(run, parse_cache=False).predict([TEXT])
    record = prediction["record"]
    assert record["label"] == expected["label"] and set(record["scores"]) == {"negative", "positive"}
    for name, p in expected["scores"].items():
        assert record["scores"][name] == pytest.approx(p, abs=1e-5)
    assert record["score"] == max(record["scores"].values())
    assert "text" not in record
    # the model is left as it was: on the CPU, in eval mode
    assert not models[1].model.training and next(models[1].model.parameters()).device.type == "cpu"

    # the command line prints it
    out = tmp_path / "page.html"
    from syntaxformer.cli import main

    assert main(["show", TEXT, "--model", str(run), "--output", str(out), "--no-cache"]) == 0
    page = _page_data(out.read_text(encoding="utf-8"))
    assert page["models"][1]["prediction"]["record"]["label"] == expected["label"]
    assert f"predicted {expected['label']} (p = " in capsys.readouterr().out


def test_viewer_marks_phrases_derived_from_the_dependency_tree(view, sdpa_models, tmp_path, annotator):
    """spaCy gives no constituency tree: every phrase of the tree the page draws is marked derived (the
    pre-terminals are the tagger's tags, not derived), and the page says what derived means. A tree given by the
    parser (a pre-parsed JSONL file with a constituency tree) has no derived node."""
    import dataclasses

    from syntaxformer.analysis.viewer import build_view
    from syntaxformer.data.constituency import Tree

    def nodes(node):
        if "leaf" in node:
            return []
        return [node] + [x for c in node["children"] for x in nodes(c)]

    tree = view.data["sentences"][0]["tree"]
    phrases = [n for n in nodes(tree) if any("leaf" not in c for c in n["children"])]
    tags = [n for n in nodes(tree) if all("leaf" in c for c in n["children"])]
    assert phrases and tags
    assert all(n["derived"] for n in phrases) and not any(n["derived"] for n in tags)
    assert all(n["label"].endswith("P") for n in phrases)  # NOUNP, VERBP, ...: the head's tag + P
    assert {n["label"] for n in tags} <= {w["pos"] for w in view.data["words"]}
    page = view.html()
    assert "derived from the dependency tree" in page and "not a constituency parse" in page

    text = "Dogs bark loudly."
    (doc,) = annotator.annotate([text])
    gold = Tree.from_string("(S (NP (NNS Dogs)) (VP (VBP bark) (ADVP (RB loudly))) (. .))")
    parses = tmp_path / "gold.jsonl"
    doc.sentences[0] = dataclasses.replace(doc.sentences[0], tree=gold)
    parses.write_text(json.dumps(doc.to_dict()) + "\n")
    given = build_view(text, models=sdpa_models[:1], parser=f"jsonl:{parses}")
    (sentence,) = given.data["sentences"]
    assert sentence["derived"] is False and sentence["tree"]["label"] == "S"
    assert not any(n["derived"] for n in nodes(sentence["tree"]))


def test_viewer_says_how_much_of_a_long_text_it_shows(sdpa_models, annotator, minilm_tokenizer, caplog):
    """A text longer than max_length is cut: the page data holds tokens shown and in the whole text (counted here
    by the tokenizer itself) and words shown, and a warning names the option that raises the limit."""
    import logging

    from syntaxformer.analysis.viewer import build_view

    text = " ".join([TEXT] * 3)
    total = len(minilm_tokenizer(text)["input_ids"])
    with caplog.at_level(logging.WARNING, logger="syntaxformer.analysis.viewer"):
        view = build_view(text, models=sdpa_models[:1], parser=annotator, max_length=16)
    n = view.data["length"]
    assert total > 16 and n == {
        "shown": 16,
        "total": total,
        "words_shown": len({w for w in view.data["token_word"] if w >= 0}),
        "words_total": len(view.data["words"]),
        "max_length": 16,
        "cut": True,
    }
    assert n["words_shown"] < n["words_total"] and len(view.data["tokens"]) == 16
    assert f"first 16 of {total} tokens" in caplog.text and "--max-length" in caplog.text
    page = view.html()
    assert "--max-length" in page and "Text cut" in page
    whole = build_view(text, models=sdpa_models[:1], parser=annotator, max_length=128)
    assert whole.data["length"]["cut"] is False and whole.data["length"]["shown"] == total
    assert whole.data["length"]["words_shown"] == whole.data["length"]["words_total"]


def test_viewer_rejects_bad_inputs(tmp_path, annotator):
    from syntaxformer.analysis.viewer import build_view, load_view_models
    from syntaxformer.errors import ConfigError, InputError

    with pytest.raises(InputError, match="text A is empty"):
        build_view("   ", models=[], parser=annotator)
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(ConfigError, match="without a saved syntaxformer model"):
        load_view_models([str(tmp_path)])
    with pytest.raises(ConfigError, match="neither a run folder nor a loadable encoder"):
        load_view_models([str(tmp_path / "missing")])


def test_show_cli_writes_the_page(tmp_path, tiny_model, capsys, monkeypatch):
    from syntaxformer.cli import main

    out = tmp_path / "page.html"
    assert main(["show", "Dogs bark loudly.", "--model", tiny_model, "--output", str(out), "--no-cache"]) == 0
    data = _page_data(out.read_text(encoding="utf-8"))
    assert [m["system"] for m in data["models"]] == ["plain", "sgnet", "syntax_bert"]
    assert all(m["prediction"] is None for m in data["models"])  # untrained: no head, no prediction
    assert "wrote" in capsys.readouterr().out
    cut = tmp_path / "cut.html"
    assert main(["show", "Dogs bark loudly at night.", "--model", tiny_model, "-o", str(cut), "--max-length", "5"]) == 0
    assert "5 of 8 tokens: the text is cut, --max-length raises the limit" in capsys.readouterr().out
    assert main(["show", "Dogs bark.", "--model", str(tiny_model), "--output", str(out)]) == 1  # exists
    assert "--overwrite" in capsys.readouterr().err
    assert main(["show", "Dogs bark.", "--model", str(tmp_path / "nope"), "--output", str(out), "--overwrite"]) == 1
    assert "neither a run folder nor a loadable encoder" in capsys.readouterr().err


def test_viewer_sgnet_only_page_has_no_syntax_bert_parts(sdpa_models, annotator):
    """A page of the plain encoder and SG-Net: no Syntax-BERT relation groups (the page hides their panels, their
    legend and the topical section); the encoder is named by its model, not by the package folder it ships in."""
    from syntaxformer.analysis.viewer import _short, build_view
    from syntaxformer.defaults import default_hf_model

    page = build_view(TEXT, models=sdpa_models[:2], parser=annotator)
    assert page.data["groups"] == {} and [m["system"] for m in page.data["models"]] == ["plain", "sgnet"]
    assert all(m["topical"] is None and not m.get("gate") for m in page.data["models"])
    html = page.html()
    assert 'id="topical-section"' in html and "Object.keys(DATA.groups).length" in html
    assert _short(default_hf_model()) == "all-MiniLM-L6-v2" and _short("/x/my-encoder") == "my-encoder"
    # with a Syntax-BERT model the groups are there again
    assert set(build_view(TEXT, models=sdpa_models[1:], parser=annotator).data["groups"]) == {
        "dependency",
        "constituency",
    }
