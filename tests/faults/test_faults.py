"""One test per fault (issue 25, and the faults handled before it): both gates reject it the same way.

Each test injects one fault into a fresh copy of the fault book and asserts,
for ``validate`` **and** the ``-W`` HTML build: a non-zero exit status, the
``file:line`` of the fault, a ``fix:`` line, and no Python traceback (nor
Sphinx's "Extension error" crash report).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from fault_helpers import SHA, Run, needs_mermaid, run_build, run_validate

CHAPTER = "source/01-part/01-sched.md"
SCHED = "vllm/vllm/v1/core/sched/scheduler.py"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def clean(run: Run) -> None:
    assert "Traceback" not in run.output, str(run)
    assert "Extension error" not in run.output and "sphinx-doc/sphinx/issues" not in run.output, str(run)


def rejected(run: Run, where: str, message: str, fix: str) -> str:
    """*run* failed, and one reported problem is at *where* with *message* (regex) and a fix line containing *fix*."""
    assert run.status not in (0, None), str(run)
    clean(run)
    text = run.output
    pattern = re.escape(where) + r": (?:(?:WARNING|ERROR): )?(?P<msg>(?:(?!\n\S).)*" + message + r".*?)\n\s+fix: (?P<fix>[^\n]*)"
    m = re.search(pattern, text, re.S)
    assert m, f"no problem at {where} matching {message!r}:\n{run}"
    assert fix in m.group("fix"), f"fix {m.group('fix')!r} lacks {fix!r}"
    if report := os.environ.get("VLLM_BOOK_FAULT_REPORT"):  # the resolve note's table: what each fault gets
        with open(report, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0], "where": where,
                                "message": " ".join(m.group("msg").split()), "fix": m.group("fix").strip()},
                               ensure_ascii=False) + "\n")
    return m.group("msg")


def both(book: Path, where: str, message: str, fix: str) -> tuple[Run, Run]:
    v, b = run_validate(book), run_build(book)
    rejected(v, where, message, fix)
    rejected(b, where, message, fix)
    return v, b


# --------------------------------------------------------------------------- anchors (handled before issue 25)


def test_clean_book_passes_both(fault_book):
    v, b = run_validate(fault_book), run_build(fault_book)
    assert v.status == 0 and "OK — 0 errors" in v.output, str(v)
    assert b.status == 0, str(b)
    clean(v), clean(b)


def test_missing_path(fault_book):
    edit(fault_book / CHAPTER, "vllm/v1/core/kv_cache_utils.py::hash_block_tokens",
         "vllm/v1/core/kv_cache_util.py::hash_block_tokens")
    both(fault_book, f"{CHAPTER}:14", r"no file vllm/v1/core/kv_cache_util\.py", "vllm/v1/core/kv_cache_utils.py")


def test_missing_symbol(fault_book):
    edit(fault_book / CHAPTER, "::hash_block_tokens`", "::hash_block_token`")
    both(fault_book, f"{CHAPTER}:14", r"no symbol hash_block_token in", "vllm/v1/core/kv_cache_utils.py::hash_block_tokens")


def test_ambiguous_symbol(fault_book):
    edit(fault_book / CHAPTER, "{src}`vllm/v1/core/kv_cache_utils.py::hash_block_tokens`",
         "{src}`vllm/utils/conditional.py::pick_backend`")
    both(fault_book, f"{CHAPTER}:14", r"ambiguous: 2 definitions \(#0 line \d+.*#1 line \d+", "pick_backend#0")


@pytest.mark.parametrize("target", ["../../../etc/passwd", "/etc/passwd"])
def test_path_traversal(fault_book, target):
    edit(fault_book / CHAPTER, "vllm/v1/core/kv_cache_utils.py::hash_block_tokens", target)
    both(fault_book, f"{CHAPTER}:14", r"the path must be relative to the vLLM tree", "docs/anchors.md")


# --------------------------------------------------------------------------- the build passed what validate rejected


@needs_mermaid
def test_unparsable_mermaid(fault_book):
    edit(fault_book / CHAPTER, "    S --> O[out]\n", "    S --> O(out]\n")
    v, b = both(fault_book, f"{CHAPTER}:25", r"Mermaid cannot read this line: it found '\]' where it expected", 'A["f(x)"]')
    assert "SQE" not in v.output + b.output and "Expecting" not in v.output + b.output  # no parser tokens


@needs_mermaid
def test_mermaid_line_after_diagram_front_matter_and_comments(fault_book):
    """Mermaid drops a diagram's front matter, %% comments and blank lines before numbering lines."""
    edit(fault_book / CHAPTER, "```{mermaid}\nflowchart LR\n",
         "```{mermaid}\n---\ntitle: 调度\n---\n%% a comment\n\nflowchart LR\n")
    edit(fault_book / CHAPTER, "    S --> O[out]\n", "    S --> O(out]\n")
    both(fault_book, f"{CHAPTER}:30", r"Mermaid cannot read this line", "mermaid.live")  # 25 + 5 lines


@needs_mermaid
def test_mermaid_line_after_directive_options(fault_book):
    """Options, a blank line, then the diagram: the blank line is dropped by Mermaid, not by the report."""
    edit(fault_book / CHAPTER, "```{mermaid}\nflowchart LR\n", "```{mermaid}\n:caption: 调度流程\n:name: fig-sched\n\nflowchart LR\n")
    edit(fault_book / CHAPTER, "    S --> O[out]\n", "    S --> O(out]\n")
    both(fault_book, f"{CHAPTER}:28", r"Mermaid cannot read this line", "mermaid.live")  # 25 + 3 lines


def test_tree_version_names_another_commit(fault_book):
    edit(fault_book / "vllm/vllm/_version.py", "g1111111aa", "g2222222bb")
    v, b = both(fault_book, "vllm/vllm/_version.py:3", r"built from commit 2222222bb, but vllm-pin\.toml pins " + SHA,
                "rm -rf vllm && make vllm")
    assert "源码树来自" not in b.output  # the build stopped before the browser's landing page


# --------------------------------------------------------------------------- validate passed what the build rejected


def test_focus_matches_nothing(fault_book):
    edit(fault_book / CHAPTER, ":focus: for rid, tokens", ":focus: for request in")
    both(fault_book, f"{CHAPTER}:17", r':focus: no line of .* contains "for request in"', "exactly one line")


def test_emphasize_matches_nothing(fault_book):
    edit(fault_book / CHAPTER, ":emphasize: token_budget -=", ":emphasize: budget +=")
    both(fault_book, f"{CHAPTER}:18", r':emphasize: "budget \+=" matches no shown line', "drop it from :emphasize:")


def test_prerequisites_as_a_string_naming_no_chapter(fault_book):
    edit(fault_book / CHAPTER, "prerequisites: [01-part/02-later]", "prerequisites: 01-part/99-nothing")
    v, b = both(fault_book, f"{CHAPTER}:3", r"prerequisites must be a list of docnames, not the text '01-part/99-nothing'",
                "prerequisites: [01-part/99-nothing]")
    rejected(v, f"{CHAPTER}:3", r"prerequisite '01-part/99-nothing' is not a page or a chapter", "existing chapter")
    rejected(b, f"{CHAPTER}:3", r"prerequisite '01-part/99-nothing' is not a page or a chapter", "existing chapter")


def test_unknown_difficulty(fault_book):
    edit(fault_book / CHAPTER, "difficulty: 入门", "difficulty: 专家")
    both(fault_book, f"{CHAPTER}:4", r"difficulty '专家' is not one of 入门 / 进阶 / 高级", "入门, 进阶, 高级")


def test_chapter_lacks_a_template_section(fault_book):
    edit(fault_book / CHAPTER, "## 下一步\n\n读 {doc}`02-later`。\n", "")
    n = len((fault_book / CHAPTER).read_text(encoding="utf-8").splitlines())
    both(fault_book, f"{CHAPTER}:{n}", r"chapter lacks the section '## 下一步'", "add '## 下一步' at the end")


def test_self_check_with_too_few_questions(fault_book):
    edit(fault_book / CHAPTER, ":::{dropdown} 块哈希在哪里？\n`kv_cache_utils.py`。\n:::\n", "")
    both(fault_book, f"{CHAPTER}:32", r"'## 自检' should hold 3–5 questions with folded answers \(:::\{dropdown\}\), found 2",
         ":::{dropdown}")


@pytest.mark.parametrize("fault", ["front matter", "template"])
def test_incremental_build_repeats_the_failure(fault_book, fault):
    """A second ``make html`` with nothing changed must fail again, not pass on the cached environment."""
    if fault == "front matter":
        edit(fault_book / CHAPTER, "difficulty: 入门", "difficulty: 专家")
        where = f"{CHAPTER}:4"
    else:
        edit(fault_book / CHAPTER, ":::{dropdown} 块哈希在哪里？\n`kv_cache_utils.py`。\n:::\n", "")
        where = f"{CHAPTER}:32"
    for _ in range(2):
        rejected(run_build(fault_book), where, "", "")


# --------------------------------------------------------------------------- the tree's integrity


def test_source_file_edited_after_provisioning(fault_book):
    edit(fault_book / SCHED, "token_budget -= len(hashes)", "token_budget -= 2 * len(hashes)")
    both(fault_book, f"{SCHED}:1", r"differs from the pinned sdist \(size \d+ bytes, the sdist's \d+\)", "undo the edit")


def test_same_size_edit_is_found_by_the_hash(fault_book):
    edit(fault_book / SCHED, "token_budget -= len(hashes)", "token_budget += len(hashes)")
    both(fault_book, f"{SCHED}:1", r"differs from the pinned sdist \(sha256 ", "rm -rf vllm && make vllm")


def test_touched_file_is_rehashed_once_and_accepted(fault_book):
    path = fault_book / SCHED
    os.utime(path, ns=(time.time_ns(), time.time_ns()))
    assert run_validate(fault_book).status == 0
    manifest = (fault_book / "vllm/.vllm-book-manifest.json").read_text()
    assert str(path.stat().st_mtime_ns) in manifest  # sealed: the next pass is cheap again


def test_symlinked_top_level_directory(fault_book, tmp_path):
    outside = tmp_path / "outside"
    (outside / "secret").mkdir(parents=True)
    (outside / "secret" / "leak.cu").write_text("int leaked_secret() { return 42; }\n")
    csrc = fault_book / "vllm" / "csrc"
    import shutil

    shutil.rmtree(csrc)
    csrc.symlink_to(outside)
    v, b = both(fault_book, "vllm/csrc:1", rf"vllm/csrc is a symbolic link to {re.escape(str(outside))}, outside the tree",
                "rm -rf vllm && make vllm")
    assert not list((fault_book / "_build").rglob("leak.cu*"))  # nothing from outside published


def test_symlinked_file_inside_the_tree(fault_book):
    path = fault_book / "vllm/vllm/utils/conditional.py"
    path.unlink()
    path.symlink_to("/etc/hostname")
    both(fault_book, "vllm/vllm/utils/conditional.py:1", r"is a symbolic link to /etc/hostname, outside the tree",
         "rm -rf vllm && make vllm")


def test_nested_symlink_leaving_the_tree(fault_book):
    (fault_book / "vllm/vllm/v1/attention/backends/sneaky").symlink_to("../../../../../..")
    both(fault_book, "vllm/vllm/v1/attention/backends/sneaky:1", r"outside the tree", "rm -rf vllm && make vllm")


# --------------------------------------------------------------------------- unusual files


def _nul(book: Path) -> None:
    data = (book / SCHED).read_bytes()
    (book / SCHED).write_bytes(data.replace(b"token_budget = self", b"token_budget =\0self", 1))


def test_nul_byte_in_a_cited_python_file(fault_book, monkeypatch):
    _nul(fault_book)
    # in the provisioned tree, the manifest names it
    both(fault_book, f"{SCHED}:1", r"differs from the pinned sdist", "undo the edit")
    v = run_validate(fault_book)
    msg = rejected(v, f"{SCHED}:25", r"the index cannot use this file: it contains a NUL byte", "restore the file")
    assert "anchors into it find no symbols" in msg
    rejected(v, f"{CHAPTER}:13", r"could not be indexed \(line 25: it contains a NUL byte", "make vllm")
    # a tree named by hand (no manifest): the index itself reports it, in both gates
    monkeypatch.setenv("VLLM_BOOK_SRC", str(fault_book / "vllm"))
    v, b = run_validate(fault_book), run_build(fault_book)
    for run in (v, b):
        rejected(run, f"{SCHED}:25", r"the index cannot use this file: it contains a NUL byte", "restore the file")
        rejected(run, f"{CHAPTER}:13", r"could not be indexed \(line 25: it contains a NUL byte .*\), so Scheduler\.schedule",
                 "make vllm")
    # the browser shows the text, never "binary, 0 lines"
    page = (fault_book / "_build/html/_src/vllm/v1/core/sched/scheduler.py.html").read_text(encoding="utf-8")
    assert "二进制" not in page and "token_budget =\ufffdself" in page


def test_oversized_source_file_is_named(fault_book, monkeypatch):
    """A file over the index's size limit used to vanish silently ("no file …" for an anchor into it)."""
    import vllm_book.index as index_mod

    monkeypatch.setattr(index_mod, "MAX_BYTES", 1000)
    monkeypatch.setenv("VLLM_BOOK_SRC", str(fault_book / "vllm"))  # the size limit, not the manifest, is under test
    for run in (run_validate(fault_book), run_build(fault_book)):
        rejected(run, f"{SCHED}:1", r"the index cannot use this file: it is 1,769 bytes, over the index's limit of 1,000",
                 "raise MAX_BYTES")
        rejected(run, f"{CHAPTER}:13", r"is in the tree but was not indexed: it is 1,769 bytes", "raise MAX_BYTES")


# --------------------------------------------------------------------------- provisioning: errors, not crash reports


def test_malformed_pin_file(fault_book):
    edit(fault_book / "vllm-pin.toml", 'commit = "', 'commit = ')
    both(fault_book, "vllm-pin.toml:1", r"malformed pin", "git checkout -- vllm-pin.toml")


def test_missing_tree(fault_book):
    import shutil

    shutil.rmtree(fault_book / "vllm")
    (fault_book / "vllm").mkdir()
    both(fault_book, "vllm-pin.toml:5", r"vllm/ is not provisioned \(v0\.1\.0, 1111111aa1 is pinned\)", "make vllm")


def test_provenance_mismatch(fault_book):
    prov = fault_book / "vllm/.vllm-book-provenance.json"
    edit(prov, SHA, "2222222bb2222222222222222222222222222222")
    both(fault_book, "vllm/.vllm-book-provenance.json:1", r"vllm/ was provisioned at another pin: its provenance record says "
         r"v0\.1\.0 2222222bb2 .*vllm-pin\.toml pins v0\.1\.0 1111111aa1", "make vllm")


def test_tampered_sdist_when_provisioning(fault_book, fault_cache, tmp_path, monkeypatch):
    """``make vllm`` (python -m vllm_book.pin) refuses a corrupt archive with both hashes, no traceback."""
    from vllm_book.pin import main as pin_main

    cache = tmp_path / "cache"
    (cache / "sdist").mkdir(parents=True)
    (cache / "sdist/vllm-0.1.0.tar.gz").write_bytes((fault_cache[0] / "sdist/vllm-0.1.0.tar.gz").read_bytes() + b"x")
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(cache))
    import contextlib
    import io
    import shutil

    shutil.rmtree(fault_book / "vllm")
    (fault_book / "vllm").mkdir()
    out = io.StringIO()
    with contextlib.redirect_stderr(out):
        status = pin_main(["provision", "--root", str(fault_book)])
    assert status == 2 and "Traceback" not in out.getvalue()
    assert re.search(r"sha256 mismatch .*\n  expected [0-9a-f]{64}.*\n  got      [0-9a-f]{64}", out.getvalue())
    assert "Fix: delete it" in out.getvalue()


def test_tree_without_manifest_and_tampered_cache(fault_book, fault_cache, tmp_path, monkeypatch):
    (fault_book / "vllm/.vllm-book-manifest.json").unlink()
    cache = tmp_path / "cache"
    (cache / "sdist").mkdir(parents=True)
    (cache / "sdist/vllm-0.1.0.tar.gz").write_bytes(b"not the sdist")
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(cache))
    v, b = both(fault_book, "vllm/.vllm-book-manifest.json:1", r"no manifest and it cannot be rebuilt: the cached "
                r"vllm-0\.1\.0\.tar\.gz is corrupt or has been tampered with: sha256 [0-9a-f]{64}, but vllm-pin\.toml says "
                rf"{fault_cache[1]}", "and run: make vllm")


def test_tree_without_manifest_gets_one_from_the_cache(fault_book):
    """A tree provisioned before manifests existed: the next check writes it from the verified cached sdist."""
    manifest = fault_book / "vllm/.vllm-book-manifest.json"
    manifest.unlink()
    assert run_validate(fault_book).status == 0
    assert manifest.is_file()
    edit(fault_book / SCHED, "token_budget -= len(hashes)", "token_budget -= 2 * len(hashes)")
    rejected(run_build(fault_book), f"{SCHED}:1", r"differs from the pinned sdist", "undo the edit")


def test_tree_without_manifest_and_no_cache(fault_book, tmp_path, monkeypatch):
    (fault_book / "vllm/.vllm-book-manifest.json").unlink()
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(tmp_path / "empty"))
    both(fault_book, "vllm/.vllm-book-manifest.json:1", r"no manifest \(it was provisioned before manifests existed\)",
         "make vllm")


# --------------------------------------------------------------------------- lines and words


def test_malformed_front_matter_points_at_its_line(fault_book):
    edit(fault_book / CHAPTER, "difficulty: 入门", "difficulty: 入门: 很简单")
    both(fault_book, f"{CHAPTER}:4", r"front matter line 4: a second ':' in this line", 'key: "text: more text"')


def test_hostile_source_files_are_named_then_escaped(fault_book, monkeypatch):
    hostile = fault_book / "vllm/vllm/evil.py"
    hostile.write_text('X = "</script><script>alert(1)</script><!--"\n' + "y = 1  # " + "a" * 2_000_000 + "\n")
    t0 = time.perf_counter()
    both(fault_book, "vllm/vllm/evil.py:1", r"is a file that the pinned sdist does not contain", "remove it")
    monkeypatch.setenv("VLLM_BOOK_SRC", str(fault_book / "vllm"))  # a tree named by hand: no manifest to compare
    b = run_build(fault_book)
    assert b.status == 0, str(b)
    page = (fault_book / "_build/html/_src/vllm/evil.py.html").read_text(encoding="utf-8")
    assert "</script><script>alert" not in page and "&lt;/script&gt;" in page
    assert time.perf_counter() - t0 < 60


# --------------------------------------------------------------------------- the real command lines


def test_command_line_exit_status_and_output(fault_book):
    """The in-process runs above call the CLIs' main(); here the real processes, as `make` starts them."""
    import shutil
    import subprocess
    import sys

    shutil.rmtree(fault_book / "vllm")
    (fault_book / "vllm").mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "ext")}
    v = subprocess.run([sys.executable, "-m", "vllm_book.sync", "--root", str(fault_book), "validate"],
                       capture_output=True, text=True, env=env)
    b = subprocess.run([sys.executable, "-m", "sphinx", "-M", "html", "source", "_build", "-c", ".", "-W", "--keep-going"],
                       capture_output=True, text=True, env=env, cwd=fault_book)
    for proc in (v, b):
        run = Run(proc.returncode, proc.stdout + proc.stderr)
        rejected(run, "vllm-pin.toml:5", r"vllm/ is not provisioned", "run: make vllm")
    assert b.returncode == 2
