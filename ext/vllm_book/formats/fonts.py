"""Noto CJK fonts for the rinohtype PDF: found, extracted, patched, subset, cached.

rinohtype 0.5.6 reads single OpenType files only and embeds them whole, so
Debian's ``fonts-noto-cjk`` collections (``.ttc``, 20–27 MB each) are turned
into small per-build fonts:

1. the SC face is taken out of the collection (found by its full name, not by
   index, so a re-ordered collection still works);
2. it is subset with fontTools to the characters the book uses (plus ASCII,
   CJK punctuation and the UI strings), keeping only the ``kern`` and ``liga``
   features (``locl``/``palt`` would double the glyph count);
3. the format-14 ``cmap`` subtable (variation sequences) is dropped — rinohtype
   raises ``NotImplementedError`` on it;
4. the CID-keyed CFF is renumbered so that CID == GID: rinohtype writes glyph
   ids as CIDs (``Identity-H``); with the original CIDs poppler still renders
   but Ghostscript and Acrobat show empty boxes;
5. the PostScript name gets a six-letter subset tag (``ABCDEF+NotoSerifCJKsc-Regular``)
   derived from the character set, so viewers and ``pdffonts`` see a subset.

The CID-keyed CFF *header* still needs a rinohtype patch (the ROS/FDArray Top
DICT operators); see :mod:`vllm_book.formats.rinoh_patches`.

Results are cached under ``<cache>/fonts/<hash of character set and sources>/``;
only the few most recent sets are kept.  This module has no Sphinx imports.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import string
import subprocess
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

#: bump when the subsetting recipe changes (invalidates the cache)
RECIPE = 7  # 6: the fallback subset always holds "?"; 7: and DejaVu Sans's symbols DejaVu Serif lacks (✔ ✘)

#: role → (collection file, full name of the face inside it)
FACES: dict[str, tuple[str, str]] = {
    "serif": ("NotoSerifCJK-Regular.ttc", "Noto Serif CJK SC"),
    "serif-bold": ("NotoSerifCJK-Bold.ttc", "Noto Serif CJK SC Bold"),
    "sans": ("NotoSansCJK-Regular.ttc", "Noto Sans CJK SC"),
    "sans-bold": ("NotoSansCJK-Bold.ttc", "Noto Sans CJK SC Bold"),
    "mono": ("NotoSansCJK-Regular.ttc", "Noto Sans Mono CJK SC"),
    "mono-bold": ("NotoSansCJK-Bold.ttc", "Noto Sans Mono CJK SC Bold"),
}

#: typeface name (as used in the .rts) → (regular role, bold role)
TYPEFACES: dict[str, tuple[str, str]] = {
    "Book Serif CJK": ("serif", "serif-bold"),
    "Book Sans CJK": ("sans", "sans-bold"),
    "Book Mono CJK": ("mono", "mono-bold"),
    "Book Fallback": ("fallback", "fallback"),
}

#: characters Noto CJK lacks (subscript digits, some math and arrows) come from DejaVu Serif,
#: which rinohtype itself installs (rinoh-typeface-dejavuserif); TrueType, subset the same way
FALLBACK_FILE = ("rinoh_typeface_dejavuserif", "DejaVuSerif.ttf")
#: …and those DejaVu Serif lacks too (the dingbats ✔ ✘ that vllm-doctor prints) from DejaVu Sans
#: (rinoh-typeface-dejavusans, pinned in pyproject.toml), merged into the same fallback face: rinohtype
#: falls back to one typeface only
FALLBACK_EXTRA_FILE = ("rinoh_typeface_dejavusans", "DejaVuSans.ttf")

FONT_DIRS = (
    "/usr/share/fonts/opentype/noto",       # Debian / Ubuntu fonts-noto-cjk
    "/usr/share/fonts/noto-cjk",            # Arch, Alpine
    "/usr/share/fonts/google-noto-cjk",     # Fedora
    "/usr/share/fonts/opentype/noto-cjk",
    "/usr/local/share/fonts",
)

INSTALL_HINT = ("install the Noto CJK fonts: `apt-get install fonts-noto-cjk` "
                "(or `make node-tools`, which installs them with chromium and mermaid-cli)")

#: always in the subset: printable ASCII, typographic and CJK punctuation,
#: digits/letters used by page numbers, list bullets, arrows
BASE_CHARS = (
    string.printable.strip() + " \u00a0\u200b\u00b7\u00d7\u00f7\u00b1\u00b0\u00a7\u00a9\u00ae"
    "\u2010\u2011\u2013\u2014\u2015\u2018\u2019\u201c\u201d\u2022\u2026\u2030\u2032\u2033\u2122"
    "\u2190\u2191\u2192\u2193\u2194\u21d2\u2212\u2248\u2260\u2264\u2265\u221e\u2713\u2717\u25b8\u25cf\u25cb\u25a0\u25a1"
    "\u3000\u3001\u3002\u3003\u3008\u3009\u300a\u300b\u300c\u300d\u300e\u300f\u3010\u3011\u3014\u3015\u301c"
    "\uff01\uff08\uff09\uff0c\uff0e\uff1a\uff1b\uff1f\uff5e\uff0d\uff0f\uff3b\uff3d\uff5b\uff5d"
    "一二三四五六七八九十百零〇第章节部分图表目录附录源码索引页注意警告提示重要危险错误参见另请参阅小结自检下一步"
)


class FontError(RuntimeError):
    """A font is missing or cannot be prepared; the message says how to fix it."""


@dataclass(frozen=True)
class PreparedFonts:
    directory: Path
    files: dict[str, Path]  # role → .otf / .ttf
    key: str
    chars: int
    fallback_chars: frozenset[str] = frozenset()


def _fc_list_files() -> list[Path]:
    try:
        out = subprocess.run(["fc-list", "-f", "%{file}\n", ":lang=zh-cn"], capture_output=True,
                             text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [Path(line) for line in out.splitlines() if line.endswith((".ttc", ".otc"))]


def find_collections(extra_dirs: tuple[str, ...] = ()) -> dict[str, Path]:
    """Collection file name → path, for every file FACES needs."""
    wanted = {ttc for ttc, _ in FACES.values()}
    found: dict[str, Path] = {}
    for d in (*extra_dirs, *FONT_DIRS):
        for name in wanted - found.keys():
            p = Path(d) / name
            if p.is_file():
                found[name] = p
    if wanted - found.keys():
        for p in _fc_list_files():
            if p.name in wanted and p.name not in found:
                found[p.name] = p
    missing = sorted(wanted - found.keys())
    if missing:
        raise FontError(f"the PDF needs the Noto CJK fonts ({', '.join(missing)} not found in "
                        f"{', '.join(FONT_DIRS)} or by fc-list); {INSTALL_HINT}")
    return found


def fallback_font(package_file: tuple[str, str] = FALLBACK_FILE) -> Path:
    import importlib.util

    spec = importlib.util.find_spec(package_file[0])
    if spec is None or not spec.submodule_search_locations:
        raise FontError(f"{package_file[0]} is not installed (pyproject.toml lists it); run `make venv`")
    return Path(list(spec.submodule_search_locations)[0]) / package_file[1]


def _subset_fallback_source(path: Path, chars: str, features: list[str]):
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(path))
    opts = subset.Options()
    opts.layout_features = features
    opts.name_IDs = [0, 1, 2, 3, 4, 5, 6]
    opts.name_languages = [0x409]
    opts.notdef_outline = True
    opts.hinting = False
    subsetter = subset.Subsetter(opts)
    subsetter.populate(text=chars)
    subsetter.subset(font)
    return font


def _prepare_fallback(chars: str, key: str, dest: str) -> list[str]:
    """Subset DejaVu Serif (and DejaVu Sans, for what Serif lacks too) to the characters Noto CJK SC does
    not have; returns them."""
    from fontTools.merge import Merger
    from fontTools.ttLib import TTFont

    serif_path, sans_path = fallback_font(), fallback_font(FALLBACK_EXTRA_FILE)
    serif, sans = TTFont(str(serif_path)).getBestCmap(), TTFont(str(sans_path)).getBestCmap()
    noto = _load_face(find_collections()[FACES["serif"][0]], FACES["serif"][1]).getBestCmap()
    needed = [c for c in chars if ord(c) not in noto and not c.isspace() and c != "\u200b"]
    from_serif = [c for c in needed if ord(c) in serif]
    from_sans = [c for c in needed if ord(c) not in serif and ord(c) in sans]
    # "?" too: rinohtype draws it in the fallback face for a glyph no face has; without it the build dies with
    # an unnamed MissingGlyphException instead of the warning that names the character
    font = _subset_fallback_source(serif_path, " ?" + "".join(from_serif), ["kern", "liga"])
    if from_sans:
        with tempfile.TemporaryDirectory(prefix="vllm-book-fallback-") as tmp:
            parts = [Path(tmp) / "serif.ttf", Path(tmp) / "sans.ttf"]
            font.save(str(parts[0]))
            _subset_fallback_source(sans_path, "".join(from_sans), []).save(str(parts[1]))
            quiet = logging.getLogger("fontTools.merge")
            level, quiet.level = quiet.level, logging.ERROR  # it logs every cmap subtable it drops
            try:
                merged = Merger().merge([str(p) for p in parts])
            finally:
                quiet.setLevel(level)
        for table, fields in (("hhea", ("ascent", "descent", "lineGap")),
                              ("OS/2", ("sTypoAscender", "sTypoDescender", "sTypoLineGap", "usWinAscent",
                                        "usWinDescent"))):
            for field in fields:  # line spacing stays DejaVu Serif's, as before the merge
                setattr(merged[table], field, getattr(font[table], field))
        font = merged
    font["cmap"].tables = [t for t in font["cmap"].tables if t.format != 14]
    _fix_layout_tables(font)
    tag = _subset_tag(key, "fallback")
    for rec in font["name"].names:
        if rec.nameID == 6:
            rec.string = f"{tag}+{rec.toUnicode().split('+')[-1]}"
    out = Path(dest) / "fallback.ttf"
    font.save(str(out.with_suffix(".tmp")))
    os.replace(out.with_suffix(".tmp"), out)
    return from_serif + from_sans


def charset_key(chars: set[str], collections: dict[str, Path]) -> str:
    h = hashlib.sha256(f"recipe={RECIPE}\n".encode())
    for name in sorted(collections):
        st = collections[name].stat()
        h.update(f"{name}:{st.st_size}:{int(st.st_mtime)}\n".encode())
    h.update("".join(sorted(chars)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


def _subset_tag(key: str, role: str) -> str:
    digest = hashlib.sha256(f"{key}/{role}".encode()).digest()
    return "".join(chr(ord("A") + b % 26) for b in digest[:6])


def _load_face(collection: Path, full_name: str):
    from fontTools.ttLib import TTCollection

    coll = TTCollection(str(collection), lazy=True)
    for font in coll.fonts:
        if font["name"].getDebugName(4) == full_name:
            return font
    raise FontError(f"{collection} has no face named {full_name!r}; {INSTALL_HINT}")


def _renumber_cids(data: bytes) -> bytes:
    """Rewrite the CFF charset of a subset font so that CID == GID.

    Only the CFF table is decompiled; every other table is copied as binary
    (they address glyphs by GID, which does not change).
    """
    from fontTools.ttLib import TTFont

    font = TTFont(io.BytesIO(data), lazy=True, recalcBBoxes=False, recalcTimestamp=False)
    cff = font["CFF "].cff
    top = cff.topDictIndex[0]
    if not hasattr(top, "ROS"):
        return data
    old = list(top.charset)
    new = [".notdef"] + [f"cid{i:05d}" for i in range(1, len(old))]
    top.CharStrings.charStrings = {new[i]: top.CharStrings.charStrings[name] for i, name in enumerate(old)}
    top.charset = new
    font.setGlyphOrder(new)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def _fix_layout_tables(font) -> None:
    """rinohtype looks features up through each script's DefaultLangSys and
    fails when it is absent: drop GSUB/GPOS without features, give every
    script a DefaultLangSys."""
    from fontTools.ttLib.tables import otTables

    for tag in ("GSUB", "GPOS"):
        if tag not in font:
            continue
        table = font[tag].table
        if not table.FeatureList or not table.FeatureList.FeatureRecord:
            del font[tag]
            continue
        all_features = list(range(len(table.FeatureList.FeatureRecord)))
        for record in table.ScriptList.ScriptRecord:
            if record.Script.DefaultLangSys is None:
                lang = otTables.LangSys()
                lang.LookupOrder = None
                lang.ReqFeatureIndex = 0xFFFF
                lang.FeatureIndex = list(all_features)
                lang.FeatureCount = len(all_features)
                record.Script.DefaultLangSys = lang


def _prepare_one(role: str, collection: str, full_name: str, chars: str, key: str, dest: str) -> str:
    """Worker: extract, subset, patch and write one face (runs in a process pool)."""
    from fontTools import subset

    font = _load_face(Path(collection), full_name)
    opts = subset.Options()
    opts.layout_features = ["kern", "liga"]
    opts.layout_scripts = ["*"]
    opts.name_IDs = [0, 1, 2, 3, 4, 5, 6]
    opts.name_languages = [0x409]
    opts.notdef_outline = True
    opts.recalc_bounds = False
    opts.hinting = False           # smaller; PDF viewers hint CFF themselves
    opts.drop_tables += ["VORG", "vhea", "vmtx", "BASE", "DSIG", "STAT", "meta"]
    opts.prune_unicode_ranges = True
    subsetter = subset.Subsetter(opts)
    subsetter.populate(text=chars)
    subsetter.subset(font)
    # rinohtype cannot read format-14 (variation sequence) cmap subtables
    font["cmap"].tables = [t for t in font["cmap"].tables if t.format != 14]
    _fix_layout_tables(font)
    tag = _subset_tag(key, role)
    name_table = font["name"]
    for rec in list(name_table.names):
        if rec.nameID == 6:
            base = rec.toUnicode().split("+")[-1]
            rec.string = f"{tag}+{base}"
    cff = font["CFF "].cff
    cff.fontNames = [f"{tag}+{n.split('+')[-1]}" for n in cff.fontNames]
    buf = io.BytesIO()
    font.save(buf)
    data = _renumber_cids(buf.getvalue())
    out = Path(dest) / f"{role}.otf"
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return str(out)


def prepare(chars: set[str] | str, cache_dir: Path, keep: int = 3, jobs: int | None = None,
            log=None) -> PreparedFonts:
    """The six subset faces for *chars*, from the cache or freshly made."""
    charset = set(chars) | set(BASE_CHARS)
    charset = {c for c in charset if c.isprintable() or c in "\u00a0\u200b\u3000"}
    collections = find_collections()
    key = charset_key(charset, collections)
    root = Path(cache_dir) / "fonts"
    dest = root / key
    manifest = dest / "fonts.json"
    files = {role: dest / f"{role}.otf" for role in FACES}
    files["fallback"] = dest / "fallback.ttf"
    if manifest.is_file() and all(p.is_file() for p in files.values()):
        os.utime(dest)
        data = json.loads(manifest.read_text(encoding="utf-8"))
        return PreparedFonts(dest, files, key, len(charset), frozenset(data.get("fallback", "")))
    dest.mkdir(parents=True, exist_ok=True)
    text = "".join(sorted(charset))
    if log:
        log(f"subsetting Noto CJK to {len(charset)} characters (cached in {dest})")
    jobs = jobs or min(len(FACES), os.cpu_count() or 1)
    args = [(role, str(collections[ttc]), full, text, key, str(dest)) for role, (ttc, full) in FACES.items()]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(_prepare_one, *zip(*args)))
    else:
        for a in args:
            _prepare_one(*a)
    fallback = _prepare_fallback(text, key, str(dest))
    manifest.write_text(json.dumps({"recipe": RECIPE, "chars": len(charset), "fallback": "".join(fallback),
                                    "faces": {r: FACES[r][1] for r in FACES}}, ensure_ascii=False))
    _prune(root, keep)
    return PreparedFonts(dest, files, key, len(charset), frozenset(fallback))


def _prune(root: Path, keep: int) -> None:
    dirs = sorted((d for d in root.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime, reverse=True)
    for d in dirs[keep:]:
        shutil.rmtree(d, ignore_errors=True)
