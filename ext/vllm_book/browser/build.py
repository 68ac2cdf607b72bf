"""One rendering of the browser into an outdir: :class:`BrowserBuild` (usable without Sphinx).

:meth:`BrowserBuild.run` computes every file page's input key, compares it
with the manifest (``state_file``), renders the pages that changed — in a
process pool (the worker's, or one of its own) or in-process for a few pages —
writes the assets, the directory pages and the search index
(:class:`~.aux_pages.AuxPages`) only when their bytes changed, and removes the
pages of files that left the tree.  A file page's job (:class:`~.pages.FileJob`:
its refs as hrefs, its citation markers and "被本书引用" section) is built here;
the rendering itself is :func:`~.pages.render_chunk`.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import posixpath
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import urls
from .aux_pages import AuxPages
from .highlight import HL_VERSION, attr, esc
from vllm_book.fsutil import write_atomic

from .pages import STATIC, TEMPLATE_DIGEST, FileJob, fragment, render_chunk, symbol_targets
from .spec import Cite, _cite

if TYPE_CHECKING:
    from ..index import SourceIndex

#: below this much source (bytes) to render, pages are rendered in-process (jobs = 0)
IN_PROCESS_BYTES = 1_500_000
MANIFEST_VERSION = 1


def _quals(index: SourceIndex, path: str) -> dict:
    q = index.quals
    return q(path) if callable(q) else q.get(path, {})


class BrowserBuild(AuxPages):
    """One rendering of the browser into an outdir (usable without Sphinx)."""

    def __init__(
        self,
        index: SourceIndex,
        outdir: Path,
        *,
        prefix: str = "_src",
        citations: dict | None = None,
        doc_uri: Any = None,  # docname → URI: a callable or a dict
        home_uri: str = "index.html",
        icon_uri: str = "",
        state_file: Path | None = None,
        cache_dir: Path | None = None,
        jobs: int = 0,
        pin: Any = None,
        provenance: str = "",
        project: str = "vLLM 学习手册",
        light_style: str = "a11y-high-contrast-light",
        dark_style: str = "a11y-high-contrast-dark",
        builder: str = "html",
        log=None,
        pool: cf.Executor | None = None,
        index_root: str = "",
        index_dirs: Any = None,
        index_cache: str = "",
        drift: dict | None = None,
    ) -> None:
        self.index = index
        self.outdir = Path(outdir)
        self.prefix = prefix.strip("/") or "_src"
        self.citations = citations or {}
        #: {"to": version, "files": {path: (kind, new path)}, "page": drift page docname}: the newest impact report
        self.drift = drift or {}
        if isinstance(doc_uri, dict):
            uris = dict(doc_uri)
            self.doc_uri = lambda docname: uris.get(docname, docname + ".html")
        else:
            self.doc_uri = doc_uri or (lambda docname: docname + ".html")
        #: an executor to render in (the worker's, shared with its highlighter)
        self.pool = pool
        self.home_uri = home_uri
        #: the book's favicon, relative to the output root ("" = none)
        self.icon_uri = icon_uri
        self.state_file = state_file or (self.outdir / self.prefix / ".manifest.json")
        self.cache_dir = cache_dir
        self.jobs = jobs
        self.pin = pin
        self.provenance = provenance
        self.project = project
        self.light_style = light_style
        self.dark_style = dark_style
        self.builder = builder
        self.log = log
        self.stats: dict[str, Any] = {}
        #: the summary of the background highlighter (prelex.py), when one ran
        self.prelex: dict[str, Any] = {}
        self._uris: dict[str, str] = {}

    # -- logging
    def info(self, msg: str) -> None:
        if self.log is not None:
            self.log.info(msg)

    def warn(self, msg: str) -> None:
        if self.log is not None:
            self.log.warning(msg, type="vllm_book", subtype="browser")

    # -- URLs
    def rel(self, from_page: str, to_page: str) -> str:
        return urls.relative(from_page, to_page)

    @staticmethod
    def url(path: str) -> str:
        return quote(path, safe="/-._~=,+@!*()")

    def up(self, page_rel: str) -> str:
        """Relative URL from *page_rel* to the outdir root ('' or '../../')."""
        return "../" * page_rel.count("/")

    def chapter_url(self, page_rel: str, docname: str, anchor: str) -> str:
        """URL (already quoted) of a place in the book, relative to *page_rel*."""
        uri, _, frag = self._doc_uri(docname).partition("#")
        frag = anchor or frag
        return self.url(self.up(page_rel) + uri) + ("#" + fragment(frag) if frag else "")

    # -- the run
    def run(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        idx = self.index
        src_dir = self.outdir / self.prefix
        state = self._load_state()
        old_pages: dict[str, str] = state.get("pages", {})
        old_aux: dict[str, str] = state.get("aux", {})
        new_aux: dict[str, str] = {}
        stats = Counter()

        # static files first: their digests are part of every page's key
        css = self._css()
        js = (STATIC / "browser.js").read_text(encoding="utf-8")
        css_ver = hashlib.sha256(css.encode()).hexdigest()[:10]
        js_ver = hashlib.sha256(js.encode()).hexdigest()[:10]
        self._write_aux(f"{self.prefix}/_static/b.css", css.encode(), old_aux, new_aux, stats)
        self._write_aux(f"{self.prefix}/_static/b.js", js.encode(), old_aux, new_aux, stats)
        self.css_ver, self.js_ver = css_ver, js_ver
        self.sym_ver = hashlib.sha256(f"{idx.key}\0{TEMPLATE_DIGEST}".encode()).hexdigest()[:10]
        # one cache-busting version for b.css, b.js and symbols.js
        self.asset_ver = hashlib.sha256(f"{css_ver}{js_ver}{self.sym_ver}".encode()).hexdigest()[:8]

        cites_by_path: dict[str, list[Cite]] = defaultdict(list)
        for (path, qual), entries in self.citations.items():
            for c in entries:
                cites_by_path[path.rstrip("/") if path.endswith("/") else path].append(_cite(qual, c))
        for v in cites_by_path.values():
            v.sort()
        self.cites_by_path = cites_by_path

        common = hashlib.sha256(
            json.dumps(
                [MANIFEST_VERSION, TEMPLATE_DIGEST, HL_VERSION, css_ver, js_ver, idx.key, self.prefix, self.builder,
                 self.home_uri, self.icon_uri, self.project, self.pin and [self.pin.commit, self.pin.repository, self.pin.version]],
                ensure_ascii=False,
            ).encode()
        ).hexdigest()

        # 1. file pages: which need rendering
        todo: list[tuple[str, str]] = []
        keys: dict[str, str] = {}
        for path in sorted(idx.files):
            fi = idx.files[path]
            h = hashlib.sha256(f"{common}\0{path}\0{fi.sha256}\0".encode())
            cites = cites_by_path.get(path)
            if cites:  # the citations (their order, not their source lines) and where their chapters are
                h.update(repr([(c[:5] + c[6:], self._doc_uri(c.docname)) for c in cites]).encode())
            if path in self.drift.get("files", {}):  # what the newest impact report says of the file
                h.update(repr((self.drift["to"], tuple(self.drift["files"][path]), self.drift.get("page"),
                               self._doc_uri(self.drift["page"]) if self.drift.get("page") else "")).encode())
            key = h.hexdigest()
            keys[path] = key
            page_rel = urls.file_page(self.prefix, path)
            if old_pages.get(path) == key and (self.outdir / page_rel).is_file():
                stats["unchanged"] += 1
                continue
            todo.append((path, key))
        stats["files"] = len(idx.files)
        if todo and self.log is not None and len(todo) < len(idx.files):
            self.log.verbose("vllm-book browser: re-rendering %s", ", ".join(p for p, _ in todo[:50]))

        # 2. render them (workers), meanwhile the directory pages and the search index.
        # Pages are written in place: first drop the ones about to change from the manifest,
        # so an interrupted build never leaves a half-written page listed as current.
        new_pages = {p: k for p, k in old_pages.items() if p in keys and keys[p] == k}
        if todo and old_pages:
            self._save_state({"version": MANIFEST_VERSION, "pages": new_pages, "aux": {}})
        sizes = self._sizes()
        results = self._render_files(todo, sizes, stats, new_aux, old_aux)
        for path, key, nbytes, lexed in results:
            if nbytes < 0:
                self.warn(f"source browser: {path}: {lexed}")
                stats["failed"] += 1
                new_pages.pop(path, None)
                continue
            new_pages[path] = key
            stats["rendered"] += 1
            stats["lexed"] += bool(lexed)
            stats["bytes_written"] += nbytes

        # 3. files that left the tree
        for path in old_pages:
            if path not in keys:
                try:
                    (self.outdir / urls.file_page(self.prefix, path)).unlink()
                    stats["removed"] += 1
                except OSError:
                    pass
        for rel in old_aux:
            if rel not in new_aux:
                try:
                    (self.outdir / rel).unlink()
                    stats["removed"] += 1
                except OSError:
                    pass

        self._save_state({"version": MANIFEST_VERSION, "pages": new_pages, "aux": new_aux})
        if todo:
            stats["cache_pruned"] = self._prune_cache()
        stats["seconds"] = round(time.perf_counter() - t0, 3)
        if self.prelex:
            stats["prelexed"] = self.prelex.get("lexed", 0)
            stats["prelex_seconds"] = self.prelex.get("seconds", 0)
            stats["prelex_waited"] = self.prelex.get("waited", 0)
        self.stats = dict(stats)
        return self.stats

    # -- state
    def _load_state(self) -> dict:
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            if data.get("version") == MANIFEST_VERSION:
                return data
        except (OSError, ValueError):
            pass
        return {}

    def _save_state(self, data: dict) -> None:
        write_atomic(self.state_file, json.dumps(data, separators=(",", ":")).encode())

    def _write_aux(self, rel: str, data: bytes, old: dict, new: dict, stats: Counter) -> None:
        """Write a page/asset that is rendered every time, only when its bytes changed."""
        digest = hashlib.sha256(data).hexdigest()
        new[rel] = digest
        target = self.outdir / rel
        if old.get(rel) == digest and target.is_file():
            return
        write_atomic(target, data)
        stats["aux_written"] += 1

    def _prune_cache(self, max_age_days: float = 7.0) -> int:
        """Drop cached runs of other highlighter versions, and of content this tree no longer has
        once they are *max_age_days* old (another tree may share the cache meanwhile)."""
        if not self.cache_dir or not Path(self.cache_dir).is_dir():
            return 0
        from .highlight import lexer_name

        keep = {f"{fi.sha256}.{lexer_name(p, fi.lang)}.v{HL_VERSION}" for p, fi in self.index.files.items()}
        suffix = f".v{HL_VERSION}"
        cutoff = time.time() - max_age_days * 86400
        n = 0
        for sub in os.scandir(self.cache_dir):
            if not sub.is_dir():
                continue
            for e in os.scandir(sub.path):
                if e.name in keep or e.name.startswith(".tmp-"):
                    continue
                try:
                    if not e.name.endswith(suffix) or e.stat().st_mtime < cutoff:
                        os.unlink(e.path)
                        n += 1
                except OSError:
                    pass
        return n

    def _doc_uri(self, docname: str) -> str:
        uri = self._uris.get(docname)
        if uri is None:
            uri = self._uris[docname] = self.doc_uri(docname)
        return uri

    # -- file pages
    def _file_job(self, path: str, key: str, size: int) -> FileJob:
        idx = self.index
        fi = idx.files[path]
        page_rel = urls.file_page(self.prefix, path)
        page_dir = posixpath.dirname(page_rel)
        hrefs: dict[str, str] = {}
        refs = []
        for r in sorted(fi.refs, key=lambda r: (r.line, r.col)):
            tp = r.target_path
            if tp not in idx.files or r.end_col <= r.col:
                continue
            base = hrefs.get(tp)
            if base is None:
                base = hrefs[tp] = "" if tp == path else self.url(posixpath.relpath(urls.file_page(self.prefix, tp), page_dir))
            if r.target_qualname and r.target_qualname in _quals(idx, tp):
                href = f"{base}#{fragment(r.target_qualname)}"
            elif r.target_line > 1 or (r.target_qualname and r.target_line):
                href = f"{base}#L{r.target_line}"
            else:
                href = base or "#L1"
            refs.append((r.line, r.col, r.end_col, attr(href)))
        markers, cites_html = self._citations_for(path, page_rel)
        name = path.rsplit("/", 1)[-1]
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        label = f"vLLM {self.pin.version}" if self.pin else "vLLM"
        return FileJob(
            path=path,
            src=str(Path(idx.root) / path),
            out=str(self.outdir / page_rel),
            lang=fi.lang,
            sha256=fi.sha256,
            symbols=list(fi.symbols),
            refs=refs,
            markers=markers,
            head=self.head(page_rel, f"{name} · {parent or '/'} · {label}", self.crumbs(page_rel, path, False)),
            cites_html=cites_html,
            drift_html=self._drift_html(path, page_rel),
            gh=self.github(path),
            gh_label=f"GitHub @ {self.pin.short}" if self.pin else "",
            size=size,
            key=key,
        )

    def _drift_html(self, path: str, page_rel: str) -> str:
        """The line a file page shows when the newest impact report says the file changed, vanished or moved."""
        entry = self.drift.get("files", {}).get(path)
        if not entry:
            return ""
        from ..sync.drift import FILE_LABELS

        kind, new = entry
        text = esc(FILE_LABELS[kind].format(to=self.drift["to"], new="\0"))
        text = text.replace("\0", f"<code>{esc(new)}</code>")
        link = ""
        if self.drift.get("page"):
            link = f"（<a href={attr(self.chapter_url(page_rel, self.drift['page'], ''))}>版本漂移报告</a>）"
        return f"<p class=\"drift drift-{kind}\" role=note>本文件{text}{link}</p>"

    def _citations_for(self, path: str, page_rel: str, is_dir: bool = False) -> tuple[dict[int, str], str]:
        """(line → margin marker HTML, the "被本书引用" section) of one file or directory page."""
        cites = self.cites_by_path.get(path)
        if not cites:
            return {}, ""
        ids = set() if is_dir else {t.id for t in symbol_targets(self.index.files[path].symbols)}
        by_qual: dict[str, list[Cite]] = defaultdict(list)
        for c in cites:
            by_qual[c.qualname].append(c)
        by_line: dict[int, list[Cite]] = defaultdict(list)
        items = []
        for qual in sorted(by_qual, key=lambda q: (q != "", q)):
            entries = by_qual[qual]
            links = []
            seen: Counter = Counter()
            for c in entries:
                seen[c.docname] += 1
                n = seen[c.docname]
                where = ""
                if c.kind == "line" and c.start:
                    where = f"（第 {c.start} 行）" if c.end <= c.start else f"（第 {c.start}–{c.end} 行）"
                href = attr(self.chapter_url(page_rel, c.docname, c.anchor))
                links.append(f"<a href={href}>{esc(c.title)}{f' ({n})' if n > 1 else ''}</a>{where}")
                if not is_dir and c.kind in ("symbol", "line") and c.start:
                    by_line[c.start].append(c)
            first = entries[0]
            if qual and qual in ids:
                frag = fragment(qual)
            elif first.start and not is_dir and first.kind != "file":
                frag = urls.line_fragment(first.start, first.end)
            else:
                frag = ""
            name = f"<code>{esc(qual)}</code>" if qual else "<span class=sym>整个目录</span>" if is_dir else "<span class=sym>整个文件</span>"
            label = f"<a class=sym href={attr('#' + frag)}>{name}</a>" if frag else name
            items.append(f"<li>{label}：{'、'.join(links)}</li>")
        markers: dict[int, str] = {}
        for line, entries in by_line.items():
            first = attr(self.chapter_url(page_rel, entries[0].docname, entries[0].anchor))
            tip = attr("被本书引用：" + "；".join(sorted({c.title for c in entries})))
            count = f" data-n={len(entries)}" if len(entries) > 1 else ""
            markers[line] = f"<a class=cm href={first} title={tip}{count}></a>"
        html = (f"<section class=cites id=cites><h2>被本书引用 <small>{len(cites)} 处</small></h2>"
                f"<ul>{''.join(items)}</ul></section>")
        return markers, html

    def _render_files(self, todo: list[tuple[str, str]], sizes: dict[str, int], stats: Counter,
                      new_aux: dict, old_aux: dict) -> list[tuple]:
        cache = str(self.cache_dir) if self.cache_dir else None
        workers = self.jobs if self.jobs > 0 else (os.cpu_count() or 1)
        if self.jobs <= 0 and sum(sizes.get(p, 0) for p, _ in todo) < IN_PROCESS_BYTES:
            workers = 1  # a few pages: cheaper than a round trip through a pool
        workers = min(workers, len(todo)) or 1
        if self.pool is not None and workers > 1:
            return self._render_in(self.pool, todo, sizes, stats, new_aux, old_aux, workers, cache)
        results: list[tuple] = []
        if workers <= 1:
            self._render_aux(sizes, stats, new_aux, old_aux)
            results.extend(render_chunk([self._file_job(p, k, sizes.get(p, 0)) for p, k in todo], cache))
            return results
        ctx = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
        if os.name == "posix":
            # never re-import __main__ (sphinx-build) in the server; a no-op if it already runs
            ctx.set_forkserver_preload(["vllm_book.browser.pages"])
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            return self._render_in(pool, todo, sizes, stats, new_aux, old_aux, workers, cache)

    def _render_in(self, pool: cf.Executor, todo: list[tuple[str, str]], sizes: dict[str, int], stats: Counter,
                   new_aux: dict, old_aux: dict, workers: int, cache: str | None) -> list[tuple]:
        """Render *todo* in *pool*: biggest files first, in chunks of about equal size; the jobs
        (refs → hrefs) are built and submitted chunk by chunk so the workers start at once;
        the directory pages and the search index are rendered here meanwhile."""
        todo = sorted(todo, key=lambda pk: -sizes.get(pk[0], 0))
        total = sum(sizes.get(p, 0) for p, _ in todo) or 1
        target = max(total // (workers * 8), 1)
        futures = []
        cur: list[FileJob] = []
        acc = 0
        for p, k in todo:
            cur.append(self._file_job(p, k, sizes.get(p, 0)))
            acc += sizes.get(p, 0)
            if acc >= target:
                futures.append(pool.submit(render_chunk, cur, cache))
                cur, acc = [], 0
        if cur:
            futures.append(pool.submit(render_chunk, cur, cache))
        self._render_aux(sizes, stats, new_aux, old_aux)
        results: list[tuple] = []
        for fut in cf.as_completed(futures):
            results.extend(fut.result())
        return results

