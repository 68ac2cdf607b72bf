"""The browser's background process: lex early, render while Sphinx writes the book.

``python -m vllm_book.browser.worker ROOT HL_CACHE --dirs vllm csrc --jobs N``

Started by the extension at ``builder-inited`` (before the source index is
built).  It

1. lexes every browsable file whose runs are not cached yet into the
   highlight cache (:mod:`.prelex`) with a pool of *N* processes (one per
   CPU) — lexing is ~85 % of the browser's CPU time and needs nothing but
   the files, so it overlaps the index build and the reading;
2. reads one line from stdin: the path of a pickled spec (the keyword
   arguments of :class:`~vllm_book.browser.BrowserBuild`, sent at
   ``env-updated`` when every citation is known) — or EOF: then it only
   reports the lexing;
3. loads the source index from its cache, renders the browser with the same
   pool (while Sphinx writes the book's pages) and prints one JSON line:
   ``{"prelex": …, "stats": …, "log": [[level, message], …]}``.

It runs at a lower priority (``nice +5``): the index build and the reading
are on the build's critical path, the worker is not until the book is
written.  The extension waits for it in ``build-finished``, replays its log through
Sphinx's logger, and falls back to rendering in-process should it fail.  A
separate process (not a pool inside Sphinx) keeps worker threads and forks
out of the Sphinx process, which itself forks for ``-j``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import pickle
import sys
import time
from pathlib import Path

from . import prelex


#: niceness increment of the worker and its pool (CFS weight ~1/3 of a normal process)
NICE = 5


class Log:
    """Collects what :class:`BrowserBuild` logs, for the extension to replay."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str]] = []

    def info(self, msg: str, *args: object, **_kw: object) -> None:
        self.records.append(("info", msg % args if args else msg))

    def verbose(self, msg: str, *args: object, **_kw: object) -> None:
        self.records.append(("verbose", msg % args if args else msg))

    def warning(self, msg: str, *args: object, **_kw: object) -> None:
        self.records.append(("warning", msg % args if args else msg))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vllm_book.browser.worker", description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("hl_cache", type=Path)
    ap.add_argument("--dirs", nargs="+", default=["vllm", "csrc"])
    ap.add_argument("--jobs", type=int, default=0)
    args = ap.parse_args(argv)
    root = args.root.resolve()
    jobs = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    if hasattr(os, "nice"):
        # the index build and the reading are on the build's critical path, the worker is not
        # (it has until the book is written): let them go first; the pool inherits this
        try:
            os.nice(NICE)
        except OSError:
            pass

    t0 = time.perf_counter()
    items = prelex.todo(root, args.dirs, args.hl_cache)
    pool = cf.ProcessPoolExecutor(max_workers=jobs) if jobs > 1 else None
    try:
        futures = [pool.submit(prelex.lex_chunk, str(root), str(args.hl_cache), c)
                   for c in prelex.chunks(items, jobs)] if pool is not None and len(items) >= 8 else []
        line = sys.stdin.readline().strip()  # blocks until env-updated (or EOF)
        if futures:
            lexed = sum(f.result() for f in futures)
        else:
            lexed = prelex.lex_chunk(str(root), str(args.hl_cache), items)
        pre = {"files": len(items), "lexed": lexed, "seconds": round(time.perf_counter() - t0, 3)}
        if not line:
            print(json.dumps({"prelex": pre}), flush=True)
            return 0
        spec_path = Path(line)
        spec = pickle.loads(spec_path.read_bytes())
        spec_path.unlink(missing_ok=True)

        from ..index import build_index
        from . import BrowserBuild

        index = build_index(Path(spec["index_root"]), spec["index_dirs"], cache_dir=Path(spec["index_cache"]))
        log = Log()
        build = BrowserBuild(index, log=log, pool=pool, **spec)
        build.prelex = pre
        stats = build.run()
        print(json.dumps({"prelex": pre, "stats": stats, "log": log.records}, ensure_ascii=False), flush=True)
        return 0
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


if __name__ == "__main__":
    sys.exit(main())
