"""The src domain in real Sphinx builds of tests/roots/test-src-anchors (no warnings expected)."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from vllm_book.anchors import citations_for_file, get_citations, get_index

KV = "vllm/v1/core/kv_cache_utils.py"
SCHED = "vllm/v1/core/sched/scheduler.py"


@pytest.fixture(scope="module")
def html(src_build):
    return src_build("src-anchors", "html")


def soup(app, page):
    return BeautifulSoup((app.outdir / page).read_text(encoding="utf-8"), "html.parser")


def links(app, page):
    return {a["id"]: a for a in soup(app, page).select("div.body a.src-ref[id]")}


def test_clean_build(html, warnings_of):
    assert warnings_of(html) == []


def test_symbol_file_dir_and_line_links(html):
    a = links(html, "forms.html")
    assert a["src-1"]["href"] == f"_src/{KV}.html#L14-L19"
    assert a["src-1"]["title"] == f"{KV}:14-19"
    assert a["src-1"].get_text() == "hash_block_tokens" and a["src-1"].code is not None
    assert a["src-2"].get_text() == "块哈希" and a["src-2"]["href"] == a["src-1"]["href"]
    assert a["src-2"].code is None  # Chinese link text is prose: body font, not code (the readability lint)
    assert (a["src-3"].get_text(), a["src-3"]["href"]) == ("Scheduler.schedule", f"_src/{SCHED}.html#L24-L35")
    assert (a["src-4"].get_text(), a["src-4"]["href"]) == (SCHED, f"_src/{SCHED}.html")
    assert a["src-5"]["href"] == "_src/vllm/v1/attention/backends/index.html"
    assert a["src-5"].get_text() == "vllm/v1/attention/backends/"
    assert a["src-6"]["href"].endswith("#L63-L64")  # nested class method
    assert (a["src-7"].get_text(), a["src-7"]["href"]) == ("token_budget -=", f"_src/{SCHED}.html#L31")
    assert a["src-8"]["href"] == "_src/vllm/_custom_ops.py.html#L11"  # a file-level line
    assert a["src-9"]["href"].endswith("#L42-L48")  # property: getter..setter
    assert a["src-10"]["href"].endswith("#L56-L57")  # overloads → implementation
    assert a["src-11"]["href"].endswith("#L53-L54")  # #1 = second overload
    assert a["src-12"]["href"] == "_src/vllm/utils/conditional.py.html#L12-L13"
    assert a["src-13"]["href"].endswith("#L19")  # instance attribute
    assert a["src-14"]["href"].endswith("#L37-L40")  # decorators included
    assert "src-symbol" in a["src-1"]["class"] and "src-dir" in a["src-5"]["class"]


def test_cpp_links(html):
    a = links(html, "cpp.html")
    assert a["src-1"]["href"] == "_src/csrc/cache_kernels.cu.html#L7-L19"  # template header included
    assert a["src-2"]["href"] == a["src-1"]["href"]  # bare name
    assert a["src-3"]["href"].endswith("#L29-L35")
    assert a["src-5"]["href"].endswith("#L39")  # helper#1
    assert a["src-6"]["href"] == "_src/csrc/cache.h.html#L10"


def code_text(block):
    pre = block.select_one("pre")
    for n in pre.select("span.linenos"):
        n.decompose()
    return pre.get_text()


def test_excerpts(html):
    page = soup(html, "excerpt.html")
    blocks = page.select("div.src-excerpt")
    assert [b["id"] for b in blocks] == ["src-1", "src-2", "src-3"]
    first, focused, plain = blocks
    cap = first.select_one(".code-block-caption a.src-ref")
    assert cap.get_text() == f"{SCHED}:24-35" and cap["href"] == f"_src/{SCHED}.html#L24-L35"
    nums = [s.get_text().strip() for s in first.select("span.linenos")]
    assert nums[0] == "24" and nums[-1] == "35"
    assert len(first.select("span.hll")) == 2  # token_budget -= ; scheduled.append
    assert code_text(first).startswith("def schedule(")  # dedented
    # :focus: + :max-lines: + :caption:
    cap = focused.select_one(".code-block-caption a.src-ref")
    assert cap.get_text() == "调度循环" and cap["href"].endswith("#L27-L29")
    assert [s.get_text().strip() for s in focused.select("span.linenos")] == ["27", "28", "29"]
    more = page.select("p.src-excerpt-more a.src-ref")
    assert len(more) == 1 and more[0].get_text() == "完整源码 →" and more[0]["href"].endswith("#L24-L35")
    # :no-linenos:, decorators in the excerpt
    assert not plain.select("span.linenos")
    assert code_text(plain).startswith("@functools.lru_cache")


def test_heading_with_anchor_keeps_its_title(html):
    assert html.env.titles["forms"].astext() == "锚点形式"
    assert "LLM" in soup(html, "forms.html").select_one("h2").get_text()


def test_citations(html):
    cites = get_citations(html.env)
    hb = cites[(KV, "hash_block_tokens")]
    assert [(c.docname, c.node_id) for c in hb] == [
        ("excerpt", "src-3"), ("forms", "src-1"), ("forms", "src-2"), ("more1", "src-1"), ("more2", "src-1"), ("more3", "src-1"),
    ]
    forms = [c for c in hb if c.docname == "forms"][0]
    assert (forms.title, forms.lineno, forms.kind, forms.start, forms.end, forms.excerpt) == ("锚点形式", 3, "symbol", 14, 19, False)
    assert [c for c in hb if c.docname == "excerpt"][0].excerpt
    # a file, a directory, a line (filed under its enclosing symbol), C++
    assert cites[(SCHED, "")][0].kind == "file"
    assert cites[("vllm/v1/attention/backends/", "")][0].kind == "dir"
    line = [c for c in cites[(SCHED, "Scheduler.schedule")] if c.kind == "line"]
    assert [(c.start, c.end) for c in line] == [(31, 31)]
    # the focused excerpt cites the shown lines
    assert (27, 29) in [(c.start, c.end) for c in cites[(SCHED, "Scheduler.schedule")]]
    assert cites[("csrc/cache_kernels.cu", "vllm.reshape_and_cache_kernel")]
    # ids in the citations exist in the pages
    for c in hb:
        assert soup(html, f"{c.docname}.html").find(id=c.node_id) is not None
    assert {c.docname for c in citations_for_file(html.env, SCHED)} == {"forms", "excerpt"}


def test_parallel_build_merges_citations(html, src_build, warnings_of):
    par = src_build("src-anchors", "html", parallel=2)
    assert warnings_of(par) == []
    assert get_citations(par.env) == get_citations(html.env)
    assert (par.outdir / "forms.html").read_text(encoding="utf-8").count('class="src-ref') == (
        html.outdir / "forms.html"
    ).read_text(encoding="utf-8").count('class="src-ref')


def test_index_not_in_env(html):
    import pickle

    data = pickle.dumps(html.env)
    assert len(data) < 200_000
    assert get_index(html).files  # built at builder-inited, held by the app


@pytest.mark.parametrize("builder", ["text", "epub", "latex"])
def test_other_builders(src_build, warnings_of, builder):
    app = src_build("src-anchors", builder)
    assert [w for w in warnings_of(app) if "vllm_book" in w] == []
    if builder == "text":
        text = (app.outdir / "forms.txt").read_text(encoding="utf-8")
        assert "显式文本：块哈希 (vllm/v1/core/kv_cache_utils.py:14–19)" in text  # prose, not a quoted literal
        assert '"hash_block_tokens" (vllm/v1/core/kv_cache_utils.py:14–19)' in text
        assert "def schedule(self)" in (app.outdir / "excerpt.txt").read_text(encoding="utf-8")
    if builder == "epub":
        x = (app.outdir / "forms.xhtml").read_text(encoding="utf-8")
        base = app.config.vllm_book_online_base.rstrip("/")
        assert f'href="{base}/_src/{KV}.html#L14-L19"' in x
        assert not re.search(r'href="(\.\./)*_src/', x)  # no relative browser links in EPUB


def test_dirhtml_relative_links(src_build):
    app = src_build("src-anchors", "dirhtml")
    a = BeautifulSoup((app.outdir / "forms" / "index.html").read_text(encoding="utf-8"), "html.parser").find(id="src-1")
    assert a["href"] == f"../_src/{KV}.html#L14-L19"


def test_browser_disabled_links_online(src_build):
    app = src_build("src-anchors", "html", vllm_book_browser=False)
    a = links(app, "forms.html")["src-1"]
    assert a["href"].startswith("https://") and a["href"].endswith(f"_src/{KV}.html#L14-L19")


def test_edited_source_rereads_citing_documents(tmp_path, fake_root):
    import os
    import shutil

    from sphinx.testing.util import SphinxTestApp

    tree = tmp_path / "tree"
    shutil.copytree(fake_root, tree)
    src = tmp_path / "book"
    shutil.copytree(fake_root.parent / "test-src-anchors", src)
    conf = {"vllm_book_src_root": str(tree)}
    app = SphinxTestApp("html", srcdir=src, confoverrides=conf)
    app.build()
    assert links(app, "more1.html")["src-1"]["href"].endswith("#L14-L19")
    app.cleanup()
    kv = tree / KV
    kv.write_text('"""Moved down by two lines."""\n\n' + kv.read_text(encoding="utf-8"), encoding="utf-8")
    st = kv.stat()
    os.utime(kv, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    app = SphinxTestApp("html", srcdir=src, confoverrides=conf)
    try:
        app.build()
        assert links(app, "more1.html")["src-1"]["href"].endswith("#L16-L21")
        assert links(app, "forms.html")["src-1"]["href"].endswith("#L16-L21")
        cites = get_citations(app.env)[(KV, "hash_block_tokens")]
        assert {(c.start, c.end) for c in cites} == {(16, 21)}
    finally:
        app.cleanup()
