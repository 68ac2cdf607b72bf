"""The seven phases wired together; each phase is also usable on its own.

probe → collect → triage → diagnose → plan → verify → report
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vllm_doctor.config import Config
from vllm_doctor.diagnose import DiagReport, diagnose
from vllm_doctor.errors import DoctorError
from vllm_doctor.evidence import Evidence, Sample
from vllm_doctor.plans import Plan, make_plan
from vllm_doctor.selector import Selector, duration_seconds
from vllm_doctor.signals import QueryContext
from vllm_doctor.sources import FixtureSource, ProbeResult, PrometheusSource, Source
from vllm_doctor.triage import TriageResult, triage
from vllm_doctor.verify import VerifyResult, verify

VerifyMode = Literal["history", "live", "skip"]


def query_context(config: Config, selector: Selector) -> QueryContext:
    return QueryContext(
        selector=selector,
        window=config.duration("window.range", "5m"),
        baseline_offset=config.duration("window.baseline_offset", "1d"),
        restart_lookback=config.duration("window.restart_lookback", "30m"),
    )


def open_source(
    config: Config,
    *,
    prometheus: str | None = None,
    fixture: Path | None = None,
    selector: Selector | None = None,
    timeout: float = 10.0,
    vllm_url: str | None = None,
) -> Source:
    if bool(prometheus) == bool(fixture):
        raise DoctorError("give exactly one signal source: --prometheus URL or --fixture FILE")
    if fixture:
        return FixtureSource(fixture)
    assert prometheus
    return PrometheusSource(prometheus, query_context(config, selector or Selector()), timeout, vllm_url)


@dataclass
class RunResult:
    source: str
    config: Config
    started_at: float
    probe: ProbeResult
    sample: Sample
    evidence: Evidence
    triage: TriageResult
    playbook: str | None = None
    diag: DiagReport | None = None
    plan: Plan | None = None
    verify: VerifyResult | None = None
    notes: list[str] = field(default_factory=list)
    title: str = ""


def collect(source: Source, config: Config, probe: ProbeResult, at: float | None = None) -> Evidence:
    return Evidence(source.sample(at), config, probe.exported)


def verify_samples(source: Source, config: Config, mode: VerifyMode) -> list[Sample]:
    count = config.get("verify.samples")
    interval = duration_seconds(config.duration("verify.interval", "30s"))
    return source.verify_samples(int(count) if count is not None else 0, interval, history=(mode == "history"))


def _now() -> float:
    """The report's 生成时间: now, or ``SOURCE_DATE_EPOCH`` when set (the reproducible-builds convention), so a
    report rendered into the book is the same on every build."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch:
        try:
            return float(int(epoch))
        except ValueError:
            raise DoctorError(f"SOURCE_DATE_EPOCH={epoch!r} is not an integer number of seconds; unset it or fix it")
    return time.time()


def run(
    source: Source,
    config: Config,
    *,
    at: float | None = None,
    playbook: str | None = None,
    verify_mode: VerifyMode = "history",
) -> RunResult:
    started = _now()
    probe = source.probe()
    if not probe.reachable:
        raise DoctorError("probe failed: " + "; ".join(probe.problems or ["source unreachable"]))
    ev = collect(source, config, probe, at)
    tri = triage(ev)
    res = RunResult(source.label, config, started, probe, ev.sample, ev, tri,
                    title=str(getattr(source, "title", "")))
    chosen = playbook or (tri.primary.rule.playbook if tri.primary else None)
    res.playbook = chosen
    if chosen is None:
        res.notes.append("no playbook matched; deep dive, plan and verification skipped")
        return res
    res.diag = diagnose(source, chosen, at)
    res.plan = make_plan(chosen, probe.cache_config)
    if verify_mode != "skip":
        res.verify = verify(chosen, verify_samples(source, config, verify_mode), config, probe.exported)
    return res
