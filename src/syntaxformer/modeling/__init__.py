"""Models: the SG-Net, Syntax-BERT and plain-encoder backbones and their configs, each with every task head of
:mod:`syntaxformer.modeling.heads` as ``{System}For{Task}`` (:func:`model_class`).

Importing this package registers the ``"syntax"`` attention function and every built-in model with the
``transformers`` Auto classes (older model types ``"syntaxformer"`` / ``"syntaxformer-syntax-bert"`` load as SG-Net /
Syntax-BERT); ``import syntaxformer`` does it lazily (:mod:`syntaxformer.registration`).
"""

from syntaxformer import registry as _registry
from syntaxformer.errors import ConfigError
from syntaxformer.modeling.configuration import (
    AGGREGATIONS,
    PlainEncoderConfig,
    SGNetConfig,
    SyntaxBertConfig,
    SyntaxModelConfig,
)
from syntaxformer.modeling.heads import (
    ContextualStates,
    FirstTokenPooler,
    MultipleChoiceHead,
    MultipleChoiceOutput,
    QuestionAnsweringHead,
    QuestionAnsweringOutput,
    SequenceClassificationHead,
    SequenceClassifierOutput,
    TokenClassificationHead,
    TokenClassifierOutput,
    mean_pool,
    sequence_classification_loss,
    span_loss,
)
from syntaxformer.modeling.modeling_plain import (
    PlainEncoderForMultipleChoice,
    PlainEncoderForQuestionAnswering,
    PlainEncoderForSequenceClassification,
    PlainEncoderForTokenClassification,
    PlainEncoderModel,
    PlainEncoderPreTrainedModel,
)
from syntaxformer.modeling.modeling_sgnet import (
    SGNetForMultipleChoice,
    SGNetForQuestionAnswering,
    SGNetForSequenceClassification,
    SGNetForTokenClassification,
    SGNetModel,
    SGNetModelOutput,
    SGNetPreTrainedModel,
)
from syntaxformer.modeling.modeling_syntax_bert import (
    SyntaxBertForMultipleChoice,
    SyntaxBertForQuestionAnswering,
    SyntaxBertForSequenceClassification,
    SyntaxBertForTokenClassification,
    SyntaxBertModel,
    SyntaxBertModelOutput,
    SyntaxBertPreTrainedModel,
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

#: Task heads, in the order of the ``XFor...`` names.
HEADS: tuple[str, ...] = _registry.HEADS

#: ``(system, head)`` -> task model class, for every built-in system and head.
MODEL_CLASSES: dict[tuple[str, str], type] = {
    (name, head): spec.model_class(head) for name, spec in _registry.BUILTIN_SYSTEMS.items() for head in spec.models
}


def model_class(system: str, head: str) -> type:
    """The task model class of a system (``"sgnet"``, ``"syntax_bert"``, ``"plain"``, or one from the registry)
    and a head (one of :data:`HEADS`).

    Raises:
        ConfigError: an unknown system or head (the message lists the known ones).
    """
    spec = _registry.system(system)
    if head not in spec.models:
        known = ", ".join(f"({system!r}, {h!r})" for h in spec.models)
        raise ConfigError(f"no model for system={system!r}, head={head!r}; known (system, head) pairs: {known}")
    spec.register_auto()
    return spec.model_class(head)


# The Auto classes load our models in this process; every saved config carries `auto_map`, so that a process that
# has not imported syntaxformer (but has it installed) loads the folder with `trust_remote_code=True`.
for _spec in _registry.BUILTIN_SYSTEMS.values():
    _spec.register_auto()

__all__ = [
    "AGGREGATIONS",
    "HEADS",
    "MODEL_CLASSES",
    "BiAttentionAggregation",
    "ConcatAggregation",
    "ContextualStates",
    "DualAggregation",
    "FirstTokenPooler",
    "MultipleChoiceHead",
    "MultipleChoiceOutput",
    "PlainEncoderConfig",
    "PlainEncoderForMultipleChoice",
    "PlainEncoderForQuestionAnswering",
    "PlainEncoderForSequenceClassification",
    "PlainEncoderForTokenClassification",
    "PlainEncoderModel",
    "PlainEncoderPreTrainedModel",
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
