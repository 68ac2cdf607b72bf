"""The real book fixture lives in tests/conftest.py (shared with tests/reader)."""
