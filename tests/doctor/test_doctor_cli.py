"""The CLI over the shipped fixtures: every scenario, every phase, every error path."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from doctor_helpers import DOCTOR, EXAMPLES, REPO, load_example, write_fixture
from vllm_doctor.cli import main
from vllm_doctor.playbooks import BY_ID

SCENARIOS = sorted(BY_ID)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_scenario_has_a_fixture() -> None:
    names = {p.stem for p in EXAMPLES.glob("*.json")}
    assert set(SCENARIOS) | {"healthy"} <= names


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_triage_names_the_right_playbook(scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "triage", "--fixture", str(EXAMPLES / f"{scenario}.json"), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "incident"
    assert doc["playbook"] == scenario
    primary = next(r for r in doc["rules"] if r["playbook"] == scenario)
    assert primary["status"] == "match" and primary["conditions"]
    assert all(c["value"] is not None for c in primary["conditions"] if c["holds"])


def test_healthy_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "triage", "--fixture", str(EXAMPLES / "healthy.json"))
    assert code == 0 and out.startswith("HEALTHY")


def test_insufficient_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "triage", "--fixture", str(EXAMPLES / "insufficient-no-baseline.json"))
    assert code == 3 and out.startswith("INSUFFICIENT EVIDENCE")
    assert "request_rate_baseline" in out


def test_preempt_text_output_shows_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "triage", "--fixture", str(EXAMPLES / "preempt-cascade.json"))
    assert code == 1
    assert "playbook preempt-cascade" in out
    assert "preempt_rate >= preempt.rate_per_s  (value 2.5, limit 0.1)" in out
    assert "kv_usage_max >= preempt.kv_usage_high  (value 0.99, limit 0.9)" in out
    assert "alternatives to rule out" in out


def test_threshold_override_changes_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "triage", "--fixture", str(EXAMPLES / "preempt-cascade.json"),
                       "--set", "preempt.rate_per_s=5")
    assert code == 0 and out.startswith("HEALTHY")


@pytest.mark.parametrize("phase", ["probe", "collect", "diagnose", "plan", "verify"])
def test_each_phase_runs(phase: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, phase, "--fixture", str(EXAMPLES / "preempt-cascade.json"), "--format", "json")
    assert code in (0, 1, 3), err
    doc = json.loads(out)
    assert doc


def test_plan_marks_every_mutating_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "plan", "--fixture", str(EXAMPLES / "gpu-oom.json"))
    assert code == 0
    assert "NOTHING IS EXECUTED" in out
    assert out.count("REQUIRES HUMAN APPROVAL") == sum(1 for line in out.splitlines() if "risk:" in line)
    assert "0.92" in out  # filled from the probe's cache_config


def test_plan_json_is_never_executed(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli(capsys, "plan", "--fixture", str(EXAMPLES / "nccl-hang.json"), "--format", "json")
    doc = json.loads(out)
    assert doc["executed"] is False
    assert all(s["requires_approval"] == (s["kind"] == "mutating") for s in doc["steps"])


def test_plan_without_a_playbook_on_a_healthy_service(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "plan", "--fixture", str(EXAMPLES / "healthy.json"))
    assert code == 0 and "pass --playbook" in out


def test_verify_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "verify", "--fixture", str(EXAMPLES / "preempt-cascade.json"))[0] == 0
    assert cli(capsys, "verify", "--fixture", str(EXAMPLES / "nccl-hang.json"))[0] == 1
    code, out, _ = cli(capsys, "verify", "--fixture", str(EXAMPLES / "gpu-oom.json"))
    assert code == 3 and "INSUFFICIENT-EVIDENCE" in out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_run_writes_a_complete_report(scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "r.md"
    code, out, _ = cli(capsys, "run", "--fixture", str(EXAMPLES / f"{scenario}.json"), "-o", str(dest))
    assert code == 1 and "report written" in out
    md = dest.read_text(encoding="utf-8")
    for heading in ("# vLLM 事故报告", "## 1. 结论", "## 2. 探测", "## 3. 黄金信号", "## 4. 分诊",
                    "## 5. 深入诊断", "## 6. 处置计划", "## 7. 验证"):
        assert heading in md
    assert f"doctor/playbooks/{scenario}.md" in md
    assert md.count("批准人 / approved by") == md.count("REQUIRES HUMAN APPROVAL") - 1  # minus the preamble
    assert "vllm-doctor 不执行任何变更" in md


def test_report_for_insufficient_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "report", "--fixture", str(EXAMPLES / "insufficient-no-baseline.json"))
    assert code == 3
    assert "证据不足时本工具不做猜测" in out and "未生成" in out


def test_rules_and_queries_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "rules")
    assert code == 0 and out.startswith("| # |")
    code, out, _ = cli(capsys, "queries", "--selector", 'job="x"', "--format", "json")
    qs = json.loads(out)
    assert code == 0 and all('job="x"' in q for k, q in qs.items() if not k.startswith("diag.up"))


def test_playbook_command(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                          tmp_path: Path) -> None:
    code, out, _ = cli(capsys, "playbook", "preempt-cascade")
    assert code == 0 and out.startswith("# KV 抢占雪崩")
    code, out, _ = cli(capsys, "playbook", "promql-cheatsheet")
    assert code == 0 and "PromQL" in out
    monkeypatch.setenv("VLLM_DOCTOR_PLAYBOOKS", str(tmp_path))
    code, _, err = cli(capsys, "playbook", "gpu-oom")
    assert code == 2 and "VLLM_DOCTOR_PLAYBOOKS" in err


# -- error paths ---------------------------------------------------------------


def test_source_is_required_and_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "triage")
    assert code == 2 and "exactly one signal source" in err
    code, _, err = cli(capsys, "triage", "--fixture", "x.json", "--prometheus", "http://127.0.0.1:1")
    assert code == 2 and "exactly one signal source" in err


def test_missing_fixture(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "triage", "--fixture", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read the fixture" in err


@pytest.mark.parametrize("doc,fragment", [
    ({"schema": "other"}, "not a vllm-doctor fixture"),
    ({"schema": "vllm-doctor/fixture@1"}, "no \"signals\""),
    ({"schema": "vllm-doctor/fixture@1", "signals": {"runing": 1}}, "unknown signal 'runing'"),
    ({"schema": "vllm-doctor/fixture@1", "signals": {"running": "many"}}, "expected a number or null"),
])
def test_bad_fixture(doc: dict, fragment: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "triage", "--fixture", str(write_fixture(tmp_path, doc)))
    assert code == 2 and fragment in err


def test_not_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text("{", encoding="utf-8")
    code, _, err = cli(capsys, "triage", "--fixture", str(p))
    assert code == 2 and "not valid JSON" in err


def test_unreachable_prometheus_fails_fast(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = cli(capsys, "triage", "--prometheus", f"http://127.0.0.1:{port}", "--timeout", "2")
    assert code == 2 and "cannot reach Prometheus" in err
    code, _, err = cli(capsys, "probe", "--prometheus", "ftp://example")
    assert code == 2 and "expected an http(s) URL" in err


def test_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "triage", "--fixture", str(EXAMPLES / "healthy.json"), "--window", "5 min")
    assert code == 2 and "not a PromQL duration" in err
    code, _, err = cli(capsys, "triage", "--fixture", str(EXAMPLES / "healthy.json"), "--at", "yesterday")
    assert code == 2 and "--at" in err
    code, _, err = cli(capsys, "triage", "--fixture", str(EXAMPLES / "healthy.json"), "--set", "x.y=1")
    assert code == 2 and "unknown key" in err


def test_example_fixtures_say_they_are_synthetic() -> None:
    for p in EXAMPLES.glob("*.json"):
        doc = load_example(p.stem)
        assert "Synthetic" in doc["description"], f"{p.name} must say its numbers are synthetic"


def test_python_dash_m_entry_point() -> None:
    env = {**os.environ, "PYTHONPATH": str(DOCTOR) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "vllm_doctor", "triage", "--fixture",
                           "doctor/examples/preempt-cascade.json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "playbook preempt-cascade" in proc.stdout


def _console_script() -> str | None:
    sibling = Path(sys.executable).parent / "vllm-doctor"
    return str(sibling) if sibling.exists() else shutil.which("vllm-doctor")


@pytest.mark.skipif(_console_script() is None,
                    reason="the vllm-doctor console script is not installed (pip install -e . after the "
                           "pyproject entry point is added)")
def test_console_script() -> None:
    proc = subprocess.run([str(_console_script()), "triage", "--fixture", "doctor/examples/preempt-cascade.json"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "playbook preempt-cascade" in proc.stdout


def test_report_date_follows_source_date_epoch(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    """The book renders reports during its build: with SOURCE_DATE_EPOCH the report is the same every time."""
    fixture = str(EXAMPLES / "preempt-cascade.json")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764547200")
    _, first, _ = cli(capsys, "run", "--fixture", fixture)
    _, second, _ = cli(capsys, "run", "--fixture", fixture)
    assert "- 生成时间：2025-12-01 00:00:00 UTC" in first.splitlines() and first == second
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    code, _, err = cli(capsys, "run", "--fixture", fixture)
    assert code == 2 and "SOURCE_DATE_EPOCH='yesterday' is not an integer" in err
