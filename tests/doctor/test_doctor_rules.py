"""Unit tests of the decision table: each rule, its boundary, and every way it fails closed."""

from __future__ import annotations

from typing import Any

import pytest
from doctor_helpers import load_example
from vllm_doctor import metrics as M
from vllm_doctor.config import Config, load_config
from vllm_doctor.evidence import Evidence, Sample
from vllm_doctor.rules import MAX_CONFIDENCE, RULES, RULES_BY_ID, Cond, evaluate
from vllm_doctor.signals import GOLDEN
from vllm_doctor.triage import triage

HEALTHY: dict[str, Any] = load_example("healthy")["signals"]
EXPORTED = set(load_example("healthy")["probe"]["exported"])
LORA_EXPORTED = EXPORTED | {M.LORA_REQUESTS_INFO.name}
LORA_OK = {"lora_max": 4.0, "lora_running": 1.0, "lora_waiting_not_running": 0.0, "lora_sets_in_window": 1.0}


def ev(changes: dict[str, Any] | None = None, *, drop: tuple[str, ...] = (), config: Config | None = None,
       exported: set[str] | None = EXPORTED) -> Evidence:
    sample = Sample()
    values = {**HEALTHY, **(changes or {})}
    for sid, v in values.items():
        if sid not in drop:
            sample.set(sid, v, "absent in this test")
    return Evidence(sample, config or load_config(), exported)


# One minimal trigger per rule, on top of the healthy sample.
TRIGGERS: dict[str, tuple[dict[str, Any], set[str] | None]] = {
    "engine-stall": ({"generation_token_rate": 0.0, "prompt_token_rate": 0.0}, EXPORTED),
    "crash-loop": ({"restarts": 2.0}, EXPORTED),
    "cold-start": ({"restarts": 1.0, "ttft_p95": 6.0}, EXPORTED),
    "lora-saturation": ({**LORA_OK, "lora_running": 4.0, "lora_waiting_not_running": 2.0, "waiting_deferred": 3.0},
                        LORA_EXPORTED),
    "preemption": ({"preempt_rate": 0.5, "kv_usage_max": 0.95}, EXPORTED),
    "retry-storm": ({"http_request_rate": 34.0}, EXPORTED),
    "prefix-collapse": ({"prefix_hits_rate": 900.0}, EXPORTED),
    "quality-shift": ({"length_rate": 4.0}, EXPORTED),
}


def test_triggers_cover_every_rule() -> None:
    assert set(TRIGGERS) == {r.id for r in RULES}


def test_healthy_sample_is_healthy() -> None:
    t = triage(ev())
    assert t.verdict == "healthy", t.summary()
    assert all(r.status in ("no-match", "not-applicable") for r in t.results)


@pytest.mark.parametrize("rule_id", sorted(TRIGGERS))
def test_rule_triggers_and_becomes_primary(rule_id: str) -> None:
    changes, exported = TRIGGERS[rule_id]
    t = triage(ev(changes, exported=exported))
    assert t.verdict == "incident"
    assert t.primary is not None and t.primary.rule.id == rule_id, t.summary()
    assert 0 < t.primary.confidence <= MAX_CONFIDENCE
    assert all(c.holds is not None for c in t.primary.conditions if c.cond in RULES_BY_ID[rule_id].all_of)


# The raw signals each triggered rule depends on.
REQUIRED: dict[str, tuple[str, ...]] = {
    "engine-stall": ("running", "generation_token_rate", "prompt_token_rate"),
    "crash-loop": ("restarts",),
    "cold-start": ("ttft_p95", "restarts"),
    "lora-saturation": ("waiting_deferred", "lora_max", "lora_running", "lora_waiting_not_running"),
    "preemption": ("preempt_rate", "kv_usage_max"),
    "retry-storm": ("http_request_rate", "http_request_rate_baseline", "request_rate"),
    "prefix-collapse": ("prefix_hits_rate", "prefix_queries_rate", "prefix_hits_rate_baseline",
                        "prefix_queries_rate_baseline"),
    "quality-shift": ("length_rate", "length_rate_baseline"),
}


@pytest.mark.parametrize("rule_id", sorted(TRIGGERS))
def test_missing_signal_is_insufficient_not_a_guess(rule_id: str) -> None:
    """Drop each signal a triggered rule needs: the rule must say 'insufficient' and name it."""
    changes, exported = TRIGGERS[rule_id]
    rule = RULES_BY_ID[rule_id]
    for sid in REQUIRED[rule_id]:
        result = evaluate(rule, ev(changes, drop=(sid,), exported=exported))
        assert result.status == "insufficient", (sid, result.status)
        assert any(sid in m for m in result.missing), (sid, result.missing)
        t = triage(ev(changes, drop=(sid,), exported=exported))
        assert t.verdict == "insufficient-evidence", f"dropping {sid}: {t.summary()}"


@pytest.mark.parametrize("rule_id", sorted(TRIGGERS))
def test_missing_threshold_is_insufficient(rule_id: str) -> None:
    changes, exported = TRIGGERS[rule_id]
    rule = RULES_BY_ID[rule_id]
    gating = {c.threshold for c in rule.all_of if c.threshold}
    if not gating:  # quality-shift: an any_of rule; remove all its thresholds
        gating = {c.threshold for c in rule.any_of if c.threshold}
    cfg = load_config()
    for key in gating:
        cfg.values.pop(key)
    result = evaluate(rule, ev(changes, config=cfg, exported=exported))
    assert result.status == "insufficient", result.status
    assert any("is not configured" in m for m in result.missing)
    assert triage(ev(changes, config=cfg, exported=exported)).verdict != "healthy"


def test_boundaries_are_inclusive() -> None:
    cfg = load_config(overrides=["preempt.rate_per_s=0.5", "preempt.kv_usage_high=0.9"])
    at = evaluate(RULES_BY_ID["preemption"], ev({"preempt_rate": 0.5, "kv_usage_max": 0.9}, config=cfg))
    below = evaluate(RULES_BY_ID["preemption"], ev({"preempt_rate": 0.4999, "kv_usage_max": 0.9}, config=cfg))
    assert at.status == "match" and below.status == "no-match"


def test_a_known_false_condition_decides_even_if_another_is_missing() -> None:
    r = evaluate(RULES_BY_ID["preemption"], ev({"preempt_rate": 0.0}, drop=("kv_usage_max",)))
    assert r.status == "no-match"
    t = triage(ev({"preempt_rate": 0.0}, drop=("kv_usage_max",)))
    assert t.verdict == "insufficient-evidence", "a missing golden signal forbids 'healthy'"
    assert "kv_usage_max" in t.missing_golden


def test_empty_sample_is_insufficient() -> None:
    t = triage(Evidence(Sample(), load_config(), EXPORTED))
    assert t.verdict == "insufficient-evidence"
    assert set(t.missing_golden) == {s.id for s in GOLDEN if not s.optional}


def test_no_thresholds_at_all_is_insufficient() -> None:
    t = triage(ev(config=load_config(use_defaults=False)))
    assert t.verdict == "insufficient-evidence"
    assert all(r.status in ("insufficient", "not-applicable") for r in t.results)


def test_too_little_traffic_makes_ratios_unknown() -> None:
    e = ev({"request_rate": 0.04, "abort_rate": 0.04, "request_rate_baseline": 0.01})
    v, why = e.get("abort_ratio")
    assert v is None and "too little traffic" in why
    e = ev({"request_rate": 0.01, "http_request_rate": 0.04, "http_request_rate_baseline": 0.01})
    for sid in ("http_rate_ratio", "http_unfinished_ratio"):
        v, why = e.get(sid)
        assert v is None and "too little traffic" in why, sid
    assert evaluate(RULES_BY_ID["retry-storm"], e).status == "insufficient"


# A client-timeout retry storm as vLLM v0.26.0 reports it: an attempt the client abandons is aborted with
# internal=True and never reaches vllm:request_success, so the finished rate and the abort share stay where they
# were; only the API server's HTTP counter sees the extra attempts.
ABANDON_STORM = {"http_request_rate": 33.0, "http_request_rate_baseline": 11.2, "request_rate": 11.5,
                 "request_rate_baseline": 11.0, "abort_rate": 0.1, "queue_p95": 30.0, "waiting": 250.0}


def test_retry_storm_without_aborts_is_detected() -> None:
    """Fails on the old rule (abort_ratio >= 0.2 AND request_rate_ratio >= 1.5 over vllm:request_success)."""
    e = ev(ABANDON_STORM)
    abort_ratio, request_rate_ratio = e.value("abort_ratio"), e.value("request_rate_ratio")
    assert abort_ratio is not None and abort_ratio < 0.2, "the finished-request abort share barely moves"
    assert request_rate_ratio is not None and request_rate_ratio < 1.5, "abandoned attempts never finish"
    r = evaluate(RULES_BY_ID["retry-storm"], e)
    assert r.status == "match", [c.text() for c in r.conditions]
    assert all(s.holds for s in r.supporting) and r.confidence == pytest.approx(0.75)
    t = triage(e)
    assert t.primary is not None and t.primary.rule.playbook == "client-retry-storm", t.summary()


def test_retry_storm_needs_both_amplification_and_unfinished_attempts() -> None:
    surge = ev({"http_request_rate": 24.4, "request_rate": 24.0})  # twice the traffic, all of it served
    assert evaluate(RULES_BY_ID["retry-storm"], surge).status == "no-match"
    losing = ev({"http_request_rate": 11.2, "request_rate": 5.0})  # requests lost at the baseline rate
    assert evaluate(RULES_BY_ID["retry-storm"], losing).status == "no-match"
    nfork = ev({"http_request_rate": 34.0, "request_rate": 68.0})  # n=2: more finishes than HTTP requests
    assert nfork.value("http_unfinished_ratio") == pytest.approx(-1.0)
    assert evaluate(RULES_BY_ID["retry-storm"], nfork).status == "no-match"


def test_retry_storm_boundaries_are_the_shipped_thresholds() -> None:
    cfg = load_config()
    assert (cfg.number("retry_storm.http_rate_ratio"), cfg.number("retry_storm.unfinished_ratio"),
            cfg.number("retry_storm.queue_p95_s")) == (1.5, 0.2, 2.0)
    at = ev({"http_request_rate_baseline": 10.0, "http_request_rate": 15.0, "request_rate": 12.0})
    assert at.value("http_rate_ratio") == pytest.approx(1.5) and at.value("http_unfinished_ratio") == pytest.approx(0.2)
    assert evaluate(RULES_BY_ID["retry-storm"], at).status == "match"
    below = ev({"http_request_rate_baseline": 10.0, "http_request_rate": 15.0, "request_rate": 12.1})
    assert evaluate(RULES_BY_ID["retry-storm"], below).status == "no-match"


def test_zero_denominator_is_missing_not_zero() -> None:
    v, why = ev({"prefix_queries_rate": 0.0, "prefix_hits_rate": 0.0}).get("prefix_hit_ratio")
    assert v is None and "is 0" in why


def test_nan_from_prometheus_is_missing() -> None:
    s = Sample()
    s.set("ttft_p95", float("nan"))
    assert s.values["ttft_p95"] is None and "NaN" in s.reasons["ttft_p95"]


def test_lora_rule_not_applicable_when_feature_off() -> None:
    r = evaluate(RULES_BY_ID["lora-saturation"], ev())
    assert r.status == "not-applicable" and "not exported" in r.note


def test_lora_rule_insufficient_when_exported_but_missing() -> None:
    r = evaluate(RULES_BY_ID["lora-saturation"], ev({"waiting_deferred": 5.0}, exported=LORA_EXPORTED))
    assert r.status == "insufficient"


def test_lora_rule_insufficient_when_exports_unknown() -> None:
    """Without a probe (exported=None) an absent LoRA series is missing evidence, not 'feature off'."""
    t = triage(ev({"waiting_deferred": 5.0}, exported=None))
    assert t.verdict == "insufficient-evidence"
    assert [r.rule.id for r in t.undecided] == ["lora-saturation"]
    # with nothing deferred the rule is ruled out by a known fact, LoRA data or not
    assert evaluate(RULES_BY_ID["lora-saturation"], ev(exported=None)).status == "no-match"


def test_lora_not_saturated_is_no_match() -> None:
    r = evaluate(RULES_BY_ID["lora-saturation"], ev({**LORA_OK, "waiting_deferred": 5.0}, exported=LORA_EXPORTED))
    assert r.status == "no-match"


def test_cold_start_any_of_sleeping_engine() -> None:
    r = evaluate(RULES_BY_ID["cold-start"], ev({"awake_min": 0.0, "ttft_p95": 9.0}))
    assert r.status == "match"
    r = evaluate(RULES_BY_ID["cold-start"], ev({"awake_min": 0.0, "ttft_p95": 9.0}, drop=("restarts",)))
    assert r.status == "match", "one true branch of any_of suffices"
    r = evaluate(RULES_BY_ID["cold-start"], ev({"ttft_p95": 9.0}, drop=("restarts",)))
    assert r.status == "insufficient", "false OR unknown is unknown"


def test_quality_any_of_and_output_collapse() -> None:
    assert evaluate(RULES_BY_ID["quality-shift"], ev({"gen_tokens_per_request": 60.0})).status == "match"
    assert evaluate(RULES_BY_ID["quality-shift"], ev({"gen_tokens_per_request": 0.0})).status == "match"
    assert evaluate(RULES_BY_ID["quality-shift"], ev({"repetition_rate": 1.0})).status == "match"


def test_supporting_evidence_raises_confidence_with_a_cap() -> None:
    base = evaluate(RULES_BY_ID["preemption"], ev({"preempt_rate": 1.0, "kv_usage_max": 0.99, "waiting": 0.0}))
    more = evaluate(RULES_BY_ID["preemption"], ev({"preempt_rate": 1.0, "kv_usage_max": 0.99, "waiting": 9.0}))
    assert more.confidence == pytest.approx(base.confidence + 0.05)
    assert more.confidence <= MAX_CONFIDENCE


def test_several_matches_keep_table_order() -> None:
    t = triage(ev({"restarts": 3.0, "ttft_p95": 9.0}))
    assert [r.rule.id for r in t.matches] == ["crash-loop", "cold-start"]
    assert t.primary is not None and t.primary.rule.playbook == "gpu-oom"
    assert "also matching: cold-start" in t.summary()


def test_condition_needs_exactly_one_limit() -> None:
    with pytest.raises(ValueError):
        Cond("running", ">=")
    with pytest.raises(ValueError):
        Cond("running", ">=", "stall.running_min", 1.0)


def test_every_rule_threshold_is_in_the_shipped_default() -> None:
    cfg = load_config()
    for r in RULES:
        for key in r.thresholds():
            assert cfg.get(key) is not None, f"{r.id} uses {key}, which the shipped default lacks"
