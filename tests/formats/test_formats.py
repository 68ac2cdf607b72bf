"""EPUB and PDF editions (vllm_book.formats): one small Chinese book built with both builders.

Needs Debian's chromium + the pinned mermaid-cli (``make node-tools``), epubcheck (Java) and
poppler-utils.  Without them the module is skipped — except under CI (``CI=true``), where a
missing tool is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from docutils import nodes
from docutils.utils import new_document
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser

from vllm_book.formats import rinoh_cjk
from vllm_book.formats.mermaid_offline import MermaidError
from vllm_book.pin import load_pin

REPO = Path(__file__).resolve().parents[2]
EPUBCHECK = Path("/usr/share/java/epubcheck.jar")
CACHE = REPO / "_build" / ".cache-tests"
PARAGRAPH = ("调度器在每一步推理开始之前决定哪些请求进入本轮批次，以及每个请求本轮可以处理多少个令牌。"
             "它先照顾已经在运行的请求，再从等待队列里按策略挑选新请求，直到令牌预算或者序列上限被用完为止；"
             "这个过程既要保证首个令牌尽快返回，又要让显存里的键值缓存不被撑爆，所以每一个判断都和吞吐、"
             "延迟以及公平性直接相关。")


def _missing_tools() -> list[str]:
    missing = []
    if not (REPO / "node_modules" / ".bin" / "mmdc").is_file():
        missing.append("mermaid-cli (make node-tools)")
    if not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")):
        missing.append("chromium")
    if not EPUBCHECK.is_file() or not shutil.which("java"):
        missing.append("epubcheck")
    for tool in ("pdftotext", "pdffonts"):
        if not shutil.which(tool):
            missing.append(f"{tool} (poppler-utils)")
    return missing


_MISSING = _missing_tools()
if _MISSING and os.environ.get("CI") != "true":
    pytest.skip(f"EPUB/PDF tools missing: {', '.join(_MISSING)}", allow_module_level=True)


def _overrides(rootdir: Path) -> dict[str, str]:
    return {"vllm_book_src_root": str(rootdir / "fake-vllm"), "vllm_book_cache_dir": str(CACHE)}


@pytest.fixture(scope="module")
def epub(build_root, rootdir):
    assert not _MISSING, f"missing tools: {_MISSING}"
    return build_root("formats", "epub", **_overrides(rootdir))


@pytest.fixture(scope="module")
def pdf(build_root, rootdir):
    assert not _MISSING, f"missing tools: {_MISSING}"
    # no page references kept from an earlier build: the build must get them right in one pass
    shutil.rmtree(CACHE / "rinoh", ignore_errors=True)
    app = build_root("formats", "rinoh", **_overrides(rootdir))
    return app, app.outdir / "formats-test.pdf"


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout


# -- EPUB ----------------------------------------------------------------------------------------


def test_epubcheck_is_clean(epub):
    book = epub.outdir / "formats-test.epub"
    proc = subprocess.run(["java", "-jar", str(EPUBCHECK), str(book)], capture_output=True, text=True, timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "No errors or warnings detected" in out, out
    assert not _real_warnings(epub)


def test_epub_rebuild_in_same_outdir_is_clean(epub):
    epub.build(force_all=True)  # the outdir now holds the previous cover page and .buildinfo
    book = epub.outdir / "formats-test.epub"
    proc = subprocess.run(["java", "-jar", str(EPUBCHECK), str(book)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and "No errors or warnings detected" in proc.stdout + proc.stderr, proc.stdout


def test_epub_metadata_cover_and_language(epub):
    opf = (epub.outdir / "content.opf").read_text()
    assert "<dc:language>zh-CN</dc:language>" in opf
    assert 'properties="cover-image"' in opf
    cover = (epub.outdir / "_static" / "vllm-book-cover.svg").read_text()
    assert load_pin().commit[:20] in cover and "格式测试手册" in cover
    page = (epub.outdir / "01-part" / "01-chapter.xhtml").read_text()
    assert 'xml:lang="zh-CN"' in page
    assert not list(epub.outdir.rglob("*.mjs")) and not list(epub.outdir.rglob("*.js"))


def test_epub_content(epub):
    page = (epub.outdir / "01-part" / "01-chapter.xhtml").read_text()
    assert 'class="chapter-card' in page and "谁该读这一篇" in page
    imgs = re.findall(r'<img[^>]+src="([^"]+\.png)"', page)
    assert imgs, "the Mermaid diagram is a PNG"
    assert (epub.outdir / "01-part" / imgs[0]).resolve().is_file()
    svgs = re.findall(r'<img[^>]+src="([^"]+\.svg)"', page)
    assert svgs, "the experiments' SVG figure stays SVG in the EPUB"
    assert (epub.outdir / "01-part" / svgs[0]).resolve().is_file()
    assert 'class="highlight' in page and '<span class="k">def</span>' in page  # highlighted code
    assert "<math" in page  # MathML, no JavaScript
    assert "scheduler.py:24–35" in page and "https://book.example/zh-cn/latest/_src/" in page
    assert 'href="#formats-chapter"' in page or 'href="../index.xhtml' in page or "<a " in page
    index = (epub.outdir / "vllm-book-source-index.xhtml").read_text()
    assert "Scheduler.schedule" in index and "01-part/01-chapter.xhtml#src-" in index
    nav = (epub.outdir / "nav.xhtml").read_text()
    assert "源码索引" in nav


# -- PDF -----------------------------------------------------------------------------------------


def test_pdf_text_is_clean_chinese(pdf):
    app, path = pdf
    assert path.is_file()
    text = _run("pdftotext", "-enc", "UTF-8", str(path), "-")
    assert "\u200b" not in text and "\u2011" not in text and "\u00a0" not in text
    flat = re.sub(r"\s+", "", text)
    assert PARAGRAPH in flat, "the paragraph survives copy/paste: no inserted spaces or lost characters"
    for label in ("目录", "第一部分", "第 1 章".replace(" ", ""), "源码索引", "备注", load_pin().commit,
                  "表1", "调度预算的两个字段", "图1", "一次调度的两个结果"):
        assert label.replace(" ", "") in flat, label
    assert "scheduler.py:24–35" in text  # the anchor shows path:start–end
    assert "def schedule(self) -> list[str]:" in text  # code copies as typed
    # the src-code excerpt keeps the source's line numbers (lines 24–31 of the fake scheduler)
    layout = _run("pdftotext", "-enc", "UTF-8", "-layout", str(path), "-")
    assert re.search(r"^\s*24\s+def schedule\(self\)", layout, re.M), "line numbers of the excerpt"
    assert re.search(r"^\s*25\s+token_budget = ", layout, re.M)
    # 源码索引: symbol, lines, the citing chapter by its label
    assert "Scheduler.schedule24–35：第1章" in flat


def test_pdf_fonts_are_embedded_subsets(pdf):
    _, path = pdf
    rows = [ln.split() for ln in _run("pdffonts", str(path)).splitlines()[2:]]
    cjk = [r for r in rows if "CJK" in r[0]]
    assert {r[0].split("+")[1].split("-")[0] for r in cjk} >= {"NotoSerifCJKsc", "NotoSansCJKsc"}
    for r in cjk:
        assert re.fullmatch(r"[A-Z]{6}\+.+", r[0]), r
        emb, sub = r[-5], r[-4]
        assert (emb, sub) == ("yes", "yes"), r
    assert all(r[-5] == "yes" for r in rows), rows  # nothing falls back to a base-14 font
    assert any("DejaVuSerif" in r[0] for r in rows)  # x₁: Noto CJK lacks subscripts, the fallback face has them
    text = _run("pdftotext", "-enc", "UTF-8", str(path), "-")
    assert "x₁" in text and "✔ 成立或 ✘ 不成立" in text  # ✔ ✘: neither Noto nor DejaVu Serif, DejaVu Sans has them
    assert path.stat().st_size < 2_000_000


def test_pdf_diagram_is_vector_image_and_has_bookmarks(pdf):
    _, path = pdf
    data = path.read_bytes()
    assert b"/Subtype /Form" in data  # the mermaid-cli PDF, placed as a form XObject
    assert b"/Outlines" in data
    text = _run("pdftotext", "-enc", "UTF-8", str(path), "-")
    assert "预算够吗" in text  # the diagram's text (vector, not pixels)


def test_pdf_svg_figure_is_converted_vector_pdf(pdf):
    """An SVG figure (the experiments' figures) reaches the PDF: svg_images converts it with cairosvg."""
    app, path = pdf
    converted = list(Path(app.doctreedir).glob("images/**/experiment*.pdf"))
    assert converted, "the SVG was converted to PDF"
    flat = re.sub(r"\s+", "", _run("pdftotext", "-enc", "UTF-8", str(path), "-"))
    assert "图2" in flat and "实验结果图" in flat  # the caption, numbered after the diagram (图 1)
    data = path.read_bytes()
    assert data.count(b"/Subtype /Form") >= 3, "diagrams and the SVG figure are vector form XObjects"
    assert not [w for w in _real_warnings(app) if "experiment.svg" in w]


def _pages(path: Path) -> list[str]:
    return _run("pdftotext", "-enc", "UTF-8", "-layout", str(path), "-").split("\f")


def test_pdf_renders_once_with_right_toc_and_headers(pdf):
    """No reference cache (the fixture removed it): the body is rendered before the TOC,
    so one pass gives the final page numbers; running headers still name the chapter."""
    app, path = pdf
    assert app.builder.rendering_passes == 1
    pages = _pages(path)
    toc = next(i for i, p in enumerate(pages) if "目录" in p)
    m = re.search(r"调度器如何组批[ .]*?(\d+)\s*$", pages[toc], re.M)
    assert m, pages[toc]
    number = int(m.group(1))
    # body pages are numbered from 1 after the roman-numbered front matter
    first_body = next(i for i in range(toc + 1, len(pages)) if re.search(r"^\s*1\s*$", pages[i], re.M))
    chapter_page = pages[first_body + number - 1]
    assert "调度器如何组批" in re.sub(r"\s+", "", chapter_page[:300]), chapter_page[:300]
    # a later page of the chapter carries it in its running header (right pages) or the book title (left)
    later = pages[first_body + number: first_body + number + 2]
    assert any("调度器如何组批" in p.splitlines()[0] or "格式测试手册" in p.splitlines()[0] for p in later if p.strip())


def test_pdf_long_literal_breaks_and_copies_intact(pdf):
    """An identifier longer than a line is broken (at ``.``/``_``), not run into the margin,
    and copies out of the PDF without inserted characters."""
    _, path = pdf
    ident = "VllmConfig._is_default_v2_model_runner_model.with_an_even_longer_attribute_chain_for_the_line_break_test"
    text = _run("pdftotext", "-enc", "UTF-8", str(path), "-")
    assert ident in re.sub(r"\s+", "", text)
    assert not any(ident in line for line in text.splitlines()), "the identifier was not broken"


def test_literal_breaks_unit():
    z = "\u200b"
    doc = _doc("前 ``VllmConfig._is_default_v2_model_runner_model`` 与 ``short_name`` 后\n")
    assert rinoh_cjk.insert_literal_breaks(doc) > 0
    long_, short = [n.astext() for n in doc.findall(nodes.literal)]
    assert long_.replace(z, "") == "VllmConfig._is_default_v2_model_runner_model"
    assert f"default_{z}v2" in long_ and z not in short
    assert rinoh_cjk._literal_with_breaks("vllm/v1/engine/__init__.py:88–145").split(z) == [
        "vllm/", "v1/", "engine/", "__init__.py:", "88–145"]  # no break in __init__ or before .py
    assert rinoh_cjk._literal_with_breaks("--max-num-batched-tokens").split(z)[0] == "--max-"


def _real_warnings(app) -> list[str]:
    # a second Sphinx app in one process re-registers docutils nodes: not ours to report
    return [w for w in app.warning.getvalue().splitlines() if w.strip() and "is already registered" not in w]


def test_pdf_warning_free(pdf):
    app, _ = pdf
    assert not _real_warnings(app)


# -- failures ------------------------------------------------------------------------------------


def test_broken_diagram_names_file_and_line(build_root):
    assert not _MISSING, f"missing tools: {_MISSING}"
    with pytest.raises(MermaidError, match=r"index\.md:5: Mermaid diagram does not parse: .*Parse error"):
        build_root("formats-broken", "epub", vllm_book_cache_dir=str(CACHE))


def test_diagrams_are_drawn_once_for_the_epub_and_the_pdf(build_root, rootdir, tmp_path):
    """The first offline build draws each diagram in both formats, in the same browser page: the EPUB's PNG and
    the PDF's vector PDF; the PDF build after it draws nothing (vllm_book_mermaid_formats)."""
    assert not _MISSING, f"missing tools: {_MISSING}"
    overrides = {**_overrides(rootdir), "vllm_book_cache_dir": str(tmp_path / "cache")}
    epub = build_root("formats", "epub", **overrides)
    assert re.search(r"rendering \d+ Mermaid diagram\(s\) as png\+pdf", epub.status.getvalue())
    drawn = sorted((tmp_path / "cache" / "mermaid").iterdir())
    pngs, pdfs = [p for p in drawn if p.suffix == ".png"], [p for p in drawn if p.suffix == ".pdf"]
    assert pngs and len(pngs) == len(pdfs) == len(drawn) // 2
    assert all(p.read_bytes().startswith(b"%PDF") for p in pdfs)
    pdf = build_root("formats", "rinoh", **overrides)
    assert "Mermaid diagram" not in pdf.status.getvalue()
    assert sorted((tmp_path / "cache" / "mermaid").iterdir()) == drawn
    assert (pdf.outdir / "formats-test.pdf").is_file()


def test_missing_mermaid_cli_says_how_to_install(build_root):
    with pytest.raises(MermaidError, match=r"mermaid-cli not found.*make node-tools"):
        build_root("formats-broken", "rinoh", vllm_book_cache_dir=str(CACHE),
                   vllm_book_mermaid_cli="/nonexistent/mmdc")


# -- units (no build) ----------------------------------------------------------------------------


def _doc(rst: str) -> nodes.document:
    doc = new_document("test", get_default_settings(Parser))
    Parser().parse(rst, doc)
    return doc


def test_breaks_respect_kinsoku_and_skip_literals():
    doc = _doc("标题\n====\n\n调度器（Scheduler）说：“预算，用完。” ``代码里的中文`` 结束。\n")
    rinoh_cjk.insert_breaks(doc)
    title = next(iter(doc.findall(nodes.title))).astext()
    assert "\u200b" not in title
    para = next(iter(doc.findall(nodes.paragraph)))
    text = para.astext()
    z = "\u200b"
    assert f"调{z}度{z}器" in text
    assert f"{z}（" in text or "器（" in text
    assert f"（{z}" not in text  # no break after an opening bracket
    assert f"{z}，" not in text and f"{z}。" not in text and f"{z}”" not in text  # none before closing punctuation
    literal = next(iter(doc.findall(nodes.literal))).astext()
    assert z not in literal


def test_break_rules():
    assert rinoh_cjk.break_allowed("中", "文")
    assert not rinoh_cjk.break_allowed("中", "，")
    assert not rinoh_cjk.break_allowed("《", "书")
    assert not rinoh_cjk.break_allowed("a", "b")
    assert rinoh_cjk.break_allowed("用", "v")


def _table(rows: list[list[str]]) -> nodes.document:
    doc = _doc("x\n")
    tgroup = nodes.tgroup(cols=len(rows[0]))
    tgroup += [nodes.colspec(colwidth=1) for _ in rows[0]]
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for text in cells:
            para = nodes.paragraph()
            for i, part in enumerate(text.split("`")):
                para += nodes.literal(part, part) if i % 2 else nodes.Text(part)
            row += nodes.entry("", para)
        body += row
    tgroup += body
    doc += nodes.table("", tgroup)
    return doc


def test_wide_tables_get_explicit_column_widths():
    from vllm_book.formats.rinoh_builder import size_tables

    doc = _table([["`VLLM_ENABLE_V1_MULTIPROCESSING=0` 很长很长很长很长很长很长很长的说明文字",
                   "1（`InprocClient`，引擎核心同进程）", "合计"]])
    assert size_tables(doc) == 1
    table = next(iter(doc.findall(nodes.table)))
    widths = [c["colwidth"] for c in table.findall(nodes.colspec)]
    assert "colwidths-given" in table["classes"] and table["width"] == "100%"
    assert min(widths) >= 0.05 * sum(widths)  # no column squeezed to nothing
    narrow = _table([["短", "表"]])
    assert size_tables(narrow) == 0  # tables that fit keep rinohtype's own sizing


# -- diagram batches (a stand-in renderer: no browser needed) ------------------------------------

FAKE_RENDERER = """
import json, sys
job = json.load(open(sys.argv[2], encoding="utf-8"))
for i, item in enumerate(job["items"]):
    if "BROKEN" in item["code"]:
        print(json.dumps({"i": i, "ok": False, "message": "Parse error on line 2: BROKEN"}))
        continue
    for out in item["outs"]:
        open(out, "w").write(item["code"])
    print(json.dumps({"i": i, "ok": True}))
"""
OUTPUTS = [{"format": "png", "scale": 2, "config": {}, "background": "white"},
           {"format": "pdf", "scale": 1, "config": {}, "background": "white"}]


def _fake_toolchain(tmp_path):
    import sys

    from vllm_book.formats.mermaid_offline import Toolchain

    renderer = tmp_path / "render.py"
    renderer.write_text(FAKE_RENDERER)
    return Toolchain(Path(sys.executable), tmp_path, Path("/bin/true"), "11.14.0", "11.17.0", renderer)


def test_mermaid_browser_count():
    from vllm_book.formats.mermaid_offline import MIN_PER_BROWSER, browsers

    assert browsers(3, 0) == 1  # too few to share
    assert browsers(10 * MIN_PER_BROWSER, 2) == 2
    assert browsers(2 * MIN_PER_BROWSER + 1, 4) == 2  # at least MIN_PER_BROWSER each
    assert browsers(10 * MIN_PER_BROWSER, 1) == 1


def test_mermaid_parallel_batches_store_every_diagram(tmp_path):
    from vllm_book.formats.mermaid_offline import MIN_PER_BROWSER, Diagram, browsers, render_parallel

    n = 2 * MIN_PER_BROWSER + 2
    tools = _fake_toolchain(tmp_path)
    diagrams = [Diagram(f"flowchart LR\n  A{i} --> B{i}\n", "chap.md", i) for i in range(n)]
    keys = [{"png": f"k{i}", "pdf": f"p{i}"} for i in range(n)]
    runs = browsers(n, 2)
    assert runs == 2
    render_parallel(diagrams, keys, tools, OUTPUTS, tmp_path / "out", runs)
    for i in range(n):  # each image under its own key, in both formats, whichever run drew it
        assert (tmp_path / "out" / f"k{i}.png").read_text() == diagrams[i].code
        assert (tmp_path / "out" / f"p{i}.pdf").read_text() == diagrams[i].code


def test_mermaid_broken_diagram_named_others_kept(tmp_path):
    from vllm_book.formats.mermaid_offline import MIN_PER_BROWSER, Diagram, browsers, render_parallel

    n = 2 * MIN_PER_BROWSER
    tools = _fake_toolchain(tmp_path)
    diagrams = [Diagram(f"flowchart LR\n  A{i} --> B{i}\n", f"part/chap-{i}.md", 10 + i) for i in range(n)]
    diagrams[7] = Diagram("flowchart LR\n  BROKEN\n", "part/chap-7.md", 17)
    with pytest.raises(MermaidError, match=r"part/chap-7\.md:17: Mermaid diagram does not parse: Parse error"):
        render_parallel(diagrams, [{"png": f"k{i}", "pdf": f"p{i}"} for i in range(n)], tools, OUTPUTS,
                        tmp_path / "out", browsers(n, 2))
    assert (tmp_path / "out" / "k0.png").is_file() and (tmp_path / "out" / "k9.png").is_file()
    assert not (tmp_path / "out" / "k7.png").exists()


def test_mermaid_renderer_failure_says_how_to_fix(tmp_path):
    from vllm_book.formats.mermaid_offline import Diagram, render_batch

    tools = _fake_toolchain(tmp_path)
    tools.renderer.write_text("import sys; sys.stderr.write('Error: Failed to launch the browser process'); sys.exit(1)")
    with pytest.raises(MermaidError, match=r"Failed to launch the browser.*make node-tools"):
        render_batch([Diagram("flowchart LR\n A-->B\n", "c.md", 1)], [{"png": "k", "pdf": "p"}], tools, OUTPUTS,
                     tmp_path / "out")


def test_an_image_file_is_opened_once_however_often_it_is_laid_out(tmp_path):
    """rinohtype re-creates an image at every re-layout and keeps each PDF image's file open until the document
    is written; without the image-cache patch a 39-chapter book ran out of file descriptors."""
    import cairosvg

    from vllm_book.formats import rinoh_patches

    rinoh_patches.apply()
    from rinoh.backend import pdf

    path = tmp_path / "d.pdf"
    cairosvg.svg2pdf(bytestring=b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" '
                                b'height="5"/></svg>', write_to=str(path))
    fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    first = pdf.Image(path)
    before = fds()
    again = [pdf.Image(path) for _ in range(50)]
    assert all(img is first for img in again) and fds() == before
    path.write_bytes(path.read_bytes() + b"\n")  # a changed file is read again
    assert pdf.Image(path) is not first


# -- downloadable files ({download}) -------------------------------------------------------------

DOWNLOAD = "01-part/downloads/plan.md"  # the template the chapter offers, as Sphinx names it (source-relative)


def _download_dest() -> str:
    import hashlib

    return f"{hashlib.md5(DOWNLOAD.encode()).hexdigest()}/plan.md"


def test_download_is_shipped_by_the_html_edition(build_root, rootdir):
    app = build_root("formats", "html", **_overrides(rootdir))
    shipped = app.outdir / "_downloads" / _download_dest()
    assert shipped.read_text(encoding="utf-8").startswith("# 容量规划模板")
    html = (app.outdir / "01-part" / "01-chapter.html").read_text(encoding="utf-8")
    assert f'href="../_downloads/{_download_dest()}"' in html


def test_download_links_to_the_online_copy_in_the_epub(epub):
    import zipfile

    x = (epub.outdir / "01-part" / "01-chapter.xhtml").read_text(encoding="utf-8")
    assert f'href="https://book.example/zh-cn/latest/_downloads/{_download_dest()}"' in x
    assert "容量规划模板" in x
    names = zipfile.ZipFile(epub.outdir / "formats-test.epub").namelist()
    assert not [n for n in names if "_downloads" in n]  # not in the manifest (epubcheck: test_epubcheck_is_clean)


def test_download_links_to_the_online_copy_in_the_pdf(pdf):
    _app, path = pdf
    url = f"https://book.example/zh-cn/latest/_downloads/{_download_dest()}"
    assert url.encode() in path.read_bytes()  # the link annotation's /URI
    assert "容量规划模板" in _run("pdftotext", "-enc", "UTF-8", str(path), "-")


def test_aligned_math_becomes_well_formed_mathml():
    """latex2mathml has no `aligned`: its `&` came out bare and made the page unparsable XML (epubcheck RSC-016)."""
    import xml.dom.minidom

    from vllm_book.formats.epub import to_mathml

    block = to_mathml(r"\begin{aligned} a &= b \\ c &= d \end{aligned}", True)
    xml.dom.minidom.parseString(block)  # raises on a bare &
    assert "<mtable" in block and "<mi>&</mi>" not in block
    xml.dom.minidom.parseString(to_mathml(r"a \& b", False))


# -- speed patches change nothing ----------------------------------------------------------------


@pytest.mark.parametrize("patch", ["table-sizing", "table-index", "lookup-cache"])
def test_a_speed_patch_changes_nothing_in_the_pdf(rootdir, tmp_path, patch):
    """Each speed patch of vllm_book.formats (rinoh_tables: column sizing that measures cell contents only when
    rinohtype's sizing reads them, row positions remembered; rinoh_patches lookup-cache: style lookups memoised,
    "not set" included) leaves the PDF as it is without it: text, destinations, every page's pixels.  The root has
    a table that fits as it is (auto widths), a wide one (100 %, relative widths from size_tables) and styles
    looked up through parents."""
    assert not _MISSING, f"missing tools: {_MISSING}"
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("compare_pdf", REPO / "bench" / "compare_pdf.py")
    compare_pdf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_pdf)
    src = tmp_path / "src"
    shutil.copytree(rootdir / "test-formats", src)
    built = {}
    for name, off in (("with", ""), ("without", patch)):
        out = tmp_path / name
        cmd = [sys.executable, "-m", "sphinx", "-b", "rinoh", "-d", str(out / "doctrees"),
               *(f"-D{k}={v}" for k, v in _overrides(rootdir).items()), str(src), str(out / "pdf")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO,
                              env={**os.environ, "VLLM_BOOK_RINOH_OFF": off})
        assert proc.returncode == 0, proc.stderr[-3000:]
        built[name] = out / "pdf" / "formats-test.pdf"
    result = compare_pdf.compare(built["without"], built["with"], log=lambda *a, **k: None)
    assert result["identical"], result
