"""The eight playbooks: ids, titles, and where their Markdown lives."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Playbook:
    id: str
    title: str  # Chinese, as in the book's Part 8
    summary: str

    @property
    def filename(self) -> str:
        return f"{self.id}.md"


PLAYBOOKS: tuple[Playbook, ...] = (
    Playbook("preempt-cascade", "KV 抢占雪崩", "KV cache 打满，调度器反复抢占并重算请求"),
    Playbook("nccl-hang", "NCCL / 集合通信挂起", "引擎卡住：有请求在跑，token 不再产出"),
    Playbook("gpu-oom", "GPU 显存溢出（OOM）", "进程因显存不足崩溃并反复重启"),
    Playbook("client-retry-storm", "客户端重试风暴", "超时的客户端断开并重试，把负载放大"),
    Playbook("prefix-cache-collapse", "前缀缓存命中率坍塌", "prefix cache 命中率相对基线大幅下降"),
    Playbook("cold-start", "冷启动", "重启或唤醒后的首批请求很慢"),
    Playbook("quality-regression", "输出质量回退", "输出分布相对基线突变（长度、结束原因、NaN）"),
    Playbook("lora-thrashing", "LoRA adapter 抖动", "adapter 数超过 GPU 槽位，请求被反复推迟"),
)
BY_ID: dict[str, Playbook] = {p.id: p for p in PLAYBOOKS}
EXTRA_DOCS = ("promql-cheatsheet.md", "prelaunch-checklist.md")


def playbooks_dir() -> Path | None:
    """``doctor/playbooks`` next to the package (source checkout / editable install).

    ``VLLM_DOCTOR_PLAYBOOKS`` overrides it.  None when not found (e.g. a wheel
    install without the repository); callers then cite the playbook by id.
    """
    if env := os.environ.get("VLLM_DOCTOR_PLAYBOOKS"):
        return Path(env)
    candidate = Path(__file__).resolve().parents[1] / "playbooks"
    return candidate if candidate.is_dir() else None


def playbook_ref(pid: str) -> str:
    """How a report cites a playbook: its repository path."""
    return f"doctor/playbooks/{BY_ID[pid].filename}"
