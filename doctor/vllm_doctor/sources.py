"""Signal sources: a live Prometheus, or a JSON fixture (dry runs and tests).

Both answer the same four questions: what is reachable (``probe``), the golden
signals at one instant (``sample``), the deep-dive queries of a playbook
(``diagnostics``) and repeated samples for ``verify``.

Fixture format (``schema: "vllm-doctor/fixture@1"``)::

    {
      "schema": "vllm-doctor/fixture@1",
      "title": "...", "description": "...",
      "probe": {"prometheus_version": "2.42.0", "vllm_version": "0.26.0",
                "exported": [<registry metric names>, ...],      # base names
                "targets": [{"job": "vllm", "instance": "10.0.0.7:8000", "up": 1}],
                "cache_config": {"block_size": "16", ...}},
      "signals": {"running": 12, "waiting": 40, ..., "ttft_p95": null},
      "reasons": {"ttft_p95": "why it is null"},                 # optional
      "diagnostics": {"kv_usage_by_engine": {"engine=0": 0.99}}, # optional
      "verify_samples": [{"signals": {...}}, ...]                # optional, oldest first
    }

Signal ids are those of :mod:`vllm_doctor.signals`; an unknown id is an error.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from vllm_doctor import metrics as M
from vllm_doctor.errors import SourceError
from vllm_doctor.evidence import Sample
from vllm_doctor.promapi import PromClient, Series
from vllm_doctor.selector import duration_seconds
from vllm_doctor.signals import (
    DIAG,
    GOLDEN,
    GOLDEN_BY_ID,
    LORA_SIGNALS,
    QueryContext,
    cache_config_query,
    lora_info_query,
)

FIXTURE_SCHEMA = "vllm-doctor/fixture@1"
DiagPayload = float | dict[str, float] | None


@dataclass
class ProbeResult:
    source: str
    reachable: bool = False
    prometheus_version: str | None = None
    vllm_version: str | None = None
    vllm_health: str | None = None
    exported: set[str] | None = None  # registry base names present
    unknown_vllm_series: list[str] = field(default_factory=list)
    targets: list[dict[str, str]] = field(default_factory=list)
    cache_config: dict[str, str] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def vllm_present(self) -> bool:
        return self.exported is None or M.PRESENCE_MARKER.name in self.exported

    @property
    def ok(self) -> bool:
        return self.reachable and self.vllm_present

    def missing_registry(self) -> list[str]:
        if self.exported is None:
            return []
        return [m.name for m in M.ALL if m.name not in self.exported]


@dataclass
class DiagValue:
    id: str
    title: str
    value: DiagPayload
    reason: str = ""
    query: str = ""


class Source(Protocol):
    label: str

    def probe(self) -> ProbeResult: ...

    def sample(self, at: float | None = None) -> Sample: ...

    def diagnostics(self, ids: list[str], at: float | None = None) -> list[DiagValue]: ...

    def verify_samples(self, count: int, interval_s: float, history: bool) -> list[Sample]: ...


# --------------------------------------------------------------------------
# fixture


def _number(raw: object, where: str) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise SourceError(f"{where}: expected a number or null, got {raw!r}")
    return float(raw)


def _sample_from(body: object, where: str) -> Sample:
    if not isinstance(body, dict):
        raise SourceError(f"{where}: expected an object of signal values")
    sample = Sample()
    reasons: dict[str, object] = {}
    if "signals" in body or "reasons" in body:  # verify_samples entries may carry both
        reasons = body.get("reasons", {}) or {}
        body = body.get("signals", {})
        if not isinstance(body, dict):
            raise SourceError(f"{where}.signals: expected an object")
    for sid, raw in body.items():
        if sid not in GOLDEN_BY_ID:
            raise SourceError(
                f"{where}: unknown signal {sid!r}. Known signals: {', '.join(s.id for s in GOLDEN)}"
            )
        sample.set(sid, _number(raw, f"{where}.{sid}"), str(reasons.get(sid, "null in the fixture")))
    return sample


class FixtureSource:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.label = f"fixture {self.path}"
        try:
            self.doc = json.loads(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise SourceError(f"cannot read the fixture {self.path}: {exc.strerror}") from None
        except ValueError as exc:
            raise SourceError(f"{self.path} is not valid JSON: {exc}") from None
        if not isinstance(self.doc, dict) or self.doc.get("schema") != FIXTURE_SCHEMA:
            raise SourceError(f"{self.path}: not a vllm-doctor fixture (expected \"schema\": \"{FIXTURE_SCHEMA}\")")
        if "signals" not in self.doc:
            raise SourceError(f"{self.path}: the fixture has no \"signals\" object")
        self._sample = _sample_from({"signals": self.doc["signals"], "reasons": self.doc.get("reasons", {})},
                                    f"{self.path}:signals")
        self.title = str(self.doc.get("title", self.path.stem))

    def probe(self) -> ProbeResult:
        p = self.doc.get("probe", {}) or {}
        res = ProbeResult(source=self.label, reachable=True)
        res.prometheus_version = p.get("prometheus_version")
        res.vllm_version = p.get("vllm_version")
        res.vllm_health = p.get("vllm_health")
        if "exported" in p:
            names = set(p["exported"])
            unknown = sorted(n for n in names if n not in M.BY_NAME)
            res.exported = names - set(unknown)
            res.unknown_vllm_series = unknown
        res.targets = [dict((str(k), str(v)) for k, v in t.items()) for t in p.get("targets", [])]
        res.cache_config = p.get("cache_config")
        if res.exported is not None and not res.vllm_present:
            res.problems.append(f"{M.PRESENCE_MARKER.name} is not exported: this does not look like a vLLM target")
        return res

    def sample(self, at: float | None = None) -> Sample:
        return self._sample

    def diagnostics(self, ids: list[str], at: float | None = None) -> list[DiagValue]:
        stored = self.doc.get("diagnostics", {}) or {}
        out = []
        for did in ids:
            q = DIAG[did]
            if did not in stored:
                out.append(DiagValue(did, q.title, None, "not recorded in the fixture"))
                continue
            raw = stored[did]
            if isinstance(raw, dict):
                value: DiagPayload = {str(k): float(v) for k, v in raw.items()}
            else:
                value = _number(raw, f"{self.path}:diagnostics.{did}")
            out.append(DiagValue(did, q.title, value, "" if value is not None else "null in the fixture"))
        return out

    def verify_samples(self, count: int, interval_s: float, history: bool) -> list[Sample]:
        raw = self.doc.get("verify_samples", []) or []
        if not isinstance(raw, list):
            raise SourceError(f"{self.path}: verify_samples must be a list of samples, oldest first")
        return [_sample_from(item, f"{self.path}:verify_samples[{i}]") for i, item in enumerate(raw)]


# --------------------------------------------------------------------------
# Prometheus


class PrometheusSource:
    def __init__(self, url: str, ctx: QueryContext, timeout: float = 10.0, vllm_url: str | None = None) -> None:
        self.client = PromClient(url, timeout)
        self.ctx = ctx
        self.vllm_url = vllm_url.rstrip("/") if vllm_url else None
        self.timeout = timeout
        self.label = f"prometheus {self.client.base}"

    def probe(self) -> ProbeResult:
        res = ProbeResult(source=self.label)
        try:
            info = self.client.buildinfo()
        except SourceError as exc:
            res.problems.append(str(exc))
            return res
        res.reachable = True
        res.prometheus_version = info.get("version")
        start = time.time() - duration_seconds(self.ctx.restart_lookback)
        sel = self.ctx.selector.target_only()
        match = "{__name__=~\"" + M.NAME_PREFIX + ".+\"" + ("," + sel[1:-1] if sel else "") + "}"
        names = self.client.metric_names(match, start)
        exported, unknown = set(), []
        for series in names:
            try:
                exported.add(M.lookup_series(series)[0].name)
            except (KeyError, ValueError):
                unknown.append(series)
        res.exported, res.unknown_vllm_series = exported, sorted(unknown)
        if not res.vllm_present:
            res.problems.append(
                f"no {M.PRESENCE_MARKER.name} series in the last {self.ctx.restart_lookback}"
                + (f" for selector {{{self.ctx.selector}}}" if self.ctx.selector.matchers else "")
                + ": is Prometheus scraping the vLLM /metrics endpoint?"
            )
        marker = self.ctx.s(M.PRESENCE_MARKER)
        targets = self.client.query(
            f"max by (job, instance) (up{sel}) and on (job, instance) "
            f"group by (job, instance) (last_over_time({marker}[{self.ctx.restart_lookback}]))"
        )
        res.targets = [{**s.labels, "up": f"{s.value:g}"} for s in targets]
        cfg = self.client.query(cache_config_query(self.ctx))
        if cfg:
            res.cache_config = {k: v for k, v in cfg[0].labels.items() if k not in ("__name__", "job", "instance")}
        if self.vllm_url:
            self._probe_vllm(res)
        return res

    def _probe_vllm(self, res: ProbeResult) -> None:
        for path in ("/version", "/health"):
            url = self.vllm_url + path  # type: ignore[operator]
            try:
                with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=self.timeout) as r:
                    body = r.read()
                    if path == "/version":
                        res.vllm_version = str(json.loads(body).get("version"))
                    else:
                        res.vllm_health = f"HTTP {r.status}"
            except urllib.error.HTTPError as exc:
                if path == "/health":
                    res.vllm_health = f"HTTP {exc.code}" + (" (engine dead)" if exc.code == 503 else "")
                else:
                    res.problems.append(f"{url}: HTTP {exc.code}")
            except (OSError, ValueError) as exc:
                res.problems.append(f"{url}: {exc}")

    def sample(self, at: float | None = None) -> Sample:
        sample = Sample(at=at if at is not None else time.time())
        for sig in GOLDEN:
            if sig.query is None:
                continue
            q = sig.query(self.ctx)
            sample.queries[sig.id] = q
            value, why = self.client.scalar(q, at)
            sample.set(sig.id, value, why)
        self._lora(sample, at)
        return sample

    def _lora(self, sample: Sample, at: float | None) -> None:
        q = lora_info_query(self.ctx)
        for sid in LORA_SIGNALS:
            sample.queries[sid] = q
        series = self.client.query(q, at)
        if not series:
            for sid in LORA_SIGNALS:
                sample.set(sid, None, f"{M.LORA_REQUESTS_INFO.name} has no series ({M.LORA_REQUESTS_INFO.condition})")
            return
        now = at if at is not None else time.time()
        horizon = now - duration_seconds(self.ctx.window)
        per_target: dict[tuple[str, str], list[Series]] = {}
        for s in series:
            per_target.setdefault((s.labels.get("job", ""), s.labels.get("instance", "")), []).append(s)
        worst: tuple[float, float, float, float] | None = None  # (waiting_not_running, running, max, sets)
        for group in per_target.values():
            latest = max(group, key=lambda s: s.value)  # value = time of the last update
            running = {a for a in latest.labels.get("running_lora_adapters", "").split(",") if a}
            waiting = {a for a in latest.labels.get("waiting_lora_adapters", "").split(",") if a}
            try:
                slots = float(latest.labels.get("max_lora", ""))
            except ValueError:
                continue
            sets = float(sum(1 for s in group if s.value >= horizon))
            cand = (float(len(waiting - running)), float(len(running)), slots, sets)
            if worst is None or cand[0] > worst[0]:
                worst = cand
        if worst is None:
            for sid in LORA_SIGNALS:
                sample.set(sid, None, "max_lora label unparsable")
            return
        for sid, v in zip(("lora_waiting_not_running", "lora_running", "lora_max", "lora_sets_in_window"), worst, strict=False):
            sample.set(sid, v)

    def diagnostics(self, ids: list[str], at: float | None = None) -> list[DiagValue]:
        out = []
        for did in ids:
            dq = DIAG[did]
            q = dq.query(self.ctx)
            try:
                series = self.client.query(q, at)
            except SourceError as exc:
                out.append(DiagValue(did, dq.title, None, str(exc), q))
                continue
            if not series:
                out.append(DiagValue(did, dq.title, None, "no series matched", q))
            elif dq.vector:
                vec = {",".join(f"{k}={v}" for k, v in sorted(s.labels.items())) or "-": s.value for s in series}
                out.append(DiagValue(did, dq.title, vec, "", q))
            else:
                out.append(DiagValue(did, dq.title, series[0].value, "", q))
        return out

    def verify_samples(self, count: int, interval_s: float, history: bool) -> list[Sample]:
        if history:
            now = time.time()
            return [self.sample(now - k * interval_s) for k in range(count - 1, -1, -1)]
        samples = []
        for i in range(count):
            if i:
                time.sleep(interval_s)
            samples.append(self.sample())
        return samples
