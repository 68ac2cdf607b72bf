"""What a browser build takes from Sphinx: the spec of a :class:`~.build.BrowserBuild`.

:func:`spec_from_app` collects the keyword arguments of a
:class:`~.build.BrowserBuild` for one Sphinx build (picklable: it is sent to
the background worker, :mod:`.process`), from the config, the builder, the pin
and the citations the anchors recorded in the environment.  Also here: where
the tree and the cache are (:func:`cache_root`), the source index and the
citations of the build (from :mod:`vllm_book.anchors` when it is loaded),
whether the browser is on for this builder, and :class:`Cite`, a citation in
the normalised form the pages are rendered from.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..index import SourceIndex

BUILDERS = ("html", "dirhtml")


def _logger():
    from sphinx.util import logging

    return logging.getLogger("vllm_book.browser")  # the package's logger (these helpers lived there)


def _enabled(app: Sphinx) -> bool:
    return bool(app.config.vllm_book_browser) and app.builder.name in BUILDERS


def _jobs(app: Sphinx) -> int:
    return int(getattr(app.config, "vllm_book_browser_jobs", 0) or 0)


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
                    # true because vllm_book.gate checked it at config-inited (the build stops otherwise)
                    provenance = (f"源码树来自 PyPI 的 sdist {pin.sdist_filename}（sha256 {prov.sdist_sha256[:16]}… 已校验，"
                                  f"其 vllm/_version.py 记录的提交与钉住的提交一致，每个文件与 sdist 的清单一致）")
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
        "icon_uri": _icon_uri(cfg),
        "state_file": Path(app.doctreedir) / f"vllm_book_browser-{builder.name}.json",
        "cache_dir": cache_root(app) / "browser-hl",
        "jobs": _jobs(app),
        "pin": pin,
        "provenance": provenance,
        "project": cfg.project or "vLLM 学习手册",
        "light_style": opts.get("pygments_light_style") or "a11y-high-contrast-light",
        "dark_style": opts.get("pygments_dark_style") or "a11y-high-contrast-dark",
        "builder": builder.name,
        "drift": _drift(app),
    }


def _drift(app: Sphinx) -> dict | None:
    """The files of the tree that changed in the newest impact report, and the drift page (None: no report)."""
    from ..sync import drift

    d = drift.file_drift(app)
    if d is None:
        return None
    if d["page"] not in app.env.found_docs:
        d["page"] = ""
    return d


def _icon_uri(cfg) -> str:
    """Where Sphinx put ``html_favicon`` (``_static/<name>``), so browser pages use the book's icon."""
    icon = getattr(cfg, "html_favicon", None) or ""
    if not icon:
        return ""
    return icon if "://" in icon else f"_static/{Path(icon).name}"


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

