"""``make validate``: the fail-closed gate, without a Sphinx build.

Checks (each error is ``file:line: message`` plus a ``fix:`` line):

pin
    ``vllm-pin.toml`` loads and is self-consistent; the submodule gitlink
    (``git ls-files -s vllm``) and ``.gitmodules`` agree with it; the tree in
    ``vllm/`` is provisioned at it and unchanged since (:func:`vllm_book.tree.check_tree`:
    provenance record or submodule HEAD, ``vllm/_version.py``, the manifest, no
    symlink out of the tree); the README block equals what ``refresh`` writes.
anchors
    every ``{src}`` role and ``src-code`` target in ``source/**/*.md``
    resolves against the index of the pinned tree (same resolver as the
    build); raw ``file.py:123`` lines (and GitHub ``#L`` links) are errors
    unless opted out with the ``no-src-check`` class.
curriculum / reviews
    ``curriculum.toml`` ↔ files on disk ↔ ``content-review.toml`` one to one;
    each written chapter's H1 equals its curriculum title; profile ``full``
    also requires every written chapter reviewed at the pinned commit.
links
    ``{doc}`` targets (or planned chapters, rendered 编写中), relative links and
    images exist; ``{ref}``/``{numref}``
    and ``(#label)`` links name a defined label; labels are unique;
    chapter ``prerequisites`` exist.
front-matter
    every chapter's front matter is valid YAML of the right shape (the header card's checker).
diagrams
    every ``{mermaid}`` diagram parses with the pinned Mermaid.
readability
    per written chapter: source links per 1,000 Chinese characters, the share of prose in code font, and
    line anchors whose quoted code is a word of a Chinese sentence (warnings), against the limits of its
    ``kind`` (see :mod:`.readability`; ``python -m vllm_book.sync readability`` prints the table).
catalogs
    every ``locale/*/LC_MESSAGES`` catalog parses; no entry is fuzzy; each translation keeps its message's
    anchor and link targets, inline code, math and substitutions; English words are in the dictionary or
    ``locale/en/wordlist.txt`` (see :mod:`.catalogs`).
commands / variables / metrics
    every ``vllm …`` / ``python -m vllm.…`` command line (shell blocks and inline code) parses with the
    pinned release's own argument parsers (``ext/vllm_book/data/vllm-cli-<version>.json``, ``make cli-spec``);
    every ``VLLM_*`` name is an environment variable of ``vllm/envs.py`` (or read elsewhere in the tree) and
    every ``vllm:*`` name a metric of the tree (see :mod:`.commands`).

Every check that concerns what the build reads is the build's own function
(``vllm_book.tree``, ``.frontmatter``, ``.template``, ``.anchors.excerpt``,
``.anchors.resolve.index_problems``, ``.sync.mermaid.check_pages``), so the two
gates cannot disagree; ``tests/faults`` holds one test per known fault.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
import time
from pathlib import Path

from .. import curriculum as cur_mod
from .. import frontmatter, template
from .. import pin as pin_mod
from .. import tree as tree_mod
from ..anchors.excerpt import FIX as EXCERPT_FIX
from ..anchors.excerpt import make_excerpt, split_emphasize
from ..anchors.lint import OPT_OUT_CLASS
from ..anchors.resolve import AnchorError, index_problems, resolve
from . import commands, mdscan, mermaid, pinfiles, review
from . import catalogs, evidence, readability
from .common import (README, REVIEW_FILE, SOURCE_DIR, Problem, build_tree_index, chapter_pattern, config_default, git,
                     index_cache, pin_line, rel)

PROFILES = ("contracts", "full")
DOC_SUFFIXES = (".md", ".rst", ".ipynb")


@dataclasses.dataclass
class Result:
    profile: str
    problems: list[Problem]
    stats: dict[str, object]
    seconds: float = 0.0
    warnings: list[Problem] = dataclasses.field(default_factory=list)
    #: per-chapter readability figures
    readability: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def by_check(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.problems:
            out[p.check] = out.get(p.check, 0) + 1
        return dict(sorted(out.items()))


# ---------------------------------------------------------------------------- pin


def check_pin(root: Path) -> tuple[pin_mod.Pin | None, list[Problem]]:
    out: list[Problem] = []
    pf = pin_mod.PIN_FILE
    try:
        pin = pin_mod.load_pin(root)
    except pin_mod.ProvisionError as exc:
        msg = str(exc).split(": ", 1)[-1]
        return None, [Problem(pf, 1, msg, f"restore it: git checkout -- {pf} (change it only with make refresh)", "pin")]

    def bad(file: str, line: int, msg: str, fix: str) -> None:
        out.append(Problem(file, line, msg, fix, "pin"))

    want_file = f"vllm-{pin.version}.tar.gz"
    if pin.sdist_filename != want_file:
        bad(pf, pin_line(root, "filename"), f"[vllm.sdist] filename {pin.sdist_filename!r} does not match version {pin.version!r} (expected {want_file!r})",
            "move the pin with make refresh TO=<release>, never by hand")
    # the submodule gitlink
    try:
        ls = git(root, "ls-files", "-s", "--", pin_mod.TREE_DIR).split()
    except (RuntimeError, OSError) as exc:
        bad(pf, pin_line(root, "commit"), f"cannot read the submodule gitlink ({exc})", "run validate inside the book's git checkout")
        ls = None
    if ls is not None:
        if len(ls) < 2 or ls[0] != "160000":
            bad(".gitmodules", 1, "vllm is not a submodule (gitlink) in the git index",
                f"git update-index --add --cacheinfo 160000,{pin.commit},vllm")
        elif ls[1] != pin.commit:
            bad(pf, pin_line(root, "commit"),
                f"the vllm submodule gitlink is {ls[1]}, but vllm-pin.toml pins {pin.commit}",
                "move both with make refresh TO=<release> (it updates the gitlink), or restore the pin: "
                f"git checkout -- {pf}")
    gm = root / ".gitmodules"
    try:
        gm_text = gm.read_text(encoding="utf-8")
    except OSError:
        gm_text = ""
        bad(".gitmodules", 1, ".gitmodules is missing", "restore it: git checkout -- .gitmodules")
    if gm_text:
        m_path = re.search(r"^\s*path\s*=\s*vllm\s*$", gm_text, re.M)
        m_url = re.search(r"^\s*url\s*=\s*(\S+)\s*$", gm_text, re.M)
        if not m_path:
            bad(".gitmodules", 1, "no submodule with path = vllm", "restore it: git checkout -- .gitmodules")
        elif m_url and m_url.group(1).removesuffix(".git").rstrip("/") != pin.repository:
            line = gm_text[: m_url.start()].count("\n") + 1
            bad(".gitmodules", line, f"submodule url {m_url.group(1)} differs from the pin's repository {pin.repository}",
                "make them name the same repository")
    # the provisioned tree: the build runs the same check (vllm_book.gate) before it reads anything
    try:
        out.extend(tree_mod.check_tree(root, pin, pin_line=pin_line(root, "commit")))
    except pin_mod.ProvisionError as exc:
        bad(pf, pin_line(root, "commit"), str(exc).replace("\n", " "), "run: make vllm")
    # the README block
    readme = root / README
    if readme.is_file():
        for line, msg, fix in pinfiles.check_readme(readme, pin):
            bad(README, line, msg, fix)
    else:
        bad(README, 1, "README.md is missing", "restore it: git checkout -- README.md")
    return pin, out


# ---------------------------------------------------------------------------- curriculum, reviews


def check_structure(root: Path, pin: pin_mod.Pin | None, profile: str) -> tuple[cur_mod.Curriculum | None, list[Problem]]:
    out: list[Problem] = []
    cpath = root / "curriculum.toml"
    source = root / SOURCE_DIR
    try:
        cur = cur_mod.load(cpath)
    except (OSError, cur_mod.CurriculumError) as exc:
        msg = str(exc)
        m = re.match(r"^(.*?):(\d+): (.*)$", msg)
        if m:
            return None, [Problem("curriculum.toml", int(m.group(2)), m.group(3), "fix the record", "curriculum")]
        return None, [Problem("curriculum.toml", 1, msg.split(": ", 1)[-1], "fix the TOML syntax", "curriculum")]
    for file, line, msg in cur_mod.check(cur, source):
        # curriculum.check words its fix after the last "; "
        head, sep, fix = msg.rpartition("; ")
        if not sep:
            head, fix = msg, "use the values listed in the header comment of curriculum.toml"
        out.append(Problem(rel(root, file), line, head, fix, "curriculum"))
    for ch in cur.chapters():
        md = source / f"{ch.path}.md"
        if not (ch.written and md.is_file()):
            continue
        h1 = cur_mod_h1(md)
        if h1 is None:
            out.append(Problem(rel(root, md), 1, "chapter has no H1 (# title)", f"start it with # {ch.title}", "curriculum"))
        elif h1[0] != ch.title:
            out.append(Problem(rel(root, md), h1[1],
                               f"H1 {h1[0]!r} differs from the curriculum title {ch.title!r} (curriculum.toml:{ch.line})",
                               "make them equal (change the H1 or the curriculum title)", "curriculum"))
    rpath = root / REVIEW_FILE
    if not rpath.is_file():
        out.append(Problem(REVIEW_FILE, 1, f"{REVIEW_FILE} is missing", "create it: python -m vllm_book.sync review sync", "reviews"))
        return cur, out
    try:
        reviews, problems = review.load(rpath)
    except review.ReviewError as exc:
        out.append(Problem(REVIEW_FILE, exc.line, exc.message, "fix the TOML syntax", "reviews"))
        return cur, out
    out.extend(problems)
    out.extend(review.check_against(reviews, cur.chapters(), pin.commit if pin else "", full=profile == "full",
                                    curriculum_name="curriculum.toml"))
    return cur, out


def cur_mod_h1(md: Path) -> tuple[str, int] | None:
    """The page's H1 as the scanner sees it (fences, front matter and comments skipped)."""
    return mdscan.scan(md, md.parent).h1


# ---------------------------------------------------------------------------- pages


def _doc_exists(source: Path, docname: str) -> bool:
    return any((source / f"{docname}{s}").is_file() for s in DOC_SUFFIXES)


def _docname(current: str, target: str) -> str:
    t = target.strip()
    for s in DOC_SUFFIXES:
        if t.endswith(s):
            t = t[: -len(s)]
    if t.startswith("/"):
        return posixpath.normpath(t.lstrip("/"))
    return posixpath.normpath(posixpath.join(posixpath.dirname(current), t))


def check_pages(root: Path, pages: list[mdscan.Page], index, planned: dict[str, str] | None = None) -> tuple[list[Problem], dict[str, int]]:
    """*planned*: docname → title of curriculum chapters not written yet; ``{doc}`` links and prerequisites
    may name them (the build renders them as 编写中, see ``toc.planned_reference``)."""
    planned = planned or {}
    out: list[Problem] = []
    source = root / SOURCE_DIR
    labels: dict[str, tuple[str, int]] = {}
    n_anchors = 0
    for page in pages:
        f = rel(root, page.path)
        for label, line in page.labels.items():
            if label in labels and labels[label] != (f, line):
                first = labels[label]
                out.append(Problem(f, line, f"label ({label}) is already defined at {first[0]}:{first[1]}",
                                   "give one of them another name", "links"))
            else:
                labels.setdefault(label, (f, line))
    for page in pages:
        f = rel(root, page.path)
        for line, msg, fix in page.problems:
            out.append(Problem(f, line, msg, fix, "diagrams" if "ermaid" in msg else "links"))
        # front matter: the checks of the build's header card (vllm_book.frontmatter)
        fm_problems = (frontmatter.check_chapter(page.front, lambda dn: _doc_exists(source, dn) or dn in planned)
                       if page.chapter else page.front.problems)
        for line, msg, fix in fm_problems:
            out.append(Problem(f, line, msg, fix, "front-matter"))
        if page.chapter:  # the build's template check (vllm_book.template)
            for line, msg, fix in template.check(page.h2, config_default("vllm_book_chapter_sections"), None,
                                                 page.n_lines or 1):
                out.append(Problem(f, line, msg, fix, "curriculum"))
            for line, msg, fix in template.check_diagrams(len(page.diagrams), page.h1[1] if page.h1 else 1):
                out.append(Problem(f, line, msg, fix, "diagrams"))
        # anchors
        for a in page.anchors:
            n_anchors += 1
            kind = "source excerpt" if a.form == "directive" else "source anchor"
            if index is None:
                continue
            try:
                res = resolve(index, a.target)
            except AnchorError as exc:
                out.append(Problem(f, a.line, f"unresolved {kind} {a.target!r}: {exc.message}", exc.fix, "anchors"))
                continue
            if a.form == "directive":
                out.extend(_excerpt_problems(f, a, index, res))
        for u in page.unmanaged:
            if u.text.startswith("http"):
                msg = f'GitHub line link "{u.text}" rots when the pin moves'
            else:
                msg = f'unmanaged source line "{u.text}"'
            out.append(Problem(f, u.line, msg,
                               f'use {{src}}`path::Symbol` (or a path::Symbol:"text" line anchor); for program output add the class {OPT_OUT_CLASS}',
                               "unmanaged"))
        # links
        for r in page.references:
            if r.kind == "doc":
                dn = _docname(page.docname, r.target)
                # a planned chapter renders as its title + 编写中 (toc.planned_reference), like the build
                if not _doc_exists(source, dn) and dn not in planned:
                    out.append(Problem(f, r.line, f"{{doc}} target {r.target!r} does not exist (looked for source/{dn}.md)",
                                       "correct the docname (absolute: /01-overview/00-prerequisites)", "links"))
            elif r.kind in ("ref", "numref", "label-link"):
                label = r.target.strip().lower()
                if label not in labels and label not in mdscan.BUILTIN_LABELS:
                    what = "{ref}" if r.kind == "ref" else "{numref}" if r.kind == "numref" else "link"
                    out.append(Problem(f, r.line, f"{what} target ({r.target}) is not a label defined anywhere in the book",
                                       f"define it with a line ({r.target})= before its heading, or correct the name", "links"))
            else:
                dest, _, frag = r.target.partition("#")
                base = source if dest.startswith("/") else page.path.parent
                target = (base / dest.lstrip("/")).resolve()
                if r.kind == "link" and not Path(dest).suffix and not target.exists():
                    target = target.with_suffix(".md")
                if not target.exists():
                    out.append(Problem(f, r.line, f"{'image' if r.kind == 'image' else 'link'} target {dest!r} does not exist",
                                       "correct the relative path (relative to this file)", "links"))
                elif frag and target.suffix == ".md" and frag.lower() not in labels:
                    out.append(Problem(f, r.line, f"link fragment #{frag} is not a label of the book",
                                       f"add ({frag})= in {rel(root, target)} or correct the fragment", "links"))
    return out, {"anchors": n_anchors}


def _excerpt_problems(f: str, a: mdscan.Anchor, index, res) -> list[Problem]:
    """The build's excerpt checks (:func:`vllm_book.anchors.excerpt.make_excerpt`), at each option's line."""
    opts = a.options
    max_lines = None
    if "max-lines" in opts:
        value, line = opts["max-lines"]
        if not value.isdigit() or int(value) < 1:
            return [Problem(f, line, f":max-lines: {value!r} is not a positive whole number", "write e.g. :max-lines: 30",
                            "anchors")]
        max_lines = int(value)
    _ex, problems = make_excerpt(index, res, target=a.target, focus=opts.get("focus", ("", 0))[0] or None,
                                 emphasize=split_emphasize(opts.get("emphasize", ("", 0))[0]), max_lines=max_lines)
    return [Problem(f, opts.get(p.option, ("", a.line))[1], p.message, EXCERPT_FIX[p.option], "anchors") for p in problems]


def check_diagrams(root: Path, pages: list[mdscan.Page]) -> tuple[list[Problem], dict[str, object]]:
    """The build runs the same check (:mod:`vllm_book.diagrams`), sharing the parse cache."""
    return mermaid.check_pages(root, pages, node_modules=root / "node_modules", cache_dir=index_cache(root))


# ---------------------------------------------------------------------------- all


def load_index(root: Path, pin: pin_mod.Pin | None):
    """The index of the provisioned tree (``VLLM_BOOK_SRC`` overrides), or ``None`` when it is not provisioned."""
    try:
        tree = pin_mod.source_root(root)
    except pin_mod.ProvisionError:
        return None
    return build_tree_index(tree, index_cache(root))


def run(root: Path, profile: str = "contracts", *, diagrams: bool = True) -> Result:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
    t0 = time.perf_counter()
    root = Path(root).resolve()
    problems: list[Problem] = []
    pin, p = check_pin(root)
    problems += p
    cur, p = check_structure(root, pin, profile)
    problems += p
    problems += evidence.check(root, pin.commit if pin else None, full=profile == "full")  # "GPU 已验证" needs a schema-valid GPU run
    pattern = chapter_pattern()
    source = root / SOURCE_DIR
    pages = mdscan.scan_book(source, lambda dn: bool(pattern.search(dn)))
    index = load_index(root, pin)
    planned = {c.path: c.title for c in cur.chapters() if not c.written} if cur else {}
    p, stats = check_pages(root, pages, index, planned)
    problems += p
    if index is not None:  # the build reports the same list at builder-inited
        problems += index_problems(index, rel(root, index.root))
    if index is None and stats["anchors"]:
        problems.append(Problem(pin_mod.PIN_FILE, pin_line(root, "commit"),
                                f"{stats['anchors']} source anchors were not checked: vllm/ is not provisioned at the pin",
                                "run: make vllm", "anchors"))
    try:
        tree = pin_mod.source_root(root)
    except pin_mod.ProvisionError:
        tree = None
    p, cstats = commands.check_pages(root, pages, tree, pin.version if pin else None, index_cache(root))
    problems += p
    stats.update(cstats)
    kinds = {c.path: cur.kind(c) for c in cur.chapters() if c.written and cur.kind(c) in readability.KINDS} if cur else {}
    p, warnings, figures = readability.check(root, pages, kinds)
    problems += p
    p, cfig = catalogs.check(root, diagrams=diagrams)
    problems += p
    stats.update({"catalogs": cfig.catalogs, "catalog_messages": cfig.messages, "catalog_translated": cfig.translated})
    if diagrams:
        p, dstats = check_diagrams(root, pages)
        problems += p
        stats.update(dstats)
    stats.update({"pages": len(pages), "chapters": len(cur.chapters()) if cur else 0,
                  "written": sum(c.written for c in cur.chapters()) if cur else 0})
    if index is not None:
        stats["index_files"] = len(index.files)
    problems = sorted(set(problems), key=lambda x: (x.file, x.line, x.message))
    return Result(profile, problems, stats, time.perf_counter() - t0, warnings=warnings, readability=figures)


def report(result: Result, root: Path | None = None) -> str:
    """Errors, then warnings (a chapter awaiting its readability revision gets one summary line), then the total."""
    lines = [p.format() for p in result.problems]
    waiting = set(readability.load_baseline(root)[0]) if root is not None else set()
    by_doc: dict[str, int] = {}
    for w in result.warnings:
        doc = next((f.docname for f in result.readability if w.file.endswith(f"{f.docname}.md")), "")
        if doc in waiting:
            by_doc[doc] = by_doc.get(doc, 0) + 1
        else:
            lines.append("warning: " + w.format())
    for doc, n in sorted(by_doc.items()):
        lines.append(f"warning: source/{doc}.md: {n} line anchors with code as link text (awaiting its readability "
                     f"revision; python -m vllm_book.sync readability --warnings lists them)")
    s = result.stats
    checked = (f"{s.get('pages', 0)} pages, {s.get('chapters', 0)} curriculum chapters ({s.get('written', 0)} written), "
               f"{s.get('anchors', 0)} source anchors, {s.get('diagrams', 0)} Mermaid diagrams, "
               f"{s.get('commands', 0)} vllm command lines ({s.get('block_commands', 0)} in shell blocks) + "
               f"{s.get('inline_options', 0)} option runs in prose, "
               f"{s.get('variables', 0)} VLLM_* names, {s.get('metrics', 0)} vllm:* metric names")
    checked += f", readability of {len(result.readability)} chapters ({len(result.warnings)} warnings)"
    checked += (f", {s.get('catalogs', 0)} catalogs ({s.get('catalog_translated', 0)} of "
                f"{s.get('catalog_messages', 0)} messages translated)")
    if result.ok:
        lines.append(f"validate (profile {result.profile}): OK — 0 errors; checked the pin, {checked} in {result.seconds:.1f}s")
    else:
        per = ", ".join(f"{k} {v}" for k, v in result.by_check().items())
        lines.append(f"validate (profile {result.profile}): FAILED — {len(result.problems)} error(s) ({per}); "
                     f"checked the pin, {checked} in {result.seconds:.1f}s")
    return "\n".join(lines)
