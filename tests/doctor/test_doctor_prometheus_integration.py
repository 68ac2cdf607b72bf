"""End to end against a real Prometheus (Debian's `prometheus`, /usr/bin/prometheus).

Prometheus runs on 127.0.0.1 (random free port, temporary storage, 1 s scrape
interval) and scrapes a synthetic vLLM exporter that serves the real metric
names.  Two incidents are driven through it — a KV preemption cascade, then a
prefix-cache collapse — and triage, plan, verify and the report are checked.
Everything started here is stopped in `finally`; every wait has a deadline.

Skips only when /usr/bin/prometheus is missing and CI is not set; under CI it fails.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from doctor_synth_exporter import SyntheticVLLM
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

PROMETHEUS = Path("/usr/bin/prometheus")
JOB = "vllm-it"
SELECTOR = f'job="{JOB}"'
WINDOW, BASELINE, LOOKBACK = "4s", "12s", "2m"
SETTLE = 7.0  # > WINDOW plus a scrape or two, so a phase fills the rate window
TEST_BUDGET_S = 240.0


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


class Clock:
    def __init__(self, budget: float) -> None:
        self.deadline = time.monotonic() + budget

    def sleep(self, seconds: float) -> None:
        if time.monotonic() + seconds > self.deadline:
            pytest.fail("the integration test ran out of its time budget")
        time.sleep(seconds)

    def wait_for(self, what: str, check, timeout: float, every: float = 0.5):  # noqa: ANN001, ANN201
        end = min(self.deadline, time.monotonic() + timeout)
        last: object = None
        while time.monotonic() < end:
            try:
                last = check()
                if last:
                    return last
            except OSError as exc:
                last = exc
            time.sleep(every)
        pytest.fail(f"timed out waiting for {what} (last: {last!r})")


def require_prometheus(binary: Path = PROMETHEUS) -> None:
    """Skip without the binary, except under CI, where a missing Prometheus is a failure."""
    if binary.exists():
        return
    if _ci():
        pytest.fail(f"CI is set but {binary} is missing: apt-get install -y prometheus")
    pytest.skip(f"{binary} is not installed (apt-get install -y prometheus); under CI=true this fails")


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
    require_prometheus()
    clock = Clock(TEST_BUDGET_S)
    exporter = SyntheticVLLM()
    proc: subprocess.Popen[bytes] | None = None
    log = tmp_path / "prometheus.log"
    try:
        port = exporter.start()
        prom_port = _free_port()
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{port}']\n",
            encoding="utf-8",
        )
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(PROMETHEUS), f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.retention.time=1h",
                 "--log.level=warn"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        url = f"http://127.0.0.1:{prom_port}"

        def ready() -> bool:
            if proc is not None and proc.poll() is not None:
                pytest.fail(f"prometheus exited with {proc.returncode}:\n{log.read_text(errors='replace')[-2000:]}")
            return _get(f"{url}/-/ready").startswith(b"Prometheus")

        clock.wait_for("Prometheus to become ready", ready, 30)

        def target_up() -> bool:
            q = urllib.parse.quote(f'up{{job="{JOB}"}}')
            doc = json.loads(_get(f"{url}/api/v1/query?query={q}"))
            res = doc["data"]["result"]
            return bool(res) and res[0]["value"][1] == "1"

        clock.wait_for("the first successful scrape", target_up, 30)
        yield url, exporter, clock
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        exporter.stop()


def _config() -> Config:
    return load_config(overrides=[
        f"window.range={WINDOW}", f"window.baseline_offset={BASELINE}", f"window.restart_lookback={LOOKBACK}",
        "verify.interval=1s", "verify.samples=3", "verify.min_clean_samples=3",
    ])


@pytest.mark.integration
def test_two_incidents_through_real_prometheus(stack: tuple[str, SyntheticVLLM, Clock],
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
    assert probe.targets and probe.targets[0]["up"] == "1" and probe.targets[0]["job"] == JOB
    assert probe.cache_config and probe.cache_config["block_size"] == "16"

    # -- a healthy baseline: long enough for the baseline window to hold data -----------
    clock.sleep(18)
    healthy = triage(Evidence(source.sample(), config, probe.exported))
    assert healthy.verdict == "healthy", healthy.summary() + f" {healthy.missing_golden}"

    # -- incident 1: KV preemption cascade ---------------------------------------------
    exporter.set(preempt_rate=3.0, kv_usage=0.98, waiting=50.0, queue=20.0)
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
    assert exporter.scrapes > 20
