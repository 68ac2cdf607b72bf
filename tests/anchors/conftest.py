from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOTS = Path(__file__).resolve().parents[1] / "roots"
FAKE = ROOTS / "fake-vllm"


@pytest.fixture(scope="session")
def fake_root() -> Path:
    return FAKE


@pytest.fixture(scope="module")
def src_build(tmp_path_factory):
    """``src_build("src-anchors", "html", parallel=0, src_root=None, **overrides)`` → built SphinxTestApp.

    The test root is copied to a temporary directory (so the index cache and
    the output never land in the repository) and built once per module and
    argument set.
    """
    from sphinx.testing.util import SphinxTestApp

    apps: dict[tuple, SphinxTestApp] = {}

    def _build(name: str, buildername: str = "html", *, parallel: int = 0, src_root: Path | None = None, **overrides):
        key = (name, buildername, parallel, str(src_root), tuple(sorted(overrides.items())))
        if key in apps:
            return apps[key]
        src = tmp_path_factory.mktemp(name) / name
        shutil.copytree(ROOTS / f"test-{name}", src)
        conf = {"vllm_book_src_root": str(src_root or FAKE), **overrides}
        app = SphinxTestApp(buildername, srcdir=src, confoverrides=conf, parallel=parallel)
        app.build()
        apps[key] = app
        return app

    yield _build
    for app in apps.values():
        app.cleanup()


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: artefacts of creating several Sphinx apps in one process (docutils' global registries)
_REREGISTERED = re.compile(r"is already registered|\[app\.add_(node|role|directive|generic_role)\]")


def warnings_of(app) -> list[str]:
    text = _ANSI.sub("", app.warning.getvalue())
    # a warning's "    fix: …" line belongs to it
    text = re.sub(r"\n(\s+fix: )", r" \1", text)
    return [line for line in text.splitlines() if ("WARNING" in line or "ERROR" in line) and not _REREGISTERED.search(line)]


@pytest.fixture(name="warnings_of", scope="session")
def _warnings_of():
    return warnings_of
