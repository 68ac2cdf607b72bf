"""Timings and sizes of the HTML, EPUB and PDF editions.

``python -m vllm_book.formats.bench [--book] [--synthetic N] [--json FILE] [--profile]``

* ``--book``: the real book (``source/`` with the repository's ``conf.py``);
* ``--synthetic N``: a generated N-chapter book (6 chapters per part) made from
  the text of ``tests/roots/test-formats`` in a temporary directory — each
  chapter repeats the test chapter's body in five sections, with its own
  diagrams — citing ``tests/roots/fake-vllm``;
* each edition is built from scratch (fresh output and doctree dirs) with the
  caches (fonts, diagrams, the PDF reference cache) as they are, then the PDF
  once more to show the warm time; pass ``--cold`` to empty the caches first;
* ``--profile`` runs the (warm) PDF build under cProfile and prints the top
  functions.

:func:`run` returns the same data as a dict, for ``bench/bench.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..pin import REPO_ROOT

TEST_ROOT = REPO_ROOT / "tests" / "roots" / "test-formats"
FAKE_VLLM = REPO_ROOT / "tests" / "roots" / "fake-vllm"
PER_PART = 6
SECTIONS = 5


def _sphinx_build() -> list[str]:
    return [sys.executable, "-m", "sphinx"]


def _pages(pdf: Path) -> int | None:
    try:
        out = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"^Pages:\s+(\d+)", out, re.M)
    return int(m.group(1)) if m else None


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


#: what the EPUB/PDF builds keep in the cache dir (an HTML build makes none of them)
FORMAT_CACHES = ("fonts", "mermaid", "rinoh")


def empty_caches(cache: Path) -> None:
    """Forget the prepared fonts, diagram images and PDF page references under *cache*."""
    for sub in FORMAT_CACHES:
        shutil.rmtree(cache / sub, ignore_errors=True)


def make_synthetic(dest: Path, chapters: int) -> Path:
    """Write an N-chapter book into *dest* (a Sphinx source dir with its conf.py)."""
    src = (TEST_ROOT / "01-part" / "01-chapter.md").read_text(encoding="utf-8")
    front_end = src.index("---", 3) + 3
    body = src[front_end:]
    body = re.sub(r"^\(formats-chapter\)=\n", "", body, flags=re.M)
    body = re.sub(r"^# .*\n", "", body, flags=re.M)
    main, _, _tail = body.partition("## 小结")
    tail = "## 小结" + _tail
    dest.mkdir(parents=True, exist_ok=True)
    conf = (TEST_ROOT / "conf.py").read_text(encoding="utf-8")
    conf = conf.replace('project = "格式测试手册"', f'project = "合成测试手册（{chapters} 章）"')
    conf += f'\nvllm_book_src_root = {str(FAKE_VLLM)!r}\n'
    (dest / "conf.py").write_text(conf, encoding="utf-8")
    parts = (chapters + PER_PART - 1) // PER_PART
    (dest / "index.md").write_text(
        "# 合成测试手册\n\n这是生成的测试书，用来测量 EPUB 与 PDF 的构建时间。\n\n```{toctree}\n:maxdepth: 2\n\n"
        + "".join(f"{p + 1:02d}-part/index\n" for p in range(parts)) + "```\n", encoding="utf-8")
    n = 0
    for p in range(parts):
        part_dir = dest / f"{p + 1:02d}-part"
        part_dir.mkdir(exist_ok=True)
        names = []
        for c in range(PER_PART):
            if n >= chapters:
                break
            n += 1
            name = f"{c + 1:02d}-chapter-{n}"
            names.append(name)
            sections = []
            for s in range(SECTIONS):
                # two diagrams of its own per chapter (about what the book has), the rest shared
                text = main.replace('"等待队列"', f'"等待队列 {n}.{s + 1}"') if s in (0, 2) else main
                sections.append(f"## 第 {s + 1} 节\n\n{text.strip()}\n")
            (part_dir / f"{name}.md").write_text(
                src[:front_end] + f"\n\n# 第 {n} 个测试章节\n\n" + "\n".join(sections) + "\n" + tail,
                encoding="utf-8")
        (part_dir / "index.md").write_text(
            f"# 第 {p + 1} 部分\n\n这一部分有 {len(names)} 章。\n\n```{{toctree}}\n:maxdepth: 1\n\n"
            + "".join(f"{x}\n" for x in names) + "```\n", encoding="utf-8")
    return dest


def _build(label: str, srcdir: Path, confdir: Path, out: Path, builder: str, env: dict, jobs: str,
           overrides: dict[str, str], profile: Path | None = None) -> dict:
    doctrees = out / f"doctrees-{builder}"
    outdir = out / builder
    cmd = _sphinx_build()
    if profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "sphinx"]
    cmd += ["-b", builder, "-c", str(confdir), "-d", str(doctrees), "-q", "-j", jobs]
    for key, value in overrides.items():
        cmd += ["-D", f"{key}={value}"]
    cmd += [str(srcdir), str(outdir)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    result = {"edition": label, "builder": builder, "seconds": round(seconds, 1), "ok": proc.returncode == 0}
    if proc.returncode != 0:
        result["error"] = (proc.stderr or proc.stdout)[-2000:]
        return result
    if builder == "rinoh":
        pdfs = sorted(outdir.glob("*.pdf"))
        if pdfs:
            result.update(file=str(pdfs[0]), bytes=_size(pdfs[0]), pages=_pages(pdfs[0]))
    elif builder == "epub":
        epubs = sorted(outdir.glob("*.epub"))
        if epubs:
            result.update(file=str(epubs[0]), bytes=_size(epubs[0]))
    else:
        result.update(bytes=_size(outdir))
    return result


def run(book: bool = True, synthetic: int = 0, cold: bool = False, jobs: str = "auto",
        profile: bool = False, builders: tuple[str, ...] = ("html", "epub", "rinoh"),
        book_cache: Path | None = None, again: bool = True) -> dict:
    """Build each edition of the real book and/or a synthetic one; *book_cache*: the
    real book's cache dir (default: the book's own, ``_build/.cache``); *again*: build the
    PDF a second time with the caches the first left (the warm time)."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "ext") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results: dict = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}, "books": []}
    with tempfile.TemporaryDirectory(prefix="vllm-book-bench-") as tmp:
        tmpdir = Path(tmp)
        targets = []
        if book:
            targets.append(("book", REPO_ROOT / "source", REPO_ROOT, book_cache or REPO_ROOT / "_build" / ".cache"))
        if synthetic:
            src = make_synthetic(tmpdir / "synthetic", synthetic)
            targets.append((f"synthetic-{synthetic}", src, src, REPO_ROOT / "_build" / ".cache-bench"))
        for name, srcdir, confdir, cache in targets:
            overrides = {} if name == "book" and book_cache is None else {"vllm_book_cache_dir": str(cache)}
            if cold:
                empty_caches(cache)
            out = tmpdir / f"out-{name}"
            runs = []
            for builder in builders:
                runs.append(_build(name, srcdir, confdir, out, builder, env, jobs, overrides))
            if "rinoh" in builders and again:
                shutil.rmtree(out / "rinoh", ignore_errors=True)
                prof = tmpdir / "rinoh.prof" if profile else None
                again = _build(name, srcdir, confdir, out, "rinoh", env, jobs, overrides, prof)
                again["builder"] = "rinoh (again, warm caches, fresh outdir)"
                runs.append(again)
                if prof and prof.is_file():
                    import pstats

                    print(f"== cProfile of the warm PDF build of {name}")
                    pstats.Stats(str(prof)).sort_stats("cumulative").print_stats(30)
                    pstats.Stats(str(prof)).sort_stats("tottime").print_stats(25)
            results["books"].append({"book": name, "runs": runs})
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vllm_book.formats.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--book", action="store_true", help="the real book (default when nothing is chosen)")
    ap.add_argument("--synthetic", type=int, default=0, metavar="N", help="a generated N-chapter book")
    ap.add_argument("--cold", action="store_true", help="empty the font/diagram/PDF caches first")
    ap.add_argument("--profile", action="store_true", help="cProfile the warm PDF build")
    ap.add_argument("-j", "--jobs", default="auto")
    ap.add_argument("--builders", default="html,epub,rinoh")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    book = args.book or not args.synthetic
    res = run(book=book, synthetic=args.synthetic, cold=args.cold, jobs=args.jobs, profile=args.profile,
              builders=tuple(args.builders.split(",")))
    for b in res["books"]:
        for r in b["runs"]:
            extra = ""
            if r.get("pages"):
                extra += f", {r['pages']} pages"
            if r.get("bytes"):
                extra += f", {r['bytes'] / 1e6:.1f} MB"
            status = "" if r["ok"] else "  FAILED: " + r.get("error", "")[-400:]
            print(f"{b['book']:>16}  {r['builder']:<44} {r['seconds']:>7.1f}s{extra}{status}")
    print(f"(machine: {res['machine']['cpus']} CPUs, load {', '.join(f'{x:.1f}' for x in res['machine']['load'])})")
    if args.json:
        args.json.write_text(json.dumps(res, ensure_ascii=False, indent=2))
    return 0 if all(r["ok"] for b in res["books"] for r in b["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
