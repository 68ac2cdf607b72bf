"""Helpers of the fault-injection suite (tests/faults/conftest.py has the fixtures).

The fault-injection suite: bad input as an author (or a broken checkout) produces it.

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


def have_mermaid() -> bool:
    return shutil.which("node") is not None and (REPO / "node_modules" / "mermaid" / "package.json").is_file()


needs_mermaid = pytest.mark.skipif(not have_mermaid(), reason="node or node_modules/mermaid missing (make mermaid-js)")
