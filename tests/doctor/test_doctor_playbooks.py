"""Playbooks, plan catalog, skill and README: structure and consistency."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doctor_helpers import DOCTOR, PLAYBOOKS
from vllm_doctor.cli import build_parser
from vllm_doctor.diagnose import CHECKS, QUERIES
from vllm_doctor.plans import CATALOG
from vllm_doctor.playbooks import BY_ID, EXTRA_DOCS
from vllm_doctor.playbooks import PLAYBOOKS as ALL_PLAYBOOKS
from vllm_doctor.rules import RULES, RULES_BY_PLAYBOOK, table_markdown
from vllm_doctor.signals import DIAG

REQUIRED_SECTIONS = ("## 症状", "## 证据查询", "## 可能原因", "## 只读诊断", "## 处置方案", "## 验证", "## 源码依据")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    nxt = text.find("\n## ", start + len(heading))
    return text[start: nxt if nxt != -1 else len(text)]


def test_every_playbook_is_wired_everywhere() -> None:
    ids = {p.id for p in ALL_PLAYBOOKS}
    assert len(ids) == 8
    assert ids == set(CATALOG) == set(QUERIES) == set(CHECKS) == set(RULES_BY_PLAYBOOK)
    assert len(RULES) == len(RULES_BY_PLAYBOOK), "one rule per playbook"
    for r in RULES:
        assert set(r.alternatives) <= ids, f"{r.id}: alternatives must be playbook ids"
        assert r.playbook not in r.alternatives
    for qids in QUERIES.values():
        assert set(qids) <= set(DIAG)


@pytest.mark.parametrize("pid", sorted(BY_ID))
def test_playbook_structure(pid: str) -> None:
    text = (PLAYBOOKS / f"{pid}.md").read_text(encoding="utf-8")
    assert text.startswith("# ") and f"`{pid}`" in text.splitlines()[0]
    for heading in REQUIRED_SECTIONS:
        assert heading in text, f"{pid}.md lacks the section {heading!r}"
    assert "```promql" in _section(text, "## 证据查询"), f"{pid}.md: evidence queries must be PromQL blocks"
    assert RULES_BY_PLAYBOOK[pid].id in text, f"{pid}.md must name its triage rule"
    remediation = _section(text, "## 处置方案")
    options = re.split(r"\n### ", remediation)[1:]
    assert options, f"{pid}.md: no remediation options (### 方案 ...)"
    for opt in options:
        title = opt.splitlines()[0]
        assert "风险" in opt and "回滚" in opt, f"{pid}.md option {title!r} lacks 风险 or 回滚"
    assert "起点" in text, f"{pid}.md must say thresholds are starting points"


@pytest.mark.parametrize("pid", sorted(CATALOG))
def test_plan_steps_are_safe_and_match_the_playbook(pid: str) -> None:
    steps = CATALOG[pid]
    text = (PLAYBOOKS / f"{pid}.md").read_text(encoding="utf-8")
    assert any(s.kind == "read-only" for s in steps), "start with a read-only confirmation"
    assert any(s.kind == "mutating" for s in steps)
    assert len({s.id for s in steps}) == len(steps)
    for s in steps:
        if s.needs_approval:
            assert s.risk.strip() and s.rollback.strip(), f"{pid}/{s.id}: a mutating step needs risk and rollback"
        for ref in s.refs:
            assert ref in text, f"{pid}/{s.id}: {ref} is in the plan but not explained in {pid}.md"


def test_extra_docs_exist() -> None:
    for name in EXTRA_DOCS:
        text = (PLAYBOOKS / name).read_text(encoding="utf-8")
        assert len(text) > 500
    checklist = (PLAYBOOKS / "prelaunch-checklist.md").read_text(encoding="utf-8")
    for pid in BY_ID:
        assert pid in checklist, f"the pre-launch checklist should point at {pid}"


def test_the_package_cannot_execute_anything() -> None:
    forbidden = re.compile(r"\b(subprocess|os\.system|os\.popen|os\.exec\w*|pty|shlex|eval\(|exec\()")
    for path in (DOCTOR / "vllm_doctor").glob("*.py"):
        code = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith("#"))
        hits = forbidden.findall(code)
        assert not hits, f"{path.name} uses {hits}: vllm-doctor must stay read-only"
    options = {o for a in build_parser()._actions for o in a.option_strings}
    assert not any(re.search(r"apply|execute|force|yes", o) for o in options)


def test_only_http_get_is_sent() -> None:
    src = (DOCTOR / "vllm_doctor/promapi.py").read_text(encoding="utf-8") + (
        DOCTOR / "vllm_doctor/sources.py").read_text(encoding="utf-8")
    methods = set(re.findall(r'method="([A-Z]+)"', src))
    assert methods == {"GET"}, f"only GET requests are allowed, found {methods}"
    assert "data=" not in src


def test_readme_embeds_the_current_decision_table() -> None:
    readme = (DOCTOR / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- rules:begin[^>]*-->\n(.*?)<!-- rules:end -->", readme, flags=re.S)
    assert m, "README.md lacks the rules:begin/rules:end markers"
    assert m.group(1) == table_markdown(), "README decision table is stale: paste `vllm-doctor rules`"


def test_skill_front_matter_and_body() -> None:
    text = (DOCTOR / "skill/vllm-doctor/SKILL.md").read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n", text, flags=re.S)
    assert m, "SKILL.md must start with YAML front matter"
    fields = dict(line.split(":", 1) for line in m.group(1).splitlines() if ":" in line)
    assert fields.get("name", "").strip() == "vllm-doctor"
    desc = fields.get("description", "").strip()
    assert 50 < len(desc) <= 1024 and "vLLM" in desc
    body = text[m.end():]
    for cmd in ("vllm-doctor probe", "vllm-doctor triage", "vllm-doctor plan", "vllm-doctor verify"):
        assert cmd in body
    assert "不要执行处置计划" in body


def test_docs_link_to_existing_files() -> None:
    readme = (DOCTOR / "README.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\(([^)#]+)\)", readme):
        if not link.startswith("http"):
            assert (DOCTOR / link).is_file(), f"README links to a missing file: {link}"
    assert Path(DOCTOR / "vllm_doctor/data/thresholds.toml").is_file()
