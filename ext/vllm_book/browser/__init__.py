"""The source browser: the pinned vLLM tree as static, highlighted, cross-linked pages.

HTML builds only (``html``/``dirhtml``).  Layout (``vllm_book.urls``)::

    <outdir>/<prefix>/index.html                    landing page (pin, provenance, most cited files)
    <outdir>/<prefix>/vllm/v1/core/index.html       a directory
    <outdir>/<prefix>/vllm/v1/core/sched/scheduler.py.html
    <outdir>/<prefix>/_static/b.css, b.js, symbols.js

How it hooks into Sphinx
========================

The work happens in a background process (:mod:`.worker`), outside the
Sphinx process, in three steps tied to three events:

``builder-inited`` (priority 100, before the anchors build the index)
    start ``python -m vllm_book.browser.worker``: it lexes every file whose
    highlighted runs are not in the cache (``<cache>/browser-hl/``, keyed by
    the file's sha256) with one process per CPU, overlapping the index build
    and the reading of the chapters;
``env-updated`` (all chapters read: every citation is known)
    send it the build spec — outdir, prefix, the citations from
    :func:`vllm_book.anchors.get_citations` (read from the *environment*, so
    chapters that were not re-read in an incremental build still count), the
    chapters' URIs, the pin.  It loads the index from the cache and renders
    the pages with the same pool, while Sphinx writes the book;
``build-finished``
    wait for it, replay its log through Sphinx's logger (one summary line:
    ``vllm-book browser: … rendered N pages …``), and fall back to rendering
    in-process should it have failed.  Skipped (the worker killed) when the
    build failed.

``vllm_book_browser_jobs = 1`` renders in-process at ``build-finished``
instead (no worker).

What is rendered
================

Every file page gets an input key — sha256 over the file's sha256, the
index key (covers symbols and refs, which depend on the whole tree), the
citations of that file (with their chapters' URIs), the template/static/
renderer digest and the build context (prefix, builder, book home, pin).  A
page whose key equals the one in the manifest
(``<doctreedir>/vllm_book_browser-<builder>.json``) and whose output file
exists is neither rendered nor written.  The rest are rendered from the
cached runs (refs and citation markers merged into the token stream) and
written straight into the outdir.  Directory pages, the landing page and the
assets are rendered every time but written only when their bytes changed;
the symbol search index only when the index changed.  Pages of files that
left the tree are removed.

A no-op rebuild costs the browser one pass over the index (hashing keys),
one ``stat`` per page and the directory pages' rendering — ~0.2 s.
``html-collect-pages`` is not used: it would route 2,900 pages through the
theme's page renderer (~30 ms each) after the book, and its pages cannot be
skipped.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import posixpath
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .. import urls
from .highlight import HL_VERSION, attr, esc, style_css
from .pages import (
    KIND_CODE,
    STATIC,
    TEMPLATE_DIGEST,
    FileJob,
    fragment,
    human_size,
    page,
    render_chunk,
    symbol_targets,
    write_atomic,
)

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..index import SourceIndex

__all__ = ["setup", "BrowserBuild", "LAST_STATS"]

BUILDERS = ("html", "dirhtml")
#: below this much source (bytes) to render, pages are rendered in-process (jobs = 0)
IN_PROCESS_BYTES = 1_500_000
MANIFEST_VERSION = 1

#: statistics of the last browser run in this process (tests, bench)
LAST_STATS: dict[str, Any] = {}


def _logger():
    from sphinx.util import logging

    return logging.getLogger(__name__)


# --------------------------------------------------------------------------
# Sphinx side


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    # before the anchors' builder-inited handler builds the index (priority 500)
    app.connect("builder-inited", _start_worker, priority=100)
    app.connect("env-updated", _send_spec)
    app.connect("build-finished", _on_build_finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


def _enabled(app: Sphinx) -> bool:
    return bool(app.config.vllm_book_browser) and app.builder.name in BUILDERS


def _jobs(app: Sphinx) -> int:
    return int(getattr(app.config, "vllm_book_browser_jobs", 0) or 0)


class _Worker:
    """Handle of the background browser process (``worker.py``) of one build."""

    def __init__(self, proc, err, tmpdir: Path) -> None:
        self.proc = proc
        self.err = err
        self.tmpdir = tmpdir
        self.sent = False

    def send(self, spec: dict) -> bool:
        import pickle

        try:
            self.tmpdir.mkdir(parents=True, exist_ok=True)
            path = self.tmpdir / f"spec-{os.getpid()}-{id(self)}.pickle"
            path.write_bytes(pickle.dumps(spec, pickle.HIGHEST_PROTOCOL))
            self.proc.stdin.write((str(path) + "\n").encode())
            self._close_stdin()
        except (OSError, ValueError):  # the worker is gone: build-finished falls back
            self._close_stdin()
            return False
        self.sent = True
        return True

    def _close_stdin(self) -> None:
        stdin, self.proc.stdin = self.proc.stdin, None  # communicate() must not flush it again
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()

    def finish(self) -> tuple[dict | None, str]:
        """(the worker's result, its stderr tail)."""
        self._close_stdin()
        out, _ = self.proc.communicate()
        self.err.seek(0)
        tail = self.err.read().decode("utf-8", "replace")[-3000:]
        self.err.close()
        if self.proc.returncode != 0:
            return None, tail
        try:
            return json.loads(out.decode("utf-8").strip().splitlines()[-1]), tail
        except (ValueError, IndexError):
            return None, tail


#: app → its background worker
_WORKERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _start_worker(app: Sphinx) -> None:
    """builder-inited: start the background process; it lexes the tree into the cache at once
    (overlapping the index build and the reading) and renders once it gets the spec."""
    if not _enabled(app) or _jobs(app) == 1:
        return
    try:
        root = _source_root(app)
    except Exception:  # noqa: BLE001 - the index build reports a missing tree properly
        return
    import subprocess
    import sys
    import tempfile

    ext_dir = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ext_dir, env.get("PYTHONPATH", "")) if p)
    err = tempfile.TemporaryFile()
    cmd = [sys.executable, "-m", "vllm_book.browser.worker", str(root), str(cache_root(app) / "browser-hl"),
           "--jobs", str(_jobs(app)), "--dirs", *app.config.vllm_book_browser_dirs]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
    except OSError as exc:
        err.close()
        _logger().warning("source browser: cannot start the background worker (%s); rendering in-process", exc,
                          type="vllm_book", subtype="browser")
        return
    _WORKERS[app] = _Worker(proc, err, cache_root(app) / "browser-tmp")


def _send_spec(app: Sphinx, env: Any) -> None:
    """env-updated: every citation is known now; the worker renders while Sphinx writes the book."""
    w = _WORKERS.get(app)
    if w is not None and not w.sent:
        w.send(spec_from_app(app))


@atexit.register
def _kill_workers() -> None:  # an interrupted build must not leave the worker running
    for w in list(_WORKERS.values()):
        if w.proc.poll() is None:
            w.proc.kill()


def _on_build_finished(app: Sphinx, exc: Exception | None) -> None:
    w = _WORKERS.pop(app, None)
    if exc is not None or not _enabled(app):
        if w is not None:
            w.kill()
        return
    log = _logger()
    if w is not None:
        t0 = time.perf_counter()
        if not w.sent:
            w.send(spec_from_app(app))
        result, tail = w.finish()
        waited = time.perf_counter() - t0
        if result is not None and "stats" in result:
            for level, msg in result.get("log", []):
                if level == "warning":
                    log.warning(msg, type="vllm_book", subtype="browser")
                elif level == "verbose":
                    log.verbose(msg)
                else:
                    log.info(msg)
            stats = dict(result["stats"], waited=round(waited, 3), mode="worker")
            LAST_STATS.clear()
            LAST_STATS.update(stats)
            log.info(summary(stats, Path(app.outdir) / app.config.vllm_book_browser_prefix.strip("/")))
            return
        log.warning("source browser: the background worker failed; rendering in-process\n%s", tail,
                    type="vllm_book", subtype="browser")
    build = BrowserBuild(_get_index(app), log=log, **spec_from_app(app))
    stats = dict(build.run(), mode="in-process")
    LAST_STATS.clear()
    LAST_STATS.update(stats)
    log.info(summary(stats, build.outdir / build.prefix))


def summary(stats: dict, where: Path) -> str:
    """The one log line of a browser run (tests and the bench read it)."""
    line = (
        f"vllm-book browser: {stats.get('files', 0)} files, rendered {stats.get('rendered', 0)} pages "
        f"(lexed {stats.get('lexed', 0)}), unchanged {stats.get('unchanged', 0)}, aux written "
        f"{stats.get('aux_written', 0)}, removed {stats.get('removed', 0)} in {stats.get('seconds', 0):.2f}s → {where}"
    )
    if "prelex_seconds" in stats:
        line += f" (background highlighter: {stats.get('prelexed', 0)} files in {stats['prelex_seconds']:.1f}s"
        line += f"; waited {stats['waited']:.1f}s for the worker)" if "waited" in stats else ")"
    return line


def spec_from_app(app: Sphinx) -> dict[str, Any]:
    """Keyword arguments of :class:`BrowserBuild` for this build (picklable: sent to the worker)."""
    from .. import pin as pin_mod

    cfg = app.config
    builder = app.builder
    root = _source_root(app)
    try:
        pin = pin_mod.load_pin(cfg.vllm_book_repo_root or None)
    except pin_mod.ProvisionError as exc:
        _logger().warning("source browser: %s", exc, type="vllm_book", subtype="browser")
        pin = None
    provenance = ""
    if pin is not None:
        try:
            default_tree = Path(cfg.vllm_book_repo_root or pin_mod.REPO_ROOT) / pin_mod.TREE_DIR
            if Path(root).resolve() == default_tree.resolve():
                prov = pin_mod.tree_provenance(cfg.vllm_book_repo_root or None)
                if prov.source == "sdist":
                    provenance = (f"源码树来自 PyPI 的 sdist {pin.sdist_filename}（sha256 {prov.sdist_sha256[:16]}… 已校验，"
                                  f"其 vllm/_version.py 记录的提交与钉住的提交一致）")
                else:
                    provenance = f"源码树是 git 子模块，检出于钉住的提交 {pin.short}"
            else:
                provenance = "源码树由 vllm_book_src_root 指定（非钉住的目录）"
        except Exception as exc:  # noqa: BLE001 - provenance is informative only
            provenance = f"来源未知（{exc}）"
    opts = dict(getattr(cfg, "html_theme_options", None) or {})
    citations = {key: [_cite(key[1], c) for c in entries] for key, entries in _get_citations(app).items()}
    docs = set(app.env.found_docs) | {c.docname for v in citations.values() for c in v}
    return {
        "index_root": str(root),
        "index_dirs": list(cfg.vllm_book_browser_dirs),
        "index_cache": str(cache_root(app)),
        "outdir": Path(app.outdir),
        "prefix": cfg.vllm_book_browser_prefix,
        "citations": citations,
        "doc_uri": {d: builder.get_target_uri(d) for d in sorted(docs)},
        "home_uri": builder.get_target_uri(cfg.root_doc),
        "state_file": Path(app.doctreedir) / f"vllm_book_browser-{builder.name}.json",
        "cache_dir": cache_root(app) / "browser-hl",
        "jobs": _jobs(app),
        "pin": pin,
        "provenance": provenance,
        "project": cfg.project or "vLLM 学习手册",
        "light_style": opts.get("pygments_light_style") or "a11y-high-contrast-light",
        "dark_style": opts.get("pygments_dark_style") or "a11y-high-contrast-dark",
        "builder": builder.name,
    }


def _source_root(app: Sphinx) -> Path:
    try:
        from ..anchors import source_root
    except ImportError:
        source_root = None
    if source_root is not None:
        return Path(source_root(app)).resolve()
    from .. import pin

    configured = app.config.vllm_book_src_root
    if configured:
        return (Path(app.confdir) / configured).resolve()
    return pin.source_root(Path(app.config.vllm_book_repo_root or app.confdir)).resolve()


def cache_root(app: Sphinx) -> Path:
    """``vllm_book_cache_dir`` (relative to the conf dir), else ``<repo root or conf dir>/_build/.cache``."""
    d = app.config.vllm_book_cache_dir
    if d:
        return (Path(app.confdir) / d).resolve()
    return Path(app.config.vllm_book_repo_root or app.confdir) / "_build" / ".cache"


def _get_index(app: Sphinx) -> SourceIndex:
    try:
        from ..anchors import get_index
    except ImportError:  # anchors not loaded/available: index the tree ourselves
        get_index = None
    if get_index is not None:
        return get_index(app)
    from ..index import build_index

    return build_index(_source_root(app), app.config.vllm_book_browser_dirs, cache_dir=cache_root(app))


def _get_citations(app: Sphinx) -> dict:
    try:
        from ..anchors import get_citations
    except ImportError:
        return {}
    try:
        return get_citations(app.env) or {}
    except Exception:  # noqa: BLE001 - the src domain is not loaded
        return {}


def _quals(index: SourceIndex, path: str) -> dict:
    q = index.quals
    return q(path) if callable(q) else q.get(path, {})


def _counts(fi: Any) -> tuple[int, int]:
    """(symbols, refs) of a FileIndex without materialising a lazy one."""
    raw = getattr(fi, "raw", None)
    if raw is not None:
        syms, refs = raw()
        return len(syms), len(refs)
    return len(fi.symbols), len(fi.refs)


class Cite(tuple):
    """A citation, normalised: (qualname, kind, start, end, docname, lineno, anchor, title)."""

    __slots__ = ()
    qualname = property(lambda self: self[0])
    kind = property(lambda self: self[1])
    start = property(lambda self: self[2])
    end = property(lambda self: self[3])
    docname = property(lambda self: self[4])
    lineno = property(lambda self: self[5])
    anchor = property(lambda self: self[6])
    title = property(lambda self: self[7])


def _cite(qual: str, c: Any) -> Cite:
    """Normalise one record of ``get_citations`` (a ``Citation``, a dict or a tuple)."""
    if isinstance(c, dict):
        g = c.get
    elif isinstance(c, tuple) and not hasattr(c, "docname"):  # (docname, lineno, anchor id, title)
        docname, lineno, anchor, title = (tuple(c) + ("", 0, "", ""))[:4]
        return Cite((qual or "", "symbol" if qual else "file", 0, 0, docname, int(lineno or 0), anchor or "", title or docname))
    else:
        def g(k: str, default: Any = None) -> Any:
            return getattr(c, k, default)
    docname = g("docname") or ""
    return Cite((
        qual or "",
        g("kind") or ("symbol" if qual else "file"),
        int(g("start") or 0),
        int(g("end") or 0),
        docname,
        int(g("lineno") or 0),
        g("node_id") or g("anchor") or g("anchor_id") or "",
        g("title") or docname,
    ))


# --------------------------------------------------------------------------
# the build


class BrowserBuild:
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
    ) -> None:
        self.index = index
        self.outdir = Path(outdir)
        self.prefix = prefix.strip("/") or "_src"
        self.citations = citations or {}
        if isinstance(doc_uri, dict):
            uris = dict(doc_uri)
            self.doc_uri = lambda docname: uris.get(docname, docname + ".html")
        else:
            self.doc_uri = doc_uri or (lambda docname: docname + ".html")
        #: an executor to render in (the worker's, shared with its highlighter)
        self.pool = pool
        self.home_uri = home_uri
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
                 self.home_uri, self.project, self.pin and [self.pin.commit, self.pin.repository, self.pin.version]],
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

    def _sizes(self) -> dict[str, int]:
        root = Path(self.index.root)
        out = {}
        for path in self.index.files:
            try:
                out[path] = (root / path).stat().st_size
            except OSError:
                out[path] = 0
        return out

    # -- static
    def _css(self) -> str:
        base = (STATIC / "browser.css").read_text(encoding="utf-8")
        light, lbg, lfg = style_css(self.light_style, ".code", ("default",))
        dark, dbg, dfg = style_css(self.dark_style, "html[data-theme=dark] .code", ("monokai",), complete=True)
        auto, _, _ = style_css(self.dark_style, "html:not([data-theme=light]) .code", ("monokai",), complete=True)
        return (
            f"{base}\n/* Pygments: {self.light_style} (light), {self.dark_style} (dark) */\n"
            f":root{{--code-bg:{lbg or '#fff'};--code-fg:{lfg or '#1f2328'}}}\n"
            f"html[data-theme=dark]{{--code-bg:{dbg or '#1e1e1e'};--code-fg:{dfg or '#e6e6e6'}}}\n"
            f"{light}\n{dark}\n"
            f"@media (prefers-color-scheme: dark){{html:not([data-theme=light]){{--code-bg:{dbg or '#1e1e1e'};"
            f"--code-fg:{dfg or '#e6e6e6'}}}\n{auto}\n}}\n"
        )

    # -- shared head
    def head(self, page_rel: str, title: str, crumbs: str) -> dict[str, str]:
        static = self.rel(page_rel, f"{self.prefix}/_static/b.css")[: -len("b.css")]
        home = self.up(page_rel) + self.url(self.home_uri) if self.home_uri else self.up(page_rel) or "./"
        return {
            "title": esc(title),
            "css": attr(f"{static}b.css?v={self.asset_ver}"),
            "js": attr(f"{static}b.js?v={self.asset_ver}"),
            "home": attr(home),
            "project": esc(self.project),
            "base": attr(self.rel(page_rel, f"{self.prefix}/index.html")[: -len("index.html")] or "./"),
            "crumbs": crumbs,
        }

    def crumbs(self, page_rel: str, path: str, is_dir: bool) -> str:
        parts = [p for p in path.strip("/").split("/") if p]
        out = [f"<a href={attr(self.rel(page_rel, urls.dir_page(self.prefix, '')))}>源码</a>"]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if last:
                out.append(f"<b>{esc(part)}{'/' if is_dir else ''}</b>")
            else:
                d = "/".join(parts[: i + 1])
                out.append(f"<a href={attr(self.url(self.rel(page_rel, urls.dir_page(self.prefix, d))))}>{esc(part)}</a>")
        return "/".join(out)

    def github(self, path: str, is_dir: bool = False) -> str:
        if self.pin is None:
            return ""
        if is_dir:
            return f"{self.pin.repository}/tree/{self.pin.commit}/{self.url(path)}"
        return self.pin.github_blob(self.url(path))

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
            gh=self.github(path),
            gh_label=f"GitHub @ {self.pin.short}" if self.pin else "",
            size=size,
            key=key,
        )

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

    # -- directory pages, landing page, search index
    def _render_aux(self, sizes: dict[str, int], stats: Counter, new_aux: dict, old_aux: dict) -> None:
        idx = self.index
        dirs = idx.dirs()
        # subtree totals
        tot: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # files, lines, bytes
        for path, fi in idx.files.items():
            parts = path.split("/")
            for i in range(len(parts)):
                t = tot["/".join(parts[:i])]
                t[0] += 1
                t[1] += fi.n_lines
                t[2] += sizes.get(path, 0)
        cited_files: Counter = Counter({p: len(v) for p, v in self.cites_by_path.items() if p in idx.files})
        cited_dirs: Counter = Counter()
        for p, n in cited_files.items():
            parts = p.split("/")
            for i in range(len(parts)):
                cited_dirs["/".join(parts[:i])] += n
        for d, children in dirs.items():
            rel = urls.dir_page(self.prefix, d)
            html = self._dir_page(d, children, tot, cited_files, cited_dirs, rel)
            self._write_aux(rel, html.encode("utf-8"), old_aux, new_aux, stats)
        rel = f"{self.prefix}/_static/symbols.js"
        key = f"key:{self.sym_ver}"
        if old_aux.get(rel) == key and (self.outdir / rel).is_file():
            new_aux[rel] = key  # unchanged index: skip building 66k entries
        else:
            sym = self._symbols_js()
            write_atomic(self.outdir / rel, sym)
            new_aux[rel] = key
            stats["aux_written"] += 1

    def _dir_page(self, d: str, children: list[str], tot, cited_files: Counter, cited_dirs: Counter, rel: str) -> str:
        rows = []
        for child in children:
            is_dir = child.endswith("/")
            cpath = f"{d}/{child}".strip("/") if d else child.strip("/")
            if is_dir:
                href = self.url(self.rel(rel, urls.dir_page(self.prefix, cpath)))
                f, lines, size = tot[cpath]
                info = f"{f:,} 个文件"
                n_cited = cited_dirs.get(cpath, 0)
            else:
                href = self.url(self.rel(rel, urls.file_page(self.prefix, cpath)))
                fi = self.index.files[cpath]
                lines, size = fi.n_lines, tot[cpath][2]
                info = {"python": "Python", "cpp": "C/C++"}.get(fi.lang, "文本")
                n_cited = cited_files.get(cpath, 0)
            cite = f"<span class=nc title=被本书引用的次数>引 {n_cited}</span>" if n_cited else ""
            rows.append(
                f"<tr class={'d' if is_dir else 'f'}><td><a href={attr(href)}>{esc(child)}</a>{cite}"
                f"<td>{info}<td class=r>{lines:,}<td class=r>{human_size(size)}</tr>"
            )
        f, lines, size = tot[d]
        title_path = (d + "/") if d else "/"
        label = f"vLLM {self.pin.version}" if self.pin else "vLLM"
        gh = self.github(d, is_dir=True) if d else (f"{self.pin.repository}/tree/{self.pin.commit}" if self.pin else "")
        gh_html = f"<a class=gh href={attr(gh)}>GitHub @ {esc(self.pin.short)}</a>" if gh and self.pin else ""
        intro = self._landing_intro(rel, tot, cited_files) if not d else ""
        if d and d in self.cites_by_path and d not in self.index.files:
            intro += self._citations_for(d, rel, is_dir=True)[1]
        body = (
            "<main class=dir>"
            f"<div class=meta><h1>{esc(title_path)}</h1><span>{f:,} 个文件 · {lines:,} 行 · {human_size(size)}</span>{gh_html}</div>"
            f"{intro}"
            "<table class=ls><thead><tr><th>名称<th>类型<th class=r>行数<th class=r>大小</thead><tbody>"
            + "".join(rows)
            + "</tbody></table></main>"
        )
        title = f"{title_path} · {label} 源码" if d else f"{label} 源码浏览"
        return page(**self.head(rel, title, self.crumbs(rel, d, True)), kind="dir", n="0", body=body)

    def _landing_intro(self, rel: str, tot, cited_files: Counter) -> str:
        idx = self.index
        parts = ["<section class=intro>"]
        if self.pin is not None:
            commit_url = f"{self.pin.repository}/commit/{self.pin.commit}"
            parts.append(
                f"<p>本书对应 <b>vLLM {esc(self.pin.version)}</b>，钉住的提交 "
                f"<a href={attr(commit_url)}><code>{esc(self.pin.commit)}</code></a>。"
                f"这里的每个文件都可以按行（<code>#L120</code>、<code>#L120-L140</code>）或按符号（<code>#Scheduler.schedule</code>）链接。</p>"
            )
        if self.provenance:
            parts.append(f"<p class=prov>来源：{esc(self.provenance)}</p>")
        counts = [_counts(f) for f in idx.files.values()]
        n_sym = sum(c[0] for c in counts)
        n_ref = sum(c[1] for c in counts)
        parts.append(f"<p class=prov>索引：{len(idx.files):,} 个文件、{n_sym:,} 个符号、{n_ref:,} 处交叉引用。</p>")
        tops = [d for d in idx.dirs().get("", []) if d.endswith("/")]
        if tops:
            links = "、".join(
                f"<a href={attr(self.url(self.rel(rel, urls.dir_page(self.prefix, t.strip('/')))))}><code>{esc(t)}</code></a>"
                f"（{tot[t.strip('/')][0]:,} 个文件）" for t in tops
            )
            parts.append(f"<p>顶层目录：{links}</p>")
        if cited_files:
            items = []
            for path, n in sorted(cited_files.items(), key=lambda kv: (-kv[1], kv[0]))[:30]:
                chapters = sorted({c.title for c in self.cites_by_path[path]})
                href = attr(self.url(self.rel(rel, urls.file_page(self.prefix, path))) + "#cites")
                items.append(f"<li><a href={href}><code>{esc(path)}</code></a> <span class=nc>引 {n}</span> "
                             f"<small>{esc('、'.join(chapters[:4]) + ('…' if len(chapters) > 4 else ''))}</small></li>")
            parts.append(f"<h2>本书引用最多的文件</h2><ol class=most>{''.join(items)}</ol>")
        parts.append("<h2>全部文件</h2></section>")
        return "".join(parts)

    def _symbols_js(self) -> bytes:
        """The symbol search index, ``__vbSym({"v": 2, "f": [path…], "s": [[entry…] per file]})``.

        An entry is ``<kind code><n><rest>``: the qualname is the first *n*
        (base 36) dot-separated segments of the previous entry's qualname in
        the same file followed by *rest* (``mScheduler.schedule`` after
        ``cScheduler`` is ``m1schedule``).  Links go to ``<path>.html#<qualname>``.
        """
        files = sorted(self.index.files)
        syms = []
        for path in files:
            row: list[str] = []
            prev: list[str] = []
            for t in symbol_targets(self.index.files[path].symbols):
                if t.id != t.qualname:
                    continue
                parts = t.qualname.split(".")
                n = 0
                while n < len(prev) and n < len(parts) - 1 and n < 35 and prev[n] == parts[n]:
                    n += 1
                row.append(KIND_CODE.get(t.kind, "x") + _B36[n] + ".".join(parts[n:]))
                prev = parts
            syms.append(row)
        data = json.dumps({"v": 2, "f": files, "s": syms}, ensure_ascii=False, separators=(",", ":"))
        # a .js file, never inline — but keep it inert anyway
        data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return f"__vbSym({data});\n".encode("utf-8")


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def iter_pages(outdir: Path, prefix: str = "_src") -> Iterable[Path]:
    """Every HTML page of the browser under *outdir* (bench, tests)."""
    return sorted((Path(outdir) / prefix).rglob("*.html"))
