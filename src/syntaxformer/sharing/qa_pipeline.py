"""The span-QA pipeline of an exported model folder (SQuAD 2.0 models; see :mod:`syntaxformer.sharing.syntax_pipeline`):
the task's own windows and decoding (:mod:`syntaxformer.tasks.span_qa`) with the run's options, answers as
``syntaxformer predict`` gives them (:func:`~syntaxformer.modeling.raw_text.answer_record`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from syntaxformer.modeling.raw_text import QA_OPTIONS, answer_record, pipeline_answer
from syntaxformer.sharing.syntax_pipeline import SyntaxPipeline
from syntaxformer.tasks.span_qa import SquadFeaturizer, postprocess_predictions

__all__ = ["SyntaxQuestionAnsweringPipeline"]


@dataclass
class _Question:
    """A question over a passage, as :class:`~syntaxformer.tasks.span_qa.SquadFeaturizer` reads it (no answer)."""

    qid: str
    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = True


class SyntaxQuestionAnsweringPipeline(SyntaxPipeline):
    """Span QA with unanswerable questions (SQuAD 2.0 models).

    Inputs: ``question=..., context=...``, a ``{"question", "context"}`` mapping or a list of them. Returns per
    question ``{"answer", "start", "end", "score", "null_score", "best_answer"}``: ``answer`` is ``""`` (and
    ``start`` / ``end`` ``None``) when the no-answer score exceeds the run's threshold (tuned on its dev
    articles); ``score`` is the best span's score (start + end logits), ``best_answer`` that span's text either way.
    With ``top_k`` above 1, a list of the ``top_k`` best spans per question instead (``{"answer", "start", "end",
    "score"}``, best first, different positions); ``max_answer_len`` bounds a span's length in tokens (default:
    the run's ``max_answer_length``).
    """

    _call_options = QA_OPTIONS
    _single = (dict,)

    def __call__(  # type: ignore[override]  # no *args, as question-answering
        self, inputs: Any = None, *, question: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Any:
        if inputs is None and (question is not None or context is not None):
            inputs = {"question": question, "context": context}
        out, single = self._call(inputs, kwargs)
        return out[0] if single else out

    def answers(self, inputs: list[dict[str, Any]], options: dict[str, Any]) -> list[Any]:
        opts, qa = self.options, self.options.qa
        questions = [
            _Question(str(r.get("id", f"input-{i}")), r["question"], r["context"]) for i, r in enumerate(inputs)
        ]
        featurizer = SquadFeaturizer(
            self.tokenizer,
            self.annotator if opts.syntax_inputs else None,
            max_length=opts.max_length,
            stride=int(qa.get("doc_stride", 128)),
            question_first=bool(qa.get("question_first", False)),
        )
        windows = featurizer(questions)
        items = [opts.window_inputs(w.aligned) for w in windows]
        outputs = self._outputs(items, options.get("batch_size"))
        verifier = outputs.get("verifier_logits")
        use_verifier = qa.get("verifier", "none") != "none" and verifier is not None
        threshold = float(qa.get("null_threshold", 0.0))
        top_k = options.get("top_k")
        top_k = top_k if top_k is not None and top_k > 1 else None
        result = postprocess_predictions(
            questions,
            windows,
            outputs["start_logits"],
            outputs["end_logits"],
            np.asarray(verifier) if use_verifier else None,
            n_best=max(int(qa.get("n_best", 20)), int(top_k or 1)),
            max_answer_length=int(options.get("max_answer_len") or qa.get("max_answer_length", 30)),
            beta1=float(qa.get("beta1", 1.0)),
            beta2=float(qa.get("beta2", 1.0)),
            null_threshold=threshold,
        )
        return [
            pipeline_answer(
                answer_record(r, result.nbest.get(q.qid) or [], float(result.na_scores[q.qid]), threshold, top_k)
            )
            for r, q in zip(inputs, questions)
        ]
