"""Shared helpers for the vllm-doctor tests (a uniquely named module, safe to import)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCTOR = REPO / "doctor"
EXAMPLES = DOCTOR / "examples"
PLAYBOOKS = DOCTOR / "playbooks"

# Before the project's editable install learns about doctor/ (setuptools
# `where = ["ext", "doctor"]`), import the package from the checkout.
try:
    import vllm_doctor  # noqa: F401
except ImportError:
    sys.path.insert(0, str(DOCTOR))



def vllm_source_tree() -> Path:
    """The provisioned vLLM v0.26.0 tree: $VLLM_BOOK_SRC, else vllm_book.pin.source_root().

    Fails (never skips) when neither yields a tree: the metric-name check is what
    makes a pin bump that renames a metric break the build.
    """
    marker = Path("vllm/v1/metrics/loggers.py")
    env = os.environ.get("VLLM_BOOK_SRC")
    if env:
        tree = Path(env)
        if not (tree / marker).is_file():
            pytest.fail(f"VLLM_BOOK_SRC={env} has no {marker}; point it at an unpacked vLLM source tree")
        return tree
    try:
        from vllm_book.pin import source_root
    except ImportError:
        sys.path.insert(0, str(REPO / "ext"))
        try:
            from vllm_book.pin import source_root
        except ImportError as exc:
            pytest.fail(f"cannot import vllm_book.pin ({exc}) and VLLM_BOOK_SRC is not set; "
                        "provision the tree (make vllm) or export VLLM_BOOK_SRC=/path/to/vllm-0.26.0")
    try:
        tree = source_root()
    except Exception as exc:  # ProvisionError and friends: the message says what to do
        pytest.fail(f"no provisioned vLLM tree: {exc}")
    if not (tree / marker).is_file():
        pytest.fail(f"{tree} has no {marker}; run `make vllm` (or set VLLM_BOOK_SRC)")
    return tree


def load_example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))


def write_fixture(tmp_path: Path, doc: dict[str, Any], name: str = "case.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path
