"""Fail-closed: unresolved/ambiguous anchors and unmanaged source lines (tests/roots/test-src-errors)."""

from __future__ import annotations

import shutil

import pytest
from bs4 import BeautifulSoup
from sphinx.errors import SphinxWarning

KV = "vllm/v1/core/kv_cache_utils.py"


@pytest.fixture(scope="module")
def app(src_build):
    return src_build("src-errors", "html")


def warning_at(warnings, where):
    hits = [w for w in warnings if where in w]
    assert len(hits) == 1, (where, warnings)
    return hits[0]


def test_missing_symbol_with_did_you_mean(app, warnings_of):
    w = warning_at(warnings_of(app), "errors.md:3:")
    assert f"unresolved source anchor '{KV}::hash_block_token'" in w
    assert f"did you mean: {KV}::hash_block_tokens" in w
    assert w.endswith("[vllm_book.anchor]")


def test_moved_symbol_suggests_its_new_file(app, warnings_of):
    w = warning_at(warnings_of(app), "errors.md:5:")
    assert f"did you mean: {KV}::hash_block_tokens" in w


def test_missing_file_and_dir_without_slash(app, warnings_of):
    ws = warnings_of(app)
    assert f"no file vllm/v1/core/kv_cache_util.py in the source tree; did you mean: {KV}" in warning_at(ws, "errors.md:7:")
    assert "vllm/v1/core is a directory: write it with a trailing slash (vllm/v1/core/)" in warning_at(ws, "errors.md:15:")


def test_ambiguity_lists_definitions(app, warnings_of):
    ws = warnings_of(app)
    w = warning_at(ws, "errors.md:9:")
    assert "vllm/utils/conditional.py::pick_backend is ambiguous: 2 definitions (#0 line 7; #1 line 12); add #N" in w
    assert "vllm/utils/conditional.py::pick_backend#1" in w
    assert "csrc/cache_kernels.cu::helper is ambiguous: 2 definitions (#0 line 37; #1 line 39)" in warning_at(ws, "errors.md:11:")
    assert "has no definition #5 (there are 2: #0 line 7; #1 line 12)" in warning_at(ws, "errors.md:13:")


def test_line_anchor_errors(app, warnings_of):
    ws = warnings_of(app)
    assert 'no line of vllm/v1/core/sched/scheduler.py::Scheduler.schedule (lines 24-35) contains "no such text"' in warning_at(ws, "errors.md:17:")
    assert '"token_budget" matches 3 lines of vllm/v1/core/sched/scheduler.py::Scheduler.schedule (lines 24-35) (lines 25, 28, 31)' in warning_at(
        ws, "errors.md:19:"
    )


def test_excerpt_errors(app, warnings_of):
    ws = warnings_of(app)
    assert "unresolved source excerpt 'vllm/v1/core/sched/scheduler.py::Scheduler.scheduled'" in warning_at(ws, "errors.md:21:")
    assert ':emphasize: "not in there" matches no shown line' in warning_at(ws, "errors.md:25:")  # the option line


def test_unresolved_renders_visibly_without_link(app):
    page = BeautifulSoup((app.outdir / "errors.html").read_text(encoding="utf-8"), "html.parser")
    bad = page.select("span.src-ref.unresolved")
    assert len(bad) == 9
    assert all(b.find_parent("a") is None and b.find("a") is None for b in bad)
    (excerpt,) = page.select("p.src-excerpt.unresolved")
    assert excerpt.get_text() == "vllm/v1/core/sched/scheduler.py::Scheduler.scheduled" and excerpt.find("a") is None
    assert bad[0].get_text() == f"{KV}::hash_block_token"


def test_unmanaged_source_lines(app, warnings_of):
    ws = [w for w in warnings_of(app) if "[vllm_book.unmanaged]" in w]
    assert [w.split(": WARNING")[0].rsplit("/", 1)[-1] for w in ws] == ["unmanaged.md:3", "unmanaged.md:5", "unmanaged.md:8"]
    assert 'unmanaged source line "scheduler.py:123": use {src}`path::Symbol`' in ws[0]
    assert '"vllm/v1/core/kv_cache_utils.py:45"' in ws[1]  # inline literal
    assert '"csrc/cache_kernels.cu:45"' in ws[2]  # code block
    # no-src-check on a code-block and on a container opts out; 12:30 is not a source line


def test_warning_is_error(tmp_path, fake_root):
    from sphinx.testing.util import SphinxTestApp

    src = tmp_path / "src"
    shutil.copytree(fake_root.parent / "test-src-errors", src)
    conf = {"vllm_book_src_root": str(fake_root)}
    app = SphinxTestApp("html", srcdir=src, confoverrides=conf, warningiserror=True)  # sphinx-build -W
    try:
        app.build()
        assert app.statuscode == 1
    finally:
        app.cleanup()
    shutil.rmtree(src / "_build")
    app = SphinxTestApp("html", srcdir=src, confoverrides=conf, exception_on_warning=True)  # sphinx-build -W --fail-fast
    try:
        with pytest.raises(SphinxWarning, match="unresolved source anchor|unmanaged source line"):
            app.build()
    finally:
        app.cleanup()


def test_suppressible_by_subtype(tmp_path, fake_root, warnings_of):
    from sphinx.testing.util import SphinxTestApp

    src = tmp_path / "src"
    shutil.copytree(fake_root.parent / "test-src-errors", src)
    conf = {"vllm_book_src_root": str(fake_root), "suppress_warnings": ["vllm_book.unmanaged"]}
    app = SphinxTestApp("html", srcdir=src, confoverrides=conf)
    try:
        app.build()
        ws = warnings_of(app)
        assert ws and not [w for w in ws if "unmanaged" in w]
    finally:
        app.cleanup()


def test_incremental_build_repeats_the_warnings(tmp_path, fake_root, warnings_of):
    from sphinx.testing.util import SphinxTestApp

    src = tmp_path / "src"
    shutil.copytree(fake_root.parent / "test-src-errors", src)
    conf = {"vllm_book_src_root": str(fake_root)}
    first = SphinxTestApp("html", srcdir=src, confoverrides=conf)
    first.build()
    n = len([w for w in warnings_of(first) if "vllm_book" in w])
    first.cleanup()
    second = SphinxTestApp("html", srcdir=src, confoverrides=conf)  # nothing changed
    try:
        second.build()
        assert len([w for w in warnings_of(second) if "vllm_book" in w]) == n > 10
    finally:
        second.cleanup()
