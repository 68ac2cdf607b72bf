"""Every metric name vllm-doctor uses is exported by the pinned vLLM source tree.

Parses ``vllm/v1/metrics/*.py`` of the provisioned tree (VLLM_BOOK_SRC, else
vllm_book.pin.source_root()); a pin bump that renames, retypes or relabels a
metric fails here.  The test fails, never skips, when no tree is found.
"""

from __future__ import annotations

import ast
import re
import tokenize
from pathlib import Path

import pytest
from doctor_helpers import DOCTOR, PLAYBOOKS
from vllm_doctor import metrics as M
from vllm_doctor.selector import Selector
from vllm_doctor.signals import QueryContext, all_queries

_KIND_BY_FACTORY = {"_counter_cls": "counter", "_gauge_cls": "gauge", "_histogram_cls": "histogram"}


def _function(tree: ast.Module, dotted: str) -> ast.FunctionDef:
    cls_name, _, fn_name = dotted.rpartition(".")
    scope: list[ast.stmt] = tree.body
    if cls_name:
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name]
        assert classes, f"class {cls_name} not found"
        scope = classes[0].body
    fns = [n for n in scope if isinstance(n, ast.FunctionDef) and n.name == fn_name]
    assert fns, f"function {dotted} not found"
    return fns[0]


def _constants(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _factory_kind(fn: ast.FunctionDef, name: str) -> str | None:
    """Kind of the prometheus_client constructor that receives *name* (directly or via a variable)."""
    variables = {
        t.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value == name
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        if not isinstance(call.func, ast.Attribute) or call.func.attr not in _KIND_BY_FACTORY:
            continue
        for kw in call.keywords:
            if kw.arg != "name":
                continue
            if isinstance(kw.value, ast.Constant) and kw.value.value == name:
                return _KIND_BY_FACTORY[call.func.attr]
            if isinstance(kw.value, ast.Name) and kw.value.id in variables:
                return _KIND_BY_FACTORY[call.func.attr]
    return None


def metric_problems(tree_root: Path, metric: M.Metric) -> list[str]:
    """Why *metric* is not what the registry says in the tree at *tree_root* ([] = fine)."""
    path = tree_root / metric.source_file
    if not metric.source_file.startswith("vllm/v1/metrics/"):
        return [f"{metric.name}: registry names must come from vllm/v1/metrics/, not {metric.source_file}"]
    if not path.is_file():
        return [f"{metric.source_file} is missing from the vLLM tree at {tree_root}"]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    try:
        fn = _function(tree, metric.defined_in)
    except AssertionError as exc:
        return [f"{metric.name}: {exc} in {metric.source_file}"]
    consts = _constants(fn)
    if metric.name not in consts:
        return [f"{metric.name} is not created in {metric.source_file}:{metric.defined_in} of the pinned tree; "
                "the metric was renamed or moved — update vllm_doctor/metrics.py and the playbooks"]
    problems = []
    kind = _factory_kind(fn, metric.name)
    if kind != metric.kind:
        problems.append(f"{metric.name}: registry says {metric.kind}, the source constructs a {kind}")
    problems += [f"{metric.name}: label {label!r} not found in {metric.defined_in}"
                 for label in metric.extra_labels if label not in consts]
    return problems


@pytest.mark.parametrize("metric", M.ALL, ids=lambda m: m.name)
def test_metric_is_exported_by_pinned_source(metric: M.Metric, vllm_tree: Path) -> None:
    problems = metric_problems(vllm_tree, metric)
    assert not problems, "\n".join(problems)


def test_a_renamed_metric_is_caught(vllm_tree: Path, tmp_path: Path) -> None:
    """The guard itself: rename one metric and retype another in a copy of loggers.py."""
    src = (vllm_tree / M.LOGGERS).read_text(encoding="utf-8")
    assert '"vllm:num_preemptions"' in src
    mutated = src.replace('"vllm:num_preemptions"', '"vllm:num_preemptions_v2"')
    mutated = mutated.replace('name="vllm:kv_cache_usage_perc"', 'name="vllm:kv_cache_usage_perc", _x=1')
    mutated = re.sub(r"(gauge_kv_cache_usage = self\.)_gauge_cls", r"\1_counter_cls", mutated)
    fake = tmp_path / M.LOGGERS
    fake.parent.mkdir(parents=True)
    fake.write_text(mutated, encoding="utf-8")
    assert metric_problems(tmp_path, M.NUM_PREEMPTIONS), "a renamed metric must be reported"
    assert any("constructs a counter" in p for p in metric_problems(tmp_path, M.KV_CACHE_USAGE_PERC))
    assert metric_problems(tmp_path, M.NUM_REQUESTS_RUNNING) == []


def test_label_values_match_source(vllm_tree: Path) -> None:
    engine = ast.parse((vllm_tree / "vllm/v1/engine/__init__.py").read_text(encoding="utf-8"))
    reasons = None
    for node in engine.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "FINISH_REASON_STRINGS" for t in node.targets
        ):
            reasons = ast.literal_eval(node.value)
    assert reasons is not None, "FINISH_REASON_STRINGS not found in vllm/v1/engine/__init__.py"
    assert tuple(reasons) == M.FINISHED_REASONS

    loggers_src = (vllm_tree / M.LOGGERS).read_text(encoding="utf-8")
    loggers = ast.parse(loggers_src)
    waiting = {}
    for node in loggers.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id.startswith("WAITING_REASON_"):
                    waiting[t.id] = node.value.value
    assert set(waiting.values()) == set(M.WAITING_REASONS)

    init = _function(loggers, M.STAT_LOGGER_INIT)
    lists = [ast.literal_eval(n) for n in ast.walk(init)
             if isinstance(n, ast.List) and all(isinstance(e, ast.Constant) for e in n.elts) and n.elts]
    assert list(M.SLEEP_STATES) in lists, "sleep_state values changed in PrometheusStatLogger.__init__"


def test_series_suffixes_match_prometheus_client() -> None:
    """The `_total` / `_bucket` convention, checked against the library vLLM exports with."""
    pc = pytest.importorskip("prometheus_client", reason="prometheus-client (dev extra) checks the naming")
    from prometheus_client.exposition import generate_latest

    for m in M.ALL:
        reg = pc.CollectorRegistry()
        cls = {"counter": pc.Counter, "gauge": pc.Gauge, "histogram": pc.Histogram}[m.kind]
        metric = cls(m.name, m.help, labelnames=list(m.all_labels), registry=reg)
        child = metric.labels(*["x"] * len(m.all_labels)) if m.all_labels else metric
        (child.inc() if m.kind == "counter" else child.set(1) if m.kind == "gauge" else child.observe(1))
        text = generate_latest(reg).decode()
        names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
        names.discard(f"{m.name}_created")
        expected = {m.series(s) for s in {"counter": ("total",), "gauge": ("",),
                                          "histogram": ("bucket", "sum", "count")}[m.kind]}
        assert names == expected, f"{m.name}: prometheus_client exposes {names}, registry expects {expected}"


def _string_literals(path: Path) -> list[str]:
    out = []
    with open(path, "rb") as f:
        for tok in tokenize.tokenize(f.readline):
            if tok.type == tokenize.STRING:
                out.append(tok.string)
    return out


def test_no_metric_name_outside_the_registry() -> None:
    offenders = []
    for path in sorted((DOCTOR / "vllm_doctor").glob("*.py")):
        if path.name == "metrics.py":
            continue
        for lit in _string_literals(path):
            if re.search(r"vllm:[a-z]", lit):
                offenders.append(f"{path.name}: {lit[:60]}")
    assert not offenders, "spell metric names only in vllm_doctor/metrics.py:\n" + "\n".join(offenders)


_SERIES = re.compile(r"vllm:[a-z0-9_]+")


def _check_series(text: str, where: str) -> None:
    for name in _SERIES.findall(text):
        try:
            M.lookup_series(name)
        except (KeyError, ValueError):
            pytest.fail(f"{where}: {name!r} is not a series of a registry metric (counters need _total, "
                        f"histograms _bucket/_sum/_count)")


def test_every_query_uses_registry_series() -> None:
    ctx = QueryContext(Selector.parse('job="vllm",model_name="m"'), "5m", "1d", "30m")
    for sid, q in all_queries(ctx).items():
        _check_series(q, f"query {sid}")
        assert q.count("(") == q.count(")"), f"unbalanced parentheses in {sid}: {q}"
        bare = set(re.findall(r"(?<![\w:])([a-z_]+)\{", q)) - {"up"}
        assert not bare, f"{sid}: unknown non-vLLM series {bare}"


def test_markdown_names_are_registry_names() -> None:
    docs = sorted(PLAYBOOKS.glob("*.md")) + [DOCTOR / "README.md", DOCTOR / "skill/vllm-doctor/SKILL.md"]
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for block in re.findall(r"```promql\n(.*?)```", text, flags=re.S):
            _check_series(block, f"{doc.name} (PromQL block)")
        for name in _SERIES.findall(text):
            if name not in M.BY_NAME:
                try:
                    M.lookup_series(name)
                except (KeyError, ValueError):
                    pytest.fail(f"{doc.name}: {name!r} is neither a registry metric nor one of its series")


def test_registry_is_self_consistent() -> None:
    assert len(M.BY_NAME) == len(M.ALL), "duplicate names in the registry"
    for m in M.ALL:
        assert m.name.startswith("vllm:")
        assert not m.name.endswith(("_total", "_bucket", "_sum", "_count")) or m.kind == "gauge"
        assert M.lookup_series(m.series({"counter": "total", "gauge": "", "histogram": "bucket"}[m.kind]))[0] is m
    with pytest.raises(ValueError):
        M.NUM_PREEMPTIONS.series("bucket")
