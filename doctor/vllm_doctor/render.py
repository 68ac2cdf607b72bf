"""Terminal text and JSON views of each phase's result."""

from __future__ import annotations

import math
from typing import Any

from vllm_doctor.diagnose import DiagReport
from vllm_doctor.evidence import DERIVED, Evidence
from vllm_doctor.plans import APPROVAL, Plan
from vllm_doctor.playbooks import BY_ID, playbook_ref
from vllm_doctor.rules import CondResult, RuleResult
from vllm_doctor.signals import GOLDEN
from vllm_doctor.sources import ProbeResult
from vllm_doctor.triage import TriageResult
from vllm_doctor.verify import VerifyResult


def fmt(v: float | None) -> str:
    if v is None:
        return "missing"
    if math.isinf(v):
        return "inf"
    if not math.isfinite(v):
        return "NaN"
    return f"{v:.4g}"


# -- text ------------------------------------------------------------------


def probe_text(p: ProbeResult) -> str:
    lines = [f"source: {p.source}", f"reachable: {'yes' if p.reachable else 'NO'}"]
    if p.prometheus_version:
        lines.append(f"prometheus version: {p.prometheus_version}")
    if p.vllm_version or p.vllm_health:
        lines.append(f"vllm: version {p.vllm_version or '?'}, /health {p.vllm_health or '?'}")
    if p.exported is not None:
        lines.append(f"vLLM metrics known to vllm-doctor and present: {len(p.exported)}")
        missing = p.missing_registry()
        if missing:
            lines.append("  absent: " + ", ".join(missing))
        if p.unknown_vllm_series:
            lines.append(f"  other vllm series (not used): {len(p.unknown_vllm_series)}")
    for t in p.targets:
        lines.append("target: " + ", ".join(f"{k}={v}" for k, v in sorted(t.items())))
    if p.cache_config:
        keys = ("block_size", "gpu_memory_utilization", "num_gpu_blocks", "cache_dtype", "enable_prefix_caching")
        lines.append("cache_config: " + ", ".join(f"{k}={p.cache_config[k]}" for k in keys if k in p.cache_config))
    lines += [f"problem: {x}" for x in p.problems]
    return "\n".join(lines)


def signals_text(ev: Evidence) -> str:
    lines = []
    for s in GOLDEN:
        v, why = ev.get(s.id)
        tail = f"   ({why})" if v is None else ""
        opt = " [optional]" if s.optional else ""
        lines.append(f"{s.id:34} {fmt(v):>12} {s.unit:9} {s.title}{opt}{tail}")
    lines.append("-- derived --")
    for d in DERIVED.values():
        v, why = d.fn(ev)
        tail = f"   ({why})" if v is None else ""
        lines.append(f"{d.id:34} {fmt(v):>12} {'':9} {d.title} = {d.formula}{tail}")
    return "\n".join(lines)


def _cond_lines(results: list[CondResult], indent: str = "    ") -> list[str]:
    return [indent + c.text() for c in results]


def triage_text(t: TriageResult, verbose: bool = False) -> str:
    lines = [t.summary()]
    p = t.primary
    if p is not None:
        pb = BY_ID[p.rule.playbook]
        lines += [
            f"playbook: {pb.id} — {pb.title}（{playbook_ref(pb.id)}）",
            f"rule: {p.rule.id} — {p.rule.title}",
            f"confidence: {p.confidence:.2f}",
            "evidence:",
            *_cond_lines(p.conditions),
        ]
        sup = [s for s in p.supporting if s.holds]
        if sup:
            lines += ["supporting evidence:", *_cond_lines(sup)]
        lines.append("alternatives to rule out: " + (", ".join(p.rule.alternatives) or "—"))
        if p.rule.caveat:
            lines.append(f"caveat: {p.rule.caveat}")
    for r in t.results:
        if r is p:
            continue
        if r.status == "match" or (verbose or t.verdict != "incident") and r.status != "no-match":
            lines.append(f"[{r.status}] {r.rule.id} → {r.rule.playbook}" + (f": {r.note}" if r.note else ""))
            lines += [f"    ? {m}" for m in r.missing]
        elif verbose:
            lines.append(f"[{r.status}] {r.rule.id} → {r.rule.playbook}")
    if t.missing_golden and t.verdict != "incident":
        lines.append("missing golden signals:")
        lines += [f"    {k}: {v}" for k, v in sorted(t.missing_golden.items())]
    return "\n".join(lines)


def diag_text(d: DiagReport) -> str:
    lines = [f"deep dive: {d.playbook}"]
    for v in d.values:
        if isinstance(v.value, dict):
            lines.append(f"  {v.title} ({v.id}):")
            lines += [f"      {k}: {fmt(x)}" for k, x in sorted(v.value.items())]
        else:
            lines.append(f"  {v.title} ({v.id}): {fmt(v.value)}" + (f"  ({v.reason})" if v.value is None else ""))
    if d.findings:
        lines.append("findings:")
        lines += [f"  - {f}" for f in d.findings]
    lines.append("read-only checks for a human (vllm-doctor does not run these):")
    for c in d.checks:
        lines += [f"  - {c.title}: {c.command}", f"      look for: {c.look_for}"]
    return "\n".join(lines)


def plan_text(p: Plan) -> str:
    lines = [f"remediation plan for {p.playbook} — NOTHING IS EXECUTED; options, not a script"]
    for i, s in enumerate(p.steps, 1):
        tag = APPROVAL if s.needs_approval else "read-only"
        lines.append(f"{i}. [{tag}] {s.title}")
        lines.append(f"     do: {p.rendered(s)}")
        if s.needs_approval:
            lines += [f"     risk: {s.risk}", f"     rollback: {s.rollback}"]
    return "\n".join(lines)


def verify_text(v: VerifyResult) -> str:
    return v.summary()


# -- JSON ------------------------------------------------------------------


def cond_json(c: CondResult) -> dict[str, Any]:
    return {"condition": c.cond.text(), "holds": c.holds, "value": _num(c.value), "limit": _num(c.limit),
            "reason": c.reason}


def rule_json(r: RuleResult) -> dict[str, Any]:
    return {
        "rule": r.rule.id, "playbook": r.rule.playbook, "status": r.status, "confidence": r.confidence,
        "conditions": [cond_json(c) for c in r.conditions],
        "supporting": [cond_json(c) for c in r.supporting],
        "missing": r.missing, "note": r.note, "alternatives": list(r.rule.alternatives),
    }


def triage_json(t: TriageResult) -> dict[str, Any]:
    p = t.primary
    return {
        "verdict": t.verdict, "summary": t.summary(),
        "playbook": p.rule.playbook if p else None,
        "confidence": p.confidence if p else None,
        "rules": [rule_json(r) for r in t.results],
        "missing_signals": t.missing_golden,
    }


def evidence_json(ev: Evidence) -> dict[str, Any]:
    out: dict[str, Any] = {"signals": {}, "missing": {}, "derived": {}}
    for s in GOLDEN:
        v, why = ev.get(s.id)
        out["signals"][s.id] = _num(v)
        if v is None:
            out["missing"][s.id] = why
    for d in DERIVED.values():
        out["derived"][d.id] = _num(d.fn(ev)[0])
    if ev.sample.queries:
        out["queries"] = ev.sample.queries
    return out


def probe_json(p: ProbeResult) -> dict[str, Any]:
    return {
        "source": p.source, "reachable": p.reachable, "ok": p.ok,
        "prometheus_version": p.prometheus_version, "vllm_version": p.vllm_version, "vllm_health": p.vllm_health,
        "exported": sorted(p.exported) if p.exported is not None else None,
        "absent": p.missing_registry(), "targets": p.targets, "cache_config": p.cache_config,
        "problems": p.problems,
    }


def diag_json(d: DiagReport) -> dict[str, Any]:
    return {
        "playbook": d.playbook,
        "values": [{"id": v.id, "title": v.title, "value": _num(v.value) if not isinstance(v.value, dict)
                    else {k: _num(x) for k, x in v.value.items()}, "reason": v.reason, "query": v.query}
                   for v in d.values],
        "findings": d.findings,
        "checks": [{"title": c.title, "command": c.command, "look_for": c.look_for} for c in d.checks],
    }


def plan_json(p: Plan) -> dict[str, Any]:
    return {
        "playbook": p.playbook, "executed": False,
        "steps": [{"id": s.id, "kind": s.kind, "title": s.title, "action": p.rendered(s),
                   "requires_approval": s.needs_approval, "risk": s.risk, "rollback": s.rollback,
                   "refs": list(s.refs)} for s in p.steps],
    }


def verify_json(v: VerifyResult) -> dict[str, Any]:
    return {"playbook": v.playbook, "outcome": v.outcome, "reason": v.reason,
            "required_clean": v.required_clean, "trailing_clean": v.trailing_clean,
            "samples": [r.status for r in v.per_sample]}


def _num(v: float | None) -> float | str | None:
    if v is None:
        return None
    return v if math.isfinite(v) else ("inf" if math.isinf(v) else "NaN")
