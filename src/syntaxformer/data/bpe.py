"""Subword vocabularies learned on training data (translation): BPE with the ``tokenizers`` library, one vocabulary
per side (docs/translation.md gives the reasons). Metaspace pre-tokenisation with punctuation split off, so no piece
straddles a word and its punctuation and decoding restores the spacing (BLEU is computed on the decoded text); NFC
text; specials ``<pad>`` 0, ``<unk>`` 1, ``<s>`` 2, ``</s>`` 3; a sentence is ``pieces </s>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from syntaxformer.errors import DataError

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "SPECIAL_TOKENS", "UNK_ID", "load_tokenizers", "save_tokenizers", "train_bpe"]

SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>")
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def train_bpe(texts: Iterable[str], vocab_size: int = 4000, min_frequency: int = 2) -> PreTrainedTokenizerFast:
    """Learn a BPE vocabulary on ``texts``.

    Args:
        texts: training sentences of one language.
        vocab_size: target vocabulary size including the 4 special tokens (BPE stops earlier when no pair occurs
            ``min_frequency`` times).
        min_frequency: minimum count of a merged pair.

    Returns:
        a fast tokenizer (``pad``/``unk``/``bos``/``eos`` set, ``</s>`` appended to every encoded sentence).
    """
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
            pre_tokenizers.Punctuation(behavior="isolated"),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", EOS_ID)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        model_max_length=1024,
    )


def save_tokenizers(source, target, folder: str | Path) -> None:
    """Save both tokenizers under ``folder/source_tokenizer`` and ``folder/target_tokenizer``."""
    folder = Path(folder)
    source.save_pretrained(folder / "source_tokenizer")
    target.save_pretrained(folder / "target_tokenizer")


def load_tokenizers(folder: str | Path) -> tuple[PreTrainedTokenizerFast, PreTrainedTokenizerFast]:
    """``(source, target)`` tokenizers saved by :func:`save_tokenizers` in a folder (or a hub repository id).

    Raises:
        DataError: the folder does not hold them.
    """
    local = Path(folder).is_dir()
    out = []
    for side in ("source", "target"):
        path = Path(folder) / f"{side}_tokenizer"
        if local and not (path / "tokenizer.json").is_file():
            raise DataError(
                f"{path}/tokenizer.json not found; {folder} is not a translation model folder "
                "(expected source_tokenizer/ and target_tokenizer/ beside config.json, as "
                "`syntaxformer train --task translation` writes them)"
            )
        out.append(PreTrainedTokenizerFast.from_pretrained(str(folder), subfolder=f"{side}_tokenizer"))
    return out[0], out[1]
