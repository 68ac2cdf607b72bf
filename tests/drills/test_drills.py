"""Calculation drills (vllm_book.drills): every answer in the book is recomputed from its inputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from vllm_book import drills

REPO = Path(__file__).resolve().parents[2]
BOOK_DRILLS = REPO / "source" / "_data" / "drills.toml"


def test_every_drill_of_the_book_recomputes_to_its_answer():
    found = drills.load(BOOK_DRILLS)
    assert found
    wrong = [d.problem() for d in found if d.problem()]
    assert not wrong, "\n".join(wrong)


def test_every_drill_of_the_book_is_shown_somewhere():
    used = set()
    for md in (REPO / "source").rglob("*.md"):
        used |= set(re.findall(r"^```\{drill\}\s+(\S+)", md.read_text(encoding="utf-8"), re.M))
    ids = {d.id for d in drills.load(BOOK_DRILLS)}
    unused = ids - used - {"kv-bytes-per-token-llama3-8b"}  # the seed drill, kept as the file's worked example
    assert not unused, f"drills no chapter shows: {sorted(unused)}"
    assert used <= ids, f"chapters show drills the data file lacks: {sorted(used - ids)}"


def test_formulas_are_arithmetic_only():
    assert drills.evaluate("ceil(a / b) * 2", {"a": 7, "b": 2}) == 8
    for bad in ("__import__('os').system('true')", "a.real", "[a]", "open('x')", "a if a else b"):
        with pytest.raises(drills.DrillError, match="not allowed|not an expression"):
            drills.evaluate(bad, {"a": 1, "b": 2})
    with pytest.raises(drills.DrillError, match="'c', which is not an input"):
        drills.evaluate("a + c", {"a": 1})
    with pytest.raises(drills.DrillError, match="divides by zero"):
        drills.evaluate("a / 0", {"a": 1})


def test_data_file_errors_name_the_line(tmp_path):
    p = tmp_path / "d.toml"
    p.write_text('[[drill]]\nid = "x"\ntitle = "t"\ninputs = { a = 1 }\nformula = "a"\nanswer = 1\nunit = "u"\n'
                 'source = "假设"\n\n[[drill]]\nid = "x"\ntitle = "t"\ninputs = { a = true }\nformula = "a"\n'
                 'answer = 1\nunit = "u"\nsource = "s"\n', encoding="utf-8")
    with pytest.raises(drills.DrillError, match=r"d\.toml:10: drill id 'x' is used twice"):
        drills.load(p)


def test_directive_renders_inputs_formula_answer_and_refuses_a_wrong_answer(build_root):
    app = build_root("drills", "html")
    soup = BeautifulSoup((app.outdir / "index.html").read_text(encoding="utf-8"), "html.parser")
    box = soup.select_one("#drill-ok")
    assert box is not None and "演算：正确的演算" in box.get_text() and "数据来源：假设" in box.get_text()
    assert [td.get_text() for td in box.select("tbody tr")[0].select("td")] == ["a", "3", "m"]
    assert "sqrt(a ** 2 + b ** 2) = 5 m" in box.get_text()
    assert soup.select_one("#drill-typo") is None  # refused, not rendered with a wrong number
    text = re.sub(r"\x1b\[[0-9;]*m", "", app.warning.getvalue())
    assert re.search(r"index\.md:\d+: WARNING: drill typo: the answer says 43200 token but blocks \* block = "
                     r"432000 with its inputs", text)
    assert "fix: correct the answer or the inputs in drills.toml:" in text
    assert "no drill 'missing' in drills.toml" in text and 'add a [[drill]] with id = "missing"' in text
