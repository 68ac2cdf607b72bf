"""Chunked prefill: what a long prompt does to requests that are decoding, against max_num_batched_tokens.

Workload: 4 requests with short prompts (64 tokens) arrive at step 1 and decode 200 tokens each.  At
step 6 a long prompt (4000 tokens, 16 output tokens) arrives, and from step 8 on four more short requests
(one every step).  The token budget ``max_num_batched_tokens`` varies; chunked prefill is on (vLLM's
default), plus one run with it off (then the budget must hold a whole prompt: 4096) and one run with
``long_prefill_token_threshold = 256``.

Measured per run, in steps and tokens:

* ``decode_stalls`` — (step, request) pairs where a request that is decoding got no token.  The real
  scheduler schedules the RUNNING queue before the WAITING one and a decode needs one token, so this is 0
  unless the budget is used up by a request ahead of it in the running queue;
* ``max_tokens_in_decode_step`` / ``max_prefill_tokens_in_decode_step`` — how heavy the steps are
  that carry decodes (a step's time grows with its tokens, so this is the inter-token-latency proxy);
* ``long_prompt_prefill_steps`` — steps from the long prompt's arrival to its first token (TTFT in steps);
* ``late_short_first_token_steps`` — the same for the four short requests arriving after it.
"""

from __future__ import annotations

from typing import Any

from .common import UNIT, ratio
from .harness import Engine, Spec, prompt_tokens, vllm_version

NAME = "chunked_prefill"
TITLE = "分块预填充：长 prompt 对解码的影响与 max_num_batched_tokens"
BUDGETS = (256, 512, 1024, 2048, 4096)
LONG = 4000
LONG_ARRIVAL = 6


def workload() -> list[Spec]:
    specs = [Spec(f"dec-{i}", prompt_tokens(i, 64), 200, arrival_step=1) for i in range(4)]
    specs.append(Spec("long-0", prompt_tokens(50, LONG), 16, arrival_step=LONG_ARRIVAL))
    specs += [Spec(f"late-{i}", prompt_tokens(60 + i, 64), 32, arrival_step=LONG_ARRIVAL + 2 + i)
              for i in range(4)]
    return specs


def measure(budget: int, *, chunked: bool = True, threshold: int = 0) -> dict[str, Any]:
    engine = Engine(block_size=16, num_blocks=4096, max_num_batched_tokens=budget, max_num_seqs=16,
                    max_model_len=4096, enable_prefix_caching=False, enable_chunked_prefill=chunked,
                    long_prefill_token_threshold=threshold)
    specs = workload()
    steps = engine.run(specs)
    stalls = 0
    decoding: set[str] = set()  # requests that have produced a token and are not finished
    decode_steps = []
    for rec in steps:
        stalls += sum(1 for rid in decoding if rid not in rec.scheduled)
        if rec.decode_tokens:
            decode_steps.append(rec)
        for rid in rec.scheduled:
            st = engine.stats[rid]
            if st.first_token_step is not None and st.first_token_step <= rec.step:
                decoding.add(rid)
        decoding -= set(rec.finished)
    long_st = engine.stats["long-0"]
    late = [engine.stats[f"late-{i}"] for i in range(4)]
    late_ttft = [st.first_token_step - (LONG_ARRIVAL + 2 + i) + 1 for i, st in enumerate(late)]
    chunks = [rec.scheduled["long-0"] for rec in steps if "long-0" in rec.scheduled
              and rec.step <= long_st.first_token_step]
    return {
        "run": "no_chunking" if not chunked else (f"threshold_{threshold}" if threshold else "chunked"),
        "max_num_batched_tokens": budget,
        "enable_chunked_prefill": chunked,
        "long_prefill_token_threshold": threshold,
        "steps": len(steps),
        "decode_stalls": stalls,
        "decode_steps": len(decode_steps),
        "decode_steps_with_prefill": sum(1 for r in decode_steps if r.prefill_tokens),
        "max_tokens_in_decode_step": max(r.total_tokens for r in decode_steps),
        "max_prefill_tokens_in_decode_step": max(r.prefill_tokens for r in decode_steps),
        "decoded_tokens_during_long_prefill": sum(
            r.decode_tokens for r in steps if LONG_ARRIVAL <= r.step <= long_st.first_token_step),
        "long_prompt_chunks": len(chunks),
        "long_prompt_largest_chunk": max(chunks),
        "long_prompt_prefill_steps": long_st.first_token_step - LONG_ARRIVAL + 1,
        "late_short_first_token_steps_mean": ratio(sum(late_ttft), len(late_ttft)),
        "late_short_first_token_steps_max": max(late_ttft),
        "preemptions": sum(st.num_preemptions for st in engine.stats.values()),
    }


def run() -> dict[str, Any]:
    series = [measure(b) for b in BUDGETS]
    series.append(measure(4096, chunked=False))
    series.append(measure(2048, threshold=256))
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "decoding": "4 requests, prompt 64, 200 output tokens, arrive at step 1",
            "long_prompt": f"1 request, prompt {LONG}, 16 output tokens, arrives at step {LONG_ARRIVAL}",
            "late_short": f"4 requests, prompt 64, 32 output tokens, arrive at steps {LONG_ARRIVAL + 2}.."
                          f"{LONG_ARRIVAL + 5}",
            "budgets": list(BUDGETS),
            "block_size": 16,
            "num_blocks": 4096,
            "max_model_len": 4096,
            "extra_runs": "chunked prefill off at budget 4096; long_prefill_token_threshold=256 at budget 2048",
        },
        "series": series,
        "notes": [
            "first-token steps count the arrival step as 1",
            "decode_stalls is 0 in every run: running requests are scheduled first and need 1 token each",
            "a small budget spreads the 4000-token prompt over many steps: light decode steps, late first token",
            "the late short requests wait behind the long prompt's chunks: it is ahead of them in the running "
            "queue and takes what the decodes leave; long_prefill_token_threshold caps its chunk",
            "without chunking the whole prompt rides in one step with the decodes (4004 tokens)",
        ],
    }


def figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    rows = [r for r in result["series"] if r["run"] == "chunked"]
    extra = [r for r in result["series"] if r["run"] != "chunked"]
    budgets = [r["max_num_batched_tokens"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.3))
    ax1.plot(budgets, [r["max_tokens_in_decode_step"] for r in rows], marker="o", color="#4C72B0",
             label="含解码的步里最重一步的 token 数")
    ax1.plot(budgets, [r["max_prefill_tokens_in_decode_step"] for r in rows], marker="s", color="#55A868",
             label="其中夹带的预填充 token")
    nc = next(r for r in extra if r["run"] == "no_chunking")
    ax1.scatter([nc["max_num_batched_tokens"]], [nc["max_tokens_in_decode_step"]], marker="x", color="#C44E52",
                zorder=3, label=f"关闭分块：{nc['max_tokens_in_decode_step']}")
    ax1.set_xscale("log", base=2)
    ax1.set_xticks(budgets, [str(b) for b in budgets])
    ax1.set_xlabel("max_num_batched_tokens")
    ax1.set_ylabel("token")
    ax1.set_title(f"解码停顿 = 0 步；代价是步变重")
    ax1.legend(fontsize=7)
    ax2.plot(budgets, [r["long_prompt_prefill_steps"] for r in rows], marker="o", color="#DD8452",
             label="长 prompt 出首 token 的步数")
    ax2.plot(budgets, [r["late_short_first_token_steps_mean"] for r in rows], marker="s", color="#8172B3",
             label="其后短请求出首 token 的步数（平均）")
    th = next(r for r in extra if r["run"].startswith("threshold"))
    ax2.scatter([th["max_num_batched_tokens"]], [th["late_short_first_token_steps_mean"]], marker="x",
                color="#C44E52", zorder=3, label=f"long_prefill_token_threshold=256")
    ax2.set_xscale("log", base=2)
    ax2.set_xticks(budgets, [str(b) for b in budgets])
    ax2.set_xlabel("max_num_batched_tokens")
    ax2.set_ylabel("调度步")
    ax2.set_title(f"{LONG} token 的 prompt 要分几步")
    ax2.legend(fontsize=7)
    fig.suptitle(f"4 个请求在解码时到来一个 {LONG} token 的 prompt（vLLM {result['vllm']}）", fontsize=10)
    fig.tight_layout()
    return {"chunked-prefill": fig}
