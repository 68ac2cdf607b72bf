"""A tiny stand-in for vLLM, version 2 (test fixture of tests/sync)."""
