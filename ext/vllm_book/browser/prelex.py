"""Warm the highlight cache: lex every browsable file whose runs are not cached.

Used by the background worker (:mod:`.worker`) as its first step, before the
source index exists; :func:`run` does it stand-alone (tests).  The cache is
keyed by the sha256 of the file's bytes, like :func:`.highlight.lex_cached`.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import os
import time
from pathlib import Path

from .highlight import cache_file, lex_cached, lexer_name


def todo(root: Path, dirs: list[str], cache_dir: Path) -> list[tuple[str, str, str, int]]:
    """``[(path, sha256, lexer, size)]`` of the files whose runs are not cached, biggest first."""
    from ..index import lang_of, scan

    out = []
    seen: set[tuple[str, str]] = set()
    for path, size, _mtime in scan(root, dirs):
        lexer = lexer_name(path, lang_of(path) or "text")
        if lexer == "text":
            continue
        try:
            sha = hashlib.sha256((root / path).read_bytes()).hexdigest()
        except OSError:
            continue
        if (sha, lexer) in seen or cache_file(cache_dir, sha, lexer).exists():
            continue
        seen.add((sha, lexer))
        out.append((path, sha, lexer, size))
    out.sort(key=lambda t: -t[3])
    return out


def lex_chunk(root: str, cache_dir: str, items: list[tuple[str, str, str, int]]) -> int:
    n = 0
    for path, sha, lexer, _size in items:
        try:
            text = (Path(root) / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        _runs, lexed = lex_cached(text, lexer, sha, cache_dir)
        n += lexed
    return n


def chunks(items: list[tuple[str, str, str, int]], jobs: int) -> list[list[tuple[str, str, str, int]]]:
    """*items* (biggest first) in about ``8 × jobs`` chunks of about equal size."""
    total = sum(i[3] for i in items) or 1
    target = max(total // (max(jobs, 1) * 8), 1)
    out, cur, acc = [], [], 0
    for it in items:
        cur.append(it)
        acc += it[3]
        if acc >= target:
            out.append(cur)
            cur, acc = [], 0
    if cur:
        out.append(cur)
    return out


def run(root: Path, dirs: list[str], cache_dir: Path, jobs: int = 0) -> dict:
    """Lex what is not cached; ``{"files": …, "lexed": …, "seconds": …}``."""
    t0 = time.perf_counter()
    items = todo(Path(root), dirs, cache_dir)
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    lexed = 0
    if items:
        if jobs <= 1 or len(items) < 8:
            lexed = lex_chunk(str(root), str(cache_dir), items)
        else:
            with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = [pool.submit(lex_chunk, str(root), str(cache_dir), c) for c in chunks(items, jobs)]
                lexed = sum(f.result() for f in futures)
    return {"files": len(items), "lexed": lexed, "seconds": round(time.perf_counter() - t0, 3)}
