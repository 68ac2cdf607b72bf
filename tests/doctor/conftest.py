"""pytest wiring for the vllm-doctor tests; the helpers live in doctor_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from doctor_helpers import vllm_source_tree  # noqa: E402


@pytest.fixture(scope="session")
def vllm_tree() -> Path:
    return vllm_source_tree()
