"""The sampler on CPU tensors: greedy, temperature, top-k, top-p, and per-request seeds.

vLLM's own ``Sampler`` (``vllm/v1/sample/sampler.py``) runs on a batch of CPU logits: a fixed logit
vector over a 32-token vocabulary (``logit[i] = -0.3 i``, so token 0 is the most likely), repeated for
500 rows per setting — greedy, temperature 1.0 and 0.5, top-k 4, top-p 0.8.  Every row has its own
``torch.Generator`` (as a request with ``SamplingParams(seed=…)`` gets one), so the draws are
reproducible; a second call with the same seeds must give the same tokens.  Counted: how often each token
id was drawn, against the probability the settings give it.  (No clock, no model: the logits are made
up; what is real is the sampling code.)
"""

from __future__ import annotations

import math
from typing import Any

from .common import UNIT, ratio
from .harness import use_cpu_platform, vllm_version

NAME = "sampler"
TITLE = "采样器：贪心、温度、top-k、top-p 与每请求种子"
VOCAB = 32
ROWS = 500
SLOPE = -0.3
SETTINGS = (  # name, temperature, top_k (0 = off), top_p (1.0 = off)
    ("greedy", 0.0, 0, 1.0),
    ("temperature_1.0", 1.0, 0, 1.0),
    ("temperature_0.5", 0.5, 0, 1.0),
    ("top_k_4", 1.0, 4, 1.0),
    ("top_p_0.8", 1.0, 0, 0.8),
)


def expected_probs(temperature: float, top_k: int, top_p: float) -> list[float]:
    """The distribution the settings define (for comparison; computed here, not by vLLM)."""
    logits = [SLOPE * i for i in range(VOCAB)]
    if temperature == 0.0:
        return [1.0] + [0.0] * (VOCAB - 1)
    w = [math.exp(x / temperature) for x in logits]
    total = sum(w)
    p = [x / total for x in w]
    keep = VOCAB
    if top_k:
        keep = top_k
    if top_p < 1.0:  # smallest prefix (tokens sorted by probability) whose mass reaches top_p
        acc, keep = 0.0, 0
        for x in p:
            keep += 1
            acc += x
            if acc >= top_p:
                break
    mass = sum(p[:keep])
    return [x / mass if i < keep else 0.0 for i, x in enumerate(p)]


def _metadata(torch, seeds: list[int]):
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    n = len(SETTINGS) * ROWS
    temperature = torch.tensor([t for _, t, _, _ in SETTINGS for _ in range(ROWS)], dtype=torch.float32)
    # as the input batch stores them: "no top-k" is k = vocab size, "no top-p" is p = 1.0
    top_k = torch.tensor([k or VOCAB for _, _, k, _ in SETTINGS for _ in range(ROWS)], dtype=torch.int32)
    top_p = torch.tensor([p for _, _, _, p in SETTINGS for _ in range(ROWS)], dtype=torch.float32)
    generators = {}
    for i, seed in enumerate(seeds):
        g = torch.Generator(device="cpu")
        g.manual_seed(seed)
        generators[i] = g
    return SamplingMetadata(
        temperature=temperature,
        all_greedy=False,
        all_random=False,
        top_p=top_p,
        top_k=top_k,
        generators=generators,
        max_num_logprobs=None,
        no_penalties=True,
        prompt_token_ids=None,
        frequency_penalties=torch.zeros(n),
        presence_penalties=torch.zeros(n),
        repetition_penalties=torch.ones(n),
        output_token_ids=[[] for _ in range(n)],
        spec_token_ids=[[] for _ in range(n)],
        allowed_token_ids_mask=None,
        bad_words_token_ids={},
        logitsprocs=LogitsProcessors(),
    )


def run() -> dict[str, Any]:
    use_cpu_platform()
    import torch
    from vllm.v1.sample.sampler import Sampler

    torch.manual_seed(0)
    n = len(SETTINGS) * ROWS
    logits = torch.tensor([[SLOPE * i for i in range(VOCAB)]] * n, dtype=torch.float32)
    seeds = list(range(1000, 1000 + n))
    sampler = Sampler()
    first = sampler(logits.clone(), _metadata(torch, seeds)).sampled_token_ids.view(-1).tolist()
    again = sampler(logits.clone(), _metadata(torch, seeds)).sampled_token_ids.view(-1).tolist()
    other = sampler(logits.clone(), _metadata(torch, [s + 7 for s in seeds])).sampled_token_ids.view(-1).tolist()
    series = []
    for g, (name, temperature, top_k, top_p) in enumerate(SETTINGS):
        rows = first[g * ROWS:(g + 1) * ROWS]
        counts = [rows.count(t) for t in range(VOCAB)]
        probs = expected_probs(temperature, top_k, top_p)
        allowed = sum(1 for p in probs if p > 0)
        series.append({
            "setting": name,
            "temperature": temperature,
            "top_k": top_k,
            "top_p": top_p,
            "draws": ROWS,
            "distinct_tokens": sum(1 for c in counts if c),
            "allowed_tokens": allowed,
            "outside_allowed": sum(c for t, c in enumerate(counts) if probs[t] == 0),
            "token0_share": ratio(counts[0], ROWS),
            "token0_expected": round(probs[0], 4),
            "top4_share": ratio(sum(counts[:4]), ROWS),
            "top4_expected": round(sum(probs[:4]), 4),
            "max_token_id": max(rows),
            "same_seed_same_tokens": rows == again[g * ROWS:(g + 1) * ROWS],
            "changed_with_other_seeds": sum(1 for a, b in zip(rows, other[g * ROWS:(g + 1) * ROWS]) if a != b),
            "counts": " ".join(str(c) for c in counts),
        })
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "vocab": VOCAB,
            "logits": f"logit[i] = {SLOPE} * i, the same for every row",
            "rows_per_setting": ROWS,
            "seeds": "row r has torch.Generator seeded 1000 + r (a request with SamplingParams(seed=...))",
            "settings": [list(s) for s in SETTINGS],
            "sampler": "vllm.v1.sample.sampler.Sampler on CPU tensors (TopKTopPSampler.forward_cpu)",
        },
        "series": series,
        "notes": [
            "counts: draws per token id 0..31 (space-separated), for the figure",
            "greedy rows take argmax: token 0 every time, whatever the seed",
            "top-k 4 and top-p 0.8 never draw outside their set (outside_allowed = 0)",
            "the same seeds give the same tokens (same_seed_same_tokens); other seeds change some",
        ],
    }


def figure(result: dict[str, Any]):
    from .plots import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, len(result["series"]), figsize=(8, 2.6), sharey=True)
    names = {"greedy": "贪心（T=0）", "temperature_1.0": "T=1.0", "temperature_0.5": "T=0.5",
             "top_k_4": "T=1.0，top_k=4", "top_p_0.8": "T=1.0，top_p=0.8"}
    for ax, row in zip(axes, result["series"]):
        counts = [int(c) for c in row["counts"].split()]
        shown = 12
        ax.bar(range(shown), [c / row["draws"] for c in counts[:shown]], color="#4C72B0")
        probs = expected_probs(row["temperature"], row["top_k"], row["top_p"])
        ax.plot(range(shown), probs[:shown], color="#C44E52", marker=".", linewidth=1, label="理论概率")
        ax.set_title(names[row["setting"]], fontsize=9)
        ax.set_xticks([0, 4, 8], ["0", "4", "8"])
        ax.set_xlabel("token id")
    axes[0].set_ylabel(f"{result['setup']['rows_per_setting']} 次抽样中的占比")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"vLLM {result['vllm']} 的 Sampler 在 CPU 上：logit[i] = -0.3·i", fontsize=10)
    fig.tight_layout()
    return {"sampler": fig}
