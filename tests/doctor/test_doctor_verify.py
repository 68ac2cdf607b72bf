"""Verification never says 'resolved' without enough clean samples."""

from __future__ import annotations

from typing import Any

import pytest
from doctor_helpers import EXAMPLES, load_example
from vllm_doctor.config import load_config
from vllm_doctor.evidence import Sample
from vllm_doctor.sources import FixtureSource
from vllm_doctor.verify import verify

HEALTHY: dict[str, Any] = load_example("healthy")["signals"]
EXPORTED = set(load_example("healthy")["probe"]["exported"])
BAD = {"preempt_rate": 3.0, "kv_usage_max": 0.99}


def sample(changes: dict[str, Any] | None = None, drop: tuple[str, ...] = ()) -> Sample:
    s = Sample()
    for sid, v in {**HEALTHY, **(changes or {})}.items():
        if sid not in drop:
            s.set(sid, v, "absent in this test")
    return s


def run(samples: list[Sample], **cfg: str) -> Any:
    config = load_config(overrides=[f"{k}={v}" for k, v in cfg.items()])
    return verify("preempt-cascade", samples, config, EXPORTED)


def test_resolved_needs_the_required_clean_streak() -> None:
    r = run([sample(BAD), sample(), sample(), sample()])
    assert r.outcome == "resolved" and r.trailing_clean == 3


def test_too_few_clean_samples_is_unstable_not_resolved() -> None:
    r = run([sample(BAD), sample(), sample()])
    assert r.outcome == "unstable" and r.trailing_clean == 2
    assert "3 required" in r.reason


def test_single_clean_sample_is_never_enough() -> None:
    assert run([sample()]).outcome == "unstable"


def test_symptom_in_latest_sample_is_not_resolved() -> None:
    r = run([sample(), sample(), sample(), sample(BAD)])
    assert r.outcome == "not-resolved"


def test_no_samples_is_insufficient() -> None:
    r = run([])
    assert r.outcome == "insufficient-evidence" and "no samples" in r.reason


@pytest.mark.parametrize("dropped", ["preempt_rate", "kv_usage_max"])
def test_missing_evidence_in_latest_sample_is_insufficient(dropped: str) -> None:
    # preempt_rate=0 alone would rule the rule out, so make the other condition the deciding one
    latest = sample({"preempt_rate": 1.0} if dropped == "kv_usage_max" else {"kv_usage_max": 0.99}, drop=(dropped,))
    r = run([sample(), sample(), sample(), latest])
    assert r.outcome == "insufficient-evidence"
    assert dropped in r.reason


def test_an_undecidable_sample_breaks_the_streak() -> None:
    gap = sample({"kv_usage_max": 0.99}, drop=("preempt_rate",))
    r = run([sample(), gap, sample(), sample()])
    assert r.outcome == "unstable" and r.trailing_clean == 2


def test_missing_min_clean_threshold_refuses() -> None:
    config = load_config()
    config.values.pop("verify.min_clean_samples")
    r = verify("preempt-cascade", [sample()] * 5, config, EXPORTED)
    assert r.outcome == "insufficient-evidence" and "not configured" in r.reason


def test_configurable_streak_length() -> None:
    assert run([sample(BAD), sample(), sample()], **{"verify.min_clean_samples": "2"}).outcome == "resolved"


def test_not_applicable_playbook_is_insufficient() -> None:
    r = verify("lora-thrashing", [sample()] * 3, load_config(), EXPORTED)
    assert r.outcome == "insufficient-evidence" and "does not apply" in r.reason


def test_unknown_playbook() -> None:
    with pytest.raises(KeyError):
        verify("no-such-playbook", [], load_config())


@pytest.mark.parametrize("name,playbook,outcome", [
    ("preempt-cascade", "preempt-cascade", "resolved"),
    ("prefix-cache-collapse", "prefix-cache-collapse", "unstable"),
    ("nccl-hang", "nccl-hang", "not-resolved"),
    ("gpu-oom", "gpu-oom", "insufficient-evidence"),
    ("healthy", "preempt-cascade", "resolved"),
])
def test_fixture_verify_samples(name: str, playbook: str, outcome: str) -> None:
    src = FixtureSource(EXAMPLES / f"{name}.json")
    r = verify(playbook, src.verify_samples(5, 0.0, history=False), load_config(), src.probe().exported)
    assert r.outcome == outcome, r.summary()
