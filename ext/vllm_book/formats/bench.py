"""Timings and sizes of the HTML, EPUB and PDF editions.

``python -m vllm_book.formats.bench [--book] [--synthetic N] [--real-cycle N] [--cold] [--profile] [--json FILE]``

* ``--book``: the real book (``source/`` with the repository's ``conf.py``);
* ``--synthetic N``: a generated N-chapter book (6 chapters per part) made from
  the text of ``tests/roots/test-formats`` in a temporary directory — each
  chapter repeats the test chapter's body in five sections, with its own
  diagrams — citing ``tests/roots/fake-vllm``;
* ``--real-cycle N``: the real book with its written chapters repeated until there are N
  (:func:`make_real_cycle`: distinct docnames and labels, so the page density is the book's);
* each edition is built from scratch (fresh output and doctree dirs) with the
  caches (fonts, diagrams, the PDF reference cache) as they are, then the PDF
  once more to show the warm time; pass ``--cold`` to empty the caches first;
* ``--profile`` runs the last PDF build under cProfile and prints the top
  functions (own time);
* every build reports seconds, peak RSS (the kernel's ``ru_maxrss``) and the load average; a PDF build
  also its pages, phases (diagrams, fonts, rinohtype, each rendering pass) and seconds per page of
  rendering; ``--max-rss-gb`` (default 12) kills a build that grows past it.

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


#: the label definitions a copied chapter renames: MyST ``(label)=`` lines and ``:name:`` options
_LABEL_LINE = re.compile(r"^\(([^()\s]+)\)=[ \t]*$", re.M)
_NAME_OPTION = re.compile(r"^([ \t]*:name:[ \t]*)(\S+)[ \t]*$", re.M)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def make_real_cycle(dest: Path, chapters: int, repo: Path = REPO_ROOT) -> tuple[Path, Path]:
    """The real book with its written chapters repeated (in reading order) until there are *chapters*.

    Writes ``dest/source`` (a copy of ``source/``) and ``dest/curriculum.toml``; returns both.  Copy *k*
    (``k`` = 2, 3, …) of a part ``NN-name`` is a new part ``MM-name-rX`` (``MM`` from 10 on, ``X`` the
    k-th letter) whose chapters keep their file names, so every docname is distinct; each label a copy
    defines (``(label)=``, ``:name:``) gets the suffix ``-rX``.  References in a copy still point at the
    original labels and documents (they exist), so the copy resolves, renders and numbers like the
    original.  With *chapters* below the real count, the book keeps only its first *chapters* chapters.
    """
    import tomllib

    from .. import curriculum as cur_mod

    src = repo / "source"
    out_src = dest / "source"
    if out_src.exists():
        shutil.rmtree(out_src)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, out_src, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    cur_path = repo / "curriculum.toml"
    data = tomllib.loads(cur_path.read_text(encoding="utf-8"))
    written = [(p, c) for p in data.get("part", []) for c in p.get("chapter", [])
               if c.get("status") == "written"]
    if not written:
        raise ValueError(f"{cur_path}: no written chapter to cycle")
    keep = {c["path"] for p, c in written[:chapters]}
    parts: list[tuple[dict, list[dict]]] = []  # (part record, its chapter records)
    for p in data.get("part", []):
        recs = [c for c in p.get("chapter", []) if c.get("status") != "written" or c["path"] in keep]
        for c in p.get("chapter", []):
            if c.get("status") == "written" and c["path"] not in keep:
                (out_src / f"{c['path']}.md").unlink()
        parts.append((p, recs))
    n = min(chapters, len(written))
    copy = 1
    next_dir = 10
    while n < chapters:
        copy += 1
        letter = _LETTERS[(copy - 1) % 26] * (1 + (copy - 1) // 26)
        for p in data.get("part", []):
            recs = [c for c in p.get("chapter", []) if c.get("status") == "written"]
            if not recs or n >= chapters:
                continue
            new_dir = f"{next_dir:02d}-{re.sub(r'^[0-9]+-', '', p['dir'])}-r{letter}"
            next_dir += 1
            old, new = out_src / p["dir"], out_src / new_dir
            new.mkdir()
            for item in (src / p["dir"]).iterdir():  # figures and other non-chapter files come along
                if item.is_dir():
                    shutil.copytree(item, new / item.name)
            index = (src / p["dir"] / "index.md").read_text(encoding="utf-8")
            index = _LABEL_LINE.sub(lambda m: f"({m.group(1)}-r{letter})=", index)
            (new / "index.md").write_text(
                index.replace(f"{{part-chapters}} {p['dir']}", f"{{part-chapters}} {new_dir}"), encoding="utf-8")
            new_recs = []
            for c in recs:
                if n >= chapters:
                    break
                n += 1
                name = c["path"].split("/", 1)[1]
                text = (src / f"{c['path']}.md").read_text(encoding="utf-8")
                text = _LABEL_LINE.sub(lambda m: f"({m.group(1)}-r{letter})=", text)
                text = _NAME_OPTION.sub(lambda m: f"{m.group(1)}{m.group(2)}-r{letter}", text)
                (new / f"{name}.md").write_text(text, encoding="utf-8")
                new_recs.append(dict(c, path=f"{new_dir}/{name}"))
            parts.append((dict(p, dir=new_dir, title=f"{p['title']}（{letter}）",
                               title_en=f"{p.get('title_en', '')} ({letter})"), new_recs))
            del old
    lines = ["# generated by vllm_book.formats.bench --real-cycle: the real curriculum, cycled\n"]
    for p, recs in parts:
        lines.append("\n[[part]]\n")
        for key, value in p.items():
            if key != "chapter":
                lines.append(f"{key} = {_toml_str(value)}\n")
        for c in recs:
            lines.append("\n[[part.chapter]]\n")
            for key, value in c.items():
                if isinstance(value, list):
                    lines.append(f"{key} = [{', '.join(_toml_str(v) for v in value)}]\n")
                else:
                    lines.append(f"{key} = {_toml_str(value)}\n")
    out_cur = dest / "curriculum.toml"
    out_cur.write_text("".join(lines), encoding="utf-8")
    problems = cur_mod.check(cur_mod.load(out_cur), out_src)
    if problems:
        raise ValueError(f"the cycled curriculum is inconsistent: {problems[:3]}")
    return out_src, out_cur


#: lines of the rinoh builder's log that give the phases (``-q`` is not passed to rinoh builds)
_PHASES = {
    "diagrams_s": re.compile(r"\[vllm_book\] rendering \d+ Mermaid diagram\(s\).*?(\d+\.\d+)s"),
    "fonts_s": re.compile(r"\[vllm_book\] wrote .*fonts (\d+\.\d+)s"),
    "render_s": re.compile(r"\[vllm_book\] wrote .*rinohtype (\d+\.\d+)s"),
}
_PASS = re.compile(r"\[vllm_book\] rendering pass (\d+): (\d+) pages, (\d+\.\d+)s")


def phases(log: str) -> dict:
    """Seconds per phase from a rinoh build's log: diagrams, fonts, rinohtype (and each rendering pass)."""
    out: dict = {}
    for key, rx in _PHASES.items():
        m = rx.search(log)
        if m:
            out[key] = float(m.group(1))
    out["passes"] = [{"pass": int(m.group(1)), "pages": int(m.group(2)), "seconds": float(m.group(3))}
                     for m in _PASS.finditer(log)]
    return out


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_capped(cmd: list[str], env: dict, log: Path, max_rss_gb: float | None) -> tuple[int, int, bool]:
    """Run *cmd* with its output in *log*; returns (exit status, peak RSS in bytes, killed for memory).

    The peak is the kernel's (``wait4``'s ``ru_maxrss``: the largest of the process and its waited-for
    descendants).  With *max_rss_gb* the process's RSS is sampled every second and the process group
    is killed above it — a cap that, unlike ``ulimit -v``, leaves the diagrams' browser (which reserves
    tens of GB of address space it never uses) alone.
    """
    import signal
    import threading

    killed = threading.Event()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

        def watch() -> None:
            while proc.returncode is None and not killed.is_set():
                if _rss(proc.pid) > max_rss_gb * 1e9:
                    killed.set()
                    os.killpg(proc.pid, signal.SIGKILL)
                    return
                time.sleep(1)

        if max_rss_gb:
            threading.Thread(target=watch, daemon=True).start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss * 1024, killed.is_set()


def _build(label: str, srcdir: Path, confdir: Path, out: Path, builder: str, env: dict, jobs: str,
           overrides: dict[str, str], profile: Path | None = None, max_rss_gb: float | None = None,
           tag: str = "") -> dict:
    doctrees = out / f"doctrees-{builder}"
    outdir = out / builder
    cmd = _sphinx_build()
    if profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "sphinx"]
    cmd += ["-b", builder, "-c", str(confdir), "-d", str(doctrees), "-j", jobs]
    if builder != "rinoh":
        cmd.append("-q")
    for key, value in overrides.items():
        cmd += ["-D", f"{key}={value}"]
    cmd += [str(srcdir), str(outdir)]
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"{builder}{tag}{'-profile' if profile else ''}.log"
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    returncode, peak, killed = run_capped(cmd, env, log, max_rss_gb)
    seconds = time.perf_counter() - t0
    text = log.read_text(encoding="utf-8", errors="replace")
    result = {"edition": label, "builder": builder, "seconds": round(seconds, 1), "ok": returncode == 0, "log": str(log),
              "peak_rss_mb": round(peak / 1e6), "load": [round(x, 2) for x in load0 + os.getloadavg()],
              "profiled": bool(profile)}
    if killed:
        result["error"] = f"killed: RSS above {max_rss_gb} GB\n" + text[-1500:]
        return result
    if returncode != 0:
        result["error"] = text[-2000:]
        return result
    if builder == "rinoh":
        result["phases"] = phases(text)
        pdfs = sorted(outdir.glob("*.pdf"))
        if pdfs:
            result.update(file=str(pdfs[0]), bytes=_size(pdfs[0]), pages=_pages(pdfs[0]))
            if result.get("pages"):
                render = result["phases"].get("render_s")
                result["s_per_page"] = round((render or seconds) / result["pages"], 3)
    elif builder == "epub":
        epubs = sorted(outdir.glob("*.epub"))
        if epubs:
            result.update(file=str(epubs[0]), bytes=_size(epubs[0]))
    else:
        result.update(bytes=_size(outdir))
    return result


def profile_top(prof: Path, n: int = 10) -> list[dict]:
    """The *n* functions with the most own time (tottime) in a cProfile file."""
    import pstats

    st = pstats.Stats(str(prof))
    rows = []
    for (file, line, func), (cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({func})", "calls": nc, "tottime": round(tt, 2),
                     "cumtime": round(ct, 2)})
    rows.sort(key=lambda r: r["tottime"], reverse=True)
    return rows[:n]


def run(book: bool = True, synthetic: int = 0, cold: bool = False, jobs: str = "auto",
        profile: bool = False, builders: tuple[str, ...] = ("html", "epub", "rinoh"),
        book_cache: Path | None = None, again: bool = True, real_cycle: int = 0,
        max_rss_gb: float | None = None, keep: Path | None = None) -> dict:
    """Build each edition of the real book and/or a synthetic one and/or the real chapters cycled to
    *real_cycle*; *book_cache*: the real book's cache dir (default: the book's own, ``_build/.cache``);
    *again*: build the PDF a second time with the caches the first left (the warm time); *profile*:
    that last PDF build runs under cProfile (slower; its top functions are returned); *keep*: copy
    each PDF there (``<book>.pdf``, ``<book>-again.pdf``) for ``bench/compare_pdf.py``."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "ext") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    results: dict = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}, "books": []}
    with tempfile.TemporaryDirectory(prefix="vllm-book-bench-") as tmp:
        tmpdir = Path(tmp)
        targets = []
        if book:
            targets.append(("book", REPO_ROOT / "source", REPO_ROOT, book_cache or REPO_ROOT / "_build" / ".cache",
                            {}))
        if synthetic:
            src = make_synthetic(tmpdir / "synthetic", synthetic)
            targets.append((f"synthetic-{synthetic}", src, src, REPO_ROOT / "_build" / ".cache-bench", {}))
        if real_cycle:
            src, cur = make_real_cycle(tmpdir / "real-cycle", real_cycle)
            targets.append((f"real-cycle-{real_cycle}", src, REPO_ROOT, REPO_ROOT / "_build" / ".cache-cycle",
                            {"vllm_book_curriculum": str(cur)}))
        for name, srcdir, confdir, cache, extra in targets:
            overrides = {} if name == "book" and book_cache is None else {"vllm_book_cache_dir": str(cache)}
            overrides.update(extra)
            if cold:
                empty_caches(cache)
            out = tmpdir / f"out-{name}"
            runs = []
            last_rinoh = builders.index("rinoh") if "rinoh" in builders and not again else -1
            for i, builder in enumerate(builders):
                prof = tmpdir / f"{name}.prof" if profile and i == last_rinoh else None
                runs.append(_build(name, srcdir, confdir, out, builder, env, jobs, overrides, prof, max_rss_gb))
                if prof and prof.is_file():
                    runs[-1]["profile_top"] = profile_top(prof, 25)
                if keep and runs[-1].get("file", "").endswith(".pdf"):
                    keep.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(runs[-1]["file"], keep / f"{name}.pdf")
            if "rinoh" in builders and again:
                shutil.rmtree(out / "rinoh", ignore_errors=True)
                prof = tmpdir / f"{name}.prof" if profile else None
                again_run = _build(name, srcdir, confdir, out, "rinoh", env, jobs, overrides, prof, max_rss_gb,
                                   tag="-again")
                again_run["builder"] = "rinoh (again, warm caches, fresh outdir)"
                if prof and prof.is_file():
                    again_run["profile_top"] = profile_top(prof, 25)
                if keep and again_run.get("file"):
                    shutil.copyfile(again_run["file"], keep / f"{name}-again.pdf")
                runs.append(again_run)
            if keep:  # the build logs too (the temporary directory goes away)
                keep.mkdir(parents=True, exist_ok=True)
                for r in runs:
                    log = Path(r["log"])
                    if log.is_file():
                        shutil.copyfile(log, keep / f"{name}-{log.name}")
                        r["log"] = str(keep / f"{name}-{log.name}")
            results["books"].append({"book": name, "runs": runs})
    return results


def report(res: dict) -> list[str]:
    """One line per build, then each PDF build's phases and profile top 10."""
    lines = []
    for b in res["books"]:
        for r in b["runs"]:
            extra = ""
            if r.get("pages"):
                extra += f", {r['pages']} pages"
            if r.get("s_per_page"):
                extra += f", {r['s_per_page']:.3f} s/page rendering"
            if r.get("bytes"):
                extra += f", {r['bytes'] / 1e6:.1f} MB"
            extra += f", peak RSS {r['peak_rss_mb'] / 1e3:.2f} GB" if r.get("peak_rss_mb") else ""
            extra += " (under cProfile)" if r.get("profiled") else ""
            status = "" if r["ok"] else "  FAILED: " + r.get("error", "")[-400:]
            lines.append(f"{b['book']:>16}  {r['builder']:<44} {r['seconds']:>7.1f}s{extra}{status}")
            ph = r.get("phases")
            if ph:
                lines.append(" " * 18 + "phases: " + ", ".join(
                    [f"{k[:-2]} {v:.1f}s" for k, v in ph.items() if k.endswith("_s")]
                    + [f"pass {p['pass']} {p['seconds']:.1f}s ({p['pages']} pages)" for p in ph.get("passes", [])])
                    + f"; load {' '.join(f'{x:.1f}' for x in r['load'][:1] + r['load'][3:4])} (start, end)")
            for i, row in enumerate(r.get("profile_top", [])[:10], 1):
                lines.append(" " * 18 + f"{i:>2}. {row['tottime']:>8.1f}s own {row['cumtime']:>8.1f}s cum "
                             f"{row['calls']:>10,} calls  {row['function']}")
    lines.append(f"(machine: {res['machine']['cpus']} CPUs, load {', '.join(f'{x:.1f}' for x in res['machine']['load'])})")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vllm_book.formats.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--book", action="store_true", help="the real book (default when nothing is chosen)")
    ap.add_argument("--synthetic", type=int, default=0, metavar="N", help="a generated N-chapter book")
    ap.add_argument("--real-cycle", type=int, default=0, metavar="N",
                    help="the real chapters repeated to N chapters (distinct docnames and labels)")
    ap.add_argument("--cold", action="store_true", help="empty the font/diagram/PDF caches first")
    ap.add_argument("--no-again", action="store_true", help="build each edition once (no warm PDF build)")
    ap.add_argument("--profile", action="store_true", help="cProfile the last PDF build (slower)")
    ap.add_argument("--max-rss-gb", type=float, default=12.0, help="kill a build above this RSS (0: no cap)")
    ap.add_argument("--keep", type=Path, help="copy every PDF built (and failed logs) into this directory")
    ap.add_argument("-j", "--jobs", default="auto")
    ap.add_argument("--builders", default="html,epub,rinoh")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    book = args.book or not (args.synthetic or args.real_cycle)
    res = run(book=book, synthetic=args.synthetic, cold=args.cold, jobs=args.jobs, profile=args.profile,
              builders=tuple(args.builders.split(",")), again=not args.no_again, real_cycle=args.real_cycle,
              max_rss_gb=args.max_rss_gb or None, keep=args.keep)
    print("\n".join(report(res)))
    if args.json:
        args.json.write_text(json.dumps(res, ensure_ascii=False, indent=2))
    return 0 if all(r["ok"] for b in res["books"] for r in b["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
