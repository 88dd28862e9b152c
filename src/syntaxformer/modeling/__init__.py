"""Models: SG-Net and Syntax-BERT (syntax-infused features later).

Importing this package registers the models with the ``transformers`` Auto classes (model type
``"syntaxformer"``), so ``AutoConfig`` / ``AutoModel`` / ``AutoModelForSequenceClassification.from_pretrained``
load a saved syntax model.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

from syntaxformer.modeling.configuration import AGGREGATIONS, SyntaxConfig
from syntaxformer.modeling.heads import FirstTokenPooler, sequence_classification_loss
from syntaxformer.modeling.modeling_sgnet import (
    SGNetForSequenceClassification,
    SGNetModel,
    SGNetPooler,
    mean_pool,
)
from syntaxformer.modeling.modeling_qa import SGNetForQuestionAnswering, SGNetQuestionAnsweringOutput
from syntaxformer.modeling.modeling_mc import SGNetForMultipleChoice, SGNetMultipleChoiceOutput
from syntaxformer.modeling.outputs import SGNetModelOutput, SGNetSequenceClassifierOutput
from syntaxformer.modeling.syntax_bert import (
    SyntaxBertConfig,
    SyntaxBertForSequenceClassification,
    SyntaxBertModel,
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

AutoConfig.register(SyntaxConfig.model_type, SyntaxConfig, exist_ok=True)
AutoModel.register(SyntaxConfig, SGNetModel, exist_ok=True)
AutoModelForSequenceClassification.register(SyntaxConfig, SGNetForSequenceClassification, exist_ok=True)

__all__ = [
    "SyntaxBertConfig",
    "SyntaxBertForSequenceClassification",
    "SyntaxBertModel",
    "AGGREGATIONS",
    "BiAttentionAggregation",
    "ConcatAggregation",
    "DualAggregation",
    "FirstTokenPooler",
    "SGNetForMultipleChoice",
    "SGNetForQuestionAnswering",
    "SGNetForSequenceClassification",
    "SGNetMultipleChoiceOutput",
    "SGNetQuestionAnsweringOutput",
    "SGNetModel",
    "SGNetModelOutput",
    "SGNetPooler",
    "SGNetSequenceClassifierOutput",
    "SyntaxConfig",
    "SyntaxGuidedLayer",
    "SyntaxOnlyAggregation",
    "build_aggregation",
    "mean_pool",
    "sequence_classification_loss",
    "multi_head_attention",
]
