"""Every {src} anchor in experiments/README.md resolves in the pinned vLLM tree (writers paste them into
chapters, where an unresolvable anchor fails the build)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_readme_anchors_resolve():
    from vllm_book.anchors.resolve import resolve
    from vllm_book.sync.common import build_tree_index, index_cache

    tree = REPO / "vllm"
    if not (tree / "vllm" / "v1").is_dir():
        pytest.fail("vllm/ is not provisioned: run `make vllm`")
    text = (REPO / "experiments" / "README.md").read_text()
    anchors = re.findall(r"\{src\}`([^`]+)`", text)
    assert len(anchors) >= 20
    index = build_tree_index(tree, index_cache(REPO))
    errors = []
    for anchor in anchors:
        try:
            resolve(index, anchor)
        except Exception as exc:  # AnchorError, with suggestions
            errors.append(f"{anchor}: {exc}")
    assert not errors, "\n".join(errors)
