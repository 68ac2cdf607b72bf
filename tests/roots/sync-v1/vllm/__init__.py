"""A tiny stand-in for vLLM, version 1 (test fixture of tests/sync)."""
