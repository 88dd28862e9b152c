"""Analyses of trained (or untrained) models and of run folders: significance, length buckets, figures, minimal-pair
suites, the HTML viewer, probes and the at-init diagnostic (the module map: ``docs/architecture.md``)."""
