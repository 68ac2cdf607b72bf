"""``make refresh``: refusals, then a real pin move 0.1.0 → 0.2.0 in a throw-away git repository."""

from __future__ import annotations

import json
import tomllib

import pytest
from sync_helpers import V1_SHA, V2_SHA, git, needs_ctags
from vllm_book import pin as pin_mod
from vllm_book.sync import __main__ as cli
from vllm_book.sync import refresh, review, validate

pytestmark = needs_ctags


def test_refuses_a_dirty_tree(book):
    (book / "notes.txt").write_text("wip\n")
    with pytest.raises(refresh.RefreshError) as exc:
        refresh.run(book, "0.2.0", commit=V2_SHA)
    assert str(exc.value) == ("the working tree is not clean; refresh rewrites tracked files, so commit or stash first:\n"
                              "    ?? notes.txt")
    (book / "notes.txt").unlink()
    (book / "README.md").write_text("changed\n")
    with pytest.raises(refresh.RefreshError, match=r"not clean.*\n     M README.md"):
        refresh.run(book, "0.2.0", commit=V2_SHA)


def test_untracked_files_under_vllm_do_not_count(book):
    (book / "vllm" / "scratch.py").write_text("x = 1\n")
    assert refresh.dirty_lines(book) == []


def test_a_release_needs_its_full_commit(book, capsys):
    with pytest.raises(refresh.RefreshError) as exc:
        refresh.run(book, "0.2.0")
    msg = str(exc.value)
    assert msg.startswith("cannot determine the full commit of v0.2.0 offline.\n"
                          "  The sdist of v0.2.0 records only the abbreviated commit 2222222bb; the pin needs the full SHA.\n"
                          "  Get it with: git ls-remote http://127.0.0.1:9/vllm-project/vllm 'refs/tags/v0.2.0^{}'")
    assert msg.endswith("make refresh TO=0.2.0 COMMIT=<full 40-hex sha>")
    assert cli.main(["--root", str(book), "refresh", "--to", "0.2.0"]) == 2
    assert "error: cannot determine the full commit of v0.2.0 offline." in capsys.readouterr().err


def test_a_commit_must_match_the_sdist(book):
    with pytest.raises(refresh.RefreshError, match=r"--commit 3333333.* does not start with 2222222bb, the commit "
                                                   r"vllm-0.2.0.tar.gz was built from"):
        refresh.run(book, "0.2.0", commit="3" * 40)
    with pytest.raises(refresh.RefreshError, match=r"--commit '2222222bb' is not a full 40-hex SHA"):
        refresh.run(book, "0.2.0", commit="2222222bb")


def test_a_bare_commit_needs_the_release(book):
    with pytest.raises(refresh.RefreshError, match=r"TO=2222222bb2+ is a commit; the book provisions vLLM from a release "
                                                   r"sdist, so name the release built from it"):
        refresh.run(book, V2_SHA)
    with pytest.raises(refresh.RefreshError, match=r"TO=2222222bb looks like an abbreviated commit"):
        refresh.run(book, "2222222bb")


def test_refresh_moves_the_pin_and_marks_reviews(book, monkeypatch, capsys):
    pin_before = (book / "vllm-pin.toml").read_text()
    monkeypatch.setenv("COMMIT", V2_SHA)  # make refresh TO=0.2.0 COMMIT=…
    assert cli.main(["--root", str(book), "refresh", "--to", "0.2.0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pin moved: v0.1.0 (1111111aa1) → v0.2.0 (2222222bb2)\n")
    assert "4 anchor uses no longer resolve; 3 chapters set to pending; 1 carried" in out

    # the pin, its comments kept
    pin = pin_mod.load_pin(book)
    assert (pin.version, pin.commit, pin.sdist_filename) == ("0.2.0", V2_SHA, "vllm-0.2.0.tar.gz")
    text = (book / "vllm-pin.toml").read_text()
    assert text.splitlines()[0] == pin_before.splitlines()[0] == "# The fixture pin (tests/sync/conftest.py)."
    # the gitlink, the README block, the tree
    assert git(book, "ls-files", "-s", "vllm").split()[:2] == ["160000", V2_SHA]
    assert "| vLLM 版本 | **v0.2.0** |" in (book / "README.md").read_text()
    assert "'0.2.0'" in (book / "vllm" / "vllm" / "_version.py").read_text()
    assert json.loads((book / "vllm" / pin_mod.PROVENANCE_FILE).read_text())["commit"] == V2_SHA

    # reviews: changed → pending (history kept, checks reset); unaffected reviewed → carried
    recs = {r.path: r for r in review.load(book / "content-review.toml")[0].records}
    sched = recs["01-part/01-sched"]
    assert (sched.status, sched.reviewed_commit, sched.anchors_checked) == ("pending", V1_SHA, False)
    assert recs["01-part/02-cache"].status == "pending"
    assert recs["01-part/03-later"].status == "pending"
    blocks = recs["01-part/04-blocks"]
    assert (blocks.status, blocks.reviewed_commit, blocks.carried_from) == ("reviewed", V2_SHA, V1_SHA)
    assert blocks.hardware_runs == ["h200-2026-11-02-a"]

    # the checklist
    checklist = (book / "docs" / "refresh-0.1.0-to-0.2.0.md").read_text()
    assert checklist.startswith("# Refresh checklist: vLLM v0.1.0 → v0.2.0")
    assert (f"The pin moved from `{V1_SHA}` to `{V2_SHA}` (full SHA from: given; sdist `vllm-0.2.0.tar.gz`") in checklist
    assert ("- [ ] `source/01-part/01-sched.md:16` `vllm/core/utils.py::cdiv`: no symbol cdiv in vllm/core/utils.py — "
            "candidates: `vllm/core/utils.py::ceil_div`") in checklist
    assert ("- [ ] `source/01-part/01-sched.md:14` `vllm/core/scheduler.py::Scheduler.schedule:\"token_budget = "
            "self.budget\"`: no line of vllm/core/scheduler.py::Scheduler.schedule (lines 8-16) contains "
            "\"token_budget = self.budget\"") in checklist
    assert "- [ ] `source/01-part/02-cache.md:15` `vllm/core/legacy.py::LegacyEngine`: no file vllm/core/legacy.py in the source tree" in checklist
    assert "- [ ] source_areas: 2 files changed (+0 −1 ~1): `requirements/common.txt`, `vllm/core/legacy.py`" in checklist
    assert "### `01-part/01-sched` — 调度器 (written)" in checklist
    assert ("- [ ] `vllm/core/scheduler.py::Scheduler.schedule` — changed (anchor breaks): body changed (+3 −3 lines) "
            "(cited at lines 13, 14)") in checklist
    assert "- [ ] mark it: `python -m vllm_book.sync review mark 01-part/01-sched --anchors --commands --metrics --diagrams`" in checklist
    assert "- [ ] `source/index.md`: `vllm/` (changed)" in checklist
    assert "## Carried forward" in checklist and "- `01-part/04-blocks`" in checklist
    assert (book / "docs" / "impact-0.1.0-to-0.2.0.json").is_file()

    # validate now: the pin is consistent everywhere, only the anchors need a human
    result = validate.run(book, "contracts", diagrams=False)
    assert {p.check for p in result.problems} == {"anchors"}
    assert [(p.file, p.line) for p in result.problems] == [
        ("source/01-part/01-sched.md", 14), ("source/01-part/01-sched.md", 15), ("source/01-part/01-sched.md", 16),
        ("source/01-part/02-cache.md", 15)]
    # and a second refresh is refused until this is committed
    with pytest.raises(refresh.RefreshError, match="not clean"):
        refresh.run(book, "0.1.0", commit=V1_SHA)


def test_review_sync_and_mark(book, capsys):
    rv = book / "content-review.toml"
    text = rv.read_text()
    start = text.index('[[chapter]]\npath = "01-part/03-later"')
    end = text.index("[[chapter]]", start + 5)
    rv.write_text(text[:start] + text[end:])
    assert cli.main(["--root", str(book), "review", "sync"]) == 0
    assert "content-review.toml: 4 records (1 added)" in capsys.readouterr().out
    data = tomllib.loads(rv.read_text())
    assert [c["path"] for c in data["chapter"]] == ["01-part/01-sched", "01-part/02-cache", "01-part/03-later", "01-part/04-blocks"]
    assert cli.main(["--root", str(book), "review", "mark", "01-part/02-cache", "--anchors", "--diagrams"]) == 0
    assert "01-part/02-cache: pending (still to check: commands_checked, metrics_checked)" in capsys.readouterr().out
    assert cli.main(["--root", str(book), "review", "mark", "01-part/02-cache", "--anchors", "--diagrams", "--commands",
                     "--metrics", "--hardware-run", "h200-2026-11-02-a"]) == 0
    assert "01-part/02-cache: reviewed at 1111111aa1" in capsys.readouterr().out
    rec = review.load(rv)[0].get("01-part/02-cache")
    assert (rec.status, rec.reviewed_commit, rec.hardware_runs) == ("reviewed", V1_SHA, ["h200-2026-11-02-a"])
    # (h200-2026-11-02-a is the fixture's evidence record, recorded at V1 with the fakes of tests/ci)
    assert validate.run(book, "full", diagrams=False).problems == []
    assert cli.main(["--root", str(book), "review", "mark", "01-part/03-later", "--anchors"]) == 2
    assert "01-part/03-later is not a written chapter" in capsys.readouterr().err
