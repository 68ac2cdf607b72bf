"""``content-review.toml``: the human review state of every chapter (no Sphinx imports).

One ``[[chapter]]`` record per curriculum chapter, in curriculum order::

    [[chapter]]
    path = "01-overview/00-prerequisites"   # the curriculum docname
    status = "pending"                       # pending | reviewed
    reviewed_commit = ""                     # full vLLM SHA the review was done against ("" = never)
    reviewed_at = ""                         # UTC, 2026-12-01T09:30:00Z ("" = never)
    anchors_checked = false                  # every anchor re-read against the source
    commands_checked = false                 # every command run (or marked as not run)
    metrics_checked = false                  # every metric/number re-derived or re-sourced
    diagrams_checked = false                 # every diagram matches the code
    hardware_runs = []                       # ids of recorded GPU runs backing the chapter's numbers

``status = "reviewed"`` requires a commit, a time and all four checks.  A
``pending`` record may keep the commit/time of its last review (``refresh``
keeps them as history).  ``carried_from`` (optional) is written by
``refresh`` when a reviewed chapter is carried to a new pin because nothing
it cites or covers changed: it names the commit the human review was done at.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from datetime import datetime, timezone
from pathlib import Path

from ..curriculum import record_lines
from .common import Problem

STATUSES = ("pending", "reviewed")
CHECKS = ("anchors_checked", "commands_checked", "metrics_checked", "diagrams_checked")
#: fields a record may leave out (older records have none of them)
OPTIONAL = ("method", "author", "reviewer", "notes")
SHA = re.compile(r"[0-9a-f]{40}")
UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")

HEADER = """\
# Review state of every chapter — one [[chapter]] per curriculum.toml record, in reading order.
# Read by `make validate` (records ↔ curriculum; `--profile full` requires every written chapter
# reviewed at the pinned commit) and by the chapter header card (复核).  `make refresh` sets
# affected chapters back to "pending".  Mark a chapter reviewed after re-reading it against the pin:
#   python -m vllm_book.sync review mark <docname> --anchors --commands --metrics --diagrams
# Fields: docs/source-sync.md.
"""


@dataclasses.dataclass
class Record:
    path: str
    status: str = "pending"
    reviewed_commit: str = ""
    reviewed_at: str = ""
    anchors_checked: bool = False
    commands_checked: bool = False
    metrics_checked: bool = False
    diagrams_checked: bool = False
    hardware_runs: list[str] = dataclasses.field(default_factory=list)
    carried_from: str = ""
    #: how the review was done ("static review at the pin"), who wrote and who reviewed, what was checked
    method: str = ""
    author: str = ""
    reviewer: str = ""
    notes: str = ""
    line: int = 0

    @property
    def reviewed(self) -> bool:
        return self.status == "reviewed"

    def reviewed_at_commit(self, commit: str) -> bool:
        return self.reviewed and self.reviewed_commit == commit


@dataclasses.dataclass
class Reviews:
    path: Path
    records: list[Record]

    def get(self, docname: str) -> Record | None:
        return next((r for r in self.records if r.path == docname), None)


class ReviewError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def load(path: Path) -> tuple[Reviews, list[Problem]]:
    """Parse the file; field-level problems are returned (the records are still usable)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ReviewError(int(m.group(1)) if m else 1, f"not valid TOML: {exc}") from None
    lines = iter(record_lines(text, "[[chapter]]"))
    fname = path.name
    problems: list[Problem] = []
    records: list[Record] = []
    unknown_top = set(data) - {"chapter"}
    for key in sorted(unknown_top):
        problems.append(Problem(fname, 1, f"unknown top-level key {key!r}", "only [[chapter]] records belong here", "reviews"))
    fields = {f.name: f for f in dataclasses.fields(Record) if f.name != "line"}
    for raw in data.get("chapter", []):
        line = next(lines, 0)
        if not isinstance(raw.get("path"), str) or not raw.get("path"):
            problems.append(Problem(fname, line, "record without a path", 'add path = "<curriculum docname>"', "reviews"))
            continue
        rec = Record(path=raw["path"], line=line)
        for key, value in raw.items():
            if key == "path":
                continue
            if key not in fields:
                problems.append(Problem(fname, line, f"{rec.path}: unknown field {key!r}",
                                        f"use only {', '.join(k for k in fields if k != 'path')}", "reviews"))
                continue
            expected = bool if key in CHECKS else (list if key == "hardware_runs" else str)
            if not isinstance(value, expected):
                problems.append(Problem(fname, line, f"{rec.path}: {key} must be a {expected.__name__}, got {value!r}",
                                        f"write {key} = {'false' if expected is bool else '[]' if expected is list else chr(34) * 2}", "reviews"))
                continue
            setattr(rec, key, value)
        missing = [k for k in fields if k not in raw and k not in ("path", "carried_from", *OPTIONAL)]
        if missing:
            problems.append(Problem(fname, line, f"{rec.path}: record lacks {', '.join(missing)}",
                                    "write every field (python -m vllm_book.sync review sync rewrites the file with all of them)",
                                    "reviews"))
        problems.extend(_check_record(fname, rec))
        records.append(rec)
    return Reviews(path, records), problems


def _check_record(fname: str, r: Record) -> list[Problem]:
    out = []

    def bad(msg: str, fix: str) -> None:
        out.append(Problem(fname, r.line, f"{r.path}: {msg}", fix, "reviews"))

    if r.status not in STATUSES:
        bad(f"status {r.status!r} is not one of {', '.join(STATUSES)}", 'set status = "pending" or "reviewed"')
    if r.reviewed_commit and not SHA.fullmatch(r.reviewed_commit):
        bad(f"reviewed_commit {r.reviewed_commit!r} is not a full 40-hex SHA", "write the full commit the review was done against")
    if r.reviewed_at and not UTC.fullmatch(r.reviewed_at):
        bad(f"reviewed_at {r.reviewed_at!r} is not a UTC time like 2026-12-01T09:30:00Z", "write it as YYYY-MM-DDTHH:MM:SSZ")
    if r.carried_from and not SHA.fullmatch(r.carried_from):
        bad(f"carried_from {r.carried_from!r} is not a full 40-hex SHA", "remove it (refresh writes it)")
    for run in r.hardware_runs:
        if not isinstance(run, str) or not run.strip():
            bad(f"hardware_runs holds {run!r}; ids are non-empty strings", "list the ids of recorded GPU runs, or []")
    if r.status == "reviewed":
        missing = [k for k in CHECKS if not getattr(r, k)]
        if not r.reviewed_commit or not r.reviewed_at:
            bad('status = "reviewed" without reviewed_commit and reviewed_at',
                f"mark it with: python -m vllm_book.sync review mark {r.path} --anchors --commands --metrics --diagrams")
        if missing:
            bad(f'status = "reviewed" but {", ".join(missing)} = false',
                'finish those checks, or set status = "pending"')
        if r.reviewer and r.reviewer == r.author:
            bad(f"reviewer {r.reviewer!r} is also the author; a review must be independent",
                "have someone who did not write the chapter review it, and record them as reviewer")
    return out


def _toml_str(s: str) -> str:
    """A TOML basic string: JSON's escapes (\\" \\\\ \\n \\t \\uXXXX …) are TOML's, so a note with a line
    break or a tab stays one valid line."""
    import json

    return json.dumps(s, ensure_ascii=False)


def dumps(records: list[Record]) -> str:
    out = [HEADER]
    for r in records:
        out.append("[[chapter]]")
        out.append(f"path = {_toml_str(r.path)}")
        out.append(f"status = {_toml_str(r.status)}")
        out.append(f"reviewed_commit = {_toml_str(r.reviewed_commit)}")
        out.append(f"reviewed_at = {_toml_str(r.reviewed_at)}")
        for k in CHECKS:
            out.append(f"{k} = {'true' if getattr(r, k) else 'false'}")
        out.append("hardware_runs = [" + ", ".join(_toml_str(x) for x in r.hardware_runs) + "]")
        if r.carried_from:
            out.append(f"carried_from = {_toml_str(r.carried_from)}")
        for k in OPTIONAL:
            if getattr(r, k):
                out.append(f"{k} = {_toml_str(getattr(r, k))}")
        out.append("")
    return "\n".join(out)


def write(path: Path, records: list[Record]) -> None:
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(dumps(records), encoding="utf-8")
    tmp.replace(path)


def check_against(reviews: Reviews, chapters, pin_commit: str, *, full: bool, curriculum_name: str) -> list[Problem]:
    """Records ↔ curriculum one-to-one; with *full*, every written chapter reviewed at the pin."""
    fname = reviews.path.name
    out: list[Problem] = []
    by_path: dict[str, Record] = {}
    for r in reviews.records:
        if r.path in by_path:
            out.append(Problem(fname, r.line, f"{r.path} has two records (also line {by_path[r.path].line})",
                               "delete one of them", "reviews"))
            continue
        by_path[r.path] = r
    known = {c.path for c in chapters}
    for r in reviews.records:
        if r.path not in known:
            out.append(Problem(fname, r.line, f"record for {r.path}, which is not a chapter in {curriculum_name}",
                               f"remove the record, or add the chapter to {curriculum_name}", "reviews"))
    for c in chapters:
        r = by_path.get(c.path)
        if r is None:
            out.append(Problem(curriculum_name, c.line, f"{c.path} has no record in {fname}",
                               "run: python -m vllm_book.sync review sync", "reviews"))
            continue
        if r.reviewed and not c.written:
            out.append(Problem(fname, r.line, f'{c.path} is "reviewed" but its chapter is not written (status = "{c.status}")',
                               'set status = "pending"', "reviews"))
        if full and c.written and not r.reviewed_at_commit(pin_commit):
            if r.reviewed:
                why = f"it was reviewed at {r.reviewed_commit[:10]}, not at the pinned {pin_commit[:10]}"
            else:
                why = "its review is pending"
            out.append(Problem(fname, r.line, f"profile full: written chapter {c.path} is not reviewed at the pinned commit ({why})",
                               f"re-read it against the pinned tree, then: python -m vllm_book.sync review mark {c.path} "
                               "--anchors --commands --metrics --diagrams", "profile"))
    return out


def sync_with(reviews: Reviews | None, chapters, path: Path) -> tuple[list[Record], list[str], list[str]]:
    """Records in curriculum order: existing ones kept, missing ones added as pending.

    Returns (records, added, orphaned) — orphaned records (no chapter) are dropped.
    """
    existing = {r.path: r for r in (reviews.records if reviews else [])}
    out, added = [], []
    for c in chapters:
        r = existing.pop(c.path, None)
        if r is None:
            r = Record(path=c.path)
            added.append(c.path)
        out.append(r)
    return out, added, sorted(existing)


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def mark(records: list[Record], docname: str, commit: str, checks: dict[str, bool], *, when: str | None = None,
         hardware_runs: list[str] | None = None, **about: str) -> Record:
    r = next((x for x in records if x.path == docname), None)
    if r is None:
        raise KeyError(docname)
    for k, v in checks.items():
        setattr(r, k, v)
    if hardware_runs is not None:
        r.hardware_runs = list(hardware_runs)
    for k in OPTIONAL:
        if about.get(k):
            setattr(r, k, about[k])
    if all(getattr(r, k) for k in CHECKS):
        r.status = "reviewed"
        r.reviewed_commit = commit
        r.reviewed_at = when or now_utc()
        r.carried_from = ""
    else:
        r.status = "pending"
    return r
