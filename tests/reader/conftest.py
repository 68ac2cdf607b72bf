"""Reader tests: the built book served on loopback and driven in headless Debian chromium (puppeteer).

Locally a missing node, puppeteer or chromium skips these tests; under ``CI=true`` it fails them.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _chromium() -> str | None:
    for cand in (os.environ.get("PUPPETEER_EXECUTABLE_PATH"), shutil.which("chromium"),
                 shutil.which("chromium-browser"), "/usr/lib/chromium/chromium"):
        if cand and Path(cand).is_file():
            return cand
    return None


def _missing(what: str):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"reader tests need {what} (CI must not skip them). Fix: make node-tools", pytrace=False)
    pytest.skip(f"needs {what}")


@pytest.fixture(scope="session")
def node_env() -> dict[str, str]:
    node, chromium = shutil.which("node"), _chromium()
    if not node:
        _missing("node")
    if not (REPO / "node_modules" / "puppeteer").is_dir() or not (REPO / "node_modules" / "axe-core").is_dir():
        _missing("node_modules/puppeteer and node_modules/axe-core (npm ci)")
    if not chromium:
        _missing("chromium (apt-get install chromium)")
    return dict(os.environ, NODE_PATH=str(REPO / "node_modules"), PUPPETEER_EXECUTABLE_PATH=chromium)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the tests report failed requests themselves
        pass


def serve(directory: Path):
    """Serve *directory* on 127.0.0.1 (a free port) in a thread; returns (base URL, server)."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


@pytest.fixture(scope="session")
def served_book(real_book):
    base, server = serve(real_book)
    yield base
    server.shutdown()


@pytest.fixture(scope="session")
def served_english(english_book):
    base, server = serve(english_book)
    yield base
    server.shutdown()


def run_node(script: str, *args: str, env: dict[str, str], timeout: int = 900) -> dict:
    proc = subprocess.run(["node", str(HERE / script), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
