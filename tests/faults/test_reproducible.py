"""The same book from two clone paths builds the same bytes, ``.buildinfo`` included."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from fault_helpers import run_build


def _tree(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


def test_two_clone_paths_build_identical_trees(fault_template, fault_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(fault_cache[0]))
    monkeypatch.delenv("VLLM_BOOK_SRC", raising=False)
    trees = []
    for name in ("first", "second-clone/at/another/path"):
        book = tmp_path / name / "book"
        shutil.copytree(fault_template, book, symlinks=True, ignore=shutil.ignore_patterns("_build"))
        run = run_build(book)
        assert run.status == 0, str(run)
        trees.append(_tree(book / "_build" / "html"))
    first, second = trees
    assert ".buildinfo" in first
    assert any(p.startswith("_src/") for p in first)  # the source browser is part of what is compared
    differing = sorted(p for p in set(first) | set(second) if first.get(p) != second.get(p))
    assert not differing, differing
