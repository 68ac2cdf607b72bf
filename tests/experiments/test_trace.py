"""Experiment 7 (``trace``): the committed per-hop trace of one request is consistent with itself and with
the arithmetic the chapter ``07-hands-on/02-trace-a-request`` does on it; a fresh run on the pinned vLLM
reproduces it byte for byte (integration, needs .venv-vllm)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "experiments" / "results" / "trace.json"


@pytest.fixture(scope="module")
def trace():
    return json.loads(TRACE.read_text())


def rows(result, hop):
    return [r for r in result["series"] if r["hop"] == hop]


def one(result, hop, step=None):
    found = [r for r in rows(result, hop) if step is None or r["step"] == step]
    assert len(found) == 1, (hop, step, found)
    return found[0]


def test_hops_in_execution_order(trace):
    hops = [r["hop"] for r in trace["series"]]
    assert hops[:3] == ["1_input_processor", "2_msgpack", "3_add_request"]
    steps = [r["step"] for r in trace["series"]]
    assert steps == sorted(steps), "rows are in step order"
    assert hops[-1] == "4_schedule" and trace["series"][-1]["finished_req_ids"] == ["trace-1"]


def test_input_processor_hop(trace):
    r = one(trace, "1_input_processor")
    assert r["request_id"] == r["external_req_id"] == "trace-1"  # randomization off
    assert r["params_cloned"] is True
    assert r["user_stop_token_ids"] == [] and r["stop_token_ids"] == [2]  # eos of generation_config
    assert r["output_kind"] == "CUMULATIVE" and r["prompt_len"] == 72
    assert one(trace, "2_msgpack")["round_trip_equal"] is True


def test_prefix_hit_and_chunk(trace):
    setup = trace["setup"]
    bs, budget, shared = setup["block_size"], setup["max_num_batched_tokens"], setup["shared_prefix_tokens"]
    add = one(trace, "3_add_request")
    assert add["num_block_hashes"] == 72 // bs
    assert add["block_hashes"][:2] == add["sys0_block_hashes"]  # the shared 32 tokens = 2 full blocks
    hit = one(trace, "5_kv_get_computed_blocks", 1)
    assert hit["num_new_computed_tokens"] == shared // bs * bs
    s1 = one(trace, "4_schedule", 1)
    sched = dict(s1["num_scheduled_tokens"])
    assert sched["sys-0"] == 40 and sched["trace-1"] == budget - 40  # the chunk is what the budget leaves
    assert s1["traced_num_computed_tokens"] == 32
    alloc = [r for r in rows(trace, "5_kv_allocate_slots")]
    assert alloc[0]["num_new_tokens"] == 24 and alloc[0]["num_new_computed_tokens"] == 32
    kv1 = one(trace, "5_kv_blocks", 1)
    assert len(kv1["block_ids"]) == math.ceil((32 + 24) / bs) and kv1["ref_cnt"][:2] == [2, 2]


def test_partial_prefill_has_no_output_then_tokens(trace):
    assert one(trace, "6_model_runner", 1)["sampled_token_ids"] == []
    assert one(trace, "7_update_from_output", 1)["engine_core_output"] is False
    assert not [r for r in rows(trace, "8_output_processor") if r["step"] == 1]
    u2 = one(trace, "7_update_from_output", 2)
    assert u2["events"] == ["QUEUED", "SCHEDULED"] and u2["prefill_num_cached_tokens"] == 32
    # FakeModelRunner: 1000 + (7 * index + 13 * position) % 20000, index 1, position = num_tokens
    assert u2["new_token_ids"] == [1000 + (7 * 1 + 13 * 72) % 20000]
    final = rows(trace, "8_output_processor")[-1]
    assert final["finished"] is True and final["finish_reason"] == "length"
    assert final["token_ids"] == [1943, 1956, 1969] and final["num_cached_tokens"] == 32
    after = one(trace, "9_after_finish")
    assert after["free_blocks"] == trace["setup"]["num_blocks"] - 1  # every block back, block 0 is null


@pytest.mark.integration
def test_a_fresh_run_reproduces_the_trace(vllm_python):
    proc = subprocess.run([str(vllm_python), "-m", "experiments", "run", "--check", "trace"], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "HOME": str(Path.home())})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK: results and figures identical" in proc.stderr
