"""The English edition's EPUB and PDF, on the formats test root with an English catalog: English title and
labels, English text set as Latin (copy/paste intact, no CJK break characters), the translation banner with
the online link to the Chinese original, and epubcheck clean."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = REPO / "tests" / "roots"
EPUBCHECK = Path("/usr/share/java/epubcheck.jar")
CACHE = REPO / "_build" / ".cache-tests"

TITLE_EN = "How the scheduler forms a batch"
DIAGRAM_EN = ('flowchart LR\n    W["waiting queue"] --> S{"budget left?"}\n    S -- "yes" --> R["running queue"]\n'
              '    S -- "no" --> W')
PARAGRAPH_EN = ("Before every inference step the scheduler decides which requests join this step's batch and how "
                "many tokens each of them may process. It serves the requests that are already running first, then "
                "picks new ones from the waiting queue by policy, until the token budget or the sequence limit runs "
                "out; every decision here trades throughput, latency and fairness against each other, so "
                "unconditionally-long-identifiers-like-this-one must still wrap cleanly.")


def _missing() -> list[str]:
    out = [t for t in ("pdftotext", "java") if not shutil.which(t)]
    if not (REPO / "node_modules" / ".bin" / "mmdc").is_file():
        out.append("mermaid-cli")
    if not EPUBCHECK.is_file():
        out.append("epubcheck")
    return out


if _missing() and os.environ.get("CI") != "true":
    pytest.skip(f"EPUB/PDF tools missing: {', '.join(_missing())}", allow_module_level=True)


def _po(entries: dict[str, str]) -> str:
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    body = "".join(f"msgid {q(k)}\nmsgstr {q(v)}\n\n" for k, v in entries.items())
    return 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n"Language: en\\n"\n\n' + body


@pytest.fixture(scope="module")
def english_root(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("en-formats") / "src"
    shutil.copytree(ROOTS / "test-formats", src)
    chapter = (src / "01-part" / "01-chapter.md").read_text(encoding="utf-8")
    # a captioned excerpt: its caption is a message like any other
    chapter = chapter.replace(":max-lines: 8\n", ":max-lines: 8\n:caption: 调度循环的开头\n", 1)
    # a text timeline with Chinese in it: a message too (vllm_book.intl.literals)
    chapter += "\n```text\n步 1：预算 8\n步 2：预算 8\n```\n"
    (src / "01-part" / "01-chapter.md").write_text(chapter, encoding="utf-8")
    para_zh = next(line for line in chapter.splitlines() if line.startswith("调度器在每一步"))
    lines = chapter.splitlines()
    start = lines.index("```{mermaid}") + 1
    diagram_zh = "\n".join(lines[start:lines.index("```", start)])
    cat = src / "locale" / "en" / "LC_MESSAGES"
    (cat / "01-part").mkdir(parents=True)
    (cat / "01-part" / "01-chapter.po").write_text(_po({"调度器如何组批": TITLE_EN, para_zh: PARAGRAPH_EN,
                                                         diagram_zh: DIAGRAM_EN,
                                                         "调度循环的开头": "The start of the schedule loop",
                                                         "每步最多的序列数": "Most sequences per step",
                                                         "步 1：预算 8\n步 2：预算 8\n": "step 1: budget 8\nstep 2: budget 8\n"}),
                                                    encoding="utf-8")
    (cat / "index.po").write_text(_po({"格式测试手册": "Formats Test Book"}), encoding="utf-8")
    with (src / "conf.py").open("a", encoding="utf-8") as fh:
        fh.write(textwrap.dedent('''
            # the English edition of the test root (tests/formats/test_english_formats.py)
            project = "Formats Test Book"
            author = "Test Author"
            language = "en"
            epub_language = "en"
            locale_dirs = ["locale"]
            gettext_compact = False
            extensions = extensions + ["vllm_book.intl"]
            vllm_book_online_editions = {"zh_CN": "https://book.example/zh-cn/latest/",
                                         "en": "https://book.example/en/latest/"}
            '''))
    return src


class Built:
    """One ``sphinx-build`` run in its own process, as ``make epub`` / ``make pdf`` run it; it must succeed."""

    def __init__(self, src: Path, builder: str, out: Path) -> None:
        self.outdir = out / builder
        cmd = [sys.executable, "-m", "sphinx", "-b", builder, "-d", str(out / "doctrees"),
               "-D", f"vllm_book_src_root={ROOTS / 'fake-vllm'}", "-D", f"vllm_book_cache_dir={CACHE}",
               str(src), str(self.outdir)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=REPO)
        assert proc.returncode == 0, proc.stderr[-4000:]
        self.stdout, self.stderr = proc.stdout, proc.stderr
        self.warnings = [w for w in proc.stderr.splitlines() if "WARNING" in w or "ERROR" in w]

    def only(self, pattern: str) -> Path:
        """The one output file matching *pattern*."""
        found = list(self.outdir.glob(pattern))
        assert len(found) == 1, found
        return found[0]



@pytest.fixture(scope="module")
def pdf(english_root, tmp_path_factory):
    assert not _missing(), _missing()
    app = Built(english_root, "rinoh", tmp_path_factory.mktemp("en-pdf"))
    return app, app.only("*.pdf")


@pytest.fixture(scope="module")
def epub(english_root, tmp_path_factory):
    assert not _missing(), _missing()
    app = Built(english_root, "epub", tmp_path_factory.mktemp("en-epub"))
    assert app.warnings == [], app.warnings
    return app, app.only("*.epub")


def _text(path: Path, *opts: str) -> str:
    return subprocess.run(["pdftotext", "-enc", "UTF-8", *opts, str(path), "-"], capture_output=True, text=True,
                          check=True, timeout=120).stdout


def test_english_pdf_builds_without_warnings(pdf):
    app, _ = pdf
    assert app.warnings == [], app.warnings


def test_english_pdf_title_labels_and_latin_text(pdf):
    _, path = pdf
    # page furniture (page numbers, the running header) is not part of the text a reader copies
    text = "\n".join(line for line in _text(path).splitlines()
                     if not re.fullmatch(r"\s*(\d+|[ivx]+|Formats Test Book)\s*", line))
    assert "\u200b" not in text
    # undo rinohtype's hyphenation at line ends and its typographic apostrophe
    flat = re.sub(r"\s+", " ", re.sub(r"-\n(?=[a-z])", "", text)).replace("\u2019", "'")
    raw = _text(path)
    assert raw.lstrip().startswith("Formats Test Book") and "Reading the vLLM" in raw  # English title page
    assert "Contents" in flat and "Chapter 1" in flat and "Part 1" in flat
    assert "目录" not in flat and "第 1 章" not in flat
    assert TITLE_EN in flat
    assert PARAGRAPH_EN in flat, "the English paragraph copies out intact, with its spaces"


def test_english_pdf_banner_links_the_chinese_original(pdf):
    _, path = pdf
    flat = re.sub(r"\s+", " ", _text(path))
    assert re.search(r"Translation in progress \d+ % of this page \(\d+ of \d+ passages\) is in English", flat), flat[:3000]
    assert "Read the Chinese original" in flat
    links = subprocess.run(["pdfinfo", "-url", str(path)], capture_output=True, text=True).stdout \
        if shutil.which("pdfinfo") else ""
    if "URI" in links or "https://" in links:
        assert "https://book.example/zh-cn/latest/01-part/01-chapter.html" in links


def test_english_epub_is_clean_and_english(epub):
    import zipfile

    _, path = epub
    proc = subprocess.run(["java", "-jar", str(EPUBCHECK), str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with zipfile.ZipFile(path) as z:
        opf = next(z.read(n).decode() for n in z.namelist() if n.endswith(".opf"))
        chapter = next(z.read(n).decode() for n in z.namelist() if n.endswith("01-chapter.xhtml"))
    assert "<dc:language>en</dc:language>" in opf and "Formats Test Book" in opf
    assert TITLE_EN in chapter and "translation-banner" in chapter
    assert "https://book.example/zh-cn/latest/01-part/01-chapter.html" in chapter


@pytest.fixture(scope="module")
def html(english_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("en-html")
    return Built(english_root, "html", out)


def test_english_html_draws_the_translated_diagram(html):
    page = (html.outdir / "01-part" / "01-chapter.html").read_text(encoding="utf-8")
    assert "waiting queue" in page and "budget left?" in page
    assert "等待队列" not in page  # the translated diagram replaced the Chinese one
    assert "The start of the schedule loop" in page and "调度循环的开头" not in page  # the excerpt's caption
    assert "Full source →" in page
    assert "step 1: budget 8" in page and "步 1" not in page  # the Chinese text block, translated
    assert "Most sequences per step" in page  # a cell of a {table} directive
    assert "一次调度的两个结果" not in page or "请求" in page  # the untranslated second diagram stays Chinese
    assert html.warnings == [], html.warnings


def test_gettext_extracts_diagrams_and_captions(english_root, tmp_path_factory):
    """The Chinese edition's catalogs (make gettext) carry each diagram's source as one message."""
    src = tmp_path_factory.mktemp("zh-pot") / "src"
    shutil.copytree(english_root, src)
    with (src / "conf.py").open("a", encoding="utf-8") as fh:
        fh.write('\nlanguage = "zh_CN"\n')
    out = tmp_path_factory.mktemp("pot")
    built = Built(src, "gettext", out)
    pot = (built.outdir / "01-part" / "01-chapter.pot").read_text(encoding="utf-8")
    assert 'msgid "flowchart LR\\n"' in pot and "等待队列" in pot
    assert 'msgid "调度循环的开头"' in pot
    assert '"步 1：预算 8\\n"' in pot
    assert 'msgid "每步最多的序列数"' in pot
    assert "#: :-1" not in pot  # every message, the captioned diagram's too, says where it comes from


def _pdf_titled(english_root: Path, tmp_path_factory, title: str) -> Built:
    """The English test book's PDF with its chapter translated as *title*; built without warnings."""
    src = tmp_path_factory.mktemp("en-title") / "src"
    shutil.copytree(english_root, src)
    po_file = src / "locale" / "en" / "LC_MESSAGES" / "01-part" / "01-chapter.po"
    po_file.write_text(po_file.read_text(encoding="utf-8").replace(TITLE_EN, title), encoding="utf-8")
    app = Built(src, "rinoh", tmp_path_factory.mktemp("en-title-pdf"))
    assert app.warnings == [], app.warnings
    return app


def test_a_title_that_ends_at_the_right_edge_keeps_its_page_number_apart(english_root, tmp_path_factory):
    """This title, set as chapter 1 under a part, ends a few points short of the right edge: rinohtype would glue
    the page number to it ("…parallelism3", "Tab space exceeded"); the contents keep a page-number column
    (toc-margin, vllm_book.formats.rinoh_toc), so the last word moves down with the leader and the number."""
    app = _pdf_titled(english_root, tmp_path_factory, "Prerequisites: tokens, KV cache, latency metrics and parallelism")
    layout = _text(app.only("*.pdf"), "-layout", "-f", "1", "-l", "3")
    assert "Tab space exceeded" not in app.stdout
    assert re.search(r"^\s*Chapter 1 Prerequisites: tokens, KV cache, latency metrics and\s*$", layout, re.M), layout
    assert re.search(r"^\s*parallelism( \.)+ *3\s*$", layout, re.M), layout


def test_a_chapter_title_that_wraps_in_the_table_of_contents(english_root, tmp_path_factory):
    """A Latin chapter title too long for one table-of-contents line wraps, whole, with its page number: the line
    breaker gives a word back and lays the entry out again, which rinohtype 0.5.6 took for a circular title
    reference and died on ("generator raised StopIteration"; fixed by ``title-guard``,
    vllm_book.formats.rinoh_references)."""
    long_title = "Overall architecture: three process layers and the data flow of one step of the scheduler"
    app = _pdf_titled(english_root, tmp_path_factory, long_title)
    assert "Circular" not in app.stderr
    toc = " ".join(_text(app.only("*.pdf"), "-f", "1", "-l", "3").split())
    entry = re.search(r"Chapter 1 (Overall architecture:.*?scheduler)[ .]*(\d+)", toc)
    assert entry, toc
    assert entry.group(1) == long_title  # the whole title, over two lines, not the reference text
    pages = _text(app.only("*.pdf")).split("\f")
    chapter = [p.split() for p in pages if long_title in " ".join(p.split()) and "Table of Contents" not in p]
    # the heading (bold sans, where Noto joins "fl") copies as "flow", not "ow": ligatures in /ToUnicode
    assert chapter and chapter[0][-1] == entry.group(2), chapter  # and the printed page number leads to it
