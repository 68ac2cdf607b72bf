"""Thresholds and windows: the shipped TOML default, user files, --set overrides.

Keys are ``section.key``.  Unknown keys are rejected (a typo must not silently
disable a rule); a key that is absent after merging stays absent, and every
rule that needs it reports *insufficient evidence* (see :mod:`vllm_doctor.rules`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from vllm_doctor.errors import ConfigError
from vllm_doctor.selector import check_duration

ValueType = Literal["number", "int", "duration"]

# Every key vllm-doctor understands, with its type and meaning.
SCHEMA: dict[str, tuple[ValueType, str]] = {
    "window.range": ("duration", "rate()/max_over_time() range"),
    "window.baseline_offset": ("duration", "offset of the baseline window"),
    "window.restart_lookback": ("duration", "range for restart / target-down detection"),
    "traffic.min_request_rate": ("number", "req/s below which ratio signals are not computed"),
    "stall.running_min": ("number", "running requests for an engine stall"),
    "stall.token_rate_max": ("number", "tok/s at or below which prefill and decode count as stopped"),
    "crash.restarts_min": ("number", "restarts in the lookback that make a crash loop"),
    "cold_start.restarts_min": ("number", "restarts in the lookback that make a cold start"),
    "cold_start.ttft_p95_s": ("number", "TTFT p95 (s) that counts as slow"),
    "preempt.rate_per_s": ("number", "preemptions per second"),
    "preempt.kv_usage_high": ("number", "KV-cache usage (0..1) that counts as full"),
    "retry_storm.http_rate_ratio": ("number", "HTTP request rate on the generation routes relative to the baseline"),
    "retry_storm.unfinished_ratio": ("number", "share of those HTTP requests that vLLM did not record as finished"),
    "retry_storm.queue_p95_s": ("number", "queue-time p95 (s) that supports a retry storm"),
    "prefix_cache.baseline_hit_ratio_min": ("number", "baseline hit ratio needed to speak of a collapse"),
    "prefix_cache.drop_fraction": ("number", "relative drop of the hit ratio that counts as a collapse"),
    "quality.length_ratio_increase": ("number", "absolute rise of the finished_reason=length share"),
    "quality.gen_len_change_factor": ("number", "factor by which mean output length may change"),
    "quality.repetition_ratio": ("number", "share of finished_reason=repetition"),
    "lora.deferred_waiting_min": ("number", "deferred waiting requests"),
    "verify.samples": ("int", "samples verify takes from Prometheus"),
    "verify.interval": ("duration", "time between verify samples"),
    "verify.min_clean_samples": ("int", "consecutive clean samples needed for 'resolved'"),
}

DEFAULT_RESOURCE = "thresholds.toml"


@dataclass
class Config:
    values: dict[str, float | int | str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def get(self, key: str) -> float | int | str | None:
        if key not in SCHEMA:
            raise KeyError(f"unknown configuration key {key!r}")
        return self.values.get(key)

    def number(self, key: str) -> float | None:
        v = self.get(key)
        return None if v is None else float(v)

    def duration(self, key: str, fallback: str) -> str:
        v = self.get(key)
        return fallback if v is None else str(v)


def _coerce(key: str, raw: object, where: str) -> float | int | str:
    if key not in SCHEMA:
        known = ", ".join(sorted(SCHEMA))
        raise ConfigError(f"{where}: unknown key {key!r}. Known keys: {known}")
    kind = SCHEMA[key][0]
    if kind == "duration":
        return check_duration(str(raw), f"{where}: {key}")
    if isinstance(raw, bool):
        raise ConfigError(f"{where}: {key} must be a number, got a boolean")
    if isinstance(raw, str):
        try:
            raw = float(raw) if kind == "number" else int(raw)
        except ValueError:
            raise ConfigError(f"{where}: {key} must be {'an integer' if kind == 'int' else 'a number'}, got {raw!r}") from None
    if kind == "int":
        if not isinstance(raw, int) or raw < 1:
            raise ConfigError(f"{where}: {key} must be a positive integer, got {raw!r}")
        return raw
    if not isinstance(raw, (int, float)):
        raise ConfigError(f"{where}: {key} must be a number, got {raw!r}")
    if raw < 0:
        raise ConfigError(f"{where}: {key} must not be negative, got {raw!r}")
    return float(raw)


def _flatten(data: dict[str, object], where: str) -> dict[str, float | int | str]:
    out: dict[str, float | int | str] = {}
    for section, body in data.items():
        if not isinstance(body, dict):
            raise ConfigError(f"{where}: top-level key {section!r} must be a [table] of thresholds")
        for key, raw in body.items():
            full = f"{section}.{key}"
            out[full] = _coerce(full, raw, where)
    return out


def default_text() -> str:
    return resources.files("vllm_doctor").joinpath("data", DEFAULT_RESOURCE).read_text(encoding="utf-8")


def parse_toml(text: str, where: str) -> dict[str, float | int | str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc})") from None
    return _flatten(data, where)


def load_config(
    files: list[Path] | None = None,
    overrides: list[str] | None = None,
    use_defaults: bool = True,
) -> Config:
    """Shipped defaults (unless *use_defaults* is False), then *files*, then ``key=value`` overrides."""
    cfg = Config()
    if use_defaults:
        cfg.values.update(parse_toml(default_text(), f"(shipped default {DEFAULT_RESOURCE})"))
        cfg.sources.append(f"vllm_doctor/data/{DEFAULT_RESOURCE}")
    for path in files or []:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the thresholds file {path}: {exc.strerror}") from None
        cfg.values.update(parse_toml(text, str(path)))
        cfg.sources.append(str(path))
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. --set preempt.rate_per_s=0.5")
        cfg.values[key.strip()] = _coerce(key.strip(), raw.strip(), f"--set {item}")
        cfg.sources.append(f"--set {item}")
    return cfg
