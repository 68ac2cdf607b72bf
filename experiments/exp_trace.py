"""Trace one request hop by hop: InputProcessor → EngineCoreRequest → Scheduler → KV blocks → outputs.

Three requests go through the **real** v0.26.0 front-end and scheduler code on CPU; only the model is fake
(:class:`harness.FakeModelRunner`).  The traced request is ``trace-1``; ``sys-0`` shares its first 32
prompt tokens (a "system prompt") and arrives just before it; ``other-2`` arrives one step later.

Hops, in the order ``LLMEngine.add_request`` / ``EngineCore.step`` run them:

1. ``InputProcessor.process_inputs`` (real, built from the same ``VllmConfig`` with
   ``skip_tokenizer_init=True``; the prompt is a ``tokens_input`` of token ids, as the renderer would hand
   it over) → ``EngineCoreRequest``; ``InputProcessor.assign_request_id`` with
   ``VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1`` so the id stays ``trace-1`` (otherwise 8 random characters
   are appended).
2. The process boundary: ``MsgpackEncoder`` / ``MsgpackDecoder(EngineCoreRequest)`` round trip, as
   ``MPClient`` and ``EngineCoreProc``'s input thread do.
3. ``Request.from_engine_core_request(req, block_hasher)`` (what ``EngineCore.preprocess_add_request``
   does) and ``Scheduler.add_request``.  ``EngineCore`` itself is not built: it would start a model
   executor.
4. Per step: ``Scheduler.schedule()`` → ``SchedulerOutput``; the traced request's calls of
   ``KVCacheManager.get_computed_blocks`` and ``allocate_slots`` (recorded by wrapping the two bound
   methods, the way a breakpoint would show them); block ids, ref counts, block hashes, free blocks.
5. ``FakeModelRunner`` → ``ModelRunnerOutput``; ``Scheduler.update_from_output`` → ``EngineCoreOutputs``,
   through the msgpack round trip again.
6. ``OutputProcessor.process_outputs`` (real; ``tokenizer=None``, so no detokenization; ``log_stats=False``)
   → ``RequestOutput`` (``RequestOutputKind.CUMULATIVE``, the ``SamplingParams`` default).

Nothing here reads a clock: arrival times are set (0.0, 1.0, 2.0), event timestamps are dropped (only the
event types are kept), block hashes are shown as 8-hex-digit prefixes (fixed by ``PYTHONHASHSEED=0``).
"""

from __future__ import annotations

import os
from typing import Any

from .common import UNIT, ratio
from .harness import Engine, prompt_tokens, vllm_version

NAME = "trace"
TITLE = "跟踪一个请求：InputProcessor → 调度器 → KV 块 → 输出"
TRACED = "trace-1"
BLOCK_SIZE = 16
NUM_BLOCKS = 32
BUDGET = 64
SHARED = 32


def _workload() -> list[dict[str, Any]]:
    shared = prompt_tokens(999, SHARED)
    return [
        # submitted before step 1, in this order (arrival_time = order)
        {"id": "sys-0", "prompt": shared + prompt_tokens(0, 8), "max_tokens": 3, "before_step": 1},
        {"id": TRACED, "prompt": shared + prompt_tokens(1, 40), "max_tokens": 3, "before_step": 1},
        {"id": "other-2", "prompt": prompt_tokens(2, 30), "max_tokens": 2, "before_step": 2},
    ]


def _hex(block_hash) -> str:
    return bytes(block_hash)[:4].hex()


def _pairs(d: dict[str, int]) -> list[list[Any]]:
    return [[k, v] for k, v in d.items()]


def run() -> dict[str, Any]:
    """Set VLLM_DISABLE_REQUEST_ID_RANDOMIZATION=1 for the run (vllm.envs reads it lazily), then trace."""
    old = os.environ.get("VLLM_DISABLE_REQUEST_ID_RANDOMIZATION")
    os.environ["VLLM_DISABLE_REQUEST_ID_RANDOMIZATION"] = "1"
    try:
        return _trace()
    finally:
        if old is None:
            del os.environ["VLLM_DISABLE_REQUEST_ID_RANDOMIZATION"]
        else:
            os.environ["VLLM_DISABLE_REQUEST_ID_RANDOMIZATION"] = old


def _trace() -> dict[str, Any]:
    engine = Engine(block_size=BLOCK_SIZE, num_blocks=NUM_BLOCKS, max_num_batched_tokens=BUDGET,
                    max_num_seqs=8, max_model_len=1024, enable_prefix_caching=True)
    import vllm.envs as envs
    from vllm.inputs import tokens_input
    from vllm.sampling_params import SamplingParams
    from vllm.v1.engine import EngineCoreOutputs, EngineCoreRequest
    from vllm.v1.engine.input_processor import InputProcessor
    from vllm.v1.engine.output_processor import OutputProcessor
    from vllm.v1.request import Request
    from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder

    assert envs.VLLM_DISABLE_REQUEST_ID_RANDOMIZATION
    sched = engine.scheduler
    kvm = sched.kv_cache_manager
    pool = kvm.block_pool
    input_processor = InputProcessor(engine.vllm_config)
    output_processor = OutputProcessor(tokenizer=None, log_stats=False)
    encoder = MsgpackEncoder()
    req_decoder = MsgpackDecoder(EngineCoreRequest)
    out_decoder = MsgpackDecoder(EngineCoreOutputs)

    # --- "breakpoints" in the KV cache manager: record the traced request's calls -------------------
    kv_calls: list[dict[str, Any]] = []
    orig_get_computed, orig_allocate = kvm.get_computed_blocks, kvm.allocate_slots

    def get_computed_blocks(request):
        result = orig_get_computed(request)
        if request.request_id == TRACED:
            blocks, hit, _ = result
            kv_calls.append({"call": "get_computed_blocks", "step": sched.current_step,
                             "num_new_computed_tokens": hit,
                             "hit_block_ids": list(blocks.get_block_ids()[0])})
        return result

    def allocate_slots(request, num_new_tokens, num_new_computed_tokens=0, *args, **kwargs):
        before = pool.get_num_free_blocks()
        result = orig_allocate(request, num_new_tokens, num_new_computed_tokens, *args, **kwargs)
        if request.request_id == TRACED:
            kv_calls.append({
                "call": "allocate_slots", "step": sched.current_step,
                "status": request.status.name,
                "num_computed_tokens_before": request.num_computed_tokens,
                "num_new_tokens": num_new_tokens,
                "num_new_computed_tokens": num_new_computed_tokens,
                "new_block_ids": None if result is None else list(result.get_block_ids()[0]),
                "free_blocks_before": before,
                "free_blocks_after": pool.get_num_free_blocks(),
            })
        return result

    kvm.get_computed_blocks = get_computed_blocks
    kvm.allocate_slots = allocate_slots

    rows: list[dict[str, Any]] = []
    specs = _workload()
    submitted = 0

    def submit(spec: dict[str, Any]) -> None:
        nonlocal submitted
        user_params = SamplingParams(max_tokens=spec["max_tokens"], temperature=0.0)
        # hop 1: the real InputProcessor (LLMEngine.add_request calls these two)
        ecr = input_processor.process_inputs(
            spec["id"], tokens_input(list(spec["prompt"])), user_params,
            supported_tasks=("generate",), arrival_time=float(submitted))
        input_processor.assign_request_id(ecr)
        submitted += 1
        output_processor.add_request(ecr, None, None, 0)
        # hop 2: the process boundary (MPClient → EngineCoreProc input thread)
        frames = encoder.encode(ecr)
        decoded = req_decoder.decode(frames)
        # hop 3: EngineCore.preprocess_add_request + add_request
        request = Request.from_engine_core_request(decoded, engine._hasher)
        sched.add_request(request)
        if spec["id"] != TRACED:
            return
        sp = ecr.sampling_params
        rows.append({
            "hop": "1_input_processor", "step": 0,
            "request_id": ecr.request_id, "external_req_id": ecr.external_req_id,
            "prompt_len": len(ecr.prompt_token_ids), "arrival_time": ecr.arrival_time,
            "priority": ecr.priority, "mm_features": ecr.mm_features, "lora_request": ecr.lora_request,
            "cache_salt": ecr.cache_salt, "data_parallel_rank": ecr.data_parallel_rank,
            "params_cloned": sp is not user_params,
            "max_tokens": sp.max_tokens, "temperature": sp.temperature,
            "output_kind": sp.output_kind.name,
            "user_stop_token_ids": list(user_params.stop_token_ids),
            "stop_token_ids": sorted(sp.stop_token_ids),
            "all_stop_token_ids": sorted(sp.all_stop_token_ids),
            "eos_token_id": sp.eos_token_id,
        })
        rows.append({
            "hop": "2_msgpack", "step": 0,
            "frames": len(frames), "bytes": sum(len(f) for f in frames),
            "round_trip_equal": decoded == ecr,
        })
        rows.append({
            "hop": "3_add_request", "step": 0,
            "status": request.status.name, "num_prompt_tokens": request.num_prompt_tokens,
            "num_tokens": request.num_tokens, "num_computed_tokens": request.num_computed_tokens,
            "num_block_hashes": len(request.block_hashes),
            "block_hashes": [_hex(h) for h in request.block_hashes],
            "sys0_block_hashes": [_hex(h) for h in sched.requests["sys-0"].block_hashes],
            "num_waiting": len(sched.waiting), "num_running": len(sched.running),
            "free_blocks": pool.get_num_free_blocks(),
        })

    step = 0
    while True:
        step += 1
        for spec in [s for s in specs if s["before_step"] == step]:
            submit(spec)
        if not sched.has_requests():
            break
        n_calls = len(kv_calls)
        out = sched.schedule()
        traced = sched.requests.get(TRACED)
        new = {r.req_id: r for r in out.scheduled_new_reqs}
        cached = out.scheduled_cached_reqs
        row: dict[str, Any] = {
            "hop": "4_schedule", "step": step,
            "num_scheduled_tokens": _pairs(out.num_scheduled_tokens),
            "total_num_scheduled_tokens": out.total_num_scheduled_tokens,
            "scheduled_new_reqs": [r.req_id for r in out.scheduled_new_reqs],
            "scheduled_cached_reqs": list(cached.req_ids),
            "num_common_prefix_blocks": list(out.num_common_prefix_blocks),
            "finished_req_ids": sorted(out.finished_req_ids),
            "preempted_req_ids": sorted(out.preempted_req_ids or ()),
        }
        if TRACED in new:
            nr = new[TRACED]
            row.update({"traced_in": "scheduled_new_reqs", "traced_num_computed_tokens": nr.num_computed_tokens,
                        "traced_block_ids": list(nr.block_ids[0]),
                        "traced_prompt_len": len(nr.prompt_token_ids)})
        elif TRACED in cached.req_ids:
            i = cached.req_ids.index(TRACED)
            nb = cached.new_block_ids[i]
            row.update({"traced_in": "scheduled_cached_reqs",
                        "traced_num_computed_tokens": cached.num_computed_tokens[i],
                        "traced_new_block_ids": None if nb is None else list(nb[0]),
                        "traced_num_output_tokens": cached.num_output_tokens[i],
                        "traced_all_token_ids_sent": TRACED in cached.all_token_ids})
        else:
            row["traced_in"] = None
        rows.append(row)
        if traced is not None and TRACED in out.num_scheduled_tokens:
            bids = kvm.get_block_ids(TRACED)[0]
            rows.append({
                "hop": "5_kv_blocks", "step": step,
                "block_ids": list(bids),
                "ref_cnt": [pool.blocks[b].ref_cnt for b in bids],
                "hashed": [pool.blocks[b].block_hash is not None for b in bids],
                "num_block_hashes": len(traced.block_hashes),
                "num_computed_tokens_after_schedule": traced.num_computed_tokens,
                "num_tokens": traced.num_tokens,
                "free_blocks": pool.get_num_free_blocks(),
                "usage": ratio(NUM_BLOCKS - 1 - pool.get_num_free_blocks(), NUM_BLOCKS - 1),
            })
        for call in kv_calls[n_calls:]:
            rows.append({"hop": f"5_kv_{call.pop('call')}", **call})

        runner_out = engine.runner.execute(sched, out)
        if TRACED in runner_out.req_id_to_index:
            rows.append({"hop": "6_model_runner", "step": step,
                         "req_ids": list(runner_out.req_ids),
                         "sampled_token_ids": runner_out.sampled_token_ids[runner_out.req_id_to_index[TRACED]]})
        engine_outputs = sched.update_from_output(out, runner_out)
        eco_all = engine_outputs.get(0)
        if eco_all is None:
            continue
        eco_all.timestamp = float(step)  # would be time.monotonic(); never part of a result
        wire = out_decoder.decode(encoder.encode(eco_all))
        eco = next((o for o in wire.outputs if o.request_id == TRACED), None)
        if traced is not None and TRACED in out.num_scheduled_tokens:
            ps = eco.prefill_stats if eco is not None else None
            rows.append({
                "hop": "7_update_from_output", "step": step,
                "engine_core_output": eco is not None,
                "new_token_ids": eco.new_token_ids if eco else None,
                "finish_reason": str(eco.finish_reason) if eco and eco.finish_reason is not None else None,
                "events": [e.type.name for e in eco.events] if eco and eco.events else [],
                "prefill_num_cached_tokens": ps.num_cached_tokens if ps else None,
                "prefill_num_computed_tokens": ps.num_computed_tokens if ps else None,
                "prefill_num_cache_creation_tokens": ps.num_cache_creation_tokens if ps else None,
                "status": traced.status.name,
                "num_computed_tokens": traced.num_computed_tokens,
                "num_output_tokens": traced.num_output_tokens,
                "outputs_this_step": [o.request_id for o in wire.outputs],
                "free_blocks": pool.get_num_free_blocks(),
            })
        processed = output_processor.process_outputs(wire.outputs, engine_core_timestamp=wire.timestamp)
        for ro in processed.request_outputs:
            if ro.request_id != TRACED:
                continue
            co = ro.outputs[0]
            rows.append({
                "hop": "8_output_processor", "step": step,
                "request_id": ro.request_id, "finished": ro.finished,
                "token_ids": list(co.token_ids), "text": co.text, "finish_reason": co.finish_reason,
                "num_cached_tokens": ro.num_cached_tokens, "prompt_len": len(ro.prompt_token_ids),
                "reqs_to_abort": list(processed.reqs_to_abort),
                "unfinished_in_output_processor": output_processor.get_num_unfinished_requests(),
            })
        if traced is not None and traced.is_finished():
            sys_blocks = sorted(b for b in range(1, NUM_BLOCKS) if pool.blocks[b].block_hash is not None)
            rows.append({
                "hop": "9_after_finish", "step": step,
                "in_scheduler_requests": TRACED in sched.requests,
                "free_blocks": pool.get_num_free_blocks(),
                "hashed_blocks_kept": sys_blocks,
                "ref_cnt_of_hashed": [pool.blocks[b].ref_cnt for b in sys_blocks],
            })
            traced = None  # record the finish once

    if sched.has_requests():
        raise RuntimeError("requests left over")
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "traced_request": TRACED,
            "requests": [{"id": s["id"], "prompt_len": len(s["prompt"]), "max_tokens": s["max_tokens"],
                          "submitted_before_step": s["before_step"]} for s in specs],
            "shared_prefix_tokens": SHARED,
            "block_size": BLOCK_SIZE,
            "num_blocks": NUM_BLOCKS,
            "max_num_batched_tokens": BUDGET,
            "max_num_seqs": 8,
            "enable_prefix_caching": True,
            "skip_tokenizer_init": True,
            "VLLM_DISABLE_REQUEST_ID_RANDOMIZATION": True,
            "sampling": "SamplingParams(max_tokens=…, temperature=0.0), output_kind CUMULATIVE (default)",
            "steps": step - 1,
        },
        "series": rows,
        "notes": [
            "rows are hops of the traced request trace-1, in execution order; 'step' is the scheduler step "
            "(0 = before the first schedule())",
            "5_kv_get_computed_blocks / 5_kv_allocate_slots are the traced request's calls, recorded by "
            "wrapping the bound methods of the real KVCacheManager (what a breakpoint there shows)",
            "block 0 is the null block: the pool has num_blocks - 1 = 31 usable blocks",
            "block hashes: first 4 bytes in hex; fixed by PYTHONHASHSEED=0 (init_none_hash)",
            "step 1 is a partial (chunked) prefill of trace-1: no token, so no EngineCoreOutput and no "
            "RequestOutput for it",
        ],
    }


def figure(result: dict[str, Any]):
    return {}
