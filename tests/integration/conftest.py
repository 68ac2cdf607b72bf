"""The real book, built once per test session (HTML, -W) and shared by the integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def real_book() -> Path:
    """Build the real book with warnings as errors; return the HTML output dir.

    The output lives in ``_build/test`` so that a second local run is
    incremental; CI starts from a clean clone, so it is a cold build there.
    """
    out = REPO / "_build" / "test"
    cmd = [sys.executable, "-m", "sphinx", "-c", ".", "-b", "html", "-W", "--keep-going", "-j", "auto",
           "-d", str(out / "doctrees"), "source", str(out / "html")]
    env = {**os.environ, "BOOK_LANG": "zh_CN"}
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        pytest.fail(f"real book build failed (exit {proc.returncode}):\n{proc.stderr[-8000:]}")
    return out / "html"
