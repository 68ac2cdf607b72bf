#!/usr/bin/env python3
"""Upstream sync: find the newest vLLM release, report its impact, open or update one candidate PR.

Run by ``.github/workflows/upstream-sync.yml`` (weekly and on demand) from a clean checkout of the base branch::

    .venv/bin/python scripts/upstream-sync.py [--version X.Y.Z] [--base main] [--remote origin] [--dry-run]

1. The newest release is read from the pin's PEP 503 index (``vllm_book.pin.index_links``, the reader
   provisioning uses; ``VLLM_BOOK_INDEX_URL`` overrides the index): the highest final version with a
   non-yanked sdist (``make impact`` needs the sdist).  No newer release than the pin: nothing to do.
2. On branch ``sync/vllm-<version>`` — the remote branch when it exists (so commits added to a candidate PR are
   kept), ``<remote>/<base>`` otherwise — it runs ``make impact TO=<version>`` (``$MAKE``; the tests point it at a
   fake) and commits the report, ``docs/impact-<pin>-to-<version>.md`` and ``.json``, when it changed.
   Anything else that changed (the pin above all) makes it stop before committing: it never moves the pin.
3. It pushes ``HEAD:refs/heads/sync/vllm-<version>`` (never with force, never to the base branch or main) and,
   with the ``gh`` CLI, edits the open PR of that branch or creates it; open candidate PRs of older releases are
   closed as superseded.  It never merges and never publishes.

Exit status: 0 done (or nothing to do), 1 ``make impact`` or a git/gh step failed, 2 refused (dirty checkout,
unsafe branch, ``make impact`` changed more than its report).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "ext"))  # run from a checkout without the editable install too

from vllm_book import pin as pin_mod  # noqa: E402

BRANCH_PREFIX = "sync/vllm-"
PROTECTED = ("main", "master")
MARKER = "<!-- vllm-book-upstream-sync -->"
SDIST = re.compile(r"^vllm-(?P<version>[^-]+)\.tar\.gz$")


class Refused(SystemExit):
    def __init__(self, msg: str) -> None:
        print(f"refused: {msg}", file=sys.stderr)
        super().__init__(2)


class Failed(SystemExit):
    def __init__(self, msg: str) -> None:
        print(f"error: {msg}", file=sys.stderr)
        super().__init__(1)


def say(msg: str) -> None:
    print(f"[upstream-sync] {msg}", flush=True)


# ---------------------------------------------------------------------------- releases


def releases(index_url: str) -> dict[str, pin_mod.IndexLink]:
    """Final releases with a non-yanked sdist on the PEP 503 page: version → link."""
    from packaging.version import InvalidVersion, Version

    out: dict[str, pin_mod.IndexLink] = {}
    for link in pin_mod.index_links(index_url, "the vLLM index"):
        m = SDIST.match(link.filename)
        if not m or link.yanked:
            continue
        try:
            v = Version(m["version"])
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease:
            continue
        out[m["version"]] = link
    return out


def newest(index_url: str) -> str | None:
    from packaging.version import Version

    found = releases(index_url)
    return max(found, key=Version) if found else None


# ---------------------------------------------------------------------------- git


def git(root: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise Failed(f"git {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def branch_for(version: str, base: str) -> str:
    """The candidate branch; refuses anything that could be the base branch or main."""
    branch = BRANCH_PREFIX + version
    if branch in (base, *PROTECTED) or not re.fullmatch(r"sync/vllm-[0-9][0-9A-Za-z.+_-]*", branch):
        raise Refused(f"{branch!r} is not a candidate branch name (sync/vllm-<version>)")
    return branch


def push(root: Path, remote: str, branch: str, base: str) -> None:
    if branch in (base, *PROTECTED) or not branch.startswith(BRANCH_PREFIX):
        raise Refused(f"will not push to {branch!r}")
    git(root, "push", remote, f"HEAD:refs/heads/{branch}")


# ---------------------------------------------------------------------------- the PR


def pr_body(report: dict, md_rel: str, json_rel: str, pin_version: str, version: str) -> str:
    counts = report.get("counts", {})
    pages = report.get("pages", {})
    affected = sorted((name, p) for name, p in pages.items() if p.get("reasons"))
    broken = sum(1 for c in report.get("cited", []) for a in c.get("anchors", []) if not a.get("resolves", True))
    lines = [
        MARKER,
        f"Candidate: move the pin from vLLM **v{pin_version}** to **v{version}**. Opened by the upstream-sync workflow; "
        "it never merges and never moves the pin.",
        "",
        f"Report: [`{md_rel}`]({md_rel}) (+ [`{json_rel}`]({json_rel})).",
        "",
        "| cited targets | unchanged | changed | moved | removed | anchors that would break |",
        "|---|---|---|---|---|---|",
        f"| {len(report.get('cited', []))} | {counts.get('unchanged', 0)} | {counts.get('changed', 0)} | "
        f"{counts.get('moved', 0)} | {counts.get('removed', 0)} | {broken} |",
        "",
        f"### Affected pages ({len(affected)})",
        "",
    ]
    for name, p in affected:
        kind = "" if p.get("chapter") else " (not a chapter)"
        lines.append(f"- [ ] `{name}` {p.get('title', '')}{kind}: {len(p['reasons'])} reason(s)")
    if not affected:
        lines.append("None.")
    lines += ["", "### To land it", "",
              f"1. `make refresh TO={version} COMMIT=<full sha of v{version}>` on this branch (moves the pin, marks the "
              "affected chapters pending, regenerates the CLI spec);",
              "2. fix and re-review the chapters above; `make validate PROFILE=full`, `make test`;",
              "3. a maintainer merges. See `docs/source-sync.md`."]
    return "\n".join(lines) + "\n"


def gh(*args: str) -> str:
    proc = subprocess.run(["gh", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise Failed(f"gh {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def upsert_pr(branch: str, base: str, title: str, body: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False, encoding="utf-8") as f:
        f.write(body)
        body_file = f.name
    try:
        prs = json.loads(gh("pr", "list", "--state", "open", "--base", base, "--limit", "100",
                            "--json", "number,headRefName,url") or "[]")
        mine = [p for p in prs if p.get("headRefName") == branch]
        if mine:
            n = str(mine[0]["number"])
            gh("pr", "edit", n, "--title", title, "--body-file", body_file)
            done = f"updated PR #{n}"
        else:
            out = gh("pr", "create", "--base", base, "--head", branch, "--title", title, "--body-file", body_file)
            done = f"opened PR {out.strip()}"
        for p in prs:
            head = p.get("headRefName", "")
            if head.startswith(BRANCH_PREFIX) and head != branch:
                gh("pr", "close", str(p["number"]), "--comment", f"Superseded by the candidate for `{branch}`.")
                done += f"; closed #{p['number']} ({head}) as superseded"
        return done
    finally:
        os.unlink(body_file)


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=str(HERE.parent), help="the book checkout (default: this script's)")
    ap.add_argument("--version", help="a release to report on instead of the newest (on demand)")
    ap.add_argument("--base", default="main", help="the branch the candidate PR targets (default main)")
    ap.add_argument("--remote", default="origin")
    ap.add_argument("--dry-run", action="store_true", help="find the release and print the plan; change nothing")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        pin = pin_mod.load_pin(root)
        version = args.version or newest(pin.index)
        if args.version and args.version not in releases(pin.index):
            raise Failed(f"vLLM {args.version} has no final, non-yanked sdist on {pin.index}")
    except pin_mod.ProvisionError as exc:
        raise Failed(str(exc)) from None
    from packaging.version import Version

    if version is None:
        raise Failed(f"no vLLM release found on {pin.index}")
    if not args.version and Version(version) <= Version(pin.version):
        say(f"newest release on {pin.index} is {version}; the pin (v{pin.version}) is up to date, nothing to do")
        return 0
    branch = branch_for(version, args.base)
    md_rel = f"docs/impact-{pin.version}-to-{version}.md"
    json_rel = f"docs/impact-{pin.version}-to-{version}.json"
    say(f"pin v{pin.version}; candidate v{version} → branch {branch}, report {md_rel}")
    if args.dry_run:
        return 0

    if git(root, "status", "--porcelain", "--untracked-files=all").strip():
        raise Refused(f"{root} has uncommitted changes or untracked files; run the sync from a clean checkout")
    start_ref = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    start_sha = git(root, "rev-parse", "HEAD").strip()
    git(root, "fetch", "--quiet", args.remote, f"+refs/heads/{args.base}:refs/remotes/{args.remote}/{args.base}")
    exists = bool(git(root, "ls-remote", "--heads", args.remote, f"refs/heads/{branch}").strip())
    if exists:
        git(root, "fetch", "--quiet", args.remote, f"+refs/heads/{branch}:refs/remotes/{args.remote}/{branch}")
    start = f"{args.remote}/{branch}" if exists else f"{args.remote}/{args.base}"
    git(root, "switch", "--quiet", "-C", branch, start)
    try:
        pin_before = (root / pin_mod.PIN_FILE).read_bytes()
        make = shlex.split(os.environ.get("MAKE") or "make")
        say(f"$ {shlex.join(make)} impact TO={version}")
        proc = subprocess.run([*make, "impact", f"TO={version}"], cwd=root)
        if proc.returncode != 0:
            raise Failed(f"make impact TO={version} failed (exit {proc.returncode}); nothing committed or pushed")
        changed = [line[3:] for line in git(root, "status", "--porcelain", "--untracked-files=all").splitlines()]
        changed = [c.split(" -> ")[-1].strip('"') for c in changed]
        extra = sorted(c for c in changed if c not in (md_rel, json_rel))
        if (root / pin_mod.PIN_FILE).read_bytes() != pin_before or extra:
            raise Refused(f"make impact changed {', '.join(extra) or pin_mod.PIN_FILE} besides its report; the sync "
                          "never moves the pin or edits the book (nothing committed or pushed)")
        for rel in (md_rel, json_rel):
            if not (root / rel).is_file():
                raise Failed(f"make impact wrote no {rel}")
        git(root, "add", "--", md_rel, json_rel)
        committed = bool(git(root, "diff", "--cached", "--name-only").strip())
        if committed:
            name = os.environ.get("SYNC_GIT_NAME", "vllm-book upstream sync")
            email = os.environ.get("SYNC_GIT_EMAIL", "upstream-sync@users.noreply.github.com")
            git(root, "-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "--quiet", "-m",
                f"upstream sync: impact of vLLM v{version} on the book (pin stays v{pin.version})\n\n"
                f"make impact TO={version} → {md_rel}; the pin is moved only by a reviewed make refresh.")
            say(f"committed the report on {branch}")
        else:
            say("the report is unchanged")
        if committed or not exists:
            push(root, args.remote, branch, args.base)
            say(f"pushed {branch} to {args.remote}")
        report = json.loads((root / json_rel).read_text(encoding="utf-8"))
        title = f"Upstream sync: vLLM v{version} (pin v{pin.version})"
        body = pr_body(report, md_rel, json_rel, pin.version, version)
        if shutil.which("gh") is None:
            say(f"gh is not installed: open a PR from {branch} into {args.base} titled {title!r} with this body:\n{body}")
        else:
            say(upsert_pr(branch, args.base, title, body))
    finally:
        # back where we started (a clean tree only: a refusal leaves its state for inspection)
        if not git(root, "status", "--porcelain", "--untracked-files=no", check=False).strip():
            target = start_ref if start_ref != "HEAD" else start_sha
            git(root, "switch", "--quiet", *(["--detach"] if start_ref == "HEAD" else []), target, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
