"""Extending syntaxformer from outside the package, as another package would: a fourth syntax system, a parser and a
task, each in a package of its own with one entry point (``syntaxformer.systems`` / ``.annotators`` / ``.tasks``),
put on ``sys.path`` with its distribution metadata (``*.dist-info/METADATA`` + ``entry_points.txt``, what pip
installs), and used through the command line. Every run is then evaluated, predicted and reloaded in a fresh
process that has nothing but the run folder and the installed packages: nothing of the three is registered in code.

The packages' files are the strings below (the system: 2 files + a 7-line spec; the parser: one file; the task: one
file); the docs' extension recipes (docs/architecture.md) are these files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.training.test_custom_training import _TINY, _cli, _env, _sst2_rows, _write_csv

# -- a fourth system: a distance-biased attention layer ------------------------------------------------------------
DISTANCE_CONFIG = '''
from huggingface_hub.dataclasses import strict
from transformers import PretrainedConfig

from syntaxformer.modeling.configuration import Pooling, SyntaxModelConfig, ordered_syntax_inputs


@strict
class DistanceConfig(SyntaxModelConfig):
    """An encoder plus one attention layer whose scores fall with the tree-depth distance of two tokens."""

    model_type = "distance_attention"
    keeps_encoder_attn_implementation = True  # the encoder runs with the attention it was loaded with (sdpa)
    encoder: PretrainedConfig | dict | None = None
    pooling: Pooling = "mean"
    decay: float = 0.5

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        self.resolve_head_defaults(dropout_fallback=0.1)

    @property
    def syntax_inputs(self):  # the batch keys the model reads: featurization makes exactly these
        return ordered_syntax_inputs({"dep_depth", *self.mean_pooling_inputs()})
'''

DISTANCE_MODELING = """
from torch import nn
from transformers import PreTrainedModel

from syntaxformer.modeling.heads import SequenceClassificationHead
from syntaxformer.modeling.configuration import SYNTAX_INPUT_KEYS
from syntaxformer.modeling.heads import ContextualStates
from syntaxformer.modeling.wrapped_encoder import WrappedEncoderMixin
from sfx_distance.configuration import DistanceConfig


class DistancePreTrainedModel(WrappedEncoderMixin, PreTrainedModel):  # from_encoder_pretrained, wrap_encoder
    config_class = DistanceConfig
    base_model_prefix = "distance"
    _supports_sdpa = True
    accepts_loss_kwargs = False

    def build_backbone(self, config, encoder):
        return DistanceModel(config, encoder=encoder)


class DistanceModel(DistancePreTrainedModel):
    syntax_keywords = SYNTAX_INPUT_KEYS

    def __init__(self, config, encoder=None):
        super().__init__(config)
        self.encoder = self.wrap_encoder(config, encoder)
        h = config.hidden_size
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.post_init()

    def contextual_states(self, input_ids=None, attention_mask=None, dep_depth=None, **inputs):
        inputs = {k: v for k, v in inputs.items() if v is not None and k not in SYNTAX_INPUT_KEYS}
        h = self.encoder(input_ids, attention_mask=attention_mask, **inputs).last_hidden_state
        scores = self.query(h) @ self.key(h).transpose(1, 2) / h.shape[-1] ** 0.5  # (B, L, L)
        depth = dep_depth.to(h.dtype)  # (B, L), -1 at special tokens
        scores = scores - self.config.decay * (depth[:, :, None] - depth[:, None, :]).abs()
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, :] == 0, float("-inf"))
        return ContextualStates(hidden=h + scores.softmax(-1) @ self.value(h))

    def forward(self, input_ids=None, attention_mask=None, **inputs):
        return self.contextual_states(input_ids, attention_mask=attention_mask, **inputs).hidden


class DistanceForSequenceClassification(SequenceClassificationHead, DistancePreTrainedModel):
    pass
"""

DISTANCE_SPEC = """
from syntaxformer.registry import SystemSpec

SYSTEM = SystemSpec(
    name="distance",
    config="sfx_distance.configuration:DistanceConfig",
    models={"sequence_classification": "sfx_distance.modeling:DistanceForSequenceClassification"},
    backbone="sfx_distance.modeling:DistanceModel",
    model_type="distance_attention",
    label="distance attention",
)
"""

# -- a parser: every word attaches to the next one ----------------------------------------------------------------
NEXT_PARSER = """
from syntaxformer.data import Annotator, Document, Sentence


class NextWordAnnotator(Annotator):
    source = "next-word"

    def __init__(self, label="next"):
        self.label = label

    def cache_key(self):
        return f"next-word-v1|{self.label}"

    def annotate(self, texts):
        return [Document([self._sentence(text.split())], text=text) for text in texts]

    def annotate_pretokenized(self, words):
        return [self._sentence(list(w)) for w in words]

    def _sentence(self, words):  # word i attaches to word i + 1; the last word is the root
        heads = list(range(1, len(words))) + [-1]
        return Sentence(words, heads, deprels=[self.label] * (len(words) - 1) + ["root"], source=self.source)


def make_parser(arg, **options):
    return NextWordAnnotator(arg or "next")
"""

# -- a task: film reviews from CSV files, positive or negative ----------------------------------------------------
REVIEW_TASK = """
import csv
from pathlib import Path

import numpy as np

from syntaxformer.data.examples import TaskData, TaskExample, file_fingerprint
from syntaxformer.tasks import Predictions, Task
from syntaxformer.tasks.featurize import build_features


class Reviews(Task):
    name = "reviews"
    title = "Film reviews"
    metric_names = ("accuracy",)
    labels = ("negative", "positive")

    def __init__(self, min_words: int = 1):
        self.min_words = int(min_words)

    def options(self):
        return {"min_words": self.min_words}

    def model_options(self):
        return {"num_labels": 2, "problem_type": "single_label_classification"}

    def load_split(self, split, data):
        path = Path(data["data_dir"]) / f"{split}.csv"
        with open(path, encoding="utf-8", newline="") as f:
            rows = [r for r in csv.DictReader(f) if len(r["review"].split()) >= self.min_words]
        examples = [
            TaskExample(guid=f"{split}-{i}", text_a=r["review"], label=self.labels.index(r["sentiment"]))
            for i, r in enumerate(rows)
        ]
        return TaskData(examples, str(path), file_fingerprint([path]), len(examples))

    def featurize(self, data, context, split):
        return build_features(self.name, data, context, split)

    def postprocess(self, data, features, raw, auxiliary=None):
        logits = raw[0] if isinstance(raw, tuple) else raw
        return Predictions(ids=list(features.guids), values=np.asarray(logits).argmax(-1).tolist())

    def compute_metrics(self, data, predictions):
        gold = [e.label for e in data.examples]
        return {"accuracy": float(np.mean([p == y for p, y in zip(predictions.values, gold)]))}
"""

PACKAGES = {
    "sfx-distance": (
        {"sfx_distance/__init__.py": "", "sfx_distance/configuration.py": DISTANCE_CONFIG,
         "sfx_distance/modeling.py": DISTANCE_MODELING, "sfx_distance/spec.py": DISTANCE_SPEC},
        "[syntaxformer.systems]\ndistance = sfx_distance.spec:SYSTEM\n",
    ),
    "sfx-next": ({"sfx_next.py": NEXT_PARSER}, "[syntaxformer.annotators]\nnext = sfx_next:make_parser\n"),
    "sfx-reviews": ({"sfx_reviews.py": REVIEW_TASK}, "[syntaxformer.tasks]\nreviews = sfx_reviews:Reviews\n"),
}  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder with the three packages and their distribution metadata, as pip would install them."""
    root = tmp_path_factory.mktemp("site-packages")
    for dist, (files, entry_points) in PACKAGES.items():
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return root


@pytest.fixture
def work(tmp_path, site):
    """SST-2 sentences as CSV files (``review``, ``sentiment``) in a working folder, and the environment of a fresh
    process that has the packages installed."""
    folder = tmp_path / "work"
    folder.mkdir()
    _write_csv(folder / "train.csv", _sst2_rows(24))
    _write_csv(folder / "dev.csv", _sst2_rows(12, start=24))
    env = _env(tmp_path)
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{site}"
    return folder, env


def _ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _custom(run: str, model: str) -> list[str]:
    return ["--train-file", "train.csv", "--validation-file", "dev.csv", "--text-column", "review",
            "--label-column", "sentiment", "--model", model, "--output-dir", run, *_TINY]  # fmt: skip


_RELOAD = """
import json, sys, torch
import syntaxformer
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer
from syntaxformer.modeling import model_class

run = sys.argv[1]
config = AutoConfig.from_pretrained(run)
model = AutoModelForSequenceClassification.from_pretrained(run).eval()
base = AutoModel.from_pretrained(run).eval()
reference = model_class("distance", "sequence_classification").from_pretrained(run).eval()
tok = AutoTokenizer.from_pretrained(run)
batch = dict(tok(["a fine film .", "dull"], padding=True, return_tensors="pt"))
L = batch["input_ids"].shape[1]
batch["dep_depth"] = torch.tensor([[-1, 2, 1, 0, 1, -1], [-1, 0, -1, -1, -1, -1]])[:, :L]
batch["syntax_tree"] = torch.where(batch["dep_depth"] >= 0, 0, -1)
with torch.no_grad():
    logits, ref = model(**batch).logits, reference(**batch).logits
    states = base(**batch)
# the encoder's attention as `train` builds the model (from the pretrained encoder) and as the run reloads
trained = model_class("distance", "sequence_classification").from_encoder_pretrained(sys.argv[2], num_labels=2)
print(json.dumps({
    "attention": [trained.base_model.encoder.config._attn_implementation,
                  model.base_model.encoder.config._attn_implementation],
    "config": type(config).__module__ + "." + type(config).__name__, "decay": config.decay,
    "model": type(model).__module__ + "." + type(model).__name__, "base": type(base).__name__,
    "same_logits": bool(torch.equal(logits, ref)), "states": list(states.shape),
    "syntax_inputs": list(config.syntax_inputs),
}))
"""


def test_a_fourth_system_from_a_package_trains_evaluates_predicts_and_reloads(tiny_model, work):
    """A distance-biased attention: its own two files, a spec and one entry point. `--model-type distance` is a
    CLI choice, the run records the system and its entry point, metrics name it by its own label, and a fresh
    process evaluates, predicts and loads it with the Auto classes after a plain `import syntaxformer`."""
    folder, env = work
    _ok(_cli(["train", "--model-type", "distance", *_custom("run", tiny_model)], folder, env))
    run = folder / "run"
    record = json.loads((run / "run.json").read_text())
    assert record["system"] == {
        "name": "distance",
        "module": "sfx_distance.spec",
        "entry_point": "sfx-distance: syntaxformer.systems distance = sfx_distance.spec:SYSTEM",
        "model_type": "distance_attention",
    }
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["model_type"] == "distance attention" and metrics["model_family"] == "distance"
    assert metrics["syntax_keys"] == ["syntax_tree", "dep_depth"]  # what the config declares, nothing more
    assert json.loads((run / "config.json").read_text())["model_type"] == "distance_attention"

    elsewhere = folder.parent / "elsewhere"
    elsewhere.mkdir()
    done = _ok(_cli(["evaluate", str(run), "--split", "validation"], elsewhere, env))
    assert json.loads(done.stdout)["scores"]["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
    _ok(_cli(["predict", str(run), "--split", "validation"], elsewhere, env))
    records = [json.loads(line) for line in (run / "predictions_dev.jsonl").read_text().splitlines()]
    assert len(records) == 12 and {r["label"] for r in records} <= {"negative", "positive"}
    done = _ok(subprocess.run([sys.executable, "-c", _RELOAD, str(run), tiny_model], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=600))  # fmt: skip
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {
        "attention": ["sdpa", "sdpa"],  # the same at train and at reload (keeps_encoder_attn_implementation)
        "config": "sfx_distance.configuration.DistanceConfig",
        "decay": 0.5,
        "model": "sfx_distance.modeling.DistanceForSequenceClassification",
        "base": "DistanceModel",
        "same_logits": True,
        "states": [2, loaded["states"][1], 32],
        "syntax_inputs": ["syntax_tree", "dep_depth"],
    }
    # without the package, the run names what is missing
    bare = dict(env, PYTHONPATH=env["PYTHONPATH"].rsplit(":", 1)[0])
    done = _cli(["evaluate", str(run), "--split", "validation"], elsewhere, bare)
    assert done.returncode != 0 and "trained with the system 'distance' defined by sfx-distance: " in done.stderr


def test_a_parser_from_a_package_survives_evaluate_and_predict_in_a_fresh_process(tiny_model, work):
    """`--parser next:` names a scheme of an installed package: training parses with it, run.json records it with
    its entry point, and `evaluate` / `predict` in a fresh process find it again (and parse the same way: same
    scores)."""
    folder, env = work
    token = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3f"
    args = ["--gradient-accumulation-steps", "2", "--hub_token", token]  # the card: batch 8 x 2, no token
    _ok(_cli(["train", "--parser", "next:", *_custom("run", tiny_model), *args], folder, env))
    run = folder / "run"
    record = json.loads((run / "run.json").read_text())
    assert record["annotator"] == {
        "name": "next",
        "module": "sfx_next",
        "entry_point": "sfx-next: syntaxformer.annotators next = sfx_next:make_parser",
        "spec": "next:",
    }
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["parser"].startswith("next-word-v1|next")
    assert metrics["syntax_source"]["dependency"] == "next-word on raw text"  # the parser's own source, no "spaCy"
    card = (run / "README.md").read_text()
    assert "| parser | `next-word` |" in card and "| dependency trees | next-word on raw text |" in card
    assert "spaCy" not in card and token not in card and "--hub_token <REDACTED>" in card
    assert "| effective batch size | 16 (8 per device x 2 accumulation steps x 1 device) |" in card
    assert str(folder) not in card and '"output_dir": "run"' in card  # paths relative to the run's parent
    elsewhere = folder.parent / "elsewhere"
    elsewhere.mkdir()
    done = _ok(_cli(["evaluate", str(run), "--split", "validation"], elsewhere, env))
    assert json.loads(done.stdout)["scores"]["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
    _ok(_cli(["predict", str(run), "--split", "validation"], elsewhere, env))
    assert len((run / "predictions_dev.jsonl").read_text().splitlines()) == 12


def test_a_task_from_a_package_trains_and_evaluates_in_a_fresh_process(tiny_model, work):
    """`--task reviews` names a task of an installed package (with an option set by `--set`); here on the plain
    encoder with first-token pooling, so nothing is parsed. A fresh process evaluates and predicts it."""
    folder, env = work
    args = ["train", "--task", "reviews", "--data-dir", str(folder), "--model-type", "plain", "--set", "pooling=cls",
            "--set", "min_words=2", "--model", tiny_model, "--output-dir", "run", *_TINY]  # fmt: skip
    _ok(_cli(args, folder, env))
    run = folder / "run"
    record = json.loads((run / "run.json").read_text())
    assert record["task"] == {
        "name": "reviews",
        "options": {"min_words": 2},
        "module": "sfx_reviews",
        "entry_point": "sfx-reviews: syntaxformer.tasks reviews = sfx_reviews:Reviews",
    }
    assert record["system"]["name"] == "plain" and record["system"]["model_type"] == "plain_encoder"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["task"] == "reviews" and metrics["model_type"] == "baseline" and metrics["syntax_keys"] == []
    elsewhere = folder.parent / "elsewhere"
    elsewhere.mkdir()
    done = _ok(_cli(["evaluate", str(run), "--split", "dev"], elsewhere, env))
    assert json.loads(done.stdout)["scores"]["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
    _ok(_cli(["predict", str(run), "--split", "dev"], elsewhere, env))
