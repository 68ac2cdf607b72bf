#!/usr/bin/env python3
"""Build-speed and size benchmark of the book and its source browser.

``make bench`` (or ``.venv/bin/python bench/bench.py``) measures, on the real
book and the provisioned vLLM tree:

* ``lex``        plain Pygments: ``list(lexer.get_tokens(text))`` over every
                 browsable file, one process — the yardstick;
* ``cold``       a full HTML build (book + index + browser) with ``-j auto``
                 into an empty ``_build/bench`` with an empty cache;
* ``ratio``      cold / lex (target ≤ 1.6);
* ``noop``       the same build again, nothing changed (target < 5 s);
* ``edit``       after appending a paragraph to one chapter (reverted
                 afterwards; target < 10 s);
* sizes          of ``_build/bench/html/_src``: total bytes, gzipped total
                 (gzip level 6, the ``gzip`` default; target < 15 MB), the
                 median of page.gz / source.gz over file pages (target ≤ 2),
                 and the symbol search index (raw and gzipped);
* formats        the real book's EPUB, then its PDF, with the cache the cold
                 HTML build left (source index warm; fonts, diagrams and PDF
                 page references cold — as on Read the Docs, which builds HTML
                 first), then the PDF again with everything warm; PDF pages.
                 ``--synthetic N`` adds a generated N-chapter book's PDF from
                 cold caches (the finished book has ~60 chapters; target for
                 its PDF: under 6 minutes).  ``--skip-formats`` leaves them out.

Prints a table and writes ``bench/results.json``.  The machine's load average
is recorded too: on a shared machine the absolute times move with it (the
ratio less so, both sides being measured in the same run).  Not a test: the
suite never runs it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "ext"))

TARGETS = {"ratio": 1.6, "noop_s": 5.0, "edit_s": 10.0, "gz_total_mb": 15.0, "median_page_ratio": 2.0,
           "synthetic_pdf_s": 360.0, "cycle_pdf_cold_s": 360.0, "cycle_pdf_warm_s": 180.0}


def gz_len(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


def load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


# --------------------------------------------------------------------------
# the yardstick


def browsable(root: Path, dirs: list[str]) -> list[tuple[str, str]]:
    """(path, lang) of every file the browser renders."""
    from vllm_book.index import lang_of, scan

    return [(p, lang_of(p) or "text") for p, _size, _mtime in scan(root, dirs)]


def plain_lex_seconds(root: Path, files: list[tuple[str, str]]) -> tuple[float, int]:
    """Seconds (process time) plain Pygments needs to lex *files*; and the token count."""
    from pygments.lexers import CLexer, CppLexer, CudaLexer, PythonLexer, TextLexer

    from vllm_book.browser.highlight import lexer_name

    lexers = {"python": PythonLexer(), "cuda": CudaLexer(), "c": CLexer(), "cpp": CppLexer(), "text": TextLexer()}
    texts = [((root / p).read_bytes().decode("utf-8", "replace"), lexers[lexer_name(p, lang)]) for p, lang in files]
    tokens = 0
    t0 = time.perf_counter()
    for text, lexer in texts:
        tokens += len(list(lexer.get_tokens(text)))
    return time.perf_counter() - t0, tokens


# --------------------------------------------------------------------------
# builds


class Book:
    """How to build the book: the real conf.py at the repo root, or a minimal stand-in."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.cache = out / ".cache"
        self.tmp: Path | None = None
        if (REPO / "conf.py").is_file():
            self.confdir = REPO
            self.srcdir = REPO / "source" if (REPO / "source").is_dir() else REPO
        else:  # before the pipeline's conf.py existed: the browser and the anchors alone
            self.tmp = Path(tempfile.mkdtemp(prefix="vllm-book-bench-"))
            (self.tmp / "conf.py").write_text(
                "import sys\n"
                f"sys.path.insert(0, {str(REPO / 'ext')!r})\n"
                'extensions = ["myst_parser", "vllm_book.config", "vllm_book.anchors", "vllm_book.browser"]\n'
                f"vllm_book_repo_root = {str(REPO)!r}\n"
                'language = "zh_CN"\n',
                encoding="utf-8",
            )
            (self.tmp / "index.md").write_text(
                "# bench\n\n{src}`vllm/v1/core/sched/scheduler.py::Scheduler.schedule`\n", encoding="utf-8"
            )
            self.confdir = self.srcdir = self.tmp

    def chapter(self) -> Path:
        """The chapter the edit benchmark appends to: one citing the source, else any."""
        mds = sorted(p for p in self.srcdir.rglob("*.md") if "_build" not in p.parts and not p.name.startswith("_"))
        citing = [p for p in mds if "{src}" in p.read_text(encoding="utf-8") and p.name != "index.md"]
        return (citing or mds)[0]

    def build(self, name: str) -> tuple[float, str]:
        """Run one build; its output, each line stamped with the seconds since the start,
        goes to ``<out>/<name>.log`` (kept next to the results for a closer look)."""
        cmd = [
            sys.executable, "-m", "sphinx", "-M", "html", str(self.srcdir), str(self.out),
            "-c", str(self.confdir), "-j", "auto", "-D", f"vllm_book_cache_dir={self.cache}",
        ]
        env = dict(os.environ, BOOK_LANG=os.environ.get("BOOK_LANG", "zh_CN"))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "ext"), env.get("PYTHONPATH", "")) if p)
        lines = []
        t0 = time.perf_counter()
        with subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            for line in proc.stdout:  # type: ignore[union-attr]
                lines.append(f"{time.perf_counter() - t0:7.2f} {line}")
        dt = time.perf_counter() - t0
        log = "".join(lines)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"{name}.log").write_text(log, encoding="utf-8")
        if proc.returncode != 0:
            sys.stderr.write(log[-4000:])
            raise SystemExit(f"bench: the build failed ({proc.returncode}): {' '.join(cmd)}")
        return dt, log

    def cleanup(self) -> None:
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def browser_line(log: str) -> str:
    m = re.findall(r"vllm-book browser: .*", log)
    return m[-1] if m else ""


def phases(log: str) -> dict:
    """Seconds of the phases a build reports: source index, Mermaid, browser, background highlighter."""
    out = {}
    for key, pattern in (
        ("index_s", r"source index of .*\(([\d.]+)s\)"),
        ("mermaid_s", r"Mermaid diagram.*?([\d.]+)s\s*$"),
        ("browser_s", r"vllm-book browser: .* in ([\d.]+)s →"),
        ("highlighter_s", r"background highlighter: \d+ files in ([\d.]+)s"),
        ("highlighter_waited_s", r"background highlighter: .*waited ([\d.]+)s"),
    ):
        m = re.findall(pattern, log, re.M)
        if m:
            out[key] = float(m[-1])
    return out


# --------------------------------------------------------------------------
# sizes


def sizes(outdir: Path, root: Path, prefix: str = "_src") -> dict:
    base = outdir / prefix
    total = total_gz = 0
    ratios = []
    pages = 0
    for page in base.rglob("*"):
        if not page.is_file():
            continue
        data = page.read_bytes()
        g = gz_len(data)
        total += len(data)
        total_gz += g
        rel = page.relative_to(base).as_posix()
        if rel.endswith(".html"):
            pages += 1
            src = root / rel[: -len(".html")]
            if not rel.endswith("/index.html") and rel != "index.html" and src.is_file():
                ratios.append(g / max(gz_len(src.read_bytes()), 1))
    sym = base / "_static" / "symbols.js"
    sym_bytes = sym.read_bytes() if sym.is_file() else b""
    ratios.sort()
    return {
        "pages": pages,
        "file_pages": len(ratios),
        "bytes": total,
        "gz_bytes": total_gz,
        "gz_total_mb": round(total_gz / 1e6, 2),
        "median_page_ratio": round(statistics.median(ratios), 3) if ratios else None,
        "p90_page_ratio": round(ratios[int(len(ratios) * 0.9)], 3) if ratios else None,
        "symbols_js_bytes": len(sym_bytes),
        "symbols_js_gz_bytes": gz_len(sym_bytes) if sym_bytes else 0,
    }


# --------------------------------------------------------------------------
# EPUB and PDF


def formats(cache: Path, synthetic: int, real_cycle: int = 0) -> list[dict]:
    """EPUB + PDF (+ PDF again, warm) of the real book with *cache*; a synthetic book's PDF, cold; the real
    chapters cycled to *real_cycle*: EPUB and PDF cold, then the PDF warm."""
    from vllm_book.formats import bench as fbench

    fbench.empty_caches(cache)  # what an HTML build leaves out: as cold as Read the Docs
    print("bench: EPUB and PDF of the book …", flush=True)
    rows = []
    for b in fbench.run(book=True, builders=("epub", "rinoh"), book_cache=cache)["books"]:
        rows += [dict(r, book=b["book"]) for r in b["runs"]]
    if synthetic:
        print(f"bench: PDF of a synthetic {synthetic}-chapter book, cold …", flush=True)
        for b in fbench.run(book=False, synthetic=synthetic, cold=True, builders=("rinoh",), again=False)["books"]:
            rows += [dict(r, book=b["book"]) for r in b["runs"]]
    if real_cycle:
        print(f"bench: EPUB and PDF of the real chapters cycled to {real_cycle}, cold, then the PDF warm …", flush=True)
        for b in fbench.run(book=False, real_cycle=real_cycle, cold=True, builders=("epub", "rinoh"),
                            max_rss_gb=12.0)["books"]:
            rows += [dict(r, book=b["book"]) for r in b["runs"]]
    for r in rows:
        r.pop("file", None)
    return rows


# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "_build" / "bench", help="build directory (emptied first)")
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "results.json")
    ap.add_argument("--skip-lex", action="store_true", help="reuse the lex time of the previous results.json")
    ap.add_argument("--skip-formats", action="store_true", help="no EPUB/PDF builds")
    ap.add_argument("--synthetic", type=int, default=0, metavar="N",
                    help="also time the PDF of a generated N-chapter book from cold caches (e.g. 60)")
    ap.add_argument("--real-cycle", type=int, default=0, metavar="N",
                    help="also time EPUB and PDF of the real chapters repeated to N (61: the finished book)")
    args = ap.parse_args(argv)

    from vllm_book import pin
    from vllm_book.index import INDEX_VERSION  # noqa: F401 - fail early without the index

    root = pin.source_root(REPO)
    dirs = ["vllm", "csrc"]
    files = browsable(root, dirs)
    res: dict = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "tree": {"root": str(root), "files": len(files), "pin": pin.load_pin(REPO).commit},
        "load_before": load(),
    }
    print(f"bench: {len(files)} browsable files under {root} ({', '.join(dirs)}); load {res['load_before']}", flush=True)

    if args.skip_lex and args.results.is_file():
        res["lex_s"] = json.loads(args.results.read_text())["lex_s"]
        res["lex_tokens"] = None
    else:
        print("bench: plain Pygments lex …", flush=True)
        res["lex_s"], res["lex_tokens"] = plain_lex_seconds(root, files)
        res["lex_s"] = round(res["lex_s"], 2)

    book = Book(args.out)
    try:
        shutil.rmtree(args.out, ignore_errors=True)
        print("bench: cold build …", flush=True)
        res["cold_s"], log = book.build("cold")
        res["cold_browser"] = browser_line(log)
        res["cold_phases"] = phases(log)
        res["load_after_cold"] = load()
        print("bench: no-op rebuild …", flush=True)
        res["noop_s"], log = book.build("noop")
        res["noop_browser"] = browser_line(log)
        chapter = book.chapter()
        original = chapter.read_bytes()
        print(f"bench: edit {chapter.relative_to(REPO)} and rebuild …", flush=True)
        try:
            chapter.write_bytes(original + "\n\n本段由 bench/bench.py 临时追加，测完即删。\n".encode())
            res["edit_s"], log = book.build("edit")
            res["edit_browser"] = browser_line(log)
            res["edit_chapter"] = str(chapter.relative_to(REPO))
        finally:
            chapter.write_bytes(original)
        res["sizes"] = sizes(args.out / "html", root)
    finally:
        book.cleanup()
    if not args.skip_formats:
        res["formats"] = formats(args.out / ".cache", args.synthetic, args.real_cycle)
    res["ratio"] = round(res["cold_s"] / res["lex_s"], 3) if res["lex_s"] else None
    for k in ("cold_s", "noop_s", "edit_s"):
        res[k] = round(res[k], 2)
    res["load_after"] = load()
    s = res["sizes"]
    checks = {
        "ratio": res["ratio"] is not None and res["ratio"] <= TARGETS["ratio"],
        "noop_s": res["noop_s"] < TARGETS["noop_s"],
        "edit_s": res["edit_s"] < TARGETS["edit_s"],
        "gz_total_mb": s["gz_total_mb"] < TARGETS["gz_total_mb"],
        "median_page_ratio": s["median_page_ratio"] is not None and s["median_page_ratio"] <= TARGETS["median_page_ratio"],
    }
    synthetic_pdf = next((r for r in res.get("formats", []) if r["book"].startswith("synthetic") and r["builder"] == "rinoh"), None)
    if synthetic_pdf is not None:
        checks["synthetic_pdf_s"] = synthetic_pdf["ok"] and synthetic_pdf["seconds"] < TARGETS["synthetic_pdf_s"]
    cycle = [r for r in res.get("formats", []) if r["book"].startswith("real-cycle") and r["builder"].startswith("rinoh")]
    if cycle:
        checks["cycle_pdf_cold_s"] = cycle[0]["ok"] and cycle[0]["seconds"] < TARGETS["cycle_pdf_cold_s"]
        if len(cycle) > 1:
            checks["cycle_pdf_warm_s"] = cycle[1]["ok"] and cycle[1]["seconds"] < TARGETS["cycle_pdf_warm_s"]
    res["targets"] = TARGETS
    res["ok"] = checks

    def row(name: str, value: str, target: str = "", key: str = "") -> str:
        mark = ("ok" if checks[key] else "MISSED") if key else ""
        return f"  {name:<34} {value:>16}   {target:<10} {mark}"

    print("\n《vLLM 学习手册》 bench  (cpus %s, load %s → %s)" % (os.cpu_count(), res["load_before"], res["load_after"]))
    print(row("plain Pygments lex (1 process)", f"{res['lex_s']:.1f} s"))
    print(row("cold build -j auto (book+browser)", f"{res['cold_s']:.1f} s"))
    for k, v in res.get("cold_phases", {}).items():
        print(row(f"  of which {k[:-2].replace('_', ' ')}", f"{v:.1f} s"))
    print(row("  ratio cold / lex", f"{res['ratio']:.2f}×", "≤ 1.6×", "ratio"))
    print(row("no-op rebuild", f"{res['noop_s']:.1f} s", "< 5 s", "noop_s"))
    print(row("rebuild after a chapter edit", f"{res['edit_s']:.1f} s", "< 10 s", "edit_s"))
    print(row("browser output", f"{s['bytes'] / 1e6:.1f} MB"))
    print(row("  gzipped", f"{s['gz_total_mb']:.2f} MB", "< 15 MB", "gz_total_mb"))
    print(row("  median page.gz / source.gz", f"{s['median_page_ratio']:.2f}×", "≤ 2×", "median_page_ratio"))
    print(row("  pages (files + directories)", f"{s['pages']:,}"))
    print(row("symbol search index", f"{s['symbols_js_bytes'] / 1e3:.0f} KB"))
    print(row("  gzipped", f"{s['symbols_js_gz_bytes'] / 1e3:.0f} KB"))
    for r in res.get("formats", []):
        what = {"epub": "EPUB", "rinoh": "PDF, cold caches"}.get(r["builder"], "PDF again, warm")
        extra = f", {r['pages']} pages" if r.get("pages") else ""
        value = f"{r['seconds']:.1f} s" if r["ok"] else "FAILED"
        key = "synthetic_pdf_s" if r is synthetic_pdf else ""
        if cycle and r is cycle[0]:
            key = "cycle_pdf_cold_s"
        elif len(cycle) > 1 and r is cycle[1]:
            key = "cycle_pdf_warm_s"
        if r.get("s_per_page"):
            extra += f", {r['s_per_page']:.3f} s/page"
        if r.get("peak_rss_mb"):
            extra += f", peak RSS {r['peak_rss_mb'] / 1e3:.1f} GB"
        target = {"synthetic_pdf_s": "< 360 s", "cycle_pdf_cold_s": "< 360 s", "cycle_pdf_warm_s": "< 180 s"}.get(key, "")
        print(row(f"{what} ({r['book']})", value, target, key) + extra)
        if not r["ok"]:
            print("    " + r.get("error", "")[-600:].replace("\n", "\n    "))
    for k in ("cold_browser", "noop_browser", "edit_browser"):
        print(f"  {k}: {res.get(k, '')}")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {args.results.relative_to(REPO) if args.results.is_relative_to(REPO) else args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
