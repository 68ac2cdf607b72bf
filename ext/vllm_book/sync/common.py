"""Shared pieces of the sync tools: problems, paths, the source index."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .. import pin as pin_mod
from ..problems import Problem

__all__ = ["Problem"]

SOURCE_DIR = "source"
REVIEW_FILE = "content-review.toml"
README = "README.md"


def config_default(name: str):
    """The default of a ``vllm_book_*`` config value (``conf.py`` does not override those we read)."""
    from ..config import CONFIG_VALUES

    for n, default, *_ in CONFIG_VALUES:
        if n == name:
            return default
    raise KeyError(name)


def index_dirs() -> tuple[str, ...]:
    return tuple(config_default("vllm_book_browser_dirs"))


def chapter_pattern() -> re.Pattern[str]:
    return re.compile(config_default("vllm_book_chapter_pattern"))


def rel(root: Path, path: Path | str) -> str:
    p = Path(path)
    try:
        return p.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(p)


def line_of(path: Path, pattern: str, default: int = 1) -> int:
    """1-based line of the first line matching *pattern* (regex) in *path*."""
    try:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(pattern, line):
                return i
    except OSError:
        pass
    return default


def git(root: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


def log(msg: str) -> None:
    print(f"[vllm-book] {msg}", file=sys.stderr, flush=True)


def index_cache(root: Path) -> Path:
    """The Sphinx build's index cache (``vllm_book_cache_dir`` default), shared with ``make html``."""
    return root / "_build" / ".cache"


def build_tree_index(tree: Path, cache: Path | None):
    from ..index import build_index

    return build_index(tree, index_dirs(), cache_dir=cache, jobs=0)


def pin_line(root: Path, key: str) -> int:
    return line_of(root / pin_mod.PIN_FILE, rf"^\s*{re.escape(key)}\s*=")
