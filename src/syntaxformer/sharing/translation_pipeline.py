"""The translation pipeline of an exported model folder (the Syntax-Infused Transformer; see
:mod:`syntaxformer.sharing.syntax_pipeline`): :func:`syntaxformer.modeling.seq2seq.translate_texts`, the library's
one decoding path, with the folder's BPE tokenizers and the run's beam size.
"""

from __future__ import annotations

from typing import Any

from syntaxformer.data.bpe import load_tokenizers
from syntaxformer.modeling.seq2seq import translate_texts
from syntaxformer.sharing.syntax_pipeline import SyntaxPipeline

__all__ = ["SyntaxTranslationPipeline"]


class SyntaxTranslationPipeline(SyntaxPipeline):
    """Translation with the Syntax-Infused Transformer (its BPE tokenizers are the folder's ``source_tokenizer/``
    and ``target_tokenizer/``). Returns ``[{"translation_text"}]`` per input text, like ``translation``."""

    _load_tokenizer = False

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # for the type checker: load_options() in super().__init__ refused a model without a folder
        assert self.model.name_or_path
        self.source_tokenizer, self.target_tokenizer = load_tokenizers(self.model.name_or_path)

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # no *args, as translation
        out, single = self._call(inputs, kwargs)
        return out[0] if single else out

    def answers(self, inputs: list[dict[str, Any]], options: dict[str, Any]) -> list[Any]:
        mt = self.options.translation
        texts = translate_texts(
            self.model,
            [r["text"] for r in inputs],
            self.source_tokenizer,
            self.target_tokenizer,
            self.annotator,
            int(mt.get("max_source_length", 64)),
            self.call_batch_size(options.get("batch_size")),
            num_beams=int(mt.get("num_beams", 5)),
        )
        return [[{"translation_text": t}] for t in texts]
