"""The book's incident chapter (Part 8, 故障 Runbook) and vllm-doctor's playbooks name the same metrics and thresholds.

The chapter has one section per playbook, opened by the label ``(prod-incident-<playbook id>)=``.  In it:

* every ``vllm:*`` name must be one the playbook names (``doctor/playbooks/<id>.md``) or one its triage rule reads
  (the metrics of the rule's signals, through the derived ratios);
* every threshold the rule uses is written as `` `section.key` = value `` with vllm-doctor's value
  (``vllm_doctor/data/thresholds.toml``); any threshold key it writes with a value must carry that value;
* it points at ``doctor/playbooks/<id>.md`` and shows the triage of the playbook's fixture with ``cli-transcript``.

So a changed threshold or metric in vllm-doctor fails the build until the chapter follows, and the other way round.
"""

from __future__ import annotations

import re
import tomllib

import pytest
from doctor_helpers import DOCTOR, PLAYBOOKS, REPO
from vllm_doctor import evidence, signals
from vllm_doctor.playbooks import PLAYBOOKS as BOOKS
from vllm_doctor.rules import RULES_BY_PLAYBOOK

DOCNAME = "08-production-deployment/07-incident-playbook"
CHAPTER = REPO / "source" / f"{DOCNAME}.md"
LABEL = re.compile(r"^\(prod-incident-(?P<id>[a-z-]+)\)=\s*$")  # sub-labels (prod-incident-<id>-x) are not sections
METRIC = re.compile(r"vllm:[a-z0-9_:]+[a-z0-9]")
SUFFIX = re.compile(r"_(?:total|bucket|sum|count|created)$")
THRESHOLD = re.compile(r"`(?P<key>[a-z0-9_]+\.[a-z0-9_]+)`\s*(?:=|＝|为|：|:)\s*(?P<value>-?\d+(?:\.\d+)?)")


def _written() -> bool:
    from vllm_book import curriculum

    ch = curriculum.load(REPO / "curriculum.toml").chapter(DOCNAME)
    return bool(ch and ch.written)


pytestmark = pytest.mark.skipif(not _written(), reason=f"{DOCNAME} is not written yet (curriculum.toml)")


def _base(name: str) -> str:
    return SUFFIX.sub("", name)


def _thresholds() -> dict[str, float]:
    data = tomllib.loads((DOCTOR / "vllm_doctor" / "data" / "thresholds.toml").read_text(encoding="utf-8"))
    return {f"{s}.{k}": float(v) for s, table in data.items() for k, v in table.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _sections() -> dict[str, tuple[int, str]]:
    """playbook id → (line of its label, text): from ``(prod-incident-<id>)=`` to the next H2 after its own heading."""
    known = {b.id for b in BOOKS}
    out: dict[str, tuple[int, list[str]]] = {}
    current, heading_seen = None, False
    for n, line in enumerate(CHAPTER.read_text(encoding="utf-8").splitlines(), start=1):
        m = LABEL.match(line)
        if m and m.group("id") in known:
            current, heading_seen = m.group("id"), False
            out[current] = (n, [])
            continue
        if current and line.startswith("## "):
            if heading_seen:
                current = None
                continue
            heading_seen = True
        if current:
            out[current][1].append(line)
    return {k: (n, "\n".join(body)) for k, (n, body) in out.items()}


def _rule_metrics(pid: str) -> set[str]:
    rule = RULES_BY_PLAYBOOK[pid]
    ids: set[str] = set()
    for c in rule.conditions():
        ids.add(c.signal)
        if c.signal in evidence.DERIVED:
            ids |= set(re.findall(r"[a-z_]+", evidence.DERIVED[c.signal].formula))
    names = {m.name for sid in ids if sid in signals.GOLDEN_BY_ID for m in signals.GOLDEN_BY_ID[sid].metrics}
    if rule.applies_if_exported is not None:
        names.add(rule.applies_if_exported.name)
    return names


def test_every_playbook_has_its_section():
    assert sorted(_sections()) == sorted(b.id for b in BOOKS)


@pytest.mark.parametrize("pid", [b.id for b in BOOKS])
def test_section_names_the_playbooks_metrics_and_thresholds(pid: str):
    line, text = _sections()[pid]
    where = f"{CHAPTER.relative_to(REPO)}:{line} (section prod-incident-{pid})"
    playbook = (PLAYBOOKS / f"{pid}.md").read_text(encoding="utf-8")
    allowed = {_base(n) for n in METRIC.findall(playbook)} | {_base(n) for n in _rule_metrics(pid)}
    used = {_base(n) for n in METRIC.findall(text)}
    assert used, f"{where}: names no vllm:* metric"
    assert used <= allowed, (f"{where}: names {sorted(used - allowed)}, which doctor/playbooks/{pid}.md and its "
                             f"triage rule do not; they name {sorted(allowed)}")
    values = _thresholds()
    written = {m.group("key"): float(m.group("value")) for m in THRESHOLD.finditer(text) if m.group("key") in values}
    wrong = {k: (v, values[k]) for k, v in written.items() if v != values[k]}
    assert not wrong, f"{where}: thresholds differ from vllm_doctor/data/thresholds.toml (chapter, doctor): {wrong}"
    needed = RULES_BY_PLAYBOOK[pid].thresholds()
    assert needed <= set(written), (f"{where}: does not state {sorted(needed - set(written))}; write each as "
                                    f"`key` = value")
    assert f"doctor/playbooks/{pid}.md" in text, f"{where}: does not point at doctor/playbooks/{pid}.md"
    assert re.search(rf"```\{{cli-transcript\}} vllm-doctor \w+ .*doctor/examples/{pid}\.json", text), (
        f"{where}: shows no cli-transcript of vllm-doctor on doctor/examples/{pid}.json")
