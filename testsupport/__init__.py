"""Test support shared by tests/, compat-tests/ and conformance/ (not part of the broker)."""
