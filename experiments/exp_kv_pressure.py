"""KV pressure: preemptions and recomputed tokens against num_blocks, FCFS against priority.

12 requests arrive at step 1 (prompt 128–352 tokens, 192 output tokens; block_size 16).  Together they
need about 12 × 30 = 360 blocks at their peak; the pool has 48 … 480 blocks.  Admission only checks that
the prompt fits (``scheduler_reserve_full_isl``), so with a small pool the decodes run out of blocks and
``Scheduler.schedule()`` preempts: ``allocate_slots()`` returns None, the scheduler frees a victim's
blocks (``_preempt_request``: ``num_computed_tokens = 0``, back to the head of the waiting queue) and
retries.  FCFS preempts the request at the tail of the running queue (``self.running.pop()``);
the priority policy preempts ``max(running, key=(priority, arrival_time))``.

In the priority runs every third request is urgent (priority 0, the others 1).  Prefix caching is off,
so every preempted token is computed again (``recomputed_tokens``: tokens scheduled again below the
request's high-water mark); one series with prefix caching on shows what the freed-but-still-hashed
blocks give back (``restored_tokens``).
"""

from __future__ import annotations

from typing import Any

from .common import UNIT, ratio
from .harness import Engine, Spec, prompt_tokens, vllm_version

NAME = "kv_pressure"
TITLE = "KV 压力：抢占与重算 token 随 num_blocks 变化（FCFS 与优先级）"
NUM_BLOCKS = (48, 64, 96, 128, 192, 256, 360, 480)
NUM_REQUESTS = 12
OUTPUT = 192


def workload(priorities: bool) -> list[Spec]:
    return [Spec(f"req-{i}", prompt_tokens(i, 128 + (i * 5 % 12) * 20), OUTPUT,
                 priority=(0 if i % 3 == 2 else 1) if priorities else 0)
            for i in range(NUM_REQUESTS)]


def measure(num_blocks: int, policy: str, caching: bool) -> dict[str, Any]:
    engine = Engine(block_size=16, num_blocks=num_blocks, max_num_batched_tokens=2048, max_num_seqs=16,
                    enable_prefix_caching=caching, policy=policy)
    specs = workload(priorities=policy == "priority")
    steps = engine.run(specs)
    st = [engine.stats[s.req_id] for s in specs]
    urgent = [engine.stats[s.req_id] for s in specs if s.priority == 0] if policy == "priority" else []
    normal = [engine.stats[s.req_id] for s in specs if s.priority == 1] if policy == "priority" else []
    for s in st:
        assert s.output_len == OUTPUT
    row = {
        "policy": policy,
        "enable_prefix_caching": caching,
        "num_blocks": num_blocks,
        "kv_slots": num_blocks * 16,
        "steps": len(steps),
        "preemptions": sum(s.num_preemptions for s in st),
        "preempted_requests": sum(1 for s in st if s.num_preemptions),
        "recomputed_tokens": sum(s.recomputed_tokens for s in st),
        "restored_tokens": sum(s.restored_tokens for s in st),
        "scheduled_tokens": sum(r.total_tokens for r in steps),
        "useful_tokens": sum(s.prompt_len + OUTPUT - 1 for s in st),
        "max_running": max(r.num_running for r in steps),
        "peak_used_blocks": max(r.used_blocks for r in steps),
        "mean_finish_step": ratio(sum(s.finish_step for s in st), len(st)),
    }
    row["recompute_overhead"] = ratio(row["recomputed_tokens"], row["useful_tokens"])
    if policy == "priority":
        row["urgent_mean_finish_step"] = ratio(sum(s.finish_step for s in urgent), len(urgent))
        row["normal_mean_finish_step"] = ratio(sum(s.finish_step for s in normal), len(normal))
        row["urgent_preemptions"] = sum(s.num_preemptions for s in urgent)
    return row


def run() -> dict[str, Any]:
    series = [measure(n, policy, False) for policy in ("fcfs", "priority") for n in NUM_BLOCKS]
    series += [measure(n, "fcfs", True) for n in NUM_BLOCKS]
    # the same priority workload under FCFS, so the urgent requests' finish step can be compared
    fcfs_same = []
    for n in NUM_BLOCKS:
        engine = Engine(block_size=16, num_blocks=n, max_num_batched_tokens=2048, max_num_seqs=16,
                        enable_prefix_caching=False, policy="fcfs")
        specs = workload(priorities=True)
        engine.run(specs)
        urgent = [engine.stats[s.req_id] for s in specs if s.priority == 0]
        fcfs_same.append({"num_blocks": n,
                          "urgent_mean_finish_step": ratio(sum(s.finish_step for s in urgent), len(urgent))})
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "requests": NUM_REQUESTS,
            "prompt_len": "128 + ((5i) % 12) * 20 (128..348)",
            "max_tokens": OUTPUT,
            "block_size": 16,
            "num_blocks": list(NUM_BLOCKS),
            "max_num_batched_tokens": 2048,
            "max_num_seqs": 16,
            "priorities": "priority runs: requests 2, 5, 8, 11 have priority 0 (urgent), the others 1",
        },
        "series": series,
        "fcfs_urgent_mean_finish_step": fcfs_same,
        "notes": [
            "recomputed_tokens: tokens scheduled again after a preemption (the work thrown away)",
            "restored_tokens: with prefix caching on, tokens a re-admitted request found still cached",
            "FCFS preempts the newest running request; priority preempts the least urgent, newest first",
            "fcfs_urgent_mean_finish_step: the same priority workload run with policy fcfs (priorities ignored)",
        ],
    }


def figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.3))
    styles = {("fcfs", False): ("#4C72B0", "o", "FCFS"),
              ("priority", False): ("#DD8452", "s", "priority"),
              ("fcfs", True): ("#55A868", "^", "FCFS + 前缀缓存")}
    for (policy, caching), (color, marker, label) in styles.items():
        rows = sorted((r for r in result["series"] if r["policy"] == policy
                       and r["enable_prefix_caching"] == caching), key=lambda r: r["num_blocks"])
        nb = [r["num_blocks"] for r in rows]
        ax1.plot(nb, [r["preemptions"] for r in rows], marker=marker, markersize=4, color=color, label=label)
        ax2.plot(nb, [r["recomputed_tokens"] for r in rows], marker=marker, markersize=4, color=color,
                 label=label)
    for ax in (ax1, ax2):
        ax.set_xlabel("num_blocks（block_size=16）")
        ax.legend(fontsize=7)
    ax1.set_ylabel("抢占次数")
    ax1.set_title("块越少，抢占越多")
    ax2.set_ylabel("重算的 token 数")
    ax2.set_title("每次抢占都要重算已算过的 token")
    fig.suptitle(f"{result['setup']['requests']} 个请求各生成 {result['setup']['max_tokens']} 个 token"
                 f"（vLLM {result['vllm']}）", fontsize=10)
    fig.tight_layout()
    return {"kv-pressure": fig, "kv-priority": _priority_figure(result)}


def _priority_figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.0))
    prio = sorted((r for r in result["series"] if r["policy"] == "priority"), key=lambda r: r["num_blocks"])
    fcfs = sorted(result["fcfs_urgent_mean_finish_step"], key=lambda r: r["num_blocks"])
    nb = [r["num_blocks"] for r in prio]
    ax.plot([r["num_blocks"] for r in fcfs], [r["urgent_mean_finish_step"] for r in fcfs], marker="o",
            markersize=4, color="#4C72B0", label="紧急请求，policy=fcfs（忽略优先级）")
    ax.plot(nb, [r["urgent_mean_finish_step"] for r in prio], marker="s", markersize=4, color="#DD8452",
            label="紧急请求，policy=priority")
    ax.plot(nb, [r["normal_mean_finish_step"] for r in prio], marker="^", markersize=4, color="#8172B3",
            linestyle="--", label="普通请求，policy=priority")
    ax.set_xlabel("num_blocks（block_size=16）")
    ax.set_ylabel("平均完成步")
    ax.set_title("KV 紧张时，priority 让 4 个紧急请求先完成（其余请求承担抢占）")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
