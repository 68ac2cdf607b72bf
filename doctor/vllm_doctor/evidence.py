"""Evidence: one sample of the golden signals plus the ratios derived from them.

A value is either a finite float or *missing*; a missing value always carries a
reason ("no series", "no traffic in the window", ...), which the triage and the
report repeat verbatim.  Zero is a value, never a stand-in for "don't know".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from vllm_doctor.config import Config
from vllm_doctor.signals import GOLDEN, GOLDEN_BY_ID


@dataclass
class Sample:
    """Raw golden-signal values at one instant (None = missing, with a reason)."""

    values: dict[str, float | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    at: float | None = None  # unix time the sample describes, when known
    queries: dict[str, str] = field(default_factory=dict)  # PromQL actually sent, by signal id

    def set(self, sid: str, value: float | None, reason: str = "") -> None:
        if sid not in GOLDEN_BY_ID:
            raise KeyError(f"unknown signal {sid!r}")
        if value is not None and not math.isfinite(value):
            value, reason = None, reason or "the query returned NaN/Inf (usually: no observations in the window)"
        self.values[sid] = value
        if value is None:
            self.reasons[sid] = reason or "no data"
        else:
            self.reasons.pop(sid, None)


@dataclass(frozen=True)
class Derived:
    id: str
    title: str
    formula: str  # human-readable, for the report
    fn: Callable[[Evidence], tuple[float | None, str]]


class Evidence:
    """A :class:`Sample` plus derived ratios; ``get`` answers (value, why-missing)."""

    def __init__(self, sample: Sample, config: Config, exported: set[str] | None = None) -> None:
        self.sample = sample
        self.config = config
        self.exported = exported  # base metric names the target exports, when known

    def get(self, sid: str) -> tuple[float | None, str]:
        if sid in DERIVED:
            return DERIVED[sid].fn(self)
        if sid not in GOLDEN_BY_ID:
            raise KeyError(f"unknown signal {sid!r}")
        if sid not in self.sample.values:
            return None, "not collected"
        v = self.sample.values[sid]
        return v, "" if v is not None else self.sample.reasons.get(sid, "no data")

    def value(self, sid: str) -> float | None:
        return self.get(sid)[0]

    def missing_golden(self) -> dict[str, str]:
        """Required (non-optional) golden signals that are missing, with reasons."""
        out = {}
        for s in GOLDEN:
            if s.optional:
                continue
            v, why = self.get(s.id)
            if v is None:
                out[s.id] = why
        return out


def _ratio(num: str, den: str, traffic: str = "") -> Callable[[Evidence], tuple[float | None, str]]:
    """num/den; with *traffic*, only when that request rate reaches traffic.min_request_rate."""

    def fn(ev: Evidence) -> tuple[float | None, str]:
        n, why_n = ev.get(num)
        d, why_d = ev.get(den)
        if n is None:
            return None, f"{num} missing ({why_n})"
        if d is None:
            return None, f"{den} missing ({why_d})"
        if traffic:
            floor = ev.config.number("traffic.min_request_rate")
            rate, why_r = ev.get(traffic)
            if floor is None:
                return None, "threshold traffic.min_request_rate is not configured"
            if rate is None:
                return None, f"{traffic} missing ({why_r})"
            if rate < floor:
                return None, f"too little traffic: {traffic}={rate:.4g} < traffic.min_request_rate={floor:g}"
        if d == 0:
            return None, f"{den} is 0 (nothing to divide by)"
        return n / d, ""

    return fn


DERIVED: dict[str, Derived] = {
    d.id: d
    for d in (
        Derived("abort_ratio", "abort 占比", "abort_rate / request_rate",
                _ratio("abort_rate", "request_rate", "request_rate")),
        Derived("error_ratio", "error 占比", "error_rate / request_rate",
                _ratio("error_rate", "request_rate", "request_rate")),
        Derived("length_ratio", "length 结束占比", "length_rate / request_rate",
                _ratio("length_rate", "request_rate", "request_rate")),
        Derived("length_ratio_baseline", "length 结束占比（基线）", "length_rate_baseline / request_rate_baseline",
                _ratio("length_rate_baseline", "request_rate_baseline", "request_rate_baseline")),
        Derived("repetition_ratio", "repetition 结束占比", "repetition_rate / request_rate",
                _ratio("repetition_rate", "request_rate", "request_rate")),
        Derived("request_rate_ratio", "请求速率 / 基线", "request_rate / request_rate_baseline",
                _ratio("request_rate", "request_rate_baseline", "request_rate_baseline")),
        Derived("http_rate_ratio", "生成接口 HTTP 请求速率 / 基线", "http_request_rate / http_request_rate_baseline",
                _ratio("http_request_rate", "http_request_rate_baseline", "http_request_rate_baseline")),
        Derived("prefix_hit_ratio", "prefix cache 命中率", "prefix_hits_rate / prefix_queries_rate",
                _ratio("prefix_hits_rate", "prefix_queries_rate")),
        Derived("prefix_hit_ratio_baseline", "prefix cache 命中率（基线）",
                "prefix_hits_rate_baseline / prefix_queries_rate_baseline",
                _ratio("prefix_hits_rate_baseline", "prefix_queries_rate_baseline")),
        Derived("gen_len_ratio", "平均输出长度 / 基线", "gen_tokens_per_request / gen_tokens_per_request_baseline",
                _ratio("gen_tokens_per_request", "gen_tokens_per_request_baseline", "request_rate")),
    )
}


def _unfinished(ev: Evidence) -> tuple[float | None, str]:
    """Share of the generation requests the API server handled that vLLM did not record as finished.

    Both counters move when a request ends: the API server's HTTP counter when the
    HTTP exchange ends (a client disconnect included), vLLM's finished-request
    counter when the engine finishes it.  A request abandoned by its client only reaches the
    first, so the gap is the abandoned attempts, plus requests rejected before the
    engine (4xx) and minus the extra finishes of n > 1 (each sample finishes on
    its own).  Negative values are kept: they mean "no gap", not "missing".
    """
    ratio, why = _ratio("request_rate", "http_request_rate", "http_request_rate")(ev)  # the checks and reasons
    if ratio is None:
        return None, why
    http, done = ev.value("http_request_rate"), ev.value("request_rate")
    assert http is not None and done is not None
    return (http - done) / http, ""


def _prefix_drop(ev: Evidence) -> tuple[float | None, str]:
    now, why_now = ev.get("prefix_hit_ratio")
    base, why_base = ev.get("prefix_hit_ratio_baseline")
    if now is None:
        return None, f"prefix_hit_ratio missing ({why_now})"
    if base is None:
        return None, f"prefix_hit_ratio_baseline missing ({why_base})"
    if base == 0:
        return None, "the baseline hit ratio is 0; a drop is undefined"
    return 1.0 - now / base, ""


def _length_rise(ev: Evidence) -> tuple[float | None, str]:
    now, why_now = ev.get("length_ratio")
    base, why_base = ev.get("length_ratio_baseline")
    if now is None:
        return None, f"length_ratio missing ({why_now})"
    if base is None:
        return None, f"length_ratio_baseline missing ({why_base})"
    return now - base, ""


def _gen_len_change(ev: Evidence) -> tuple[float | None, str]:
    r, why = ev.get("gen_len_ratio")
    if r is None:
        return None, f"gen_len_ratio missing ({why})"
    if r <= 0:
        return math.inf, ""  # no output at all, relative to a non-zero baseline
    return max(r, 1.0 / r), ""


def _lora_free(ev: Evidence) -> tuple[float | None, str]:
    slots, why_s = ev.get("lora_max")
    running, why_r = ev.get("lora_running")
    if slots is None:
        return None, f"lora_max missing ({why_s})"
    if running is None:
        return None, f"lora_running missing ({why_r})"
    return slots - running, ""


for _d in (
    Derived("http_unfinished_ratio", "HTTP 请求中没有在引擎里完成的比例",
            "(http_request_rate - request_rate) / http_request_rate", _unfinished),
    Derived("prefix_hit_drop", "命中率相对基线的降幅", "1 - prefix_hit_ratio / prefix_hit_ratio_baseline",
            _prefix_drop),
    Derived("length_ratio_rise", "length 占比比基线的升幅", "length_ratio - length_ratio_baseline", _length_rise),
    Derived("gen_len_change", "输出长度变化倍数", "max(gen_len_ratio, 1 / gen_len_ratio)", _gen_len_change),
    Derived("lora_slots_free", "空闲 GPU LoRA 槽位", "lora_max - lora_running", _lora_free),
):
    DERIVED[_d.id] = _d


def describe(sid: str) -> str:
    """Short title of a golden or derived signal."""
    if sid in DERIVED:
        return DERIVED[sid].title
    return GOLDEN_BY_ID[sid].title
