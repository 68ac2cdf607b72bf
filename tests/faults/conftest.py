"""The fault-injection suite: bad input as an author (or a broken checkout) produces it.

:func:`fault_book` is a fresh git repository copied from a template built once
per session: ``tests/roots/fault-book`` pinned to a fake release 0.1.0 whose
sdist is ``tests/roots/fake-vllm`` (plus a ``vllm/_version.py``), provisioned
into ``vllm/`` from the download cache (``VLLM_BOOK_CACHE``, no network), with
warm caches (index, Mermaid), clean under both gates.  Each test injects one
fault and runs **both** ``python -m vllm_book.sync validate`` and a ``-W`` HTML
build, in-process (``main()`` of each CLI, so the exit status is the CLI's),
and asserts what the user sees: a non-zero status, ``file:line``, a ``fix:``
line, no traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = REPO / "tests" / "roots"
SHA = "1111111aa1111111111111111111111111111111"
VERSION_PY = "__version__ = version = '0.1.0'\n__version_tuple__ = version_tuple = (0, 1, 0)\n__commit_id__ = commit_id = 'g1111111aa'\n"


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def make_sdist(tree: Path, dest: Path) -> str:
    """``vllm-0.1.0.tar.gz`` of *tree* plus ``vllm/_version.py``; returns its sha256."""
    with tarfile.open(dest, "w:gz") as tar:
        for path in sorted(tree.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                tar.add(path, arcname=f"vllm-0.1.0/{path.relative_to(tree).as_posix()}", recursive=False)
        info = tarfile.TarInfo("vllm-0.1.0/vllm/_version.py")
        info.size, info.mtime = len(VERSION_PY), 1_700_000_000
        tar.addfile(info, io.BytesIO(VERSION_PY.encode()))
    return hashlib.sha256(dest.read_bytes()).hexdigest()


@dataclasses.dataclass
class Run:
    status: int
    output: str

    def __str__(self) -> str:
        return f"exit {self.status}\n{self.output}"


def run_validate(book: Path) -> Run:
    from vllm_book.sync.__main__ import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = main(["--root", str(book), "validate"])
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return Run(status, out.getvalue())


def run_build(book: Path) -> Run:
    """``sphinx-build -M html source _build -c . -W --keep-going`` (what ``make html`` runs), in-process."""
    from sphinx.cmd.build import main

    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(book)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                status = main(["-M", "html", "source", "_build", "-c", ".", "-W", "--keep-going", "-q"])
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(cwd)
    return Run(status, out.getvalue())


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
    shutil.copytree(fault_template, book, symlinks=True)
    return book


def have_mermaid() -> bool:
    return shutil.which("node") is not None and (REPO / "node_modules" / "mermaid" / "package.json").is_file()


needs_mermaid = pytest.mark.skipif(not have_mermaid(), reason="node or node_modules/mermaid missing (make mermaid-js)")


@pytest.fixture(autouse=True)
def _ext_on_path():
    if str(REPO / "ext") not in sys.path:
        sys.path.insert(0, str(REPO / "ext"))
