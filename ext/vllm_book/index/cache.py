"""On-disk cache of the source index.

Layout under ``<cache_dir>/index-v<INDEX_VERSION>/<root-hash>/`` (directories
of other index versions are removed when a new index is saved):

``parsed.pickle``
    per file ``path → (size, mtime_ns, parsed)`` — symbols and xref facts of
    every file; a file is re-parsed only when its size or mtime changed
    (incremental rebuilds re-parse only changed files, then re-link).
``stat.txt``
    signature of the last scan (``path size mtime`` of every file) and the
    content key it had; when a new scan has the same signature the index is
    loaded without reading any source file.
``<key>.pickle``
    the linked :class:`~vllm_book.index.SourceIndex` for content key
    ``key`` (sha256 over every ``(path, sha256)`` and the index version).
    Only the two most recent are kept.

Writes are atomic (temp file + ``os.replace``), so parallel builds sharing a
cache never read a torn file; a corrupt or incompatible file is ignored and
rebuilt.
"""

from __future__ import annotations

from vllm_book.fsutil import write_atomic as _atomic_write

import hashlib
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

KEEP = 2


def _load(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # corrupt, truncated or from another version
        return None


def stat_signature(entries: Sequence[tuple[str, int, int]]) -> str:
    h = hashlib.sha256()
    for path, size, mtime in entries:
        h.update(f"{path} {size} {mtime}\n".encode())
    return h.hexdigest()


class Cache:
    def __init__(self, cache_dir: Path, root: Path, dirs: Sequence[str]) -> None:
        from . import INDEX_VERSION

        ident = hashlib.sha256(f"{Path(root).resolve()}|{','.join(dirs)}".encode()).hexdigest()[:16]
        self.base = Path(cache_dir)
        self.version_dir = self.base / f"index-v{INDEX_VERSION}"
        self.dir = self.version_dir / ident

    def drop_other_versions(self) -> None:
        """Remove caches written by other index versions (they can never be read)."""
        import shutil

        for old in self.base.glob("index-v*"):
            if old.is_dir() and old != self.version_dir:
                shutil.rmtree(old, ignore_errors=True)

    # whole index
    def load_if_unchanged(self, entries: Sequence[tuple[str, int, int]]):
        try:
            sig, key = (self.dir / "stat.txt").read_text().split()
        except (OSError, ValueError):
            return None
        if sig != stat_signature(entries):
            return None
        return self.load_index(key)

    def load_index(self, key: str):
        from . import SourceIndex

        idx = _load(self.dir / f"{key}.pickle")
        if isinstance(idx, SourceIndex) and idx.key == key:
            try:
                os.utime(self.dir / f"{key}.pickle")
            except OSError:
                pass
            return idx
        return None

    def save_index(self, index) -> None:
        self.drop_other_versions()
        _atomic_write(self.dir / f"{index.key}.pickle", pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
        olds = sorted(self.dir.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        olds = [p for p in olds if p.name != "parsed.pickle"]
        for p in olds[KEEP:]:
            try:
                p.unlink()
            except OSError:
                pass

    # per-file parse results
    def load_parsed(self) -> dict[str, tuple]:
        data = _load(self.dir / "parsed.pickle")
        return data if isinstance(data, dict) else {}

    def save_parsed(self, entries: Sequence[tuple[str, int, int]], parsed: dict[str, tuple], key: str) -> None:
        data = {path: (size, mtime, parsed[path]) for path, size, mtime in entries}
        _atomic_write(self.dir / "parsed.pickle", pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
        _atomic_write(self.dir / "stat.txt", f"{stat_signature(entries)} {key}\n".encode())
