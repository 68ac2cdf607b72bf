"""A small, read-only client for the Prometheus HTTP API (stdlib urllib only).

Only GET requests are sent.  Every call has a timeout; every failure becomes a
:class:`SourceError` whose message names the URL and suggests a fix.
"""

from __future__ import annotations

import http.client
import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from vllm_doctor.errors import SourceError


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    value: float


class PromClient:
    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        parsed = urllib.parse.urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SourceError(f"--prometheus {base_url!r}: expected an http(s) URL such as http://127.0.0.1:9090")
        if timeout <= 0:
            raise SourceError(f"--timeout must be positive, got {timeout}")
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    # -- transport ---------------------------------------------------------

    def _get(self, path: str, params: dict[str, str | list[str]] | None = None) -> object:
        query = urllib.parse.urlencode(params or {}, doseq=True)
        url = f"{self.base}{path}" + (f"?{query}" if query else "")
        req = urllib.request.Request(url, method="GET", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                detail = json.loads(exc.read()).get("error", "")
            except (ValueError, AttributeError, OSError):
                pass
            raise SourceError(
                f"Prometheus answered HTTP {exc.code} for {path}" + (f": {detail}" if detail else "")
                + (" (is the PromQL valid for this Prometheus version?)" if exc.code == 400 else "")
            ) from None
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets, short reads
            reason = getattr(exc, "reason", exc)
            raise SourceError(
                f"cannot reach Prometheus at {self.base} ({reason}); check --prometheus, the network, "
                f"or raise --timeout (now {self.timeout:g}s)"
            ) from None
        try:
            doc = json.loads(body)
        except ValueError:
            raise SourceError(f"{url}: the answer is not JSON; is {self.base} really a Prometheus server?") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            err = doc.get("error", "unknown error") if isinstance(doc, dict) else "malformed answer"
            raise SourceError(f"Prometheus rejected {path}: {err}")
        return doc.get("data")

    # -- API ---------------------------------------------------------------

    def buildinfo(self) -> dict[str, str]:
        data = self._get("/api/v1/status/buildinfo")
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def metric_names(self, match: str, start: float | None = None) -> list[str]:
        params: dict[str, str | list[str]] = {"match[]": [match]}
        if start is not None:
            params["start"] = f"{start:.3f}"
        data = self._get("/api/v1/label/__name__/values", params)
        return [str(x) for x in data] if isinstance(data, list) else []

    def query(self, promql: str, at: float | None = None) -> list[Series]:
        """Instant query; a scalar answer becomes one unlabelled series."""
        params: dict[str, str | list[str]] = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if not isinstance(data, dict):
            raise SourceError(f"unexpected answer to query {promql!r}")
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar" and isinstance(result, list):
            return [Series({}, _num(result[1]))]
        if kind != "vector" or not isinstance(result, list):
            raise SourceError(f"query {promql!r} returned {kind!r}; vllm-doctor expects an instant vector")
        return [Series(dict(item.get("metric", {})), _num(item["value"][1])) for item in result]

    def scalar(self, promql: str, at: float | None = None) -> tuple[float | None, str]:
        """One number or (None, reason).  More than one series is a bug in the query."""
        series = self.query(promql, at)
        if not series:
            return None, "no series matched (metric absent, selector too narrow, or target down)"
        if len(series) > 1:
            raise SourceError(f"query {promql!r} returned {len(series)} series; expected one (aggregate it)")
        v = series[0].value
        if not math.isfinite(v):
            return None, "the query returned NaN/Inf (usually: no observations in the window)"
        return v, ""


def _num(text: object) -> float:
    try:
        return float(str(text))
    except ValueError:
        return math.nan
