"""``cli-transcript`` (vllm_book.transcripts): the book's tools run during the build; a failure names its line."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _warnings(app) -> list[str]:
    text = re.sub(r"\n(\s+fix: )", r" \1", _ANSI.sub("", app.warning.getvalue()))
    return [line for line in text.splitlines() if "WARNING" in line or "ERROR" in line]


def _blocks(app, page: str) -> list[str]:
    soup = BeautifulSoup((app.outdir / page).read_text(encoding="utf-8"), "html.parser")
    return [div.get_text() for div in soup.select("div.cli-transcript pre")]


def test_output_is_the_commands_own_with_a_fixed_clock(build_root):
    app = build_root("transcripts", "html")
    first, second, third = _blocks(app, "index.html")
    assert first.splitlines()[:4] == ["$ fakecli triage --fixture fixtures/case.txt", "参数：triage --fixture fixtures/case.txt",
                                      f"时间：{app.config.vllm_book_transcript_epoch} UTC", "病例：抢占雪崩"]
    assert second.splitlines()[0] == "$ fakecli run --exit 1"  # the status the page announces
    assert third.splitlines()[-1] == "…（其余 47 行略）" and len(third.splitlines()) == 1 + 5 + 1
    soup = BeautifulSoup((app.outdir / "index.html").read_text(encoding="utf-8"), "html.parser")
    assert soup.select_one("div.literal-block-wrapper .caption-text").get_text() == "分诊一次"


def test_wrong_exit_status_and_unknown_programs_are_warnings_at_their_line(build_root):
    app = build_root("transcripts", "html")
    warnings = [w for w in _warnings(app) if "broken" in w]
    assert len(warnings) == 2, warnings
    assert re.search(r"broken\.md:\d+: WARNING: cli-transcript: 'fakecli run --exit 2' exited 2, the page says :exit: 0", warnings[0])
    assert "fix: fix the command or the fixture, or set :exit: 2" in warnings[0]
    assert "[vllm_book.transcript]" in app.warning.getvalue() and "| 出事了" in app.warning.getvalue()
    assert "'rm' is not a program the build runs" in warnings[1] and "use one of fakecli" in warnings[1]
    assert not [w for w in _warnings(app) if "index.md" in w]
    assert all("构建时未能运行" in b for b in _blocks(app, "broken.html"))


def test_editing_a_fixture_or_the_tool_reruns_the_page(build_root):
    app = build_root("transcripts", "html")
    deps = app.env.dependencies["index"]
    assert any(str(d).endswith("fixtures/case.txt") for d in deps)
    assert any(str(d).endswith("tool/fakecli/__main__.py") for d in deps)
    (app.srcdir / "fixtures" / "case.txt").write_text("病例：前缀缓存坍塌\n", encoding="utf-8")
    app.build()
    assert "病例：前缀缓存坍塌" in _blocks(app, "index.html")[0]
