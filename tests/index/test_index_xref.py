"""Python cross-references: imports, re-exports, self.attr, bases, torch.ops → C++."""

from __future__ import annotations

import shutil

import pytest



SCHED = "vllm/v1/core/sched/scheduler.py"


def test_imports_and_module_tokens(fake_index, ref_texts):
    refs = ref_texts(fake_index, SCHED)
    assert (8, "vllm.v1.core.kv_cache_utils", "vllm/v1/core/kv_cache_utils.py", 1, "") in refs
    assert (8, "hash_request_tokens", "vllm/v1/core/kv_cache_utils.py", 22, "hash_request_tokens") in refs
    assert (10, "_custom_ops", "vllm/_custom_ops.py", 1, "") in refs
    # a module alias followed by an attribute
    assert (34, "ops", "vllm/_custom_ops.py", 1, "") in refs
    assert (34, "reshape_and_cache", "vllm/_custom_ops.py", 6, "reshape_and_cache") in refs
    # the base class
    assert (13, "SchedulerInterface", "vllm/v1/core/sched/interface.py", 4, "SchedulerInterface") in refs


def test_self_attributes_and_inherited_members(fake_index, ref_texts):
    refs = ref_texts(fake_index, SCHED)
    assert (25, "max_num_running_reqs", SCHED, 19, "Scheduler.max_num_running_reqs") in refs
    assert (33, "finish_requests", "vllm/v1/core/sched/interface.py", 9, "SchedulerInterface.finish_requests") in refs
    assert (70, "schedule", SCHED, 24, "Scheduler.schedule") in refs  # in an async method
    assert (67, "Counter", SCHED, 62, "Scheduler.Stats.Counter") in refs  # self.X inside a nested class
    assert not [r for r in refs if r[1] == "self"]


def test_reexports_through_init_files(fake_index, ref_texts):
    init = ref_texts(fake_index, "vllm/__init__.py")
    # vllm/__init__.py: from vllm.v1.core.sched import Scheduler  (re-exported by sched/__init__.py)
    assert (4, "Scheduler", SCHED, 13, "Scheduler") in init
    fa = ref_texts(fake_index, "vllm/v1/attention/backends/flash_attn.py")
    # from vllm.utils import dumps  (vllm/utils/__init__.py star-imports conditional)
    assert (1, "dumps", "vllm/utils/conditional.py", 22, "dumps") in fa
    # Class.attr
    assert (9, "name", "vllm/v1/attention/backends/flash_attn.py", 5, "FlashAttentionBackend.name") in fa


def test_attribute_of_instance_attribute_is_not_guessed(fake_index, ref_texts):
    refs = ref_texts(fake_index, "vllm/engine/llm.py")
    assert (14, "scheduler", "vllm/engine/llm.py", 11, "LLM.scheduler") in refs
    assert not [r for r in refs if r[0] == 14 and r[1] == "schedule"]  # would need type inference


def test_local_names_shadow_module_names(fake_index, ref_texts):
    refs = ref_texts(fake_index, "vllm/v1/core/kv_cache_utils.py")
    # "parent_block_hash" is a parameter; NONE_HASH is module-level
    assert (18, "NONE_HASH", "vllm/v1/core/kv_cache_utils.py", 6, "NONE_HASH") in refs
    assert not [r for r in refs if r[1] in ("parent_block_hash", "parent", "h")]


@pytest.mark.skipif(shutil.which("ctags") is None, reason="Universal Ctags not installed")
def test_torch_ops_to_cpp(fake_index, ref_texts):
    refs = ref_texts(fake_index, "vllm/_custom_ops.py")
    # torch.ops._C_cache_ops.reshape_and_cache → the registered CUDA implementation
    assert (7, "reshape_and_cache", "csrc/cache_kernels.cu", 29, "reshape_and_cache") in refs
    # torch.ops._C.rms_norm → CUDA impl, not csrc/cpu/layernorm.cpp
    assert (11, "rms_norm", "csrc/layernorm_kernels.cu", 14, "rms_norm") in refs
