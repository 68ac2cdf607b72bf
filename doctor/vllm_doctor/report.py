"""Phase 7, the Markdown incident report."""

from __future__ import annotations

from datetime import UTC, datetime

from vllm_doctor import VLLM_PIN, __version__
from vllm_doctor.evidence import DERIVED
from vllm_doctor.pipeline import RunResult
from vllm_doctor.plans import APPROVAL
from vllm_doctor.playbooks import BY_ID, playbook_ref
from vllm_doctor.render import fmt
from vllm_doctor.signals import GOLDEN

_VERDICT = {"incident": "事故 / INCIDENT", "healthy": "健康 / HEALTHY",
            "insufficient-evidence": "证据不足 / INSUFFICIENT EVIDENCE"}


def _ts(t: float | None) -> str:
    if t is None:
        return "—"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_report(r: RunResult) -> str:
    t = r.triage
    p = t.primary
    out: list[str] = []
    add = out.append
    add(f"# vLLM 事故报告：{_VERDICT[t.verdict]}")
    add("")
    add(f"- 生成时间：{_ts(r.started_at)}")
    add(f"- 数据来源：{r.source}" + (f"（{r.title}）" if r.title else ""))
    add(f"- 样本时刻：{_ts(r.sample.at)}")
    add(f"- 工具：vllm-doctor {__version__}，指标名按 vLLM v{VLLM_PIN} 源码核对")
    add(f"- 阈值来源：{', '.join(r.config.sources) or '（无）'}")
    add("")
    add("## 1. 结论")
    add("")
    add(f"**{t.summary()}**")
    add("")
    if p is not None:
        pb = BY_ID[p.rule.playbook]
        add(f"- playbook：**{pb.title}**（`{pb.id}`，见 `{playbook_ref(pb.id)}`）")
        add(f"- 规则：`{p.rule.id}` — {p.rule.title}；置信度 {p.confidence:.2f}")
        add(f"- 需要排除的备选：{', '.join(f'`{a}`' for a in p.rule.alternatives) or '—'}")
        if p.rule.caveat:
            add(f"- 注意：{p.rule.caveat}")
        others = t.matches[1:]
        if others:
            add(f"- 同时成立的规则：{', '.join(f'`{o.rule.id}` → `{o.rule.playbook}`' for o in others)}")
    elif t.verdict == "insufficient-evidence":
        add("证据不足时本工具不做猜测。缺少的内容：")
        add("")
        for rr in t.undecided:
            for m in rr.missing:
                add(f"- `{rr.rule.id}`：{m}")
        for k, v in sorted(t.missing_golden.items()):
            add(f"- 信号 `{k}`：{v}")
    add("")

    add("## 2. 探测（probe）")
    add("")
    pr = r.probe
    add(f"- 可达：{'是' if pr.reachable else '否'}；Prometheus 版本：{pr.prometheus_version or '—'}")
    add(f"- vLLM 版本：{pr.vllm_version or '—'}；/health：{pr.vllm_health or '—'}")
    if pr.exported is not None:
        absent = pr.missing_registry()
        add(f"- 已导出的已知 vLLM 指标：{len(pr.exported)}；缺少：{', '.join(f'`{a}`' for a in absent) or '无'}")
    for tg in pr.targets:
        add("- 抓取目标：" + ", ".join(f"{k}={v}" for k, v in sorted(tg.items())))
    if pr.cache_config:
        keys = ("block_size", "gpu_memory_utilization", "num_gpu_blocks", "cache_dtype", "enable_prefix_caching")
        add("- cache_config：" + ", ".join(f"`{k}={pr.cache_config[k]}`" for k in keys if k in pr.cache_config))
    for x in pr.problems:
        add(f"- 问题：{x}")
    add("")

    add("## 3. 黄金信号（collect）")
    add("")
    add("| 信号 | 含义 | 值 | 单位 | 备注 |")
    add("|------|------|----|------|------|")
    for sig in GOLDEN:
        val, why = r.evidence.get(sig.id)
        add(f"| `{sig.id}` | {sig.title} | {fmt(val)} | {sig.unit} | {_cell(why)} |")
    add("")
    add("| 派生信号 | 含义 | 值 | 公式 |")
    add("|----------|------|----|------|")
    for d in DERIVED.values():
        dv_, dwhy = d.fn(r.evidence)
        add(f"| `{d.id}` | {d.title} | {fmt(dv_)} | `{d.formula}`{(' — ' + _cell(dwhy)) if dwhy else ''} |")
    add("")

    add("## 4. 分诊（triage）")
    add("")
    add("| # | 规则 | playbook | 结果 | 置信度 | 条件 |")
    add("|---|------|----------|------|--------|------|")
    for i, rr in enumerate(t.results, 1):
        conds = "<br>".join(_cell(c.text()) for c in rr.conditions) or _cell(rr.note)
        conf = f"{rr.confidence:.2f}" if rr.status == "match" else "—"
        add(f"| {i} | `{rr.rule.id}` | `{rr.rule.playbook}` | {rr.status} | {conf} | {conds} |")
    add("")

    add("## 5. 深入诊断（diagnose）")
    add("")
    if r.diag is None:
        add("未执行：没有可诊断的 playbook。")
    else:
        for dv in r.diag.values:
            if isinstance(dv.value, dict):
                vals = "; ".join(f"{k}: {fmt(x)}" for k, x in sorted(dv.value.items()))
                add(f"- {dv.title}（`{dv.id}`）：{vals}")
            else:
                add(f"- {dv.title}（`{dv.id}`）：{fmt(dv.value)}" + (f"（{dv.reason}）" if dv.value is None else ""))
        if r.diag.findings:
            add("")
            add("发现：")
            add("")
            for f in r.diag.findings:
                add(f"- {f}")
        add("")
        add("需要人工执行的只读检查（工具不会执行）：")
        add("")
        for c in r.diag.checks:
            add(f"- **{c.title}**：`{c.command}` —— 关注：{c.look_for}")
    add("")

    add("## 6. 处置计划（plan，未执行）")
    add("")
    if r.plan is None:
        add("未生成：没有匹配的 playbook。")
    else:
        add("以下是备选方案而不是脚本。vllm-doctor 不执行任何变更；"
            f"每个标注“{APPROVAL}”的步骤都必须由人明确批准后手工执行。")
        add("")
        for i, step in enumerate(r.plan.steps, 1):
            if step.needs_approval:
                add(f"{i}. **{step.title}** — {APPROVAL}")
                add(f"   - 操作：{r.plan.rendered(step)}")
                add(f"   - 风险：{step.risk}")
                add(f"   - 回滚：{step.rollback}")
                add("   - [ ] 批准人 / approved by: ________  时间 / at: ________")
            else:
                add(f"{i}. **{step.title}**（只读）— {r.plan.rendered(step)}")
    add("")

    add("## 7. 验证（verify）")
    add("")
    if r.verify is None:
        add("未执行。")
    else:
        ver = r.verify
        add(f"- 结果：**{ver.outcome}** — {ver.reason}")
        add(f"- 样本（旧→新）：{' '.join(x.status for x in ver.per_sample) or '无'}")
        need = ver.required_clean if ver.required_clean is not None else "?"
        add(f"- 末尾连续干净样本：{ver.trailing_clean} / 需要 {need}")
    add("")

    if r.sample.queries:
        add("## 附录：使用的 PromQL")
        add("")
        for sid, q in r.sample.queries.items():
            add(f"- `{sid}`: `{q}`")
        add("")
    for n in r.notes:
        add(f"> {n}")
    return "\n".join(out).rstrip() + "\n"
