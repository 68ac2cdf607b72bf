"""The triage decision table: condition → playbook, with confidence and alternatives.

Each rule is a conjunction (``all_of``) plus, optionally, a disjunction
(``any_of``) of conditions ``signal OP threshold``.  Thresholds are named keys of
the configuration (never literals), except a handful of *definitional*
constants (``awake_min <= 0`` means "the engine is asleep") marked ``const``.

Evaluation uses three-valued (Kleene) logic, which is what makes triage fail
closed:

* a condition whose signal or threshold is missing is **unknown**;
* ``all_of`` is false if any condition is false, true if all are true, else unknown;
* ``any_of`` is true if any condition is true, false if all are false, else unknown;
* a rule with an unknown outcome is reported as *insufficient evidence*, with the
  missing pieces named; it is never promoted to a match or a no-match.

``supporting`` conditions never gate a rule; each one that holds adds
``SUPPORT_BONUS`` to the confidence of a matching rule (capped at ``MAX_CONFIDENCE``).

Rules are listed in priority order: when several match, the first is the primary
diagnosis and the others are reported next to it.  ``vllm-doctor rules`` prints
this table; ``doctor/README.md`` embeds that output (a test keeps them equal).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from vllm_doctor import metrics as M
from vllm_doctor.evidence import Evidence

Op = Literal[">=", ">", "<=", "<"]
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}
SUPPORT_BONUS = 0.05
MAX_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Cond:
    signal: str
    op: Op
    threshold: str | None = None  # configuration key
    const: float | None = None  # definitional constant (not a tuning knob)

    def __post_init__(self) -> None:
        if (self.threshold is None) == (self.const is None):
            raise ValueError(f"condition on {self.signal}: give exactly one of threshold / const")

    def text(self) -> str:
        rhs = self.threshold if self.threshold is not None else f"{self.const:g}"
        return f"{self.signal} {self.op} {rhs}"


@dataclass(frozen=True)
class CondResult:
    cond: Cond
    holds: bool | None
    value: float | None
    limit: float | None
    reason: str = ""  # why unknown

    def text(self) -> str:
        v = "missing" if self.value is None else f"{self.value:.4g}"
        lim = "missing" if self.limit is None else f"{self.limit:.4g}"
        state = {True: "✔", False: "✘", None: "?"}[self.holds]
        tail = f" — {self.reason}" if self.reason else ""
        return f"{state} {self.cond.text()}  (value {v}, limit {lim}){tail}"


@dataclass(frozen=True)
class Rule:
    id: str
    playbook: str
    title: str  # Chinese
    when: str  # the condition in words (Chinese)
    all_of: tuple[Cond, ...]
    confidence: float
    alternatives: tuple[str, ...]
    any_of: tuple[Cond, ...] = ()
    supporting: tuple[Cond, ...] = ()
    applies_if_exported: M.Metric | None = None
    caveat: str = ""

    def conditions(self) -> tuple[Cond, ...]:
        return self.all_of + self.any_of + self.supporting

    def thresholds(self) -> set[str]:
        return {c.threshold for c in self.conditions() if c.threshold}


Status = Literal["match", "no-match", "insufficient", "not-applicable"]


@dataclass
class RuleResult:
    rule: Rule
    status: Status
    confidence: float = 0.0
    conditions: list[CondResult] = field(default_factory=list)
    supporting: list[CondResult] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # why unknown, one line each
    note: str = ""


def eval_cond(cond: Cond, ev: Evidence) -> CondResult:
    value, why = ev.get(cond.signal)
    if cond.threshold is not None:
        limit = ev.config.number(cond.threshold)
        if limit is None:
            return CondResult(cond, None, value, None, f"threshold {cond.threshold} is not configured")
    else:
        limit = cond.const
    if value is None:
        return CondResult(cond, None, None, limit, f"{cond.signal}: {why}")
    assert limit is not None
    return CondResult(cond, _OPS[cond.op](value, limit), value, limit)


def _all(results: list[CondResult]) -> bool | None:
    if any(r.holds is False for r in results):
        return False
    if all(r.holds is True for r in results):
        return True
    return None


def _any(results: list[CondResult]) -> bool | None:
    if any(r.holds is True for r in results):
        return True
    if all(r.holds is False for r in results):
        return False
    return None


def evaluate(rule: Rule, ev: Evidence) -> RuleResult:
    gate = rule.applies_if_exported
    if gate is not None and ev.exported is not None:
        if gate.name not in ev.exported and M.PRESENCE_MARKER.name in ev.exported:
            return RuleResult(
                rule, "not-applicable", note=f"{gate.name} is not exported ({gate.condition}); the feature is off"
            )
    conds = [eval_cond(c, ev) for c in rule.all_of]
    alts = [eval_cond(c, ev) for c in rule.any_of]
    outcome = _all(conds)
    if rule.any_of:
        either = _any(alts)
        outcome = False if (outcome is False or either is False) else (True if outcome and either else None)
    support = [eval_cond(c, ev) for c in rule.supporting]
    result = RuleResult(rule, "insufficient", conditions=conds + alts, supporting=support)
    if outcome is True:
        result.status = "match"
        bonus = SUPPORT_BONUS * sum(1 for s in support if s.holds is True)
        result.confidence = round(min(MAX_CONFIDENCE, rule.confidence + bonus), 2)
    elif outcome is False:
        result.status = "no-match"
    else:
        result.missing = [r.reason for r in conds + alts if r.holds is None]
    return result


# --------------------------------------------------------------------------
# the table (priority order)

RULES: tuple[Rule, ...] = (
    Rule(
        id="engine-stall",
        playbook="nccl-hang",
        title="引擎停滞：有运行中的请求，却没有任何 token 产出",
        when="running ≥ stall.running_min，且 prefill 与 decode token 速率都 ≤ stall.token_rate_max",
        all_of=(
            Cond("running", ">=", "stall.running_min"),
            Cond("generation_token_rate", "<=", "stall.token_rate_max"),
            Cond("prompt_token_rate", "<=", "stall.token_rate_max"),
        ),
        supporting=(Cond("target_up_min", ">=", const=1),),
        confidence=0.6,
        alternatives=("gpu-oom", "cold-start"),
        caveat="指标只说明“引擎不再前进”；是否卡在集合通信，要用 py-spy / NCCL 日志确认。",
    ),
    Rule(
        id="crash-loop",
        playbook="gpu-oom",
        title="崩溃重启循环（最常见原因是 GPU OOM）",
        when="回看窗口内计数器重置（进程重启）次数 ≥ crash.restarts_min",
        all_of=(Cond("restarts", ">=", "crash.restarts_min"),),
        supporting=(Cond("target_up_min", "<=", const=0), Cond("kv_usage_max", ">=", "preempt.kv_usage_high")),
        confidence=0.5,
        alternatives=("nccl-hang", "cold-start"),
        caveat="重启的原因不在指标里：必须在日志中找到 OOM 的报错才能确认。",
    ),
    Rule(
        id="cold-start",
        playbook="cold-start",
        title="冷启动：刚重启或刚唤醒，首 token 延迟高",
        when="（重启次数 ≥ cold_start.restarts_min 或 引擎处于 sleep）且 ttft_p95 ≥ cold_start.ttft_p95_s",
        all_of=(Cond("ttft_p95", ">=", "cold_start.ttft_p95_s"),),
        any_of=(Cond("restarts", ">=", "cold_start.restarts_min"), Cond("awake_min", "<=", const=0)),
        supporting=(Cond("prefix_hit_drop", ">=", "prefix_cache.drop_fraction"),),
        confidence=0.6,
        alternatives=("prefix-cache-collapse", "preempt-cascade"),
    ),
    Rule(
        id="lora-saturation",
        playbook="lora-thrashing",
        title="LoRA 槽位打满，请求因 adapter 不在批内而被推迟",
        when="waiting_deferred ≥ lora.deferred_waiting_min，GPU LoRA 槽位无空闲，且有等待中的 adapter 不在运行集合里",
        all_of=(
            Cond("waiting_deferred", ">=", "lora.deferred_waiting_min"),
            Cond("lora_slots_free", "<=", const=0),
            Cond("lora_waiting_not_running", ">=", const=1),
        ),
        supporting=(Cond("lora_sets_in_window", ">=", const=2),),
        confidence=0.7,
        alternatives=("preempt-cascade", "client-retry-storm"),
        applies_if_exported=M.LORA_REQUESTS_INFO,
    ),
    Rule(
        id="preemption",
        playbook="preempt-cascade",
        title="KV cache 打满引发连锁抢占",
        when="preempt_rate ≥ preempt.rate_per_s 且 kv_usage_max ≥ preempt.kv_usage_high",
        all_of=(
            Cond("preempt_rate", ">=", "preempt.rate_per_s"),
            Cond("kv_usage_max", ">=", "preempt.kv_usage_high"),
        ),
        supporting=(Cond("waiting", ">=", const=1),),
        confidence=0.75,
        alternatives=("client-retry-storm", "lora-thrashing"),
    ),
    Rule(
        id="retry-storm",
        playbook="client-retry-storm",
        title="客户端重试风暴：生成接口的 HTTP 请求远多于基线，且大量请求没有在引擎里完成",
        when="http_rate_ratio ≥ retry_storm.http_rate_ratio 且 http_unfinished_ratio ≥ retry_storm.unfinished_ratio"
        "（客户端断开的请求只计入 HTTP 计数器，不计入 vLLM 的完成计数）",
        all_of=(
            Cond("http_rate_ratio", ">=", "retry_storm.http_rate_ratio"),
            Cond("http_unfinished_ratio", ">=", "retry_storm.unfinished_ratio"),
        ),
        supporting=(Cond("queue_p95", ">=", "retry_storm.queue_p95_s"), Cond("waiting", ">=", const=1)),
        confidence=0.65,
        alternatives=("preempt-cascade", "cold-start"),
        caveat="HTTP 计数器看得到被客户端放弃的请求，但看不出是不是“重试”：同一请求是否被重复提交，"
        "要在网关或客户端日志里确认；被拒绝的 4xx 请求也会拉大缺口（diagnose 按状态码拆分）。",
    ),
    Rule(
        id="prefix-collapse",
        playbook="prefix-cache-collapse",
        title="prefix cache 命中率相对基线坍塌",
        when="基线命中率 ≥ prefix_cache.baseline_hit_ratio_min 且相对降幅 ≥ prefix_cache.drop_fraction",
        all_of=(
            Cond("prefix_hit_ratio_baseline", ">=", "prefix_cache.baseline_hit_ratio_min"),
            Cond("prefix_hit_drop", ">=", "prefix_cache.drop_fraction"),
        ),
        supporting=(Cond("ttft_p95", ">=", "cold_start.ttft_p95_s"),),
        confidence=0.7,
        alternatives=("cold-start", "preempt-cascade"),
    ),
    Rule(
        id="quality-shift",
        playbook="quality-regression",
        title="输出分布相对基线突变（质量回退的代理信号）",
        when="length 占比升幅 ≥ quality.length_ratio_increase，或输出长度变化倍数 ≥ quality.gen_len_change_factor，"
        "或 repetition 占比 ≥ quality.repetition_ratio",
        all_of=(),
        any_of=(
            Cond("length_ratio_rise", ">=", "quality.length_ratio_increase"),
            Cond("gen_len_change", ">=", "quality.gen_len_change_factor"),
            Cond("repetition_ratio", ">=", "quality.repetition_ratio"),
        ),
        supporting=(Cond("corrupted_rate", ">", const=0),),
        confidence=0.45,
        alternatives=("client-retry-storm",),
        caveat="指标只是质量的代理；客户端改了 max_tokens 或 prompt 也会产生同样的信号，需用评测集确认。",
    ),
)

RULES_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
RULES_BY_PLAYBOOK: dict[str, Rule] = {r.playbook: r for r in RULES}


def table_markdown() -> str:
    """The decision table as Markdown (embedded in doctor/README.md)."""
    lines = [
        "| # | 规则 | 条件 (all of / any of) | → playbook | 置信度 | 佐证（各 +0.05） | 备选 |",
        "|---|------|------------------------|------------|--------|------------------|------|",
    ]
    for i, r in enumerate(RULES, 1):
        parts = [c.text() for c in r.all_of]
        if r.any_of:
            parts.append("any(" + " ; ".join(c.text() for c in r.any_of) + ")")
        gate = f" [仅当导出 `{r.applies_if_exported.name}`]" if r.applies_if_exported else ""
        cond = " AND ".join(f"`{p}`" for p in parts) + gate
        alts = ", ".join(r.alternatives) or "—"
        sup = " ; ".join(f"`{c.text()}`" for c in r.supporting) or "—"
        lines.append(f"| {i} | `{r.id}` | {cond} | `{r.playbook}` | {r.confidence:.2f} | {sup} | {alts} |")
    return "\n".join(lines) + "\n"
