"""Integration: the real book builds with zero warnings and reads offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REMOTE = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)
REMOTE_IMPORT = re.compile(r"""import\s*\(?\s*["'](?:https?:)?//""")


def test_index_opens_the_book(real_book: Path):
    index = (real_book / "index.html").read_text()
    assert "vLLM 学习手册" in index
    assert "01-overview/00-prerequisites.html" in index


def test_search_finds_the_pilot_for_diaodu(real_book: Path):
    text = (real_book / "searchindex.js").read_text()
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    pilot = index["docnames"].index("01-overview/00-prerequisites")
    # Sphinx files a word under titleterms when it occurs in a heading of that page, else under terms;
    # searchtools.js looks in both (title hits rank higher)
    hits = set()
    for table in ("terms", "titleterms"):
        found = index[table].get("调度", [])
        hits.update(found if isinstance(found, list) else [found])
    assert pilot in hits


def test_no_page_loads_anything_from_the_internet(real_book: Path):
    offenders = []
    for page in real_book.rglob("*.html"):
        text = page.read_text(errors="replace")
        for m in list(REMOTE.finditer(text)) + list(REMOTE_IMPORT.finditer(text)):
            offenders.append(f"{page.relative_to(real_book)}: {m.group(0)}")
    assert not offenders, "\n".join(offenders[:20])
    assert (real_book / "_static" / "mermaid" / "mermaid.esm.min.mjs").is_file()


def test_mermaid_is_served_locally_on_diagram_pages(real_book: Path):
    page = (real_book / "01-overview" / "00-prerequisites.html").read_text()
    assert 'class="mermaid' in page
    assert "_static/mermaid/mermaid.esm.min.mjs" in page
    assert "cdn.jsdelivr" not in page


def test_source_browser_pages_carry_the_impact_reports_word_on_their_file(real_book: Path):
    """Drift at a glance, per file: from the committed impact report, never typed by hand."""
    report = json.loads(next((real_book.parent.parent.parent / "docs").glob("impact-*-to-*.json")).read_text())
    to = report["to"]["version"]
    modified = set(report["files"]["modified"])
    removed = set(report["files"]["removed"])
    assert "vllm/v1/core/sched/scheduler.py" in modified  # the chapters' most cited file changed upstream
    page = (real_book / "_src" / "vllm" / "v1" / "core" / "sched" / "scheduler.py.html").read_text()
    assert f"本文件在 vLLM v{to} 中有改动" in page and "guide/drift.html" in page
    gone = sorted(removed)[0]
    assert "本文件在 vLLM v" in (real_book / "_src" / f"{gone}.html").read_text()
    src = real_book / "_src"
    quiet = next(page for page in sorted((src / "vllm" / "v1" / "core").rglob("*.py.html"))
                 if page.relative_to(src).as_posix()[:-5] not in modified | removed)
    assert "本文件在 vLLM v" not in quiet.read_text()


def test_quoted_impact_figures_equal_the_committed_report(real_book: Path):
    """The upgrades chapter quotes the impact report through {impact}: its numbers are the JSON's, not typed."""
    from vllm_book.sync.drift import report_figures

    report = json.loads(next((real_book.parent.parent.parent / "docs").glob("impact-*-to-*.json")).read_text())
    figures = report_figures(report)
    page = (real_book / "08-production-deployment" / "12-upgrades-rollbacks-and-compatibility.html").read_text()
    shown = re.findall(r'<span class="impact-figure">([^<]+)</span>', page)
    assert len(shown) >= 10
    assert set(shown) <= set(figures.values())
    for key in ("cited", "counts.changed", "anchors_broken", "files.modified"):
        assert f'<span class="impact-figure">{figures[key]}</span>' in page, key
