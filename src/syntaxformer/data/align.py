"""Word <-> subword alignment for any Hugging Face *fast* tokenizer.

The output of alignment is an :class:`AlignedExample`: one model input window (``input_ids`` ...) plus, for every
position, the index of the word it belongs to in the example's :class:`WordForest` (all words of all sentences of
all texts of the example, in order). Syntax tensors are derived from it by :mod:`syntaxformer.data.collate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from tokenizers import Tokenizer

from syntaxformer.data.sentence import Document, Sentence, check_unicode
from syntaxformer.errors import AlignmentError, ConfigError, InputError

if TYPE_CHECKING:
    from syntaxformer.data.constituency import Tree


@dataclass
class WordForest:
    """The words of one example (single text, pair, or passage), each sentence its own tree.

    Attributes:
        heads: ``[W]`` 0-based index (into this forest) of each word's head; -1 for a sentence root.
        tree_id: ``[W]`` index of the sentence (tree) each word belongs to, 0..T-1 across the whole example.
        segment: ``[W]`` which input text the word comes from (0 = first text, 1 = second text of a pair).
        trees: per sentence, its constituency tree (leaves = that sentence's words) or ``None``.
        sentence_start: ``[T]`` forest index of the first word of each sentence.
        upos: ``[W]`` coarse POS tags (or ``None``); xpos likewise.
    """

    heads: np.ndarray
    tree_id: np.ndarray
    segment: np.ndarray
    trees: list[Tree | None] = field(default_factory=list)
    sentence_start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    upos: list[str] | None = None
    xpos: list[str] | None = None

    def __len__(self) -> int:
        return len(self.heads)


@dataclass
class AlignedExample:
    """One tokenized window with its word alignment.

    Attributes:
        input_ids: ``[L]`` token ids (special tokens included, no padding).
        token_type_ids: ``[L]`` or ``None`` if the tokenizer does not use them.
        word_index: ``[L]`` forest index of the word each position belongs to; -1 for special tokens.
        piece_index: ``[L]`` 0 for the first piece of its word in the *full* (untruncated) tokenization, k for the
            (k+1)-th piece; -1 for special tokens. Windows cut from a long text keep the full-text numbering.
        n_pieces: ``[W]`` number of pieces of each word in the full tokenization (0 if a word got no piece of its
            own, e.g. when the tokenizer merged it into a neighbour's piece).
        forest: the example's words and trees.
        window: index of this window among the windows of the example (0 unless stride/overflow is used).
        offsets: ``[L, 2]`` character offsets of each position in its text ((0, 0) for special tokens).
        sequence_ids: ``[L]`` text index of each position (0/1), -1 for special tokens.
    """

    input_ids: np.ndarray
    word_index: np.ndarray
    piece_index: np.ndarray
    n_pieces: np.ndarray
    forest: WordForest
    token_type_ids: np.ndarray | None = None
    window: int = 0
    offsets: np.ndarray | None = None
    sequence_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.input_ids)


# ----------------------------------------------------------------------------------------------------------
# Inputs: a "text" of an example is a Sentence, a Document, or a sequence of Sentences (one passage).
# ----------------------------------------------------------------------------------------------------------

TextLike = Sentence | Document | Sequence[Sentence]


def _as_passage(text: TextLike) -> tuple[str, list[Sentence], list[tuple[int, int]]]:
    """Normalise a text to ``(string, sentences, word offsets into the string)``."""
    if isinstance(text, Sentence):
        s, offsets = text.detokenized()
        return s, [text], offsets
    sentences = list(text.sentences if isinstance(text, Document) else text)
    if isinstance(text, Document) and text.text is not None and all(s.offsets is not None for s in sentences):
        offsets = [o for s in sentences for o in s.offsets]  # type: ignore[union-attr]
        return text.text, sentences, offsets
    if len(sentences) == 1:
        s, offsets = sentences[0].detokenized()
        return s, sentences, offsets
    doc = Document.from_sentences(sentences)
    return doc.text or "", sentences, [o for s in doc.sentences for o in s.offsets]  # type: ignore[union-attr]


def _check_offsets(text: str, sentences: list[Sentence], offsets: list[tuple[int, int]]) -> None:
    words = [w for s in sentences for w in s.words]
    prev_end = 0
    for w, (a, b) in zip(words, offsets):
        if not (0 <= a < b <= len(text)) or a < prev_end:
            raise AlignmentError(
                f"word {w!r} has offsets ({a}, {b}) that are out of order or outside the text of length "
                f"{len(text)}; word offsets must be increasing, non-overlapping spans of the text"
            )
        prev_end = b


def _build_forest(passages: list[tuple[str, list[Sentence], list[tuple[int, int]]]]) -> WordForest:
    sentences = [(seg, s) for seg, (_, ss, _) in enumerate(passages) for s in ss]
    heads: list[int] = []
    tree_id: list[int] = []
    segment: list[int] = []
    starts: list[int] = []
    base = 0
    for t, (seg, s) in enumerate(sentences):
        starts.append(base)
        heads.extend(h + base if h >= 0 else -1 for h in s.heads)
        tree_id.extend([t] * len(s))
        segment.extend([seg] * len(s))
        base += len(s)

    def tags(name: str) -> list[str] | None:  # every sentence's tags, or None if one has none
        per_sentence = [getattr(s, name) for _, s in sentences]
        return None if any(t is None for t in per_sentence) else [t for ts in per_sentence for t in ts]

    return WordForest(
        heads=np.asarray(heads, dtype=np.int64),
        tree_id=np.asarray(tree_id, dtype=np.int64),
        segment=np.asarray(segment, dtype=np.int64),
        trees=[s.tree for _, s in sentences],
        sentence_start=np.asarray(starts, dtype=np.int64),
        upos=tags("upos"),
        xpos=tags("xpos"),
    )


def pieces_to_words(piece_offsets: np.ndarray, word_offsets: np.ndarray) -> np.ndarray:
    """Assign each subword piece to a word by character overlap.

    Args:
        piece_offsets: ``[P, 2]`` character spans of the pieces (end exclusive).
        word_offsets: ``[W, 2]`` character spans of the words, increasing and non-overlapping.

    Returns:
        ``[P]`` word index per piece. A piece overlapping several words goes to the one it overlaps most (the
        first on ties); a piece overlapping none (e.g. a SentencePiece ``▁`` marker before a word) goes to the
        next word, or to the last word if there is none after it. ``-1`` only if there are no words.
    """
    n_pieces = len(piece_offsets)
    if len(word_offsets) == 0:
        return np.full(n_pieces, -1, dtype=np.int64)
    ws, we = word_offsets[:, 0], word_offsets[:, 1]
    ps, pe = piece_offsets[:, 0], piece_offsets[:, 1]
    idx = np.searchsorted(we, ps, side="right")  # first word ending after the piece starts
    idx = np.minimum(idx, len(ws) - 1)
    nxt = np.minimum(idx + 1, len(ws) - 1)
    ov = np.minimum(pe, we[idx]) - np.maximum(ps, ws[idx])
    ov_next = np.where(nxt != idx, np.minimum(pe, we[nxt]) - np.maximum(ps, ws[nxt]), -1)
    return np.where(ov_next > ov, nxt, idx).astype(np.int64)


def _template(backend: Any, *texts: str) -> list[tuple[str, int, int]]:
    """Where a tokenizer puts special tokens around one text or a pair: ``('special', id, type_id)`` and
    ``('seq', k, type_id)`` items in order, read off an encoding of tiny ``texts`` with special tokens.
    (``post_process`` on pre-made encodings loses the first sequence id in tokenizers 0.23, so ``encode`` itself.)"""
    e = backend.encode(*texts, add_special_tokens=True)
    out: list[tuple[str, int, int]] = []
    for tok_id, type_id, seq, special in zip(e.ids, e.type_ids, e.sequence_ids, e.special_tokens_mask):
        if special:
            out.append(("special", tok_id, type_id))
        elif not out or out[-1][:2] != ("seq", seq):
            out.append(("seq", seq, type_id))
    return out


class SyntaxAligner:
    """Tokenize annotated texts with a Hugging Face fast tokenizer and align subwords to words.

    Works with any fast tokenizer (WordPiece, BPE, SentencePiece/Unigram): subwords are mapped to words through
    character offsets, so the tokenizer never needs pre-split input. Special tokens are placed by the
    tokenizer's own post-processor template ([CLS] A [SEP] B [SEP], <s> A </s></s> B </s>, A </s> B </s>, ...).

    Args:
        tokenizer: a ``transformers`` fast tokenizer (``tokenizer.is_fast``) or a ``tokenizers.Tokenizer``.
        max_length: maximum window length including special tokens; ``None`` = the tokenizer's
            ``model_max_length`` when it is a real limit, else no limit.
        stride: ``None`` → plain truncation (one window per example). An int → sliding windows over the
            ``window_segment`` text, consecutive windows sharing ``stride`` tokens (the SQuAD ``doc_stride``
            convention of Hugging Face: overlap, not step).
        window_segment: which text of a pair is cut into windows / truncated (0 = first, 1 = second); for
            plain truncation of pairs ``None`` means longest-first.
        add_special_tokens: add [CLS]/[SEP]-style tokens.
    """

    def __init__(
        self,
        tokenizer: Any,
        max_length: int | None = None,
        stride: int | None = None,
        window_segment: int | None = 0,
        add_special_tokens: bool = True,
    ):
        backend = tokenizer if isinstance(tokenizer, Tokenizer) else getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise AlignmentError(
                f"{type(tokenizer).__name__} is not a fast tokenizer; load it with "
                "AutoTokenizer.from_pretrained(name, use_fast=True) (character offsets are required)"
            )
        # A private copy: the user's tokenizer may carry truncation/padding settings we must not use or change.
        self._backend = Tokenizer.from_str(backend.to_str())
        self._backend.no_truncation()
        self._backend.no_padding()
        if max_length is None:
            limit = getattr(tokenizer, "model_max_length", None)
            max_length = int(limit) if isinstance(limit, int) and 0 < limit < 1_000_000 else None
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) or max_length < 1
        ):
            raise ConfigError(f"max_length={max_length!r} must be a positive whole number of tokens (or None)")
        if stride is not None:
            if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 0:
                raise ConfigError(
                    f"stride={stride!r} (tokens shared by consecutive windows) must be a whole "
                    "number >= 0; a negative stride would skip the words between windows"
                )
            if max_length is None:
                raise ConfigError("sliding windows (stride) need a max_length")
            if stride >= max_length:
                raise ConfigError(
                    f"stride={stride} must be smaller than max_length={max_length} (windows overlap "
                    "by stride tokens, so each must move forward)"
                )
        if window_segment not in (None, 0, 1):
            raise ConfigError(f"window_segment={window_segment!r} must be 0 (first text), 1 (second text) or None")
        self.max_length = max_length
        self.stride = stride
        self.window_segment = window_segment
        self.add_special_tokens = add_special_tokens
        self._templates = {False: _template(self._backend, "a"), True: _template(self._backend, "a", "b")}

    # -- public ------------------------------------------------------------------------------------------
    def __call__(self, text_a: TextLike, text_b: TextLike | None = None) -> list[AlignedExample]:
        """Align one example (a text or a pair of texts). Returns its windows (one unless ``stride`` is set)."""
        return self.align_batch([text_a], None if text_b is None else [text_b])[0]

    def align_batch(
        self, texts_a: Sequence[TextLike], texts_b: Sequence[TextLike] | None = None
    ) -> list[list[AlignedExample]]:
        """Align many examples; the tokenizer runs once over all texts (parallel in Rust)."""
        if texts_b is not None and len(texts_b) != len(texts_a):
            raise InputError(f"{len(texts_a)} first texts but {len(texts_b)} second texts")
        pa = [_as_passage(t) for t in texts_a]
        pb = [_as_passage(t) for t in texts_b] if texts_b is not None else None
        for name, passages in (("texts_a", pa), ("texts_b", pb or [])):
            for i, p in enumerate(passages):
                check_unicode(p[0], f"{name}[{i}]")
        flat = pa + (pb or [])
        encodings = self._backend.encode_batch([p[0] for p in flat], add_special_tokens=False)
        out = []
        for i in range(len(pa)):
            parts = [pa[i]] + ([pb[i]] if pb is not None else [])
            encs = [encodings[i]] + ([encodings[len(pa) + i]] if pb is not None else [])
            out.append(self._align_one(parts, encs))
        return out

    # -- internals ---------------------------------------------------------------------------------------
    def _align_one(self, parts, encs) -> list[AlignedExample]:
        for text, sentences, offsets in parts:
            _check_offsets(text, sentences, offsets)
        forest = _build_forest(parts)
        segs = []  # per text: (ids, word index, piece index, offsets) of its pieces
        n_pieces = np.zeros(len(forest), dtype=np.int64)
        base = 0
        for (text, _sentences, offsets), enc in zip(parts, encs):
            n_w = len(offsets)
            ids = np.asarray(enc.ids, dtype=np.int64)
            poff = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
            local = pieces_to_words(poff, np.asarray(offsets, dtype=np.int64).reshape(-1, 2))
            if n_w == 0:
                # Text with no words (empty / whitespace only / unparsed): its pieces carry no syntax.
                words = np.full(len(ids), -1, dtype=np.int64)
                piece = np.full(len(ids), -1, dtype=np.int64)
            else:
                if np.any(np.diff(local) < 0):
                    raise AlignmentError(f"subword pieces of {text[:60]!r} map to words out of order")
                words = local + base
                n_pieces[base : base + n_w] = np.bincount(local, minlength=n_w)
                # k-th piece of its word: position minus the position of the word's first piece
                piece = np.arange(len(local)) - np.searchsorted(local, local)
            segs.append((ids, words, piece, poff))
            base += n_w
        return self._windows(forest, n_pieces, segs)

    def _windows(self, forest, n_pieces, segs) -> list[AlignedExample]:
        pair = len(segs) == 2
        template = self._templates[pair] if self.add_special_tokens else [("seq", k, 0) for k in range(len(segs))]
        n_special = sum(kind == "special" for kind, _, _ in template)
        lengths = [len(seg[0]) for seg in segs]
        spans_list: list[list[tuple[int, int]]]  # per window: (start, end) per segment
        if self.max_length is None or sum(lengths) + n_special <= self.max_length:
            spans_list = [[(0, n) for n in lengths]]
        else:
            budget = self.max_length - n_special
            if budget <= 0:
                raise ConfigError(f"max_length={self.max_length} leaves no room next to {n_special} special tokens")
            seg = self.window_segment
            if self.stride is None and (seg is None or not pair):
                seg = None if pair else 0
            if seg is None:  # longest-first truncation of a pair
                spans_list = [_longest_first(lengths, budget)]
            else:
                fixed = sum(n for k, n in enumerate(lengths) if k != seg)
                room = budget - fixed
                if room <= 0 and self.stride is None:
                    # plain truncation, and the other text alone fills the window: cut both, longest first (the
                    # tokenizer's own truncation strategy) rather than fail
                    spans_list = [_longest_first(lengths, budget)]
                elif room <= 0:
                    raise ConfigError(
                        f"the text that is not windowed is {fixed} tokens long and fills max_length="
                        f"{self.max_length}; raise max_length or truncate that text"
                    )
                else:
                    if self.stride is not None and self.stride >= room:
                        raise ConfigError(f"stride={self.stride} must be smaller than the window room {room}")
                    starts = [0]
                    if self.stride is not None:
                        while starts[-1] + room < lengths[seg]:
                            starts.append(starts[-1] + room - self.stride)
                    spans_list = []
                    for s in starts:
                        spans = [(0, n) for n in lengths]
                        spans[seg] = (s, min(s + room, lengths[seg]))
                        spans_list.append(spans)
        out = []
        for w, spans in enumerate(spans_list):
            parts = []  # per template item: (ids, token types, word index, piece index, offsets, sequence ids)
            for kind, value, type_id in template:
                if kind == "special":
                    parts.append(([value], [type_id], [-1], [-1], [(0, 0)], [-1]))
                else:
                    a, b = spans[value]
                    ids, words, pieces, offsets = (x[a:b] for x in segs[value])
                    parts.append((ids, [type_id] * (b - a), words, pieces, offsets, [value] * (b - a)))
            ids, tt, words, pieces, offsets, seq = (
                np.concatenate([np.asarray(part[c], dtype=np.int64) for part in parts]) for c in range(6)
            )
            out.append(
                AlignedExample(
                    input_ids=ids,
                    word_index=words,
                    piece_index=pieces,
                    n_pieces=n_pieces,
                    forest=forest,
                    token_type_ids=tt,
                    window=w,
                    offsets=offsets.reshape(-1, 2),
                    sequence_ids=seq,
                )
            )
        return out


def _longest_first(lengths: list[int], budget: int) -> list[tuple[int, int]]:
    """Spans of a pair cut to ``budget`` tokens longest first: one token at a time from the longer text (the first
    on a tie), as the tokenizers' ``longest_first`` truncation does."""
    la, lb = lengths
    excess = la + lb - budget
    if excess > 0:  # closed form of the one-token-at-a-time loop
        d = min(excess, abs(la - lb))
        if la >= lb:
            la -= d
        else:
            lb -= d
        rest = excess - d
        la, lb = la - (rest + 1) // 2, lb - rest // 2
    return [(0, la), (0, lb)]
