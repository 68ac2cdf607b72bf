"""Integration: the English edition builds from locale/en with zero warnings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_english_edition(tmp_path: Path):
    out = tmp_path / "en"
    cmd = [sys.executable, "-m", "sphinx", "-c", ".", "-b", "html", "-W", "--keep-going", "-j", "auto",
           "-D", "vllm_book_browser=0", "-d", str(tmp_path / "doctrees"), "source", str(out)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "BOOK_LANG": "en"})
    assert proc.returncode == 0, proc.stderr[-6000:]
    page = (out / "01-overview" / "00-prerequisites.html").read_text()
    assert '<html lang="en"' in page
    for label in ("Who should read this", "Read first", "Level", "You will be able to"):
        assert label in page
    assert "Engineers new to LLM serving" in page  # the card's own text is translated too
    assert "Summary" in page and "Self-check" in page
