"""Analyses: significance tests (:mod:`.significance`) and question-length buckets (:mod:`.buckets`)."""
