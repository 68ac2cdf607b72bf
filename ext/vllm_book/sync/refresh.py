"""``make refresh TO=<release> COMMIT=<full sha>``: move the pin, then tell a human what to re-read.

Steps (all or nothing up to the pin move; the working tree must be clean):

1. resolve the target: the release's sdist from the index (sha256 published
   there) and its commit.  An sdist records only an *abbreviated* commit
   (``vllm/_version.py``: ``g4ba787ec9``), but the pin needs the full SHA.
   It comes from, in order: ``--commit``/``COMMIT=``; the initialised
   submodule (``git -C vllm rev-parse``); ``git ls-remote`` of the tag
   ``v<release>`` in the pin's repository.  Whichever is used must start
   with the sdist's abbreviated id, else the refresh stops.  ``TO=<full
   sha>`` is accepted with ``--release`` naming the release built from it
   (the book always provisions from a release sdist when the submodule is
   not initialised).
2. compare both trees (:mod:`.impact`);
3. rewrite ``vllm-pin.toml``, the submodule gitlink
   (``git update-index --cacheinfo 160000,<sha>,vllm``) and the README
   block; re-provision ``vllm/``;
4. re-resolve every anchor against the new tree;
5. set the review of every affected chapter (a cited target changed,
   moved, removed or no longer resolving, or a file of its
   ``source_areas`` changed) to ``pending``; carry unaffected reviewed
   chapters to the new commit (``carried_from`` keeps the commit of the
   human review);
6. write ``docs/refresh-<from>-to-<to>.md`` (the checklist) and
   ``docs/impact-<from>-to-<to>.md/.json``.

Nothing is committed; ``git diff`` shows everything it did.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .. import curriculum as cur_mod
from .. import pin as pin_mod
from ..anchors.resolve import AnchorError, resolve
from . import impact, pinfiles, review, trees
from .common import REVIEW_FILE, build_tree_index, git, index_cache, log

SHA = re.compile(r"^[0-9a-f]{40}$")


class RefreshError(RuntimeError):
    pass


def dirty_lines(root: Path) -> list[str]:
    """``git status --porcelain`` lines that make the tree dirty (untracked files under vllm/ do not)."""
    try:
        out = git(root, "status", "--porcelain")
    except (RuntimeError, OSError) as exc:
        raise RefreshError(f"{root} is not a git checkout ({exc}); refresh edits tracked files and must run in one") from None
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return [ln for ln in lines if not (ln.startswith("?? ") and ln[3:].startswith(pin_mod.TREE_DIR + "/"))]


def _ls_remote_tag(repository: str, version: str, timeout: float = 30) -> str | None:
    tag = f"refs/tags/v{version}"
    try:
        out = subprocess.run(["git", "ls-remote", repository, tag, tag + "^{}"], capture_output=True, text=True,
                             timeout=timeout, env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    refs = dict(reversed(line.split("\t", 1)) for line in out.stdout.splitlines() if "\t" in line)
    return refs.get(tag + "^{}") or refs.get(tag)


def _submodule_sha(root: Path, abbrev: str) -> str | None:
    tree = root / pin_mod.TREE_DIR
    if not (tree / ".git").exists():
        return None
    try:
        return git(tree, "rev-parse", "--verify", "--quiet", f"{abbrev}^{{commit}}").strip() or None
    except RuntimeError:
        return None


def resolve_commit(root: Path, pin: pin_mod.Pin, version: str, abbrev: str, given: str | None) -> tuple[str, str]:
    """(full SHA, how it was obtained) for release *version* whose sdist says *abbrev*."""
    hint = (f"  The sdist of v{version} records only the abbreviated commit {abbrev}; the pin needs the full SHA.\n"
            f"  Get it with: git ls-remote {pin.repository} 'refs/tags/v{version}^{{}}'\n"
            f"  (or open {pin.repository}/commit/{abbrev}), then run:\n"
            f"    make refresh TO={version} COMMIT=<full 40-hex sha>")
    if given:
        given = given.strip().lower()
        if not SHA.match(given):
            raise RefreshError(f"--commit {given!r} is not a full 40-hex SHA.\n{hint}")
        if not given.startswith(abbrev):
            raise RefreshError(f"--commit {given} does not start with {abbrev}, the commit vllm-{version}.tar.gz was built from.\n"
                               f"  Fix: pass the commit of v{version} (git ls-remote {pin.repository} 'refs/tags/v{version}^{{}}').")
        return given, "given"
    sha = _submodule_sha(root, abbrev)
    if sha and sha.startswith(abbrev):
        return sha, "submodule"
    sha = _ls_remote_tag(pin.repository, version)
    if sha and SHA.match(sha) and sha.startswith(abbrev):
        return sha, f"git ls-remote {pin.repository} v{version}"
    raise RefreshError(f"cannot determine the full commit of v{version} offline.\n{hint}")


def _target(to: str, release: str | None, commit: str | None) -> tuple[str, str | None]:
    to = to.strip()
    if SHA.match(to.lower()):
        if not release:
            raise RefreshError(
                f"TO={to} is a commit; the book provisions vLLM from a release sdist, so name the release built from it:\n"
                f"    python -m vllm_book.sync refresh --to {to} --release <version>\n"
                f"  (a commit that is not a release cannot be pinned: there is no sdist to provision from)")
        if commit and commit.lower() != to.lower():
            raise RefreshError(f"TO={to} and COMMIT={commit} disagree")
        return release.removeprefix("v"), to.lower()
    if re.fullmatch(r"[0-9a-f]{7,39}", to.lower()) and not trees.VERSION.match(to):
        raise RefreshError(f"TO={to} looks like an abbreviated commit; pass a release (TO=0.33.0) and the full SHA (COMMIT=…)")
    return to.removeprefix("v"), commit


def _reprovision(root: Path, pin: pin_mod.Pin) -> str:
    tree = root / pin_mod.TREE_DIR
    if (tree / ".git").exists():
        r = subprocess.run(["git", "-C", str(tree), "checkout", "--quiet", "--detach", pin.commit], capture_output=True, text=True)
        if r.returncode != 0:
            return (f"vllm/ is a git submodule and {pin.short} is not in it yet: run `git -C vllm fetch origin && "
                    f"git submodule update vllm`")
        return f"vllm/ (submodule) checked out at {pin.short}"
    prov = pin_mod.provision(root, quiet=True)
    return f"vllm/ re-provisioned from {pin.sdist_filename} (sha256 {prov.sdist_sha256[:12]}…)"


def run(root: Path, to: str, *, commit: str | None = None, release: str | None = None) -> str:
    root = Path(root).resolve()
    dirty = dirty_lines(root)
    if dirty:
        shown = "\n".join(f"    {ln}" for ln in dirty[:20]) + ("\n    …" if len(dirty) > 20 else "")
        raise RefreshError(f"the working tree is not clean; refresh rewrites tracked files, so commit or stash first:\n{shown}")
    old_pin = pin_mod.load_pin(root)
    rpath = root / REVIEW_FILE
    try:
        reviews, _problems = review.load(rpath)
    except (OSError, review.ReviewError) as exc:
        raise RefreshError(f"cannot read {REVIEW_FILE} ({exc}); fix it first (python -m vllm_book.sync review sync)") from None
    version, commit = _target(to, release, commit)
    cand = trees.release_tree(version, old_pin.index)
    full, how = resolve_commit(root, old_pin, version, cand.commit_abbrev, commit)
    if full == old_pin.commit and version == old_pin.version:
        return f"the pin already is v{version} ({full[:10]}); nothing to do"
    log(f"moving the pin v{old_pin.version} ({old_pin.short}) → v{version} ({full[:10]}; full SHA: {how})")
    old_tree = pin_mod.source_root(root)
    old = build_tree_index(old_tree, index_cache(root))
    new = build_tree_index(cand.path, pin_mod.cache_dir() / "index")
    cur = cur_mod.load(root / "curriculum.toml")
    cited, pages, areas, files, uncovered = impact.compare(root, old, new, from_version=old_pin.version,
                                                           to_version=version, cur=cur)
    rep = impact.Report(old_pin.version, old_pin.commit, old_pin.sdist_sha256, version, cand.commit_abbrev,
                        cand.sdist_sha256, cand.sdist_url, cited, pages, areas, files, uncovered)

    # -- move the pin (the tree was clean: on failure, `git checkout` undoes it)
    try:
        pinfiles.rewrite_pin(old_pin.path, version=version, commit=full, filename=cand.sdist_filename,
                             sha256=cand.sdist_sha256)
        new_pin = pin_mod.load_pin(root)
        git(root, "update-index", "--cacheinfo", f"160000,{full},{pin_mod.TREE_DIR}")
        pinfiles.write_readme(root / "README.md", new_pin)
        tree_note = _reprovision(root, new_pin)
    except (OSError, ValueError, RuntimeError) as exc:
        raise RefreshError(f"moving the pin failed half-way: {exc}\n  Undo: git reset -q -- vllm && "
                           f"git checkout -- {pin_mod.PIN_FILE} README.md && make vllm") from None

    # -- re-resolve every anchor against the re-provisioned tree (this also warms validate's index cache)
    try:
        new = build_tree_index(pin_mod.source_root(root), index_cache(root))
    except pin_mod.ProvisionError:
        pass  # a submodule not yet fetched: the candidate tree has the same content
    uses, _pages = impact.collect_uses(root)
    # candidates come from the classification (it finds moves and renames did-you-mean cannot see)
    candidates = {a.anchor: c.suggestions for c in cited for a in c.anchors}
    quiet = impact.Quiet(new)
    broken: list[tuple[impact.Use, str, list[str]]] = []
    for anchor, us in uses.items():
        try:
            resolve(quiet, anchor)
        except AnchorError as exc:
            sug = list(dict.fromkeys([*exc.suggestions, *candidates.get(anchor, [])]))[:5]
            for u in us:
                broken.append((u, exc.message, sug))
    broken.sort(key=lambda b: (b[0].file, b[0].line))

    # -- reviews
    changed_subjects: dict[str, list[impact.Cited]] = {}
    for c in cited:
        pure_line_move = c.status == "moved" and not c.body_changed and c.new.split(":")[0] == c.old.split(":")[0]
        if (c.status == "unchanged" or pure_line_move) and not c.breaks:
            continue
        for dn in {u.docname for u in c.uses}:
            changed_subjects.setdefault(dn, []).append(c)
    area_by = {a.path: a for a in areas}
    affected, carried = [], []
    for rec in reviews.records:
        a = area_by.get(rec.path)
        hit = bool(changed_subjects.get(rec.path)) or bool(a and a.n_changed)
        if hit:
            affected.append(rec.path)
            rec.status = "pending"
            for k in review.CHECKS:
                setattr(rec, k, False)
            rec.carried_from = ""
        elif rec.reviewed and rec.reviewed_commit == old_pin.commit:
            rec.carried_from = rec.carried_from or old_pin.commit
            rec.reviewed_commit = full
            carried.append(rec.path)
    review.write(rpath, reviews.records)

    # -- reports
    md = root / "docs" / f"impact-{old_pin.version}-to-{version}.md"
    impact.write(rep, md)
    checklist = root / "docs" / f"refresh-{old_pin.version}-to-{version}.md"
    checklist.write_text(render_checklist(rep, cur, full, how, broken, changed_subjects, area_by, affected, carried,
                                          tree_note, md.name), encoding="utf-8")
    return (f"pin moved: v{old_pin.version} ({old_pin.short}) → v{version} ({full[:10]})\n"
            f"  {tree_note}\n"
            f"  {len(broken)} anchor uses no longer resolve; {len(affected)} chapters set to pending; {len(carried)} carried\n"
            f"  checklist: {checklist.relative_to(root)}; impact: {md.relative_to(root)}\n"
            f"  next: fix the anchors, re-read the chapters, `make validate`, `make html`, then commit")


def render_checklist(rep: impact.Report, cur, full: str, how: str, broken, changed_subjects, area_by, affected, carried,
                     tree_note: str, impact_name: str) -> str:
    L: list[str] = []
    a = L.append
    a(f"# Refresh checklist: vLLM v{rep.from_version} → v{rep.to_version}")
    a("")
    a(f"Written by `make refresh TO={rep.to_version}`. The pin moved from `{rep.from_commit}` to `{full}` "
      f"(full SHA from: {how}; sdist `vllm-{rep.to_version}.tar.gz`, sha256 `{rep.to_sha256}`). "
      f"Details of every cited symbol: [{impact_name}]({impact_name}).")
    a("")
    a("What the refresh already did (review with `git diff`): `vllm-pin.toml`, the `vllm` gitlink, the README pin "
      f"block, `{REVIEW_FILE}` (affected chapters set to `pending`); {tree_note}.")
    a("")
    a("## 1. Fix the anchors that no longer resolve")
    a("")
    if not broken:
        a("- [x] every anchor resolves in the new tree.")
    for u, msg, sug in broken:
        s = f" — candidates: {', '.join(f'`{x}`' for x in sug[:3])}" if sug else ""
        a(f"- [ ] `{u.file}:{u.line}` `{u.anchor}`: {msg}{s}")
    a("")
    a("`make validate` fails until this list is done.")
    a("")
    a("## 2. Re-read the affected chapters")
    a("")
    if not affected:
        a("No chapter is affected.")
        a("")
    for dn in affected:
        ch = cur.chapter(dn)
        title = ch.title if ch else dn
        status = ch.status if ch else "?"
        a(f"### `{dn}` — {title} ({status})")
        a("")
        for c in sorted(changed_subjects.get(dn, []), key=lambda c: c.subject):
            lines = sorted({u.line for u in c.uses if u.docname == dn})
            where = ", ".join(str(n) for n in lines)
            a(f"- [ ] `{c.subject}` — {c.status}{' (anchor breaks)' if c.breaks else ''}: {c.detail or 'see the impact report'} "
              f"(cited at lines {where})")
        ar = area_by.get(dn)
        if ar and ar.n_changed:
            files = ar.modified[:8] + ar.added[:4] + ar.removed[:4]
            more = ar.n_changed - len(files)
            a(f"- [ ] source_areas: {impact.plural(ar.n_changed, 'file')} changed (+{len(ar.added)} −{len(ar.removed)} ~{len(ar.modified)}): "
              + ", ".join(f"`{p}`" for p in files) + (f", … {more} more" if more > 0 else ""))
        if ch is not None and ch.written:
            a("- [ ] commands still run, numbers and metric names still hold, diagrams still match the code")
            a(f"- [ ] mark it: `python -m vllm_book.sync review mark {dn} --anchors --commands --metrics --diagrams`")
        a("")
    others = sorted(dn for dn in changed_subjects if cur.chapter(dn) is None)
    if others:
        a("## 3. Other pages citing changed source")
        a("")
        for dn in others:
            subs = ", ".join(f"`{c.subject}` ({c.status})" for c in sorted(changed_subjects[dn], key=lambda c: c.subject))
            a(f"- [ ] `{rep.pages.get(dn, {}).get('file', dn)}`: {subs}")
        a("")
    a("## Carried forward")
    a("")
    if carried:
        a("These chapters were reviewed at the old pin and nothing they cite or cover changed; their review now names "
          "the new commit (`carried_from` keeps the commit of the human review):")
        a("")
        for dn in carried:
            a(f"- `{dn}`")
    else:
        a("None.")
    a("")
    a("## Finally")
    a("")
    a(f"- [ ] `ext/vllm_book/data/vllm-cli-{rep.to_version}.json` is the new release's CLI spec: `make refresh` runs "
      "`make cli-spec` (it installs the release into `.venv-vllm`, about 7 GB); run it yourself after "
      "`SKIP_CLI_SPEC=1` or a refresh without make. Commit it with the pin: validate checks every command line "
      "of the book against it")
    a("- [ ] `make validate` passes (and `make validate PROFILE=full` once every written chapter is re-reviewed)")
    a("- [ ] `make html` builds without warnings")
    a("- [ ] commit the pin move, the anchor fixes and the reviews together")
    a("")
    return "\n".join(L)
