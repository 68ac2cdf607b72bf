"""Phase 5, remediation plan.  Printed, never executed.

Each playbook offers *options* (alternatives, not a script).  A step is either
``read-only`` (safe to run, gathers evidence) or ``mutating``; every mutating
step carries its risk and its rollback and is marked for explicit human
approval.  There is no flag that makes vllm-doctor apply a step, and the package
imports nothing that could run a command (a test checks that).

``refs`` lists the vLLM CLI flags and environment variables a step relies on;
the test suite checks each one against the pinned source (``arg_utils.py``,
``cli_args.py``, ``envs.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

StepKind = Literal["read-only", "mutating"]
APPROVAL = "⚠ 需要人工批准 / REQUIRES HUMAN APPROVAL"


@dataclass(frozen=True)
class Step:
    id: str
    kind: StepKind
    title: str
    action: str  # what a human would do; may contain {placeholders} from the probe
    risk: str = ""
    rollback: str = ""
    refs: tuple[str, ...] = ()  # vLLM flags / env vars used

    @property
    def needs_approval(self) -> bool:
        return self.kind == "mutating"


@dataclass
class Plan:
    playbook: str
    steps: list[Step]
    context: dict[str, str] = field(default_factory=dict)

    def rendered(self, step: Step) -> str:
        values: defaultdict[str, str] = defaultdict(lambda: "<未知>", self.context)
        return step.action.format_map(values)

    @property
    def mutating(self) -> list[Step]:
        return [s for s in self.steps if s.needs_approval]


_RESTART = "改启动参数需要重启实例：先摘流量（drain），逐个副本滚动重启，会丢弃该副本上进行中的请求"

CATALOG: dict[str, tuple[Step, ...]] = {
    "preempt-cascade": (
        Step("confirm", "read-only", "确认抢占集中在哪些引擎", "运行 `vllm-doctor diagnose --playbook preempt-cascade`"),
        Step("max-num-seqs", "mutating", "降低并发序列上限",
             "把 --max-num-seqs 调低（当前值见启动参数），让同时驻留 KV 的序列变少",
             "峰值吞吐下降、排队时间变长；" + _RESTART, "恢复原来的 --max-num-seqs 并滚动重启",
             ("--max-num-seqs",)),
        Step("gpu-mem", "mutating", "小幅提高显存占比以扩大 KV 池",
             "把 --gpu-memory-utilization 从当前的 {gpu_memory_utilization} 小幅调高（v0.26.0 默认 0.92）",
             "给 vLLM 之外的分配留的余量变小，可能转成 GPU OOM（见 gpu-oom playbook）；" + _RESTART,
             "恢复原值并滚动重启", ("--gpu-memory-utilization",)),
        Step("kv-fp8", "mutating", "用 fp8 存 KV cache",
             "设置 --kv-cache-dtype fp8（当前 {cache_dtype}），每个 token 的 KV 占用减半（相对 16 位）",
             "数值精度变化，必须先在评测集上验证；不是所有硬件/注意力后端都支持；" + _RESTART,
             "改回 --kv-cache-dtype auto 并滚动重启", ("--kv-cache-dtype",)),
        Step("cap-length", "mutating", "限制请求长度",
             "在网关限制客户端的 max_tokens，或调低 --max-model-len",
             "超长请求会被拒绝或截断，是对客户端可见的行为变化", "撤销网关限制 / 恢复 --max-model-len",
             ("--max-model-len",)),
        Step("priority", "mutating", "让抢占落在低优先级流量上",
             "使用 --scheduling-policy priority 并为请求设置 priority（默认 fcfs 时被抢占的是最后进入 running 的请求）",
             "低优先级请求可能长期得不到服务；" + _RESTART, "改回 --scheduling-policy fcfs",
             ("--scheduling-policy",)),
        Step("scale-out", "mutating", "扩容", "增加副本（或更大的 --tensor-parallel-size）分摊 KV 需求",
             "成本上升；新副本冷启动、prefix cache 局部性下降", "缩回原副本数", ("--tensor-parallel-size",)),
    ),
    "nccl-hang": (
        Step("confirm", "read-only", "确认停滞的引擎与栈", "运行 `vllm-doctor diagnose --playbook nccl-hang`，再对停滞的进程 `py-spy dump`"),
        Step("restart", "mutating", "重启受影响的副本",
             "先保留现场（py-spy dump 输出、日志、nvidia-smi），再摘流量并重启该副本",
             "丢弃该副本上进行中的请求；若根因未除会再次挂起",
             "无需回滚；若重启后立即复现，停止重启、保留现场并升级处理"),
        Step("nccl-debug", "mutating", "下次启动打开 NCCL 日志",
             "重启时设置环境变量 NCCL_DEBUG=INFO（NCCL 自身的变量，不是 vLLM 的）",
             "日志量显著增加", "去掉 NCCL_DEBUG 并重启"),
        Step("custom-ar", "mutating", "隔离 vLLM 自带的 custom all-reduce",
             "加 --disable-custom-all-reduce 启动，观察是否仍挂起",
             "张量并行通信变慢；" + _RESTART, "去掉该参数并重启", ("--disable-custom-all-reduce",)),
        Step("p2p-check", "mutating", "不再信任驱动报告的 P2P 能力",
             "设置 VLLM_SKIP_P2P_CHECK=0（默认 1 表示信任驱动；envs.py 的注释提到某些驱动下 custom all-reduce 会挂起）",
             "启动时多一次 P2P 检测；检测不通过时不会使用依赖 P2P 的 custom all-reduce", "恢复 VLLM_SKIP_P2P_CHECK=1",
             ("VLLM_SKIP_P2P_CHECK",)),
        Step("rpc-timeout", "mutating", "让挂起更快失败而不是无限等待",
             "调整 VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS（默认 300，只作用于 TP>1 的多进程执行器），"
             "配合编排系统的自动重启",
             "过低会把正常的长 prefill 步骤误判为挂起；注意 VLLM_ENGINE_ITERATION_TIMEOUT_S 在 v0.26.0 中定义了但没有被读取",
             "恢复默认值", ("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS",)),
    ),
    "gpu-oom": (
        Step("confirm", "read-only", "在日志里确认是 GPU OOM", "运行 `vllm-doctor diagnose --playbook gpu-oom` 并按列出的 grep 查日志"),
        Step("stop-loop", "mutating", "暂停自动重启以保留现场",
             "把该副本移出服务并暂停其自动重启（例如缩容该副本），保存最后一次崩溃的日志",
             "可用容量下降", "恢复副本数 / 自动重启"),
        Step("gpu-mem-down", "mutating", "为显存预算之外的分配留出余量",
             "把 --gpu-memory-utilization 从 {gpu_memory_utilization} 调低（v0.26.0 默认 0.92；它只约束本实例）",
             "KV 池变小，可能出现抢占（见 preempt-cascade）；" + _RESTART, "恢复原值", ("--gpu-memory-utilization",)),
        Step("batch-down", "mutating", "降低单步激活峰值",
             "调低 --max-num-batched-tokens 和/或 --max-num-seqs",
             "吞吐下降；" + _RESTART, "恢复原值", ("--max-num-batched-tokens", "--max-num-seqs")),
        Step("eager", "mutating", "去掉 CUDA graph 的显存",
             "临时加 --enforce-eager（不捕获 CUDA graph，也不做 torch.compile）", "decode 变慢；" + _RESTART,
             "去掉 --enforce-eager",
             ("--enforce-eager",)),
        Step("startup-kv", "mutating", "启动期 KV 放不下时",
             "日志若是 “No available memory for the cache blocks” 或 KV 不够放一个最长请求：按报错提示调高 "
             "--gpu-memory-utilization 或调低 --max-model-len",
             "见上两项", "恢复原值", ("--gpu-memory-utilization", "--max-model-len")),
    ),
    "client-retry-storm": (
        Step("confirm", "read-only", "确认重试来源", "运行 `vllm-doctor diagnose --playbook client-retry-storm`，在网关日志里按客户端统计重复请求"),
        Step("backoff", "mutating", "客户端退避与重试预算",
             "客户端改为指数退避加随机抖动、设置重试预算，超时时间大于当前 e2e p95",
             "故障时客户端更晚得知失败", "恢复客户端原配置"),
        Step("shed", "mutating", "在网关尽早拒绝",
             "网关限流 / 排队上限，超限直接返回 429；可用 vLLM 的 --enable-server-load-tracking 暴露 /load 给网关参考",
             "一部分请求被拒绝（但不再无谓地占用 GPU）", "撤销限流规则", ("--enable-server-load-tracking",)),
        Step("capacity", "mutating", "临时扩容", "增加副本吸收积压", "成本上升；新副本冷启动", "缩回原副本数"),
    ),
    "prefix-cache-collapse": (
        Step("confirm", "read-only", "确认坍塌范围", "运行 `vllm-doctor diagnose --playbook prefix-cache-collapse`"),
        Step("prompt", "mutating", "恢复稳定的 prompt 前缀",
             "回滚最近的 prompt / chat template 变更，或把时间戳、请求 ID 等可变内容移到共享前缀之后",
             "产品行为变化，需要业务确认", "重新发布原 prompt"),
        Step("affinity", "mutating", "恢复路由亲和", "在网关恢复按前缀/会话的亲和路由",
             "热点前缀可能让个别副本过载", "撤销路由变更"),
        Step("enable", "mutating", "确认 prefix caching 已开启",
             "若 cache_config 显示 enable_prefix_caching={enable_prefix_caching} 为 False，用 --enable-prefix-caching 重启",
             _RESTART, "去掉该参数", ("--enable-prefix-caching",)),
        Step("kv-pressure", "mutating", "减小 KV 压力", "KV 使用率长期贴顶时按 preempt-cascade 的选项扩大 KV 池或降低并发",
             "见 preempt-cascade", "见 preempt-cascade"),
    ),
    "cold-start": (
        Step("confirm", "read-only", "确认重启原因与启动耗时", "运行 `vllm-doctor diagnose --playbook cold-start`，按列出的 grep 看启动日志"),
        Step("cache-volume", "mutating", "持久化编译缓存",
             "把 VLLM_CACHE_ROOT（默认 ~/.cache/vllm，设置了 XDG_CACHE_HOME 时在其下）放到重启后仍保留的卷上，"
             "且不要设置 VLLM_DISABLE_COMPILE_CACHE=1",
             "占用磁盘；多版本共用同一目录时注意清理", "去掉卷挂载", ("VLLM_CACHE_ROOT", "VLLM_DISABLE_COMPILE_CACHE")),
        Step("readiness", "mutating", "就绪后再接流量",
             "编排系统只在 /health 返回 200 且完成几次预热请求后把实例加入负载均衡",
             "发布变慢", "恢复原就绪探针"),
        Step("stagger", "mutating", "错开滚动发布", "减小同时重启的副本数，避免所有副本同时冷启动",
             "发布时间变长", "恢复原发布策略"),
        Step("eager", "mutating", "用启动速度换运行速度",
             "--enforce-eager（v0.26.0 中同时关闭 torch.compile 与 CUDA graph）省去编译与捕获时间，启动更快",
             "decode 变慢；" + _RESTART, "去掉 --enforce-eager",
             ("--enforce-eager",)),
        Step("sleep", "mutating", "用 sleep 模式代替重启",
             "以 --enable-sleep-mode 启动；/sleep 与 /wake_up 只在 VLLM_SERVER_DEV_MODE=1 时注册（开发端点，勿暴露到公网）",
             "开发端点的安全风险；唤醒仍有开销", "去掉这两个设置", ("--enable-sleep-mode", "VLLM_SERVER_DEV_MODE")),
    ),
    "quality-regression": (
        Step("confirm", "read-only", "用评测确认", "运行 `vllm-doctor diagnose --playbook quality-regression`，再用固定评测集对比新旧部署"),
        Step("rollback", "mutating", "回滚最近一次变更",
             "回滚镜像 / 模型 --revision / --tokenizer-revision / --chat-template 中最近变过的那一个",
             "同时回滚了该变更带来的修复", "重新发布新版本", ("--revision", "--tokenizer-revision", "--chat-template")),
        Step("gen-config", "mutating", "固定默认采样参数",
             "--generation-config 默认 auto 会读取模型目录的 generation_config.json；模型目录更新后默认采样参数可能变了。"
             "用 --generation-config vllm 或 --override-generation-config 固定",
             "所有未显式传采样参数的客户端行为都会变化；" + _RESTART, "恢复 --generation-config auto",
             ("--generation-config", "--override-generation-config")),
        Step("numerics", "mutating", "回退数值相关的变更",
             "若最近改过 --dtype / --quantization / --kv-cache-dtype，先回退",
             "显存与吞吐回到变更前；" + _RESTART, "重新应用变更", ("--dtype", "--quantization", "--kv-cache-dtype")),
        Step("nan-canary", "mutating", "在金丝雀上统计 NaN",
             "在一个金丝雀实例上设置 VLLM_COMPUTE_NANS_IN_LOGITS=1，会导出 NaN 请求计数",
             "有额外计算开销（envs.py 注释如此说明），只在金丝雀上开", "去掉该变量并重启",
             ("VLLM_COMPUTE_NANS_IN_LOGITS",)),
    ),
    "lora-thrashing": (
        Step("confirm", "read-only", "确认 adapter 分布", "运行 `vllm-doctor diagnose --playbook lora-thrashing`"),
        Step("max-loras", "mutating", "增加 GPU LoRA 槽位",
             "把 --max-loras（v0.26.0 默认 1，即一个批内最多 1 个 adapter）调到同时活跃的 adapter 数",
             "LoRA 缓冲占用显存，KV cache 随之变小（对比启动日志的 GPU KV cache size）；" + _RESTART,
             "恢复原值", ("--max-loras",)),
        Step("max-cpu-loras", "mutating", "扩大 CPU 侧 adapter 缓存",
             "调高 --max-cpu-loras（未设置时等于 max_loras，且必须 ≥ max_loras），减少从磁盘重复加载",
             "占用主机内存；" + _RESTART, "恢复原值", ("--max-cpu-loras",)),
        Step("route", "mutating", "按 adapter 路由", "网关按 adapter 名做亲和路由，热门 adapter 用专属副本",
             "副本间负载可能不均", "撤销路由变更"),
    ),
}


def make_plan(playbook: str, cache_config: dict[str, str] | None = None) -> Plan:
    if playbook not in CATALOG:
        raise KeyError(f"unknown playbook {playbook!r}; known: {', '.join(CATALOG)}")
    return Plan(playbook, list(CATALOG[playbook]), dict(cache_config or {}))
