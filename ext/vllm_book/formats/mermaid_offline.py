"""Mermaid diagrams as images for EPUB, PDF and other non-HTML builders.

The HTML edition renders diagrams in the browser (sphinxcontrib-mermaid with
the pinned ``node_modules/mermaid``).  Builders that cannot run JavaScript get
images drawn in Debian's chromium through the puppeteer that mermaid-cli
installs, from the *same* Mermaid package:

* every diagram is recorded at read time (``env.vllm_book_mermaid``:
  docname → [(code, line)]), merged across parallel readers;
* on the first post-transform of a build, all diagrams not in the cache are
  rendered by ``mermaid_render.mjs`` (next to this module): node + the
  puppeteer and Mermaid that ``@mermaid-js/mermaid-cli`` installs, one
  chromium page that loads Mermaid once and draws every diagram in turn,
  reproducing mermaid-cli's output (checked: the 42 diagrams of the book give
  the same PDF page boxes and pixel-identical PNGs as ``mmdc``, at ~0.16 s a
  diagram instead of ~0.6 s — mmdc opens a page and imports Mermaid per
  diagram).  ``vllm_book_mermaid_jobs`` such runs go at once (one per CPU by
  default) when there are enough diagrams; each image is stored as
  ``<cache>/mermaid/<key>.<ext>``,
  *key* being a hash of the code, the Mermaid/mermaid-cli versions and the
  rendering options; a diagram is drawn once, in the same page, for every
  format of ``vllm_book_mermaid_formats`` (PDF and PNG by default), so an
  EPUB build after a PDF build (or the other way round) draws nothing;
* the post-transform swaps each ``mermaid`` node for an ``image`` of the cached
  file: a vector PDF (``--pdfFit``) where the builder takes PDF (rinoh, LaTeX),
  otherwise a PNG at ``vllm_book_mermaid_scale`` (EPUB: inline Mermaid SVG does
  not pass epubcheck).

A diagram Mermaid cannot parse fails the build with the chapter file and the
line of the directive; a missing chromium/mmdc fails it with the command that
installs them.  sphinxcontrib-mermaid's own ``mermaid_output_format`` stays
``raw`` (it is global and would turn the HTML diagrams into images too).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from ._util import app_of, cache_root, is_offline, remember_app, repo_root

logger = logging.getLogger(__name__)

#: fewest diagrams worth a browser of their own
MIN_PER_BROWSER = 20
#: most browsers at once when ``vllm_book_mermaid_jobs`` is 0 (each takes a few hundred MB)
MAX_BROWSERS = 4
#: bump when the rendering recipe changes
RECIPE = 3
RENDERER = Path(__file__).with_name("mermaid_render.mjs")
BROWSER_ARGS = ["--no-sandbox", "--disable-setuid-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
INSTALL_HINT = ("run `make node-tools` (installs Debian's chromium, fonts-noto-cjk and the pinned "
                "@mermaid-js/mermaid-cli into node_modules/; on other systems: install chromium and "
                "`PUPPETEER_SKIP_DOWNLOAD=1 npm ci`)")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_FENCE = re.compile(r"^\s*(?:>\s*)*(`{3,}|:{3,}|~{3,})\s*\{mermaid\}")


class MermaidError(ExtensionError):
    """A diagram or the toolchain failed; the message names the file:line or the fix."""


@dataclass(frozen=True)
class Diagram:
    code: str
    docname: str
    line: int | None


# -- read phase: record every diagram -----------------------------------------------------------


def _mermaid_class():
    from sphinxcontrib.mermaid import mermaid

    return mermaid


def _fence_lines(source: str) -> list[int]:
    try:
        text = Path(source).read_text(encoding="utf-8")
    except OSError:
        return []
    return [i for i, line in enumerate(text.splitlines(), start=1) if _FENCE.match(line)]


def record_diagrams(app: Sphinx, doctree: nodes.document) -> None:
    """doctree-read: give each mermaid node its source line; remember its code."""
    mermaid = _mermaid_class()
    found = list(doctree.findall(mermaid))
    env = app.env
    if not hasattr(env, "vllm_book_mermaid"):
        env.vllm_book_mermaid = {}
    if not found:
        env.vllm_book_mermaid.pop(env.docname, None)
        return
    fences = _fence_lines(doctree.get("source") or env.doc2path(env.docname))
    rows = []
    for i, node in enumerate(found):
        line = node.line or (fences[i] if i < len(fences) and len(fences) == len(found) else None)
        if line is None:  # nested/included: fall back to the nearest line above
            p = node.parent
            while p is not None and not getattr(p, "line", None):
                p = p.parent
            line = getattr(p, "line", None)
        node["vllm_book_line"] = line
        rows.append((node["code"], line))
    env.vllm_book_mermaid[env.docname] = rows


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    getattr(env, "vllm_book_mermaid", {}).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    if not hasattr(env, "vllm_book_mermaid"):
        env.vllm_book_mermaid = {}
    for docname in docnames:
        if docname in getattr(other, "vllm_book_mermaid", {}):
            env.vllm_book_mermaid[docname] = other.vllm_book_mermaid[docname]


# -- the toolchain ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Toolchain:
    node: Path
    modules: Path  # the node_modules holding mermaid, @mermaid-js/mermaid-cli and puppeteer-core
    chromium: Path
    mermaid_version: str
    cli_version: str
    renderer: Path = RENDERER


def find_toolchain(app: Sphinx) -> Toolchain:
    from ..pin import REPO_ROOT

    root = repo_root(app)
    if app.config.vllm_book_mermaid_cli:
        mmdc = Path(app.config.vllm_book_mermaid_cli)
        if not mmdc.is_absolute():
            mmdc = Path(app.confdir) / mmdc
    else:  # the book's checkout, else the checkout holding this package (test roots)
        candidates = [base / "node_modules" / ".bin" / "mmdc" for base in (root, REPO_ROOT)]
        mmdc = next((c for c in candidates if c.is_file()), candidates[0])
    chromium = None
    if app.config.vllm_book_chromium:
        chromium = Path(app.config.vllm_book_chromium)
    elif env := os.environ.get("PUPPETEER_EXECUTABLE_PATH"):
        chromium = Path(env)
    else:
        for name in CHROMIUM_NAMES:
            if found := shutil.which(name):
                chromium = Path(found)
                break
    problems = []
    node = shutil.which("node")
    if node is None:
        problems.append("no `node` on PATH")
    if not (mmdc.is_file() and os.access(mmdc, os.X_OK)):
        problems.append(f"mermaid-cli not found at {mmdc}")
    if chromium is None or not chromium.exists():
        problems.append("no chromium executable (looked for " + ", ".join(CHROMIUM_NAMES) + " on PATH)")
    if problems:
        raise MermaidError(f"the {app.builder.name} build renders Mermaid diagrams as images but "
                           + "; ".join(problems) + f". Fix: {INSTALL_HINT}")
    modules = mmdc.parent.parent  # <node_modules>/.bin/mmdc
    if not (modules / "mermaid" / "package.json").is_file():
        modules = mmdc.resolve().parents[3]  # <node_modules>/@mermaid-js/mermaid-cli/src/cli.js
    try:
        mermaid_version = json.loads((modules / "mermaid" / "package.json").read_text())["version"]
        cli_version = json.loads((modules / "@mermaid-js" / "mermaid-cli" / "package.json").read_text())["version"]
    except (OSError, KeyError, ValueError):
        raise MermaidError(f"cannot read the Mermaid/mermaid-cli versions under {modules}. Fix: {INSTALL_HINT}") from None
    nested = modules / "@mermaid-js" / "mermaid-cli" / "node_modules" / "mermaid" / "package.json"
    if nested.is_file():
        nested_version = json.loads(nested.read_text())["version"]
        if nested_version != mermaid_version:
            raise MermaidError(f"mermaid-cli bundles Mermaid {nested_version}, the HTML edition uses {mermaid_version}; "
                               "pin @mermaid-js/mermaid-cli to a release that accepts the pinned mermaid (package.json) "
                               "and run `npm ci`")
    if not (modules / "puppeteer-core" / "package.json").is_file():
        raise MermaidError(f"puppeteer-core (a dependency of mermaid-cli) is missing under {modules}. Fix: {INSTALL_HINT}")
    return Toolchain(Path(node), modules, chromium, mermaid_version, cli_version)


# -- rendering ----------------------------------------------------------------------------------


def _options(app: Sphinx, fmt: str) -> dict[str, Any]:
    init = dict(app.config.mermaid_init_config or {})
    init.pop("startOnLoad", None)
    init.setdefault("theme", app.config.mermaid_light_theme or "default")
    init.setdefault("fontFamily", '"Noto Sans CJK SC", "Noto Sans", sans-serif')
    return {"format": fmt, "scale": app.config.vllm_book_mermaid_scale if fmt == "png" else 1,
            "config": init, "background": "white"}


def diagram_key(code: str, tools: Toolchain, options: dict[str, Any]) -> str:
    h = hashlib.sha256(json.dumps([RECIPE, tools.mermaid_version, tools.cli_version, options, code],
                                  sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()[:24]


def render_batch(diagrams: list[Diagram], keys: list[dict[str, str]], tools: Toolchain,
                 outputs: list[dict[str, Any]], dest: Path) -> float:
    """Render *diagrams* in one browser page, each once for every options dict of *outputs* (one per image
    format, :func:`_options`); store ``dest/<key>.<fmt>`` with ``keys[i][fmt]``.  Returns seconds.

    Every diagram is attempted; the first one that fails (in *diagrams* order) is then
    raised with its chapter file and line."""
    formats = [o["format"] for o in outputs]
    common = outputs[0]
    dest.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vllm-book-mermaid-") as tmp:
        work = Path(tmp)
        items = [{"code": d.code, "outs": [str(work / f"{i}.{fmt}") for fmt in formats]} for i, d in enumerate(diagrams)]
        (work / "job.json").write_text(json.dumps({
            "chromium": str(tools.chromium), "args": BROWSER_ARGS,
            "outputs": [{"format": o["format"], "scale": o["scale"]} for o in outputs],
            "background": common["background"], "config": common["config"], "items": items,
        }, ensure_ascii=False), encoding="utf-8")
        cmd = [str(tools.node), str(tools.renderer), str(tools.modules), str(work / "job.json")]
        env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1")
        try:
            proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env,
                                  timeout=60 + 10 * len(diagrams) * len(formats))
        except subprocess.TimeoutExpired:
            raise MermaidError(f"rendering {len(diagrams)} Mermaid diagrams timed out; is chromium working "
                               f"({tools.chromium})? Fix: {INSTALL_HINT}") from None
        results: dict[int, dict] = {}
        for line in proc.stdout.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and "i" in row:
                results[int(row["i"])] = row
        for i, key in enumerate(keys):
            produced = [work / f"{i}.{fmt}" for fmt in formats]
            if results.get(i, {}).get("ok") and all(p.is_file() for p in produced):
                for fmt, path in zip(formats, produced):
                    shutil.move(str(path), dest / f"{key[fmt]}.{fmt}")
        failed = next((i for i in range(len(diagrams)) if not results.get(i, {}).get("ok")), None)
        if failed is not None:
            row = results.get(failed)
            if row is None:  # the renderer itself failed (no browser, a missing module, …)
                raise MermaidError(f"the Mermaid renderer failed ({' '.join(cmd[:2])}, exit {proc.returncode}): "
                                   f"{_error_summary(proc.stderr or proc.stdout)}. Fix: {INSTALL_HINT}")
            d = diagrams[failed]
            raise MermaidError(f"{d.docname}:{d.line or '?'}: Mermaid diagram does not parse: {row.get('message')}")
    return time.perf_counter() - t0


def browsers(count: int, jobs: int) -> int:
    """How many renderer runs (one browser each) share *count* diagrams: *jobs* (0: one per
    CPU, at most ``MAX_BROWSERS``), but no run gets fewer than ``MIN_PER_BROWSER``."""
    wanted = jobs if jobs > 0 else min(os.cpu_count() or 1, MAX_BROWSERS)
    return max(1, min(wanted, count // MIN_PER_BROWSER))


def render_parallel(diagrams: list[Diagram], keys: list[dict[str, str]], tools: Toolchain,
                    outputs: list[dict[str, Any]], dest: Path, runs: int) -> float:
    """Render *diagrams* in *runs* concurrent renderer runs (round-robin, so each gets a
    mix of short and long ones; see :func:`browsers`).  Returns seconds.  Failures are
    raised after all runs have ended (the others' images stay cached); a diagram that
    does not parse (the error names its chapter and line) in preference to a toolchain
    failure."""
    if runs <= 1:
        return render_batch(diagrams, keys, tools, outputs, dest)
    t0 = time.perf_counter()
    chunks = [(diagrams[i::runs], keys[i::runs]) for i in range(runs)]
    with ThreadPoolExecutor(max_workers=runs) as pool:
        futures = [pool.submit(render_batch, d, k, tools, outputs, dest) for d, k in chunks]
    failed = [e for e in (f.exception() for f in futures) if e is not None]
    if failed:
        parse = [e for e in failed if isinstance(e, MermaidError) and "does not parse" in str(e)]
        raise (parse or failed)[0]
    return time.perf_counter() - t0


def _error_summary(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.lstrip().startswith("at ")]
    start = next((i for i, ln in enumerate(lines) if "rror" in ln), 0)
    out = " | ".join(ln.strip() for ln in lines[start:start + 4])
    return out[:600] or "no output"


# -- write phase: one batch per build, then swap nodes ----------------------------------------


_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _formats(app: Sphinx) -> list[str]:
    """``vllm_book_mermaid_formats``, checked: each is ``pdf`` or ``png``."""
    formats = list(app.config.vllm_book_mermaid_formats)
    bad = [f for f in formats if f not in ("pdf", "png")]
    if bad:
        raise ExtensionError(f"vllm_book_mermaid_formats in conf.py names {', '.join(map(repr, bad))}; the diagram "
                             "image formats are 'pdf' (the PDF) and 'png' (the EPUB)")
    return formats


def _image_format(builder) -> str:
    return "pdf" if "application/pdf" in builder.supported_image_types else "png"


def _display_path(app: Sphinx, docname: str) -> str:
    """The chapter file as the author knows it: relative to the repository (``source/…/x.md``)."""
    path = Path(app.env.doc2path(docname))
    for base in (repo_root(app), Path(app.srcdir).parent):
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return str(path)


def ensure_rendered(app: Sphinx) -> dict[str, Path]:
    """code → image file, for every diagram of the project (renders the missing ones once)."""
    state = _STATE.get(app)
    if state is not None:
        return state
    fmt = _image_format(app.builder)
    per_doc: dict[str, list] = getattr(app.env, "vllm_book_mermaid", {})
    unique: dict[str, Diagram] = {}
    for docname in sorted(per_doc):
        for code, line in per_doc[docname]:
            unique.setdefault(code, Diagram(code, _display_path(app, docname), line))
    result: dict[str, Path] = {}
    if unique:
        tools = find_toolchain(app)
        formats = [fmt] + [f for f in _formats(app) if f != fmt]
        outputs = [_options(app, f) for f in formats]
        dest = cache_root(app) / "mermaid"
        missing, missing_keys = [], []
        for code, d in unique.items():
            key = {o["format"]: diagram_key(code, tools, o) for o in outputs}
            result[code] = dest / f"{key[fmt]}.{fmt}"
            if not all((dest / f"{k}.{f}").is_file() for f, k in key.items()):
                missing.append(d)
                missing_keys.append(key)
        if missing:
            runs = browsers(len(missing), app.config.vllm_book_mermaid_jobs)
            logger.info(f"[vllm_book] rendering {len(missing)} Mermaid diagram(s) as {'+'.join(formats)} with "
                        f"Mermaid {tools.mermaid_version} in {runs} browser(s) …", nonl=True)
            seconds = render_parallel(missing, missing_keys, tools, outputs, dest, runs)
            logger.info(f" {seconds:.1f}s")
    _STATE[app] = result
    return result


#: diagrams are drawn with a 16 px font; at 80 % they match the PDF's 10 pt body text
PDF_SCALE = 80
#: the text width of the PDF (16K page, 20 + 18 mm margins), in pt
PDF_TEXT_WIDTH = 415
#: the tallest a diagram is drawn in the PDF, in pt: the text height (260 mm − 2 × 22 mm = 612 pt) less
#: room for the heading kept with it (two lines), a two-line caption and the figure's spacing.  A taller
#: image does not fit on any page: rinohtype then draws it past the bottom edge, or — with a caption or a
#: heading that no longer fits with it — starts a new page for the figure forever (a 39-chapter build made
#: 5,000 pages and ran out of memory)
PDF_MAX_HEIGHT = 480


def _size_image(image: nodes.image, path: Path, png_scale: int) -> None:
    """PNG: display at its CSS size (it is rendered at *png_scale*×); PDF: 80 %, at most the text width
    and at most :data:`PDF_MAX_HEIGHT` tall."""
    try:
        head = path.read_bytes() if path.suffix == ".pdf" else path.read_bytes()[:32]
    except OSError:
        return
    if path.suffix == ".png":
        image["candidates"] = {"image/png": str(path)}
        if head[:8] == b"\x89PNG\r\n\x1a\n":
            width = int.from_bytes(head[16:20], "big")
            image["width"] = f"{max(1, width // max(1, png_scale))}px"
        return
    m = re.search(rb"/MediaBox\s*\[\s*[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)", head)
    if m is None:
        image["scale"] = PDF_SCALE
        return
    box_width, box_height = float(m.group(1)), float(m.group(2))
    width = box_width * PDF_SCALE / 100
    shown = min(1.0, PDF_TEXT_WIDTH / width) * box_height * PDF_SCALE / 100 if width else 0
    if shown > PDF_MAX_HEIGHT:
        image["height"] = f"{PDF_MAX_HEIGHT}pt"  # rinohtype keeps the aspect ratio (the width follows)
    elif width > PDF_TEXT_WIDTH:
        image["width"] = "100%"
    else:
        image["scale"] = PDF_SCALE


class MermaidToImage(SphinxPostTransform):
    """Replace ``mermaid`` nodes by images for builders that cannot run Mermaid JS."""

    default_priority = 3  # early: later post-transforms (images, rinoh preprocessing) see a plain image

    def is_supported(self) -> bool:
        return is_offline(app_of(self.env).builder)

    def run(self, **kwargs: Any) -> None:
        mermaid = _mermaid_class()
        found = list(self.document.findall(mermaid))
        if not found:
            return
        app = app_of(self.env)
        images = ensure_rendered(app)
        for node in found:
            path = images.get(node["code"])
            if path is None:  # a diagram created after reading (should not happen); render it alone
                _STATE.pop(app, None)
                if not hasattr(self.env, "vllm_book_mermaid"):
                    self.env.vllm_book_mermaid = {}
                self.env.vllm_book_mermaid.setdefault(self.env.docname, []).append((node["code"], node.get("vllm_book_line")))
                path = ensure_rendered(app)[node["code"]]
            uri = str(path)
            image = nodes.image(uri=uri, candidates={"*": uri}, alt=node.get("alt") or "Mermaid 图",
                                classes=["mermaid-image"])
            _size_image(image, path, app.config.vllm_book_mermaid_scale)
            if node.get("align"):
                image["align"] = node["align"]
            image.source, image.line = node.source, node.get("vllm_book_line")
            self.env.images.add_file(self.env.docname, uri)
            if isinstance(node.parent, nodes.figure) or node.get("inline"):
                node.replace_self(image)
            else:
                fig = nodes.figure("", image, classes=["mermaid-figure"])
                fig["align"] = node.get("align", "center")
                node.replace_self(fig)


def setup(app: Sphinx) -> None:
    app.connect("builder-inited", remember_app)
    app.connect("doctree-read", record_diagrams)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.add_post_transform(MermaidToImage)
