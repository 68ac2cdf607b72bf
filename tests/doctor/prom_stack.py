"""A real Prometheus (Debian's /usr/bin/prometheus) scraping the synthetic vLLM exporter, for integration tests.

Prometheus runs on 127.0.0.1 (random free port, temporary storage, 1 s scrape and rule-evaluation interval);
everything started here is stopped on exit; every wait has a deadline.  Used by the doctor's integration test
and by the monitoring cookbook's (tests/monitoring).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from doctor_synth_exporter import SyntheticVLLM

PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


class Clock:
    def __init__(self, budget: float) -> None:
        self.deadline = time.monotonic() + budget

    def sleep(self, seconds: float) -> None:
        if time.monotonic() + seconds > self.deadline:
            pytest.fail("the integration test ran out of its time budget")
        time.sleep(seconds)

    def wait_for(self, what: str, check, timeout: float, every: float = 0.5):  # noqa: ANN001, ANN201
        end = min(self.deadline, time.monotonic() + timeout)
        last: object = None
        while time.monotonic() < end:
            try:
                last = check()
                if last:
                    return last
            except OSError as exc:
                last = exc
            time.sleep(every)
        pytest.fail(f"timed out waiting for {what} (last: {last!r})")


def require_prometheus(binary: Path = PROMETHEUS) -> None:
    """Skip without the binary, except under CI, where a missing Prometheus is a failure."""
    if binary.exists():
        return
    if _ci():
        pytest.fail(f"CI is set but {binary} is missing: apt-get install -y prometheus")
    pytest.skip(f"{binary} is not installed (apt-get install -y prometheus); under CI=true this fails")


@contextlib.contextmanager
def prometheus_stack(tmp_path: Path, job: str, budget: float, rule_files: list[Path] | None = None
                     ) -> Iterator[tuple[str, SyntheticVLLM, Clock]]:
    """(Prometheus URL, the exporter it scrapes as *job*, a deadline clock); *rule_files* are loaded too."""
    require_prometheus()
    clock = Clock(budget)
    exporter = SyntheticVLLM()
    proc: subprocess.Popen[bytes] | None = None
    log = tmp_path / "prometheus.log"
    try:
        port = exporter.start()
        prom_port = _free_port()
        cfg = tmp_path / "prometheus.yml"
        rules = "".join(f"  - '{p}'\n" for p in rule_files or [])
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
            + (f"rule_files:\n{rules}" if rules else "")
            + f"scrape_configs:\n  - job_name: {job}\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{port}']\n",
            encoding="utf-8",
        )
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(PROMETHEUS), f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{prom_port}", "--storage.tsdb.retention.time=1h",
                 "--log.level=warn"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        url = f"http://127.0.0.1:{prom_port}"

        def ready() -> bool:
            if proc is not None and proc.poll() is not None:
                pytest.fail(f"prometheus exited with {proc.returncode}:\n{log.read_text(errors='replace')[-2000:]}")
            return _get(f"{url}/-/ready").startswith(b"Prometheus")

        clock.wait_for("Prometheus to become ready", ready, 30)

        def target_up() -> bool:
            q = urllib.parse.quote(f'up{{job="{job}"}}')
            doc = json.loads(_get(f"{url}/api/v1/query?query={q}"))
            res = doc["data"]["result"]
            return bool(res) and res[0]["value"][1] == "1"

        clock.wait_for("the first successful scrape", target_up, 30)
        yield url, exporter, clock
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        exporter.stop()


def query(url: str, expr: str) -> list[dict]:
    """The result vector (or matrix/scalar as a list) of an instant query; raises on a PromQL error."""
    doc = json.loads(_get(f"{url}/api/v1/query?query={urllib.parse.quote(expr)}", timeout=5.0))
    if doc.get("status") != "success":
        raise AssertionError(f"{expr}: {doc}")
    res = doc["data"]["result"]
    return res if isinstance(res, list) else [res]
