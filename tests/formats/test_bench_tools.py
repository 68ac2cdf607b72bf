"""The PDF benchmark's book generator and the PDF comparison script (no PDF build here)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_book import curriculum as cur_mod
from vllm_book.formats import bench

REPO = Path(__file__).resolve().parents[2]


def _labels(src: Path) -> list[str]:
    out = []
    for md in src.rglob("*.md"):
        text = md.read_text(encoding="utf-8")
        out += re.findall(r"^\(([^()\s]+)\)=[ \t]*$", text, re.M)
        out += re.findall(r"^[ \t]*:name:[ \t]*(\S+)", text, re.M)
    return out


def test_real_cycle_repeats_the_written_chapters_with_distinct_names(tmp_path):
    written = [c for c in cur_mod.load(REPO / "curriculum.toml").chapters() if c.written]
    n = len(written) + 7
    src, cur_path = bench.make_real_cycle(tmp_path / "book", n)
    cur = cur_mod.load(cur_path)
    chapters = [c for c in cur.chapters() if c.written]
    assert len(chapters) == n
    assert len({c.path for c in chapters}) == n  # distinct docnames
    assert cur_mod.check(cur, src) == []
    labels = _labels(src)
    assert len(labels) == len(set(labels)), "a label is defined twice"
    # a copy is the original chapter with its label definitions renamed, nothing else
    first, copy = written[0], chapters[len(written)]
    original = (REPO / "source" / f"{first.path}.md").read_text(encoding="utf-8")
    copied = (src / f"{copy.path}.md").read_text(encoding="utf-8")
    assert copy.path.split("/", 1)[1] == first.path.split("/", 1)[1] and copy.part != first.part
    assert re.sub(r"^\(([^()\s]+)-rb\)=", r"(\1)=", copied, flags=re.M) == original
    assert copy.title == first.title and re.match(cur_mod.CHAPTER_FILE, f"{copy.path}.md")


def test_real_cycle_below_the_real_count_keeps_the_first_chapters(tmp_path):
    src, cur_path = bench.make_real_cycle(tmp_path / "book", 3)
    written = [c for c in cur_mod.load(cur_path).chapters() if c.written]
    assert len(written) == 3 and cur_mod.check(cur_mod.load(cur_path), src) == []


def test_bench_phases_are_read_from_the_build_log():
    log = ("[vllm_book] rendering 66 Mermaid diagram(s) as pdf with Mermaid 11.14.0 in 2 browser(s) … 12.5s\n"
           "[vllm_book] rendering pass 1: 1183 pages, 600.2s; every page reference it read was final\n"
           "[vllm_book] wrote x.pdf (9.0 MB; fonts 18.1s, rinohtype 700.4s in 1 pass(es))\n")
    assert bench.phases(log) == {"diagrams_s": 12.5, "fonts_s": 18.1, "render_s": 700.4,
                                 "passes": [{"pass": 1, "pages": 1183, "seconds": 600.2}]}


@pytest.mark.skipif(not (shutil.which("pdftoppm") and shutil.which("pdfunite")), reason="poppler-utils missing")
def test_compare_pdf_finds_the_differing_page(tmp_path):
    cairosvg = pytest.importorskip("cairosvg")

    def pdf(name: str, colours: list[str]) -> Path:
        pages = []
        for i, colour in enumerate(colours):
            p = tmp_path / f"{name}-{i}.pdf"
            cairosvg.svg2pdf(bytestring=(f'<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200">'
                                         f'<rect width="100" height="100" fill="{colour}"/></svg>').encode(),
                             write_to=str(p))
            pages.append(p)
        out = tmp_path / f"{name}.pdf"
        subprocess.run(["pdfunite", *map(str, pages), str(out)], check=True)
        return out

    a = pdf("a", ["red", "green", "blue"])
    b = pdf("b", ["red", "black", "blue"])
    script = REPO / "bench" / "compare_pdf.py"
    same = subprocess.run([sys.executable, str(script), str(a), str(a)], capture_output=True, text=True)
    assert same.returncode == 0, same.stdout + same.stderr
    diff = subprocess.run([sys.executable, str(script), str(a), str(b)], capture_output=True, text=True)
    assert diff.returncode == 1 and "1 page(s) differ: 2" in diff.stdout, diff.stdout
