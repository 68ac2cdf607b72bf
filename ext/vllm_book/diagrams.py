"""The build's Mermaid check: the diagrams ``make validate`` parses, parsed the same way.

At ``env-updated`` (after every document is read, in the main process) the
Markdown source of every document is scanned with validate's scanner
(:func:`vllm_book.sync.mdscan.scan`) and its ``{mermaid}`` diagrams are parsed
by :func:`vllm_book.sync.mermaid.check_pages` — one ``node`` process for the
diagrams not in the content-hash cache (``<cache>/mermaid-parse.json``, shared
with validate), none on a rebuild that changed no diagram.  Every problem is a
warning at the chapter file's line (``-W`` makes it fail the build), as is a
```` ```mermaid ```` fence, which renders as code instead of a diagram.

All documents are checked on every build, not only the re-read ones, so an
incremental build cannot pass a broken diagram that a full build rejects.
"""

from __future__ import annotations

import time
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

logger = logging.getLogger(__name__)


def node_modules(app: Sphinx) -> Path:
    configured = app.config.vllm_book_node_modules
    root = Path(app.config.vllm_book_repo_root or app.confdir)
    return (Path(app.confdir) / configured) if configured else root / "node_modules"


def check(app: Sphinx, env: BuildEnvironment) -> list[str]:
    from .anchors import cache_dir
    from .chapters import is_chapter
    from .gate import report
    from .problems import Problem
    from .sync import mdscan, mermaid

    t0 = time.perf_counter()
    srcdir = Path(app.srcdir)
    pages = []
    for docname in sorted(env.found_docs):
        path = Path(env.doc2path(docname))
        if path.suffix != ".md" or not path.is_file():
            continue
        pages.append(mdscan.scan(path, srcdir, chapter=is_chapter(app.config, docname)))
    root = srcdir
    problems, stats = mermaid.check_pages(root, pages, node_modules=node_modules(app), cache_dir=cache_dir(app))
    for page in pages:  # the scanner's own diagram findings (```mermaid fences, empty or unclosed diagrams)
        problems += [Problem(str(page.path.relative_to(srcdir)), line, msg, fix, "diagrams")
                     for line, msg, fix in page.problems if "ermaid" in msg]
    report(sorted(problems), subtype="diagram", root=srcdir)
    if stats.get("diagrams"):
        logger.info(f"[vllm_book] {stats['diagrams']} Mermaid diagrams checked ({time.perf_counter() - t0:.2f}s)")
    return []


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.connect("env-updated", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
