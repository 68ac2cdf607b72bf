"""Phase 4, deep dive: per-playbook read-only queries and checks.

The tool runs the PromQL itself (read-only).  Host-level checks (logs,
``nvidia-smi``, ``py-spy dump``) are printed for a human to run: vllm-doctor
has no access to the hosts and never executes commands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vllm_doctor import metrics as M
from vllm_doctor.sources import DiagValue, Source


@dataclass(frozen=True)
class Check:
    """A read-only check for a human: what to run, what to look for."""

    title: str
    command: str
    look_for: str


_SCRAPE = "curl -s http://<vllm-host>:8000/metrics | grep -E '^({names})'"


def _scrape(*metrics: str) -> str:
    return _SCRAPE.format(names="|".join(metrics))


QUERIES: dict[str, tuple[str, ...]] = {
    "preempt-cascade": ("kv_usage_by_engine", "preempt_rate_by_engine", "waiting_by_reason", "prompt_tokens_p95",
                        "max_tokens_param_p95", "n_param_p95", "queue_p95"),
    "nccl-hang": ("running_by_engine", "generation_rate_by_engine", "up_by_target"),
    "gpu-oom": ("restarts_by_target", "up_by_target", "kv_usage_by_engine", "prompt_tokens_p95",
                "max_tokens_param_p95", "n_param_p95"),
    "client-retry-storm": ("http_rate_by_status", "http_rate_by_status_baseline", "finish_rate_by_reason",
                           "finish_rate_by_reason_baseline", "queue_p95", "waiting_by_reason"),
    "prefix-cache-collapse": ("hit_ratio_by_engine", "cached_prompt_fraction", "prompt_tokens_by_source",
                              "external_hit_ratio", "kv_usage_by_engine", "restarts_by_target"),
    "cold-start": ("restarts_by_target", "ttft_p95_by_engine", "prefill_time_p95", "queue_p95"),
    "quality-regression": ("finish_rate_by_reason", "finish_rate_by_reason_baseline", "gen_tokens_p50",
                           "gen_tokens_p50_baseline", "max_tokens_param_p95", "max_tokens_param_p95_baseline"),
    "lora-thrashing": ("waiting_by_reason", "queue_p95", "kv_usage_by_engine"),
}

CHECKS: dict[str, tuple[Check, ...]] = {
    "preempt-cascade": (
        Check("直接看一眼 /metrics", _scrape(M.KV_CACHE_USAGE_PERC.name, M.NUM_PREEMPTIONS.total,
                                            M.NUM_REQUESTS_WAITING.name),
              "KV 使用率贴近 1、抢占计数持续增长"),
        Check("启动日志里的 KV 容量", "grep -E 'GPU KV cache size|Maximum concurrency for' <vllm 日志>",
              "KV cache 能容纳的 token 数，和实际并发 × 平均序列长度对比"),
        Check("当前启动参数", "ps -o args= -p <vllm PID>  # 或查看部署清单",
              "--max-num-seqs、--max-num-batched-tokens、--gpu-memory-utilization、--max-model-len、--kv-cache-dtype"),
    ),
    "nccl-hang": (
        Check("进程栈（只读）", "py-spy dump --pid <EngineCore / worker PID>",
              "各 rank 停在集合通信（all_reduce / all_gather 等）里，或某个 rank 停在别处"),
        Check("GPU 状态", "nvidia-smi", "利用率长时间不变、进程仍在但没有进展"),
        Check("日志", "grep -E 'RPC call to execute_model timed out|NCCL|Watchdog' <vllm 日志>",
              "执行超时（TP>1 的多进程执行器受 VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS 约束）或 NCCL 报错"),
        Check("健康检查", "curl -s -o /dev/null -w '%{http_code}' http://<vllm-host>:8000/health",
              "503 表示引擎已死（EngineDeadError）；200 但没有进展更像是挂起"),
    ),
    "gpu-oom": (
        Check("日志里的 OOM", "grep -E 'CUDA out of memory|OutOfMemoryError|No available memory for the cache blocks"
                            "|larger than the available KV cache memory' <vllm 日志>",
              "运行期 OOM，或启动时 KV cache 放不下一个 max_model_len 的请求"),
        Check("同卡的其他进程", "nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
              "vLLM 之外占用显存的进程（gpu_memory_utilization 只约束本实例）"),
        Check("容器重启原因", "kubectl describe pod <pod>  # Last State / Reason",
              "OOMKilled 是主机内存不足，不是 GPU 显存；两者处置不同"),
    ),
    "client-retry-storm": (
        Check("HTTP 请求与完成请求", _scrape(M.HTTP_REQUESTS.total, M.REQUEST_SUCCESS.total),
              f"生成接口（handler 为 {', '.join(M.GENERATE_HANDLERS)}）的 {M.HTTP_REQUESTS.total} 增长明显快于 "
              f"{M.REQUEST_SUCCESS.total} 各原因之和；客户端断开的请求只出现在前者（finished_reason=\"abort\" 不会因此增长）"),
        Check("API server 日志", "grep -E 'Request .* aborted' <vllm 日志>  # 需要 --enable-log-requests",
              "大量请求在完成前被中止（客户端断开）"),
        Check("网关 / 客户端日志", "按 client 与请求内容统计 60 秒内的重复请求",
              "同一请求被反复提交；客户端超时短于 e2e p95"),
    ),
    "prefix-cache-collapse": (
        Check("prefix caching 是否开启", _scrape(M.CACHE_CONFIG_INFO.name), "enable_prefix_caching=\"True\""),
        Check("prompt 前缀是否变了", "对比变更前后的 system prompt / chat template 的前几百个 token",
              "前缀里出现时间戳、请求 ID 等每次都不同的内容"),
        Check("路由是否变了", "检查网关 / 负载均衡的会话亲和（prefix affinity）配置与最近变更",
              "同一前缀的请求被打散到更多副本"),
    ),
    "cold-start": (
        Check("为什么重启", "kubectl get events / 部署记录 / 进程退出日志", "发布、扩容、崩溃还是节点迁移"),
        Check("启动耗时", "grep -E 'Model loading took|Loading weights took|torch.compile took|Graph capturing finished' <vllm 日志>",
              "模型加载、编译、CUDA graph 捕获各自花了多久"),
        Check("编译缓存位置", "env | grep -E 'VLLM_CACHE_ROOT|VLLM_DISABLE_COMPILE_CACHE|XDG_CACHE_HOME'",
              "缓存目录是否落在重启后会丢失的临时盘上"),
    ),
    "quality-regression": (
        Check("版本", "curl -s http://<vllm-host>:8000/version", "与上一个已知良好的版本对比"),
        Check("配置差异", "对比前后两次部署的启动参数与模型目录中的 generation_config.json",
              "--generation-config（默认 auto：读模型目录的 generation_config.json）、--revision、--tokenizer-revision、"
              "--chat-template、--dtype、--quantization、--kv-cache-dtype"),
        Check("离线评测", "用固定评测集分别请求当前部署与上一版本", "质量差异必须由评测确认，指标只是线索"),
    ),
    "lora-thrashing": (
        Check("LoRA 调度状态", _scrape(M.LORA_REQUESTS_INFO.name),
              "值最大的那条 series 是最新状态；running 数等于 max_lora 且 waiting 里有不在 running 的 adapter"),
        Check("adapter 分布", "按 adapter 名统计最近请求", "同时活跃的 adapter 数是否远超 --max-loras"),
        Check("当前启动参数", "ps -o args= -p <vllm PID>", "--max-loras、--max-cpu-loras、--max-lora-rank"),
    ),
}


@dataclass
class DiagReport:
    playbook: str
    values: list[DiagValue]
    checks: tuple[Check, ...]
    findings: list[str] = field(default_factory=list)


def _fmt(v: float) -> str:
    return "NaN" if not math.isfinite(v) else f"{v:.4g}"


def _findings(playbook: str, values: dict[str, DiagValue]) -> list[str]:
    out: list[str] = []
    for dv in values.values():
        if isinstance(dv.value, dict) and len(dv.value) > 1:
            finite = sorted(((v, k) for k, v in dv.value.items() if math.isfinite(v)), reverse=True)
            if len(finite) > 1 and finite[0][0] > finite[1][0]:  # a unique maximum is worth pointing at
                out.append(f"{dv.title}: 最高的是 {finite[0][1]} = {_fmt(finite[0][0])}")
    if playbook == "nccl-hang":
        running = values.get("running_by_engine")
        gen = values.get("generation_rate_by_engine")
        if running and gen and isinstance(running.value, dict) and isinstance(gen.value, dict):
            stalled = [k for k, r in running.value.items() if r > 0 and gen.value.get(k, 0.0) == 0.0]
            if stalled and len(stalled) < len(running.value):
                out.append(f"只有部分引擎停滞：{', '.join(stalled)} —— 先查这些 rank / DP 副本")
            elif stalled:
                out.append("所有有请求的引擎都停滞 —— 更像是整组集合通信卡住")
    if playbook == "client-retry-storm":
        for did in ("http_rate_by_status", "http_rate_by_status_baseline"):
            dv = values.get(did)
            if dv and isinstance(dv.value, dict):
                bad = {k: v for k, v in dv.value.items() if "status=2xx" not in k and math.isfinite(v) and v > 0}
                if bad:
                    out.append(f"{dv.title}: 非 2xx 的请求 {', '.join(f'{k} = {_fmt(v)}/s' for k, v in sorted(bad.items()))}"
                               " —— 它们同样不进完成计数，先排除被拒绝的请求")
    if playbook in ("client-retry-storm", "quality-regression"):
        now, base = values.get("finish_rate_by_reason"), values.get("finish_rate_by_reason_baseline")
        if now and base and isinstance(now.value, dict) and isinstance(base.value, dict):
            for key, v in sorted(now.value.items()):
                b = base.value.get(key)
                if b is not None and math.isfinite(v) and math.isfinite(b):
                    out.append(f"{key}: {_fmt(v)}/s（基线 {_fmt(b)}/s）")
    return out


def diagnose(source: Source, playbook: str, at: float | None = None) -> DiagReport:
    if playbook not in QUERIES:
        raise KeyError(f"unknown playbook {playbook!r}; known: {', '.join(QUERIES)}")
    values = source.diagnostics(list(QUERIES[playbook]), at)
    report = DiagReport(playbook, values, CHECKS[playbook])
    report.findings = _findings(playbook, {v.id: v for v in values})
    return report
