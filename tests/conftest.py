"""Shared pytest setup: Sphinx test roots live in tests/roots/test-*."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "ext"))

collect_ignore = ["roots"]


@pytest.fixture(scope="session")
def rootdir() -> Path:
    return REPO / "tests" / "roots"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="module")
def build_root(tmp_path_factory, rootdir):
    """Build a test root once per module: ``build_root("chapters", "html", **confoverrides)``.

    Returns the SphinxTestApp after the build, with ``app.warning`` holding every
    warning of that first (full) build.
    """
    import shutil

    from sphinx.testing.util import SphinxTestApp

    apps = []

    def _build(name: str, buildername: str = "html", **confoverrides):
        src = tmp_path_factory.mktemp(name) / name
        shutil.copytree(rootdir / f"test-{name}", src)
        app = SphinxTestApp(buildername, srcdir=src, confoverrides=confoverrides or None)
        apps.append(app)
        app.build()
        return app

    yield _build
    for app in apps:
        app.cleanup()


def _build_book(out: Path, lang: str, *extra: str) -> Path:
    cmd = [sys.executable, "-m", "sphinx", "-c", ".", "-b", "html", "-W", "--keep-going", "-j", "auto",
           *extra, "-d", str(out / "doctrees"), "source", str(out / "html")]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env={**os.environ, "BOOK_LANG": lang})
    if proc.returncode != 0:
        pytest.fail(f"real book build ({lang}) failed (exit {proc.returncode}):\n{proc.stderr[-8000:]}")
    return out / "html"


@pytest.fixture(scope="session")
def real_book() -> Path:
    """Build the real book with warnings as errors; return the HTML output dir.

    The output lives in ``_build/test`` so that a second local run is
    incremental; CI starts from a clean clone, so it is a cold build there.
    """
    return _build_book(REPO / "_build" / "test", "zh_CN")


@pytest.fixture(scope="session")
def english_book() -> Path:
    """The English edition (``_build/test-en``), without the source browser (the Chinese build tests it)."""
    return _build_book(REPO / "_build" / "test-en", "en", "-D", "vllm_book_browser=0")
