"""RACE multiple-choice reading comprehension: readers, syntax-aligned per-option features, batching, accuracy.

Pipeline::

    dev = read_race_dir("../shared/data/race/dev")                         # one RaceExample per question
    train = read_race_tarball("../shared/data/race/RACE_train.tar.gz", max_questions=400, seed=0)
    featurizer = RaceFeaturizer(tokenizer, make_annotator(), max_length=256)
    features = featurizer(dev)                                             # one RaceFeature per question
    batch = race_collate(features)                                         # [B, C, L] tensors + labels [B]
    ... model(**batch).logits                                              # [B, C], softmax over options
    race_accuracy(dev, predictions)                                        # {"middle", "high", "all"}

Input per option (SG-Net TPAMI §3.4.1): ``[CLS] passage || question [SEP] option [SEP]``. The passage is cut
from its end when the sequence is too long; the question and the option are kept whole (only if they alone do
not fit are they cut too, longest first). The passage is parsed sentence by sentence, the question and each
option on their own: every sentence is its own tree and no syntax link crosses sentences, nor passage /
question / option. The syntax arrays are computed on the *whole* example, so a passage word whose ancestor was
cut off by the truncation keeps its remaining ancestors and simply loses the cut one (never attention to all).
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from syntaxformer.data.align import AlignedExample, SyntaxAligner
from syntaxformer.data.sentence import Document, Sentence
from syntaxformer.errors import FormatError, SyntaxformerError

__all__ = ["RaceExample", "RaceFeature", "RaceFeaturizer", "read_race_file", "parse_race_record", "read_race_dir",
           "read_race_tarball", "load_race_hub", "examples_from_hub_rows", "race_counts", "race_collate",
           "race_accuracy", "LEVELS", "MC_KEYS"]

#: The two RACE subsets (RACE-M: middle school, RACE-H: high school).
LEVELS: tuple[str, ...] = ("middle", "high")
_LETTERS = "ABCDEFGHIJ"
#: Batch keys kept for the multiple-choice model (SG-Net needs only the SDOI arrays).
MC_KEYS: tuple[str, ...] = ("input_ids", "attention_mask", "token_type_ids", "dep_tin", "dep_tout", "syntax_tree")


# ----------------------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------------------
@dataclass
class RaceExample:
    """One multiple-choice question over one passage.

    Attributes:
        qid: question id, ``"<passage id>#<k>"`` (``k`` = 0-based question index in the passage file).
        passage_id: the file's ``id`` (e.g. ``"middle1011.txt"``).
        level: ``"middle"`` or ``"high"``.
        article: the passage text.
        question: the question (RACE cloze questions contain ``_`` for the blank; kept as is).
        options: the candidate answers (4 in RACE).
        label: index of the right option (``None`` when unknown).
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
        return None if self.label is None else _LETTERS[self.label]


def _level_of(name: str) -> str | None:
    low = name.lower()
    for level in LEVELS:
        if level in low:
            return level
    return None


def parse_race_record(record: Any, source: str, level: str | None = None) -> list[RaceExample]:
    """Examples of one RACE passage record ``{"article", "questions", "options", "answers", "id"}``.

    Args:
        record: the parsed JSON object of one passage file.
        source: where it came from (named in error messages; its path also gives the level if ``level`` is None).
        level: ``"middle"`` / ``"high"``; default: from the record id or the source path.

    Raises:
        FormatError: a missing field, an empty passage, unequal numbers of questions / options / answers, fewer
            than two options, or an answer letter that names no option.
    """
    if not isinstance(record, Mapping):
        raise FormatError(f"expected a JSON object with article/questions/options/answers, got "
                          f"{type(record).__name__}", source)
    missing = [k for k in ("article", "questions", "options", "answers") if k not in record]
    if missing:
        raise FormatError(f"RACE record lacks the field(s) {missing}; each file must be one JSON object with "
                          "'article', 'questions', 'options', 'answers' (and 'id')", source)
    article, questions, options, answers = (record["article"], record["questions"], record["options"],
                                            record["answers"])
    if not isinstance(article, str) or not article.strip():
        raise FormatError("RACE record has an empty 'article' (the passage)", source)
    if not (isinstance(questions, list) and isinstance(options, list) and isinstance(answers, list)):
        raise FormatError("'questions', 'options' and 'answers' must be lists", source)
    if not (len(questions) == len(options) == len(answers)):
        raise FormatError(f"{len(questions)} questions, {len(options)} option lists and {len(answers)} answers; "
                          "they must be equally many", source)
    passage_id = str(record.get("id") or Path(source).name)
    level = level or _level_of(passage_id) or _level_of(source)
    if level not in LEVELS:
        raise FormatError(f"cannot tell the RACE level (middle / high) of passage {passage_id!r}", source)
    out = []
    for k, (q, opts, ans) in enumerate(zip(questions, options, answers)):
        if not isinstance(q, str) or not isinstance(opts, list) or len(opts) < 2 or \
                not all(isinstance(o, str) for o in opts):
            raise FormatError(f"question {k}: needs a question string and a list of at least two option strings",
                              source)
        if not isinstance(ans, str) or len(ans.strip()) != 1 or _LETTERS.find(ans.strip().upper()) < 0 or \
                _LETTERS.index(ans.strip().upper()) >= len(opts):
            raise FormatError(f"question {k}: answer {ans!r} is not a letter A..{_LETTERS[len(opts) - 1]}", source)
        out.append(RaceExample(qid=f"{passage_id}#{k}", passage_id=passage_id, level=level, article=article,
                               question=q, options=list(opts), label=_LETTERS.index(ans.strip().upper())))
    return out


def read_race_file(path: str | Path, level: str | None = None) -> list[RaceExample]:
    """The questions of one original RACE passage file (one JSON object per ``.txt`` file)."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise FormatError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); each RACE file is one "
                          "JSON object", str(path)) from None
    return parse_race_record(record, str(path), level)


def read_race_dir(folder: str | Path, levels: Sequence[str] = LEVELS) -> list[RaceExample]:
    """All questions of a RACE split folder (``<folder>/{middle,high}/*.txt``), middle first, files sorted by name.

    Raises:
        SyntaxformerError: the folder or a level sub-folder is missing, or holds no file.
    """
    folder = Path(folder)
    out: list[RaceExample] = []
    for level in levels:
        sub = folder / level
        if not sub.is_dir():
            raise SyntaxformerError(f"RACE folder {sub} not found (expected {folder}/{{middle,high}}/*.txt, the "
                                    "original per-passage files)")
        files = sorted(sub.glob("*.txt"), key=lambda p: (len(p.stem), p.stem))
        if not files:
            raise SyntaxformerError(f"RACE folder {sub} holds no .txt passage files")
        for f in files:
            out.extend(read_race_file(f, level))
    return out


def read_race_tarball(path: str | Path, levels: Sequence[str] = LEVELS, max_questions: int | None = None,
                      seed: int = 0) -> list[RaceExample]:
    """Questions read straight from a tarball of the original files (``RACE/<split>/{middle,high}/*.txt``).

    Nothing is extracted to disk. With ``max_questions`` a seeded subset is taken: passages in a random order
    (``random.Random(seed)``), all questions of each, until ``max_questions`` are reached (the last passage cut);
    passages in the tarball's order otherwise.
    """
    path = Path(path)
    if not path.is_file():
        raise SyntaxformerError(f"RACE tarball {path} not found")
    records: list[tuple[str, str, bytes]] = []
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
        raise SyntaxformerError(f"cannot read the tarball {path}: {e}") from e
    if not records:
        raise SyntaxformerError(f"tarball {path} holds no RACE .txt files under {'/'.join(levels)} folders")
    if max_questions is not None:
        random.Random(seed).shuffle(records)
    out: list[RaceExample] = []
    for name, level, raw in records:
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise FormatError(f"not a valid JSON RACE record: {e}", f"{path}:{name}") from None
        out.extend(parse_race_record(record, f"{path}:{name}", level))
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
        record = {"article": r["article"], "questions": [r["question"]], "options": [list(r["options"])],
                  "answers": [r["answer"]], "id": pid}
        ex = parse_race_record(record, f"hub:{pid}", level or _level_of(pid))[0]
        out.append(dataclasses.replace(ex, qid=f"{pid}#{k}"))
    return out


def load_race_hub(name: str = "ehovy/race", config: str = "all", split: str = "validation",
                  **kwargs: Any) -> list[RaceExample]:
    """Load RACE by name through the ``datasets`` hub (needs ``datasets`` and a network or its cache).

    Args:
        name: the hub data set (``ehovy/race``).
        config: ``all``, ``middle`` or ``high``.
        split: ``train``, ``validation`` or ``test``.
    """
    try:
        from datasets import load_dataset
    except ImportError as e:  # pragma: no cover - datasets is a dependency
        raise SyntaxformerError("loading RACE from the hub needs `pip install datasets`") from e
    rows = load_dataset(name, config, split=split, **kwargs)
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


# ----------------------------------------------------------------------------------------------------------
# Features
# ----------------------------------------------------------------------------------------------------------
@dataclass
class RaceFeature:
    """The model inputs of one question: one aligned sequence per option.

    Attributes:
        example_index: index of the question in the list given to :class:`RaceFeaturizer`.
        qid: the question id.
        options: one :class:`AlignedExample` per option (``[CLS] passage || question [SEP] option [SEP]``).
        label: the right option (``-100`` when unknown).
        n_passage_tokens: passage tokens kept, per option; ``n_passage_total``: passage tokens in all.
    """

    example_index: int
    qid: str
    options: list[AlignedExample]
    label: int = -100
    n_passage_tokens: list[int] = field(default_factory=list)
    n_passage_total: int = 0

    @property
    def truncated(self) -> bool:
        return min(self.n_passage_tokens, default=0) < self.n_passage_total


def _joined(parts: Sequence[Document]) -> Document:
    """One Document over ``parts`` joined by single spaces, every sentence kept as its own tree."""
    texts, sentences, pos = [], [], 0
    for doc in parts:
        text = doc.text if doc.text is not None else Document.from_sentences(doc.sentences).text or ""
        base = doc if doc.text is not None else Document.from_sentences(doc.sentences)
        for s in base.sentences:
            d = s.to_dict()
            d["offsets"] = [[a + pos, b + pos] for a, b in s.offsets]  # type: ignore[union-attr]
            d.pop("text", None)
            sentences.append(Sentence.from_dict(d))
        texts.append(text)
        pos += len(text) + 1
    return Document(sentences, text=" ".join(texts))


def _keep_positions(w: AlignedExample, keep: np.ndarray) -> AlignedExample:
    """The window restricted to the positions where ``keep`` is True (the word forest is unchanged)."""
    return dataclasses.replace(
        w, input_ids=w.input_ids[keep], word_index=w.word_index[keep], piece_index=w.piece_index[keep],
        token_type_ids=None if w.token_type_ids is None else w.token_type_ids[keep],
        offsets=None if w.offsets is None else w.offsets[keep],
        sequence_ids=None if w.sequence_ids is None else w.sequence_ids[keep])


class RaceFeaturizer:
    """Parse RACE questions and build ``[CLS] passage || question [SEP] option [SEP]`` per option.

    Args:
        tokenizer: a Hugging Face fast tokenizer.
        annotator: a parser with ``annotate(texts) -> list[Document]`` (e.g.
            :class:`~syntaxformer.data.annotators.SpacyAnnotator`, whose SQLite cache keeps the parses); each
            distinct passage, question and option text is parsed once.
        max_length: tokens per option sequence including special tokens (the passage is cut from its end).
    """

    def __init__(self, tokenizer: Any, annotator: Any, max_length: int = 384):
        if max_length < 8:
            raise SyntaxformerError(f"max_length={max_length} is too small for a RACE input (at least 8)")
        self.tokenizer = tokenizer
        self.annotator = annotator
        self.max_length = int(max_length)
        self.aligner = SyntaxAligner(tokenizer, max_length=None)
        self.aligner.max_length = None  # no truncation by the aligner: the passage is cut here

    def parse(self, examples: Sequence[RaceExample]) -> dict[str, Document]:
        """``text -> Document`` for every distinct passage, question and option of ``examples``."""
        texts = list(dict.fromkeys(t for e in examples for t in (e.article, e.question, *e.options)))
        return dict(zip(texts, self.annotator.annotate(texts)))

    def __call__(self, examples: Sequence[RaceExample], parses: Mapping[str, Document] | None = None
                 ) -> list[RaceFeature]:
        """One :class:`RaceFeature` per example (pre-computed ``parses`` from :meth:`parse` may be given)."""
        parses = self.parse(examples) if parses is None else parses
        firsts, seconds, n_passage_sents = [], [], []
        for e in examples:
            passage = parses[e.article]
            if not passage.sentences:
                raise SyntaxformerError(f"RACE question {e.qid}: the passage has no words after parsing")
            first = _joined([passage, parses[e.question]])
            for o in e.options:
                firsts.append(first)
                seconds.append(parses[o])
                n_passage_sents.append(len(passage.sentences))
        aligned = self.aligner.align_batch(firsts, seconds)
        out: list[RaceFeature] = []
        k = 0
        for i, e in enumerate(examples):
            opts, kept = [], []
            total = 0
            for _ in e.options:
                w, n_kept, total = self._truncate(aligned[k][0], n_passage_sents[k])
                opts.append(w)
                kept.append(n_kept)
                k += 1
            out.append(RaceFeature(example_index=i, qid=e.qid, options=opts,
                                   label=-100 if e.label is None else int(e.label), n_passage_tokens=kept,
                                   n_passage_total=total))
        return out

    def _truncate(self, w: AlignedExample, n_passage_sents: int) -> tuple[AlignedExample, int, int]:
        """Cut passage tokens from the end (then question / option, longest first) to ``max_length``."""
        seq = np.asarray(w.sequence_ids)
        tree = np.where(w.word_index >= 0, np.asarray(w.forest.tree_id)[np.maximum(w.word_index, 0)], -1)
        is_passage = (seq == 0) & (tree < n_passage_sents) & (tree >= 0)
        # Pieces of text A with no word (cannot happen for parsed text, but be safe) count as passage.
        is_passage |= (seq == 0) & (w.word_index < 0)
        passage_pos = np.flatnonzero(is_passage)
        total = len(passage_pos)
        excess = len(w) - self.max_length
        keep = np.ones(len(w), dtype=bool)
        if excess > 0:
            cut = min(excess, total)
            if cut:
                keep[passage_pos[total - cut:]] = False
            excess -= cut
            if excess > 0:  # question + option alone are too long: cut them longest first, from their ends
                q_pos = list(np.flatnonzero((seq == 0) & ~is_passage))
                o_pos = list(np.flatnonzero(seq == 1))
                while excess > 0 and (q_pos or o_pos):
                    victim = q_pos if len(q_pos) >= len(o_pos) else o_pos
                    keep[victim.pop()] = False
                    excess -= 1
        n_kept = int(keep[passage_pos].sum())
        return (w if keep.all() else _keep_positions(w, keep)), n_kept, total


def _option_arrays(w: AlignedExample, criterion: str) -> dict[str, np.ndarray]:
    from syntaxformer.data.collate import example_arrays

    arrays = example_arrays(w, criterion, max_distance=1, constituency=False)
    return {k: arrays[k] for k in MC_KEYS if k in arrays}


def feature_arrays(feature: RaceFeature, criterion: str = "share") -> dict[str, Any]:
    """Per-option arrays (``MC_KEYS``) of one question and its ``labels`` (collator input)."""
    return {"options": [_option_arrays(w, criterion) for w in feature.options],
            "labels": np.asarray(feature.label, dtype=np.int64)}


def race_collate(features: Sequence[RaceFeature | Mapping[str, Any]], pad_token_id: int = 0,
                 criterion: str = "share", labels: bool = True) -> dict[str, Any]:
    """Pad questions into a batch: ``[B, C, L]`` tensors (``C`` options, ``L`` the longest sequence) + ``labels [B]``.

    Accepts :class:`RaceFeature` objects or the dicts of :func:`feature_arrays`. Padding follows
    :func:`syntaxformer.data.collate.pad_arrays` (syntax arrays with -1: padded positions attend to themselves
    only). All questions of a batch must have the same number of options.
    """
    import torch

    from syntaxformer.data.collate import pad_arrays

    items = [feature_arrays(f, criterion) if isinstance(f, RaceFeature) else f for f in features]
    if not items:
        raise ValueError("cannot collate an empty list of questions")
    n_opts = {len(it["options"]) for it in items}
    if len(n_opts) != 1:
        raise SyntaxformerError(f"questions with different numbers of options in one batch: {sorted(n_opts)}")
    C = n_opts.pop()
    flat = pad_arrays([o for it in items for o in it["options"]], pad_token_id)  # (B*C, L)
    batch: dict[str, Any] = {k: v.view(len(items), C, *v.shape[1:]) for k, v in flat.items()}  # (B, C, L)
    if labels:
        batch["labels"] = torch.as_tensor(np.stack([np.asarray(it["labels"]) for it in items]))
    return batch


# ----------------------------------------------------------------------------------------------------------
# Metric
# ----------------------------------------------------------------------------------------------------------
def race_accuracy(examples: Sequence[RaceExample], predictions: Mapping[str, int] | Sequence[int]
                  ) -> dict[str, float]:
    """Accuracy (percent) on RACE-M (``middle``), RACE-H (``high``) and all (``all``), plus counts ``n_*``.

    Args:
        examples: the questions with gold labels.
        predictions: ``qid -> option index`` or one index per example (same order). A missing qid is wrong.
    """
    if not isinstance(predictions, Mapping):
        if len(predictions) != len(examples):
            raise ValueError(f"{len(examples)} examples but {len(predictions)} predictions")
        predictions = {e.qid: int(p) for e, p in zip(examples, predictions)}
    out: dict[str, float] = {}
    for name, part in (("middle", [e for e in examples if e.level == "middle"]),
                       ("high", [e for e in examples if e.level == "high"]), ("all", list(examples))):
        correct = sum(int(predictions.get(e.qid, -1) == e.label) for e in part)
        out[name] = 100.0 * correct / len(part) if part else float("nan")
        out[f"n_{name}"] = len(part)
    return out


_WS = re.compile(r"\s+")


def snippet(text: str, limit: int = 300) -> str:
    """The first ``limit`` characters of ``text`` with whitespace collapsed (for printed examples)."""
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
