"""Helpers of the CI-script tests (``tests/ci``): where the fakes are, git, the GPU script's environment and runner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
FAKES = Path(__file__).resolve().parent / "fakes"
SCHEMA = REPO / "schemas" / "gpu-evidence.schema.json"
PLANTED_HF = "hf_PlantedTestTokenDoNotLeak1234567890"
PLANTED_KEY = "cloud-key-planted-7f3a9c"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def commit_all(root: Path, msg: str = "init") -> str:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", msg)
    return git(root, "rev-parse", "HEAD").strip()


def gpu_env(tmp_path: Path, path_dirs: list[Path] | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI",)}
    dirs = path_dirs if path_dirs is not None else [FAKES]
    env.update({
        "PATH": os.pathsep.join([*map(str, dirs), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HF_TOKEN": PLANTED_HF,
        "MY_CLOUD_API_KEY": PLANTED_KEY,
        "HTTPS_PROXY": "http://proxyuser:proxy-pass-123@proxy.internal:3128",
        "INNOCENT_LOOKING": f"prefix-{PLANTED_HF}",  # a token in a variable whose name says nothing
        "FAKE_VLLM_ARGS": str(tmp_path / "vllm-args.log"),
    })
    env.update(extra)
    return env


def run_gpu(root: Path, out: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(REPO / "scripts" / "gpu-validation.sh"), "--root", str(root), "--out", str(out),
                           *args], env=env, capture_output=True, text=True, timeout=120)


def validator():
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)
