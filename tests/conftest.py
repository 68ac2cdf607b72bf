"""Shared pytest setup: Sphinx test roots live in tests/roots/test-*."""

from __future__ import annotations

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
