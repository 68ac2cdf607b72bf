"""Integration: the real book's EPUB builds with zero warnings and is epubcheck-clean.

The format tests use small test roots; this one catches what only the real chapters contain (a LaTeX
construct the MathML conversion cannot express, a diagram, a table) before a reader's e-reader does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
EPUBCHECK = Path("/usr/share/java/epubcheck.jar")


def test_real_book_epub_is_epubcheck_clean(tmp_path: Path):
    missing = [what for what, ok in (("java + epubcheck (apt-get install epubcheck)",
                                      EPUBCHECK.is_file() and shutil.which("java")),
                                     ("mermaid-cli (make node-tools)", (REPO / "node_modules" / ".bin" / "mmdc").is_file()))
               if not ok]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"missing: {missing}")
        pytest.skip(f"missing: {missing}")
    out = REPO / "_build" / "test-epub"
    cmd = [sys.executable, "-m", "sphinx", "-M", "epub", "source", str(out), "-c", ".", "-W", "--keep-going", "-j", "auto"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "BOOK_LANG": "zh_CN"})
    assert proc.returncode == 0, proc.stderr[-6000:]
    (epub,) = (out / "epub").glob("*.epub")
    check = subprocess.run(["java", "-jar", str(EPUBCHECK), str(epub)], capture_output=True, text=True, timeout=900)
    assert check.returncode == 0, (check.stdout + check.stderr)[-6000:]
    assert "0 fatals / 0 errors / 0 warnings" in check.stdout + check.stderr
