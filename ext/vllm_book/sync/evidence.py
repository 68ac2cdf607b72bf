"""The "GPU 已验证" rule of ``make validate``: a GPU claim needs a recorded, schema-valid run (no Sphinx imports).

* Every record under ``evidence/<id>/`` (written by ``scripts/gpu-validation.sh``) must validate: its
  ``result.json`` against ``schemas/gpu-evidence.schema.json`` (the ``jsonschema`` package, a dev dependency),
  its ``id`` equal to the directory name, every file it lists present with the recorded sha256, and no file
  holding something shaped like a token (``hf_…`` and the other shapes the script redacts).
* Every ``hardware_runs`` id of ``content-review.toml`` must name such a record, whose run ``passed``; with
  profile ``full`` (the release gate) also at the pinned vLLM commit — after ``make refresh`` the badge of a
  carried chapter stands on a run of the previous pin until the run is repeated.
* A page whose text contains "GPU 已验证" must be a chapter whose review record lists at least one run.

Each problem is reported at ``file:line`` with a fix, like every other check (check name ``evidence``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .common import REVIEW_FILE, SOURCE_DIR, Problem

BADGE = "GPU 已验证"
EVIDENCE_DIR = "evidence"
SCHEMA_FILE = "schemas/gpu-evidence.schema.json"
RESULT = "result.json"
RUN_SCRIPT = "scripts/gpu-validation.sh"
#: the token shapes scripts/gpu_validation.py redacts (a committed record must hold none of them)
TOKEN_SHAPES = [re.compile(p) for p in (r"\bhf_[A-Za-z0-9]{6,}", r"\bgh[pousr]_[A-Za-z0-9]{20,}",
                                         r"\bgithub_pat_[A-Za-z0-9_]{20,}", r"\bsk-[A-Za-z0-9_-]{20,}",
                                         r"\bAKIA[0-9A-Z]{16}\b", r"\bxox[abprs]-[A-Za-z0-9-]{10,}")]


def _line_of(text: str, needle: str) -> int:
    i = text.find(needle)
    return text.count("\n", 0, i) + 1 if i >= 0 else 1


class _Records:
    """The evidence records, each validated once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / EVIDENCE_DIR
        self._schema = None
        self._validator_error: Problem | None = None
        self.results: dict[str, tuple[dict | None, list[Problem]]] = {}

    def ids(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.name for p in self.dir.iterdir() if p.is_dir())

    def _validator(self):
        if self._schema is None and self._validator_error is None:
            path = self.root / SCHEMA_FILE
            if not path.is_file():  # a checkout without its own copy (the test fixtures): the schema of this code's
                from ..pin import REPO_ROOT

                path = REPO_ROOT / SCHEMA_FILE
            try:
                import jsonschema
            except ImportError:
                self._validator_error = Problem(SCHEMA_FILE, 1, "evidence records cannot be checked: the jsonschema "
                                                "package is not installed", "run: make venv (it is a dev dependency)",
                                                "evidence")
                return None
            try:
                schema = json.loads(path.read_text(encoding="utf-8"))
                jsonschema.Draft202012Validator.check_schema(schema)
            except (OSError, ValueError, jsonschema.SchemaError) as exc:
                self._validator_error = Problem(SCHEMA_FILE, 1, f"the evidence schema is missing or invalid ({exc})",
                                                f"restore it: git checkout -- {SCHEMA_FILE}", "evidence")
                return None
            self._schema = jsonschema.Draft202012Validator(schema)
        return self._schema

    def get(self, run_id: str) -> tuple[dict | None, list[Problem]]:
        if run_id not in self.results:
            self.results[run_id] = self._check(run_id)
        return self.results[run_id]

    def _check(self, run_id: str) -> tuple[dict | None, list[Problem]]:
        d = self.dir / run_id
        rel = f"{EVIDENCE_DIR}/{run_id}/{RESULT}"
        out: list[Problem] = []
        try:
            text = (d / RESULT).read_text(encoding="utf-8")
            data = json.loads(text)
        except OSError:
            return None, [Problem(rel, 1, f"evidence record {run_id} has no {RESULT}",
                                  f"copy the whole directory written by {RUN_SCRIPT} (unpack its archive into {EVIDENCE_DIR}/)",
                                  "evidence")]
        except ValueError as exc:
            return None, [Problem(rel, getattr(exc, "lineno", 1), f"{RESULT} is not valid JSON ({exc})",
                                  f"restore the file written by {RUN_SCRIPT}; records are never edited by hand", "evidence")]
        validator = self._validator()
        if validator is None:
            return None, [self._validator_error] if self._validator_error else []
        for err in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
            where = "/".join(map(str, err.absolute_path)) or "(top level)"
            key = next((str(p) for p in reversed(err.absolute_path) if isinstance(p, str)), "")
            out.append(Problem(rel, _line_of(text, f'"{key}"') if key else 1,
                               f"does not follow {SCHEMA_FILE} at {where}: {err.message}",
                               f"records are written by {RUN_SCRIPT}; re-run it rather than editing the file", "evidence"))
        if out:
            return None, out
        if data["id"] != run_id:
            out.append(Problem(rel, _line_of(text, '"id"'), f"record id {data['id']!r} differs from its directory {run_id!r}",
                               f"keep the directory name the script chose: {EVIDENCE_DIR}/{data['id']}/", "evidence"))
        for f in data["files"]:
            p = d / f["path"]
            if not p.is_file():
                out.append(Problem(rel, _line_of(text, f'"{f["path"]}"'), f"lists {f['path']}, which is missing",
                                   "copy the whole evidence directory (or its archive) unchanged", "evidence"))
            elif hashlib.sha256(p.read_bytes()).hexdigest() != f["sha256"]:
                out.append(Problem(rel, _line_of(text, f'"{f["path"]}"'),
                                   f"{f['path']} does not match its recorded sha256 (edited after the run?)",
                                   "restore the file from the run's archive; evidence is never edited", "evidence"))
        for c in data["commands"]:
            if not (d / c["log"]).is_file():
                out.append(Problem(rel, _line_of(text, f'"{c["log"]}"'), f"command {c['index']} has no log {c['log']}",
                                   "copy the whole evidence directory unchanged", "evidence"))
        for p in sorted(d.rglob("*")):
            if not p.is_file():
                continue
            body = p.read_text(encoding="utf-8", errors="replace")
            for rx in TOKEN_SHAPES:
                m = rx.search(body)
                if m:
                    out.append(Problem(f"{EVIDENCE_DIR}/{run_id}/{p.relative_to(d).as_posix()}", _line_of(body, m.group()),
                                       f"holds a string shaped like a secret token ({m.group()[:4]}…)",
                                       "delete the record, revoke the token, and re-run the GPU validation "
                                       "(its redaction removes such strings)", "evidence"))
                    break
        return data, out


def _scan_badges(root: Path) -> list[tuple[str, str, int]]:
    """(docname, file, line) of every line holding the badge text."""
    out = []
    source = root / SOURCE_DIR
    for md in sorted(source.rglob("*.md")) if source.is_dir() else []:
        if "_build" in md.parts or "node_modules" in md.parts:
            continue
        try:
            text = md.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if BADGE not in text:
            continue
        docname = md.relative_to(source).with_suffix("").as_posix()
        for i, line in enumerate(text.splitlines(), 1):
            if BADGE in line:
                out.append((docname, f"{SOURCE_DIR}/{docname}.md", i))
    return out


def check(root: Path, pin_commit: str | None, *, full: bool = False) -> list[Problem]:
    """All problems of the rule (an empty list when no page claims a GPU run and no record exists)."""
    from . import review

    root = Path(root)
    recs = _Records(root)
    out: list[Problem] = []
    for run_id in recs.ids():
        out += recs.get(run_id)[1]
    records = {}
    rpath = root / REVIEW_FILE
    if rpath.is_file():
        try:
            records = {r.path: r for r in review.load(rpath)[0].records}
        except review.ReviewError:
            records = {}  # the reviews check reports the syntax error
    for rec in records.values():
        for run_id in rec.hardware_runs:
            if not isinstance(run_id, str) or not run_id.strip():
                continue  # the reviews check reports it
            fix_missing = (f"run {RUN_SCRIPT} on a GPU (the gpu-validation workflow), unpack its archive into "
                           f"{EVIDENCE_DIR}/, or remove {run_id!r} from hardware_runs")
            if not (recs.dir / run_id).is_dir():
                out.append(Problem(REVIEW_FILE, rec.line, f"{rec.path}: hardware run {run_id!r} has no evidence record "
                                   f"({EVIDENCE_DIR}/{run_id}/{RESULT})", fix_missing, "evidence"))
                continue
            data, problems = recs.get(run_id)
            if problems or data is None:
                out.append(Problem(REVIEW_FILE, rec.line, f"{rec.path}: hardware run {run_id!r}: its evidence record is "
                                   f"invalid (see {EVIDENCE_DIR}/{run_id}/{RESULT})", "fix or replace the record", "evidence"))
                continue
            if data["status"] != "passed":
                out.append(Problem(REVIEW_FILE, rec.line, f"{rec.path}: hardware run {run_id!r} did not pass "
                                   f"({data.get('status_reason', data['status'])})",
                                   "reference a run that passed, or remove the id", "evidence"))
            if full and pin_commit and data["vllm"]["pin_commit"] != pin_commit:
                out.append(Problem(REVIEW_FILE, rec.line, f"profile full: {rec.path}: hardware run {run_id!r} was recorded at vLLM "
                                   f"{data['vllm']['pin_commit'][:10]}, not at the pinned {pin_commit[:10]}",
                                   "re-run the GPU validation at the pin, or remove the id (and the badge)", "evidence"))
    for docname, file, line in _scan_badges(root):
        rec = records.get(docname)
        if rec is None:
            out.append(Problem(file, line, f'"{BADGE}" on a page without a review record',
                               f"only a chapter can carry the badge; remove it here", "evidence"))
        elif not rec.hardware_runs:
            out.append(Problem(file, line, f'"{BADGE}" but {REVIEW_FILE} lists no hardware run for {docname}',
                               f"record a GPU run ({RUN_SCRIPT}, then: python -m vllm_book.sync review mark {docname} "
                               f"--hardware-run <id> …), or remove the badge", "evidence"))
    return out
