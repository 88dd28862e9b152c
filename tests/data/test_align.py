"""Word<->subword alignment on WordPiece (real MiniLM), byte-level BPE and SentencePiece-style Unigram tokenizers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntaxformer import Document, Sentence
from syntaxformer.data.align import SyntaxAligner, pieces_to_words
from syntaxformer.errors import AlignmentError

CORPUS = [
    "The quick brown fox jumps over the lazy dog .",
    "Unbelievably , tokenizers split uncommon words into pieces !",
    "She didn't say whether the café in Zürich was open .",
    "Researchers parse sentences and align subwords with words .",
] * 20


def _train_bpe():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>", "<pad>"]))
    tok.post_processor = processors.RobertaProcessing(("</s>", 1), ("<s>", 0), trim_offsets=True)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def _train_unigram():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(
        CORPUS, trainers.UnigramTrainer(vocab_size=120, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>")
    )
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B:1 </s>:1", special_tokens=[("</s>", 1)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


@pytest.fixture(scope="module", params=["wordpiece", "bpe", "unigram"])
def tokenizer(request, minilm_tokenizer):
    return {"wordpiece": lambda: minilm_tokenizer, "bpe": _train_bpe, "unigram": _train_unigram}[request.param]()


def _sentence(words, heads=None):
    heads = heads if heads is not None else [i + 1 if i + 1 < len(words) else -1 for i in range(len(words))]
    return Sentence(words, heads)


def _check_example(tok, examples, passages):
    """Every non-special position maps to the word its characters come from; piece numbering is consistent."""
    for ex in examples:
        assert len(ex.input_ids) == len(ex.word_index) == len(ex.piece_index)
        special = ex.word_index < 0
        assert np.all(ex.piece_index[special] == -1)
        for p in np.nonzero(~special)[0]:
            seg = ex.sequence_ids[p]
            text, words, offsets = passages[seg]
            a, b = ex.offsets[p]
            w = ex.word_index[p] - sum(len(passages[k][1]) for k in range(seg))
            wa, wb = offsets[w]
            # the piece overlaps its word, or (no overlap) is a marker right before it
            assert (min(b, wb) > max(a, wa)) or (b <= wa), (text, (a, b), words[w])
            assert ex.piece_index[p] < ex.n_pieces[ex.word_index[p]]


def test_align_single_text_maps_pieces_to_words(tokenizer):
    s = _sentence(["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "."])
    [ex] = SyntaxAligner(tokenizer)(s)
    text, offsets = s.detokenized()
    _check_example(tokenizer, [ex], [(text, s.words, offsets)])
    # every word has at least one piece, pieces of a word are contiguous and numbered 0..n-1
    assert np.all(ex.n_pieces >= 1)
    words = ex.word_index[ex.word_index >= 0]
    assert np.all(np.diff(words) >= 0)
    assert sorted(set(words.tolist())) == list(range(len(s)))


def test_align_pair_uses_tokenizer_template(tokenizer):
    a = _sentence(["Unbelievably", ",", "tokenizers", "split", "words", "."])
    b = _sentence(["Researchers", "align", "pieces", "."])
    [ex] = SyntaxAligner(tokenizer)(a, b)
    ref = tokenizer(" ".join(a.words), " ".join(b.words))
    assert ex.input_ids.tolist() == ref["input_ids"]
    if "token_type_ids" in ref:
        assert ex.token_type_ids.tolist() == ref["token_type_ids"]
    assert set(ex.forest.segment[ex.word_index[ex.word_index >= 0]].tolist()) == {0, 1}
    assert ex.forest.tree_id.tolist() == [0] * len(a) + [1] * len(b)
    assert ex.forest.heads[len(a) :].tolist() == [h + len(a) if h >= 0 else -1 for h in b.heads]


def test_align_passage_each_sentence_own_tree(minilm_tokenizer):
    doc = Document.from_sentences([_sentence(["The", "fox", "jumps", "."]), _sentence(["It", "ran", "away", "."])])
    [ex] = SyntaxAligner(minilm_tokenizer)(doc)
    assert ex.forest.tree_id.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert ex.forest.heads.tolist() == [1, 2, 3, -1, 5, 6, 7, -1]
    assert minilm_tokenizer.convert_ids_to_tokens(ex.input_ids.tolist())[1:-1] == [
        "the",
        "fox",
        "jumps",
        ".",
        "it",
        "ran",
        "away",
        ".",
    ]


@settings(max_examples=25, deadline=None)
@given(n_words=st.integers(5, 40), max_length=st.integers(8, 24), stride=st.integers(0, 4), data=st.data())
def test_align_windows_keep_full_numbering(minilm_tokenizer, n_words, max_length, stride, data):
    vocab = ["unbelievably", "fox", "tokenization", "a", "Zürich", "pieces", ".", "syntaxformer"]
    words = [data.draw(st.sampled_from(vocab)) for _ in range(n_words)]
    question = _sentence(["what", "is", "it", "?"])
    passage = _sentence(words)
    aligner = SyntaxAligner(minilm_tokenizer, max_length=max_length + 7, stride=stride, window_segment=0)
    windows = aligner(passage, question)
    [full] = SyntaxAligner(minilm_tokenizer, max_length=None)(passage, question)
    full_keys = {
        (int(w), int(p)): int(i) for i, w, p in zip(full.input_ids, full.word_index, full.piece_index) if w >= 0
    }
    seen = set()
    for ex in windows:
        assert len(ex) <= max_length + 7
        for i, w, p in zip(ex.input_ids, ex.word_index, ex.piece_index):
            if w >= 0:
                assert full_keys[(int(w), int(p))] == int(i)  # same piece, same numbering as the full text
                seen.add((int(w), int(p)))
        # the question is complete in every window
        assert set(ex.word_index[ex.sequence_ids == 1].tolist()) == set(range(len(words), len(words) + 4))
        assert np.array_equal(ex.n_pieces, full.n_pieces)
    assert seen == set(full_keys)  # windows cover the whole passage


def test_align_truncation_longest_first(minilm_tokenizer):
    a = _sentence(("word " * 30).split())
    b = _sentence(("other " * 5).split())
    [ex] = SyntaxAligner(minilm_tokenizer, max_length=16, window_segment=None)(a, b)
    assert len(ex) == 16
    ref = minilm_tokenizer(" ".join(a.words), " ".join(b.words), truncation="longest_first", max_length=16)
    assert ex.input_ids.tolist() == ref["input_ids"]


def test_align_odd_unicode(minilm_tokenizer):
    words = ["Cafe\u0301", "\u200bzero", "width", "😀", "naïve", "\u00a0", "x"]
    # build a text with the words at known offsets (one space between)
    s = Sentence(words, [1, 2, -1, 2, 2, 2, 2])
    [ex] = SyntaxAligner(minilm_tokenizer)(s)
    text, offsets = s.detokenized()
    _check_example(minilm_tokenizer, [ex], [(text, words, offsets)])


def test_align_spacy_style_text_offsets(minilm_tokenizer):
    text = "I don't know."
    s = Sentence(
        ["I", "do", "n't", "know", "."],
        [3, 3, 3, -1, 3],
        text=text,
        offsets=[(0, 1), (2, 4), (4, 7), (8, 12), (12, 13)],
    )
    [ex] = SyntaxAligner(minilm_tokenizer)(s)
    toks = minilm_tokenizer.convert_ids_to_tokens(ex.input_ids.tolist())
    # "don't" -> don ' t : "don" belongs to "do", "'" and "t" to "n't"
    assert [s.words[w] if w >= 0 else None for w in ex.word_index] == [
        None,
        "I",
        "do",
        "n't",
        "n't",
        "know",
        ".",
        None,
    ], toks


def test_pieces_to_words_overlap_and_markers():
    words = np.array([[0, 3], [4, 9], [10, 11]])
    pieces = np.array([[0, 3], [3, 4], [4, 6], [6, 9], [9, 10], [10, 11], [2, 5]])
    assert pieces_to_words(pieces, words).tolist() == [0, 1, 1, 1, 2, 2, 0]


def test_align_rejects_slow_tokenizer_and_bad_offsets(minilm_tokenizer):
    with pytest.raises(AlignmentError, match="fast tokenizer"):
        SyntaxAligner(object())
    bad = Sentence(["a", "b"], [1, -1], text="a b", offsets=[(0, 1), (1, 9)])
    with pytest.raises(AlignmentError, match="offsets"):
        SyntaxAligner(minilm_tokenizer)(bad)


@pytest.mark.parametrize("stride", [-1, -3, 16, 40, True, 2.5])
def test_align_rejects_a_stride_that_skips_words_or_never_moves(minilm_tokenizer, stride):
    from syntaxformer.errors import ConfigError

    with pytest.raises(ConfigError, match="stride"):
        SyntaxAligner(minilm_tokenizer, max_length=16, stride=stride)


def test_align_stride_zero_gives_adjacent_windows_covering_every_token(minilm_tokenizer):
    words = [f"w{i}" for i in range(40)]
    sentence = Sentence(words, [-1] + [0] * 39)
    windows = SyntaxAligner(minilm_tokenizer, max_length=16, stride=0)(sentence)
    pieces = [p for w in windows for p in w.input_ids[w.word_index >= 0].tolist()]
    plain = SyntaxAligner(minilm_tokenizer, max_length=None)(sentence)[0]
    assert pieces == plain.input_ids[plain.word_index >= 0].tolist()  # every token once, in order


def test_align_rejects_a_lone_surrogate_with_a_clear_error(minilm_tokenizer):
    from syntaxformer.errors import InputError

    s = Sentence(["x\udcff", "y"], [-1, 0], text="x\udcff y", offsets=[(0, 2), (3, 4)])
    with pytest.raises(InputError, match=r"texts_a\[0\] holds the lone surrogate '\\udcff' at character 1"):
        SyntaxAligner(minilm_tokenizer, max_length=16)(s)
    with pytest.raises(InputError, match=r"texts_b\[0\]"):
        SyntaxAligner(minilm_tokenizer, max_length=16)(Sentence(["ok"], [-1]), s)


@pytest.mark.parametrize("n_a, n_b", [(1, 100), (3, 60), (100, 1), (40, 40)])
def test_align_pair_truncates_like_the_tokenizer_when_the_second_text_is_long(minilm_tokenizer, n_a, n_b):
    """Plain truncation of a pair never fails because one text alone fills the window: it cuts longest first,
    exactly as the tokenizer's own ``truncation=True`` does."""
    a = Sentence(["short"] * n_a, [-1] + [0] * (n_a - 1))
    b = Sentence(["word"] * n_b, [-1] + [0] * (n_b - 1))
    (out,) = SyntaxAligner(minilm_tokenizer, max_length=32)(a, b)
    expected = minilm_tokenizer(" ".join(a.words), " ".join(b.words), truncation=True, max_length=32)["input_ids"]
    assert out.input_ids.tolist() == expected
