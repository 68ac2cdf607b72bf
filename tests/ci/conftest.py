"""Fixtures of the CI-script tests: fake ``nvidia-smi``/``vllm``/``gh``/``make`` (``tests/ci/fakes``) and a small
git checkout of the book for ``scripts/gpu-validation.sh`` (helpers: ``ci_helpers.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ci_helpers import REPO, commit_all, git


@pytest.fixture
def gpu_repo(tmp_path) -> Path:
    """A committed checkout holding what the GPU script reads: the real pin and the real commands file."""
    root = tmp_path / "book"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "vllm-pin.toml", root / "vllm-pin.toml")
    shutil.copy(REPO / "scripts" / "gpu-validation.commands", root / "scripts" / "gpu-validation.commands")
    git(root, "init", "-q")
    commit_all(root)
    return root
