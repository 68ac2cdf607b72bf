"""The built HTML book in a real browser: every chapter and a sample of source pages load clean, diagrams and
math render, dark mode holds across pages, the copy button drops prompts and line numbers, {src} links and
backlinks land where they say, nothing scrolls sideways at 390 px, and axe-core finds no serious violation.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from reader_helpers import run_node

pytestmark = pytest.mark.integration
SOURCES_SAMPLED = 100


def _pages(book: Path) -> list[str]:
    """Every page of the book proper (chapters, part pages, front pages), not the source browser."""
    skip = {"genindex.html", "search.html"}
    return sorted(p.relative_to(book).as_posix() for p in book.rglob("*.html")
                  if not p.relative_to(book).as_posix().startswith(("_src/", "_static/")) and p.name not in skip)


def _sources(book: Path) -> list[str]:
    files = sorted(p.relative_to(book).as_posix() for p in (book / "_src").rglob("*.html"))
    step = max(1, len(files) // SOURCES_SAMPLED)
    return files[::step][:SOURCES_SAMPLED + 5]


def _first(book: Path, pages: list[str], pattern: str) -> str:
    rx = re.compile(pattern)
    for p in pages:
        if rx.search((book / p).read_text(encoding="utf-8")):
            return p
    raise AssertionError(f"no page matches {pattern!r}")


@pytest.fixture(scope="module")
def reader(real_book: Path, served_book: str, node_env: dict):
    pages = _pages(real_book)
    sources = _sources(real_book)
    plan = {
        "pages": pages,
        "sources": sources,
        "srcLinkPage": "02-core-concepts/04-prefix-caching.html",
        "copyPage": _first(real_book, pages, r'<span class="gp">\$ </span>'),
        "srcCodePage": _first(real_book, pages, r'<span class="linenos">'),
        "narrow": pages + sources[:: max(1, len(sources) // 10)],
        "axe": ["index.html", "02-core-concepts/04-prefix-caching.html",
                "_src/vllm/v1/core/sched/scheduler.py.html", "search.html?q=调度器"],
    }
    plan_file = real_book.parent / "reader-plan.json"
    plan_file.write_text(json.dumps(plan, ensure_ascii=False))
    out = run_node("reader_check.js", served_book, str(plan_file), env=node_env, timeout=1500)
    (real_book.parent / "reader-report.json").write_text(json.dumps(out, ensure_ascii=False, indent=1))
    return plan, out


def test_pages_load_without_errors_or_failed_requests(reader):
    plan, out = reader
    assert len(plan["pages"]) >= 30 and len(plan["sources"]) >= SOURCES_SAMPLED
    assert out["checks"]["sourcesVisited"] == len(plan["sources"])
    assert out["problems"] == [], "\n".join(out["problems"][:30])


def test_every_diagram_is_an_svg_and_math_renders(reader):
    _, out = reader
    bad = [d for d in out["diagrams"] if not d["ok"] or d["svg"] != d["diagrams"] or d["errors"]
           or d["mathDone"] < d["math"] or d["mathErrors"]]
    assert not bad, bad
    assert sum(d["diagrams"] for d in out["diagrams"]) >= 40
    assert sum(d["math"] for d in out["diagrams"]) > 0


def test_dark_mode_toggle_persists_across_pages(reader):
    dark = reader[1]["checks"]["darkMode"]
    assert dark["afterToggle"] == "dark"
    assert dark["nextPage"][0] == "dark" and dark["nextPage"][1] != "rgb(255, 255, 255)"
    assert dark["sourcePage"] == "dark"  # the source browser reads the same stored choice


def test_copy_button_drops_prompts_and_line_numbers(reader):
    checks = reader[1]["checks"]
    copy = checks["copy"]
    assert copy["block"] and copy["copied"], copy
    assert "$ " in copy["block"] and not re.search(r"^\$ ", copy["copied"], re.M), copy
    lined = checks["copyLined"]
    assert lined["block"] and lined["copied"], lined
    first_code_line = lined["copied"].splitlines()[0]
    assert not re.match(r"^\s*\d+\s", first_code_line) or not lined["block"].startswith(first_code_line), lined


def test_src_link_highlights_and_scrolls_to_its_lines(reader):
    s = reader[1]["checks"]["srcLink"]
    assert "/_src/" in s["url"] and s["hash"].startswith("#L"), s
    assert s["highlighted"] and s["inView"], s


def test_source_symbol_search_finds_scheduler_schedule(reader):
    hits = reader[1]["checks"]["symbolSearch"]
    assert any("Scheduler.schedule" in text and "scheduler.py" in href for text, href in hits), hits


def test_backlinks_land_on_an_element_in_the_browser(reader):
    links = reader[1]["checks"]["backlinks"]
    assert links and all(b["exists"] and b["inView"] for b in links), links


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href") and "#src-" in a["href"]:
            self.hrefs.append(a["href"])


def test_every_backlink_of_the_source_browser_has_its_target(real_book: Path):
    """All 被本书引用 links of all source pages (not a sample): the chapter has the element they name."""
    ids: dict[Path, set[str]] = {}
    missing, count = [], 0
    for page in (real_book / "_src").rglob("*.html"):
        p = _Ids()
        p.feed(page.read_text(encoding="utf-8"))
        for href in p.hrefs:
            count += 1
            target, frag = href.split("#", 1)
            doc = (page.parent / target).resolve()
            if doc not in ids:
                q = _Ids()
                q.feed(doc.read_text(encoding="utf-8") if doc.is_file() else "")
                ids[doc] = q.ids
            if frag not in ids[doc]:
                missing.append(f"{page.relative_to(real_book)} → {href}")
    assert count > 1000
    assert not missing, missing[:20]


def test_nothing_scrolls_sideways_at_390px(reader):
    wide = [n for n in reader[1]["narrow"] if n["scrollWidth"] > n["innerWidth"] + 1]
    assert not wide, wide[:20]


def test_axe_finds_no_critical_or_serious_violation(reader):
    bad = {page: [v for v in found if v["impact"] in ("critical", "serious")] for page, found in reader[1]["axe"].items()}
    bad = {k: v for k, v in bad.items() if v}
    assert len(reader[1]["axe"]) == 4
    assert not bad, json.dumps(bad, ensure_ascii=False, indent=1)
