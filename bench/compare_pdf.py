#!/usr/bin/env python3
"""Is the new PDF the same book as the old one?  ``bench/compare_pdf.py OLD.pdf NEW.pdf``

Three checks (poppler-utils: ``apt-get install -y poppler-utils``):

* **text**: ``pdftotext`` of both files, identical (the first differing lines are shown);
* **destinations**: ``pdfinfo -dests`` (every named destination with its page and position), identical;
* **pixels**: every page rasterised with ``pdftoppm -r 50`` (PPM: raw pixels, so equal bytes mean equal
  pixels), page by page; every differing page is listed.  Pages are rendered in batches
  (``--batch``), the two files side by side, and only a hash of each page is kept, so a
  1,400-page book needs no more than a few MB of disk at a time.

Exit status 0 when all three agree, 1 otherwise (2: a tool is missing or failed).  Use it before and
after every change to the PDF builder that should not change the output (speed, memory)::

    cp _build/pdf/vllm-learning-book.pdf /tmp/before.pdf   # build, keep a copy, change, build again
    .venv/bin/python bench/compare_pdf.py /tmp/before.pdf _build/pdf/vllm-learning-book.pdf

The PDFs' metadata (creation date, ``/ID``) is not compared: it differs on every build.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


class ToolError(Exception):
    pass


def _run(cmd: list[str]) -> str:
    if shutil.which(cmd[0]) is None:
        raise ToolError(f"{cmd[0]} not found: apt-get install -y poppler-utils")
    proc = subprocess.run(cmd, capture_output=True)
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
    return proc.stdout.decode("utf-8", errors="replace")


def pages(pdf: Path) -> int:
    m = re.search(r"^Pages:\s+(\d+)", _run(["pdfinfo", str(pdf)]), re.M)
    if not m:
        raise ToolError(f"pdfinfo {pdf}: no page count")
    return int(m.group(1))


def text(pdf: Path) -> str:
    return _run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"])


def dests(pdf: Path) -> str:
    return _run(["pdfinfo", "-dests", str(pdf)])


def _diff(a: str, b: str, what: str, limit: int = 12) -> list[str]:
    out = list(difflib.unified_diff(a.splitlines(), b.splitlines(), f"old {what}", f"new {what}", n=1, lineterm=""))
    return out[:limit] + ([f"… ({len(out) - limit} more diff lines)"] if len(out) > limit else [])


def page_hashes(pdf: Path, first: int, last: int, dpi: int, tmp: Path) -> dict[int, str]:
    """sha256 of the raw pixels (PPM) of pages *first*…*last* (1-based)."""
    out = tmp / "p"
    _run(["pdftoppm", "-r", str(dpi), "-f", str(first), "-l", str(last), str(pdf), str(out)])
    hashes = {}
    for f in tmp.glob("p-*.ppm"):
        hashes[int(f.stem.rsplit("-", 1)[1])] = hashlib.sha256(f.read_bytes()).hexdigest()
        f.unlink()
    return hashes


def compare(old: Path, new: Path, dpi: int = 50, batch: int = 40, log=print) -> dict:
    result: dict = {"old": str(old), "new": str(new)}
    n_old, n_new = pages(old), pages(new)
    result["pages"] = [n_old, n_new]
    t_old, t_new = text(old), text(new)
    result["text_identical"] = t_old == t_new
    if not result["text_identical"]:
        result["text_diff"] = _diff(t_old, t_new, "pdftotext")
    d_old, d_new = dests(old), dests(new)
    result["dests_identical"] = d_old == d_new
    result["dests"] = max(0, len(d_new.splitlines()) - 1)
    if not result["dests_identical"]:
        result["dests_diff"] = _diff(d_old, d_new, "pdfinfo -dests")
    differing: list[int] = []
    with tempfile.TemporaryDirectory(prefix="compare-pdf-") as tmp, ThreadPoolExecutor(2) as pool:
        ta, tb = Path(tmp, "a"), Path(tmp, "b")
        ta.mkdir()
        tb.mkdir()
        for first in range(1, min(n_old, n_new) + 1, batch):
            last = min(first + batch - 1, n_old, n_new)
            fa = pool.submit(page_hashes, old, first, last, dpi, ta)
            fb = pool.submit(page_hashes, new, first, last, dpi, tb)
            ha, hb = fa.result(), fb.result()
            differing += [p for p in range(first, last + 1) if ha.get(p) is None or ha.get(p) != hb.get(p)]
            log(f"  pages {first}-{last}: {sum(1 for p in differing if first <= p <= last)} differ", file=sys.stderr)
    differing += list(range(min(n_old, n_new) + 1, max(n_old, n_new) + 1))  # pages only one file has
    result["differing_pages"] = differing
    result["pixels_identical"] = not differing
    result["identical"] = result["text_identical"] and result["dests_identical"] and not differing
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--dpi", type=int, default=50)
    ap.add_argument("--batch", type=int, default=40, help="pages rasterised at a time")
    ap.add_argument("--json", type=Path, help="write the result here")
    args = ap.parse_args(argv)
    try:
        res = compare(args.old, args.new, args.dpi, args.batch)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ok = lambda b: "identical" if b else "DIFFERENT"  # noqa: E731
    print(f"pages:        {res['pages'][0]} / {res['pages'][1]}")
    print(f"pdftotext:    {ok(res['text_identical'])}")
    for line in res.get("text_diff", []):
        print(f"    {line}")
    print(f"pdfinfo -dests ({res['dests']} destinations): {ok(res['dests_identical'])}")
    for line in res.get("dests_diff", []):
        print(f"    {line}")
    d = res["differing_pages"]
    print(f"pixels (pdftoppm -r {args.dpi}): " + (ok(True) if not d else
          f"{len(d)} page(s) differ: {', '.join(map(str, d[:60]))}{' …' if len(d) > 60 else ''}"))
    if args.json:
        args.json.write_text(json.dumps(res, ensure_ascii=False, indent=2))
    return 0 if res["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
