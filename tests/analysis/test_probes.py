"""Structural and linear probes (:mod:`syntaxformer.analysis.probes`): the minimum spanning tree against Prim and a
brute-force search, tree distances and Spearman against the references in ``reference_probes.py``, the metrics on
hand-computed cases, probes that must recover a tree encoded in the vectors, the EWT document split, word vectors
of the real MiniLM (the gated Syntax-BERT at init gives the plain encoder's), and ``syntaxformer probe``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from syntaxformer.analysis import probes
from syntaxformer.analysis.probe_metrics import (
    minimum_spanning_tree_edges,
    root_accuracy,
    spearman_by_length,
    tree_distance_matrix,
    uuas,
)
from syntaxformer.analysis.probe_vectors import load_probed_model, word_representations
from syntaxformer.analysis.probes import (
    ProbeSettings,
    linear_probe_accuracy,
    load_probe_data,
    predict_structural,
    split_documents,
    train_structural_probe,
)
from syntaxformer.cli import main
from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import ConfigError, DataError
from tests.analysis import reference_probes as ref
from tests.conftest import data_path, minilm_path


def _sentence(heads, upos=None, words=None, deprels=None, **kw):
    n = len(heads)
    return Sentence(
        words=words or [f"w{i}" for i in range(n)],
        heads=list(heads),
        upos=upos or ["NOUN"] * n,
        deprels=deprels or ["dep"] * n,
        **kw,
    )


# -- minimum spanning tree ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 12])
def test_probes_mst_matches_prim_on_random_matrices(n):
    rng = np.random.default_rng(n)
    for _ in range(30):
        a = rng.random((n, n))
        d = a + a.T
        assert minimum_spanning_tree_edges(d) == ref.prim_edges(d)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_probes_mst_has_the_brute_force_minimum_weight(n):
    rng = np.random.default_rng(10 + n)
    for _ in range(10):
        a = rng.normal(size=(n, n))  # negative weights too
        d = a + a.T
        edges = minimum_spanning_tree_edges(d)
        assert len(edges) == n - 1
        assert sum(d[i, j] for i, j in edges) == pytest.approx(ref.brute_force_minimum_weight(d))


def test_probes_mst_keeps_zero_distances_as_edges():
    # scipy reads a 0 as "no edge": two identical vectors (predicted distance 0) must still be joined
    d = np.array([[0.0, 0.0, 5.0], [0.0, 0.0, 1.0], [5.0, 1.0, 0.0]])
    assert minimum_spanning_tree_edges(d) == {(0, 1), (1, 2)}
    assert minimum_spanning_tree_edges(np.zeros((1, 1))) == set()


# -- tree targets ---------------------------------------------------------------------------------------------
def test_probes_tree_distance_matrix_matches_reference():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 9, 20):
        heads = ref.random_heads(n, rng)
        d = tree_distance_matrix(heads)
        assert d.tolist() == [[ref.tree_distance(heads, i, j) for j in range(n)] for i in range(n)]


# -- metrics on hand-computed cases ---------------------------------------------------------------------------
def test_probes_gold_distances_give_uuas_one():
    rng = np.random.default_rng(1)
    sentences = [_sentence(ref.random_heads(n, rng)) for n in (2, 4, 7, 15)]
    gold = [tree_distance_matrix(s.heads) for s in sentences]
    assert uuas(gold, sentences) == 1.0
    assert spearman_by_length(gold, gold) == pytest.approx(1.0)


def test_probes_uuas_hand_case_and_punctuation():
    # gold: w1 <- w0, w2 <- w1 (root w1), w3 <- w2 ; w4 is punctuation attached to w1
    s = _sentence([1, -1, 1, 2, 1], upos=["NOUN", "VERB", "NOUN", "ADJ", "PUNCT"])
    # predicted: a star around w1 (w3 attached to w1, wrong) and w4 very close to w0 (ignored: punctuation)
    pred = np.full((5, 5), 9.0)
    for i, j, v in [(0, 1, 1.0), (1, 2, 1.0), (1, 3, 1.5), (2, 3, 2.0), (0, 4, 0.1)]:
        pred[i, j] = pred[j, i] = v
    np.fill_diagonal(pred, 0)
    # gold arcs without punctuation: {0-1, 1-2, 2-3}; the MST over w0..w3: {0-1, 1-2, 1-3} -> 2 of 3
    assert uuas([pred], [s]) == pytest.approx(2 / 3)
    # pooled over sentences: 2 of 3 + 1 of 1 (a two-word sentence is always right)
    assert uuas([pred, np.zeros((2, 2))], [s, _sentence([-1, 0])]) == pytest.approx(3 / 4)


def test_probes_root_accuracy_hand_case():
    a = _sentence([1, -1, 1], upos=["PUNCT", "VERB", "NOUN"])
    b = _sentence([-1, 0, 0])
    # a: w0 (punctuation) has the smallest depth but cannot be the root; the smallest among the rest is w1: hit
    # b: the smallest predicted depth is w2, the gold root w0: miss
    assert root_accuracy([np.array([0.0, 0.5, 2.0]), np.array([1.0, 3.0, 0.2])], [a, b]) == 0.5


def test_probes_spearman_matches_scipy_reference_and_lengths():
    rng = np.random.default_rng(2)
    gold, pred, gold_depth, pred_depth = [], [], [], []
    for n in (3, 5, 5, 6, 9, 51):  # 3 and 51 words are outside 5-50 and must not count
        heads = ref.random_heads(n, rng)
        d = tree_distance_matrix(heads)
        noise = rng.random((n, n)) * 3
        gold.append(d)
        pred.append(d + noise + noise.T)
        depth = np.array([len(ref.path_to_root(heads, i)) - 1 for i in range(n)])
        gold_depth.append(depth)
        pred_depth.append(depth + rng.random(n) * 2)
    assert spearman_by_length(pred, gold) == pytest.approx(ref.distance_spearman(pred, gold), abs=1e-12)
    assert spearman_by_length(pred_depth, gold_depth) == pytest.approx(
        ref.depth_spearman(pred_depth, gold_depth), abs=1e-12
    )
    assert np.isnan(spearman_by_length(pred[:1], gold[:1]))  # only a 3-word sentence: no length in 5-50


# -- the probes learn what the vectors encode -----------------------------------------------------------------
def _pythagorean(heads, dim, rotation):
    """Word i's vector: the sum of one orthonormal direction per arc on its path to the root, so that
    ||h_i - h_j||² is the tree distance and ||h_i||² the depth (H&M's Pythagorean embedding)."""
    v = np.zeros((len(heads), dim))
    for i in range(len(heads)):
        for node in ref.path_to_root(heads, i)[:-1]:
            v[i, node] = 1.0
    return (v @ rotation).astype(np.float32)


def test_probes_recover_a_tree_encoded_in_the_vectors(one_thread):
    rng = np.random.default_rng(3)
    dim = 16
    rotation = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    sents = [_sentence(ref.random_heads(int(rng.integers(5, 16)), rng)) for _ in range(120)]
    vecs = [_pythagorean(s.heads, dim, rotation) for s in sents]
    train_s, test_s, train_v, test_v = sents[:80], sents[80:], vecs[:80], vecs[80:]
    settings = ProbeSettings(rank=dim, epochs=60, lr=1e-2, seed=0)
    b = train_structural_probe("distance", train_v, [tree_distance_matrix(s.heads) for s in train_s], settings)
    pred = predict_structural("distance", b, test_v)
    assert uuas(pred, test_s) > 0.95
    assert spearman_by_length(pred, [tree_distance_matrix(s.heads) for s in test_s]) > 0.9
    d = train_structural_probe(
        "depth",
        train_v,
        [np.array([len(ref.path_to_root(s.heads, i)) - 1 for i in range(len(s))]) for s in train_s],
        settings,
    )
    assert root_accuracy(predict_structural("depth", d, test_v), test_s) > 0.95
    # a seed gives one result
    assert torch.equal(
        b, train_structural_probe("distance", train_v, [tree_distance_matrix(s.heads) for s in train_s], settings)
    )
    with pytest.raises(ConfigError, match="'distance' or 'depth'"):
        train_structural_probe("width", train_v, [], settings)


def test_probes_linear_probe_separable_and_unseen_labels(one_thread):
    rng = np.random.default_rng(4)
    centers = rng.normal(size=(3, 8)) * 5
    y = rng.integers(0, 3, size=300)
    x = centers[y] + rng.normal(size=(300, 8)) * 0.1
    names = np.array(["A", "B", "C"])
    settings = ProbeSettings(epochs=20, seed=0)
    assert linear_probe_accuracy(x[:200], names[y[:200]].tolist(), x[200:], names[y[200:]].tolist(), settings) == 1.0
    # a label never seen in training counts as an error
    test_y = names[y[200:]].tolist()
    test_y[0] = "UNSEEN"
    assert linear_probe_accuracy(x[:200], names[y[:200]].tolist(), x[200:], test_y, settings) == 0.99


# -- data -----------------------------------------------------------------------------------------------------
def test_probes_split_documents_every_fourth_document():
    sents = []
    for d in range(9):
        for k in range(d % 3 + 1):
            sents.append(_sentence([-1], metadata={"newdoc id": f"doc{d}"} if k == 0 else {}))
    train, test, train_ids, test_ids = split_documents(sents, 4)
    assert test_ids == ["doc3", "doc7"] and train_ids == ["doc0", "doc1", "doc2", "doc4", "doc5", "doc6", "doc8"]
    assert [len(d) for d in test] == [1, 2] and sum(map(len, train)) + 3 == len(sents)
    with pytest.raises(ConfigError, match="test_every"):
        split_documents(sents, 1)


def test_probes_ud_ewt_dev_split():
    path = data_path("ud_ewt", "en_ewt-ud-dev.conllu")
    data = load_probe_data(path, max_train_sentences=None)
    assert data.info["documents"] == {"train": 239, "test": 79}
    assert data.info["sentences"] == {"train": 1512, "test": 489}
    assert not set(data.train_documents) & set(data.test_documents)
    assert data.test_documents[0] == "weblog-blogspot.com_marketview_20050210075500_ENG_20050210_075500"
    small = load_probe_data(path, max_train_sentences=100, seed=0)
    again = load_probe_data(path, max_train_sentences=100, seed=0)
    assert [s.sent_id for s in small.train] == [s.sent_id for s in again.train] and len(small.train) == 100
    assert {s.sent_id for s in small.train} <= {s.sent_id for s in data.train}


# -- word vectors of real models ------------------------------------------------------------------------------
@pytest.mark.slow
def test_probes_word_vectors_mean_first_and_multiword_tokens(one_thread):
    probed = load_probed_model(minilm_path())
    s = Sentence(
        words=["I", "can", "not", "believe", "it"],
        heads=[3, 3, 3, -1, 3],
        text="I cannot believe it",
        offsets=[(0, 1), (2, 5), (5, 8), (9, 16), (17, 19)],
    )
    vec, kept = word_representations(probed, [s], ["layer2"], progress=False)
    first, _ = word_representations(probed, [s], ["layer2"], word_vector="first", progress=False)
    enc = probed.tokenizer("I cannot believe it", return_tensors="pt")
    with torch.no_grad():
        h = probed.net(**enc, output_hidden_states=True).hidden_states[2][0]  # (L, H)
    pieces = probed.tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    assert kept == [0] and vec["layer2"][0].shape == (5, h.shape[1])
    believe = [k for k, p in enumerate(pieces) if p in ("believe",) or p.startswith("##")]
    cannot = [k for k, p in enumerate(pieces) if p.startswith("can")]
    assert np.allclose(vec["layer2"][0][3], h[believe].mean(0).numpy(), atol=1e-5)
    assert np.allclose(first["layer2"][0][3], h[believe[0]].numpy(), atol=1e-5)
    # "can" and "not" share what the tokenizer made of "cannot"
    assert np.allclose(vec["layer2"][0][1], h[cannot].mean(0).numpy(), atol=1e-5)
    assert np.allclose(vec["layer2"][0][2], h[cannot].mean(0).numpy(), atol=1e-5)
    with pytest.raises(ConfigError, match="unknown layer"):
        word_representations(probed, [s], ["layer9"], progress=False)


@pytest.mark.slow
def test_probes_gated_syntax_bert_at_init_is_the_plain_encoder(one_thread):
    sents = load_probe_data(
        data_path("ud_ewt", "en_ewt-ud-dev.conllu"), max_train_sentences=6, max_test_sentences=2
    ).train
    plain, _ = word_representations(load_probed_model(minilm_path()), sents, progress=False)
    gated = load_probed_model(minilm_path(), "syntax_bert", {"gate": "layer"})
    syntax, _ = word_representations(gated, sents, progress=False)
    assert list(syntax) == list(plain) == ["embeddings"] + [f"layer{k}" for k in range(1, 7)]
    for name in plain:
        for a, b in zip(plain[name], syntax[name]):
            assert np.allclose(a, b, atol=1e-4), name
    sgnet = load_probed_model(minilm_path(), "sgnet")
    assert sgnet.layer_names()[-2:] == ["sg", "aggregated"]
    sg, _ = word_representations(sgnet, sents, ["layer6", "sg"], progress=False)
    assert np.allclose(sg["layer6"][0], plain["layer6"][0], atol=1e-4)
    assert not np.allclose(sg["sg"][0], plain["layer6"][0], atol=1e-2)


# -- the command ----------------------------------------------------------------------------------------------
_DOCS = """# newdoc id = d{d}
# sent_id = d{d}-1
# text = The cat saw a dog .
1	The	the	DET	DT	_	2	det	_	_
2	cat	cat	NOUN	NN	_	3	nsubj	_	_
3	saw	see	VERB	VBD	_	0	root	_	_
4	a	a	DET	DT	_	5	det	_	_
5	dog	dog	NOUN	NN	_	3	obj	_	_
6	.	.	PUNCT	.	_	3	punct	_	_

# sent_id = d{d}-2
# text = Dogs bark loudly at night .
1	Dogs	dog	NOUN	NNS	_	2	nsubj	_	_
2	bark	bark	VERB	VBP	_	0	root	_	_
3	loudly	loudly	ADV	RB	_	2	advmod	_	_
4	at	at	ADP	IN	_	5	case	_	_
5	night	night	NOUN	NN	_	2	obl:tmod	_	_
6	.	.	PUNCT	.	_	2	punct	_	_

"""


@pytest.mark.slow
def test_probe_cli_table_and_json(tmp_path, capsys, tiny_model, one_thread):
    conllu = tmp_path / "tiny.conllu"
    conllu.write_text("".join(_DOCS.format(d=d) for d in range(8)), encoding="utf-8")
    out = tmp_path / "probes.json"
    args = ["probe", tiny_model, "--data", str(conllu), "--epochs", "2", "--rank", "4", "--output", str(out)]
    assert main(args + ["--system", "sgnet", "--layers", "layer2,sg,aggregated"]) == 0
    printed = capsys.readouterr().out
    assert "| layer | UUAS |" in printed and "| aggregated |" in printed
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["data"]["test_documents"] == ["d3", "d7"] and result["data"]["sentences"] == {"train": 12, "test": 4}
    rows = result["models"][0]["layers"]
    assert [r["layer"] for r in rows] == ["layer2", "sg", "aggregated"]
    assert set(rows[0]) == {"layer", *probes.METRICS} and 0 <= rows[0]["uuas"] <= 1
    # an existing --output is never replaced silently
    assert main(args + ["--system", "sgnet", "--layers", "layer2"]) == 1
    assert "--overwrite" in capsys.readouterr().err
    # same seed, same numbers
    assert main(args + ["--system", "sgnet", "--layers", "layer2,sg,aggregated", "--overwrite"]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["models"][0]["layers"] == rows
    assert main(args + ["--layers", "sg", "--overwrite"]) == 1  # a plain encoder has no sg layer: one-line error
    assert "unknown layer" in capsys.readouterr().err
    assert main(args + ["--set", "gate", "--overwrite"]) == 1
    assert main(args + ["--set", "gate=layer", "--overwrite"]) == 1  # options without --system
    assert "--system" in capsys.readouterr().err


@pytest.mark.slow
def test_probe_run_folder_of_a_trained_sgnet(tmp_path, monkeypatch, tiny_model, one_thread):
    from syntaxformer.training import RunConfig, train

    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    train(
        RunConfig.from_dict(
            dict(
                task="sst2",
                data_dir=str(data_path("glue", "SST-2")),
                model_name_or_path=tiny_model,
                model_type="sgnet",
                max_train_samples=16,
                max_eval_samples=8,
                max_length=32,
                num_train_epochs=1,
                per_device_train_batch_size=8,
                disable_tqdm=True,
                output_dir=str(run),
                seed=0,
                save_strategy="no",
                eval_strategy="no",
            )
        )
    )
    probed = load_probed_model(run)
    assert probed.system == "sgnet" and probed.description["run"] == str(run)
    assert probed.layer_names() == ["embeddings", "layer1", "layer2", "sg", "aggregated"]
    sents = [_sentence([1, -1, 1], words=["Dogs", "bark", "loudly"])]
    vec, kept = word_representations(probed, sents, ["sg"], progress=False)
    assert kept == [0] and vec["sg"][0].shape == (3, 32)
    (run / "config.json").rename(run / "config.json.bak")  # a run trained with save_model=false
    with pytest.raises(DataError, match="save_model"):
        load_probed_model(run)


@pytest.mark.slow
def test_probes_parser_syntax_changes_only_the_syntax_layers(tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("SYNTAXFORMER_CACHE", str(tmp_path / "cache"))
    sents = load_probe_data(
        data_path("ud_ewt", "en_ewt-ud-dev.conllu"), max_train_sentences=3, max_test_sentences=1
    ).train
    sgnet = load_probed_model(minilm_path(), "sgnet")
    gold, _ = word_representations(sgnet, sents, ["layer6", "sg"], progress=False)
    parsed, _ = word_representations(sgnet, sents, ["layer6", "sg"], syntax="parser", progress=False)
    for a, b in zip(gold["layer6"], parsed["layer6"]):
        assert np.allclose(a, b, atol=1e-5)
    assert any(not np.allclose(a, b, atol=1e-3) for a, b in zip(gold["sg"], parsed["sg"]))
    with pytest.raises(ConfigError, match="syntax"):
        word_representations(sgnet, sents, ["sg"], syntax="silver", progress=False)
