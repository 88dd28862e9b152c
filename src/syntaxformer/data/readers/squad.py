"""SQuAD (1.1 / 2.0): the json reader, the hub rows, counts, gold answers and the deterministic article split.
Featurization, decoding and the task live in :mod:`syntaxformer.tasks.squad`, the metric in
:mod:`syntaxformer.tasks.squad_metric`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syntaxformer.errors import ConfigError, FormatError
from syntaxformer.utils import open_text

__all__ = ["SquadExample", "example_from_row", "gold_answers", "read_squad", "split_by_article", "squad_counts"]


@dataclass
class SquadExample:
    """One question over one passage (``context``, exactly as in the json: ``answers`` index into it).

    ``title`` is the article's (the unit of :func:`split_by_article`); ``answers`` are ``{"text", "answer_start"}``
    (none for an unanswerable question); ``plausible_answers`` are SQuAD 2.0's for unanswerable questions (not
    used for labels).
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
    """One :class:`SquadExample` per question of SQuAD (1.1 or 2.0) json (articles -> paragraphs -> qas), in file
    order, from a path, the parsed json (dict with ``data``) or its ``data`` list. A question without
    ``is_impossible`` (SQuAD 1.1) is unanswerable iff it has no answers.
    """
    name = str(source) if isinstance(source, (str, Path)) else None
    if isinstance(source, (str, Path)):
        with open_text(source) as f:
            try:
                source = json.load(f)
            except json.JSONDecodeError as e:
                raise FormatError(
                    f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); expected a SQuAD json file", name
                ) from None
    where = "the top level"
    try:
        articles: Any = source["data"] if isinstance(source, Mapping) else source  # checked just below
        _expect(articles, list, where)
        out: list[SquadExample] = []
        for a_idx, article in enumerate(articles):
            where = f"data[{a_idx}]"
            _expect(article, dict, where)
            title = article.get("title", f"article-{a_idx}")
            for p_idx, para in enumerate(_expect(article["paragraphs"], list, where + ".paragraphs")):
                where = f"data[{a_idx}].paragraphs[{p_idx}]"
                context = _expect(_expect(para, dict, where)["context"], str, where + ".context")
                for q_idx, qa in enumerate(_expect(para["qas"], list, where + ".qas")):
                    where = f"data[{a_idx}].paragraphs[{p_idx}].qas[{q_idx}]"
                    _expect(qa, dict, where)
                    answers = []
                    for a in _expect(qa.get("answers", []), list, where + ".answers"):
                        _expect(a, dict, where + ".answers[]")
                        start = a["answer_start"]
                        if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start <= len(context):
                            raise FormatError(
                                f"{where}: answer_start {start!r:.20} is not a position in the context "
                                f"(0..{len(context)})",
                                name,
                            )
                        answers.append(
                            {"text": _expect(a["text"], str, where + ".answers[].text"), "answer_start": start}
                        )
                    impossible = bool(qa.get("is_impossible", not answers))
                    out.append(
                        SquadExample(
                            qid=str(_expect(qa["id"], (str, int), where + ".id")),
                            title=str(title),
                            context=context,
                            question=_expect(qa["question"], str, where + ".question"),
                            answers=[] if impossible else answers,
                            is_impossible=impossible,
                            plausible_answers=list(
                                _expect(qa.get("plausible_answers", []), list, where + ".plausible_answers")
                            ),
                        )
                    )
    except KeyError as e:
        raise FormatError(
            f"{where} lacks the field {e}; expected SQuAD json (data -> paragraphs -> qas)", name
        ) from None
    except _ShapeError as e:
        raise FormatError(str(e), name) from None
    return out


class _ShapeError(Exception):
    """A value of the wrong JSON type; :func:`read_squad` adds the file name."""


def _expect(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise _ShapeError(
            f"{where} is {type(value).__name__} {str(value)[:30]!r}; expected {names} (SQuAD json: "
            "data -> paragraphs -> context, qas -> id, question, answers)"
        )
    return value


def example_from_row(r: Mapping[str, Any]) -> SquadExample:
    """The example of one Hugging Face ``datasets`` row of SQuAD (``id``, ``title``, ``context``, ``question``,
    ``answers = {"text": [...], "answer_start": [...]}``); no answer = unanswerable."""
    ans = r.get("answers") or {"text": [], "answer_start": []}
    answers = [{"text": t, "answer_start": int(s)} for t, s in zip(ans["text"], ans["answer_start"])]
    return SquadExample(
        qid=r["id"],
        title=r.get("title", ""),
        context=r["context"],
        question=r["question"],
        answers=answers,
        is_impossible=not answers,
    )


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


def split_by_article(
    examples: Sequence[SquadExample], held_out_fraction: float = 0.1, seed: int = 0
) -> tuple[list[SquadExample], list[SquadExample]]:
    """Deterministic train / held-out split by article, so no passage is in both parts: the first
    ``ceil(held_out_fraction * n_articles)`` articles in ``sha1(f"{seed}:{title}")`` order (at least 1 and at most
    n-1 when there are ≥ 2 articles and the fraction is > 0) are held out; questions keep their input order."""
    if not 0.0 <= held_out_fraction < 1.0:
        raise ConfigError(
            f"held_out_fraction must lie in [0, 1) (the share of articles held out), got {held_out_fraction}"
        )
    titles = list(dict.fromkeys(e.title for e in examples))
    ranked = sorted(titles, key=lambda t: hashlib.sha1(f"{seed}:{t}".encode()).hexdigest())
    n_held = math.ceil(held_out_fraction * len(titles)) if held_out_fraction > 0 else 0
    if held_out_fraction > 0 and len(titles) >= 2:
        n_held = min(max(n_held, 1), len(titles) - 1)
    held = set(ranked[:n_held])
    return [e for e in examples if e.title not in held], [e for e in examples if e.title in held]
