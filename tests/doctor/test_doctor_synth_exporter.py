"""The synthetic exporter speaks the exposition format vLLM's /metrics does: registry names, their label sets.

No Prometheus needed: the text is parsed with prometheus_client's own parser (the dev extra), every series
is mapped back to the registry, and its labels are compared with the registry's (which the registry test
checks against the pinned source, and for ``http_requests_total`` against the instrumentator library).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from doctor_synth_exporter import _BUCKETS_OF, SyntheticVLLM
from vllm_doctor import metrics as M

# Served although vllm-doctor's triage does not read them: the monitoring cookbook's recipes need them.
COOKBOOK = (M.REQUEST_TIME_PER_OUTPUT_TOKEN, M.REQUEST_DECODE_TIME, M.PROMPT_TOKENS_BY_SOURCE)


def _samples(exporter: SyntheticVLLM) -> list[tuple[str, dict[str, str], float]]:
    parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (dev extra) parses the text")
    text = exporter.exposition()
    return [(s.name, dict(s.labels), s.value) for fam in parser.text_string_to_metric_families(text)
            for s in fam.samples]


def test_every_series_is_a_registry_series_with_its_labels() -> None:
    exporter = SyntheticVLLM()
    seen: set[str] = set()
    for name, labels, _ in _samples(exporter):
        metric, suffix = M.lookup_series(name)
        seen.add(metric.name)
        expected = set(metric.all_labels) | ({"le"} if suffix == "bucket" else set())
        if metric is M.CACHE_CONFIG_INFO:  # the CacheConfig fields are labels too
            assert set(metric.all_labels) <= set(labels), (name, labels)
            continue
        assert set(labels) == expected, f"{name}: labels {sorted(labels)}, registry says {sorted(expected)}"
        for label, values in metric.label_values.items():
            assert labels[label] in values, (name, label, labels[label])
    conditional = {M.CORRUPTED_REQUESTS.name, M.LORA_REQUESTS_INFO.name}  # off unless a feature is on
    assert {m.name for m in M.ALL} - seen == conditional
    assert {m.name for m in M.FRONTEND} <= seen
    assert {m.name for m in COOKBOOK} <= seen


def test_prompt_tokens_by_source_adds_up() -> None:
    exporter = SyntheticVLLM()
    exporter.set(prefix_hit_ratio=0.25, external_hit_ratio=0.125)
    exporter._last -= 10.0  # ten seconds of traffic at the scenario's rates
    samples = _samples(exporter)
    by_source = {lbl["source"]: v for n, lbl, v in samples if n == M.PROMPT_TOKENS_BY_SOURCE.total}
    total = next(v for n, _, v in samples if n == M.PROMPT_TOKENS.total)
    cached = next(v for n, _, v in samples if n == M.PROMPT_TOKENS_CACHED.total)
    assert set(by_source) == set(M.PROMPT_TOKEN_SOURCES)
    assert sum(by_source.values()) == pytest.approx(total)  # computed + local hit + external = total
    assert by_source["local_cache_hit"] + by_source["external_kv_transfer"] == pytest.approx(cached)
    assert by_source["external_kv_transfer"] == pytest.approx(total * 0.125, rel=1e-3)


def test_abandoned_attempts_reach_only_the_http_counter() -> None:
    exporter = SyntheticVLLM()
    exporter.set(request_rate=10.0, abandon_rate=20.0, rejected_rate=1.0)
    exporter._last -= 10.0
    samples = _samples(exporter)
    http = {(lbl["method"], lbl["status"], lbl["handler"]): v for n, lbl, v in samples if n == M.HTTP_REQUESTS.total}
    done = sum(v for n, _, v in samples if n == M.REQUEST_SUCCESS.total)
    ok = http[("POST", "2xx", "/v1/chat/completions")]
    assert ok == pytest.approx(3 * done, rel=1e-3), "finished + abandoned = 3 x finished"
    assert http[("POST", "4xx", "/v1/chat/completions")] == pytest.approx(done / 10, rel=1e-3)
    assert ("GET", "2xx", "/v1/models") in http and "/v1/models" not in M.GENERATE_HANDLERS


def test_histograms_use_the_bucket_bounds_of_loggers_py() -> None:
    exporter = SyntheticVLLM()
    samples = _samples(exporter)
    for metric, first, last in ((M.REQUEST_TIME_PER_OUTPUT_TOKEN, 0.01, 80.0), (M.REQUEST_DECODE_TIME, 0.3, 7680.0)):
        bounds = [float(lbl["le"]) for n, lbl, _ in samples if n == metric.bucket and lbl["le"] != "+Inf"]
        assert bounds[0] == first and bounds[-1] == last, (metric.name, bounds)


def _source_buckets(tree_root: Path, name: str) -> tuple[float, ...]:
    cls_name, _, fn_name = M.STAT_LOGGER_INIT.partition(".")
    tree = ast.parse((tree_root / M.LOGGERS).read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == fn_name)
    lists = {t.id: n.value for n in ast.walk(init) if isinstance(n, ast.Assign) and isinstance(n.value, ast.List)
             for t in n.targets if isinstance(t, ast.Name)}
    for call in (n for n in ast.walk(init) if isinstance(n, ast.Call)):
        kw = {k.arg: k.value for k in call.keywords}
        if isinstance(kw.get("name"), ast.Constant) and kw["name"].value == name:
            node = kw["buckets"]
            node = lists[node.id] if isinstance(node, ast.Name) else node
            return tuple(float(v) for v in ast.literal_eval(node))
    raise AssertionError(f"{name} not constructed in {M.LOGGERS}")


def test_bucket_bounds_match_the_pinned_source(vllm_tree: Path) -> None:
    for metric in (M.REQUEST_TIME_PER_OUTPUT_TOKEN, M.REQUEST_DECODE_TIME):
        assert _source_buckets(vllm_tree, metric.name) == _BUCKETS_OF[metric.name], metric.name
