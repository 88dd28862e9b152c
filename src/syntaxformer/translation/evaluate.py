"""Translate with a trained model (:func:`translate`: batched beam search over raw source sentences, parsed as in
training, detokenised output) and score with sacreBLEU (:func:`~syntaxformer.tasks.metrics.corpus_bleu`, a task
metric imported here); ``docs/translation.md`` shows both. Two systems' BLEU are compared with
:func:`syntaxformer.tasks.significance.paired_bleu_test`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from syntaxformer.errors import DataError
from syntaxformer.tasks.metrics import corpus_bleu

__all__ = ["TranslationModel", "corpus_bleu", "load_translation_model", "translate", "translate_and_score"]


class TranslationModel:
    """A loaded translation model folder.

    The model (:class:`~syntaxformer.modeling.seq2seq.SyntaxInfusedForConditionalGeneration`), its two tokenizers,
    the source pieces kept (``max_source_length``, incl. ``</s>``) and the parser of the sources (``annotator``;
    default: :func:`syntaxformer.data.make_annotator`'s, made on first use by a model that reads syntax).
    """

    def __init__(
        self,
        model: Any,
        source_tokenizer: Any,
        target_tokenizer: Any,
        max_source_length: int = 256,
        annotator: Any = None,
    ):
        self.model = model
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.max_source_length = max_source_length
        self._annotator = annotator

    @property
    def annotator(self) -> Any:
        """The annotator (the default spaCy pipeline unless one was given; made on first use)."""
        from syntaxformer.data.annotators import Annotator, make_annotator

        if not isinstance(self._annotator, Annotator):
            self._annotator = make_annotator(self._annotator, batch_size=512)
        return self._annotator


def load_translation_model(folder: str | Path, annotator: Any = None, max_source_length: int = 256) -> TranslationModel:
    """Load a model folder written by ``syntaxformer train --task translation``: ``AutoModelForSeq2SeqLM`` plus
    ``source_tokenizer/`` and ``target_tokenizer/``.

    Raises:
        DataError: the folder holds no translation model.
    """
    from transformers import AutoModelForSeq2SeqLM

    import syntaxformer.modeling.seq2seq  # noqa: F401  (registers the model with AutoModelForSeq2SeqLM)
    from syntaxformer.data.bpe import load_tokenizers

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise DataError(
            f"{folder} holds no config.json; expected a folder written by `syntaxformer train --task translation`"
        )
    src_tok, tgt_tok = load_tokenizers(folder)
    from syntaxformer.training.saved import loading_model

    with loading_model(folder):
        model = AutoModelForSeq2SeqLM.from_pretrained(str(folder))
    model.eval()
    return TranslationModel(model, src_tok, tgt_tok, max_source_length, annotator)


def translate(
    tm: TranslationModel,
    sources: Sequence[str],
    batch_size: int = 64,
    num_beams: int = 5,
    show_progress: bool = True,
    name: str = "sources",
    **generate_options: Any,
) -> list[str]:
    """Translate raw sentences, detokenised, in input order: the library's one decoding path
    (:func:`~syntaxformer.modeling.seq2seq.translate_texts`; batches of similar length, longest first, as a run's
    evaluation and ``predict`` make them, so all give the same translations).

    Args:
        tm: the loaded model (:func:`load_translation_model`).
        sources: raw source sentences (an empty string gives an empty translation).
        batch_size, num_beams: sentences per ``generate`` call, beam size.
        show_progress, name: a progress bar over sentences, and what it calls them.
        **generate_options: passed to ``generate`` (``max_new_tokens``, ``length_penalty`` ...); default
            ``max_new_tokens``: :func:`~syntaxformer.modeling.seq2seq.default_max_new_tokens` of the batch.
    """
    from syntaxformer.modeling.seq2seq import translate_texts

    return translate_texts(
        tm.model,
        list(sources),
        tm.source_tokenizer,
        tm.target_tokenizer,
        tm.annotator if tm.model.config.syntax_inputs else None,
        tm.max_source_length,
        batch_size,
        num_beams=num_beams,
        show_progress=show_progress,
        desc=f"translating {name}",
        **generate_options,
    )


def translate_and_score(
    tm: TranslationModel,
    sources: Sequence[str],
    references: Sequence[str] | None,
    batch_size: int = 64,
    num_beams: int = 5,
    show_progress: bool = True,
    name: str = "sources",
) -> dict[str, Any]:
    """:func:`translate` plus BLEU (when references are given) and the decoding time.

    Returns:
        ``{"hypotheses", "seconds", "n"}`` plus :func:`corpus_bleu`'s keys when there are references.
    """
    t0 = time.time()
    hyps = translate(tm, sources, batch_size, num_beams, show_progress, name)
    result: dict[str, Any] = {"hypotheses": hyps, "seconds": round(time.time() - t0, 2), "n": len(hyps)}
    if references is not None:
        result.update(corpus_bleu(hyps, references))
    return result
