"""``python -m vllm_book.index``: build (or load) the source index and print timings.

    python -m vllm_book.index                       # the pinned tree, cache in _build/.cache
    python -m vllm_book.index --no-cache --jobs 2   # a cold build on 2 processes
    python -m vllm_book.index --lookup vllm/v1/core/sched/scheduler.py::Scheduler.schedule
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import build_index


def main(argv: list[str] | None = None) -> int:
    from ..pin import REPO_ROOT, ProvisionError, source_root

    ap = argparse.ArgumentParser(prog="python -m vllm_book.index", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, help="tree to index (default: the provisioned pin)")
    ap.add_argument("--dirs", default="vllm,csrc", help="comma-separated top-level directories")
    ap.add_argument("--cache-dir", type=Path, default=REPO_ROOT / "_build" / ".cache")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--jobs", type=int, default=0, help="worker processes (0 = one per CPU)")
    ap.add_argument("--lookup", action="append", default=[], help="resolve an anchor target and print it")
    args = ap.parse_args(argv)
    try:
        root = args.root or source_root()
    except ProvisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    index = build_index(root, args.dirs.split(","), cache_dir=None if args.no_cache else args.cache_dir, jobs=args.jobs)
    elapsed = time.perf_counter() - t0
    n_sym = sum(len(f.symbols) for f in index.files.values())
    n_ref = sum(len(f.refs) for f in index.files.values())
    print(f"{index.root}: {len(index.files)} files, {n_sym} symbols, {n_ref} refs, key {index.key[:12]} in {elapsed:.2f}s")
    status = 0
    for target in args.lookup:
        from ..anchors.resolve import AnchorError, resolve

        try:
            r = resolve(index, target)
            print(f"{target} -> {r.location} ({r.kind}{', ' + r.symbol.kind if r.symbol else ''})")
        except AnchorError as exc:
            print(f"{target}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
