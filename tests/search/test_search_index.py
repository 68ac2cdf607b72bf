"""The book search extension on a Sphinx test root (tests/roots/test-search): what the index holds, that parallel
and incremental builds give the same index, that only builders with a search page get it, and that a bad synonym
file is an error that names the file and the fix.  The ranking itself is tested in a browser (tests/reader)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sphinx.testing.util import SphinxTestApp

from vllm_book.search import tokens

ROOTS = Path(__file__).resolve().parents[1] / "roots"


def _copy(tmp_path: Path, name: str = "search") -> Path:
    dest = tmp_path / name
    shutil.copytree(ROOTS / f"test-{name}", dest)
    return dest


def _build(src: Path, builder: str = "html", parallel: int = 0, **conf) -> SphinxTestApp:
    conf = {"vllm_book_cache_dir": str(src / "_cache"), "vllm_book_src_root": str(ROOTS / "fake-vllm"), **conf}
    app = SphinxTestApp(builder, srcdir=src, confoverrides=conf, parallel=parallel)
    try:
        app.build()
    finally:
        app.cleanup()
    return app


def _index(app: SphinxTestApp) -> dict:
    text = (Path(app.outdir) / "_static" / "booksearch-index.js").read_text(encoding="utf-8")
    return json.loads(text[len("BookSearch.setIndex("):text.rindex(")")])


def _postings(index: dict, term: str) -> dict[str, int]:
    flat = index["terms"].get(term, [])
    return {index["docs"][flat[i]][0]: flat[i + 1] for i in range(0, len(flat), 2)}


def test_tokens_of_identifiers_and_chinese():
    tokens.use_dictionary(ROOTS / "test-search" / "jieba-test.txt")
    assert tokens.latin_terms("GPUModelRunner.execute_model") == [
        "gpumodelrunner.execute_model", "gpumodelrunner", "execute_model", "gpu", "model", "runner", "execut", "model"]
    assert tokens.latin_terms("--max-num-seqs") == ["max-num-seqs", "max", "num", "seq"]
    assert tokens.latin_terms("the") == []  # a stop word alone is no term
    assert "前缀缓存" in list(tokens.terms("前缀缓存让请求共享块"))
    assert tokens.normalize("Prefix caching：链式块哈希") == "prefixcaching链式块哈希"


def test_index_holds_titles_sections_symbols_and_code(tmp_path):
    app = _build(_copy(tmp_path))
    assert "WARNING" not in app.warning.getvalue() and "ERROR" not in app.warning.getvalue()
    index = _index(app)
    assert [d[0] for d in index["docs"]] == ["cache", "index", "sched"]
    assert ["t-sched-budget" in s for s in map(str, index["sections"])].count(True) == 1
    assert index["synonyms"] == [["调度器", "scheduler"]]
    # the anchor target is a symbol of the page, even where the link text is Chinese (这里 → Scheduler.__init__)
    assert set(_postings(index, "scheduler.schedule")) == {"sched"}
    assert set(_postings(index, tokens.latin_terms("Scheduler.__init__")[0])) == {"sched"}
    # the title weighs more than prose: 前缀缓存 is in cache's title
    assert _postings(index, "前缀缓存")["cache"] > 10 * 5
    assert "hash_block_tokens" in index["terms"]  # inline code and code blocks are indexed
    html = (Path(app.outdir) / "search.html").read_text(encoding="utf-8")
    assert "_static/booksearch.js" in html and "_static/booksearch-index.js" in html
    assert "booksearch" not in (Path(app.outdir) / "sched.html").read_text(encoding="utf-8")
    script = (Path(app.outdir) / "_static" / "booksearch.js").read_text(encoding="utf-8")
    assert "BookSearchStemmer" in script and "const BookSearch" in script


def test_parallel_and_serial_builds_write_the_same_index(tmp_path):
    serial = _build(_copy(tmp_path / "a"))
    parallel = _build(_copy(tmp_path / "b"), parallel=2)
    assert _index(serial) == _index(parallel)


def test_an_incremental_build_drops_a_removed_page(tmp_path):
    src = _copy(tmp_path)
    _build(src)
    (src / "cache.md").unlink()
    (src / "index.md").write_text("# 测试书\n\n```{toctree}\nsched\n```\n", encoding="utf-8")
    index = _index(_build(src))
    assert [d[0] for d in index["docs"]] == ["index", "sched"]
    assert "前缀缓存" not in index["terms"] or "cache" not in _postings(index, "前缀缓存")


def test_the_epub_gets_no_search_index(tmp_path):
    app = _build(_copy(tmp_path), "epub")
    assert not (Path(app.outdir) / "_static" / "booksearch-index.js").exists()


@pytest.mark.parametrize("text", ['groups = "调度器"', 'groups = [["only-one"]]', "groups = [[", ])
def test_a_bad_synonym_file_is_an_error_with_its_fix(tmp_path, text):
    src = _copy(tmp_path)
    (src / "synonyms.toml").write_text(text, encoding="utf-8")
    app = _build(src)
    warnings = app.warning.getvalue()
    assert "synonyms.toml" in warnings and "ERROR" in warnings and "Fix: groups = [[" in warnings
