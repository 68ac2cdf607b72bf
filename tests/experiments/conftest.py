"""The experiments package is imported from the repository without putting the repository on sys.path
(that would make the provisioned ``vllm/`` source tree importable as a namespace package ``vllm``)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def _load_experiments() -> None:
    if "experiments" in sys.modules:
        return
    pkg = REPO / "experiments"
    spec = importlib.util.spec_from_file_location("experiments", pkg / "__init__.py",
                                                  submodule_search_locations=[str(pkg)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["experiments"] = module
    spec.loader.exec_module(module)


_load_experiments()


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The interpreter of ``make experiments``' environment; under CI=true its absence is a failure."""
    if not VLLM_PYTHON.is_file():
        msg = (f"{VLLM_PYTHON.relative_to(REPO)} is missing: run `make experiments` first "
               "(it installs the pinned vLLM, ~7 GB)")
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return VLLM_PYTHON
