"""Adding a parser from outside the package, in one file: this module is that file.

It defines a complete annotator (every word heads the next one: a right-branching chain), registers it under the
scheme ``chain``, and runs it through ``make_annotator`` and the aligner / collator / mask pipeline, as a user would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pytest

from syntaxformer.data import Annotator, Document, Sentence, make_annotator
from syntaxformer.data.align import SyntaxAligner
from syntaxformer.data.annotators import register_annotator
from syntaxformer.data.collate import SyntaxCollator
from syntaxformer.masks import sdoi_mask_from_features


class ChainAnnotator(Annotator):
    """Words are runs of letters / digits or single other characters; sentences end after . ! ?; word ``i`` is the
    head of word ``i + 1`` (the first word is the root)."""

    source = "chain"

    def __init__(self, label: str = "next"):
        self.label = label

    def cache_key(self) -> str:
        return f"chain-v1|{self.label}"

    def annotate(self, texts: Sequence[str]) -> list[Document]:
        out = []
        for text in texts:
            sentences, words, offsets = [], [], []
            for m in re.finditer(r"\w+|[^\w\s]", text):
                words.append(m.group())
                offsets.append(m.span())
                if m.group() in ".!?":
                    sentences.append(self._sentence(words, offsets))
                    words, offsets = [], []
            if words:
                sentences.append(self._sentence(words, offsets))
            out.append(Document(sentences, text=text))
        return out

    def annotate_pretokenized(self, words: Sequence[Sequence[str]]) -> list[Sentence]:
        return [self._sentence(list(w), None) for w in words]

    def _sentence(self, words: list[str], offsets) -> Sentence:
        return Sentence(
            list(words),
            [-1] + list(range(len(words) - 1)),
            deprels=["root"] + [self.label] * (len(words) - 1),
            offsets=offsets,
            source=self.source,
        )


@pytest.fixture(scope="module", autouse=True)
def chain_scheme():
    register_annotator("chain", lambda arg, **options: ChainAnnotator(arg or "next"), overwrite=True)


def test_custom_annotator_from_outside_the_package(minilm_tokenizer):
    annotator = make_annotator("chain:")
    assert isinstance(annotator, ChainAnnotator) and annotator.cache_key() == "chain-v1|next"
    assert make_annotator("chain:succ").cache_key() != annotator.cache_key()

    texts = ["Syntax helps a lot. Sometimes it does not!", "Ok"]
    docs = annotator.annotate(texts)
    assert [len(d) for d in docs] == [2, 1]
    aligner = SyntaxAligner(minilm_tokenizer, max_length=32)
    windows = [w for d in docs for w in aligner(d)]
    batch = SyntaxCollator(pad_token_id=minilm_tokenizer.pad_token_id)(windows)
    assert batch["input_ids"].tolist() == minilm_tokenizer(texts, padding=True)["input_ids"]
    # a chain: every word's ancestors are exactly the words before it in its sentence, so with one piece per
    # word the SDOI mask of a sentence is lower-triangular (a word attends to itself and everything before it)
    mask = sdoi_mask_from_features(batch)[1].numpy()  # "Ok": [CLS] Ok [SEP]
    assert mask[1, 1] and not mask[1, 0] and not mask[1, 2]
    first = sdoi_mask_from_features(batch)[0].numpy()
    words = windows[0].word_index
    n_first = len(docs[0].sentences[0].words)
    pos = [int(np.flatnonzero(words == w)[0]) for w in range(n_first)]  # first piece of each word of sentence 1
    block = first[np.ix_(pos, pos)]
    assert np.array_equal(block, np.tril(np.ones_like(block))), "a chain gives a lower-triangular SDOI mask"

    (s,) = make_annotator("chain:").annotate_pretokenized([["a", "b", "c"]])
    assert s.heads == [-1, 0, 1] and s.words == ["a", "b", "c"]
