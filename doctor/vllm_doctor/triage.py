"""Phase 3, triage: run the decision table over the evidence and give a verdict.

Verdicts:

* ``incident`` — at least one rule matched; the first in table order is primary;
* ``healthy`` — every rule is a definite no-match (or not applicable) **and** no
  required golden signal is missing;
* ``insufficient-evidence`` — anything else.  The result names what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from vllm_doctor.evidence import Evidence
from vllm_doctor.rules import RULES, RuleResult, evaluate

Verdict = Literal["incident", "healthy", "insufficient-evidence"]


@dataclass
class TriageResult:
    verdict: Verdict
    results: list[RuleResult]
    missing_golden: dict[str, str] = field(default_factory=dict)

    @property
    def matches(self) -> list[RuleResult]:
        return [r for r in self.results if r.status == "match"]

    @property
    def primary(self) -> RuleResult | None:
        m = self.matches
        return m[0] if m else None

    @property
    def undecided(self) -> list[RuleResult]:
        return [r for r in self.results if r.status == "insufficient"]

    def summary(self) -> str:
        if self.verdict == "incident":
            p = self.primary
            assert p is not None
            others = [r.rule.playbook for r in self.matches[1:]]
            tail = f"; also matching: {', '.join(others)}" if others else ""
            return f"INCIDENT → playbook {p.rule.playbook} (rule {p.rule.id}, confidence {p.confidence:.2f}){tail}"
        if self.verdict == "healthy":
            return "HEALTHY: no rule matched and every required signal was present"
        parts = [f"{r.rule.id}" for r in self.undecided]
        gaps = sorted(self.missing_golden)
        why = []
        if parts:
            why.append(f"rules without enough evidence: {', '.join(parts)}")
        if gaps:
            why.append(f"missing signals: {', '.join(gaps)}")
        return "INSUFFICIENT EVIDENCE: " + "; ".join(why)


def triage(ev: Evidence) -> TriageResult:
    results = [evaluate(rule, ev) for rule in RULES]
    missing = ev.missing_golden()
    if any(r.status == "match" for r in results):
        verdict: Verdict = "incident"
    elif any(r.status == "insufficient" for r in results) or missing:
        verdict = "insufficient-evidence"
    else:
        verdict = "healthy"
    return TriageResult(verdict, results, missing)
