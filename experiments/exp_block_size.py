"""block_size against internal fragmentation and blocks per request.

The same 32 requests (prompt 20–1000 tokens, 16–128 output tokens) run to completion with
block_size 8 … 128.  The KV pool holds the same number of *tokens* in every run (16384 slots =
num_blocks × block_size), so only the granularity changes.  For every request the harness records the
most blocks ``KVCacheManager.get_block_ids()`` ever held for it (its last step) and the tokens whose KV
was in those blocks at that step (prompt + output − 1: the last sampled token is never fed back).
Internal fragmentation is the unused slots of the last, partly filled block.
"""

from __future__ import annotations

from typing import Any

from .common import UNIT, ratio
from .harness import Engine, Spec, prompt_tokens, vllm_version

NAME = "block_size"
TITLE = "block_size 与块内碎片、每请求块数"
BLOCK_SIZES = (8, 16, 32, 64, 128)
KV_TOKENS = 32768  # more than all 32 requests ever hold at once: no preemption, only granularity varies
NUM_REQUESTS = 32
WORKLOADS = {
    # name: (prompt length of request i, max_tokens of request i)
    "mixed": (lambda i: 20 + (i * 617) % 981, lambda i: (16, 32, 64, 128)[(i * 3) % 4]),  # 20 … 1000
    "short": (lambda i: 10 + (i * 37) % 91, lambda i: 16),                               # 10 … 100
}


def workload(name: str) -> list[Spec]:
    prompt_len, max_tokens = WORKLOADS[name]
    return [Spec(f"req-{i}", prompt_tokens(i, prompt_len(i)), max_tokens(i)) for i in range(NUM_REQUESTS)]


def measure(wl: str, bs: int) -> dict[str, Any]:
    engine = Engine(block_size=bs, num_blocks=KV_TOKENS // bs, max_num_batched_tokens=4096,
                    max_num_seqs=32, enable_prefix_caching=False)
    specs = workload(wl)
    steps = engine.run(specs)
    blocks, waste, kv_tokens = [], [], []
    for s in specs:
        st = engine.stats[s.req_id]
        tokens = st.prompt_len + st.output_len - 1
        assert st.output_len == s.max_tokens
        assert st.peak_blocks == -(-tokens // bs), (s.req_id, st.peak_blocks, tokens, bs)
        blocks.append(st.peak_blocks)
        kv_tokens.append(tokens)
        waste.append(st.peak_blocks * bs - tokens)
    slots = sum(blocks) * bs
    peak_used = max(r.used_blocks for r in steps)
    preemptions = sum(st.num_preemptions for st in engine.stats.values())
    assert preemptions == 0
    return {
        "workload": wl,
        "prompt_len_min": min(len(x.prompt) for x in specs),
        "prompt_len_max": max(len(x.prompt) for x in specs),
        "preemptions": preemptions,
        "block_size": bs,
        "num_blocks": KV_TOKENS // bs,
        "steps": len(steps),
        "mean_blocks_per_request": ratio(sum(blocks), len(blocks)),
        "max_blocks_per_request": max(blocks),
        "min_blocks_per_request": min(blocks),
        "mean_wasted_slots_per_request": ratio(sum(waste), len(waste)),
        "max_wasted_slots_per_request": max(waste),
        "wasted_fraction": ratio(sum(waste), slots),
        "kv_tokens_total": sum(kv_tokens),
        "allocated_slots_total": slots,
        "peak_used_blocks": peak_used,
        "peak_used_slots": peak_used * bs,
    }


def run() -> dict[str, Any]:
    series = [measure(wl, bs) for wl in WORKLOADS for bs in BLOCK_SIZES]
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "requests": NUM_REQUESTS,
            "workloads": {
                "mixed": "prompt 20 + (i*617) % 981 (20..1000), max_tokens 16/32/64/128 by (3i) % 4",
                "short": "prompt 10 + (i*37) % 91 (10..100), max_tokens 16",
            },
            "kv_slots": KV_TOKENS,
            "block_sizes": list(BLOCK_SIZES),
            "max_num_batched_tokens": 4096,
            "max_num_seqs": 32,
            "enable_prefix_caching": False,
        },
        "series": series,
        "notes": [
            "blocks per request = ceil((prompt + output - 1) / block_size), asserted for every request",
            "wasted slots are only in the last block of a request: 0 .. block_size-1, about block_size/2 on average",
            "the pool (32768 slots) holds all 32 requests at once: no preemption, so steps barely depend on block_size",
            "short requests waste a larger share: the half-empty last block is a fixed cost per request",
        ],
    }


def figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.2))
    width = 0.38
    colors = {"mixed": "#4C72B0", "short": "#DD8452"}
    names = {"mixed": "混合（prompt 20–1000）", "short": "短请求（prompt 10–100）"}
    for k, wl in enumerate(("mixed", "short")):
        rows = [r for r in result["series"] if r["workload"] == wl]
        xs = [i + (k - 0.5) * width for i in range(len(rows))]
        ax1.bar(xs, [r["mean_blocks_per_request"] for r in rows], width, color=colors[wl], label=names[wl])
        ax2.bar(xs, [100 * r["wasted_fraction"] for r in rows], width, color=colors[wl], label=names[wl])
        for x, r in zip(xs, rows):
            ax2.annotate(f"{100 * r['wasted_fraction']:.0f}", (x, 100 * r["wasted_fraction"]),
                         ha="center", va="bottom", fontsize=7)
    labels = [str(b) for b in result["setup"]["block_sizes"]]
    for ax in (ax1, ax2):
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlabel("block_size（每块 token 数）")
    ax1.set_ylabel("每请求块数（平均）")
    ax1.set_title("块越大，每个请求占的块越少")
    ax1.legend(fontsize=8)
    ax2.set_ylabel("已分配槽位中空着的比例（%）")
    ax2.set_title("块越大，最后一块空得越多")
    fig.suptitle(f"{result['setup']['requests']} 个请求各自峰值时（vLLM {result['vllm']} 的 KVCacheManager）",
                 fontsize=10)
    fig.tight_layout()
    return {"block-size": fig}
