"""The translation pipeline of an exported model folder (the Syntax-Infused Transformer; see
:mod:`syntaxformer.sharing.syntax_pipeline`)::

    mt = pipeline(model="nmt-both-export", trust_remote_code=True)
    mt("A man rides a horse.")                # [{"translation_text": "..."}]

Sources are encoded, batched and decoded by :mod:`syntaxformer.data.translation_pairs` with the folder's BPE
tokenizers (``source_tokenizer/``, ``target_tokenizer/``) and the run's beam size, as ``syntaxformer predict`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from syntaxformer.data.bpe import BOS_ID, load_tokenizers
from syntaxformer.data.translation_pairs import collate_pairs, decode_translations, encode_pairs
from syntaxformer.modeling.raw_text import padded
from syntaxformer.sharing.syntax_pipeline import SyntaxPipeline

__all__ = ["SyntaxTranslationPipeline"]


@dataclass
class _Sources:
    """Source sentences as :func:`~syntaxformer.data.translation_pairs.encode_pairs` reads a corpus."""

    sources: list[str]
    targets: None = None
    name: str = "inputs"

    def __len__(self) -> int:
        return len(self.sources)


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
        opts, mt = self.options, self.options.translation
        items = encode_pairs(
            _Sources([r["text"] for r in inputs]),
            self.source_tokenizer,
            None,
            self.annotator if opts.syntax_inputs else None,
            opts.syntax_inputs,
            int(mt.get("max_source_length", 64)),
            int(mt.get("max_target_length", 64)),
            show_progress=False,
        )
        pad = self.source_tokenizer.pad_token_id if self.source_tokenizer.pad_token_id is not None else 0
        outputs = self._outputs(items, lambda batch: collate_pairs(batch, pad, BOS_ID), options.get("batch_size"))
        texts = decode_translations(padded(outputs["ids"], -100, "int64"), self.target_tokenizer)
        return [[{"translation_text": t}] for t in texts]
