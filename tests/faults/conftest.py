"""Fixtures of the fault-injection suite (see fault_helpers.py)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest
from fault_helpers import REPO, ROOTS, SHA, git, make_sdist, run_build, run_validate


@pytest.fixture(scope="session")
def fault_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("fault-cache")
    (cache / "sdist").mkdir()
    sha = make_sdist(ROOTS / "fake-vllm", cache / "sdist" / "vllm-0.1.0.tar.gz")
    return cache, sha


@pytest.fixture(scope="session")
def fault_template(tmp_path_factory, fault_cache):
    """The clean book every test copies (built and validated once, so its caches are warm)."""
    from vllm_book import pin as pin_mod
    from vllm_book.sync import pinfiles

    cache, sha = fault_cache
    old = os.environ.get("VLLM_BOOK_CACHE")
    os.environ["VLLM_BOOK_CACHE"] = str(cache)
    try:
        root = tmp_path_factory.mktemp("fault-template") / "book"
        shutil.copytree(ROOTS / "fault-book", root)
        (root / ".gitmodules").write_text('[submodule "vllm"]\n\tpath = vllm\n\turl = http://127.0.0.1:9/vllm-project/vllm.git\n')
        (root / "vllm-pin.toml").write_text(
            "# The fault-injection pin (tests/faults/conftest.py).\n\n"
            f'[vllm]\nversion = "0.1.0"\ncommit = "{SHA}"\nrepository = "http://127.0.0.1:9/vllm-project/vllm"\n\n'
            f'[vllm.sdist]\nfilename = "vllm-0.1.0.tar.gz"\nsha256 = "{sha}"\nindex = "http://127.0.0.1:9/simple/vllm/"\n')
        pinfiles.write_readme(root / "README.md", pin_mod.load_pin(root))
        (root / "vllm").mkdir()
        pin_mod.provision(root, quiet=True)
        (root / ".gitignore").write_text("/node_modules\n/_build/\n__pycache__/\n")
        (root / "node_modules").symlink_to(REPO / "node_modules")
        git(root, "init", "-q")
        git(root, "update-index", "--add", "--cacheinfo", f"160000,{SHA},vllm")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "fault book")
        v, b = run_validate(root), run_build(root)
        assert v.status == 0, str(v)
        assert b.status == 0, str(b)
        shutil.rmtree(root / "_build" / "html")  # keep the caches, not the output
        yield root
    finally:
        if old is None:
            os.environ.pop("VLLM_BOOK_CACHE", None)
        else:
            os.environ["VLLM_BOOK_CACHE"] = old


@pytest.fixture
def fault_book(tmp_path, fault_template, fault_cache, monkeypatch):
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(fault_cache[0]))
    monkeypatch.delenv("VLLM_BOOK_SRC", raising=False)
    book = tmp_path / "book"
    # a full build each time, as in a fresh clone (only the index and Mermaid caches are kept warm);
    # test_incremental_build_repeats_the_failure covers the incremental case
    shutil.copytree(fault_template, book, symlinks=True, ignore=lambda d, names: ["doctrees"] if d.endswith("_build") else [])
    return book


@pytest.fixture(autouse=True)
def _ext_on_path():
    if str(REPO / "ext") not in sys.path:
        sys.path.insert(0, str(REPO / "ext"))
