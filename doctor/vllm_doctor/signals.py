"""The signal catalog: every number vllm-doctor looks at, and its PromQL.

Two groups:

* **golden** signals, collected for every triage (traffic, latency, errors,
  saturation, cache, lifecycle, LoRA);
* **diagnostic** queries, run by ``diagnose`` for one playbook only; they may
  return a vector (one value per engine, per reason...).

Queries are built only from :mod:`vllm_doctor.metrics`; nothing here spells a
metric name.  Every query aggregates (``sum``/``max``/``min``) so that a golden
signal is one number; an empty answer means *missing*, never zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vllm_doctor import metrics as M
from vllm_doctor.selector import Selector

Category = Literal["traffic", "latency", "errors", "saturation", "cache", "lifecycle", "lora"]


@dataclass(frozen=True)
class QueryContext:
    selector: Selector
    window: str  # rate/max_over_time range, e.g. "5m"
    baseline_offset: str  # how far back the baseline lies, e.g. "1d"
    restart_lookback: str  # range for restart / target-down detection, e.g. "30m"

    def s(self, metric: M.Metric, suffix: str = "", regex: dict[str, str] | None = None, **fixed: str) -> str:
        """A series selector: name with suffix, plus scoped label matchers."""
        return metric.series(suffix) + self.selector.for_metric(metric, regex, **fixed)

    def rate(self, metric: M.Metric, suffix: str = "total", baseline: bool = False,
             regex: dict[str, str] | None = None, **fixed: str) -> str:
        off = f" offset {self.baseline_offset}" if baseline else ""
        return f"rate({self.s(metric, suffix, regex, **fixed)}[{self.window}]{off})"

    def quantile(self, q: float, metric: M.Metric, baseline: bool = False, by: str = "") -> str:
        grouping = f"le{', ' + by if by else ''}"
        return f"histogram_quantile({q}, sum by ({grouping}) ({self.rate(metric, 'bucket', baseline)}))"

    def mean(self, metric: M.Metric, baseline: bool = False) -> str:
        return f"sum({self.rate(metric, 'sum', baseline)}) / sum({self.rate(metric, 'count', baseline)})"


QueryFn = Callable[[QueryContext], str]


@dataclass(frozen=True)
class Signal:
    id: str
    title: str  # Chinese, short
    unit: str
    category: Category
    metrics: tuple[M.Metric, ...]
    query: QueryFn | None  # None: extracted by a dedicated reader (LoRA info)
    optional: bool = False  # may be absent on a healthy server (feature off)
    baseline: bool = False


def _up_min(c: QueryContext) -> str:
    # Targets that exported vLLM metrics recently, and the worst `up` they had.
    marker = c.s(M.PRESENCE_MARKER)
    return (
        f"min(min_over_time(up{c.selector.target_only()}[{c.restart_lookback}])"
        f" and on (job, instance) group by (job, instance) (last_over_time({marker}[{c.restart_lookback}])))"
    )


def _http_generate(c: QueryContext, baseline: bool = False, by: str = "") -> str:
    """POSTs to the generation routes that the API server finished handling, per second.

    The instrumentator counts a request in a ``finally`` when the ASGI app returns
    or raises, so an attempt whose client hung up is counted too (status stays the
    2xx already sent, or 500 if nothing was sent); vLLM's ``request_success`` never
    sees such an attempt (``AsyncLLM.generate`` aborts it with ``internal=True``).
    """
    inner = c.rate(M.HTTP_REQUESTS, baseline=baseline, regex={"handler": M.GENERATE_HANDLER_REGEX}, method="POST")
    return f"sum by ({by}) ({inner})" if by else f"sum({inner})"


def _reason(c: QueryContext, reason: str, baseline: bool = False) -> str:
    return f"sum({c.rate(M.REQUEST_SUCCESS, baseline=baseline, finished_reason=reason)})"


GOLDEN: tuple[Signal, ...] = (
    # traffic
    Signal("request_rate", "完成请求速率", "req/s", "traffic", (M.REQUEST_SUCCESS,),
           lambda c: f"sum({c.rate(M.REQUEST_SUCCESS)})"),
    Signal("request_rate_baseline", "完成请求速率（基线）", "req/s", "traffic", (M.REQUEST_SUCCESS,),
           lambda c: f"sum({c.rate(M.REQUEST_SUCCESS, baseline=True)})", baseline=True),
    Signal("http_request_rate", "生成接口 HTTP 请求速率（含客户端断开的）", "req/s", "traffic", (M.HTTP_REQUESTS,),
           _http_generate),
    Signal("http_request_rate_baseline", "生成接口 HTTP 请求速率（基线）", "req/s", "traffic", (M.HTTP_REQUESTS,),
           lambda c: _http_generate(c, baseline=True), baseline=True),
    Signal("prompt_token_rate", "prefill token 速率", "tok/s", "traffic", (M.PROMPT_TOKENS,),
           lambda c: f"sum({c.rate(M.PROMPT_TOKENS)})"),
    Signal("generation_token_rate", "生成 token 速率", "tok/s", "traffic", (M.GENERATION_TOKENS,),
           lambda c: f"sum({c.rate(M.GENERATION_TOKENS)})"),
    # latency
    Signal("ttft_p95", "首 token 延迟 p95", "s", "latency", (M.TIME_TO_FIRST_TOKEN,),
           lambda c: c.quantile(0.95, M.TIME_TO_FIRST_TOKEN)),
    Signal("itl_p95", "token 间延迟 p95", "s", "latency", (M.INTER_TOKEN_LATENCY,),
           lambda c: c.quantile(0.95, M.INTER_TOKEN_LATENCY)),
    Signal("e2e_p95", "端到端延迟 p95", "s", "latency", (M.E2E_REQUEST_LATENCY,),
           lambda c: c.quantile(0.95, M.E2E_REQUEST_LATENCY)),
    Signal("queue_p95", "排队时间 p95", "s", "latency", (M.REQUEST_QUEUE_TIME,),
           lambda c: c.quantile(0.95, M.REQUEST_QUEUE_TIME)),
    # errors / outcome mix
    Signal("abort_rate", "abort 结束速率", "req/s", "errors", (M.REQUEST_SUCCESS,),
           lambda c: _reason(c, "abort")),
    Signal("error_rate", "error 结束速率", "req/s", "errors", (M.REQUEST_SUCCESS,),
           lambda c: _reason(c, "error")),
    Signal("length_rate", "length 结束速率", "req/s", "errors", (M.REQUEST_SUCCESS,),
           lambda c: _reason(c, "length")),
    Signal("length_rate_baseline", "length 结束速率（基线）", "req/s", "errors", (M.REQUEST_SUCCESS,),
           lambda c: _reason(c, "length", baseline=True), baseline=True),
    Signal("repetition_rate", "repetition 结束速率", "req/s", "errors", (M.REQUEST_SUCCESS,),
           lambda c: _reason(c, "repetition")),
    Signal("gen_tokens_per_request", "每请求平均输出长度", "tok", "errors", (M.REQUEST_GENERATION_TOKENS,),
           lambda c: c.mean(M.REQUEST_GENERATION_TOKENS)),
    Signal("gen_tokens_per_request_baseline", "每请求平均输出长度（基线）", "tok", "errors",
           (M.REQUEST_GENERATION_TOKENS,), lambda c: c.mean(M.REQUEST_GENERATION_TOKENS, baseline=True),
           baseline=True),
    Signal("corrupted_rate", "NaN logits 请求速率", "req/s", "errors", (M.CORRUPTED_REQUESTS,),
           lambda c: f"sum({c.rate(M.CORRUPTED_REQUESTS)})", optional=True),
    # saturation
    Signal("running", "运行中请求数", "req", "saturation", (M.NUM_REQUESTS_RUNNING,),
           lambda c: f"sum({c.s(M.NUM_REQUESTS_RUNNING)})"),
    Signal("waiting", "等待中请求数", "req", "saturation", (M.NUM_REQUESTS_WAITING,),
           lambda c: f"sum({c.s(M.NUM_REQUESTS_WAITING)})"),
    Signal("waiting_deferred", "因约束推迟的等待请求数", "req", "saturation", (M.NUM_REQUESTS_WAITING_BY_REASON,),
           lambda c: f"sum({c.s(M.NUM_REQUESTS_WAITING_BY_REASON, reason='deferred')})"),
    Signal("kv_usage_max", "KV cache 使用率（窗口内最大）", "ratio", "saturation", (M.KV_CACHE_USAGE_PERC,),
           lambda c: f"max(max_over_time({c.s(M.KV_CACHE_USAGE_PERC)}[{c.window}]))"),
    Signal("preempt_rate", "抢占速率", "1/s", "saturation", (M.NUM_PREEMPTIONS,),
           lambda c: f"sum({c.rate(M.NUM_PREEMPTIONS)})"),
    # cache
    Signal("prefix_queries_rate", "prefix cache 查询 token 速率", "tok/s", "cache", (M.PREFIX_CACHE_QUERIES,),
           lambda c: f"sum({c.rate(M.PREFIX_CACHE_QUERIES)})"),
    Signal("prefix_hits_rate", "prefix cache 命中 token 速率", "tok/s", "cache", (M.PREFIX_CACHE_HITS,),
           lambda c: f"sum({c.rate(M.PREFIX_CACHE_HITS)})"),
    Signal("prefix_queries_rate_baseline", "prefix cache 查询速率（基线）", "tok/s", "cache",
           (M.PREFIX_CACHE_QUERIES,), lambda c: f"sum({c.rate(M.PREFIX_CACHE_QUERIES, baseline=True)})",
           baseline=True),
    Signal("prefix_hits_rate_baseline", "prefix cache 命中速率（基线）", "tok/s", "cache", (M.PREFIX_CACHE_HITS,),
           lambda c: f"sum({c.rate(M.PREFIX_CACHE_HITS, baseline=True)})", baseline=True),
    # lifecycle
    Signal("restarts", "回看窗口内的重启次数", "count", "lifecycle", (M.PROMPT_TOKENS,),
           lambda c: f"max(resets({c.s(M.PROMPT_TOKENS, 'total')}[{c.restart_lookback}]))"),
    Signal("target_up_min", "抓取目标 up 的最小值", "0/1", "lifecycle", (M.PRESENCE_MARKER,), _up_min),
    Signal("awake_min", "引擎 awake 状态最小值", "0/1", "lifecycle", (M.ENGINE_SLEEP_STATE,),
           lambda c: f"min({c.s(M.ENGINE_SLEEP_STATE, sleep_state='awake')})"),
    # LoRA (read from the info gauge's labels by the source, not by one PromQL)
    Signal("lora_max", "max_loras（GPU LoRA 槽位）", "adapters", "lora", (M.LORA_REQUESTS_INFO,), None,
           optional=True),
    Signal("lora_running", "运行中的 adapter 数", "adapters", "lora", (M.LORA_REQUESTS_INFO,), None,
           optional=True),
    Signal("lora_waiting_not_running", "等待中且不在运行集合的 adapter 数", "adapters", "lora",
           (M.LORA_REQUESTS_INFO,), None, optional=True),
    Signal("lora_sets_in_window", "窗口内出现过的 adapter 组合数", "sets", "lora", (M.LORA_REQUESTS_INFO,), None,
           optional=True),
)

GOLDEN_BY_ID: dict[str, Signal] = {s.id: s for s in GOLDEN}
LORA_SIGNALS = tuple(s.id for s in GOLDEN if s.category == "lora")


def lora_info_query(c: QueryContext) -> str:
    """Raw series of the LoRA info gauge; the source reduces them to the lora_* signals."""
    return c.s(M.LORA_REQUESTS_INFO)


def cache_config_query(c: QueryContext) -> str:
    return c.s(M.CACHE_CONFIG_INFO)


# --------------------------------------------------------------------------
# diagnostic queries (deep dive, per playbook)


@dataclass(frozen=True)
class DiagQuery:
    id: str
    title: str
    query: QueryFn
    vector: bool = False  # True: a value per label set


def _by(c: QueryContext, labels: str, inner: str, agg: str = "sum") -> str:
    return f"{agg} by ({labels}) ({inner})"


DIAG: dict[str, DiagQuery] = {
    q.id: q
    for q in (
        DiagQuery("kv_usage_by_engine", "各引擎 KV cache 最大使用率",
                  lambda c: _by(c, "model_name, engine",
                                f"max_over_time({c.s(M.KV_CACHE_USAGE_PERC)}[{c.window}])", "max"), True),
        DiagQuery("preempt_rate_by_engine", "各引擎抢占速率",
                  lambda c: _by(c, "model_name, engine", c.rate(M.NUM_PREEMPTIONS)), True),
        DiagQuery("waiting_by_reason", "等待请求按原因拆分",
                  lambda c: _by(c, "reason", c.s(M.NUM_REQUESTS_WAITING_BY_REASON)), True),
        DiagQuery("prompt_tokens_p95", "prompt 长度 p95", lambda c: c.quantile(0.95, M.REQUEST_PROMPT_TOKENS)),
        DiagQuery("max_tokens_param_p95", "max_tokens 参数 p95",
                  lambda c: c.quantile(0.95, M.REQUEST_PARAMS_MAX_TOKENS)),
        DiagQuery("max_tokens_param_p95_baseline", "max_tokens 参数 p95（基线）",
                  lambda c: c.quantile(0.95, M.REQUEST_PARAMS_MAX_TOKENS, baseline=True)),
        DiagQuery("n_param_p95", "n 参数 p95", lambda c: c.quantile(0.95, M.REQUEST_PARAMS_N)),
        DiagQuery("generation_rate_by_engine", "各引擎生成 token 速率",
                  lambda c: _by(c, "model_name, engine", c.rate(M.GENERATION_TOKENS)), True),
        DiagQuery("running_by_engine", "各引擎运行中请求数",
                  lambda c: _by(c, "model_name, engine", c.s(M.NUM_REQUESTS_RUNNING)), True),
        DiagQuery("restarts_by_target", "各抓取目标的重启次数",
                  lambda c: _by(c, "job, instance",
                                f"resets({c.s(M.PROMPT_TOKENS, 'total')}[{c.restart_lookback}])", "max"), True),
        DiagQuery("finish_rate_by_reason", "完成请求按 finished_reason 拆分",
                  lambda c: _by(c, "finished_reason", c.rate(M.REQUEST_SUCCESS)), True),
        DiagQuery("finish_rate_by_reason_baseline", "完成请求按 finished_reason 拆分（基线）",
                  lambda c: _by(c, "finished_reason", c.rate(M.REQUEST_SUCCESS, baseline=True)), True),
        DiagQuery("http_rate_by_status", "生成接口 HTTP 请求按 handler、状态码拆分",
                  lambda c: _http_generate(c, by="handler, status"), True),
        DiagQuery("http_rate_by_status_baseline", "生成接口 HTTP 请求按 handler、状态码拆分（基线）",
                  lambda c: _http_generate(c, baseline=True, by="handler, status"), True),
        DiagQuery("gen_tokens_p50", "输出长度 p50", lambda c: c.quantile(0.5, M.REQUEST_GENERATION_TOKENS)),
        DiagQuery("gen_tokens_p50_baseline", "输出长度 p50（基线）",
                  lambda c: c.quantile(0.5, M.REQUEST_GENERATION_TOKENS, baseline=True)),
        DiagQuery("hit_ratio_by_engine", "各引擎 prefix cache 命中率",
                  lambda c: f"{_by(c, 'model_name, engine', c.rate(M.PREFIX_CACHE_HITS))}"
                            f" / {_by(c, 'model_name, engine', c.rate(M.PREFIX_CACHE_QUERIES))}", True),
        DiagQuery("external_hit_ratio", "KV connector 外部 prefix 命中率",
                  lambda c: f"sum({c.rate(M.EXTERNAL_PREFIX_CACHE_HITS)})"
                            f" / sum({c.rate(M.EXTERNAL_PREFIX_CACHE_QUERIES)})"),
        DiagQuery("prompt_tokens_by_source", "prompt token 按来源拆分（本地计算 / 本地缓存 / KV 传输）",
                  lambda c: _by(c, "source", c.rate(M.PROMPT_TOKENS_BY_SOURCE)), True),
        DiagQuery("cached_prompt_fraction", "prompt token 中来自缓存的比例",
                  lambda c: f"sum({c.rate(M.PROMPT_TOKENS_CACHED)}) / sum({c.rate(M.PROMPT_TOKENS)})"),
        DiagQuery("prefill_time_p95", "prefill 阶段耗时 p95", lambda c: c.quantile(0.95, M.REQUEST_PREFILL_TIME)),
        DiagQuery("ttft_p95_by_engine", "各引擎首 token 延迟 p95",
                  lambda c: c.quantile(0.95, M.TIME_TO_FIRST_TOKEN, by="model_name, engine"), True),
        DiagQuery("queue_p95", "排队时间 p95", lambda c: c.quantile(0.95, M.REQUEST_QUEUE_TIME)),
        DiagQuery("up_by_target", "各抓取目标 up 最小值",
                  lambda c: f"min by (job, instance) (min_over_time(up{c.selector.target_only()}"
                            f"[{c.restart_lookback}]))", True),
    )
}


def all_queries(c: QueryContext) -> dict[str, str]:
    """Every PromQL string vllm-doctor can send, by id (for the cheatsheet test and --explain)."""
    out = {s.id: s.query(c) for s in GOLDEN if s.query is not None}
    out["lora_info"] = lora_info_query(c)
    out["cache_config"] = cache_config_query(c)
    out.update({f"diag.{q.id}": q.query(c) for q in DIAG.values()})
    return out
