"""The {landmarks} directive on a Sphinx test root over the fake tree: rows with resolved anchors and chapter
links; a bad record, an unknown chapter or a landmark the tree no longer has fails with its file, line and fix."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from sphinx.testing.util import SphinxTestApp

ROOTS = Path(__file__).resolve().parents[1] / "roots"


def _build(tmp_path: Path, landmarks: str | None = None) -> tuple[SphinxTestApp, str]:
    src = tmp_path / "landmarks"
    shutil.copytree(ROOTS / "test-landmarks", src)
    if landmarks is not None:
        (src / "landmarks.toml").write_text(landmarks, encoding="utf-8")
    app = SphinxTestApp("html", srcdir=src, confoverrides={
        "vllm_book_cache_dir": str(src / "_cache"), "vllm_book_src_root": str(ROOTS / "fake-vllm")})
    try:
        app.build()
    finally:
        app.cleanup()
    return app, re.sub(r"\x1b\[[0-9;]*m", "", app.warning.getvalue())


def test_rows_link_the_source_and_the_chapter(tmp_path):
    app, warnings = _build(tmp_path)
    assert "WARNING" not in warnings and "ERROR" not in warnings, warnings
    html = (Path(app.outdir) / "index.html").read_text(encoding="utf-8")
    assert html.count('class="rubric"') == 2  # one group per area, in file order
    assert html.index("调度") < html.index("KV")
    assert re.search(r'href="_src/vllm/v1/core/sched/scheduler.py.html#L\d+-L\d+"', html)
    assert "vllm/v1/core/sched/scheduler.py::Scheduler.schedule" in html
    assert 'href="sched.html"' in html and "每步调度" in html


def test_a_record_without_a_field_names_its_line_and_the_fix(tmp_path):
    _, warnings = _build(tmp_path, '[[landmark]]\narea = "a"\ntarget = "vllm/v1/core/kv_cache_utils.py"\n\n'
                                   '[[landmark]]\narea = "b"\nwhat = "x"\nchapter = "sched"\n')
    assert "landmarks.toml:1: landmark without what, chapter" in warnings
    assert "landmarks.toml:5: landmark without target" in warnings
    assert "Fix: give every [[landmark]]" in warnings


def test_an_unknown_chapter_is_an_error(tmp_path):
    _, warnings = _build(tmp_path, '[[landmark]]\narea = "a"\ntarget = "vllm/v1/core/kv_cache_utils.py"\n'
                                   'what = "x"\nchapter = "no-such-page"\n')
    assert "landmarks.toml:1: chapter 'no-such-page' is not a page of the book" in warnings and "Fix:" in warnings


def test_a_landmark_the_tree_no_longer_has_fails_like_any_anchor(tmp_path):
    _, warnings = _build(tmp_path, '[[landmark]]\narea = "a"\ntarget = "vllm/v1/core/sched/scheduler.py::Gone"\n'
                                   'what = "x"\nchapter = "sched"\n')
    assert "unresolved source anchor 'vllm/v1/core/sched/scheduler.py::Gone'" in warnings
