"""The Sphinx-free resolver (reused by ``make validate``) and the unmanaged-line lint."""

from __future__ import annotations

import pytest

from vllm_book.anchors.lint import find_unmanaged
from vllm_book.anchors.resolve import AnchorError, Target, parse_target, resolve
from vllm_book.index import build_index

SCHED = "vllm/v1/core/sched/scheduler.py"


@pytest.fixture(scope="module")
def index(fake_root):
    return build_index(fake_root, jobs=1)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("vllm/v1/core/", Target("vllm/v1/core", is_dir=True)),
        (SCHED, Target(SCHED)),
        (f"{SCHED}::Scheduler.schedule", Target(SCHED, qualname="Scheduler.schedule")),
        (f"{SCHED}::Scheduler.get#2", Target(SCHED, qualname="Scheduler.get", ordinal=2)),
        (f'{SCHED}::Scheduler.schedule:"token_budget -="', Target(SCHED, qualname="Scheduler.schedule", text="token_budget -=")),
        (f'{SCHED}::Scheduler.get#1:"key: str"', Target(SCHED, qualname="Scheduler.get", ordinal=1, text="key: str")),
        ('vllm/_custom_ops.py:"torch.ops._C.rms_norm("', Target("vllm/_custom_ops.py", text="torch.ops._C.rms_norm(")),
        ('  x.py::f:"a: b"  ', Target("x.py", qualname="f", text="a: b")),
    ],
)
def test_parse_target(raw, expected):
    t = parse_target(raw)
    assert t == expected
    assert parse_target(str(t)) == t  # round trip


@pytest.mark.parametrize("raw", ["", "/abs/path.py", "../x.py", "x.py::", 'x.py::f:"unterminated', "x.py::a b"])
def test_malformed_targets(raw):
    with pytest.raises(AnchorError):
        parse_target(raw)


def test_resolutions(index):
    r = resolve(index, f"{SCHED}::Scheduler.schedule")
    assert (r.kind, r.start, r.end, r.qualname, r.lang, r.location) == ("symbol", 24, 35, "Scheduler.schedule", "python", f"{SCHED}:24-35")
    r = resolve(index, SCHED)
    assert (r.kind, r.start, r.end, r.symbol) == ("file", 1, 70, None)
    r = resolve(index, "vllm/v1/attention/backends/")
    assert (r.kind, r.location) == ("dir", "vllm/v1/attention/backends/")
    r = resolve(index, f'{SCHED}::Scheduler.schedule:"token_budget -="')
    assert (r.kind, r.start, r.end, r.qualname) == ("line", 31, 31, "Scheduler.schedule")
    r = resolve(index, 'vllm/_custom_ops.py:"torch.ops._C.rms_norm"')
    assert (r.kind, r.start, r.qualname) == ("line", 11, "rms_norm")  # enclosing symbol
    r = resolve(index, f'{SCHED}::Scheduler.schedule:"token_budget  -=  len"')  # whitespace-insensitive fallback
    assert r.start == 31
    r = resolve(index, "csrc/cache_kernels.cu::reshape_and_cache_kernel")
    assert (r.start, r.symbol.def_line, r.lang) == (7, 9, "cpp")
    r = resolve(index, f"{SCHED}::Scheduler.get#0")
    assert (r.start, r.end, r.symbol.tags) == (50, 51, ("overload",))


def test_errors(index):
    with pytest.raises(AnchorError) as exc:
        resolve(index, "vllm/v1/core/kv_cache_utils.py::hash_block_token")
    assert exc.value.suggestions[0] == "vllm/v1/core/kv_cache_utils.py::hash_block_tokens"
    with pytest.raises(AnchorError) as exc:
        resolve(index, "vllm/utils/conditional.py::pick_backend")
    assert "ambiguous" in exc.value.message
    assert exc.value.suggestions == ["vllm/utils/conditional.py::pick_backend#0", "vllm/utils/conditional.py::pick_backend#1"]
    with pytest.raises(AnchorError, match="no directory vllm/nope/"):
        resolve(index, "vllm/nope/")
    with pytest.raises(AnchorError, match="matches 3 lines"):
        resolve(index, f'{SCHED}::Scheduler.schedule:"token_budget"')
    with pytest.raises(AnchorError, match="did you mean: vllm/v1/core/kv_cache_utils.py"):
        resolve(index, "vllm/v1/core/kv_cache_util.py::hash_block_tokens")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see scheduler.py:123 for details", ["scheduler.py:123"]),
        ("vllm/v1/x.cu:45-50 and foo.h:3", ["vllm/v1/x.cu:45-50", "foo.h:3"]),
        ("https://github.com/vllm-project/vllm/blob/main/vllm/a.py#L10-L20", ["github.com/vllm-project/vllm/blob/main/vllm/a.py#L10-L20"]),
        ("at 12:30, version 0.26.0, scheduler.py, a.pyx:3, x.py::f", []),
        ('File "x.py", line 3', []),
    ],
)
def test_find_unmanaged(text, found):
    assert [m for _s, _e, m in find_unmanaged(text)] == found


def test_find_anchors_in_myst(fake_root):
    from vllm_book.anchors.lint import find_anchors

    text = (fake_root.parent / "test-src-anchors" / "forms.md").read_text(encoding="utf-8")
    found = find_anchors(text)
    assert found[0] == (3, "vllm/v1/core/kv_cache_utils.py::hash_block_tokens")
    assert found[1] == (5, "vllm/v1/core/kv_cache_utils.py::hash_block_tokens")  # explicit title stripped
    assert (15, 'vllm/v1/core/sched/scheduler.py::Scheduler.schedule:"token_budget -="') in found
    ex = find_anchors((fake_root.parent / "test-src-anchors" / "excerpt.md").read_text(encoding="utf-8"))
    assert [t for _n, t in ex] == [
        "vllm/v1/core/sched/scheduler.py::Scheduler.schedule",
        "vllm/v1/core/sched/scheduler.py::Scheduler.schedule",
        "vllm/v1/core/kv_cache_utils.py::hash_block_tokens",
    ]
    index = build_index(fake_root, jobs=1)
    for _n, target in found + ex:
        resolve(index, target)  # every anchor of the clean root resolves without Sphinx
