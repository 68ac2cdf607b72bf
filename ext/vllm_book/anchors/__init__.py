"""Semantic source anchors: the ``src`` domain.

Author syntax (see ``docs/anchors.md``)::

    {src}`vllm/v1/core/kv_cache_utils.py::hash_block_tokens`
    {src}`块哈希 <vllm/v1/core/kv_cache_utils.py::hash_block_tokens>`
    {src}`vllm/v1/core/sched/scheduler.py::Scheduler.schedule:"token_budget = self.max_num_scheduled_tokens"`
    {src}`vllm/v1/attention/backends/`

    ```{src-code} vllm/v1/core/sched/scheduler.py::Scheduler.schedule
    :emphasize: token_budget =
    :max-lines: 30
    ```

Pipeline (viewcode-style): the role/directive create placeholders holding
only the target string; :class:`~.transforms.ResolveAnchors` resolves them
in the read phase (errors with location and did-you-mean, stable ids,
citations into the domain data, excerpt text, source-file dependencies);
:class:`~.transforms.RenderAnchors` renders them per builder in the
post-transform phase (HTML: links into the source browser; other builders:
text plus a link to the online edition).

Public API for the other features: :func:`get_index`, :func:`get_citations`,
:func:`citations_for_file`, :class:`Citation`; non-Sphinx:
:mod:`.resolve` (``parse_target``, ``resolve``, ``AnchorError``) and
:mod:`.lint` (``find_unmanaged``).
"""

from __future__ import annotations

import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx.util import logging

from .domain import Citation, SrcCode, SrcDomain, SrcRole, citations_for_file, get_citations
from .nodes import NODE_VISITORS, src_excerpt, src_ref
from .resolve import AnchorError, Resolution, Target, parse_target, resolve
from .transforms import POST_TRANSFORMS, CheckUnmanaged, ResolveAnchors

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

    from ..index import SourceIndex

__all__ = [
    "AnchorError",
    "Citation",
    "Resolution",
    "Target",
    "citations_for_file",
    "get_citations",
    "get_index",
    "parse_target",
    "resolve",
    "source_root",
]

logger = logging.getLogger(__name__)

#: env → index (the index is held next to the environment, never pickled into it)
_INDEXES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def source_root(app: Sphinx) -> Path:
    """``vllm_book_src_root`` (relative to the conf dir) or :func:`vllm_book.pin.source_root`."""
    configured = app.config.vllm_book_src_root
    if configured:
        return (Path(app.confdir) / configured).resolve()
    from ..pin import source_root as pinned

    return pinned(Path(app.config.vllm_book_repo_root or app.confdir))


def cache_dir(app: Sphinx) -> Path:
    configured = app.config.vllm_book_cache_dir
    if configured:
        return (Path(app.confdir) / configured).resolve()
    return Path(app.config.vllm_book_repo_root or app.confdir) / "_build" / ".cache"


def get_index(app_or_env: Sphinx | BuildEnvironment) -> SourceIndex:
    """The source index of this build (built once, at ``builder-inited``).

    Accepts the application or its environment.  Loaded from / saved to the
    on-disk cache (:mod:`vllm_book.index.cache`); never stored in the
    environment pickle.
    """
    env = getattr(app_or_env, "env", None) or app_or_env
    index = _INDEXES.get(env)
    if index is not None:
        return index
    app = app_or_env if hasattr(app_or_env, "confdir") else None
    if app is None:
        raise RuntimeError("vllm_book.anchors: the source index is built at builder-inited; call get_index(app) first")
    from ..index import build_index

    from ..pin import ProvisionError

    try:
        root = source_root(app)
    except ProvisionError as exc:  # the gate (config-inited) normally reports this first
        from ..gate import fail
        from ..problems import Problem

        fail([Problem("vllm-pin.toml", 1, str(exc), "run: make vllm", "tree")])
    t0 = time.perf_counter()
    index = build_index(root, tuple(app.config.vllm_book_browser_dirs), cache_dir=cache_dir(app), jobs=app.parallel or 0)
    logger.info(
        f"[vllm_book] source index of {root}: {len(index.files)} files, key {index.key[:12]} "
        f"({time.perf_counter() - t0:.2f}s)"
    )
    _INDEXES[env] = index
    return index


def _builder_inited(app: Sphinx) -> None:
    from ..gate import report
    from .resolve import index_problems

    index = get_index(app)
    # the same list make validate reports (check "index"): files the index could not use
    report(index_problems(index, str(index.root)), subtype="index")


def _reread_failing(app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Documents that reported anchor problems are read again (fail closed on incremental builds)."""
    failing = env.get_domain("src").failing  # type: ignore[attr-defined]
    return [d for d in failing if d in env.found_docs and d not in changed and d not in added]


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.setup_extension("vllm_book.gate")
    app.add_node(src_ref, **NODE_VISITORS)  # type: ignore[arg-type]
    app.add_node(src_excerpt, **NODE_VISITORS)  # type: ignore[arg-type]
    app.add_domain(SrcDomain)
    app.add_role("src", SrcRole())
    app.add_directive("src-code", SrcCode)
    app.add_transform(ResolveAnchors)
    app.add_transform(CheckUnmanaged)
    for transform in POST_TRANSFORMS:
        app.add_post_transform(transform)
    app.connect("builder-inited", _builder_inited)
    app.connect("env-get-outdated", _reread_failing)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}

