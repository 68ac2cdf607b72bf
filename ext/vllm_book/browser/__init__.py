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

Package layout
==============

``__init__`` (this module)
    :func:`setup` and the ``build-finished`` hook (collect the worker's
    result or render in-process, log the summary, :data:`LAST_STATS`);
    re-exports the names below that tests, the bench and :mod:`.worker` use.
:mod:`.spec`
    what a build takes from Sphinx: :func:`~.spec.spec_from_app`,
    :func:`~.spec.cache_root`, the source root, index and citations of the
    build, :class:`~.spec.Cite`; whether the browser is on (``_enabled``,
    ``_jobs``).
:mod:`.process`
    the background worker seen from Sphinx: its ``builder-inited`` /
    ``env-updated`` hooks (``_start_worker``, ``_send_spec``), the
    ``_Worker`` handle, ``_kill_workers`` at exit, :func:`~.process.summary`.
:mod:`.build`
    :class:`~.build.BrowserBuild`: keys, manifest, file jobs, a page's
    citations, rendering in the pool.
:mod:`.aux_pages`
    its mixin :class:`~.aux_pages.AuxPages`: directory pages, the landing
    page's introduction, ``symbols.js``, the shared ``<head>``, breadcrumbs,
    GitHub links and stylesheet; :func:`~.aux_pages.iter_pages`.
:mod:`.pages`, :mod:`.highlight`
    rendering one file page, and the highlighter with its cache;
:mod:`.worker`, :mod:`.prelex`
    the background process itself and its lexing step.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .build import BrowserBuild
from .process import _WORKERS, _send_spec, _start_worker, summary
from .spec import _enabled, _get_index, _logger, spec_from_app

# the package's former contents, importable from here as before (tests, bench, worker.py)
from .aux_pages import _B36, AuxPages, _counts, iter_pages  # noqa: F401
from .build import IN_PROCESS_BYTES, MANIFEST_VERSION, _quals  # noqa: F401
from .process import _kill_workers, _Worker  # noqa: F401
from .spec import BUILDERS, Cite, _cite, _get_citations, _jobs, _source_root, cache_root  # noqa: F401

if TYPE_CHECKING:
    from sphinx.application import Sphinx

__all__ = ["setup", "BrowserBuild", "LAST_STATS"]

#: statistics of the last browser run in this process (tests, bench)
LAST_STATS: dict[str, Any] = {}


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    # before the anchors' builder-inited handler builds the index (priority 500)
    app.connect("builder-inited", _start_worker, priority=100)
    app.connect("env-updated", _send_spec)
    app.connect("build-finished", _on_build_finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


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

