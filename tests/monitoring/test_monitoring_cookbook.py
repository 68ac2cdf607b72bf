"""The monitoring cookbook's files (``source/08-production-deployment/monitoring/``) work when a reader copies them.

* ``*.yml`` rule files pass ``promtool check rules`` (Debian's prometheus ships promtool);
* every ``vllm:*`` name in the rules, the recipes and the dashboard is a metric the pinned tree exports (the
  same check ``make validate`` applies to chapters), every ``VLLM_*`` name an environment variable;
* the Grafana dashboard JSON loads and is well formed (unique panel ids and refIds, no overlapping panels, every
  query on the ``$datasource`` variable, every variable it uses defined);
* every recipe, every recording rule, every alert expression and every dashboard query is evaluated by a real
  Prometheus that scrapes the synthetic vLLM exporter of ``tests/doctor``, with the rules loaded: each must be
  valid PromQL, and every recipe, recording rule and dashboard query must return data.
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from prom_stack import PROMTOOL, prometheus_stack, query, require_prometheus

REPO = Path(__file__).resolve().parents[2]
DIR = REPO / "source" / "08-production-deployment" / "monitoring"
RULE_FILES = sorted(DIR.glob("*.yml"))
DASHBOARDS = sorted(DIR.glob("*dashboard*.json"))
RECIPES = DIR / "recipes.toml"
#: Grafana's variables, as a test run substitutes them (a dashboard variable is used as =~"$var": .+ matches all)
GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "30s", "$__range": "5m"}
BUDGET_S = 180.0


def _rules() -> list[dict]:
    out = []
    for f in RULE_FILES:
        for g in yaml.safe_load(f.read_text(encoding="utf-8"))["groups"]:
            out.extend({**r, "_file": f.name, "_group": g["name"]} for r in g["rules"])
    return out


def _recipes() -> list[dict]:
    return tomllib.loads(RECIPES.read_text(encoding="utf-8"))["recipe"]


def _dashboard_queries(dash: dict) -> list[tuple[str, str]]:
    return [(f"panel {p['id']} {p.get('title', '')!r} target {t['refId']}", t["expr"])
            for p in dash["panels"] for t in p.get("targets", [])]


def _grafana(expr: str, variables: list[str]) -> str:
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    for name in variables:
        expr = expr.replace(f"${{{name}}}", ".+").replace(f"${name}", ".+")
    return expr


def test_the_cookbook_ships_rules_recipes_and_a_dashboard():
    assert RULE_FILES and DASHBOARDS and RECIPES.is_file()
    assert [r for r in _rules() if "record" in r] and [r for r in _rules() if "alert" in r]
    ids = [r["id"] for r in _recipes()]
    assert ids and len(ids) == len(set(ids))
    assert all(r.get("title") and r.get("expr") and r.get("unit") for r in _recipes())


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.name)
def test_rule_files_pass_promtool(path: Path):
    if not PROMTOOL.exists():
        require_prometheus(PROMTOOL)  # skips locally, fails under CI
    proc = subprocess.run([str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr


def test_every_vllm_name_exists_at_the_pin():
    from vllm_book import pin as pin_mod
    from vllm_book.sync import commands

    facts = commands.tree_facts(pin_mod.source_root(REPO))
    stats: dict[str, set] = {"variables": set(), "metrics": set(), "identifiers": set()}
    problems = []
    for f in [*RULE_FILES, *DASHBOARDS, RECIPES]:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            problems += [f"{f.name}:{n}: {i.message}" + (f" (closest: {i.closest})" if i.closest else "")
                         for i in commands.check_names(line, n, facts, stats)]
    assert not problems, "\n".join(problems)
    assert stats["metrics"], "no vllm:* name found: the check would be vacuous"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_is_a_well_formed_grafana_dashboard(path: Path):
    dash = json.loads(path.read_text(encoding="utf-8"))
    assert dash["title"] and dash["uid"] and isinstance(dash["schemaVersion"], int)
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    panels = dash["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {ids}"
    boxes = []
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, f"panel {p['id']} gridPos {g}"
        for q, other in boxes:
            overlap = not (g["x"] + g["w"] <= other["x"] or other["x"] + other["w"] <= g["x"]
                           or g["y"] + g["h"] <= other["y"] or other["y"] + other["h"] <= g["y"])
            assert not overlap, f"panels {p['id']} and {q} overlap"
        boxes.append((p["id"], g))
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}", f"panel {p['id']} is not on the $datasource variable"
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(refs) == len(set(refs)), f"panel {p['id']} refIds {refs}"
        for t in p["targets"]:
            used = set(re.findall(r"\$\{?([A-Za-z_]\w*)", t["expr"])) - {k[1:] for k in GRAFANA_VARS}
            assert used <= set(variables), f"panel {p['id']} uses undefined variables {used - set(variables)}"


def test_every_query_runs_on_a_real_prometheus_and_returns_data(tmp_path):
    dashes = [json.loads(p.read_text(encoding="utf-8")) for p in DASHBOARDS]
    with prometheus_stack(tmp_path, "vllm", BUDGET_S, rule_files=RULE_FILES) as (url, _exporter, clock):
        clock.sleep(8)  # a few scrapes and rule evaluations: rate() needs two samples in its window
        checks: list[tuple[str, str, bool]] = [(f"recipe {r['id']}", r["expr"], True) for r in _recipes()]
        for r in _rules():
            if "record" in r:
                checks.append((f"{r['_file']} recording rule {r['record']}", r["record"], True))
                checks.append((f"{r['_file']} expr of {r['record']}", r["expr"], True))
            else:  # an alert fires only in an incident: its expression must parse and evaluate
                checks.append((f"{r['_file']} alert {r['alert']}", r["expr"], False))
        for d in dashes:
            names = [v["name"] for v in d["templating"]["list"]]
            checks += [(f"{d['uid']} {where}", _grafana(e, names), True) for where, e in _dashboard_queries(d)]

        for what, expr, _needs in checks:
            query(url, expr)  # raises with Prometheus's message on invalid PromQL
        empty = [f"{what}: {expr}" for what, expr, needs in checks if needs and not query(url, expr)]
        for _ in range(30):  # rule groups evaluate on their own interval: give them up to a minute
            if not empty:
                break
            clock.sleep(2)
            empty = [e for e in empty if not query(url, e.split(": ", 1)[1])]
        assert not empty, "no data from:\n" + "\n".join(empty)
