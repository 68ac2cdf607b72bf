"""Continuous against static batching: steps and token-slot utilisation on a mixed workload.

24 requests, all waiting at step 1: prompts of 32–512 tokens, and outputs that are mostly short (16–64
tokens) with every fourth one long (256 tokens).  ``max_num_seqs = 8`` sequence slots.

* **continuous** — vLLM as it is: every request is submitted at step 1 and the real scheduler admits a
  waiting request as soon as a running one finishes (``Scheduler.schedule()``'s waiting loop runs every
  step, bounded by ``max_num_running_reqs`` and the token budget).
* **static** — emulated *around* the same scheduler: a batch of 8 requests is submitted only when the
  previous batch has fully finished (``Engine.run(admit=...)`` holds the rest back).  Inside a batch the
  real scheduler still runs (chunked prefill included); only admission is gated, as in a server that
  batches whole requests.

Token-slot utilisation = sequences that got tokens in a step / ``max_num_seqs``, averaged over steps.
"""

from __future__ import annotations

from typing import Any

from .common import UNIT, ratio
from .harness import Engine, Spec, prompt_tokens, vllm_version

NAME = "batching"
TITLE = "连续批处理与静态批处理：步数与槽位利用率"
NUM_REQUESTS = 24
MAX_NUM_SEQS = 8
BUDGET = 2048


def workload() -> list[Spec]:
    specs = []
    for i in range(NUM_REQUESTS):
        prompt_len = 32 + (i * 149) % 481                       # 32 … 512
        max_tokens = 256 if i % 4 == 3 else (16, 32, 64)[i % 3]  # a long answer in every 4
        specs.append(Spec(f"req-{i}", prompt_tokens(i, prompt_len), max_tokens))
    return specs


def static_admit(engine: Engine, arrived: list[Spec]) -> list[Spec]:
    """Static batching: the next MAX_NUM_SEQS requests, only once nothing is in flight."""
    if engine.has_work():
        return []
    return arrived[:MAX_NUM_SEQS]


def measure(mode: str) -> tuple[dict[str, Any], list[int]]:
    engine = Engine(block_size=16, num_blocks=4096, max_num_batched_tokens=BUDGET, max_num_seqs=MAX_NUM_SEQS,
                    enable_prefix_caching=False)
    specs = workload()
    steps = engine.run(specs, admit=static_admit if mode == "static" else None)
    occupancy = [len(s.scheduled) for s in steps]
    finish = sorted(engine.stats[s.req_id].finish_step for s in specs)
    first_token = sorted(engine.stats[s.req_id].first_token_step for s in specs)
    total_tokens = sum(s.total_tokens for s in steps)
    output_tokens = sum(engine.stats[s.req_id].output_len for s in specs)
    row = {
        "mode": mode,
        "steps": len(steps),
        "scheduled_tokens": total_tokens,
        "output_tokens": output_tokens,
        "mean_tokens_per_step": ratio(total_tokens, len(steps)),
        "mean_output_tokens_per_step": ratio(output_tokens, len(steps)),
        "slot_utilisation": ratio(sum(occupancy), len(steps) * MAX_NUM_SEQS),
        "steps_with_idle_slots": sum(1 for n in occupancy if n < MAX_NUM_SEQS),
        "mean_finish_step": ratio(sum(finish), len(finish)),
        "median_finish_step": finish[len(finish) // 2],
        "last_finish_step": finish[-1],
        "mean_first_token_step": ratio(sum(first_token), len(first_token)),
        "max_first_token_step": first_token[-1],
    }
    return row, occupancy


def run() -> dict[str, Any]:
    series, occupancy = [], {}
    for mode in ("continuous", "static"):
        row, occ = measure(mode)
        series.append(row)
        occupancy[mode] = occ
    cont, stat = series
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "requests": NUM_REQUESTS,
            "prompt_len": "32 + (i*149) % 481 (32..512)",
            "max_tokens": "256 for i % 4 == 3, else 16/32/64 by i % 3",
            "max_num_seqs": MAX_NUM_SEQS,
            "max_num_batched_tokens": BUDGET,
            "block_size": 16,
            "num_blocks": 4096,
            "static_batching": "emulated: the next 8 requests are submitted only when no request is in flight",
        },
        "series": series,
        "occupancy_per_step": occupancy,
        "speedup_steps": ratio(stat["steps"], cont["steps"]),
        "notes": [
            "same scheduler, same requests; only admission differs",
            "static: a batch lasts as long as its longest answer (256 tokens); finished slots stay empty",
            "continuous: schedule() refills a slot in the step after a request finishes",
            "occupancy_per_step lists, per step, how many sequences got tokens (the figure's curves)",
        ],
    }


def figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 3.0))
    colors = {"continuous": "#4C72B0", "static": "#DD8452"}
    names = {"continuous": "连续批处理（vLLM）", "static": "静态批处理（模拟）"}
    for row in result["series"]:
        occ = result["occupancy_per_step"][row["mode"]]
        ax.step(range(1, len(occ) + 1), occ, where="post", color=colors[row["mode"]],
                label=f"{names[row['mode']]}：{row['steps']} 步，槽位利用率 {100 * row['slot_utilisation']:.0f}%")
    ax.set_xlabel("调度步")
    ax.set_ylabel("本步有 token 的序列数")
    ax.set_ylim(0, result["setup"]["max_num_seqs"] + 1)
    ax.set_title(f"{result['setup']['requests']} 个请求、max_num_seqs={result['setup']['max_num_seqs']}："
                 "静态批处理要等最长的回答")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return {"batching": fig}
