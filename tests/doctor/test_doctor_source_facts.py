"""Claims about vLLM in the playbooks and the plan, checked against the pinned source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from doctor_helpers import DOCTOR, PLAYBOOKS
from vllm_doctor.cli import build_parser
from vllm_doctor.diagnose import CHECKS
from vllm_doctor.plans import CATALOG

DOCS = sorted(PLAYBOOKS.glob("*.md")) + [DOCTOR / "README.md", DOCTOR / "skill/vllm-doctor/SKILL.md"]

# Flags of other tools that the docs quote in read-only checks.
OTHER_TOOL_FLAGS = {"--pid", "--query-compute-apps", "--format", "--help", "--version"}
# This project's own variables (not vLLM's), which the docs may mention.
PROJECT_ENVS = {"VLLM_BOOK_SRC", "VLLM_BOOK_CACHE", "VLLM_DOCTOR_PLAYBOOKS"}
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")
_ENV = re.compile(r"\bVLLM_[A-Z0-9_]+\b")
_SRC_PATH = re.compile(r"`(vllm/[\w/]+\.py)`")


def _vllm_flags(tree: Path) -> set[str]:
    flags = set(re.findall(r'"(--[a-z0-9-]+)"', (tree / "vllm/engine/arg_utils.py").read_text(encoding="utf-8")))
    cli_args = ast.parse((tree / "vllm/entrypoints/openai/cli_args.py").read_text(encoding="utf-8"))
    for cls in (n for n in cli_args.body if isinstance(n, ast.ClassDef) and n.name.endswith("FrontendArgs")):
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                flags.add("--" + stmt.target.id.replace("_", "-"))
    assert "--max-num-seqs" in flags and "--chat-template" in flags, "flag extraction broke"
    return flags


def _vllm_envs(tree: Path) -> set[str]:
    envs = set(re.findall(r'^\s+"(VLLM_[A-Z0-9_]+)":', (tree / "vllm/envs.py").read_text(encoding="utf-8"), re.M))
    assert "VLLM_CACHE_ROOT" in envs, "env extraction broke"
    return envs


def _doctor_flags() -> set[str]:
    flags: set[str] = set()
    parser = build_parser()
    stack = [parser]
    while stack:
        p = stack.pop()
        for action in p._actions:
            flags.update(o for o in action.option_strings if o.startswith("--"))
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                stack.extend(action.choices.values())
    return flags


@pytest.fixture(scope="module")
def vllm_flags(vllm_tree: Path) -> set[str]:
    return _vllm_flags(vllm_tree)


@pytest.fixture(scope="module")
def vllm_envs(vllm_tree: Path) -> set[str]:
    return _vllm_envs(vllm_tree)


def test_plan_refs_exist_in_source(vllm_flags: set[str], vllm_envs: set[str]) -> None:
    for playbook, steps in CATALOG.items():
        for step in steps:
            for ref in step.refs:
                pool = vllm_flags if ref.startswith("--") else vllm_envs
                assert ref in pool, f"{playbook}/{step.id}: {ref} does not exist in vLLM v0.26.0"
            text = step.action + step.risk + step.rollback
            # mutating steps talk about vLLM only; read-only ones may quote vllm-doctor itself
            allowed = vllm_flags if step.needs_approval else vllm_flags | _doctor_flags()
            for flag in _FLAG.findall(text):
                assert flag in allowed, f"{playbook}/{step.id}: unknown vLLM flag {flag}"
            for env in _ENV.findall(text):
                assert env in vllm_envs, f"{playbook}/{step.id}: unknown vLLM env var {env}"


def test_checks_reference_real_flags_and_envs(vllm_flags: set[str], vllm_envs: set[str]) -> None:
    for playbook, checks in CHECKS.items():
        for c in checks:
            for flag in _FLAG.findall(c.command + c.look_for):
                assert flag in vllm_flags | OTHER_TOOL_FLAGS, f"{playbook}: unknown flag {flag} in {c.title}"
            for env in _ENV.findall(c.command + c.look_for):
                assert env in vllm_envs, f"{playbook}: unknown env var {env} in {c.title}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_docs_flags_envs_and_paths_exist(doc: Path, vllm_tree: Path, vllm_flags: set[str],
                                         vllm_envs: set[str]) -> None:
    text = doc.read_text(encoding="utf-8")
    allowed = vllm_flags | _doctor_flags() | OTHER_TOOL_FLAGS
    unknown = sorted({f for f in _FLAG.findall(text) if f not in allowed})
    assert not unknown, f"{doc.name}: flags that neither vLLM v0.26.0 nor vllm-doctor has: {unknown}"
    bad_envs = sorted({e for e in _ENV.findall(text) if e not in vllm_envs | PROJECT_ENVS})
    assert not bad_envs, f"{doc.name}: VLLM_* variables not in vllm/envs.py: {bad_envs}"
    missing = sorted({p for p in _SRC_PATH.findall(text) if not (vllm_tree / p).is_file()})
    assert not missing, f"{doc.name}: source paths not in the pinned tree: {missing}"


# Log lines the playbooks tell people to grep for, and where vLLM prints them.
LOG_STRINGS = {
    "GPU KV cache size": "vllm/v1/core/kv_cache_utils.py",
    "Maximum concurrency for": "vllm/v1/core/kv_cache_utils.py",
    "No available memory for the cache blocks": "vllm/v1/core/kv_cache_utils.py",
    "larger than the available KV cache": "vllm/v1/core/kv_cache_utils.py",
    "RPC call to": "vllm/v1/executor/multiproc_executor.py",
    "Model loading took": "vllm/v1/worker/gpu_model_runner.py",
    "Graph capturing finished": "vllm/v1/worker/gpu_model_runner.py",
    "Loading weights took": "vllm/model_executor/model_loader/default_loader.py",
    "torch.compile took": "vllm/compilation/monitor.py",
}


@pytest.mark.parametrize("needle,path", sorted(LOG_STRINGS.items()))
def test_quoted_log_strings_exist(needle: str, path: str, vllm_tree: Path) -> None:
    assert needle in (vllm_tree / path).read_text(encoding="utf-8"), f"{needle!r} no longer in {path}"
    quoted = "".join(p.read_text(encoding="utf-8") for p in DOCS) + "".join(
        c.command for checks in CHECKS.values() for c in checks)
    assert needle in quoted, f"{needle!r} is listed here but quoted nowhere; drop it from LOG_STRINGS"


# Defaults and behaviours the playbooks state, each with the source text that proves it.
CLAIMS: list[tuple[str, str, str]] = [
    ("vllm/config/cache.py", r"gpu_memory_utilization: float = Field\(default=0\.92", "gpu_memory_utilization 默认 0.92"),
    ("vllm/config/cache.py", r'cache_dtype: CacheDType = "auto"', "kv-cache-dtype 默认 auto"),
    ("vllm/config/cache.py", r"enable_prefix_caching: bool = True", "prefix caching 默认开启"),
    ("vllm/config/scheduler.py", r'policy: SchedulerPolicy = "fcfs"', "调度策略默认 fcfs"),
    ("vllm/config/scheduler.py", r'SchedulerPolicy = Literal\["fcfs", "priority"\]', "priority 策略存在"),
    ("vllm/config/lora.py", r"max_loras: int = Field\(default=1", "max_loras 默认 1"),
    ("vllm/config/lora.py", r"max_lora_rank: MaxLoRARanks = 16", "max_lora_rank 默认 16"),
    ("vllm/config/lora.py", r"self\.max_cpu_loras = self\.max_loras", "max_cpu_loras 缺省取 max_loras"),
    ("vllm/config/lora.py", r"max_cpu_loras \(\{self\.max_cpu_loras\}\) must be >=", "max_cpu_loras 必须 >= max_loras"),
    ("vllm/config/model.py", r'generation_config: str = "auto"', "--generation-config 默认 auto"),
    ("vllm/config/model.py", r"enforce_eager: bool = False", "enforce_eager 默认关闭"),
    ("vllm/config/vllm.py", r"Enforce eager set, disabling torch\.compile and CUDAGraphs", "enforce_eager 关闭编译与图"),
    ("vllm/config/model.py", r"enable_sleep_mode: bool = False", "sleep 模式默认关闭"),
    ("vllm/envs.py", r'"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "300"', "execute_model 超时默认 300"),
    ("vllm/envs.py", r'"VLLM_SKIP_P2P_CHECK", "1"', "VLLM_SKIP_P2P_CHECK 默认 1"),
    ("vllm/envs.py", r'"VLLM_KEEP_ALIVE_ON_ENGINE_DEATH", "0"', "引擎死亡后默认不保活"),
    ("vllm/envs.py", r'"VLLM_COMPUTE_NANS_IN_LOGITS", "0"', "NaN 检查默认关闭"),
    ("vllm/envs.py", r"it may add compute overhead", "NaN 检查有开销"),
    ("vllm/envs.py", r"Defaults to `~/\.cache/vllm` unless `XDG_CACHE_HOME` is set", "VLLM_CACHE_ROOT 默认位置"),
    ("vllm/v1/core/sched/scheduler.py", r"preempted_req = self\.running\.pop\(\)", "fcfs 抢占运行队列末尾"),
    ("vllm/v1/core/sched/scheduler.py", r"key=lambda r: \(r\.priority, r\.arrival_time\)", "priority 抢占优先级最低者"),
    ("vllm/v1/core/sched/scheduler.py", r"request\.num_computed_tokens = 0", "被抢占请求从头计算"),
    ("vllm/v1/core/sched/scheduler.py", r"self\.waiting\.prepend_request\(request\)", "被抢占请求回到等待队首"),
    ("vllm/v1/core/sched/scheduler.py", r"len\(scheduled_loras\) == self\.lora_config\.max_loras", "LoRA 槽位满时推迟"),
    ("vllm/v1/core/kv_cache_utils.py", r"\[request\.cache_salt\] if \(start_token_idx == 0", "cache_salt 只进第一个块"),
    ("vllm/v1/core/kv_cache_utils.py", r"lora_extra_keys \+ mm_extra_keys", "块哈希包含 LoRA 信息"),
    ("vllm/v1/core/block_pool.py", r"self\.free_block_queue\.append_n\(blocks_with_hash\)", "缓存块进空闲队列尾部"),
    ("vllm/v1/core/block_pool.py", r"1\.0 - \(self\.get_num_free_blocks\(\) / total_gpu_blocks\)", "KV 使用率定义"),
    ("vllm/entrypoints/launcher.py", r"if not envs\.VLLM_KEEP_ALIVE_ON_ENGINE_DEATH and engine_errored", "引擎死亡后退出"),
    ("vllm/entrypoints/openai/api_server.py", r"if envs\.VLLM_SERVER_DEV_MODE:", "开发端点受 DEV_MODE 控制"),
    ("vllm/entrypoints/serve/__init__.py", r"attach_sleep_router", "sleep 端点属于开发端点"),
    ("vllm/entrypoints/serve/dev/cache/api_router.py", r'@router\.post\("/reset_prefix_cache"\)', "reset_prefix_cache 是开发端点"),
    ("vllm/entrypoints/serve/instrumentator/health.py", r"return Response\(status_code=503\)", "/health 在引擎死亡时 503"),
    ("vllm/v1/engine/async_llm.py", r"if self\.log_stats:\n\s+self\.logger_manager = StatLoggerManager", "disable-log-stats 关闭指标"),
    ("vllm/v1/executor/multiproc_executor.py", r"timeout=envs\.VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "execute_model 超时"),
    ("vllm/v1/core/sched/utils.py", r"if repetition_detection is not None", "repetition 只在请求开启检测时出现"),
    ("vllm/v1/metrics/loggers.py", r"if vllm_config\.lora_config is not None:", "LoRA 指标只在 --enable-lora 时导出"),
    ("vllm/v1/metrics/loggers.py", r"incorrect/misleading with data parallel", "LoRA 指标在 DP 下的警告"),
    ("vllm/v1/metrics/loggers.py", r"set_to_current_time\(\)", "LoRA 信息的值是更新时间"),
    ("vllm/v1/metrics/loggers.py", r"if envs\.VLLM_COMPUTE_NANS_IN_LOGITS:", "NaN 计数只在开关打开时导出"),
    ("vllm/entrypoints/serve/instrumentator/basic.py", r'@router\.get\("/load"\)', "/load 端点存在"),
    # client-retry-storm.md: what a request the client abandons leaves in the metrics
    ("vllm/v1/engine/async_llm.py",
     r"except \(asyncio\.CancelledError, GeneratorExit\):\n\s+if q is not None:\n\s+"
     r"await self\.abort\(q\.request_id, internal=True\)\n\s+if self\.log_requests:\n\s+"
     r'logger\.info\("Request %s aborted\.", request_id\)', "客户端断开时 generate 以 internal=True 中止并记日志"),
    ("vllm/v1/engine/async_llm.py", r"log_requests=engine_args\.enable_log_requests", "请求日志受 --enable-log-requests 控制"),
    ("vllm/v1/engine/output_processor.py", r"if req_state is None:\n\s+# Ignore output for already-aborted request\.",
     "已中止请求的后续输出被忽略"),
    ("vllm/v1/metrics/loggers.py",
     r"for finished_request in iteration_stats\.finished_requests:\n\s+self\.counter_request_success\[",
     "request_success 只来自 finished_requests"),
    ("vllm/entrypoints/openai/chat_completion/api_router.py", r"@with_cancellation\n@load_aware_call\n"
     r"async def create_chat_completion", "chat 接口在客户端断开时取消"),
    ("vllm/entrypoints/openai/completion/api_router.py", r"@with_cancellation", "completions 接口在客户端断开时取消"),
    ("vllm/entrypoints/serve/utils/api_utils.py", r"if handler_task in done:\n\s+return handler_task\.result\(\)\n"
     r"\s+return None", "with_cancellation 在断开后返回 None"),
]


def test_client_abort_records_no_stats(vllm_tree: Path) -> None:
    """client-retry-storm.md: OutputProcessor.abort_requests drops the state without recording a finished request."""
    tree = ast.parse((vllm_tree / "vllm/v1/engine/output_processor.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OutputProcessor")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "abort_requests")
    called = {n.func.attr for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert "pop" in called, "abort_requests no longer pops the request state"
    recording = called & {"_update_stats_from_finished", "update_from_finished_request", "do_tracing"}
    assert not recording, (f"abort_requests now calls {recording}: client aborts may reach vllm:request_success; "
                           "revisit the retry-storm rule and client-retry-storm.md")


@pytest.mark.parametrize("path,pattern,claim", CLAIMS, ids=[c[2] for c in CLAIMS])
def test_documented_claim_holds(path: str, pattern: str, claim: str, vllm_tree: Path) -> None:
    text = (vllm_tree / path).read_text(encoding="utf-8")
    assert re.search(pattern, text), f"claim no longer true in {path}: {claim} (pattern {pattern!r})"


def test_iteration_timeout_env_is_unused(vllm_tree: Path) -> None:
    """nccl-hang.md says VLLM_ENGINE_ITERATION_TIMEOUT_S is defined but never read."""
    users = [p for p in (vllm_tree / "vllm").rglob("*.py")
             if p.name != "envs.py" and "VLLM_ENGINE_ITERATION_TIMEOUT_S" in p.read_text(encoding="utf-8", errors="replace")]
    assert not users, f"VLLM_ENGINE_ITERATION_TIMEOUT_S is now read by {users}; update nccl-hang.md"
