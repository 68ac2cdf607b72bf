"""Every metric name vllm-doctor uses is exported by the pinned vLLM source tree.

Parses ``vllm/v1/metrics/*.py`` of the provisioned tree (VLLM_BOOK_SRC, else
vllm_book.pin.source_root()); a pin bump that renames, retypes or relabels a
metric fails here.  The test fails, never skips, when no tree is found.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
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

    stats = ast.parse((vllm_tree / "vllm/v1/metrics/stats.py").read_text(encoding="utf-8"))
    pts = next(n for n in stats.body if isinstance(n, ast.ClassDef) and n.name == "PromptTokenStats")
    sources = [ast.literal_eval(n.value) for n in pts.body if isinstance(n, ast.AnnAssign)
               and isinstance(n.target, ast.Name) and n.target.id == "ALL_SOURCES"]
    assert sources and tuple(sources[0]) == M.PROMPT_TOKEN_SOURCES, "PromptTokenStats.ALL_SOURCES changed"
    assert "for source in PromptTokenStats.ALL_SOURCES" in loggers_src, "source values no longer from ALL_SOURCES"

    init = _function(loggers, M.STAT_LOGGER_INIT)
    lists = [ast.literal_eval(n) for n in ast.walk(init)
             if isinstance(n, ast.List) and all(isinstance(e, ast.Constant) for e in n.elts) and n.elts]
    assert list(M.SLEEP_STATES) in lists, "sleep_state values changed in PrometheusStatLogger.__init__"


# --------------------------------------------------------------------------
# the API server's HTTP metrics: prometheus-fastapi-instrumentator, as vLLM mounts it


def _instrumentator_root() -> Path:
    spec = importlib.util.find_spec(M.INSTRUMENTATOR_PACKAGE)
    if spec is None or spec.origin is None:
        pytest.fail(f"{M.INSTRUMENTATOR_PACKAGE} is not installed: `pip install -e .[dev]` "
                    "(vllm-doctor reads its http_requests_total, which vLLM mounts on /metrics)")
    return Path(spec.origin).parent.parent


def frontend_metric_problems(pkg_root: Path, metric: M.Metric) -> list[str]:
    """Why *metric* is not what the registry says in the installed library at *pkg_root* ([] = fine)."""
    path = pkg_root / metric.source_file
    if not path.is_file():
        return [f"{metric.source_file} is missing from {pkg_root}"]
    fn = _function(ast.parse(path.read_text(encoding="utf-8")), metric.defined_in)
    literal = metric.constructed_as or metric.name
    tuples = {t.id: ast.literal_eval(n.value) for n in ast.walk(fn) if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Tuple) and all(isinstance(e, ast.Constant) for e in n.value.elts)
              for t in n.targets if isinstance(t, ast.Name)}
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
        kw = {k.arg: k.value for k in call.keywords}
        if not (isinstance(kw.get("name"), ast.Constant) and kw["name"].value == literal):
            continue
        problems = []
        kind = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram"}.get(call.func.id, call.func.id)
        if kind != metric.kind:
            problems.append(f"{literal}: registry says {metric.kind}, {metric.source_file} constructs a {kind}")
        names = [n.id for n in ast.walk(kw["labelnames"]) if isinstance(n, ast.Name)] if "labelnames" in kw else []
        labels = tuple(x for n in names if n in tuples for x in tuples[n])
        if set(labels) != set(metric.all_labels):
            problems.append(f"{literal}: labels {labels} in {metric.defined_in}, registry says {metric.all_labels}")
        return problems
    return [f"{literal} is not constructed in {metric.source_file}:{metric.defined_in}"]


@pytest.mark.parametrize("metric", M.FRONTEND, ids=lambda m: m.name)
def test_frontend_metric_is_created_by_the_library(metric: M.Metric) -> None:
    problems = frontend_metric_problems(_instrumentator_root(), metric)
    assert not problems, "\n".join(problems)


def test_frontend_guard_catches_a_relabel(tmp_path: Path) -> None:
    root = _instrumentator_root()
    src = (root / M.INSTRUMENTATOR_METRICS).read_text(encoding="utf-8")
    assert '"handler",\n        )\n        TOTAL' in src
    fake = tmp_path / M.INSTRUMENTATOR_METRICS
    fake.parent.mkdir(parents=True)
    fake.write_text(src.replace('"handler",\n        )\n        TOTAL', '"path",\n        )\n        TOTAL'),
                    encoding="utf-8")
    assert any("labels" in p for p in frontend_metric_problems(tmp_path, M.HTTP_REQUESTS))
    fake.write_text(src.replace('name="http_requests_total"', 'name="http_requests_v2_total"'), encoding="utf-8")
    assert any("not constructed" in p for p in frontend_metric_problems(tmp_path, M.HTTP_REQUESTS))


def test_dev_pin_is_the_vllm_environment_lock() -> None:
    """The instrumentator version the tests check is the one the book's vLLM environment installs."""
    import tomllib

    from doctor_helpers import REPO

    dev = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["dev"]
    pins = [d for d in dev if d.startswith("prometheus-fastapi-instrumentator==")]
    lock = re.search(r"^prometheus-fastapi-instrumentator==(\S+)", (REPO / "experiments/requirements-vllm.txt")
                     .read_text(encoding="utf-8"), re.M)
    assert pins and lock and pins[0].split("==")[1] == lock.group(1), (pins, lock)


def _attach_call(tree_root: Path) -> tuple[ast.FunctionDef, ast.Call]:
    """vLLM's ``attach_router`` and the ``Instrumentator(...)`` call in it."""
    fn = _function(ast.parse((tree_root / M.VLLM_ATTACH).read_text(encoding="utf-8")), "attach_router")
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "Instrumentator"]
    assert len(calls) == 1, f"{M.VLLM_ATTACH}: expected one Instrumentator(...) in attach_router"
    return fn, calls[0]


def test_vllm_mounts_the_default_http_metrics(vllm_tree: Path) -> None:
    """vLLM uses the library's default metrics, keeps status grouping, and does not exclude the generate routes."""
    fn, inst = _attach_call(vllm_tree)
    adds = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add" and n.func.value is inst]
    assert adds and not adds[0].args, ".add() with arguments replaces the default metrics (http_requests_total)"
    kw = {k.arg: k.value for k in inst.keywords}
    for off in ("should_group_status_codes", "should_respect_env_var", "metric_namespace", "metric_subsystem",
                "instrumentations", "should_ignore_untemplated"):
        assert off not in kw, f"{M.VLLM_ATTACH}: Instrumentator({off}=...) changes the series vllm-doctor reads"
    excluded = ast.literal_eval(kw["excluded_handlers"])
    for handler in M.GENERATE_HANDLERS:
        hit = [p for p in excluded if re.search(p, handler)]
        assert not hit, f"{handler} is excluded from the HTTP metrics by {hit}"


def test_generate_handlers_are_routes_of_the_pinned_tree(vllm_tree: Path) -> None:
    posted: set[str] = set()
    for path in (vllm_tree / "vllm/entrypoints").rglob("*.py"):
        for call in (n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "post" and call.args and isinstance(
                    call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                posted.add(call.args[0].value)
    assert set(M.GENERATE_HANDLERS) <= posted, sorted(set(M.GENERATE_HANDLERS) - posted)
    assert "/v1/chat/completions" in M.GENERATE_HANDLERS and "/v1/completions" in M.GENERATE_HANDLERS


def test_a_disconnected_client_is_still_counted(vllm_tree: Path) -> None:
    """The library counts a request in ``finally``: a client that hangs up mid-stream, or before the answer, counts.

    Mounted as vLLM mounts it (same excluded handlers), on a Starlette app whose routes behave like vLLM's
    generate handlers: one streams and is cancelled by the disconnect (StreamingResponse), one waits for the
    disconnect and then returns, as ``with_cancellation`` does.
    """
    _instrumentator_root()
    from prometheus_client import CollectorRegistry
    from prometheus_fastapi_instrumentator import Instrumentator
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    excluded = ast.literal_eval({k.arg: k.value for k in _attach_call(vllm_tree)[1].keywords}["excluded_handlers"])

    async def stream(request: Request) -> StreamingResponse:
        async def tokens():  # the engine keeps generating; the client leaves after the first chunk
            yield b"data: {}\n\n"
            await asyncio.sleep(30)
            yield b"data: [DONE]\n\n"
        return StreamingResponse(tokens(), media_type="text/event-stream")

    async def unary(request: Request) -> Response:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        return Response("null", media_type="application/json")  # with_cancellation returns None

    registry = CollectorRegistry()
    app = Starlette(routes=[Route("/v1/chat/completions", stream, methods=["POST"]),
                            Route("/v1/completions", unary, methods=["POST"])])
    Instrumentator(excluded_handlers=excluded, registry=registry).add().instrument(app)

    async def hang_up(path: str) -> None:
        sent: list[dict] = []
        messages = [{"type": "http.request", "body": b"{}", "more_body": False}]

        async def receive() -> dict:
            if messages:
                return messages.pop(0)
            await asyncio.sleep(0.05)  # the client leaves shortly after
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
                 "query_string": b"", "headers": [(b"content-type", b"application/json")],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
        await asyncio.wait_for(app(scope, receive, send), timeout=10)
        assert not any(m.get("body", b"").startswith(b"data: [DONE]") for m in sent), "the stream was not cut"

    for handler in ("/v1/chat/completions", "/v1/completions"):
        asyncio.run(hang_up(handler))
        counted = registry.get_sample_value(M.HTTP_REQUESTS.total, {"method": "POST", "status": "2xx",
                                                                     "handler": handler})
        assert counted == 1.0, f"{handler}: a disconnected request was not counted ({counted})"


def test_series_suffixes_match_prometheus_client() -> None:
    """The `_total` / `_bucket` convention, checked against the library vLLM exports with."""
    pc = pytest.importorskip("prometheus_client", reason="prometheus-client (dev extra) checks the naming")
    from prometheus_client.exposition import generate_latest

    for m in M.ALL + M.FRONTEND:
        reg = pc.CollectorRegistry()
        cls = {"counter": pc.Counter, "gauge": pc.Gauge, "histogram": pc.Histogram}[m.kind]
        metric = cls(m.constructed_as or m.name, m.help, labelnames=list(m.all_labels), registry=reg)
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
            if re.search(r"vllm:[a-z]", lit) or any(m.name in lit for m in M.FRONTEND):
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
        bare = set(re.findall(r"(?<![\w:])([a-z_]+)\{", q)) - {"up"} - {m.total for m in M.FRONTEND}
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
    assert len(M.BY_NAME) == len(M.ALL) + len(M.FRONTEND), "duplicate names in the registry"
    for m in M.FRONTEND:
        assert not m.name.startswith("vllm:") and m.package != "vllm" and m not in M.ALL
        assert M.lookup_series(m.series({"counter": "total", "gauge": "", "histogram": "bucket"}[m.kind]))[0] is m
    for m in M.ALL:
        assert m.package == "vllm" and not m.constructed_as
        assert m.name.startswith("vllm:")
        assert not m.name.endswith(("_total", "_bucket", "_sum", "_count")) or m.kind == "gauge"
        assert M.lookup_series(m.series({"counter": "total", "gauge": "", "histogram": "bucket"}[m.kind]))[0] is m
    with pytest.raises(ValueError):
        M.NUM_PREEMPTIONS.series("bucket")
