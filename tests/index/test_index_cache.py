"""Cache: warm loads read no source, edits re-parse only the edited file, pools agree."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest

import vllm_book.index as index_mod
from vllm_book.index import build_index


@pytest.fixture()
def tree(tmp_path, fake_root):
    dest = tmp_path / "tree"
    shutil.copytree(fake_root, dest)
    return dest


def _as_data(index):
    return {
        p: (f.lang, f.sha256, f.n_lines, [tuple(vars_(s)) for s in f.symbols], [tuple(vars_(r)) for r in f.refs])
        for p, f in index.files.items()
    }


def vars_(obj):
    return [getattr(obj, k) for k in obj.__slots__]


def test_warm_load_parses_nothing(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cold = build_index(tree, cache_dir=cache, jobs=1)
    monkeypatch.setattr(index_mod, "_parse_one", lambda *a: pytest.fail("warm load re-parsed a file"))
    warm = build_index(tree, cache_dir=cache, jobs=1)
    assert warm.key == cold.key
    assert _as_data(warm) == _as_data(cold)
    assert warm.lookup("vllm/v1/core/sched/scheduler.py", "Scheduler.schedule")[0].def_line == 24


def test_edit_reparses_only_that_file(tree, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cold = build_index(tree, cache_dir=cache, jobs=1)
    target = tree / "vllm/v1/core/kv_cache_utils.py"
    target.write_text(target.read_text() + "\n\ndef added_later() -> None:\n    hash_block_tokens(None, ())\n")
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    seen = []
    real = index_mod._parse_one
    monkeypatch.setattr(index_mod, "_parse_one", lambda root, path: seen.append(path) or real(root, path))
    warm = build_index(tree, cache_dir=cache, jobs=1)
    assert seen == ["vllm/v1/core/kv_cache_utils.py"]
    assert warm.key != cold.key
    assert warm.lookup("vllm/v1/core/kv_cache_utils.py", "added_later")
    # refs are re-linked for the whole tree
    assert any(r.target_qualname == "hash_block_tokens" and r.line == 34 for r in warm.files["vllm/v1/core/kv_cache_utils.py"].refs)


def test_corrupt_cache_is_rebuilt(tree, tmp_path):
    cache = tmp_path / "cache"
    cold = build_index(tree, cache_dir=cache, jobs=1)
    for p in cache.rglob("*.pickle"):
        p.write_bytes(b"garbage")
    again = build_index(tree, cache_dir=cache, jobs=1)
    assert again.key == cold.key and _as_data(again) == _as_data(cold)


def test_process_pool_matches_serial(tree, monkeypatch):
    monkeypatch.setattr(index_mod, "MIN_FILES_PER_JOB", 1)
    serial = build_index(tree, jobs=1)
    pooled = build_index(tree, jobs=2)
    assert pooled.key == serial.key and _as_data(pooled) == _as_data(serial)


def test_index_pickles_compactly_and_lazily(fake_index):
    again = pickle.loads(pickle.dumps(fake_index))
    assert again.key == fake_index.key
    assert _as_data(again) == _as_data(fake_index)
    f = again.files["vllm/engine/llm.py"]
    assert isinstance(f, index_mod.FileIndex)
    pickle.loads(pickle.dumps(f))  # a lazily loaded FileIndex pickles as a plain one


def test_browsable_files_and_dirs(fake_index):
    files = fake_index.files
    assert files["vllm/model_executor/configs/E=8,N=128.json"].lang == "text"
    assert files["csrc/cache_kernels.cu"].lang == "cpp" and files["vllm/__init__.py"].lang == "python"
    assert "README.md" not in files  # only the configured dirs
    dirs = fake_index.dirs()
    assert dirs[""] == ["csrc/", "vllm/"]
    assert dirs["vllm/v1/core"] == ["__init__.py", "kv_cache_utils.py", "sched/"]
    assert fake_index.files["vllm/v1/core/sched/scheduler.py"].n_lines == 70
    assert fake_index.read_text("vllm/engine/__init__.py") == ""


def test_stale_version_dirs_are_removed(tree, tmp_path):
    cache = tmp_path / "cache"
    (cache / "index-v0" / "x").mkdir(parents=True)
    build_index(tree, cache_dir=cache, jobs=1)
    assert [p.name for p in cache.iterdir()] == [f"index-v{index_mod.INDEX_VERSION}"]
