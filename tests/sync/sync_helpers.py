"""Shared helpers of tests/sync (constants, sdist packing, git, skip markers)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = REPO / "tests" / "roots"
V1_SHA = "1111111aa1111111111111111111111111111111"
V2_SHA = "2222222bb2222222222222222222222222222222"


def make_sdist(tree: Path, version: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(tree.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                tar.add(path, arcname=f"vllm-{version}/{path.relative_to(tree).as_posix()}", recursive=False)
    return buf.getvalue()


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def write_pin(root: Path, url: str, version: str, commit: str, sha256: str) -> None:
    (root / "vllm-pin.toml").write_text(
        "# The fixture pin (tests/sync/conftest.py).\n\n"
        f'[vllm]\nversion = "{version}"\ncommit = "{commit}"\nrepository = "http://127.0.0.1:9/vllm-project/vllm"\n\n'
        f'[vllm.sdist]\nfilename = "vllm-{version}.tar.gz"\nsha256 = "{sha256}"\nindex = "{url}"\n'
    )


def have_mermaid() -> bool:
    return shutil.which("node") is not None and (REPO / "node_modules" / "mermaid" / "package.json").is_file()


needs_mermaid = pytest.mark.skipif(not have_mermaid(), reason="node or node_modules/mermaid missing (make mermaid-js)")
needs_ctags = pytest.mark.skipif(shutil.which("ctags") is None, reason="universal-ctags missing (C++ symbols)")
