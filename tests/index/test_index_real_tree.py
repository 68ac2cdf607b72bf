"""The index and anchors over the real pinned v0.26.0 tree (needs it provisioned)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from vllm_book.anchors.resolve import AnchorError, resolve
from vllm_book.index import build_index

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def real():
    from vllm_book.pin import ProvisionError, source_root

    try:
        root = source_root(REPO)
    except ProvisionError as exc:
        pytest.skip(f"vLLM tree not provisioned: {exc}")
    if shutil.which("ctags") is None:
        pytest.skip("Universal Ctags not installed")
    t0 = time.perf_counter()
    index = build_index(root, cache_dir=REPO / "_build" / ".cache")
    print(f"real-tree index: {time.perf_counter() - t0:.2f}s")
    return index


def test_scheduler_schedule(real):
    r = resolve(real, "vllm/v1/core/sched/scheduler.py::Scheduler.schedule")
    assert (r.start, r.symbol.def_line, r.symbol.kind) == (425, 425, "method")
    assert real.lines(r.path)[r.start - 1].lstrip().startswith("def schedule(")
    assert r.end > r.start + 300
    line = resolve(real, 'vllm/v1/core/sched/scheduler.py::Scheduler.schedule:"self.current_step += 1"')
    assert line.kind == "line" and line.start == 426


def test_hash_block_tokens(real):
    r = resolve(real, "vllm/v1/core/kv_cache_utils.py::hash_block_tokens")
    assert r.symbol.kind == "function"
    assert real.lines(r.path)[r.symbol.def_line - 1].startswith("def hash_block_tokens(")


def test_cpp_symbol_and_torch_ops_link(real):
    r = resolve(real, "csrc/libtorch_stable/cache_kernels.cu::reshape_and_cache")
    assert r.symbol.kind == "cpp-function"
    assert real.lines(r.path)[r.symbol.def_line - 1].startswith("void reshape_and_cache(")
    k = resolve(real, "csrc/libtorch_stable/cache_kernels.cu::reshape_and_cache_kernel")
    assert k.symbol.qualname == "vllm.reshape_and_cache_kernel" and k.start < k.symbol.def_line  # template header
    ops = [x for x in real.files["vllm/_custom_ops.py"].refs if x.target_path.startswith("csrc/")]
    assert len(ops) > 50
    assert any(x.target_path == r.path and x.target_line == r.symbol.def_line for x in ops)
    # no Python→C++ link lands in a CPU/ROCm alternative when a CUDA one exists
    rms = [x for x in ops if x.target_qualname == "rms_norm"]
    assert rms and all(not x.target_path.startswith(("csrc/cpu/", "csrc/rocm/")) for x in rms)


def test_file_and_dir_counts(real):
    root = real.root
    py = sum(1 for d in ("vllm", "csrc") for p in (root / d).rglob("*.py") if "__pycache__" not in p.parts)
    assert sum(1 for f in real.files.values() if f.lang == "python") == py
    assert py >= 2000
    exts = {".cu", ".cuh", ".cpp", ".h", ".hpp", ".cc", ".c", ".inl"}
    cfamily = sum(1 for d in ("vllm", "csrc") for p in (root / d).rglob("*") if p.suffix in exts and p.is_file())
    assert sum(1 for f in real.files.values() if f.lang == "cpp") == cfamily
    dirs = real.dirs()
    assert dirs[""] == ["csrc/", "vllm/"]
    assert "scheduler.py" in dirs["vllm/v1/core/sched"]
    assert resolve(real, "vllm/v1/attention/backends/").kind == "dir"
    assert sum(len(f.symbols) for f in real.files.values()) > 50_000


def test_no_csrc_attention_paged_attention_v1(real):
    with pytest.raises(AnchorError) as exc:
        resolve(real, "csrc/attention/paged_attention_v1.cu::paged_attention_v1")
    assert "no file" in str(exc.value)


def test_warm_load_is_fast(real):
    t0 = time.perf_counter()
    again = build_index(real.root, cache_dir=REPO / "_build" / ".cache")
    elapsed = time.perf_counter() - t0
    assert again.key == real.key
    limit = float(os.environ.get("VLLM_BOOK_WARM_LIMIT", "1.0"))
    assert elapsed < limit, f"warm index load took {elapsed:.2f}s"
