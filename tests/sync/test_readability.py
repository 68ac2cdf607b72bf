"""The readability lint of ``make validate`` (vllm_book.sync.readability): what it measures, warns and refuses."""

from __future__ import annotations

import json
from pathlib import Path

from vllm_book import curriculum
from vllm_book.sync import mdscan, readability

ZH = "调度器每一步先看正在运行的请求再看等待队列里的新请求这样解码不会被新来的长提示饿死。"  # 42 CJK, 1 stop


def page(root: Path, body: str, docname: str = "01-part/01-ch") -> mdscan.Page:
    path = root / "source" / f"{docname}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# 标题\n\n{body}\n", encoding="utf-8")
    return mdscan.scan(path, root / "source", chapter=True)


def prose(n_zh: int) -> str:
    """A paragraph of about *n_zh* Chinese characters."""
    reps = n_zh // 42 + 1
    return "\n\n".join([ZH] * reps)


def test_line_anchor_with_code_text_warns_only_inside_a_chinese_sentence(tmp_path):
    body = "\n\n".join([
        '调度器在{src}`vllm/x.py::f:"a = 1"`之后返回。',  # line 3: warns
        '调度器在{src}`这一行 <vllm/x.py::f:"a = 1">`之后返回。',  # Chinese link text
        '| {src}`vllm/x.py::f:"a = 1"` | 表格里的代码 |',  # a table cell
        'See {src}`vllm/x.py::f:"a = 1"` here.',  # no Chinese in the sentence
        "调度器调用{src}`vllm/x.py::f`。",  # a symbol anchor, not a quoted line
        '前一句是中文。{src}`vllm/x.py::f:"b = 2"` and more.',  # the anchor's own sentence has no Chinese
    ])
    p = page(tmp_path, body)
    f = readability.measure(p, "concept")
    assert f.code_text_lines == [3]
    assert f.links == 6
    _errors, warnings, _ = readability.check(tmp_path, [p], {p.docname: "concept"})
    assert [(w.file, w.line) for w in warnings] == [("source/01-part/01-ch.md", 3)]
    assert "give it Chinese link text" in warnings[0].fix


def test_link_density_limit_depends_on_the_kind(tmp_path):
    links = " ".join(f"见{{src}}`第{i}处 <vllm/x.py::f{i}>`。" for i in range(20))
    p = page(tmp_path, prose(1300) + "\n\n" + links)
    f = readability.measure(p, "concept")
    assert 1300 <= f.zh < 1500 and f.links == 20
    assert 10 < f.links_per_k < 25
    errors, _, _ = readability.check(tmp_path, [p], {p.docname: "concept"})
    assert len(errors) == 1 and "per 1,000; a concept chapter allows 10" in errors[0].message
    assert errors[0].file == "source/01-part/01-ch.md" and errors[0].line == 1
    errors, _, _ = readability.check(tmp_path, [p], {p.docname: "walkthrough"})
    assert errors == []


def test_code_share_counts_code_spans_and_code_link_text_but_not_tables_or_chinese_link_text(tmp_path):
    code = " ".join(f"`name_{i:03d}_xyz`" for i in range(80))  # 80 × 12 visible code characters
    p = page(tmp_path, prose(1100) + "\n\n" + code)
    f = readability.measure(p, "concept")
    assert f.code_chars == 80 * 12
    assert f.code_share > 0.35
    errors, _, _ = readability.check(tmp_path, [p], {p.docname: "concept"})
    assert [e.message for e in errors] == [f"{f.code_share:.0%} of the prose is in code font; a concept chapter allows 35%"]
    # the same code in table cells is not prose
    table = "| 名字 | 说明 |\n|---|---|\n" + "\n".join(f"| `name_{i:03d}_xyz` | 说明 |" for i in range(80))
    t = readability.measure(page(tmp_path, prose(1100) + "\n\n" + table, "01-part/02-t"), "concept")
    assert t.code_chars == 0
    # a {src} role without text shows its qualname in code font; Chinese text is prose
    a = readability.measure(page(tmp_path, "甲{src}`vllm/x.py::Scheduler.schedule`乙{src}`调度 <vllm/x.py::g>`",
                                 "01-part/03-a"), "concept")
    assert a.code_chars == len("Scheduler.schedule")
    assert a.zh == 6  # 标题 (the H1) + 甲乙 + 调度


def test_short_pages_are_measured_but_not_held_to_the_rates(tmp_path):
    p = page(tmp_path, "短。" + " ".join(f"{{src}}`vllm/x.py::f{i}`" for i in range(10)))
    errors, _, figures = readability.check(tmp_path, [p], {p.docname: "concept"})
    assert errors == [] and figures[0].links == 10 and figures[0].zh < readability.MIN_ZH


def _baseline(root: Path, text: str) -> None:
    path = root / readability.BASELINE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_baseline_holds_a_listed_chapter_to_its_figures_and_only_shrinks(tmp_path):
    links = " ".join(f"见{{src}}`第{i}处 <vllm/x.py::f{i}>`。" for i in range(20))
    p = page(tmp_path, prose(1300) + "\n\n" + links)
    f = readability.measure(p, "concept")
    entry = f'[[chapter]]\ndocname = "{p.docname}"\nlinks_per_k = {round(f.links_per_k, 1)}\ncode_share = {round(f.code_share, 3)}\n'
    _baseline(tmp_path, entry)
    assert readability.check(tmp_path, [p], {p.docname: "concept"})[0] == []  # as recorded: allowed
    # worse than recorded: refused
    worse = page(tmp_path, prose(1300) + "\n\n" + links + " " + " ".join(f"{{src}}`再{i} <vllm/x.py::g{i}>`" for i in range(5)))
    errors = readability.check(tmp_path, [worse], {worse.docname: "concept"})[0]
    assert len(errors) == 1 and "got worse while awaiting its revision" in errors[0].message
    # revised until it passes, with no code-text line anchor: the entry must go
    good = page(tmp_path, prose(1300) + "\n\n" + "见{src}`一处 <vllm/x.py::f>`。")
    errors = readability.check(tmp_path, [good], {good.docname: "concept"})[0]
    assert [(e.file, e.line) for e in errors] == [(readability.BASELINE_FILE, 2)]
    assert "now meets the concept limits" in errors[0].message and errors[0].fix == "remove its entry from the baseline"
    # an entry for a chapter that is not written
    _baseline(tmp_path, entry + '\n[[chapter]]\ndocname = "09-x/01-gone"\nlinks_per_k = 1\ncode_share = 0.1\n')
    errors = readability.check(tmp_path, [p], {p.docname: "concept"})[0]
    assert [e.message for e in errors] == ["09-x/01-gone is in the baseline but is not a written chapter"]
    assert errors[0].line == 7
    _baseline(tmp_path, "[[chapter]\n")
    assert "not valid TOML" in readability.check(tmp_path, [p], {p.docname: "concept"})[0][0].message


def test_curriculum_kind_is_checked_and_inherited(tmp_path):
    (tmp_path / "source" / "01-a").mkdir(parents=True)
    toml = ('[[part]]\ndir = "01-a"\ntitle = "A"\nkind = "walkthrough"\n\n'
            '[[part.chapter]]\npath = "01-a/01-x"\ntitle = "X"\nhook = "h"\nlevel = "入门"\n\n'
            '[[part.chapter]]\npath = "01-a/02-y"\ntitle = "Y"\nhook = "h"\nlevel = "入门"\nkind = "concept"\n\n'
            '[[part]]\ndir = "02-b"\ntitle = "B"\nkind = "essay"\n')
    (tmp_path / "curriculum.toml").write_text(toml, encoding="utf-8")
    cur = curriculum.load(tmp_path / "curriculum.toml")
    assert [cur.kind(c) for c in cur.chapters()] == ["walkthrough", "concept"]
    msgs = [m for _f, line, m in curriculum.check(cur, tmp_path / "source") if "kind" in m]
    assert msgs == ["part 02-b: kind 'essay' is not one of concept, walkthrough; use \"concept\" or \"walkthrough\" "
                    "(it sets the readability limits)"]


def test_the_real_book_meets_the_lint(capsys):
    """Every written chapter of the book passes (or, awaiting its revision, is no worse than its baseline)."""
    from vllm_book.sync import __main__ as cli

    repo = Path(__file__).resolve().parents[2]
    assert cli.main(["--root", str(repo), "readability", "--json"]) == 0, capsys.readouterr().err
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["zh"] > readability.MIN_ZH for r in rows)
    waiting, _ = readability.load_baseline(repo)
    for r in rows:
        if r["docname"] not in waiting:
            assert r["links_per_k"] <= readability.LIMITS[r["kind"]][0], r
            assert r["code_share"] <= readability.LIMITS[r["kind"]][1], r


def test_baseline_chapter_may_not_gain_code_text_line_anchors(tmp_path):
    links = " ".join(f"见{{src}}`第{i}处 <vllm/x.py::f{i}>`。" for i in range(20))
    p = page(tmp_path, prose(1300) + "\n\n" + links + '\n\n调度器在{src}`vllm/x.py::f:"a = 1"`之后返回。')
    f = readability.measure(p, "concept")
    _baseline(tmp_path, f'[[chapter]]\ndocname = "{p.docname}"\nlinks_per_k = {round(f.links_per_k, 1)}\n'
                        f'code_share = {round(f.code_share, 3)}\ncode_text_lines = 0\n')
    errors = readability.check(tmp_path, [p], {p.docname: "concept"})[0]
    assert len(errors) == 1 and "1 line anchors with code as link text > recorded 0" in errors[0].message
