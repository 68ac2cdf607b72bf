"""The two editions side by side in headless chromium: the translation banner of an incomplete English page,
its link to the Chinese original, the language switch both ways (the same page in the other language), and
the generated translation status page, whose figures equal what the English build actually translated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from reader_helpers import run_node, serve

pytestmark = pytest.mark.integration
DOC = "04-optimizations/01-quantization"  # a chapter with no English catalog yet (Parts 4-9)
DOC_FULL = "01-overview/01-what-is-vllm"  # a chapter translated in full


def _translated_nodes(english_book: Path, doc: str) -> tuple[int, int]:
    """(translated, total) of *doc* as Sphinx's Locale transform marked them (node['translated']) in the build."""
    import pickle

    doctree = english_book.parent / "doctrees" / f"{doc}.doctree"
    tree = pickle.loads(doctree.read_bytes())
    marked = [n for n in tree.findall() if hasattr(n, "get") and "translated" in getattr(n, "attributes", {})]
    return sum(bool(n["translated"]) for n in marked), len(marked)


@pytest.fixture(scope="module")
def editions(tmp_path_factory, real_book: Path, english_book: Path, node_env):
    root = tmp_path_factory.mktemp("editions")
    (root / "en").mkdir()
    (root / "html").symlink_to(real_book, target_is_directory=True)
    (root / "en" / "html").symlink_to(english_book, target_is_directory=True)
    base, server = serve(root)
    try:
        yield run_node("editions_check.js", base, DOC, env=node_env)
    finally:
        server.shutdown()


def test_banner_on_an_incomplete_english_page(editions):
    out = editions
    assert out["failed"] == [], out["failed"]
    assert out["english"]["lang"] == "en"
    banner = out["banner"]
    assert banner and banner["afterTitle"], banner
    m = re.search(r"(\d+) % of this page \((\d+) of (\d+) passages\) is in English", banner["text"])
    assert m, banner["text"]
    pct, done, total = map(int, m.groups())
    assert total > 50 and done == 0 and pct == 0
    assert "Read the Chinese original" in banner["text"]


def test_banner_link_and_switch_reach_the_same_page(editions):
    out = editions
    assert out["original"]["path"].endswith(f"/html/{DOC}.html") and "/en/" not in out["original"]["path"]
    assert out["original"]["lang"] == "zh-CN"
    assert out["switchEn"] == {"label": "中文", "hreflang": "zh-CN", "visible": True}
    assert out["alternate"] == "zh-CN"
    assert out["chinese"]["path"] == out["original"]["path"]
    assert out["switchZh"] == {"label": "English", "hreflang": "en", "visible": True}
    assert out["bannerOnChinese"] is False
    assert out["back"]["path"].endswith(f"/en/html/{DOC}.html") and out["back"]["lang"] == "en"


def test_status_page_figures_match_the_build(editions, english_book: Path):
    rows = editions["status"]
    assert rows, "no table.translation-status on the status page"
    by_href = {r["href"].split("#")[0]: r["cells"] for r in rows if r["href"]}

    def row(doc: str) -> list[str]:
        return next(v for k, v in by_href.items() if k.endswith(f"{doc.split('/')[-1]}.html"))

    full = row(DOC_FULL)
    total, done = int(full[1]), int(full[2])
    # the page's own count equals what Sphinx's Locale transform translated in the same build
    assert (done, total) == _translated_nodes(english_book, DOC_FULL) and done == total and full[3] == "100 %"
    part = row(DOC)
    assert int(part[1]) > 50 and int(part[2]) == 0 and part[3] == "0 %"
    assert rows[-1]["cells"][0] == "All pages"
    groups = [i for i, r in enumerate(rows[:-1]) if r["group"]]
    assert len(groups) == 9  # the nine parts, each with its subtotal
    front = rows[:groups[0]]  # index and the guide pages come first
    assert front and not any(r["group"] for r in front)
    grand = int(rows[-1]["cells"][1])
    assert grand == sum(int(rows[i]["cells"][1]) for i in groups) + sum(int(r["cells"][1]) for r in front)
