"""Header card, reading time, template checks, curriculum-driven toctrees, Chinese search."""

from __future__ import annotations

import json
import re

import pytest
from docutils import nodes

from vllm_book.chapters import reading_minutes


@pytest.fixture(scope="module")
def built(build_root):
    return build_root("chapters")


def test_card_is_rendered_from_front_matter(built):
    html = (built.outdir / "01-part" / "01-good.html").read_text()
    card = html[html.index('class="chapter-card') : html.index("</dl>", html.index('class="chapter-card'))]
    for label in ("谁该读这一篇", "前置阅读", "耗时", "难度", "学完能"):
        assert label in card
    assert "想了解调度器的工程师" in card
    assert '<code class="docutils literal notranslate"><span class="pre">Scheduler</span></code>' in card
    assert 'href="02-bad.html"' in card  # prerequisites are resolved :doc: links
    assert re.search(r"约 \d+ 分钟", card)


def test_template_and_front_matter_warnings(built):
    warnings = built.warning.getvalue()
    assert re.search(r"02-bad\.md:\d+: WARNING: chapter lacks the section '## 自检'", warnings)
    assert "02-bad.md:1: WARNING: the front matter lacks prerequisites, outcomes" in warnings
    assert "02-bad.md:3: WARNING: difficulty '超难' is not one of 入门 / 进阶 / 高级" in warnings  # its own line
    assert "H1 '不一样的标题' differs from the curriculum title '规定的标题'" in warnings
    assert re.search(r"02-bad\.md:\d+: WARNING: chapter has no Mermaid diagram", warnings)
    assert "01-good" not in warnings  # the complete chapter is clean


def test_toctree_and_tracks_come_from_the_curriculum(built):
    part = (built.outdir / "01-part" / "index.html").read_text()
    assert 'href="01-good.html"' in part and 'href="02-bad.html"' in part
    assert "以后再写" in part and "编写中" in part
    assert "03-later.html" not in part  # planned chapters get no page
    # every chapter, written or planned, with its hook beside the title
    assert part.count('class="chapter-hook"') == 4 and "为什么读《以后再写》" in part
    index = (built.outdir / "index.html").read_text()
    track = index[index.index('learning-path') :]
    assert track.index("好的一章") < track.index("规定的标题")  # quickstart order
    assert "以后再写" not in index.split("learning-path")[1].split("</ol>")[0]
    assert "为什么读《好的一章》" in track  # the learning paths show the hooks too


def test_chinese_search_indexes_words(built):
    text = (built.outdir / "searchindex.js").read_text()
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    good = index["docnames"].index("01-part/01-good")
    for word in ("调度", "调度器", "批次"):
        docs = index["terms"][word]
        assert good in (docs if isinstance(docs, list) else [docs]), word
    js = (built.outdir / "_static" / "language_data.js").read_text()
    assert "forward maximum matching" in js  # our query-side splitter is shipped


def test_reading_minutes_counts_cjk_and_words():
    doc = nodes.paragraph("", "字" * 3000 + " word" * 400)
    assert reading_minutes(doc, 300, 200, 20) == 15  # 10 + 2 min, rounded up to 5


def test_links_to_planned_chapters_render_as_planned(built):
    html = (built.outdir / "01-part" / "01-good.html").read_text()
    assert '<span class="planned-chapter-ref">以后再写（<em>编写中</em>）</span>' in html
    assert "unknown document" not in built.warning.getvalue()


def test_template_order_and_self_check_count(built):
    warnings = built.warning.getvalue()
    assert re.search(r"04-order\.md:\d+: WARNING: sections ## 小结 / ## 自检 / ## 下一步 must close the chapter, in that order",
                     warnings)
    assert re.search(r"04-order\.md:\d+: WARNING: '## 自检' should hold 3–5 questions with folded answers", warnings)


def test_curriculum_toctrees_say_where_they_come_from(built):
    """The toctrees the curriculum directives make carry the directive's file and line (a translator's catalog
    shows ``#: index.md:6`` for a {book-parts} caption, not ``#: :-1``)."""
    from sphinx import addnodes

    doctree = built.env.get_doctree("index")
    tocs = list(doctree.findall(addnodes.toctree))
    assert tocs
    for toc in tocs:
        assert toc.source and toc.source.endswith("index.md") and toc.line == 6, (toc.source, toc.line)
