"""Models: SG-Net and Syntax-BERT backbones, each with every task head.

* Configs: :class:`SGNetConfig`, :class:`SyntaxBertConfig` (shared head options in
  :class:`~syntaxformer.modeling.configuration_common.SyntaxModelConfig`); ``config.syntax_inputs`` names the batch
  keys a model reads.
* Backbones: :class:`SGNetModel`, :class:`SyntaxBertModel`; heads (:mod:`syntaxformer.modeling.heads`) composed
  over them as ``{System}For{Task}`` classes, looked up by :func:`model_class` / :data:`MODEL_CLASSES`.

Importing this package registers the ``"syntax"`` attention function and every model with the ``transformers``
Auto classes (config model types ``"syntaxformer"`` for SG-Net and ``"syntaxformer-syntax-bert"`` for
Syntax-BERT), so ``AutoConfig`` / ``AutoModel`` / ``AutoModelFor{SequenceClassification, QuestionAnswering,
MultipleChoice, TokenClassification}.from_pretrained`` load a saved model; saved configs carry ``auto_map``.
``import syntaxformer`` alone is enough: it registers these lazily (:mod:`syntaxformer.registration`).
"""

from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMultipleChoice,
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from syntaxformer.errors import ConfigError
from syntaxformer.modeling.configuration_common import SyntaxModelConfig
from syntaxformer.modeling.configuration_sgnet import AGGREGATIONS, SGNetConfig
from syntaxformer.modeling.configuration_syntax_bert import SyntaxBertConfig
from syntaxformer.modeling.heads import (
    FirstTokenPooler,
    MultipleChoiceHead,
    QuestionAnsweringHead,
    SequenceClassificationHead,
    TokenClassificationHead,
    mean_pool,
    sequence_classification_loss,
    span_loss,
)
from syntaxformer.modeling.modeling_sgnet import (
    SGNetForMultipleChoice,
    SGNetForQuestionAnswering,
    SGNetForSequenceClassification,
    SGNetForTokenClassification,
    SGNetModel,
    SGNetPreTrainedModel,
)
from syntaxformer.modeling.modeling_syntax_bert import (
    SyntaxBertForMultipleChoice,
    SyntaxBertForQuestionAnswering,
    SyntaxBertForSequenceClassification,
    SyntaxBertForTokenClassification,
    SyntaxBertModel,
    SyntaxBertPreTrainedModel,
)
from syntaxformer.modeling.outputs import (
    ContextualStates,
    MultipleChoiceOutput,
    QuestionAnsweringOutput,
    SequenceClassifierOutput,
    SGNetModelOutput,
    SyntaxBertModelOutput,
    TokenClassifierOutput,
)
from syntaxformer.modeling.sg_layer import (
    BiAttentionAggregation,
    ConcatAggregation,
    DualAggregation,
    SyntaxGuidedLayer,
    SyntaxOnlyAggregation,
    build_aggregation,
    multi_head_attention,
)
from syntaxformer.modeling.syntax_attention import register_syntax_attention

#: Systems (backbones) and their config classes.
SYSTEMS: dict[str, type[SyntaxModelConfig]] = {"sgnet": SGNetConfig, "syntax_bert": SyntaxBertConfig}
#: Task heads, in the order of the ``XFor...`` names.
HEADS: tuple[str, ...] = ("sequence_classification", "question_answering", "multiple_choice", "token_classification")

#: ``(system, head)`` -> task model class, for every system and head.
MODEL_CLASSES: dict[tuple[str, str], type] = {
    ("sgnet", "sequence_classification"): SGNetForSequenceClassification,
    ("sgnet", "question_answering"): SGNetForQuestionAnswering,
    ("sgnet", "multiple_choice"): SGNetForMultipleChoice,
    ("sgnet", "token_classification"): SGNetForTokenClassification,
    ("syntax_bert", "sequence_classification"): SyntaxBertForSequenceClassification,
    ("syntax_bert", "question_answering"): SyntaxBertForQuestionAnswering,
    ("syntax_bert", "multiple_choice"): SyntaxBertForMultipleChoice,
    ("syntax_bert", "token_classification"): SyntaxBertForTokenClassification,
}


def model_class(system: str, head: str) -> type:
    """The task model class of a system (``"sgnet"``, ``"syntax_bert"``) and a head (``"sequence_classification"``,
    ``"question_answering"``, ``"multiple_choice"``, ``"token_classification"``).

    Raises:
        ConfigError: an unknown system or head (the message lists the known ones).
    """
    try:
        return MODEL_CLASSES[(system, head)]
    except KeyError:
        known = ", ".join(f"({s!r}, {h!r})" for s, h in MODEL_CLASSES)
        raise ConfigError(
            f"no model for system={system!r}, head={head!r}; known (system, head) pairs: {known}"
        ) from None


_AUTO_CLASSES = {
    "sequence_classification": AutoModelForSequenceClassification,
    "question_answering": AutoModelForQuestionAnswering,
    "multiple_choice": AutoModelForMultipleChoice,
    "token_classification": AutoModelForTokenClassification,
}
_BACKBONES = {"sgnet": SGNetModel, "syntax_bert": SyntaxBertModel}

register_syntax_attention()
# `register` makes the Auto classes load our models in this process; `register_for_auto_class` makes every saved
# config carry `auto_map` (and the folder a copy of the defining module), so that a process that has not imported
# syntaxformer can still load the folder with `trust_remote_code=True` (syntaxformer must be installed there).
for _system, _config_class in SYSTEMS.items():
    AutoConfig.register(_config_class.model_type, _config_class, exist_ok=True)
    _config_class.register_for_auto_class("AutoConfig")
    AutoModel.register(_config_class, _BACKBONES[_system], exist_ok=True)
    _BACKBONES[_system].register_for_auto_class("AutoModel")
    for _head, _auto in _AUTO_CLASSES.items():
        _auto.register(_config_class, MODEL_CLASSES[(_system, _head)], exist_ok=True)
        MODEL_CLASSES[(_system, _head)].register_for_auto_class(_auto.__name__)

__all__ = [
    "AGGREGATIONS",
    "HEADS",
    "MODEL_CLASSES",
    "SYSTEMS",
    "BiAttentionAggregation",
    "ConcatAggregation",
    "ContextualStates",
    "DualAggregation",
    "FirstTokenPooler",
    "MultipleChoiceHead",
    "MultipleChoiceOutput",
    "QuestionAnsweringHead",
    "QuestionAnsweringOutput",
    "SGNetConfig",
    "SGNetForMultipleChoice",
    "SGNetForQuestionAnswering",
    "SGNetForSequenceClassification",
    "SGNetForTokenClassification",
    "SGNetModel",
    "SGNetModelOutput",
    "SGNetPreTrainedModel",
    "SequenceClassificationHead",
    "SequenceClassifierOutput",
    "SyntaxBertConfig",
    "SyntaxBertForMultipleChoice",
    "SyntaxBertForQuestionAnswering",
    "SyntaxBertForSequenceClassification",
    "SyntaxBertForTokenClassification",
    "SyntaxBertModel",
    "SyntaxBertModelOutput",
    "SyntaxBertPreTrainedModel",
    "SyntaxGuidedLayer",
    "SyntaxModelConfig",
    "SyntaxOnlyAggregation",
    "TokenClassificationHead",
    "TokenClassifierOutput",
    "build_aggregation",
    "mean_pool",
    "model_class",
    "multi_head_attention",
    "sequence_classification_loss",
    "span_loss",
]
