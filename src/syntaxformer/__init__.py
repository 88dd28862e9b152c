"""syntaxformer: make any pretrained Transformer syntax-aware.

Implements SG-Net (syntax-guided self-attention), Syntax-BERT (masked sub-network attention) and the
Syntax-Infused Transformer (syntactic feature embeddings) on top of Hugging Face models.
"""

from syntaxformer.data import Document, Sentence, Tree

__version__ = "0.1.0.dev0"

__all__ = ["Document", "Sentence", "Tree", "__version__"]
