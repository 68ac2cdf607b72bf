"""C/C++/CUDA symbols via ctags, op registrations, token refs."""

from __future__ import annotations

import shutil

import pytest

from vllm_book.index import cpp

pytestmark = pytest.mark.skipif(shutil.which("ctags") is None, reason="Universal Ctags not installed")


def by_qual(index, path):
    return {(s.qualname, s.ordinal): s for s in index.symbols(path)}


def test_kernel_template_header_and_scope(fake_index):
    by = by_qual(fake_index, "csrc/cache_kernels.cu")
    k = by[("vllm.reshape_and_cache_kernel", 0)]
    assert (k.kind, k.start, k.def_line, k.end) == ("cpp-function", 7, 9, 19)  # template <…> included
    assert by[("vllm", 0)].kind == "cpp-namespace"
    assert by[("CALL_RESHAPE_AND_CACHE", 0)].kind == "cpp-macro"
    assert (by[("reshape_and_cache", 0)].start, by[("reshape_and_cache", 0)].end) == (29, 35)
    # overloads get ordinals
    assert by[("helper", 0)].def_line == 37 and by[("helper", 1)].def_line == 39


def test_bare_name_lookup(fake_index):
    (s,) = fake_index.lookup("csrc/cache_kernels.cu", "reshape_and_cache_kernel")
    assert s.qualname == "vllm.reshape_and_cache_kernel"
    (m,) = fake_index.lookup("csrc/cache.h", "BlockTable.size")
    assert m.qualname == "vllm.BlockTable.size" and "member" in m.tags


def test_headers_prototypes_and_torch_library_blocks(fake_index):
    ops_h = by_qual(fake_index, "csrc/ops.h")
    assert ops_h[("reshape_and_cache", 0)].kind == "cpp-prototype"
    assert (ops_h[("reshape_and_cache", 0)].start, ops_h[("reshape_and_cache", 0)].end) == (5, 6)
    # TORCH_LIBRARY_* blocks are not functions
    assert not [s for s in fake_index.symbols("csrc/torch_bindings.cpp") if s.name.startswith("TORCH_LIBRARY")]
    assert fake_index.files["csrc/cache.h"].lang == "cpp"
    assert fake_index.files["csrc/attention/dtype_fp8.cuh"].symbols  # .cuh parsed as C++


def test_op_registrations():
    text = """
    #include "core/registration.h"
    TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
      ops.def("rms_norm(Tensor! out) -> ()");
      ops.impl("rms_norm", torch::kCUDA, &rms_norm);
      // ops.impl("commented_out", &nope);
    }
    TORCH_LIBRARY_EXPAND(CONCAT(TORCH_EXTENSION_NAME, _cache_ops), cache_ops) {
      cache_ops.impl("reshape_and_cache", TORCH_BOX(&vllm::reshape_and_cache));
      cache_ops.impl("x.out", &x_out);
    }
    STABLE_TORCH_LIBRARY_IMPL(_moe_C, CUDA, m) {
      m.impl("topk_softmax", TORCH_BOX(&topk_softmax));
    }
    """
    regs = cpp.op_registrations("csrc/torch_bindings.cpp", text)
    assert ("_C", "rms_norm", "", 4) in regs
    assert ("_C", "rms_norm", "rms_norm", 5) in regs
    assert ("_C_cache_ops", "reshape_and_cache", "vllm::reshape_and_cache", 9) in regs
    assert ("_C_cache_ops", "x", "x_out", 10) in regs
    assert ("_moe_C", "topk_softmax", "topk_softmax", 13) in regs
    assert not [r for r in regs if r[1] == "commented_out"]
    assert cpp.op_registrations("csrc/rocm/torch_bindings.cpp", text)[0][0] == "_rocm_C"


def test_cpp_refs(fake_index, ref_texts):


    refs = ref_texts(fake_index, "csrc/cache_kernels.cu")
    assert (1, "cache.h", "csrc/cache.h", 1, "") in refs  # #include
    assert (3, "attention/dtype_fp8.cuh", "csrc/attention/dtype_fp8.cuh", 1, "") in refs
    assert (8, "Fp8KVCacheDataType", "csrc/attention/dtype_fp8.cuh", 5, "vllm.Fp8KVCacheDataType") in refs  # cross-file unique
    assert (24, "reshape_and_cache_kernel", "csrc/cache_kernels.cu", 9, "vllm.reshape_and_cache_kernel") in refs  # same file
    assert (34, "CALL_RESHAPE_AND_CACHE", "csrc/cache_kernels.cu", 23, "CALL_RESHAPE_AND_CACHE") in refs
    assert not [r for r in refs if r[1] == "vllm"]  # namespaces are not linked
    assert not [r for r in refs if r[0] in (37, 39) and r[1] == "helper"]  # definition sites are not refs
    # comments are not scanned (line 10 has a comment naming head_size)
    assert not [r for r in refs if r[0] == 10 and r[1] == "head_size"]
    bindings = ref_texts(fake_index, "csrc/torch_bindings.cpp")
    assert (10, "rms_norm", "csrc/layernorm_kernels.cu", 14, "rms_norm") in bindings  # not the csrc/cpu one


def test_blanking_keeps_columns():
    src = 'int a = f("x // y"); // c\n/* a\n b */ int g;\n'
    out = cpp.blank_comments_and_strings(src)
    assert len(out) == len(src) and out.count("\n") == src.count("\n")
    assert "y" not in out and "int g;" in out
