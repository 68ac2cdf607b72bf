"""Prefix-cache hit rate against the shared-prefix length and block_size, with the partial last block.

8 requests arrive together.  Each prompt is a shared prefix of S tokens (a "system prompt") followed by
50 tokens of its own.  Prefix caching is on.  For every request the harness reads how many prompt tokens
the scheduler took from the cache when it admitted the request (``NewRequestData.num_computed_tokens``,
set from ``KVCacheManager.get_computed_blocks``).  Only *full* blocks are hashed
(``get_request_block_hasher``), so a follower reuses ``floor(S / block_size) * block_size`` tokens; the
``S mod block_size`` tokens of the partly shared block are computed again by every request.

A second series sends 8 *identical* 512-token prompts: the hit stops at ``prompt_len - 1`` rounded down to
a block (``get_computed_blocks`` caps it so the last token is recomputed to get logits).
"""

from __future__ import annotations

from typing import Any

from .common import UNIT, ratio
from .harness import Engine, Spec, prompt_tokens, vllm_version

NAME = "prefix_cache"
TITLE = "前缀缓存命中率与共享前缀长度、block_size"
BLOCK_SIZES = (16, 32, 64)
SHARED = (0, 8, 16, 24, 32, 48, 64, 96, 100, 128, 160, 200, 256, 300, 384, 448, 512)
SUFFIX = 50
NUM_REQUESTS = 8
IDENTICAL_LEN = 512


def measure(bs: int, shared_len: int, *, identical: bool = False) -> dict[str, Any]:
    engine = Engine(block_size=bs, num_blocks=4096, max_num_batched_tokens=8192, max_num_seqs=16,
                    enable_prefix_caching=True)
    if identical:
        prompt = prompt_tokens(999, IDENTICAL_LEN)
        specs = [Spec(f"req-{i}", prompt, 4) for i in range(NUM_REQUESTS)]
    else:
        shared = prompt_tokens(999, shared_len)
        specs = [Spec(f"req-{i}", shared + prompt_tokens(i, SUFFIX), 4) for i in range(NUM_REQUESTS)]
    steps = engine.run(specs)
    hits = [engine.stats[s.req_id].cache_hit_tokens for s in specs]
    prompt_total = sum(len(s.prompt) for s in specs)
    follower_hit = hits[1]
    assert all(h == follower_hit for h in hits[1:]) and hits[0] == 0, hits
    prompt_len = len(specs[0].prompt)
    reusable = (prompt_len - 1) // bs * bs if identical else shared_len // bs * bs
    assert follower_hit == reusable, (bs, shared_len, follower_hit, reusable)
    return {
        "series": "identical" if identical else "shared_prefix",
        "block_size": bs,
        "shared_prefix_len": prompt_len if identical else shared_len,
        "prompt_len": prompt_len,
        "follower_hit_tokens": follower_hit,
        "partial_block_tokens": (prompt_len if identical else shared_len) - follower_hit,
        "hit_rate": ratio(sum(hits), prompt_total),
        "hit_rate_upper_bound": ratio((NUM_REQUESTS - 1) * (prompt_len if identical else shared_len),
                                      prompt_total),
        "computed_prompt_tokens": prompt_total - sum(hits),
        "steps": len(steps),
        "first_step_tokens": steps[0].total_tokens,
    }


def run() -> dict[str, Any]:
    series = [measure(bs, s) for bs in BLOCK_SIZES for s in SHARED]
    series += [measure(bs, IDENTICAL_LEN, identical=True) for bs in BLOCK_SIZES]
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "requests": NUM_REQUESTS,
            "prompt": f"shared prefix of S tokens + {SUFFIX} own tokens; all requests arrive at step 1",
            "identical": f"{NUM_REQUESTS} identical prompts of {IDENTICAL_LEN} tokens",
            "shared_prefix_lens": list(SHARED),
            "block_sizes": list(BLOCK_SIZES),
            "max_tokens": 4,
            "enable_prefix_caching": True,
            "num_blocks": 4096,
            "max_num_batched_tokens": 8192,
        },
        "series": series,
        "notes": [
            "hit_rate = prompt tokens taken from the cache / all prompt tokens, over the 8 requests",
            "the first request never hits; the 7 followers hit floor(S/block_size)*block_size tokens each",
            "partial_block_tokens: shared tokens in the last, partly shared block; every request computes them",
            "followers hit in the same step as the first request: its blocks are hashed and cached when "
            "allocate_slots() allocates them, before the forward pass",
            "identical prompts: the hit is capped at prompt_len-1 and rounded down to a block "
            "(496 of 512 with block_size 16)",
        ],
    }


def figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.3))
    colors = {16: "#4C72B0", 32: "#DD8452", 64: "#55A868"}
    rows = [r for r in result["series"] if r["series"] == "shared_prefix"]
    xs = sorted({r["shared_prefix_len"] for r in rows})
    ax1.plot(xs, xs, color="#999999", linestyle="--", linewidth=1, label="共享前缀长度 S")
    for bs in result["setup"]["block_sizes"]:
        sel = sorted((r for r in rows if r["block_size"] == bs), key=lambda r: r["shared_prefix_len"])
        ax1.step([r["shared_prefix_len"] for r in sel], [r["follower_hit_tokens"] for r in sel],
                 where="post", color=colors[bs], label=f"block_size={bs}")
        ax2.plot([r["shared_prefix_len"] for r in sel], [100 * r["hit_rate"] for r in sel],
                 marker="o", markersize=3, color=colors[bs], label=f"block_size={bs}")
    ax1.set_xlabel("共享前缀长度 S（token）")
    ax1.set_ylabel("后到请求的命中 token 数")
    ax1.set_title("只有整块能命中：S 向下取整到块")
    ax1.legend(fontsize=7)
    upper = sorted((r for r in rows if r["block_size"] == 16), key=lambda r: r["shared_prefix_len"])
    ax2.plot([r["shared_prefix_len"] for r in upper], [100 * r["hit_rate_upper_bound"] for r in upper],
             color="#999999", linestyle="--", linewidth=1, label="上限（S 全部命中）")
    ax2.set_xlabel("共享前缀长度 S（token）")
    ax2.set_ylabel("8 个请求的命中率（%）")
    ax2.set_title("命中率：首个请求不命中，其余 7 个命中")
    ax2.legend(fontsize=7)
    fig.suptitle(f"每个 prompt = S 个共享 token + {50} 个各自的 token（vLLM {result['vllm']}）", fontsize=10)
    fig.tight_layout()
    return {"prefix-cache": fig}
