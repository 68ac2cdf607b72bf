"""Fixtures of the source-browser tests: real Sphinx builds of tests/roots/test-browser-*."""

from __future__ import annotations

import pytest
from browser_helpers import FAKE, copy_root, make_app


@pytest.fixture(scope="module")
def basic(tmp_path_factory):
    """tests/roots/test-browser-basic over the shared fake tree, built once (html, in-process)."""
    src = copy_root(tmp_path_factory, "browser-basic")
    return make_app(src, src_root=FAKE)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """tests/roots/test-browser-hostile over its own tree of hostile files."""
    src = copy_root(tmp_path_factory, "browser-hostile")
    return make_app(src)
