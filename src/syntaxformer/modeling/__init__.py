"""Models (SG-Net, Syntax-BERT, syntax-infused features)."""
