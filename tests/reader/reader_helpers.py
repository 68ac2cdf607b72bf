"""Helpers of the reader tests (a module of its own: a ``conftest`` import clashes with other test dirs')."""

from __future__ import annotations

import functools
import json
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the tests report failed requests themselves
        pass


def serve(directory: Path):
    """Serve *directory* on 127.0.0.1 (a free port) in a thread; returns (base URL, server)."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


def run_node(script: str, *args: str, env: dict[str, str], timeout: int = 900) -> dict:
    proc = subprocess.run(["node", str(HERE / script), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
