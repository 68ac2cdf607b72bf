"""``python -m vllm_book.sync``: keep the book true to its pinned vLLM.

::

    validate [--profile contracts|full] [--no-diagrams]     the fail-closed gate (make validate)
    impact --to 0.33.0 [--out docs/impact-….md]               symbol-level upgrade report (make impact)
    refresh --to 0.33.0 [--commit FULLSHA]                    move the pin (make refresh)
    review sync | review mark <docname> [--anchors …]        maintain content-review.toml
    readme [--write]                                         check/rewrite the README pin block
    new-chapter <docname> [--title …]                        start a chapter from the template (make new-chapter)
    readability [docname …] [--warnings] [--json]            per-chapter readability figures (part of validate)
    catalogs [file.po …] [--extra-words FILE]                the translation catalogs' gate (part of validate)

``--root`` (default: the checkout around the working directory) points every command at another
copy of the repository.  Exit status: 0 ok, 1 errors found, 2 could not run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .. import pin as pin_mod


def _root(args) -> Path:
    return Path(args.root).resolve()


def default_root() -> Path:
    """The checkout the command is run in: the nearest directory up from the working directory that holds
    ``vllm-pin.toml`` (so a copied checkout with its own .venv validates itself, not the one the package was
    installed from); the package's own checkout otherwise."""
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "vllm-pin.toml").is_file() and (d / "curriculum.toml").is_file():
            return d
    return pin_mod.REPO_ROOT


def cmd_new_chapter(args) -> int:
    from . import newchapter

    try:
        done = newchapter.create(_root(args), args.docname, title=args.title, level=args.level, hook=args.hook)
    except (newchapter.NewChapterError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(done))
    return 0


def cmd_validate(args) -> int:
    from . import validate

    profile = args.profile or os.environ.get("PROFILE") or "contracts"
    result = validate.run(_root(args), profile, diagrams=not args.no_diagrams)
    print(validate.report(result, _root(args)))
    return 0 if result.ok else 1


def cmd_readability(args) -> int:
    import json

    from . import readability, validate

    result = validate.run(_root(args), "contracts", diagrams=False)
    rows = result.readability
    if args.chapter:
        rows = [f for f in rows if f.docname in args.chapter]
    if args.json:
        print(json.dumps([f.row() for f in rows], ensure_ascii=False, indent=1))
    else:
        print(readability.table(rows))
    if args.warnings:
        for w in result.warnings:
            if not args.chapter or any(w.file.endswith(f"{d}.md") for d in args.chapter):
                print("warning: " + w.format())
    errs = [p for p in result.problems if p.check == "readability"]
    for p in errs:
        print(p.format(), file=sys.stderr if args.json else sys.stdout)
    return 1 if errs else 0



def cmd_impact(args) -> int:
    from . import impact

    root = _root(args)
    try:
        rep = impact.run(root, args.to, out=Path(args.out) if args.out else None, jobs=args.jobs)
    except (impact.ImpactError, pin_mod.ProvisionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(rep.summary_line())
    return 0


def cmd_refresh(args) -> int:
    from . import refresh

    commit = args.commit or os.environ.get("COMMIT") or None
    try:
        out = refresh.run(_root(args), args.to, commit=commit, release=args.release)
    except (refresh.RefreshError, pin_mod.ProvisionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(out)
    return 0


def cmd_review(args) -> int:
    from .. import curriculum as cur_mod
    from . import review
    from .common import REVIEW_FILE

    root = _root(args)
    cur = cur_mod.load(root / "curriculum.toml")
    path = root / REVIEW_FILE
    reviews = None
    if path.exists():
        try:
            reviews, problems = review.load(path)
        except review.ReviewError as exc:
            print(f"{REVIEW_FILE}:{exc.line}: {exc.message}", file=sys.stderr)
            return 2
    if args.action == "sync":
        records, added, orphaned = review.sync_with(reviews, cur.chapters(), path)
        if orphaned and not args.drop_orphans:
            for o in orphaned:
                print(f"{REVIEW_FILE}: record for {o}, which is not in curriculum.toml (kept out; --drop-orphans to confirm)",
                      file=sys.stderr)
            return 1
        review.write(path, records)
        print(f"{REVIEW_FILE}: {len(records)} records ({len(added)} added{', ' + str(len(orphaned)) + ' dropped' if orphaned else ''})")
        return 0
    # mark
    if reviews is None:
        print(f"{REVIEW_FILE} is missing; run: python -m vllm_book.sync review sync", file=sys.stderr)
        return 2
    ch = cur.chapter(args.docname)
    if ch is None or not ch.written:
        print(f"{args.docname} is not a written chapter of curriculum.toml", file=sys.stderr)
        return 2
    pin = pin_mod.load_pin(root)
    checks = {k: True for k, flag in (("anchors_checked", args.anchors), ("commands_checked", args.commands),
                                      ("metrics_checked", args.metrics), ("diagrams_checked", args.diagrams)) if flag}
    try:
        rec = review.mark(reviews.records, args.docname, pin.commit, checks,
                          hardware_runs=args.hardware_run if args.hardware_run else None,
                          method=args.method, author=args.author, reviewer=args.reviewer, notes=args.notes)
    except KeyError:
        print(f"{args.docname} has no record; run: python -m vllm_book.sync review sync", file=sys.stderr)
        return 2
    review.write(path, reviews.records)
    missing = [k for k in review.CHECKS if not getattr(rec, k)]
    print(f"{args.docname}: {rec.status}" + (f" at {pin.short} ({rec.reviewed_at})" if rec.reviewed else f" (still to check: {', '.join(missing)})"))
    return 0


def cmd_readme(args) -> int:
    from . import pinfiles
    from .common import README

    root = _root(args)
    pin = pin_mod.load_pin(root)
    if args.write:
        changed = pinfiles.write_readme(root / README, pin)
        print(f"{README}: vllm-pin block {'rewritten' if changed else 'already up to date'}")
        return 0
    problems = pinfiles.check_readme(root / README, pin)
    for line, msg, fix in problems:
        print(f"{README}:{line}: {msg}\n    fix: {fix}")
    return 1 if problems else 0


def cmd_catalogs(args) -> int:
    from . import catalogs

    root = _root(args)
    extra: frozenset[str] = frozenset()
    if args.extra_words:
        extra, _bad = catalogs.spelling.load_wordlist(Path(args.extra_words))
    per: dict = {}
    problems, fig = catalogs.check(root, [Path(f) for f in args.files] or None, extra, per)
    for p in problems:
        print(p.format())
    for file, f in sorted(per.items()):
        share = f"{f.translated * 100 // f.messages} %" if f.messages else "–"
        print(f"{file}: {f.translated} of {f.messages} translated ({share}), {f.fuzzy} fuzzy")
    print(f"catalogs: {'OK' if not problems else 'FAILED'} — {len(problems)} error(s); {fig.catalogs} catalogs, "
          f"{fig.translated} of {fig.messages} messages translated, {fig.fuzzy} fuzzy")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vllm_book.sync", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=None, help="repository root (default: the checkout around the working directory)")
    sub = ap.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="fail-closed checks: pin, anchors, curriculum, reviews, links, diagrams")
    v.add_argument("--profile", choices=["contracts", "full"], help="full: also every written chapter reviewed at the pin (env PROFILE)")
    v.add_argument("--no-diagrams", action="store_true", help="skip the Mermaid parse (no node)")
    v.set_defaults(func=cmd_validate)

    i = sub.add_parser("impact", help="report what moving the pin to another release does to the book")
    i.add_argument("--to", required=True, help="candidate vLLM release, e.g. 0.33.0")
    i.add_argument("--out", help="output path of the Markdown report (the .json goes beside it); "
                                 "default docs/impact-<from>-to-<to>.md")
    i.add_argument("--jobs", type=int, default=0, help="index worker processes (0 = one per CPU)")
    i.set_defaults(func=cmd_impact)

    r = sub.add_parser("refresh", help="move the pin to another release; marks affected chapters pending")
    r.add_argument("--to", required=True, help="a release (0.33.0) or a full 40-hex commit")
    r.add_argument("--commit", help="the full 40-hex SHA of the release (env COMMIT; make refresh TO=… COMMIT=…)")
    r.add_argument("--release", help="with --to <sha>: the release whose sdist was built from that commit")
    r.set_defaults(func=cmd_refresh)

    rv = sub.add_parser("review", help="maintain content-review.toml")
    rv_sub = rv.add_subparsers(dest="action", required=True)
    s = rv_sub.add_parser("sync", help="one pending record per curriculum chapter (existing ones kept)")
    s.add_argument("--drop-orphans", action="store_true", help="drop records of chapters no longer in the curriculum")
    s.set_defaults(func=cmd_review)
    m = rv_sub.add_parser("mark", help="record a review at the pinned commit (reviewed when all four checks are done)")
    m.add_argument("docname")
    for flag in ("anchors", "commands", "metrics", "diagrams"):
        m.add_argument(f"--{flag}", action="store_true", help=f"{flag} checked")
    m.add_argument("--hardware-run", action="append", metavar="ID", help="id of a recorded GPU run (repeatable)")
    m.add_argument("--method", default="", help='how it was reviewed, e.g. "static review at the pin"')
    m.add_argument("--author", default="", help="who wrote the chapter")
    m.add_argument("--reviewer", default="", help="who reviewed it (must not be the author)")
    m.add_argument("--notes", default="", help="what the review checked and changed")
    m.set_defaults(func=cmd_review)

    nc = sub.add_parser("new-chapter", help="start a chapter from docs/chapter-template.md (make new-chapter)")
    nc.add_argument("docname", help="e.g. 05-distributed/06-topic")
    nc.add_argument("--title", default="", help="the H1 (default: the curriculum title)")
    nc.add_argument("--level", default="进阶", help="入门 / 进阶 / 高级 (a new curriculum record only)")
    nc.add_argument("--hook", default="", help="one line: why read it (a new curriculum record only)")
    nc.set_defaults(func=cmd_new_chapter)

    ry = sub.add_parser("readability", help="per-chapter readability figures and limits (part of validate)")
    ry.add_argument("chapter", nargs="*", help="docnames (default: every written chapter)")
    ry.add_argument("--warnings", action="store_true", help="also list every line anchor with code as link text")
    ry.add_argument("--json", action="store_true", help="the figures as JSON")
    ry.set_defaults(func=cmd_readability)

    ct = sub.add_parser("catalogs", help="the translation catalogs: markup kept, no fuzzy entry, spelling (part of validate)")
    ct.add_argument("files", nargs="*", help=".po files (default: every catalog under locale/)")
    ct.add_argument("--extra-words", help="a draft word list (one word per line) used with locale/en/wordlist.txt")
    ct.set_defaults(func=cmd_catalogs)

    rd = sub.add_parser("readme", help="check (or --write) the README's vllm-pin block")
    rd.add_argument("--write", action="store_true")
    rd.set_defaults(func=cmd_readme)

    args = ap.parse_args(argv)
    if args.root is None:
        args.root = str(default_root())
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
