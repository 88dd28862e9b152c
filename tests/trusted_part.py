"""A module a test run's ``run.json`` names (tests/test_trust.py): importing it only records that it was imported."""

IMPORTED = True
