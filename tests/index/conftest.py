from __future__ import annotations

from pathlib import Path

import pytest

FAKE = Path(__file__).resolve().parents[1] / "roots" / "fake-vllm"


@pytest.fixture(scope="session")
def fake_root() -> Path:
    return FAKE


@pytest.fixture(scope="session")
def fake_index():
    from vllm_book.index import build_index

    return build_index(FAKE, jobs=1)


def ref_texts(index, path):
    """[(line, token text, target_path, target_line, target_qualname)] of a file's refs."""
    lines = index.lines(path)
    return [(r.line, lines[r.line - 1][r.col : r.end_col], r.target_path, r.target_line, r.target_qualname) for r in index.files[path].refs]


@pytest.fixture(name="ref_texts", scope="session")
def _ref_texts_fixture():
    return ref_texts
