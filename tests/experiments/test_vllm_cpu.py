"""The experiments on the pinned vLLM (inside .venv-vllm): the private platform override still works, the
environment matches the lock, and a fresh run reproduces committed results byte for byte.

Skipped without .venv-vllm on a developer machine; under CI=true a missing .venv-vllm fails (.ci/run
runs `make experiments`, which creates it, before `make test`).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

# Runs in .venv-vllm.  The CPU platform is set through vllm.platforms._current_platform, a private name
# of v0.26.0; when a new pin renames it, this script fails here, naming what to update.
PROBE = r'''
import importlib.metadata as md, json, sys
import vllm.platforms as P
assert "_current_platform" in vars(P), (
    "vllm.platforms._current_platform is gone: update experiments/harness.py::use_cpu_platform")
from vllm.platforms.interface import UnspecifiedPlatform
# importing vllm already resolved the platform: on a machine without a GPU it is UnspecifiedPlatform
resolved = type(P._current_platform).__name__
assert isinstance(P._current_platform, UnspecifiedPlatform), resolved
from vllm.config import ModelConfig, VllmConfig
from experiments.harness import tiny_model_dir
try:
    VllmConfig(model_config=ModelConfig(model=tiny_model_dir(), skip_tokenizer_init=True))
    without = "built"
except RuntimeError as exc:
    without = str(exc)
from experiments.harness import Engine, Spec, prompt_tokens, use_cpu_platform
from vllm.platforms.cpu import CpuPlatform
platform = use_cpu_platform()
assert isinstance(P._current_platform, CpuPlatform) and P.current_platform is P._current_platform is platform
e = Engine(block_size=16, num_blocks=200, max_num_batched_tokens=512, enable_prefix_caching=True)
e.run([Spec(f"r-{i}", prompt_tokens(i, 300), 4) for i in range(6)])
print(json.dumps({
    "without_override": without,
    "resolved": resolved,
    "platform": type(P.current_platform).__name__,
    "step1": e.steps[0].scheduled,
    "steps": len(e.steps),
    "versions": {n: md.version(n) for n in ("vllm", "torch", "matplotlib")},
}))
'''


def _run(python: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "HOME": str(Path.home())})


def _lock() -> dict[str, str]:
    text = (REPO / "experiments" / "requirements-vllm.txt").read_text()
    return dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+) \\$", text, re.M))


def test_cpu_platform_override_and_the_real_scheduler(vllm_python):
    proc = _run(vllm_python, "-c", PROBE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # the reason the override exists: without it vLLM cannot pick a device on this machine
    assert "Failed to infer device type" in out["without_override"], out["without_override"]
    assert out["resolved"] == "UnspecifiedPlatform"
    assert out["platform"] == "CpuPlatform"
    # the example: 6 × 300 tokens, budget 512 → chunked prefill in step 1
    assert out["step1"] == {"r-0": 300, "r-1": 212}
    lock = _lock()
    for name, version in out["versions"].items():
        assert lock[name] == version, f"{name} {version} installed, {lock[name]} locked: rerun make experiments"


def test_a_fresh_run_reproduces_the_committed_results(vllm_python):
    proc = _run(vllm_python, "-m", "experiments", "run", "--check", "prefix_cache", "batching", "chunked_prefill")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK: results and figures identical" in proc.stderr
