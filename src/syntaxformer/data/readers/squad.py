"""SQuAD (1.1 / 2.0): the json reader, the hub rows, counts, gold answers and the deterministic article split.

Pipeline::

    examples = read_squad("dev-v2.0.json")                       # one SquadExample per question
    train, held = split_by_article(examples, held_out_fraction=0.1)

Featurization, decoding and the task itself live in :mod:`syntaxformer.tasks.squad`; the metric in
:mod:`syntaxformer.tasks.squad_metric`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from syntaxformer.errors import ConfigError
from syntaxformer.utils import open_text

__all__ = ["SquadExample", "read_squad", "examples_from_rows", "load_squad_hub", "squad_counts", "gold_answers",
           "split_by_article"]


@dataclass
class SquadExample:
    """One question over one passage.

    Attributes:
        qid: the question id.
        title: the article title (the unit of :func:`split_by_article`).
        context: the passage text, exactly as in the json (answers index into it).
        question: the question text.
        answers: gold answers ``{"text", "answer_start"}`` (empty for an unanswerable question).
        is_impossible: the question has no answer in the passage.
        plausible_answers: SQuAD 2.0's ``plausible_answers`` of unanswerable questions (not used for labels).
    """

    qid: str
    title: str
    context: str
    question: str
    answers: list[dict[str, Any]] = field(default_factory=list)
    is_impossible: bool = False
    plausible_answers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def answer_texts(self) -> list[str]:
        """Gold texts for the metric (``[""]`` when unanswerable)."""
        return [a["text"] for a in self.answers] if self.answers and not self.is_impossible else [""]


def read_squad(source: str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[SquadExample]:
    """Read SQuAD (1.1 or 2.0) json: articles -> paragraphs -> qas.

    Args:
        source: a path to the json, the parsed json (dict with ``data``) or its ``data`` list.

    Returns:
        one :class:`SquadExample` per question, in file order. A question without ``is_impossible`` (SQuAD 1.1)
        is unanswerable iff it has no answers.
    """
    if isinstance(source, (str, Path)):
        with open_text(source) as f:
            source = json.load(f)
    articles = source["data"] if isinstance(source, Mapping) else source
    out: list[SquadExample] = []
    for a_idx, article in enumerate(articles):
        title = article.get("title", f"article-{a_idx}")
        for para in article["paragraphs"]:
            context = para["context"]
            for qa in para["qas"]:
                answers = [{"text": a["text"], "answer_start": int(a["answer_start"])} for a in qa.get("answers", [])]
                impossible = bool(qa.get("is_impossible", not answers))
                out.append(SquadExample(
                    qid=qa["id"], title=title, context=context, question=qa["question"],
                    answers=[] if impossible else answers, is_impossible=impossible,
                    plausible_answers=list(qa.get("plausible_answers", []))))
    return out


def examples_from_rows(rows: Any) -> list[SquadExample]:
    """Examples from Hugging Face ``datasets`` rows of SQuAD (``id``, ``title``, ``context``, ``question``,
    ``answers = {"text": [...], "answer_start": [...]}``); no answer = unanswerable."""
    out = []
    for r in rows:
        ans = r.get("answers") or {"text": [], "answer_start": []}
        answers = [{"text": t, "answer_start": int(s)} for t, s in zip(ans["text"], ans["answer_start"])]
        out.append(SquadExample(qid=r["id"], title=r.get("title", ""), context=r["context"], question=r["question"],
                                answers=answers, is_impossible=not answers))
    return out


def load_squad_hub(name: str = "rajpurkar/squad_v2", split: str = "train", **kwargs: Any) -> list[SquadExample]:
    """Load SQuAD by name through the ``datasets`` hub (needs ``datasets`` and a network or its cache)."""
    from datasets import load_dataset

    return examples_from_rows(load_dataset(name, split=split, **kwargs))


def squad_counts(examples: Sequence[SquadExample]) -> dict[str, int]:
    """``articles``, ``paragraphs``, ``questions``, ``answerable``, ``unanswerable``."""
    return {
        "articles": len({e.title for e in examples}),
        "paragraphs": len({(e.title, e.context) for e in examples}),
        "questions": len(examples),
        "answerable": sum(not e.is_impossible for e in examples),
        "unanswerable": sum(e.is_impossible for e in examples),
    }


def gold_answers(examples: Sequence[SquadExample]) -> dict[str, list[str]]:
    """``qid -> gold texts`` for :func:`syntaxformer.tasks.squad_metric.squad_evaluate`."""
    return {e.qid: e.answer_texts for e in examples}


def split_by_article(examples: Sequence[SquadExample], held_out_fraction: float = 0.1,
                     seed: int = 0) -> tuple[list[SquadExample], list[SquadExample]]:
    """Deterministic train / held-out split by article, so no passage is in both parts.

    Articles are ordered by ``sha1(f"{seed}:{title}")`` (independent of file order and of Python's hash seed); the
    first ``ceil(held_out_fraction * n_articles)`` articles (at least 1 and at most n-1 when there are ≥ 2
    articles and the fraction is > 0) are held out. Question order within each part is the input order.
    """
    if not 0.0 <= held_out_fraction < 1.0:
        raise ConfigError(f"held_out_fraction must lie in [0, 1) (the share of articles held out), got "
                                f"{held_out_fraction}")
    titles = list(dict.fromkeys(e.title for e in examples))
    ranked = sorted(titles, key=lambda t: hashlib.sha1(f"{seed}:{t}".encode("utf-8")).hexdigest())
    n_held = math.ceil(held_out_fraction * len(titles)) if held_out_fraction > 0 else 0
    if held_out_fraction > 0 and len(titles) >= 2:
        n_held = min(max(n_held, 1), len(titles) - 1)
    held = set(ranked[:n_held])
    return [e for e in examples if e.title not in held], [e for e in examples if e.title in held]
