"""Label selectors and PromQL durations.

A selector scopes every query to one deployment, e.g.
``--selector 'job="vllm",model_name="llama-3-8b"'``.  Matchers on ``model_name``
or ``engine`` are dropped for the few metrics that do not carry those labels
(the LoRA info gauge has neither, the cache-config info gauge has no
``model_name``, the API server's HTTP counter has neither); target labels (``job``, ``instance``, relabelled ones) apply to
every series, because Prometheus attaches them at scrape time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllm_doctor.errors import ConfigError
from vllm_doctor.metrics import ALL, ENGINE_LABELS, FRONTEND, Metric

_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_DURATION = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}

# Labels that only some vLLM metrics carry; a matcher on one of them is dropped
# for a metric that lacks it instead of making that query return nothing.
_METRIC_OWN_LABELS = frozenset(ENGINE_LABELS) | frozenset(
    label for m in ALL + FRONTEND for label in m.extra_labels
)


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str

    def render(self) -> str:
        return f'{self.label}{self.op}"{self.value}"'


@dataclass(frozen=True)
class Selector:
    matchers: tuple[Matcher, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> Selector:
        """Parse ``a="x",b=~"y.*"`` (braces optional); raise ConfigError if malformed."""
        if not text or not text.strip():
            return cls()
        body = text.strip()
        if body.startswith("{") and body.endswith("}"):
            body = body[1:-1]
        matchers: list[Matcher] = []
        pos = 0
        while pos < len(body):
            m = _MATCHER.match(body, pos)
            if not m:
                raise ConfigError(
                    f"cannot parse the label selector {text!r} near {body[pos:]!r}; "
                    'expected comma-separated matchers like job="vllm",model_name=~"llama.*"'
                )
            matchers.append(Matcher(m.group(1), m.group(2), m.group(3)))
            pos = m.end()
        return cls(tuple(matchers))

    def for_metric(self, metric: Metric, regex: dict[str, str] | None = None, **fixed: str) -> str:
        """The ``{...}`` part for *metric*, plus fixed equality (and, in *regex*, ``=~``) matchers."""
        parts = [
            mt.render()
            for mt in self.matchers
            if mt.label not in _METRIC_OWN_LABELS or mt.label in metric.all_labels
        ]
        for op, pairs in (("=", fixed), ("=~", regex or {})):
            for label, value in pairs.items():
                if label not in metric.all_labels:
                    raise ValueError(f"{metric.name} has no label {label!r}")
                parts.append(f'{label}{op}"{value}"')
        return "{" + ",".join(parts) + "}" if parts else ""

    def target_only(self) -> str:
        """Only the target-label matchers (for series such as ``up``)."""
        parts = [mt.render() for mt in self.matchers if mt.label not in _METRIC_OWN_LABELS]
        return "{" + ",".join(parts) + "}" if parts else ""

    def __str__(self) -> str:
        return ",".join(mt.render() for mt in self.matchers)


def check_duration(text: str, what: str) -> str:
    """Validate a PromQL duration such as ``5m`` or ``1h30m``; return it unchanged."""
    if not isinstance(text, str) or not _DURATION.match(text):
        raise ConfigError(f"{what}: {text!r} is not a PromQL duration (examples: 30s, 5m, 1h, 1d, 1h30m)")
    if duration_seconds(text) <= 0:
        raise ConfigError(f"{what}: {text!r} must be longer than zero")
    return text


def duration_seconds(text: str) -> float:
    return sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
