"""The one registry of metric names vllm-doctor uses.

Every ``vllm:`` name below (:data:`ALL`) is created by the pinned vLLM release (v0.26.0) in
``vllm/v1/metrics/``; ``source_file`` and ``defined_in`` say exactly where, and
``tests/doctor/test_doctor_metric_registry.py`` parses the provisioned source
tree and fails the build if a name, its kind, an extra label or a label value is
not there any more.  No other module of the package may spell a ``vllm:`` name;
a test enforces that too.

Prometheus naming (what the ``prometheus_client`` library that vLLM uses puts on
the wire, and therefore what PromQL must say):

* a counter ``vllm:x`` is exposed as ``vllm:x_total`` (plus ``vllm:x_created``);
* a histogram ``vllm:x`` as ``vllm:x_bucket`` (with ``le``), ``vllm:x_sum``,
  ``vllm:x_count``;
* a gauge keeps its name.

Series that vLLM does not create but Prometheus does (``up``) are listed in
:data:`PROMETHEUS_SERIES`, separately, so nobody mistakes them for vLLM's.

One metric on vLLM's /metrics is not vLLM's own: the API server mounts
prometheus-fastapi-instrumentator (``vllm/entrypoints/serve/instrumentator/metrics.py``,
``Instrumentator(...).add().instrument(app)``, i.e. the library's default metrics) on the
same registry.  Its request counter is in :data:`FRONTEND` (not in :data:`ALL`),
with ``package`` naming the library; the registry test checks it against the
installed library (vLLM v0.26.0 requires ``prometheus-fastapi-instrumentator >= 8.0.0``)
and checks the vLLM side (the attach call, the excluded handlers, the routes of
:data:`GENERATE_HANDLERS`) against the pinned tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["counter", "gauge", "histogram"]

NAME_PREFIX = "vllm:"  # every vLLM metric name starts with it

LOGGERS = "vllm/v1/metrics/loggers.py"
STAT_LOGGER_INIT = "PrometheusStatLogger.__init__"

# Labels every per-engine metric carries (``labelnames`` in PrometheusStatLogger).
ENGINE_LABELS: tuple[str, ...] = ("model_name", "engine")


@dataclass(frozen=True)
class Metric:
    name: str  # exactly as passed to the prometheus_client constructor
    kind: Kind
    help: str  # our own one-line description
    source_file: str = LOGGERS
    defined_in: str = STAT_LOGGER_INIT  # "Class.method" or "function"
    labels: tuple[str, ...] = ENGINE_LABELS
    extra_labels: tuple[str, ...] = ()  # labels beyond ENGINE_LABELS, checked in the source
    label_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    condition: str = ""  # when vLLM exports it at all; "" = always
    package: str = "vllm"  # the distribution whose source_file creates it
    constructed_as: str = ""  # the literal given to the constructor, when it differs from ``name``

    @property
    def all_labels(self) -> tuple[str, ...]:
        return self.labels + self.extra_labels

    def series(self, suffix: str = "") -> str:
        """The on-the-wire series name; *suffix* is one of total/bucket/sum/count/""."""
        allowed = {"counter": ("total",), "gauge": ("",), "histogram": ("bucket", "sum", "count")}[self.kind]
        if suffix not in allowed:
            raise ValueError(f"{self.name} is a {self.kind}; series suffix must be one of {allowed}, not {suffix!r}")
        return f"{self.name}_{suffix}" if suffix else self.name

    @property
    def total(self) -> str:
        return self.series("total")

    @property
    def bucket(self) -> str:
        return self.series("bucket")

    @property
    def sum(self) -> str:
        return self.series("sum")

    @property
    def count(self) -> str:
        return self.series("count")


# Label values (checked against the source, see the test).
FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")  # vllm/v1/engine/__init__.py FINISH_REASON_STRINGS
WAITING_REASONS = ("capacity", "deferred")  # loggers.py WAITING_REASON_CAPACITY/_DEFERRED
SLEEP_STATES = ("awake", "weights_offloaded", "discard_all")
PROMPT_TOKEN_SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")  # stats.py PromptTokenStats.ALL_SOURCES

# --------------------------------------------------------------------------
# scheduler state (gauges)

NUM_REQUESTS_RUNNING = Metric("vllm:num_requests_running", "gauge", "requests in the running batch")
NUM_REQUESTS_WAITING = Metric("vllm:num_requests_waiting", "gauge", "requests waiting to be scheduled")
NUM_REQUESTS_WAITING_BY_REASON = Metric(
    "vllm:num_requests_waiting_by_reason",
    "gauge",
    "waiting requests split by reason: capacity, or deferred (LoRA budget, KV transfer, blocked)",
    extra_labels=("reason",),
    label_values={"reason": WAITING_REASONS},
)
ENGINE_SLEEP_STATE = Metric(
    "vllm:engine_sleep_state",
    "gauge",
    "sleep state; sleep_state=\"awake\" is 0 while the engine sleeps",
    extra_labels=("sleep_state",),
    label_values={"sleep_state": SLEEP_STATES},
)
KV_CACHE_USAGE_PERC = Metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache block usage, 1 = full")

# --------------------------------------------------------------------------
# counters

CORRUPTED_REQUESTS = Metric(
    "vllm:corrupted_requests",
    "counter",
    "requests whose logits contained NaN",
    condition="only when VLLM_COMPUTE_NANS_IN_LOGITS=1",
)
PREFIX_CACHE_QUERIES = Metric("vllm:prefix_cache_queries", "counter", "prefix-cache lookups, in tokens")
PREFIX_CACHE_HITS = Metric("vllm:prefix_cache_hits", "counter", "prefix-cache hits, in tokens")
EXTERNAL_PREFIX_CACHE_QUERIES = Metric(
    "vllm:external_prefix_cache_queries", "counter", "KV-connector (cross-instance) prefix lookups, in tokens"
)
EXTERNAL_PREFIX_CACHE_HITS = Metric(
    "vllm:external_prefix_cache_hits", "counter", "KV-connector (cross-instance) prefix hits, in tokens"
)
NUM_PREEMPTIONS = Metric("vllm:num_preemptions", "counter", "preemptions (a running request loses its KV blocks)")
PROMPT_TOKENS = Metric("vllm:prompt_tokens", "counter", "prefill tokens processed")
PROMPT_TOKENS_BY_SOURCE = Metric(
    "vllm:prompt_tokens_by_source",
    "counter",
    "prompt tokens by where they came from: computed here, local prefix cache, KV transfer",
    extra_labels=("source",),
    label_values={"source": PROMPT_TOKEN_SOURCES},
)
PROMPT_TOKENS_CACHED = Metric("vllm:prompt_tokens_cached", "counter", "prompt tokens served from cache (local + external)")
GENERATION_TOKENS = Metric("vllm:generation_tokens", "counter", "generated tokens")
REQUEST_SUCCESS = Metric(
    "vllm:request_success",
    "counter",
    "finished requests by finished_reason (stop/length/abort/error/repetition)",
    extra_labels=("finished_reason",),
    label_values={"finished_reason": FINISHED_REASONS},
)

# --------------------------------------------------------------------------
# histograms

REQUEST_PROMPT_TOKENS = Metric("vllm:request_prompt_tokens", "histogram", "prompt length per finished request")
REQUEST_GENERATION_TOKENS = Metric(
    "vllm:request_generation_tokens", "histogram", "output length per finished request"
)
REQUEST_PARAMS_MAX_TOKENS = Metric("vllm:request_params_max_tokens", "histogram", "the max_tokens request parameter")
REQUEST_PARAMS_N = Metric("vllm:request_params_n", "histogram", "the n request parameter")
TIME_TO_FIRST_TOKEN = Metric("vllm:time_to_first_token_seconds", "histogram", "time to first token")
INTER_TOKEN_LATENCY = Metric("vllm:inter_token_latency_seconds", "histogram", "inter-token latency")
E2E_REQUEST_LATENCY = Metric("vllm:e2e_request_latency_seconds", "histogram", "end-to-end request latency")
REQUEST_QUEUE_TIME = Metric("vllm:request_queue_time_seconds", "histogram", "time spent WAITING")
REQUEST_PREFILL_TIME = Metric("vllm:request_prefill_time_seconds", "histogram", "time spent in PREFILL")
REQUEST_DECODE_TIME = Metric("vllm:request_decode_time_seconds", "histogram", "time spent in DECODE")
REQUEST_TIME_PER_OUTPUT_TOKEN = Metric(
    "vllm:request_time_per_output_token_seconds", "histogram", "mean time per output token, one value per request"
)

# --------------------------------------------------------------------------
# info-style gauges (value 1 or a timestamp; the payload is in the labels)

LORA_REQUESTS_INFO = Metric(
    "vllm:lora_requests_info",
    "gauge",
    "LoRA scheduling state in labels; value = time of the last update",
    labels=(),
    extra_labels=("max_lora", "waiting_lora_adapters", "running_lora_adapters"),
    condition="only with --enable-lora",
)
CACHE_CONFIG_INFO = Metric(
    "vllm:cache_config_info",
    "gauge",
    "CacheConfig fields as labels (block_size, gpu_memory_utilization, num_gpu_blocks, ...)",
    defined_in="PrometheusStatLogger.log_metrics_info",
    labels=("engine",),
    condition="after engine initialisation",
)

# --------------------------------------------------------------------------
# the API server's HTTP metrics (prometheus-fastapi-instrumentator, not vLLM)

INSTRUMENTATOR_PACKAGE = "prometheus_fastapi_instrumentator"
INSTRUMENTATOR_METRICS = "prometheus_fastapi_instrumentator/metrics.py"
VLLM_ATTACH = "vllm/entrypoints/serve/instrumentator/metrics.py"  # where vLLM mounts it (function attach_router)

# The routes that create generation requests (each an APIRouter POST path in the pinned tree).
GENERATE_HANDLERS: tuple[str, ...] = (
    "/v1/chat/completions",  # vllm/entrypoints/openai/chat_completion/api_router.py
    "/v1/completions",  # vllm/entrypoints/openai/completion/api_router.py
    "/v1/responses",  # vllm/entrypoints/openai/responses/api_router.py
    "/v1/messages",  # vllm/entrypoints/anthropic/api_router.py
    "/inference/v1/generate",  # vllm/entrypoints/scale_out/token_in_token_out/api_router.py
)
GENERATE_HANDLER_REGEX = "|".join(GENERATE_HANDLERS)  # PromQL =~ is fully anchored

HTTP_REQUESTS = Metric(
    "http_requests",
    "counter",
    "HTTP requests the API server handled, by method/status/handler; counted when the request ends, "
    "client disconnects included",
    source_file=INSTRUMENTATOR_METRICS,
    defined_in="default",
    labels=(),
    extra_labels=("method", "status", "handler"),
    condition="the OpenAI-compatible API server (vllm serve); not for /metrics, /health, /load, /ping, /version, "
    "/server_info",
    package=INSTRUMENTATOR_PACKAGE,
    constructed_as="http_requests_total",  # prometheus_client drops a counter's _total and adds it back on the wire
)

FRONTEND: tuple[Metric, ...] = (HTTP_REQUESTS,)

ALL: tuple[Metric, ...] = (
    NUM_REQUESTS_RUNNING,
    NUM_REQUESTS_WAITING,
    NUM_REQUESTS_WAITING_BY_REASON,
    ENGINE_SLEEP_STATE,
    KV_CACHE_USAGE_PERC,
    CORRUPTED_REQUESTS,
    PREFIX_CACHE_QUERIES,
    PREFIX_CACHE_HITS,
    EXTERNAL_PREFIX_CACHE_QUERIES,
    EXTERNAL_PREFIX_CACHE_HITS,
    NUM_PREEMPTIONS,
    PROMPT_TOKENS,
    PROMPT_TOKENS_BY_SOURCE,
    PROMPT_TOKENS_CACHED,
    GENERATION_TOKENS,
    REQUEST_SUCCESS,
    REQUEST_PROMPT_TOKENS,
    REQUEST_GENERATION_TOKENS,
    REQUEST_PARAMS_MAX_TOKENS,
    REQUEST_PARAMS_N,
    TIME_TO_FIRST_TOKEN,
    INTER_TOKEN_LATENCY,
    E2E_REQUEST_LATENCY,
    REQUEST_QUEUE_TIME,
    REQUEST_PREFILL_TIME,
    REQUEST_DECODE_TIME,
    REQUEST_TIME_PER_OUTPUT_TOKEN,
    LORA_REQUESTS_INFO,
    CACHE_CONFIG_INFO,
)

BY_NAME: dict[str, Metric] = {m.name: m for m in ALL + FRONTEND}

# The metric whose presence proves "this target is a vLLM server exporting metrics".
PRESENCE_MARKER = NUM_REQUESTS_RUNNING

# Series Prometheus itself synthesises for every scrape target (not vLLM's).
PROMETHEUS_SERIES: dict[str, str] = {
    "up": "1 if the last scrape of the target succeeded, else 0 (Prometheus, per target)",
}

# Labels Prometheus attaches to every scraped series; a selector may always use them.
TARGET_LABELS: tuple[str, ...] = ("job", "instance")


def lookup_series(series: str) -> tuple[Metric, str]:
    """Map an on-the-wire series name back to (metric, suffix); KeyError if unknown."""
    if series in BY_NAME and BY_NAME[series].kind == "gauge":
        return BY_NAME[series], ""
    for suffix in ("total", "bucket", "sum", "count"):
        base = series.removesuffix("_" + suffix)
        if base != series and base in BY_NAME:
            metric = BY_NAME[base]
            metric.series(suffix)  # raises ValueError on a wrong suffix for the kind
            return metric, suffix
    raise KeyError(series)
