"""RACE multiple-choice reading comprehension: readers for the original per-passage files, a tarball of them, and
the hub rows; counts per level. Featurization, batching, accuracy and the task live in :mod:`syntaxformer.tasks.race`.
"""

from __future__ import annotations

import dataclasses
import json
import random
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syntaxformer.data.readers.table import decoded_text
from syntaxformer.errors import DataError, FormatError
from syntaxformer.utils import open_text

__all__ = [
    "LEVELS",
    "OPTION_LETTERS",
    "RaceExample",
    "examples_from_hub_rows",
    "load_race_hub",
    "parse_race_record",
    "race_counts",
    "read_race_dir",
    "read_race_file",
    "read_race_tarball",
]

#: The two RACE subsets (RACE-M: middle school, RACE-H: high school).
LEVELS: tuple[str, ...] = ("middle", "high")
#: Option letters, in option order (RACE answers are letters).
OPTION_LETTERS = "ABCDEFGHIJ"


@dataclass
class RaceExample:
    """One multiple-choice question over one passage (``article``).

    ``qid`` is ``"<passage id>#<k>"`` (``k``: the question's 0-based index in the passage file ``passage_id``, e.g.
    ``"middle1011.txt"``); ``level`` ``"middle"`` or ``"high"``; cloze questions keep their ``_`` blank; ``label``
    is the right option's index (``None`` when unknown).
    """

    qid: str
    passage_id: str
    level: str
    article: str
    question: str
    options: list[str]
    label: int | None = None

    @property
    def answer(self) -> str | None:
        """The right option's letter (``"A"`` ...), or ``None``."""
        return None if self.label is None else OPTION_LETTERS[self.label]


def _level_of(name: str) -> str | None:
    return next((level for level in LEVELS if level in name.lower()), None)


def parse_race_record(record: Any, source: str, level: str | None = None) -> list[RaceExample]:
    """Examples of one RACE passage record ``{"article", "questions", "options", "answers", "id"}`` read from
    ``source`` (named in errors); ``level`` (``"middle"`` / ``"high"``) defaults to the one the record id or the
    source path names.

    Raises:
        FormatError: a missing field, an empty passage, unequal numbers of questions / options / answers, fewer
            than two options, or an answer letter that names no option.
    """
    if not isinstance(record, Mapping):
        raise FormatError(
            f"expected a JSON object with article/questions/options/answers, got {type(record).__name__}", source
        )
    missing = [k for k in ("article", "questions", "options", "answers") if k not in record]
    if missing:
        raise FormatError(
            f"RACE record lacks the field(s) {missing}; each file must be one JSON object with "
            "'article', 'questions', 'options', 'answers' (and 'id')",
            source,
        )
    article, questions, options, answers = (record[k] for k in ("article", "questions", "options", "answers"))
    if not isinstance(article, str) or not article.strip():
        raise FormatError("RACE record has an empty 'article' (the passage)", source)
    if not (isinstance(questions, list) and isinstance(options, list) and isinstance(answers, list)):
        raise FormatError("'questions', 'options' and 'answers' must be lists", source)
    if not (len(questions) == len(options) == len(answers)):
        raise FormatError(
            f"{len(questions)} questions, {len(options)} option lists and {len(answers)} answers; "
            "they must be equally many",
            source,
        )
    passage_id = str(record.get("id") or Path(source).name)
    level = level or _level_of(passage_id) or _level_of(source)
    if level not in LEVELS:
        raise FormatError(f"cannot tell the RACE level (middle / high) of passage {passage_id!r}", source)
    out = []
    for k, (q, opts, ans) in enumerate(zip(questions, options, answers)):
        if not (
            isinstance(q, str) and isinstance(opts, list) and len(opts) >= 2 and all(isinstance(o, str) for o in opts)
        ):
            raise FormatError(
                f"question {k}: needs a question string and a list of at least two option strings", source
            )
        letter = ans.strip().upper() if isinstance(ans, str) else ""
        if len(letter) != 1 or not 0 <= OPTION_LETTERS.find(letter) < len(opts):
            raise FormatError(
                f"question {k}: answer {ans!r} is not a letter A..{OPTION_LETTERS[len(opts) - 1]}", source
            )
        label = OPTION_LETTERS.index(letter)
        out.append(RaceExample(f"{passage_id}#{k}", passage_id, level, article, q, list(opts), label))
    return out


def read_race_file(path: str | Path, level: str | None = None) -> list[RaceExample]:
    """The questions of one original RACE passage file (one JSON object per ``.txt`` file)."""
    with open_text(path) as f:
        return _parse_race_text(f.read(), str(path), level)


def _parse_race_text(data: bytes | str, source: str, level: str | None) -> list[RaceExample]:
    """:func:`parse_race_record` of the text (or UTF-8 bytes) of one passage file."""
    try:
        return parse_race_record(json.loads(decoded_text(data, source)), source, level)
    except json.JSONDecodeError as e:
        raise FormatError(
            f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); each RACE file is one JSON object", source
        ) from None


def read_race_dir(folder: str | Path, levels: Sequence[str] = LEVELS) -> list[RaceExample]:
    """All questions of a RACE split folder (``<folder>/{middle,high}/*.txt``), middle first, files sorted by name.

    Raises:
        DataError: the folder or a level sub-folder is missing, or holds no file.
    """
    folder = Path(folder)
    out: list[RaceExample] = []
    for level in levels:
        sub = folder / level
        if not sub.is_dir():
            raise DataError(
                f"RACE folder {sub} not found (expected {folder}/{{middle,high}}/*.txt, the original per-passage files)"
            )
        files = sorted(sub.glob("*.txt"), key=lambda p: (len(p.stem), p.stem))
        if not files:
            raise DataError(f"RACE folder {sub} holds no .txt passage files")
        for f in files:
            out.extend(read_race_file(f, level))
    return out


def read_race_tarball(
    path: str | Path, levels: Sequence[str] = LEVELS, max_questions: int | None = None, seed: int = 0
) -> list[RaceExample]:
    """Questions read straight from a tarball of the original files (``RACE/<split>/{middle,high}/*.txt``), nothing
    extracted; with ``max_questions``, whole passages in a seeded order until that many questions (the last passage
    cut), else the tarball's order."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"RACE tarball {path} not found")
    records: list[tuple[str, str, bytes]] = []  # (member name, level, bytes)
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                if not member.isfile() or not member.name.endswith(".txt"):
                    continue
                level = next((lv for lv in levels if f"/{lv}/" in f"/{member.name}"), None)
                if level is None:
                    continue
                f = tar.extractfile(member)
                if f is not None:
                    records.append((member.name, level, f.read()))
    except tarfile.TarError as e:
        raise FormatError(
            f"not a readable tar archive ({e}); expected the RACE tarball (RACE.tar.gz)", str(path)
        ) from e
    if not records:
        raise DataError(f"tarball {path} holds no RACE .txt files under {'/'.join(levels)} folders")
    if max_questions is not None:
        random.Random(seed).shuffle(records)
    out: list[RaceExample] = []
    for name, level, raw in records:
        out.extend(_parse_race_text(raw, f"{path}:{name}", level))
        if max_questions is not None and len(out) >= max_questions:
            return out[:max_questions]
    return out


def examples_from_hub_rows(rows: Iterable[Mapping[str, Any]], level: str | None = None) -> list[RaceExample]:
    """Examples from Hugging Face ``race`` rows (``example_id``, ``article``, ``question``, ``options``,
    ``answer``); the level comes from ``level`` or the ``example_id`` (``"high132.txt"``)."""
    out = []
    counters: dict[str, int] = {}
    for r in rows:
        pid = str(r["example_id"])
        k = counters.get(pid, 0)
        counters[pid] = k + 1
        record = {
            "article": r["article"],
            "questions": [r["question"]],
            "options": [list(r["options"])],
            "answers": [r["answer"]],
            "id": pid,
        }
        ex = parse_race_record(record, f"hub:{pid}", level or _level_of(pid))[0]
        out.append(dataclasses.replace(ex, qid=f"{pid}#{k}"))
    return out


def load_race_hub(
    name: str = "ehovy/race", config: str = "all", split: str = "validation", **kwargs: Any
) -> list[RaceExample]:
    """Load RACE (``config``: ``all``, ``middle`` or ``high``) by name through the ``datasets`` hub (needs
    ``datasets`` and a network or its cache)."""
    import datasets

    rows = datasets.load_dataset(name, config, split=split, **kwargs)
    return examples_from_hub_rows(rows, level=config if config in LEVELS else None)


def race_counts(examples: Sequence[RaceExample]) -> dict[str, int]:
    """Passages and questions per level and in all."""
    out: dict[str, int] = {}
    for level in LEVELS:
        part = [e for e in examples if e.level == level]
        out[f"{level}_passages"] = len({e.passage_id for e in part})
        out[f"{level}_questions"] = len(part)
    out["passages"] = len({(e.level, e.passage_id) for e in examples})
    out["questions"] = len(examples)
    return out
