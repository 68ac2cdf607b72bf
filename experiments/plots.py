"""Byte-stable SVG figures with Chinese labels (matplotlib, pinned in ``requirements-vllm.txt``).

Determinism: ``svg.hashsalt`` is fixed (matplotlib otherwise salts clip-path/glyph ids at random),
``metadata={'Date': None}`` drops the timestamp, and ``svg.fonttype = 'path'`` turns every glyph into a
path, so the SVG needs no font where it is shown (browser, e-reader, cairosvg for the PDF) and renders
the same everywhere.  The font is the one the PDF edition uses: the Simplified-Chinese face of Debian's
``fonts-noto-cjk`` (``NotoSansCJK-Regular.ttc``, face "Noto Sans CJK SC"), found in the same folders as
``ext/vllm_book/formats/fonts.py`` and taken out of the collection by name with fontTools (a ``.ttc``
holds JP/KR/SC/TC/HK faces; the first one is Japanese).  The font file is an input of the figures: a
different ``fonts-noto-cjk`` release can change the SVG bytes (``make experiments`` then reports it).
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
from functools import cache
from pathlib import Path

FONT_DIRS = (  # as in ext/vllm_book/formats/fonts.py
    "/usr/share/fonts/opentype/noto",
    "/usr/share/fonts/noto-cjk",
    "/usr/share/fonts/google-noto-cjk",
    "/usr/share/fonts/opentype/noto-cjk",
    "/usr/local/share/fonts",
)
COLLECTION = "NotoSansCJK-Regular.ttc"
FACE = "Noto Sans CJK SC"
HASHSALT = "vllm-book-experiments"
INSTALL_HINT = "install the Noto CJK fonts: `apt-get install fonts-noto-cjk`"


def find_collection() -> Path:
    for d in FONT_DIRS:
        p = Path(d) / COLLECTION
        if p.is_file():
            return p
    raise SystemExit(f"{COLLECTION} not found in {', '.join(FONT_DIRS)}; {INSTALL_HINT}")


@cache
def cjk_font() -> tuple[Path, str]:
    """Extract the SC face into a temporary .otf (once per process); return (path, sha256 of the collection)."""
    from fontTools.ttLib import TTCollection

    src = find_collection()
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    for font in TTCollection(str(src)).fonts:
        if font["name"].getDebugName(4) == FACE:
            out = Path(tempfile.mkdtemp(prefix="vllm-book-font-")) / "NotoSansCJKsc-Regular.otf"
            buf = io.BytesIO()
            font.save(buf)
            out.write_bytes(buf.getvalue())
            return out, digest
    raise SystemExit(f"face {FACE!r} not in {src}")


@cache
def pyplot():
    """matplotlib.pyplot, configured for stable SVG output with the CJK font."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    path, _ = cjk_font()
    font_manager.fontManager.addfont(str(path))
    name = font_manager.FontProperties(fname=str(path)).get_name()
    matplotlib.rcParams.update({
        "svg.hashsalt": HASHSALT,
        "svg.fonttype": "path",
        "font.family": "sans-serif",
        "font.sans-serif": [name, "DejaVu Sans"],
        "axes.unicode_minus": False,  # U+2212 is fine in Noto, but keep '-' for byte stability
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "figure.dpi": 100,
        "savefig.bbox": "tight",
        "path.simplify": False,
    })
    return plt


_EMPTY_GLYPH = re.compile(rb'<path id="([^"]+)" transform="([^"]*)"/>')


_DOCTYPE = re.compile(rb'<!DOCTYPE svg PUBLIC [^>]*>\n?')


def fix_svg(data: bytes) -> bytes:
    """Make matplotlib's SVG valid for epubcheck (EPUB 3):

    * drop the ``<!DOCTYPE svg PUBLIC … svg11.dtd>`` line (EPUB 3 forbids external identifiers and the
      DTD's external entities, OPF-073 / HTM-003; browsers and cairosvg do not need it);
    * an empty glyph (the space) is written as a ``<path>`` without the required ``d`` attribute; give it
      an empty one (``d=""`` draws nothing).
    """
    data, n = _DOCTYPE.subn(b"", data, count=1)
    return _EMPTY_GLYPH.sub(rb'<path id="\1" d="" transform="\2"/>', data)


def render(fig) -> bytes:
    """The SVG bytes of *fig* (no timestamp, fixed ids), made epubcheck-valid; closes the figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    pyplot().close(fig)
    return fix_svg(buf.getvalue())
