"""A task defined outside the package, in one file, as a user would write it: a 2-class sentiment task read from
``train.csv`` / ``dev.csv`` (columns ``text,label``), over real sentences (SST-2 dev, GLUE). Registered on
import; :func:`write_csv` writes the files."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from syntaxformer.data.examples import TaskData, TaskExample, file_fingerprint
from syntaxformer.tasks import Predictions, Task, TaskContext, register_task
from syntaxformer.tasks.featurize import build_features

SENTENCES = [
    ("it 's a charming and often affecting journey .", 1),
    ("unflinchingly bleak and desperate", 0),
    ("allows us to hope that nolan is poised to embark a major career as a commercial yet inventive filmmaker .", 1),
    (
        "the acting , costumes , music , cinematography and sound are all astounding given the production 's "
        "austere locales .",
        1,
    ),
    ("it 's slow -- very , very slow .", 0),
    (
        "although laced with humor and a few fanciful touches , the film is a refreshingly serious look at young "
        "women .",
        1,
    ),
    ("a sometimes tedious film .", 0),
    ("or doing last year 's taxes with your ex-wife .", 0),
    ("you do n't have to know about music to appreciate the film 's easygoing blend of comedy and romance .", 1),
    (
        "in exactly 89 minutes , most of which passed as slowly as if i 'd been sitting naked on an igloo , "
        "formula 51 sank from quirky to jerky to utter turkey .",
        0,
    ),
    ("the mesmerizing performances of the leads keep the film grounded and keep the audience riveted .", 1),
    (
        "it takes a strange kind of laziness to waste the talents of robert forster , anne meara , eugene levy , and "
        "reginald veljohnson all in the same movie .",
        0,
    ),
]


def write_csv(folder: Path) -> Path:
    """``train.csv`` (the first 8 sentences) and ``dev.csv`` (the last 4) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", SENTENCES[:8]), ("dev", SENTENCES[8:])):
        with open(folder / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    return folder


class FilmReview(Task):
    """Positive / negative film reviews from CSV files; option ``min_words`` drops shorter texts."""

    name = "film-review"
    title = "Film review"
    metric_names = ("accuracy",)

    def __init__(self, min_words: int = 1):
        self.min_words = int(min_words)

    def options(self) -> dict[str, Any]:
        return {"min_words": self.min_words}

    def model_options(self) -> dict[str, Any]:
        return {"num_labels": 2, "problem_type": "single_label_classification"}

    def load_split(self, split: str, data: Mapping[str, Any]) -> TaskData:
        path = Path(data.get(f"{split}_file") or Path(data["data_dir"]) / f"{split}.csv")
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        examples = [
            TaskExample(guid=f"{split}-{i}", text_a=r["text"], label=int(r["label"]))
            for i, r in enumerate(rows)
            if len(r["text"].split()) >= self.min_words
        ]
        return TaskData(examples, str(path), file_fingerprint([path]), len(examples))

    def featurize(self, data: TaskData, context: TaskContext, split: str) -> Any:
        return build_features(self.name, data, context, split)

    def postprocess(self, data: TaskData, features: Any, raw: Any, auxiliary: Any = None) -> Predictions:
        logits = raw[0] if isinstance(raw, tuple) else raw
        return Predictions(ids=list(features.guids), values=np.asarray(logits).argmax(-1).tolist())

    def compute_metrics(self, data: TaskData, predictions: Predictions) -> dict[str, float]:
        gold = [e.label for e in data.examples]
        return {"accuracy": float(np.mean([p == y for p, y in zip(predictions.values, gold)]))}


register_task(FilmReview)
