"""A synthetic vLLM /metrics endpoint for the Prometheus integration test.

Serves, on 127.0.0.1, the Prometheus text format that vLLM's PrometheusStatLogger
produces (names from vllm_doctor.metrics, which the registry test checks against
the pinned source; the `_total`/`_bucket` layout of prometheus_client), with
values driven by a :class:`Scenario` the test switches at will.  Counters are
integrated over wall time at each scrape, so rate() in Prometheus recovers the
scenario's rates.  Standard library only.

Besides vLLM's own metrics it serves the API server's ``http_requests_total``
(prometheus-fastapi-instrumentator, labels method/status/handler, no model_name or
engine): every finished request plus every attempt a client abandoned
(``abandon_rate``; vLLM's ``request_success`` never sees those), requests rejected
with 4xx, and a little non-generation traffic (GET /v1/models) that queries on the
generate routes must filter out.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from vllm_doctor import metrics as M

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500,
           5000, 10000)
LABELS = {"model_name": "synthetic", "engine": "0"}
# Bucket bounds of the histograms that do not use BUCKETS, as PrometheusStatLogger.__init__ sets them.
_TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                 40.0, 80.0)
_REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                            240.0, 480.0, 960.0, 1920.0, 7680.0)
_BUCKETS_OF = {
    M.REQUEST_TIME_PER_OUTPUT_TOKEN.name: _TPOT_BUCKETS,
    M.REQUEST_DECODE_TIME.name: _REQUEST_LATENCY_BUCKETS,
}


@dataclasses.dataclass
class Scenario:
    request_rate: float = 10.0  # finished requests per second
    finish_mix: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"stop": 0.88, "length": 0.1, "abort": 0.02, "error": 0.0, "repetition": 0.0})
    prompt_len: float = 800.0
    gen_len: float = 250.0
    preempt_rate: float = 0.0
    prefix_hit_ratio: float = 0.5
    kv_usage: float = 0.6
    running: float = 30.0
    waiting: float = 1.0
    deferred: float = 0.0
    ttft: float = 0.4
    itl: float = 0.03
    e2e: float = 8.0
    queue: float = 0.1
    prefill: float = 0.3
    decode: float = 7.5  # seconds from the first to the last token
    tpot: float = 0.03  # mean time per output token of a request
    max_tokens: float = 1024.0
    n: float = 1.0
    awake: float = 1.0
    external_hit_ratio: float = 0.0  # share of prompt tokens that came over a KV connector
    abandon_rate: float = 0.0  # attempts per second the client hung up on (HTTP counter only)
    rejected_rate: float = 0.0  # generation requests per second rejected with a 4xx before the engine
    other_http_rate: float = 0.5  # GET /v1/models per second


_HIST_VALUE = {
    M.TIME_TO_FIRST_TOKEN.name: "ttft",
    M.INTER_TOKEN_LATENCY.name: "itl",
    M.E2E_REQUEST_LATENCY.name: "e2e",
    M.REQUEST_QUEUE_TIME.name: "queue",
    M.REQUEST_PREFILL_TIME.name: "prefill",
    M.REQUEST_DECODE_TIME.name: "decode",
    M.REQUEST_TIME_PER_OUTPUT_TOKEN.name: "tpot",
    M.REQUEST_PROMPT_TOKENS.name: "prompt_len",
    M.REQUEST_GENERATION_TOKENS.name: "gen_len",
    M.REQUEST_PARAMS_MAX_TOKENS.name: "max_tokens",
    M.REQUEST_PARAMS_N.name: "n",
}


def _lbl(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> str:
    items = {**(LABELS if base is None else base), **(extra or {})}
    return "{" + ",".join(f'{k}="{v}"' for k, v in items.items()) + "}" if items else ""


class SyntheticVLLM:
    def __init__(self) -> None:
        self.scenario = Scenario()
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self.counters: dict[str, float] = {}
        self.success: dict[str, float] = {r: 0.0 for r in M.FINISHED_REASONS}
        self.by_source: dict[str, float] = {src: 0.0 for src in M.PROMPT_TOKEN_SOURCES}
        self.http: dict[tuple[str, str, str], float] = {}  # (method, status, handler) -> count
        self.hist: dict[str, tuple[list[float], float, float]] = {
            name: ([0.0] * len(_BUCKETS_OF.get(name, BUCKETS)), 0.0, 0.0) for name in _HIST_VALUE}
        self.scrapes = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- state ---------------------------------------------------------------

    def set(self, **changes: Any) -> None:
        with self._lock:
            self._advance()
            scenario = dataclasses.replace(self.scenario, **changes)
            if scenario.ttft < scenario.queue:
                # vLLM's TTFT runs from arrival and so contains the queue wait (vllm/v1/metrics/stats.py)
                raise ValueError(f"scenario has TTFT {scenario.ttft} s below queue time {scenario.queue} s; "
                                 "set ttft to at least queue + prefill")
            self.scenario = scenario

    def reset_scenario(self) -> None:
        with self._lock:
            self._advance()
            self.scenario = Scenario()

    def _add(self, name: str, amount: float) -> None:
        self.counters[name] = self.counters.get(name, 0.0) + amount

    def _advance(self) -> None:
        now = time.monotonic()
        dt, self._last = now - self._last, now
        s = self.scenario
        reqs = s.request_rate * dt
        prompt = reqs * s.prompt_len
        self._add(M.PROMPT_TOKENS.name, prompt)
        self._add(M.GENERATION_TOKENS.name, reqs * s.gen_len)
        self._add(M.NUM_PREEMPTIONS.name, s.preempt_rate * dt)
        self._add(M.PREFIX_CACHE_QUERIES.name, prompt)
        self._add(M.PREFIX_CACHE_HITS.name, prompt * s.prefix_hit_ratio)
        local, external = prompt * s.prefix_hit_ratio, prompt * s.external_hit_ratio
        self._add(M.PROMPT_TOKENS_CACHED.name, local + external)
        self.by_source["local_compute"] += prompt - local - external
        self.by_source["local_cache_hit"] += local
        self.by_source["external_kv_transfer"] += external
        self._add(M.EXTERNAL_PREFIX_CACHE_QUERIES.name, prompt if s.external_hit_ratio else 0.0)
        self._add(M.EXTERNAL_PREFIX_CACHE_HITS.name, external)
        for key, rate in ((("POST", "2xx", "/v1/chat/completions"), s.request_rate + s.abandon_rate),
                          (("POST", "4xx", "/v1/chat/completions"), s.rejected_rate),
                          (("GET", "2xx", "/v1/models"), s.other_http_rate)):
            self.http[key] = self.http.get(key, 0.0) + rate * dt
        for reason, frac in s.finish_mix.items():
            self.success[reason] += reqs * frac
        for name, attr in _HIST_VALUE.items():
            value = float(getattr(s, attr))
            buckets, total, count = self.hist[name]
            for i, le in enumerate(_BUCKETS_OF.get(name, BUCKETS)):
                if value <= le:
                    buckets[i] += reqs
            self.hist[name] = (buckets, total + reqs * value, count + reqs)

    # -- exposition --------------------------------------------------------------

    def exposition(self) -> str:
        with self._lock:
            self._advance()
            self.scrapes += 1
            s = self.scenario
            out: list[str] = []

            def family(series: str, kind: str) -> None:
                out.append(f"# HELP {series} synthetic")
                out.append(f"# TYPE {series} {kind}")

            for m, value in ((M.NUM_REQUESTS_RUNNING, s.running), (M.NUM_REQUESTS_WAITING, s.waiting + s.deferred),
                             (M.KV_CACHE_USAGE_PERC, s.kv_usage)):
                family(m.name, "gauge")
                out.append(f"{m.name}{_lbl()} {value}")
            m = M.NUM_REQUESTS_WAITING_BY_REASON
            family(m.name, "gauge")
            out.append(f"{m.name}{_lbl({'reason': 'capacity'})} {s.waiting}")
            out.append(f"{m.name}{_lbl({'reason': 'deferred'})} {s.deferred}")
            m = M.ENGINE_SLEEP_STATE
            family(m.name, "gauge")
            out.append(f"{m.name}{_lbl({'sleep_state': 'awake'})} {s.awake}")
            out.append(f"{m.name}{_lbl({'sleep_state': 'weights_offloaded'})} {1.0 - s.awake}")
            out.append(f"{m.name}{_lbl({'sleep_state': 'discard_all'})} 0.0")
            for name, value in sorted(self.counters.items()):
                metric = M.BY_NAME[name]
                family(metric.total, "counter")
                out.append(f"{metric.total}{_lbl()} {value}")
            family(M.REQUEST_SUCCESS.total, "counter")
            for reason, value in self.success.items():
                out.append(f"{M.REQUEST_SUCCESS.total}{_lbl({'finished_reason': reason})} {value}")
            family(M.PROMPT_TOKENS_BY_SOURCE.total, "counter")
            for source, value in self.by_source.items():
                out.append(f"{M.PROMPT_TOKENS_BY_SOURCE.total}{_lbl({'source': source})} {value}")
            family(M.HTTP_REQUESTS.total, "counter")
            for (method, status, handler), value in sorted(self.http.items()):
                http = {"method": method, "status": status, "handler": handler}
                out.append(f"{M.HTTP_REQUESTS.total}{_lbl(base=http)} {value}")
            for name, (buckets, total, count) in self.hist.items():
                metric = M.BY_NAME[name]
                family(metric.name, "histogram")
                for le, c in zip(_BUCKETS_OF.get(name, BUCKETS), buckets, strict=True):
                    out.append(f"{metric.bucket}{_lbl({'le': str(float(le))})} {c}")
                out.append(f"{metric.bucket}{_lbl({'le': '+Inf'})} {count}")
                out.append(f"{metric.count}{_lbl()} {count}")
                out.append(f"{metric.sum}{_lbl()} {total}")
            m = M.CACHE_CONFIG_INFO
            family(m.name, "gauge")
            info = {"block_size": "16", "cache_dtype": "auto", "enable_prefix_caching": "True",
                    "gpu_memory_utilization": "0.92", "num_gpu_blocks": "1000", "engine": "0"}
            out.append(f"{m.name}{_lbl(base=info)} 1.0")
            return "\n".join(out) + "\n"

    # -- server --------------------------------------------------------------------

    def start(self) -> int:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="synthetic-vllm", daemon=True)
        self._thread.start()
        return self._server.server_address[1]

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
