"""Analyses: attention maps, length buckets, parser-noise curves, probes, significance tests."""
