"""``scripts/upstream-sync.py`` against a local PEP 503 index, a bare "origin" and a fake ``gh``: the newest
release is found the way provisioning reads the index, one candidate branch and PR are created and then updated
in place, a newer release supersedes them, and nothing is ever pushed to main or merged, nor the pin moved."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from ci_helpers import FAKES, REPO, commit_all, git

SCRIPT = REPO / "scripts" / "upstream-sync.py"
PIN = """[vllm]
version = "0.26.0"
commit = "f2654939e69b4069b13977e9aef3e31d4dcaf051"
repository = "https://github.com/vllm-project/vllm"

[vllm.sdist]
filename = "vllm-0.26.0.tar.gz"
sha256 = "23e9fa19d7e20ce7dcc1c074d41503e2116d23f19e688f5d5ea91b741f958502"
index = "http://127.0.0.1:9/unreachable/simple/vllm/"
"""
FILES = ["vllm-0.9.9.tar.gz", "vllm-0.26.0.tar.gz", "vllm-0.27.0.tar.gz", "vllm-0.27.1.tar.gz",
         "vllm-0.28.0rc1.tar.gz", "vllm-0.28.0.dev3.tar.gz", "vllm-0.29.0-cp38-abi3-manylinux1_x86_64.whl"]
YANKED = ["vllm-0.28.0.tar.gz"]


def load_script():
    spec = importlib.util.spec_from_file_location("upstream_sync", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def index(tmp_path):
    """``/simple/vllm/`` on 127.0.0.1; ``add(name)`` publishes another file."""
    www = tmp_path / "www"
    page = www / "simple" / "vllm"
    page.mkdir(parents=True)
    files = list(FILES)

    def render():
        links = [f'<a href="../../files/{n}#sha256={"0" * 64}">{n}</a><br/>' for n in files]
        links += [f'<a href="../../files/{n}#sha256={"0" * 64}" data-yanked="broken">{n}</a><br/>' for n in YANKED]
        (page / "index.html").write_text("<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")

    render()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(www), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    class Index:
        url = f"http://127.0.0.1:{server.server_address[1]}/simple/vllm/"

        @staticmethod
        def add(name):
            files.append(name)
            render()

    yield Index
    server.shutdown()


@pytest.fixture
def repo(tmp_path):
    """A checkout on main whose "origin" is a local bare repository that logs every ref pushed to it and rejects main."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "vllm-pin.toml").write_text(PIN)
    (work / "docs").mkdir()
    (work / "docs" / "source-sync.md").write_text("# sync\n")
    commit_all(work)
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    pushes = tmp_path / "pushes.log"
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(f'#!/bin/sh\nwhile read old new ref; do echo "$ref $new" >> "{pushes}"; '
                    'if [ "$ref" = refs/heads/main ]; then echo "main is protected" >&2; exit 1; fi; done\n')
    hook.chmod(0o755)
    return {"work": work, "origin": origin, "pushes": pushes, "main": git(work, "rev-parse", "HEAD").strip()}


def env(tmp_path, index, *, gh=True, **extra):
    e = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if gh and not (bin_dir / "gh").exists():
        (bin_dir / "gh").symlink_to(FAKES / "gh")
    e.update({"PATH": os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]),
              "VLLM_BOOK_INDEX_URL": index.url, "MAKE": str(FAKES / "fake-make"),
              "FAKE_GH_LOG": str(tmp_path / "gh.log"), "FAKE_GH_STATE": str(tmp_path / "gh-state.json"),
              "FAKE_MAKE_LOG": str(tmp_path / "make.log")})
    e.update(extra)
    return e


def sync(repo, e, *args):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(repo["work"]), *args], env=e,
                          capture_output=True, text=True, timeout=120)


def gh_calls(tmp_path):
    p = tmp_path / "gh.log"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def prs(tmp_path):
    return json.loads((tmp_path / "gh-state.json").read_text())


def remote_ref(repo, branch):
    out = git(repo["work"], "ls-remote", str(repo["origin"]), f"refs/heads/{branch}").split()
    return out[0] if out else None


def pushed(repo):
    return repo["pushes"].read_text().splitlines() if repo["pushes"].exists() else []


def test_release_discovery_reads_the_pep503_index(index):
    mod = load_script()
    assert sorted(mod.releases(index.url)) == ["0.26.0", "0.27.0", "0.27.1", "0.9.9"]  # no rc/dev/yanked/wheel-only
    assert mod.newest(index.url) == "0.27.1"


def test_candidate_pr_created_then_updated_in_place_never_main(repo, index, tmp_path):
    e = env(tmp_path, index)
    proc = sync(repo, e)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    branch = "sync/vllm-0.27.1"
    head1 = remote_ref(repo, branch)
    assert head1 and pushed(repo) == [f"refs/heads/{branch} {head1}"]
    # the branch holds the report on top of main, and the pin is untouched
    assert git(repo["work"], "rev-parse", f"{head1}^").strip() == repo["main"]
    assert git(repo["work"], "diff", "--name-only", repo["main"], head1).split() == [
        "docs/impact-0.26.0-to-0.27.1.json", "docs/impact-0.26.0-to-0.27.1.md"]
    assert git(repo["work"], "show", f"{head1}:vllm-pin.toml") == PIN
    assert json.loads((tmp_path / "make.log").read_text().splitlines()[0]) == ["impact", "TO=0.27.1"]
    # one PR, from the branch into main, listing the affected chapter
    (pr,) = prs(tmp_path)
    assert (pr["head"], pr["base"], pr["state"]) == (branch, "main", "open")
    assert "v0.26.0" in pr["title"] and "v0.27.1" in pr["title"]
    assert "`01-part/01-sched` 调度: 3 reason(s)" in pr["body"] and "01-part/02-cache" not in pr["body"]
    assert "| 1 | 10 | 3 | 1 | 0 | 1 |" in pr["body"]  # cited, unchanged, changed, moved, removed, broken anchors
    # the checkout is back on main, unchanged
    assert git(repo["work"], "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(repo["work"], "rev-parse", "main").strip() == repo["main"]

    # again, same report: no commit, no push, the same PR edited
    proc = sync(repo, e)
    assert proc.returncode == 0, proc.stderr
    assert "the report is unchanged" in proc.stdout
    assert remote_ref(repo, branch) == head1 and len(pushed(repo)) == 1
    assert [c[:2] for c in gh_calls(tmp_path)] == [["pr", "list"], ["pr", "create"], ["pr", "list"], ["pr", "edit"]]
    assert len(prs(tmp_path)) == 1

    # a maintainer pushed a fix to the candidate branch; the report then changes: both kept, fast-forward only
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", branch, str(repo["origin"]), str(other)], check=True)
    (other / "docs" / "notes.md").write_text("fixing chapter 01\n")
    human = commit_all(other, "fix chapter 01 for 0.27.1")
    git(other, "push", "-q", "origin", branch)
    proc = sync(repo, {**e, "FAKE_IMPACT_CHANGED": "5"})
    assert proc.returncode == 0, proc.stderr
    head3 = remote_ref(repo, branch)
    assert git(repo["work"], "rev-parse", f"{head3}^").strip() == human
    (pr,) = prs(tmp_path)
    assert "5 reason(s)" in pr["body"]
    # never main, never a merge, never a force push
    assert all(not line.startswith("refs/heads/main") for line in pushed(repo))
    assert remote_ref(repo, "main") == repo["main"]
    assert not any("merge" in c for c in gh_calls(tmp_path))


def test_a_newer_release_supersedes_the_old_candidate(repo, index, tmp_path):
    e = env(tmp_path, index)
    assert sync(repo, e).returncode == 0
    index.add("vllm-0.28.1.tar.gz")
    proc = sync(repo, e)
    assert proc.returncode == 0, proc.stderr
    old, new = prs(tmp_path)
    assert (old["head"], old["state"]) == ("sync/vllm-0.27.1", "closed")
    assert (new["head"], new["state"]) == ("sync/vllm-0.28.1", "open")
    assert ["pr", "close", str(old["number"]), "--comment", "Superseded by the candidate for `sync/vllm-0.28.1`."] in gh_calls(tmp_path)
    assert remote_ref(repo, "sync/vllm-0.27.1") and remote_ref(repo, "sync/vllm-0.28.1")  # branches are not deleted


def test_refuses_when_impact_moves_the_pin_or_the_tree_is_dirty(repo, index, tmp_path):
    proc = sync(repo, env(tmp_path, index, FAKE_IMPACT_MOVES_PIN="1"))
    assert proc.returncode == 2
    assert "make impact changed vllm-pin.toml besides its report; the sync never moves the pin" in proc.stderr
    assert pushed(repo) == [] and remote_ref(repo, "sync/vllm-0.27.1") is None and gh_calls(tmp_path) == []
    git(repo["work"], "checkout", "-q", "--", ".")
    git(repo["work"], "switch", "-q", "main")
    (repo["work"] / "docs" / "source-sync.md").write_text("edited\n")
    proc = sync(repo, env(tmp_path, index))
    assert proc.returncode == 2 and "uncommitted changes" in proc.stderr
    assert pushed(repo) == []


def test_up_to_date_pin_does_nothing(repo, index, tmp_path):
    (repo["work"] / "vllm-pin.toml").write_text(PIN.replace("0.26.0", "0.27.1"))
    commit_all(repo["work"], "pin 0.27.1")
    proc = sync(repo, env(tmp_path, index))
    assert proc.returncode == 0 and "the pin (v0.27.1) is up to date, nothing to do" in proc.stdout
    assert pushed(repo) == [] and gh_calls(tmp_path) == [] and not (tmp_path / "make.log").exists()


def test_without_gh_it_pushes_the_branch_and_prints_the_pr(repo, index, tmp_path):
    proc = sync(repo, env(tmp_path, index, gh=False))
    assert proc.returncode == 0, proc.stderr
    assert "gh is not installed: open a PR from sync/vllm-0.27.1 into main" in proc.stdout
    assert remote_ref(repo, "sync/vllm-0.27.1")


def test_branch_guards_refuse_main_and_the_base():
    mod = load_script()
    assert mod.branch_for("0.27.1", "main") == "sync/vllm-0.27.1"
    for version, base in (("0.27.1", "sync/vllm-0.27.1"), ("../main", "main"), ("", "main")):
        with pytest.raises(SystemExit) as exc:
            mod.branch_for(version, base)
        assert exc.value.code == 2
    for branch in ("main", "master", "release"):
        with pytest.raises(SystemExit):
            mod.push(Path("/nonexistent"), "origin", branch, "release")


def test_on_demand_version_and_dry_run(repo, index, tmp_path):
    e = env(tmp_path, index)
    proc = sync(repo, e, "--version", "0.27.0", "--dry-run")
    assert proc.returncode == 0 and "candidate v0.27.0 → branch sync/vllm-0.27.0" in proc.stdout
    assert pushed(repo) == [] and gh_calls(tmp_path) == [] and not (tmp_path / "make.log").exists()
    proc = sync(repo, e, "--version", "0.28.0")  # yanked
    assert proc.returncode == 1 and "vLLM 0.28.0 has no final, non-yanked sdist on" in proc.stderr
    proc = sync(repo, e, "--version", "0.27.0")
    assert proc.returncode == 0, proc.stderr
    assert remote_ref(repo, "sync/vllm-0.27.0") and [p["head"] for p in prs(tmp_path)] == ["sync/vllm-0.27.0"]
