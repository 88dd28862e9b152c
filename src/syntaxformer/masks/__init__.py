"""Batched mask builders: SDOI (ancestor) masks, Syntax-BERT relation groups, ablations."""
