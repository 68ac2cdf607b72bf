"""Drive the real vLLM v0.26.0 scheduler on CPU, step by step, with a fake model runner.

What is real here: ``vllm.v1.core.sched.scheduler.Scheduler`` (admission, chunked prefill, preemption,
FCFS/priority queues), ``KVCacheManager`` → ``BlockPool`` (block allocation, free queue, eviction),
prefix-cache hashing (``get_request_block_hasher`` / ``init_none_hash``) and
``Scheduler.update_from_output``.  What is fake: the model.  :class:`FakeModelRunner` returns one
deterministic token for every request whose prefill is complete after the step — what the GPU model
runner's sampler would return — and nothing for a request still in a partial (chunked) prefill.

The machine has no GPU, so vLLM cannot infer a device: :func:`use_cpu_platform` sets vLLM's CPU platform
through the private ``vllm.platforms._current_platform`` (a name of v0.26.0, pinned knowingly and tested
in ``tests/experiments``).  The model directory is a temporary folder holding only a tiny ``config.json``
(:func:`tiny_model_dir`); with ``skip_tokenizer_init=True`` vLLM reads no weights and no tokenizer.
This mirrors the sdist's own ``tests/v1/core/utils.py::create_scheduler``.

Everything is deterministic: request arrival times are the submission index (never ``time.time()``),
``PYTHONHASHSEED`` is fixed before the block-hash seed is drawn, and the tokens are a function of the
request id and position.  Nothing here reads a clock.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("PYTHONHASHSEED", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

#: the config.json of the model that is never loaded: a 2-layer OPT (OPT is what vLLM's own tests use)
TINY_CONFIG: dict[str, Any] = {
    "architectures": ["OPTForCausalLM"],
    "model_type": "opt",
    "hidden_size": 64,
    "ffn_dim": 256,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 50272,
    "max_position_embeddings": 8192,
    "word_embed_proj_dim": 64,
    "do_layer_norm_before": True,
    "bos_token_id": 2,
    "eos_token_id": 2,
    "pad_token_id": 1,
    "torch_dtype": "float16",
}
EOS_TOKEN_ID = 2


def use_cpu_platform():
    """Make vLLM's current platform the CPU platform (before any config is built); return it."""
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    if not isinstance(platforms._current_platform, CpuPlatform):  # private name of vLLM v0.26.0
        platforms._current_platform = CpuPlatform()
    return platforms.current_platform


@cache
def tiny_model_dir() -> str:
    """A temporary model directory with only ``config.json`` (created once per process)."""
    path = Path(tempfile.mkdtemp(prefix="vllm-book-tiny-model-"))
    (path / "config.json").write_text(json.dumps(TINY_CONFIG, indent=2, sort_keys=True))
    return str(path)


@cache
def _block_hasher(block_size: int):
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

    init_none_hash(sha256)  # NONE_HASH = sha256(PYTHONHASHSEED): fixed, so hashes are reproducible
    return get_request_block_hasher(block_size, sha256)


@dataclass
class Spec:
    """One request of a workload."""

    req_id: str
    prompt: list[int]
    max_tokens: int
    arrival_step: int = 0  # submitted just before this scheduler step (1-based) runs
    priority: int = 0      # smaller = more urgent (vLLM's convention), used with policy="priority"


@dataclass
class StepRecord:
    """What one ``Scheduler.schedule()`` + ``update_from_output()`` step did."""

    step: int
    scheduled: dict[str, int]          # req_id -> tokens scheduled this step
    prefill_tokens: int                # prompt (or recomputed) tokens
    decode_tokens: int                 # tokens that extend an already generated sequence
    decode_reqs: list[str]             # requests that got a decode token this step
    new: list[str]                     # admitted from the waiting queue for the first time
    resumed: list[str]                 # re-admitted after a preemption
    preempted: list[str]
    finished: list[str]
    num_running: int
    num_waiting: int
    used_blocks: int
    cached_tokens: dict[str, int] = field(default_factory=dict)  # admitted req -> prefix-cache hit tokens

    @property
    def total_tokens(self) -> int:
        return sum(self.scheduled.values())


@dataclass
class RequestStats:
    req_id: str
    prompt_len: int
    output_len: int = 0
    first_step: int | None = None      # step the request was first scheduled
    first_token_step: int | None = None
    finish_step: int | None = None
    num_preemptions: int = 0
    recomputed_tokens: int = 0         # tokens scheduled again below the request's high-water mark
    cache_hit_tokens: int = 0          # prefix-cache hit at first admission
    restored_tokens: int = 0           # prefix-cache hit at re-admissions after a preemption
    peak_blocks: int = 0
    high_water: int = 0                # most tokens ever computed (internal)


class FakeModelRunner:
    """Stands in for the GPU model runner: returns the next token of every request that finished its prefill.

    ``token_fn(req_index, position)`` gives the token id; the default is a fixed arithmetic sequence that
    never hits EOS, so requests end by ``max_tokens``.  A request whose (chunked) prefill is still partial
    after this step gets no token — as the real runner discards the sample of a partial prefill.
    """

    def __init__(self, token_fn: Callable[[int, int], int] | None = None) -> None:
        self.token_fn = token_fn or (lambda idx, pos: 1000 + (7 * idx + 13 * pos) % 20000)

    def execute(self, scheduler, scheduler_output):
        from vllm.v1.outputs import ModelRunnerOutput

        req_ids = list(scheduler_output.num_scheduled_tokens)
        sampled: list[list[int]] = []
        for req_id in req_ids:
            req = scheduler.requests[req_id]
            # _update_after_schedule() already advanced num_computed_tokens by the scheduled count
            if req.num_computed_tokens >= req.num_tokens:
                idx = int(req_id.rsplit("-", 1)[-1]) if req_id.rsplit("-", 1)[-1].isdigit() else 0
                sampled.append([self.token_fn(idx, req.num_tokens)])
            else:
                sampled.append([])
        return ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={r: i for i, r in enumerate(req_ids)},
            sampled_token_ids=sampled,
            logprobs=None,
            prompt_logprobs_dict={},
            pooler_output=[],
        )


class Engine:
    """A real ``Scheduler`` with a KV cache of ``num_blocks`` blocks, stepped by hand."""

    def __init__(
        self,
        *,
        block_size: int = 16,
        num_blocks: int = 1000,
        max_num_batched_tokens: int = 2048,
        max_num_seqs: int = 64,
        max_model_len: int = 4096,
        enable_prefix_caching: bool = False,
        enable_chunked_prefill: bool = True,
        policy: str = "fcfs",
        long_prefill_token_threshold: int = 0,
        runner: FakeModelRunner | None = None,
    ) -> None:
        use_cpu_platform()
        import torch
        from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
        from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
        from vllm.v1.structured_output import StructuredOutputManager

        self.block_size = block_size
        self.num_blocks = num_blocks
        model_config = ModelConfig(model=tiny_model_dir(), dtype="float16", seed=0,
                                   skip_tokenizer_init=True, max_model_len=max_model_len)
        scheduler_config = SchedulerConfig(
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens,
            max_model_len=max_model_len,
            enable_chunked_prefill=enable_chunked_prefill,
            long_prefill_token_threshold=long_prefill_token_threshold,
            policy=policy,
            is_encoder_decoder=False,
            watermark=0.0,  # vLLM's default; stated so a changed default cannot move the numbers silently
        )
        cache_config = CacheConfig(block_size=block_size, cache_dtype="auto",
                                   enable_prefix_caching=enable_prefix_caching)
        self.vllm_config = VllmConfig(model_config=model_config, scheduler_config=scheduler_config,
                                      cache_config=cache_config)
        # one attention layer; the block *count* is what the scheduler sees, the bytes per block do not matter
        spec = FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1, dtype=torch.float32)
        kv_cache_config = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                                        kv_cache_groups=[KVCacheGroupSpec(["layer.0"], spec)])
        cache_config.num_gpu_blocks = num_blocks
        register_all_kvcache_specs(self.vllm_config)
        self.scheduler = Scheduler(
            vllm_config=self.vllm_config,
            kv_cache_config=kv_cache_config,
            structured_output_manager=StructuredOutputManager(self.vllm_config),
            block_size=block_size,
            log_stats=True,
        )
        self.runner = runner or FakeModelRunner()
        self.steps: list[StepRecord] = []
        self.stats: dict[str, RequestStats] = {}
        self._submitted = 0
        self._hasher = _block_hasher(block_size)

    # -- requests -----------------------------------------------------------------------------------

    def submit(self, spec: Spec) -> None:
        from vllm.sampling_params import SamplingParams
        from vllm.v1.request import Request

        params = SamplingParams(max_tokens=spec.max_tokens, ignore_eos=True, temperature=0.0)
        params.update_from_generation_config({}, EOS_TOKEN_ID)
        request = Request(
            request_id=spec.req_id,
            prompt_token_ids=list(spec.prompt),
            sampling_params=params,
            pooling_params=None,
            arrival_time=float(self._submitted),  # FCFS / priority tie-break: submission order, no clock
            priority=spec.priority,
            block_hasher=self._hasher,
        )
        self._submitted += 1
        self.stats[spec.req_id] = RequestStats(spec.req_id, len(spec.prompt))
        self.scheduler.add_request(request)

    # -- stepping -----------------------------------------------------------------------------------

    def step(self) -> StepRecord:
        sched = self.scheduler
        out = sched.schedule()
        step = len(self.steps) + 1
        prefill = decode = 0
        decode_reqs: list[str] = []
        for rid, n in out.num_scheduled_tokens.items():
            req = sched.requests[rid]
            st = self.stats[rid]
            start = req.num_computed_tokens - n  # where this chunk begins (schedule() already advanced it)
            high_water = st.high_water
            if start < high_water:  # after a preemption: computing again what was computed before
                st.recomputed_tokens += min(n, high_water - start)
            st.high_water = max(high_water, req.num_computed_tokens)
            if st.first_step is None:
                st.first_step = step
            if start >= req.num_prompt_tokens and start >= high_water:
                decode += n  # extends the generated sequence (1 token per step without speculation)
                decode_reqs.append(rid)
            else:
                prefill += n  # prompt tokens, or tokens recomputed after a preemption
        cached: dict[str, int] = {}
        new_ids = [r.req_id for r in out.scheduled_new_reqs]
        for r in out.scheduled_new_reqs:
            cached[r.req_id] = r.num_computed_tokens
            self.stats[r.req_id].cache_hit_tokens = r.num_computed_tokens
        resumed = sorted(out.scheduled_cached_reqs.resumed_req_ids)
        for i, rid in enumerate(out.scheduled_cached_reqs.req_ids):
            if rid in out.scheduled_cached_reqs.resumed_req_ids:
                hit = out.scheduled_cached_reqs.num_computed_tokens[i]
                cached[rid] = hit
                self.stats[rid].restored_tokens += hit
        preempted = sorted(out.preempted_req_ids or ())
        for rid in preempted:
            self.stats[rid].num_preemptions += 1
        for rid in out.num_scheduled_tokens:
            nblocks = len(sched.kv_cache_manager.get_block_ids(rid)[0])
            st = self.stats[rid]
            st.peak_blocks = max(st.peak_blocks, nblocks)
        used_blocks = self.num_blocks - sched.kv_cache_manager.block_pool.get_num_free_blocks()

        runner_out = self.runner.execute(sched, out)
        engine_outputs = sched.update_from_output(out, runner_out)
        finished: list[str] = []
        for eco in engine_outputs.values():
            for o in eco.outputs:
                st = self.stats[o.request_id]
                if o.new_token_ids:
                    st.output_len += len(o.new_token_ids)
                    if st.first_token_step is None:
                        st.first_token_step = step
                if o.finish_reason is not None:
                    st.finish_step = step
                    finished.append(o.request_id)
        record = StepRecord(
            step=step,
            scheduled=dict(out.num_scheduled_tokens),
            prefill_tokens=prefill,
            decode_tokens=decode,
            decode_reqs=decode_reqs,
            new=new_ids,
            resumed=resumed,
            preempted=preempted,
            finished=sorted(finished),
            num_running=len(sched.running),
            num_waiting=len(sched.waiting) + len(sched.skipped_waiting),
            used_blocks=used_blocks,
            cached_tokens=cached,
        )
        self.steps.append(record)
        return record

    def has_work(self) -> bool:
        """Requests not finished yet.  (A finished request's blocks are freed in update_from_output; the
        scheduler's ``finished_req_ids`` only tell the model runner, so no empty step is run for them.)"""
        return self.scheduler.get_num_unfinished_requests() > 0

    def run(self, specs: list[Spec], *, max_steps: int = 100_000,
            admit: Callable[["Engine", list[Spec]], list[Spec]] | None = None) -> list[StepRecord]:
        """Submit *specs* at their ``arrival_step`` and step until every request finished.

        *admit*, when given, decides which of the arrived-but-not-submitted specs to submit before each
        step (used to emulate static batching); by default every arrived spec is submitted at once.
        """
        pending = sorted(specs, key=lambda s: (s.arrival_step, s.req_id))
        while pending or self.has_work():
            step = len(self.steps) + 1
            if step > max_steps:
                raise RuntimeError(f"no progress after {max_steps} steps")
            arrived = [s for s in pending if s.arrival_step <= step]
            chosen = admit(self, arrived) if admit else arrived
            for s in chosen:
                self.submit(s)
                pending.remove(s)
            self.step()
        return self.steps

    # -- summaries ----------------------------------------------------------------------------------

    def request_rows(self) -> list[dict[str, Any]]:
        rows = []
        for st in self.stats.values():
            rows.append({k: v for k, v in vars(st).items() if k != "high_water"})
        return sorted(rows, key=lambda r: r["req_id"])


def prompt_tokens(seed: int, n: int, start: int = 0) -> list[int]:
    """A deterministic prompt of *n* token ids (distinct per *seed*; shares nothing with other seeds)."""
    return [100 + (seed * 7919 + (start + i) * 104729) % 40000 for i in range(n)]


def vllm_version() -> str:
    import vllm

    return vllm.__version__
