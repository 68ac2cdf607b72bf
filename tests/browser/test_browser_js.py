"""b.js in a real browser: line/range/symbol highlighting, gutter clicks, theme, search.

Needs node, puppeteer (``npm ci`` installs it with mermaid-cli) and Chromium;
skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _chromium() -> str | None:
    for cand in (os.environ.get("PUPPETEER_EXECUTABLE_PATH"), shutil.which("chromium"), shutil.which("chromium-browser"),
                 "/usr/lib/chromium/chromium"):
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.fixture(scope="module")
def js_run(basic):
    node = shutil.which("node")
    chromium = _chromium()
    if not node or not (REPO / "node_modules" / "puppeteer").is_dir() or not chromium:
        pytest.skip("needs node, node_modules/puppeteer and chromium")
    env = dict(os.environ, NODE_PATH=str(REPO / "node_modules"), PUPPETEER_EXECUTABLE_PATH=chromium)
    proc = subprocess.run([node, str(HERE / "js_check.js"), str(Path(basic.outdir) / "_src")],
                          capture_output=True, text=True, env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_no_errors_and_no_network(js_run):
    assert js_run["errors"] == []
    assert js_run["requests"] and all(u.startswith("file://") for u in js_run["requests"])


def test_range_from_the_url(js_run):
    r = js_run["range"]
    assert r["lines"] == [24, 28] and r["gh"].endswith("/vllm/v1/core/sched/scheduler.py#L24-L28")
    assert r["gutter"] == 70 and r["scrollY"] > 0


def test_symbol_range_on_hashchange(js_run):
    assert js_run["symbol"]["lines"] == [42, 48]  # a property: getter and setter, decorators included


def test_gutter_clicks(js_run):
    assert js_run["click"]["hash"] == "#L10" and js_run["click"]["lines"] == [10, 10]
    assert js_run["shiftClick"]["hash"] == "#L10-L14" and js_run["shiftClick"]["lines"] == [10, 14]


def test_theme_toggle_and_system_dark(js_run):
    assert js_run["toggled"] == ["dark", "dark", "dark"]  # auto → light → dark, stored like pydata
    theme, bg = js_run["darkTheme"]
    assert theme == "dark" and bg != "rgb(255, 255, 255)"


def test_search_and_navigate(js_run):
    texts = [t for t, _ in js_run["results"]]
    assert any("hash_block_tokens" in t for t in texts)
    after = js_run["afterSearch"]
    assert after["url"].endswith("/vllm/v1/core/kv_cache_utils.py.html#hash_block_tokens")
    assert after["lines"] == [14, 19]  # the decorated function, decorator included
