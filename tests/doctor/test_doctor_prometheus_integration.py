"""End to end against a real Prometheus (Debian's `prometheus`, /usr/bin/prometheus).

Prometheus runs on 127.0.0.1 (random free port, temporary storage, 1 s scrape
interval) and scrapes a synthetic vLLM exporter that serves the real metric
names.  Three incidents are driven through it — a KV preemption cascade, a
prefix-cache collapse, then a client retry storm in which abandoned attempts reach
only the API server's HTTP counter — and triage, plan, verify and the report are
checked.
Everything started here is stopped in `finally`; every wait has a deadline.

Skips only when /usr/bin/prometheus is missing and CI is not set; under CI it fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from doctor_synth_exporter import SyntheticVLLM
from prom_stack import Clock, prometheus_stack, require_prometheus
from vllm_doctor import metrics as M
from vllm_doctor.cli import main
from vllm_doctor.config import Config, load_config
from vllm_doctor.evidence import Evidence
from vllm_doctor.pipeline import open_source, run, verify_samples
from vllm_doctor.report import render_report
from vllm_doctor.selector import Selector
from vllm_doctor.sources import PrometheusSource
from vllm_doctor.triage import triage
from vllm_doctor.verify import verify

JOB = "vllm-it"
SELECTOR = f'job="{JOB}"'
WINDOW, BASELINE, LOOKBACK = "4s", "12s", "2m"
SETTLE = 7.0  # > WINDOW plus a scrape or two, so a phase fills the rate window
TEST_BUDGET_S = 240.0


def test_missing_prometheus_fails_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    absent = tmp_path / "no-prometheus"
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        require_prometheus(absent)
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        require_prometheus(absent)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[str, SyntheticVLLM, Clock]]:
    with prometheus_stack(tmp_path, JOB, TEST_BUDGET_S) as s:
        yield s


def _config() -> Config:
    return load_config(overrides=[
        f"window.range={WINDOW}", f"window.baseline_offset={BASELINE}", f"window.restart_lookback={LOOKBACK}",
        "verify.interval=1s", "verify.samples=3", "verify.min_clean_samples=3",
    ])


@pytest.mark.integration
def test_three_incidents_through_real_prometheus(stack: tuple[str, SyntheticVLLM, Clock],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    url, exporter, clock = stack
    config = _config()
    source = open_source(config, prometheus=url, selector=Selector.parse(SELECTOR), timeout=5)
    assert isinstance(source, PrometheusSource)

    # -- probe -----------------------------------------------------------------------
    probe = source.probe()
    assert probe.reachable and probe.ok, probe.problems
    assert probe.prometheus_version and probe.prometheus_version[0].isdigit()
    assert M.NUM_PREEMPTIONS.name in (probe.exported or set())
    assert M.LORA_REQUESTS_INFO.name not in (probe.exported or set())
    assert set(probe.missing_registry()) == {M.CORRUPTED_REQUESTS.name, M.LORA_REQUESTS_INFO.name}
    assert probe.targets and probe.targets[0]["up"] == "1" and probe.targets[0]["job"] == JOB
    assert probe.cache_config and probe.cache_config["block_size"] == "16"

    # -- a healthy baseline: long enough for the baseline window to hold data -----------
    clock.sleep(18)
    healthy = triage(Evidence(source.sample(), config, probe.exported))
    assert healthy.verdict == "healthy", healthy.summary() + f" {healthy.missing_golden}"

    # -- incident 1: KV preemption cascade ---------------------------------------------
    # TTFT includes the queue wait (queue + prefill): an exporter must not show TTFT below queue time
    exporter.set(preempt_rate=3.0, kv_usage=0.98, waiting=50.0, queue=20.0, ttft=20.4)
    clock.sleep(SETTLE)
    t1 = triage(Evidence(source.sample(), config, probe.exported))
    assert t1.verdict == "incident", t1.summary()
    assert t1.primary is not None and t1.primary.rule.playbook == "preempt-cascade", t1.summary()
    assert [r.rule.playbook for r in t1.matches] == ["preempt-cascade"], t1.summary()

    result = run(source, config, verify_mode="history")
    assert result.playbook == "preempt-cascade"
    assert result.plan is not None and result.plan.mutating
    assert result.verify is not None and result.verify.outcome == "not-resolved", result.verify.summary()
    report = render_report(result)
    assert "preempt-cascade" in report and "not-resolved" in report
    assert report.count("批准人 / approved by") == len(result.plan.mutating)
    assert "vllm:num_preemptions_total" in report  # the PromQL appendix

    # the fix: load drops back; verification must see clean samples before "resolved"
    exporter.reset_scenario()
    early = verify("preempt-cascade", [source.sample()], config, probe.exported)
    assert early.outcome != "resolved"
    clock.sleep(SETTLE)
    v = verify("preempt-cascade", verify_samples(source, config, "live"), config, probe.exported)
    assert v.outcome == "resolved", v.summary()

    # -- incident 2: prefix-cache hit-rate collapse --------------------------------------
    exporter.set(prefix_hit_ratio=0.03, ttft=3.0)
    clock.sleep(SETTLE)
    code = main(["triage", "--prometheus", url, "--selector", SELECTOR, "--window", WINDOW,
                 "--baseline-offset", BASELINE, "--restart-lookback", LOOKBACK, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["playbook"] == "prefix-cache-collapse", doc["summary"]
    result = run(source, config, verify_mode="skip")
    assert result.playbook == "prefix-cache-collapse"
    derived = {c.cond.signal: c.value for c in result.triage.primary.conditions}  # type: ignore[union-attr]
    assert derived["prefix_hit_ratio_baseline"] == pytest.approx(0.5, abs=0.05)
    assert derived["prefix_hit_drop"] > 0.8
    report = render_report(result)
    assert "prefix-cache-collapse" in report and "REQUIRES HUMAN APPROVAL" in report
    assert result.diag is not None
    ratio = next(d for d in result.diag.values if d.id == "hit_ratio_by_engine")
    assert isinstance(ratio.value, dict) and all(v < 0.2 for v in ratio.value.values())

    # -- incident 3: client retry storm; abandoned attempts never reach vllm:request_success --
    exporter.reset_scenario()
    exporter.set(abandon_rate=20.0, queue=20.0, ttft=20.4, waiting=80.0)  # finished rate and abort share stay as they were
    clock.sleep(SETTLE)
    ev3 = Evidence(source.sample(), config, probe.exported)
    t3 = triage(ev3)
    assert [r.rule.playbook for r in t3.matches] == ["client-retry-storm"], t3.summary()
    assert ev3.value("http_rate_ratio") == pytest.approx(3.0, rel=0.15)
    assert ev3.value("http_unfinished_ratio") == pytest.approx(2 / 3, abs=0.08)
    # what the old rule read: neither the abort share nor the finished-request rate moved
    assert ev3.value("abort_ratio") == pytest.approx(0.02, abs=0.01)
    assert ev3.value("request_rate_ratio") == pytest.approx(1.0, abs=0.15)
    result = run(source, config, verify_mode="skip")
    assert result.playbook == "client-retry-storm" and result.diag is not None
    by_status = next(d for d in result.diag.values if d.id == "http_rate_by_status")
    assert isinstance(by_status.value, dict), by_status
    assert sorted(by_status.value) == ["handler=/v1/chat/completions,status=2xx",
                                       "handler=/v1/chat/completions,status=4xx"], "GET /v1/models is no generate route"
    assert by_status.value["handler=/v1/chat/completions,status=4xx"] == 0.0
    assert exporter.scrapes > 20
