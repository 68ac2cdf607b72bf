"""``make validate`` on a fixture book: clean passes; each seeded fault gives a precise file:line message."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sync_helpers import V1_SHA, V2_SHA, git, needs_ctags, needs_mermaid
from vllm_book.sync import __main__ as cli
from vllm_book.sync import mermaid, validate

pytestmark = needs_ctags


def problems(root: Path, profile: str = "contracts", diagrams: bool = True) -> list[str]:
    return [p.format() for p in validate.run(root, profile, diagrams=diagrams).problems]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_no(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in line)


def record_line(path: Path, docname: str) -> int:
    """Line of the ``[[…]]`` header of *docname*'s record (the line a record is reported at)."""
    return line_no(path, f'path = "{docname}"') - 1


@needs_mermaid
def test_clean_book_passes_contracts_and_cli_exits_0(book, capsys):
    assert problems(book) == []
    assert cli.main(["--root", str(book), "validate"]) == 0
    out = capsys.readouterr().out
    assert "validate (profile contracts): OK — 0 errors" in out
    assert "5 pages, 4 curriculum chapters (3 written), 14 source anchors, 3 Mermaid diagrams" in out


def test_full_profile_requires_written_chapters_reviewed_at_the_pin(book, capsys):
    line = record_line(book / "content-review.toml", "01-part/02-cache")
    assert problems(book, "full", diagrams=False) == [
        f"content-review.toml:{line}: profile full: written chapter 01-part/02-cache is not reviewed at the pinned "
        "commit (its review is pending)\n    fix: re-read it against the pinned tree, then: python -m vllm_book.sync "
        "review mark 01-part/02-cache --anchors --commands --metrics --diagrams"
    ]
    # a review at another commit is not enough either
    edit(book / "content-review.toml", f'reviewed_commit = "{V1_SHA}"\nreviewed_at = "2026-11-01', f'reviewed_commit = "{V2_SHA}"\nreviewed_at = "2026-11-01')
    msgs = problems(book, "full", diagrams=False)
    assert any("written chapter 01-part/01-sched is not reviewed at the pinned commit (it was reviewed at "
               "2222222bb2, not at the pinned 1111111aa1)" in m for m in msgs)
    assert cli.main(["--root", str(book), "validate", "--profile", "full", "--no-diagrams"]) == 1
    assert "FAILED — 2 error(s) (profile 2)" in capsys.readouterr().out


def test_broken_anchor_names_file_line_and_candidates(book):
    md = book / "source/01-part/01-sched.md"
    edit(md, "Scheduler.schedule`，", "Scheduler.scheduel`，")
    assert problems(book, diagrams=False) == [
        f"source/01-part/01-sched.md:{line_no(md, 'scheduel')}: unresolved source anchor "
        "'vllm/core/scheduler.py::Scheduler.scheduel': no symbol Scheduler.scheduel in vllm/core/scheduler.py\n"
        "    fix: use one of: vllm/core/scheduler.py::Scheduler.schedule"
    ]


def test_broken_excerpt_and_quoted_line(book):
    md = book / "source/01-part/02-cache.md"
    edit(md, "```{src-code} vllm/core/block_pool.py::BlockPool", "```{src-code} vllm/core/block_pool.py::BlockPools")
    edit(book / "source/01-part/01-sched.md", '"token_budget = self.budget"', '"token_budget = self.max_tokens"')
    msgs = problems(book, diagrams=False)
    assert len(msgs) == 2
    assert msgs[0].startswith(f"source/01-part/01-sched.md:{line_no(book / 'source/01-part/01-sched.md', 'max_tokens')}: unresolved source anchor 'vllm/core/scheduler.py::"
                              "Scheduler.schedule:\"token_budget = self.max_tokens\"': no line of "
                              "vllm/core/scheduler.py::Scheduler.schedule (lines 8-16) contains \"token_budget = self.max_tokens\"")
    assert msgs[1].startswith(f"source/01-part/02-cache.md:{line_no(md, 'BlockPools')}: unresolved source excerpt "
                              "'vllm/core/block_pool.py::BlockPools': no symbol BlockPools in vllm/core/block_pool.py")
    assert "fix: use one of: vllm/core/block_pool.py::BlockPool" in msgs[1]


def test_unmanaged_source_lines(book):
    md = book / "source/01-part/04-blocks.md"
    edit(md, "## 小结\n", "## 小结\n\n归还在 block_pool.py:9，见 [GitHub](https://github.com/vllm-project/vllm/blob/main/vllm/core/block_pool.py#L9)。\n")
    line = line_no(md, "归还在")
    fix = ('    fix: use {src}`path::Symbol` (or a path::Symbol:"text" line anchor); for program output add the class '
           'no-src-check')
    assert problems(book, diagrams=False) == [
        f'source/01-part/04-blocks.md:{line}: GitHub line link "https://github.com/vllm-project/vllm/blob/main/vllm/core/'
        f'block_pool.py#L9" rots when the pin moves\n{fix}',
        f'source/01-part/04-blocks.md:{line}: unmanaged source line "block_pool.py:9"\n{fix}',
    ]


def test_curriculum_drift(book):
    cur = book / "curriculum.toml"
    (book / "source/01-part/04-blocks.md").unlink()  # listed but missing
    (book / "source/01-part/05-extra.md").write_text("# 多出来的\n", encoding="utf-8")  # on disk, unlisted
    edit(book / "source/01-part/01-sched.md", "# 调度器\n", "# 调度器们\n")  # H1 ≠ title
    sched_line = record_line(cur, "01-part/01-sched")
    blocks_line = record_line(cur, "01-part/04-blocks")
    msgs = problems(book, diagrams=False)
    assert (f'curriculum.toml:{blocks_line}: 01-part/04-blocks has status = "written" but source/01-part/04-blocks.md '
            'does not exist\n    fix: write it or set status = "planned"') in msgs
    assert ("source/01-part/01-sched.md:11: H1 '调度器们' differs from the curriculum title '调度器' "
            f"(curriculum.toml:{sched_line})\n    fix: make them equal (change the H1 or the curriculum title)") in msgs
    assert ("source/01-part/05-extra.md:1: chapter file 01-part/05-extra.md is not listed in curriculum.toml\n"
            "    fix: add a [[part.chapter]] record") in msgs
    # the build's header card reports it too (vllm_book.frontmatter)
    assert ("source/01-part/05-extra.md:1: the chapter has no front matter (audience, prerequisites, difficulty, outcomes)\n"
            "    fix: start the file with the --- block of the chapter template (see docs/authoring.md)") in msgs
    # and the build's template check (vllm_book.template): one per missing section, at the last line
    assert ("source/01-part/05-extra.md:1: chapter lacks the section '## 自检' (the template ends with ## 小结 / ## 自检 / "
            "## 下一步)\n    fix: add '## 自检' at the end, in the order ## 小结 / ## 自检 / ## 下一步 (see docs/authoring.md)") in msgs
    # and the template's diagram (a chapter draws at least one Mermaid diagram), at its H1
    assert any(m.startswith("source/01-part/05-extra.md:1: chapter has no Mermaid diagram") for m in msgs)
    assert len(msgs) == 8


def test_review_records_drift(book):
    rv = book / "content-review.toml"
    text = rv.read_text(encoding="utf-8")
    start = text.index('[[chapter]]\npath = "01-part/04-blocks"')
    text = text[:start] + text[start:].replace("01-part/04-blocks", "01-part/09-gone", 1)
    text = text.replace('status = "pending"', 'status = "done"', 1)
    rv.write_text(text, encoding="utf-8")
    msgs = problems(book, diagrams=False)
    gone = record_line(rv, "01-part/09-gone")
    cache_line = record_line(rv, "01-part/02-cache")
    blocks_cur = record_line(book / "curriculum.toml", "01-part/04-blocks")
    assert msgs == sorted(msgs)
    assert set(msgs) == {
        f"content-review.toml:{cache_line}: 01-part/02-cache: status 'done' is not one of pending, reviewed\n"
        '    fix: set status = "pending" or "reviewed"',
        f"content-review.toml:{gone}: record for 01-part/09-gone, which is not a chapter in curriculum.toml\n"
        "    fix: remove the record, or add the chapter to curriculum.toml",
        f"curriculum.toml:{blocks_cur}: 01-part/04-blocks has no record in content-review.toml\n"
        "    fix: run: python -m vllm_book.sync review sync",
    }


def test_review_record_lacking_fields(book):
    rv = book / "content-review.toml"
    edit(rv, 'metrics_checked = false\ndiagrams_checked = false\nhardware_runs = []\n\n[[chapter]]\npath = "01-part/03-later"',
         'hardware_runs = []\n\n[[chapter]]\npath = "01-part/03-later"')
    line = record_line(rv, "01-part/02-cache")
    assert problems(book, diagrams=False) == [
        f"content-review.toml:{line}: 01-part/02-cache: record lacks metrics_checked, diagrams_checked\n"
        "    fix: write every field (python -m vllm_book.sync review sync rewrites the file with all of them)"
    ]


def test_duplicate_label_in_one_page(book):
    md = book / "source/01-part/04-blocks.md"
    edit(md, "## 小结\n", "(part-blocks)=\n\n## 小结\n")
    assert problems(book, diagrams=False) == [
        f"source/01-part/04-blocks.md:{line_no(md, '## 小结') - 2}: label (part-blocks) is already defined at line 9 of "
        "this page\n    fix: give one of them another name"
    ]


def test_review_record_consistency(book):
    rv = book / "content-review.toml"
    edit(rv, 'status = "pending"\nreviewed_commit = ""', 'status = "reviewed"\nreviewed_commit = "abc"')
    line = record_line(rv, "01-part/02-cache")
    assert problems(book, diagrams=False) == [
        f"content-review.toml:{line}: 01-part/02-cache: reviewed_commit 'abc' is not a full 40-hex SHA\n"
        "    fix: write the full commit the review was done against",
        f"content-review.toml:{line}: 01-part/02-cache: status = \"reviewed\" but anchors_checked, commands_checked, "
        "metrics_checked, diagrams_checked = false\n    fix: finish those checks, or set status = \"pending\"",
        f"content-review.toml:{line}: 01-part/02-cache: status = \"reviewed\" without reviewed_commit and reviewed_at\n"
        "    fix: mark it with: python -m vllm_book.sync review mark 01-part/02-cache --anchors --commands --metrics --diagrams",
    ]


def test_stale_readme_block(book):
    edit(book / "README.md", "| vLLM 版本 | **v0.1.0** |", "| vLLM 版本 | **v0.0.9** |")
    line = line_no(book / "README.md", "v0.0.9")
    assert problems(book, diagrams=False) == [
        f"README.md:{line}: the vllm-pin block is stale: this line is '| vLLM 版本 | **v0.0.9** |', vllm-pin.toml gives "
        "'| vLLM 版本 | **v0.1.0** |'\n    fix: run: python -m vllm_book.sync readme --write (the block is generated "
        "from vllm-pin.toml; never edit it by hand)"
    ]
    assert cli.main(["--root", str(book), "readme", "--write"]) == 0
    assert problems(book, diagrams=False) == []


def test_readme_without_markers(book):
    (book / "README.md").write_text("# Fixture book\n", encoding="utf-8")
    msgs = problems(book, diagrams=False)
    assert len(msgs) == 1 and msgs[0].startswith("README.md:1: no vllm-pin block (missing begin marker)")


def test_gitlink_differs_from_pin(book):
    git(book, "update-index", "--cacheinfo", f"160000,{V2_SHA},vllm")
    assert problems(book, diagrams=False) == [
        f"vllm-pin.toml:5: the vllm submodule gitlink is {V2_SHA}, but vllm-pin.toml pins {V1_SHA}\n"
        "    fix: move both with make refresh TO=<release> (it updates the gitlink), or restore the pin: "
        "git checkout -- vllm-pin.toml"
    ]


def test_tree_not_provisioned_at_the_pin(book):
    prov = book / "vllm" / ".vllm-book-provenance.json"
    data = json.loads(prov.read_text())
    data["commit"] = V2_SHA
    prov.write_text(json.dumps(data))
    msgs = problems(book, diagrams=False)
    assert msgs[0].startswith("vllm-pin.toml:5: 14 source anchors were not checked: vllm/ is not provisioned at the pin")
    assert msgs[1].startswith("vllm/.vllm-book-provenance.json:1: vllm/ was provisioned at another pin: its provenance "
                              f"record says v0.1.0 2222222bb2 (sdist sha256 ")


def test_tree_from_another_release(book):
    edit(book / "vllm/vllm/_version.py", "g1111111aa", "g2222222bb")
    fix = "re-provision the tree: rm -rf vllm && make vllm (the sdist is reused from the download cache)"
    msgs = problems(book, diagrams=False)
    assert msgs[1] == (f"vllm/vllm/_version.py:3: the tree in vllm/ was built from commit 2222222bb, but vllm-pin.toml pins "
                       f"{V1_SHA} (v0.1.0)\n    fix: {fix}")
    assert msgs[0].startswith("vllm/vllm/_version.py:1: vllm/vllm/_version.py differs from the pinned sdist (sha256 ")
    assert msgs[0].endswith(f"it was edited after provisioning\n    fix: undo the edit, or {fix}")
    assert len(msgs) == 2


def test_pin_file_inconsistent(book):
    edit(book / "vllm-pin.toml", 'filename = "vllm-0.1.0.tar.gz"', 'filename = "vllm-0.1.1.tar.gz"')
    msgs = problems(book, diagrams=False)
    assert len(msgs) == 2 and msgs[0].startswith("README.md:8: the vllm-pin block is stale")  # the block names the file too
    assert msgs[1] == ("vllm-pin.toml:9: [vllm.sdist] filename 'vllm-0.1.1.tar.gz' does not match version '0.1.0' "
                       "(expected 'vllm-0.1.0.tar.gz')\n    fix: move the pin with make refresh TO=<release>, never by hand")


def test_links_and_labels(book):
    md = book / "source/01-part/04-blocks.md"
    edit(md, "## 小结\n", "## 小结\n\n{doc}`03-later`、{doc}`02-nope`、{ref}`no-such-label`、[x](../missing.md)、[y](02-cache.md#nowhere)、![i](img.png)\n\n(part-sched)=\n")
    # a planned chapter may be linked and required (the build renders it 编写中); 08-nope is nothing
    edit(md, "prerequisites: [01-part/02-cache]", "prerequisites: [01-part/02-cache, 01-part/03-later, 01-part/08-nope]")
    line = line_no(md, "{doc}`02-nope`")
    dup = line_no(md, "(part-sched)=")
    assert problems(book, diagrams=False) == [
        "source/01-part/04-blocks.md:3: prerequisite '01-part/08-nope' is not a page or a chapter of the book\n"
        "    fix: use the docname of an existing chapter (e.g. 01-overview/00-prerequisites)",
        f"source/01-part/04-blocks.md:{line}: image target 'img.png' does not exist\n"
        "    fix: correct the relative path (relative to this file)",
        f"source/01-part/04-blocks.md:{line}: link fragment #nowhere is not a label of the book\n"
        "    fix: add (nowhere)= in source/01-part/02-cache.md or correct the fragment",
        f"source/01-part/04-blocks.md:{line}: link target '../missing.md' does not exist\n"
        "    fix: correct the relative path (relative to this file)",
        f"source/01-part/04-blocks.md:{line}: {{doc}} target '02-nope' does not exist (looked for source/01-part/02-nope.md)\n"
        "    fix: correct the docname (absolute: /01-overview/00-prerequisites)",
        f"source/01-part/04-blocks.md:{line}: {{ref}} target (no-such-label) is not a label defined anywhere in the book\n"
        "    fix: define it with a line (no-such-label)= before its heading, or correct the name",
        f"source/01-part/04-blocks.md:{dup}: label (part-sched) is already defined at source/01-part/01-sched.md:9\n"
        "    fix: give one of them another name",
    ]


@needs_mermaid
def test_mermaid_syntax_error_points_at_the_md_line(book):
    md = book / "source/01-part/01-sched.md"
    edit(md, "    S --> O[out]\n", "    S --> O[out\n")
    msgs = problems(book)
    assert len(msgs) == 1
    fence = line_no(md, "```{mermaid}")
    assert re.match(rf"source/01-part/01-sched.md:{line_no(md, 'S --> O[out')}: Mermaid diagram \(fence at line "
                    rf"{fence}\) "
                    r"does not parse: Mermaid cannot read this line: it found the end of the diagram where it expected "
                    r"']', .*\n", msgs[0])
    assert "fix: check the line against the Mermaid 11.14.0 syntax" in msgs[0]


@needs_mermaid
def test_mermaid_error_in_a_sequence_diagram(book):
    md = book / "source/01-part/02-cache.md"
    edit(md, "    S->>B: free(block)\n", "    S->>B free(block)\n")
    msgs = problems(book)
    assert len(msgs) == 1 and msgs[0].startswith(
        f"source/01-part/02-cache.md:{line_no(md, 'S->>B free')}: Mermaid diagram (fence at line "
        f"{line_no(md, '```{mermaid}')}) does not parse: Mermaid cannot read this line: it found the end of the line where "
        "it expected a message text (': text')")


def test_node_missing_is_an_error_with_the_install_hint(book, monkeypatch):
    monkeypatch.setattr(mermaid, "node_binary", lambda: None)
    assert problems(book) == [
        f"source/01-part/01-sched.md:{line_no(book / 'source/01-part/01-sched.md', '```{mermaid}')}: node is not installed, so 3 Mermaid diagram(s) cannot be checked\n"
        "    fix: install Node.js (apt-get install nodejs npm) and the pinned Mermaid: make mermaid-js"
    ]


def test_mermaid_package_missing(book, monkeypatch):
    monkeypatch.setattr(mermaid, "node_binary", lambda: "/usr/bin/node")
    (book / "node_modules").unlink(missing_ok=True)
    msgs = problems(book)
    assert len(msgs) == 1
    assert msgs[0].endswith("node_modules/mermaid is missing, so 3 Mermaid diagram(s) cannot be checked\n"
                            "    fix: install Node.js (apt-get install nodejs npm) and the pinned Mermaid: make mermaid-js")


def test_plain_mermaid_fence_is_flagged(book):
    md = book / "source/01-part/04-blocks.md"
    edit(md, "## 小结\n", "## 小结\n\n```mermaid\nflowchart LR\n  A --> B\n```\n")
    assert problems(book, diagrams=False) == [
        f"source/01-part/04-blocks.md:{line_no(md, '```mermaid')}: a ```mermaid fence renders as a code block, not a diagram\n"
        "    fix: write the fence as ```{mermaid}"
    ]


def test_every_problem_has_file_line_and_fix(book):
    edit(book / "source/01-part/01-sched.md", "Scheduler.finish`", "Scheduler.finished`")
    edit(book / "README.md", "**v0.1.0**", "**v9**")
    (book / "source/01-part/04-blocks.md").unlink()
    result = validate.run(book, "full", diagrams=False)
    assert len(result.problems) >= 4
    for p in result.problems:
        assert p.file and p.line >= 1 and p.message and p.fix
        assert re.match(r"^[\w./-]+:\d+: ", p.format())
    assert set(result.by_check()) >= {"anchors", "pin", "curriculum", "profile"}


@needs_mermaid
def test_valid_diagrams_of_every_common_type_parse():
    from sync_helpers import REPO

    diagrams = [
        "flowchart LR\n  A[\"x\"] -- \"t\" --> B{\"y\"}\n  subgraph S\n    C\n  end",
        "sequenceDiagram\n  box API server process\n    participant A\n  end\n  box rgb(1,2,3) T\n    participant B\n  end\n  A->>B: hi\n  B-->>A: ok",
        "classDiagram\n  class A {\n    +int x\n  }\n  A <|-- B",
        "stateDiagram-v2\n  [*] --> A\n  A --> [*]",
        "erDiagram\n  A ||--o{ B : has",
        "gantt\n  title x\n  section s\n  t :a1, 2024-01-01, 1d",
        "pie\n  \"a\": 1",
        "mindmap\n  root\n    a",
        "timeline\n  title t\n  2020 : a",
        "xychart-beta\n  x-axis [a, b]\n  bar [1, 2]",
        "journey\n  title j\n  section s\n    a: 5: me",
        "gitGraph\n  commit",
        "quadrantChart\n  title q",
        "block-beta\n  a b",
        "packet-beta\n  0-15: \"x\"",
        "sankey-beta\n  a,b,1",
    ]
    version, results = mermaid.parse_many(diagrams, REPO / "node_modules")
    assert version == "11.14.0"
    assert [r for r in results if not r[0]] == []


def test_review_notes_with_line_breaks_and_quotes_round_trip(tmp_path):
    """A reviewer's notes may hold line breaks, tabs, quotes and backslashes: the file stays valid TOML."""
    from vllm_book.sync import review

    rec = review.Record(path="01-part/01-sched", status="reviewed", reviewed_commit="a" * 40, reviewed_at="2026-12-01",
                        anchors_checked=True, commands_checked=True, metrics_checked=True, diagrams_checked=True,
                        notes='checked 3 claims.\nFixed: "x" → \\y\tz')
    path = tmp_path / "content-review.toml"
    review.write(path, [rec])
    records, problems = review.load(path)
    assert records.records[0].notes == rec.notes
