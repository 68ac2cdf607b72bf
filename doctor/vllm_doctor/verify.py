"""Phase 6, verify: is the symptom gone, over repeated samples?

The rule of the playbook being verified is re-evaluated on every sample (oldest
first).  A sample is *clean* only if the rule is a definite no-match there, i.e.
every signal it needs was present and the symptom was absent.  Outcomes:

* ``resolved`` — the last ``verify.min_clean_samples`` samples are all clean;
* ``not-resolved`` — the latest sample still matches the rule;
* ``unstable`` — the latest sample is clean, but fewer than the required number
  of consecutive clean samples lead up to it;
* ``insufficient-evidence`` — no samples, the threshold is not configured, or the
  latest sample cannot be evaluated.

"Resolved" is never reported without enough clean samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from vllm_doctor.config import Config
from vllm_doctor.evidence import Evidence, Sample
from vllm_doctor.rules import RULES_BY_PLAYBOOK, RuleResult, evaluate

Outcome = Literal["resolved", "not-resolved", "unstable", "insufficient-evidence"]


@dataclass
class VerifyResult:
    playbook: str
    outcome: Outcome
    per_sample: list[RuleResult] = field(default_factory=list)
    required_clean: int | None = None
    trailing_clean: int = 0
    reason: str = ""

    def summary(self) -> str:
        marks = "".join({"no-match": "✔", "match": "✘"}.get(r.status, "?") for r in self.per_sample) or "—"
        need = "?" if self.required_clean is None else str(self.required_clean)
        return (f"{self.outcome.upper()} [{self.playbook}] samples {marks} "
                f"(clean streak {self.trailing_clean}/{need}) — {self.reason}")


def verify(playbook: str, samples: list[Sample], config: Config, exported: set[str] | None = None) -> VerifyResult:
    if playbook not in RULES_BY_PLAYBOOK:
        raise KeyError(f"unknown playbook {playbook!r}")
    rule = RULES_BY_PLAYBOOK[playbook]
    need_raw = config.get("verify.min_clean_samples")
    results = [evaluate(rule, Evidence(s, config, exported)) for s in samples]
    trailing = 0
    for r in reversed(results):
        if r.status != "no-match":
            break
        trailing += 1
    res = VerifyResult(playbook, "insufficient-evidence", results, None, trailing)
    if need_raw is None:
        res.reason = "threshold verify.min_clean_samples is not configured; refusing to call anything resolved"
        return res
    need = int(need_raw)
    res.required_clean = need
    if not results:
        res.reason = "no samples to look at; nothing can be called resolved without them"
        return res
    last = results[-1]
    if last.status == "not-applicable":
        res.reason = f"rule {rule.id} does not apply to this target ({last.note})"
    elif last.status == "insufficient":
        res.reason = "latest sample lacks evidence: " + "; ".join(last.missing)
    elif last.status == "match":
        res.outcome = "not-resolved"
        res.reason = f"the symptom of rule {rule.id} is still present in the latest sample"
    elif trailing >= need:
        res.outcome = "resolved"
        res.reason = f"the last {trailing} samples all show rule {rule.id} clearly not matching"
    else:
        res.outcome = "unstable"
        res.reason = f"only {trailing} consecutive clean sample(s) at the end; {need} required"
    return res
