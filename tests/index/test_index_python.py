"""Python symbols: kinds, ranges (decorators), nesting, ordinals, instance attributes."""

from __future__ import annotations

import textwrap

from vllm_book.index import preferred
from vllm_book.index.python import absolute_module, module_name, parse


def syms(src: str):
    symbols, _facts = parse("m.py", textwrap.dedent(src).encode())
    return {(s.qualname, s.ordinal): s for s in symbols}


def test_fake_scheduler_symbols(fake_index):
    by = {(s.qualname, s.ordinal): s for s in fake_index.symbols("vllm/v1/core/sched/scheduler.py")}
    s = by[("Scheduler.schedule", 0)]
    assert (s.kind, s.start, s.def_line, s.end) == ("method", 24, 24, 35)
    cached = by[("Scheduler._cached_policy", 0)]
    assert (cached.start, cached.def_line, cached.end) == (37, 39, 40)  # two decorators included
    assert by[("Scheduler.Stats.Counter.bump", 0)].kind == "method"
    assert by[("Scheduler.Stats", 0)].kind == "class"
    assert by[("Scheduler.step_async", 0)].kind == "method"
    assert by[("Scheduler.policy", 0)].kind == "variable"
    # instance attribute: first assignment in __init__ only
    mx = by[("Scheduler.max_num_running_reqs", 0)]
    assert (mx.kind, mx.def_line, mx.tags) == ("variable", 19, ("instance",))
    assert ("Scheduler.max_num_running_reqs", 1) not in by
    # property getter + setter
    assert by[("Scheduler.budget", 0)].tags == ("getter",)
    assert by[("Scheduler.budget", 1)].tags == ("setter",)
    # overloads
    assert [by[("Scheduler.get", i)].tags for i in range(3)] == [("overload",), ("overload",), ()]


def test_decorated_function_range(fake_index):
    (s,) = fake_index.lookup("vllm/v1/core/kv_cache_utils.py", "hash_block_tokens")
    assert (s.kind, s.start, s.def_line, s.end) == ("function", 14, 15, 19)


def test_preferred_rule(fake_index):
    p = "vllm/v1/core/sched/scheduler.py"
    get = preferred(fake_index.lookup(p, "get"[:0] + "Scheduler.get"))
    assert get.symbol.ordinal == 2 and (get.start, get.end) == (56, 57)  # the implementation
    budget = preferred(fake_index.lookup(p, "Scheduler.budget"))
    assert budget.symbol.tags == ("getter",) and (budget.start, budget.end) == (42, 48)  # getter..setter
    assert preferred(fake_index.lookup("vllm/utils/conditional.py", "pick_backend")) is None  # ambiguous


def test_conditional_and_try_definitions():
    by = syms(
        """
        import sys
        if sys.version_info >= (3, 12):
            def f(): pass
        else:
            def f(): pass
        try:
            from x import y
        except ImportError:
            y = None
        with open("x") as fh:
            CONST = 1
        """
    )
    assert by[("f", 0)].def_line == 4 and by[("f", 1)].def_line == 6
    assert by[("y", 0)].kind == "variable"
    assert by[("CONST", 0)].def_line == 12


def test_class_variables_tuple_targets_and_nested_functions():
    by = syms(
        """
        class A:
            x, y = 1, 2
            z: int
            class B:
                w = 3
            def m(self):
                def helper():
                    return 1
                self.late = 1
                return helper()
            def __init__(self):
                self.x = 5
                self.q: int = 0
                if True:
                    self.r = 1
        """
    )
    assert {k for k in by if k[0].startswith("A.")} >= {("A.x", 0), ("A.y", 0), ("A.z", 0), ("A.B", 0), ("A.B.w", 0), ("A.m", 0), ("A.m.helper", 0)}
    assert by[("A.m.helper", 0)].kind == "function"
    # class body declares x: __init__'s self.x is not a second symbol; q, r are instance attrs; late is not (not in __init__)
    assert ("A.x", 1) not in by
    assert by[("A.q", 0)].tags == ("instance",) and by[("A.r", 0)].tags == ("instance",)
    assert ("A.late", 0) not in by


def test_async_property_and_cached_property():
    by = syms(
        """
        import functools
        class C:
            @functools.cached_property
            def a(self): return 1
            async def b(self): return 2
            @staticmethod
            def s(): return 3
        """
    )
    assert by[("C.a", 0)].kind == "property" and by[("C.a", 0)].start == 4
    assert by[("C.b", 0)].kind == "method"
    assert by[("C.s", 0)].kind == "method"


def test_syntax_error_gives_no_symbols():
    assert parse("bad.py", b"def (:\n") == ([], None)


def test_module_names():
    assert module_name("vllm/v1/core/__init__.py") == ("vllm.v1.core", True)
    assert module_name("vllm/v1/core/kv_cache_utils.py") == ("vllm.v1.core.kv_cache_utils", False)
    assert absolute_module("vllm.v1.core.sched", True, 1, "scheduler") == "vllm.v1.core.sched.scheduler"
    assert absolute_module("vllm.v1.core.sched.scheduler", False, 1, "interface") == "vllm.v1.core.sched.interface"
    assert absolute_module("vllm.v1.core.sched.scheduler", False, 2, None) == "vllm.v1.core"


def test_non_ascii_columns():
    src = 'x = "中文"; import os\nclass 类:\n    pass\ny = "é" + os.sep\n'
    symbols, facts = parse("u.py", src.encode())
    assert [s.qualname for s in symbols] == ["x", "类", "y"]
    # "os" in line 4 is at str column 10 (bytes: 11)
    cols = [c for c in facts.cands if c[1] == 4]
    assert any(c[2] == 10 and c[3] == 12 for c in cols)
