"""The source browser in real Sphinx builds (tests/roots/test-browser-*)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag

import pytest

from vllm_book import browser
from vllm_book.index import build_index

from browser_helpers import FAKE, copy_root, make_app, warnings_of

SCHED = "vllm/v1/core/sched/scheduler.py"
KV = "vllm/v1/core/kv_cache_utils.py"


@pytest.fixture(scope="module")
def fake_index():
    return build_index(FAKE, ("vllm", "csrc"))


def src_dir(app) -> Path:
    return Path(app.outdir) / "_src"


def page_of(app, path: str) -> str:
    return (src_dir(app) / f"{path}.html").read_text(encoding="utf-8")


class Page(HTMLParser):
    """Tags, ids, links and the exact text of <pre id=code> of one page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.ids: dict[str, int] = {}  # id → (1-based) line of <pre id=code> it is on (0 outside)
        self.hrefs: list[str] = []
        self.code: list[str] | None = None
        self._in_code = 0
        self._done = False
        self.feed(text)
        self.close()

    @property
    def code_text(self) -> str:
        text = "".join(self.code or [])
        assert text.startswith("\n")  # the newline the HTML parser drops after <pre>
        return text[1:]

    def _line(self) -> int:
        return "".join(self.code or []).count("\n") if self._in_code else 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "pre" and a.get("id") == "code":
            self._in_code = 1
            self.code = []
        elif self._in_code and tag == "pre":
            self._in_code += 1
        if "id" in a:
            self.ids[a["id"]] = self._line()
        if "href" in a:
            self.hrefs.append(a["href"])

    def handle_endtag(self, tag):
        if tag == "pre" and self._in_code:
            self._in_code -= 1

    def handle_data(self, data):
        if self._in_code:
            self.code.append(data)


def resolve(page: Path, href: str) -> tuple[Path, str]:
    url, frag = urldefrag(href)
    return (page.parent / unquote(url)).resolve() if url else page, unquote(frag)


# --------------------------------------------------------------------------


def test_clean_build(basic):
    assert warnings_of(basic) == []
    assert "vllm-book browser:" in basic.status.getvalue()


def test_every_file_and_directory_has_a_page(basic, fake_index):
    out = src_dir(basic)
    assert len(fake_index.files) > 20
    for path in fake_index.files:
        assert (out / f"{path}.html").is_file(), path
    for d in fake_index.dirs():
        assert (out / d / "index.html").is_file() if d else (out / "index.html").is_file()
    # a directory page lists its sub-directories and files, with line counts and sizes
    p = Page((out / "vllm/v1/core/index.html").read_text(encoding="utf-8"))
    assert {"sched/index.html", "kv_cache_utils.py.html", "__init__.py.html"} <= set(p.hrefs)
    text = (out / "vllm/v1/core/index.html").read_text(encoding="utf-8")
    lines = fake_index.files[KV].n_lines
    assert f"<td class=r>{lines:,}<td class=r>" in text


def test_landing_page(basic):
    text = (src_dir(basic) / "index.html").read_text(encoding="utf-8")
    from vllm_book.pin import load_pin

    pin = load_pin()
    assert pin.version in text and pin.commit in text
    assert "来源" in text  # provenance
    p = Page(text)
    assert "vllm/index.html" in p.hrefs and "csrc/index.html" in p.hrefs
    # the most cited file comes first, linking to its citations
    most = re.search(r"<ol class=most>(.*?)</ol>", text).group(1)
    assert most.index(SCHED) < most.index(KV)
    assert f"{SCHED}.html#cites" in most


def test_code_is_the_source_exactly(basic, fake_index):
    """Line N of <pre id=code> is line N of the file: that is what #L120 relies on."""
    for path in fake_index.files:
        src = (FAKE / path).read_text(encoding="utf-8").replace("\r\n", "\n")
        p = Page(page_of(basic, path))
        got = p.code_text
        assert got.rstrip("\n") == src.rstrip("\n"), path
        n = int(re.search(r"data-n=(\d+)", page_of(basic, path)).group(1))
        assert n == fake_index.files[path].n_lines, path


def test_line_anchors_are_handled(basic):
    text = page_of(basic, SCHED)
    # the one script (shared, local) resolves #L<n> and #L<a>-L<b>, on load and on hashchange
    js = (src_dir(basic) / "_static/b.js").read_text(encoding="utf-8")
    assert r"/^L(\d+)(?:-L?(\d+))?$/" in js
    assert 'addEventListener("hashchange"' in js
    assert "<body class=file data-base=../../../../ data-n=70>" in text


def test_symbol_ids_at_first_line_with_range(basic, fake_index):
    text = page_of(basic, SCHED)
    p = Page(text)
    syms = {s.qualname: s for s in fake_index.files[SCHED].symbols if s.ordinal == 0}
    for qual in ("Scheduler", "Scheduler.schedule", "Scheduler.Stats.Counter.bump", "Scheduler._cached_policy"):
        # the id sits at the start of the symbol's first line (decorators included), the end in data-e
        assert p.ids[qual] == syms[qual].start, qual
        assert f"<a id={qual} data-e={syms[qual].end}></a>" in text
    assert syms["Scheduler._cached_policy"].start < syms["Scheduler._cached_policy"].def_line  # decorated
    code = p.code_text.split("\n")
    assert code[syms["Scheduler._cached_policy"].start - 1].strip() == "@functools.cache"
    # redefinitions: the preferred one gets the bare name, the others <qualname>~<ordinal>
    assert "Scheduler.get~0" in p.ids and "Scheduler.get~1" in p.ids and "Scheduler.get" in p.ids
    assert p.ids["Scheduler.get"] == 56  # the implementation, not an @overload stub


def test_outline_nested(basic):
    text = page_of(basic, SCHED)
    outline = re.search(r"<nav class=ol>(.*?)</nav>", text).group(1)
    assert "<li class=c><a href=#Scheduler>Scheduler</a><ul>" in outline
    assert "<li class=m><a href=#Scheduler.schedule>schedule</a></li>" in outline
    nested = re.search(r"<a href=#Scheduler.Stats>Stats</a><ul><li class=c><a href=#Scheduler.Stats.Counter>Counter</a>"
                       r"<ul><li class=m><a href=#Scheduler.Stats.Counter.bump>bump</a>", outline)
    assert nested
    assert "max_num_running_reqs" not in outline  # variables are not in the outline


def test_cross_links(basic, fake_index):
    page = src_dir(basic) / f"{SCHED}.html"
    text = page.read_text(encoding="utf-8")
    assert "<a href=../kv_cache_utils.py.html#hash_request_tokens>hash_request_tokens</a>" in text
    assert "<a href=#Scheduler.max_num_running_reqs>max_num_running_reqs</a>" in text  # same file
    assert "<a href=../kv_cache_utils.py.html>vllm.v1.core.kv_cache_utils</a>" in text  # a module
    # every cross-link of every page resolves to an existing page and id (or a line)
    for path, fi in fake_index.files.items():
        page = src_dir(basic) / f"{path}.html"
        p = Page(page.read_text(encoding="utf-8"))
        for tag, a in p.tags:
            href = a.get("href")
            if tag != "a" or not href or href.startswith(("http://", "https://")):
                continue
            target, frag = resolve(page, href)
            assert target.is_file(), (path, href)
            if frag and target.suffix == ".html" and target.parent != Path(basic.outdir) and "_src" in target.parts:
                if not re.fullmatch(r"L\d+(-L\d+)?|cites", frag):
                    assert frag in Page(target.read_text(encoding="utf-8")).ids, (path, href)
    # a ref that spans styled tokens nests properly: <a> outside, spans inside
    assert re.search(r"<a href=#Scheduler.budget><span class=d>budget</span></a>", text)


def test_backlinks_to_the_chapters(basic):
    page = src_dir(basic) / f"{SCHED}.html"
    text = page.read_text(encoding="utf-8")
    cites = re.search(r"<section class=cites id=cites>(.*?)</section>", text).group(1)
    assert "被本书引用" in cites and "第一章 调度" in cites and "第二章 KV 缓存" in cites
    hrefs = re.findall(r'href="?([^ >"]+)', cites)
    chapter_links = [h for h in hrefs if "ch1.html#" in h or "ch2.html#" in h]
    assert chapter_links
    for href in chapter_links:  # the exact place: the anchor id exists in the chapter page
        target, frag = resolve(page, href)
        assert target.is_file()
        assert f'id="{frag}"' in target.read_text(encoding="utf-8"), href
    # the margin marker on Scheduler.schedule's first line: two chapters cite it
    m = re.search(r"<a id=Scheduler.schedule data-e=35></a><a class=cm href=(\S+) title=\"([^\"]+)\" data-n=2></a>", text)
    assert m and "第一章 调度" in m.group(2) and "第二章 KV 缓存" in m.group(2)
    # a line citation gets a marker on that line
    p = Page(text)
    assert "token_budget -=" in p.code_text.split("\n")[30]
    assert re.search(r'<a class=cm href=[^>]*></a>            token_budget -=', text)
    # a cited directory says so too; the C++ symbol page lists its chapter
    d = (src_dir(basic) / "vllm/v1/attention/backends/index.html").read_text(encoding="utf-8")
    assert "被本书引用" in d and "整个目录" in d
    assert "第二章 KV 缓存" in page_of(basic, "csrc/cache_kernels.cu")
    # an uncited file has no section
    assert "被本书引用" not in page_of(basic, "vllm/engine/llm.py")


def test_highlighting_is_compact(basic):
    text = page_of(basic, KV)
    assert "<span class=k>def</span> <span class=f>hash_block_tokens</span>" in text
    assert "<span class=d>@functools</span>" in text
    # names, operators and whitespace are not wrapped; no Pygments long class names
    assert "<span class=n>" not in text.replace("<span class=n>BlockHash", "")
    assert 'class="' not in re.search(r"<pre class=code id=code>(.*)</pre>", text, re.S).group(1)
    cu = page_of(basic, "csrc/cache_kernels.cu")
    assert "<span class=p>#include" in cu and "<span class=k>namespace</span>" in cu


def test_css_light_and_dark(basic):
    css = (src_dir(basic) / "_static/b.css").read_text(encoding="utf-8")
    assert re.search(r"^\.code \.k\{color:#", css, re.M)
    assert re.search(r"^html\[data-theme=dark\] \.code \.k\{color:#", css, re.M)
    assert "@media (prefers-color-scheme: dark)" in css
    assert "html:not([data-theme=light]) .code .k{" in css
    assert "html[data-theme=dark]{--code-bg:" in css


def test_no_external_loads(basic, hostile):
    for app in (basic, hostile):
        for page in browser.iter_pages(app.outdir):
            p = Page(page.read_text(encoding="utf-8"))
            for tag, a in p.tags:
                for attr in ("src", "data", "poster", "srcset") if tag != "a" else ():
                    assert not re.match(r"(https?:)?//", a.get(attr) or ""), (page, tag, a)
                if tag == "link":
                    assert not re.match(r"(https?:)?//", a.get("href", "")), (page, a)
                if tag == "a" and (a.get("href") or "").startswith("http"):
                    assert a["href"].startswith("https://github.com/"), a  # only the GitHub link
            scripts = [a for tag, a in p.tags if tag == "script"]
            assert len(scripts) == 1 and scripts[0]["src"].split("?")[0].endswith("_static/b.js")
        for asset in ("b.css", "b.js"):
            text = (src_dir(app) / "_static" / asset).read_text(encoding="utf-8")
            assert "http://" not in text and "https://" not in text and "@import" not in text


def test_symbol_search_index(basic, fake_index):
    raw = (src_dir(basic) / "_static/symbols.js").read_text(encoding="utf-8")
    assert raw.startswith("__vbSym(") and raw.rstrip().endswith(");")
    data = json.loads(raw.strip()[len("__vbSym("):-2])
    assert data["f"] == sorted(fake_index.files)
    found = {}
    for path, row in zip(data["f"], data["s"]):
        prev: list[str] = []
        for e in row:
            parts = prev[: int(e[1], 36)] + e[2:].split(".")
            prev = parts
            found[(path, ".".join(parts))] = e[0]
    assert found[(SCHED, "Scheduler.schedule")] == "m"
    assert found[(KV, "hash_block_tokens")] == "f"
    assert found[(SCHED, "Scheduler.max_num_running_reqs")] == "v"
    expected = {(s.path, s.qualname) for s in fake_index.all_symbols()}
    assert set(found) == expected  # every indexed symbol, once
    ids = Page(page_of(basic, SCHED)).ids
    assert all(q in ids for p, q in found if p == SCHED)


def test_hostile_source_is_escaped(hostile):
    tree = Path(hostile.srcdir) / "tree"
    for path in ("vllm/evil.py", "vllm/evil.json", "csrc/evil.cu", "vllm/odd #1 & 50%.py"):
        text = page_of(hostile, path)
        p = Page(text)
        # the text round-trips exactly: nothing was interpreted as markup
        assert p.code_text == (tree / path).read_text(encoding="utf-8"), path
        tags = {t for t, _ in p.tags}
        assert tags <= {"html", "meta", "title", "link", "script", "body", "header", "a", "nav", "b", "div",
                        "aside", "h2", "ul", "li", "main", "span", "section", "small", "code", "pre"}, tags
        assert sum(1 for t, _ in p.tags if t == "script") == 1
        assert "<!--" not in text and "]]>" not in text and "</script><script>" not in text
    text = page_of(hostile, "vllm/evil.py")
    assert "&lt;/script&gt;&lt;script&gt;alert(" in text
    assert "&amp;&amp; b &amp; c &amp;lt; &amp;#60; &amp;" in text
    assert warnings_of(hostile) == []


def test_odd_file_names_are_linked(hostile):
    out = src_dir(hostile)
    odd = "vllm/odd #1 & 50%.py"
    assert (out / f"{odd}.html").is_file()
    listing = out / "vllm/index.html"
    hrefs = Page(listing.read_text(encoding="utf-8")).hrefs
    assert "odd%20%231%20&amp;%2050%25.py.html" not in hrefs  # parsed, not raw
    assert any(resolve(listing, h)[0] == (out / f"{odd}.html").resolve() for h in hrefs)
    assert any(h.startswith("odd%20%231") for h in hrefs)
    # the cross-link from the odd file to evil.py works
    page = out / f"{odd}.html"
    p = Page(page.read_text(encoding="utf-8"))
    assert any(resolve(page, h) == ((out / "vllm/evil.py.html").resolve(), "Evil") for h in p.hrefs)


def test_incremental_cache(tmp_path_factory):
    """Second build: nothing rendered or written; a chapter edit re-renders only the pages it cites."""
    src = copy_root(tmp_path_factory, "browser-basic")
    make_app(src, src_root=FAKE)
    first = dict(browser.LAST_STATS)
    assert first["rendered"] == first["files"] > 20 and first.get("unchanged", 0) == 0
    out = src / "_build" / "html" / "_src"
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}

    app = make_app(src, src_root=FAKE)  # no-op rebuild
    stats = dict(browser.LAST_STATS)
    assert stats.get("rendered", 0) == 0 and stats.get("aux_written", 0) == 0 and stats.get("lexed", 0) == 0
    assert stats["unchanged"] == first["files"]
    assert "rendered 0 pages (lexed 0)" in app.status.getvalue()
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == mtimes

    # cite one more symbol (in another file) from ch2
    ch2 = src / "ch2.md"
    ch2.write_text(ch2.read_text(encoding="utf-8") + "\n引擎：{src}`vllm/engine/llm.py::LLM`。\n", encoding="utf-8")
    make_app(src, src_root=FAKE)
    stats = dict(browser.LAST_STATS)
    assert stats["rendered"] == 1 and stats["lexed"] == 0  # llm.py only; highlighting came from the cache
    assert "被本书引用" in (out / "vllm/engine/llm.py.html").read_text(encoding="utf-8")
    changed = {p for p in mtimes if p.stat().st_mtime_ns != mtimes[p]}
    assert (out / "vllm/engine/llm.py.html") in changed
    assert (out / f"{SCHED}.html") not in changed  # still cited by ch2 the same way
    assert changed <= {out / "vllm/engine/llm.py.html", out / "index.html", out / "vllm/index.html",
                       out / "vllm/engine/index.html"}

    # the output of a page was deleted: it is rendered again (from the highlight cache)
    (out / f"{KV}.html").unlink()
    make_app(src, src_root=FAKE)
    stats = dict(browser.LAST_STATS)
    assert stats["rendered"] == 1 and stats["lexed"] == 0 and (out / f"{KV}.html").is_file()


def test_removed_source_file_loses_its_page(tmp_path_factory):
    src = copy_root(tmp_path_factory, "browser-hostile")
    make_app(src)
    out = src / "_build" / "html" / "_src"
    assert (out / "vllm/evil.json.html").is_file()
    (src / "tree/vllm/evil.json").unlink()
    make_app(src)
    assert not (out / "vllm/evil.json.html").exists()
    assert "evil.json" not in (out / "vllm/index.html").read_text(encoding="utf-8")
    assert browser.LAST_STATS["removed"] == 1


def test_worker_and_in_process_render_the_same(tmp_path_factory, basic):
    """The background worker (default; with jobs=2 its process pool) and jobs=1 (in-process,
    at build-finished) write byte-identical pages."""
    assert browser.LAST_STATS  # (set by whichever build ran last)
    pages = (SCHED, KV, "csrc/cache_kernels.cu", "vllm/model_executor/configs/E=8,N=128.json", "vllm/index.html")
    for jobs, mode in ((2, "worker"), (1, "in-process")):
        src = copy_root(tmp_path_factory, "browser-basic")
        app = make_app(src, src_root=FAKE, vllm_book_browser_jobs=jobs)
        stats = dict(browser.LAST_STATS)
        assert stats["mode"] == mode and stats["rendered"] == stats["files"], stats
        assert ("waited" in stats) == (mode == "worker")
        assert warnings_of(app) == []
        for path in pages:
            name = path if path.endswith("index.html") else f"{path}.html"
            assert (src / "_build/html/_src" / name).read_bytes() == (src_dir(basic) / name).read_bytes(), (mode, path)


def test_dirhtml_links(tmp_path_factory):
    src = copy_root(tmp_path_factory, "browser-basic")
    app = make_app(src, "dirhtml", src_root=FAKE)
    text = page_of(app, SCHED)
    assert re.search(r'href="?\.\./\.\./\.\./\.\./\.\./ch1/#src-\d', text)
    assert "class=home href=../../../../../>" in text


@pytest.mark.parametrize("builder", ["text", "epub"])
def test_not_for_other_builders(tmp_path_factory, builder):
    src = copy_root(tmp_path_factory, "browser-basic")
    app = make_app(src, builder, src_root=FAKE)
    assert not (Path(app.outdir) / "_src").exists()


def test_disabled_by_config(tmp_path_factory):
    src = copy_root(tmp_path_factory, "browser-basic")
    app = make_app(src, src_root=FAKE, vllm_book_browser=False)
    assert not (Path(app.outdir) / "_src").exists()


def test_prefix_config(tmp_path_factory):
    src = copy_root(tmp_path_factory, "browser-basic")
    app = make_app(src, src_root=FAKE, vllm_book_browser_prefix="code")
    assert (Path(app.outdir) / "code" / f"{SCHED}.html").is_file()
    text = (Path(app.outdir) / "ch1.html").read_text(encoding="utf-8")
    assert f"code/{SCHED}.html" in text  # the anchors link into the same prefix


# --------------------------------------------------------------------------
# the formatter on its own


def test_render_line_merges_refs_into_runs():
    from vllm_book.browser.highlight import render_line

    runs = ("k", "from", "", " a.b ", "k", "import", "", " c")
    # a ref over two runs' parts, one over the middle of an unstyled run
    assert render_line(runs, [(5, 8, "x.html"), (16, 17, "#c")]) == (
        "<span class=k>from</span> <a href=x.html>a.b</a> <span class=k>import</span> <a href=#c>c</a>"
    )
    # a ref that cuts a styled run in two
    assert render_line(("s", '"<ab>"'), [(1, 5, "#t")]) == (
        '<span class=s>"</span><a href=#t><span class=s>&lt;ab&gt;</span></a><span class=s>"</span>'
    )
    # overlapping or out-of-range refs never break the nesting
    out = render_line(("", "abcdef"), [(0, 4, "#1"), (2, 5, "#2"), (5, 99, "#3")])
    assert out == "<a href=#1>abcd</a>e<a href=#3>f</a>"


def test_lex_keeps_lines_and_columns():
    from vllm_book.browser.highlight import lex

    text = "\n\nx = 1\r\n\ty = '''a\nb'''\n"
    lines = lex(text, "python")
    assert len(lines) == 5  # leading blank lines are kept (Pygments' stripnl is off)
    joined = ["".join(r[1::2]) for r in lines]
    assert joined == ["", "", "x = 1", "\ty = '''a", "b'''"]
    assert lex("", "python") == [] and lex("a\n\nb", "text") == [("", "a"), (), ("", "b")]
    assert lex("\ufeffx = 1\n", "python")[0][:2] == ("", "\ufeff")  # BOM kept: columns match the index


def test_attr_quoting():
    from vllm_book.browser.highlight import attr

    assert attr("../a.py.html#Foo.bar") == "../a.py.html#Foo.bar"
    assert attr('x" onmouseover="y') == '"x&quot; onmouseover=&quot;y"'
    assert attr("a b&c<d>") == '"a b&amp;c&lt;d&gt;"'
    assert attr("50%") == '"50%"'


def test_prelex_warms_the_cache(tmp_path, fake_index):
    """The background highlighter (prelex.py) fills the cache the pages are then rendered from."""
    from vllm_book.browser import prelex
    from vllm_book.browser.highlight import cache_file, lexer_name

    cache = tmp_path / "hl"
    first = prelex.run(FAKE, ["vllm", "csrc"], cache, jobs=2)
    code_files = {(f.sha256, lexer_name(p, f.lang)) for p, f in fake_index.files.items() if f.lang != "text"}
    assert first["lexed"] == first["files"] == len(code_files)
    assert all(cache_file(cache, sha, lx).is_file() for sha, lx in code_files)
    assert prelex.run(FAKE, ["vllm", "csrc"], cache, jobs=2)["files"] == 0  # nothing left to do
    build = browser.BrowserBuild(fake_index, tmp_path / "out", cache_dir=cache, jobs=1)
    stats = build.run()
    assert stats["rendered"] == len(fake_index.files) and stats.get("lexed", 0) == 0


def test_cache_pruning(tmp_path, fake_index):
    """Runs of another highlighter version go at once; runs of content the tree lost, after a week."""
    import os
    import time

    from vllm_book.browser.highlight import HL_VERSION

    cache = tmp_path / "hl"
    (cache / "ab").mkdir(parents=True)
    stale_version = cache / "ab" / f"{'ab' * 32}.python.v{HL_VERSION - 1}"
    old_content = cache / "ab" / f"{'ab' * 31}cd.python.v{HL_VERSION}"
    fresh_content = cache / "ab" / f"{'ab' * 31}ef.python.v{HL_VERSION}"
    for f in (stale_version, old_content, fresh_content):
        f.write_bytes(b"x")
    week_ago = time.time() - 8 * 86400
    os.utime(old_content, (week_ago, week_ago))
    stats = browser.BrowserBuild(fake_index, tmp_path / "out", cache_dir=cache, jobs=1).run()
    assert stats["cache_pruned"] == 2
    assert fresh_content.exists() and not old_content.exists() and not stale_version.exists()
    assert stats["lexed"] > 0 and len(list(cache.rglob(f"*.v{HL_VERSION}"))) == stats["lexed"] + 1


def test_file_pages_say_what_the_newest_impact_report_found(tmp_path, fake_index):
    """A changed, removed or renamed file says so on its page, linked to the drift page; the others say nothing,
    and a changed report re-renders only the pages it concerns."""
    paths = sorted(p for p in fake_index.files if p.endswith(".py"))
    changed, removed, renamed, quiet = paths[:4]
    drift = {"to": "9.9.9", "page": "guide/drift",
             "files": {changed: ("changed", ""), removed: ("removed", ""), renamed: ("renamed", "vllm/new_home.py")}}
    out = tmp_path / "out"
    build = browser.BrowserBuild(fake_index, out, cache_dir=tmp_path / "hl", jobs=1, drift=drift,
                                 state_file=tmp_path / "state.json")
    build.run()

    def note(path: str) -> str:
        html = (out / "_src" / f"{path}.html").read_text(encoding="utf-8")
        m = re.search(r'<p class="drift[^"]*" role=note>.*?</p>', html)
        return m.group(0) if m else ""

    assert "本文件在 vLLM v9.9.9 中有改动" in note(changed) and 'class="drift drift-changed"' in note(changed)
    assert "本文件在 vLLM v9.9.9 中已删除" in note(removed)
    assert "本文件在 vLLM v9.9.9 中改名为 <code>vllm/new_home.py</code>" in note(renamed)
    depth = "../" * (changed.count("/") + 1)
    assert f'href={depth}guide/drift.html>版本漂移报告</a>' in note(changed)
    assert note(quiet) == ""
    # the same report again: nothing to render; one entry more: only that page
    again = browser.BrowserBuild(fake_index, out, cache_dir=tmp_path / "hl", jobs=1, drift=drift,
                                 state_file=tmp_path / "state.json").run()
    assert again.get("rendered", 0) == 0 and again["unchanged"] == len(fake_index.files)
    drift["files"][quiet] = ("changed", "")
    third = browser.BrowserBuild(fake_index, out, cache_dir=tmp_path / "hl", jobs=1, drift=drift,
                                 state_file=tmp_path / "state.json").run()
    assert third.get("rendered", 0) == 1 and "有改动" in note(quiet)
