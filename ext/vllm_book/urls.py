"""URL scheme of the source browser (shared by anchors, browser and formats).

Pages live under ``<outdir>/<prefix>/`` (prefix ``_src`` by default):

* file ``vllm/v1/core/sched/scheduler.py`` → ``_src/vllm/v1/core/sched/scheduler.py.html``
* directory ``vllm/v1/core/`` → ``_src/vllm/v1/core/index.html``
* the landing page → ``_src/index.html``

Fragments: ``#L120`` (a line), ``#L120-L140`` (a range), ``#Scheduler.schedule``
(a symbol, whole range incl. decorators).
"""

from __future__ import annotations

import posixpath


def file_page(prefix: str, path: str) -> str:
    return f"{prefix}/{path}.html"


def dir_page(prefix: str, path: str) -> str:
    path = path.strip("/")
    return f"{prefix}/{path}/index.html" if path else f"{prefix}/index.html"


def line_fragment(start: int, end: int | None = None) -> str:
    return f"L{start}" if not end or end == start else f"L{start}-L{end}"


def relative(from_page: str, to_page: str) -> str:
    """Relative URL between two output-relative page paths."""
    return posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")
