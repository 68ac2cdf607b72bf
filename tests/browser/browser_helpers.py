"""Helpers of the source-browser tests (imported by conftest and the tests)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOTS = Path(__file__).resolve().parents[1] / "roots"
FAKE = ROOTS / "fake-vllm"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REREGISTERED = re.compile(r"is already registered|\[app\.add_(node|role|directive|generic_role)\]")


def make_app(srcdir: Path, buildername: str = "html", *, src_root: Path | None = None, parallel: int = 0, **overrides):
    """Build *srcdir* (a copy of a test root) once; call again on the same srcdir for an incremental build."""
    from sphinx.testing.util import SphinxTestApp

    conf = {"vllm_book_cache_dir": str(srcdir / "_cache"), **overrides}
    if src_root is not None:
        conf["vllm_book_src_root"] = str(src_root)
    app = SphinxTestApp(buildername, srcdir=srcdir, confoverrides=conf, parallel=parallel)
    try:
        app.build()
    finally:
        app.cleanup()
    return app


def copy_root(tmp_path_factory, name: str) -> Path:
    dest = tmp_path_factory.mktemp(name) / name
    shutil.copytree(ROOTS / f"test-{name}", dest)
    return dest


def warnings_of(app) -> list[str]:
    text = _ANSI.sub("", app.warning.getvalue())
    return [ln for ln in text.splitlines() if ("WARNING" in ln or "ERROR" in ln) and not _REREGISTERED.search(ln)]
