"""``scripts/gpu-validation.sh`` with a fake ``nvidia-smi`` and a fake ``vllm`` on PATH: the evidence layout, the
schema, the redaction of planted secrets, failures recorded as failures, and the commands file at the pin."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

from ci_helpers import FAKES, PLANTED_HF, PLANTED_KEY, REPO, git, gpu_env, run_gpu, validator

LAYOUT = {"result.json", "commands.txt", "git.txt", "pin.toml", "nvidia-smi.txt", "nvidia-smi-query.csv",
          "vllm-version.txt", "env.txt"}


def _commands(root: Path) -> list[str]:
    return [line.strip() for line in (root / "scripts" / "gpu-validation.commands").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_evidence_layout_schema_and_archive(gpu_repo, tmp_path):
    out = tmp_path / "out"
    proc = run_gpu(gpu_repo, out, gpu_env(tmp_path), "--id", "gpu-test-1")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    ev = out / "gpu-test-1"
    names = {p.relative_to(ev).as_posix() for p in ev.rglob("*") if p.is_file()}
    cmds = _commands(gpu_repo)
    logs = {n for n in names if n.startswith("logs/")}
    assert names == LAYOUT | logs and len(logs) == len(cmds)
    result = json.loads((ev / "result.json").read_text())
    assert list(validator().iter_errors(result)) == []
    head = git(gpu_repo, "rev-parse", "HEAD").strip()
    assert result["status"] == "passed" and result["id"] == "gpu-test-1"
    assert (result["book"]["commit"], result["book"]["dirty"]) == (head, False)
    pin = (REPO / "vllm-pin.toml").read_text()
    assert result["vllm"]["pin_commit"] in pin and result["vllm"]["installed_version"] == result["vllm"]["pin_version"]
    assert result["gpu"] == {"driver_version": "550.54.15", "cuda_version": "12.4",
                             "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559}]}
    # every command of the file ran, in order, with its own log; the fake vllm saw exactly those arguments
    assert [c["command"] for c in result["commands"]] == cmds
    assert all(c["exit_code"] == 0 and (ev / c["log"]).is_file() for c in result["commands"])
    seen = (tmp_path / "vllm-args.log").read_text().splitlines()
    assert seen == ["--version"] + [c.removeprefix("vllm ") for c in cmds]
    assert "Avg latency: 0.0421 seconds" in (ev / result["commands"][2]["log"]).read_text()  # stderr kept too
    # commands.txt is the ledger of every command the script ran (collection included)
    ledger = (ev / "commands.txt").read_text()
    for c in ("git -C", "rev-parse HEAD", "nvidia-smi --query-gpu", "vllm --version", *cmds):
        assert c in ledger, c
    # the file list is complete and its hashes are right
    listed = {f["path"]: f["sha256"] for f in result["files"]}
    assert set(listed) == names - {"result.json"}
    assert all(hashlib.sha256((ev / p).read_bytes()).hexdigest() == h for p, h in listed.items())
    # the archive holds the same directory
    with tarfile.open(out / "gpu-test-1.tar.gz") as tar:
        members = {m.name for m in tar.getmembers() if m.isfile()}
    assert members == {f"gpu-test-1/{n}" for n in names}


def test_planted_secrets_do_not_survive(gpu_repo, tmp_path):
    out = tmp_path / "out"
    proc = run_gpu(gpu_repo, out, gpu_env(tmp_path), "--id", "gpu-redact")
    assert proc.returncode == 0, proc.stderr
    ev = out / "gpu-redact"
    blobs = [p.read_bytes() for p in ev.rglob("*") if p.is_file()]
    with tarfile.open(out / "gpu-redact.tar.gz") as tar:
        blobs += [tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()]
    blobs.append(proc.stdout.encode())  # the workflow's console log is evidence too
    for secret in (PLANTED_HF, PLANTED_KEY, "proxy-pass-123", "hf_PlantedTest"):
        assert not any(secret.encode() in b for b in blobs), secret
    env = dict(line.split("=", 1) for line in (ev / "env.txt").read_text().splitlines())
    assert env["HF_TOKEN"] == env["MY_CLOUD_API_KEY"] == "<redacted>"
    assert env["INNOCENT_LOOKING"] == "prefix-<redacted>"  # value matched by its hf_ shape
    assert env["HTTPS_PROXY"] == "http://<redacted>@proxy.internal:3128"
    assert env["PATH"].startswith(str(FAKES))  # ordinary variables are kept
    log = next((ev / "logs").glob("*collect-env.log")).read_text()
    assert "HF_TOKEN=<redacted>" in log and "auth=<redacted> ok" in log and "cloud key: <redacted>" in log
    result = json.loads((ev / "result.json").read_text())
    assert {"HF_TOKEN", "MY_CLOUD_API_KEY"} <= set(result["environment"]["redacted_names"])
    assert result["environment"]["values_redacted"] >= 4


def test_failed_command_and_wrong_vllm_are_recorded_as_failed(gpu_repo, tmp_path):
    out = tmp_path / "out"
    proc = run_gpu(gpu_repo, out, gpu_env(tmp_path, FAKE_VLLM_FAIL_BENCH="1", FAKE_VLLM_VERSION="0.25.1"), "--id", "gpu-fail")
    assert proc.returncode == 1, proc.stderr
    result = json.loads((out / "gpu-fail" / "result.json").read_text())
    assert list(validator().iter_errors(result)) == []
    assert result["status"] == "failed" and result["vllm"]["matches_pin"] is False
    assert "installed vLLM 0.25.1 is not the pinned" in result["status_reason"]
    assert "2 of 4 commands failed (first: vllm bench latency" in result["status_reason"]
    assert [c["exit_code"] for c in result["commands"]] == [0, 0, 3, 3]
    assert (out / "gpu-fail.tar.gz").is_file()


def test_dirty_checkout_and_timeout(gpu_repo, tmp_path):
    (gpu_repo / "vllm-pin.toml").write_text((gpu_repo / "vllm-pin.toml").read_text() + "# edited\n")
    (gpu_repo / "scripts" / "only-bench.commands").write_text("vllm bench latency --model m\n")
    out = tmp_path / "out"
    proc = run_gpu(gpu_repo, out, gpu_env(tmp_path, FAKE_VLLM_SLEEP="30"), "--id", "gpu-slow", "--timeout", "1",
                   "--commands", str(gpu_repo / "scripts" / "only-bench.commands"))
    assert proc.returncode == 1, proc.stderr
    result = json.loads((out / "gpu-slow" / "result.json").read_text())
    assert result["book"]["dirty"] is True and "uncommitted changes" in result["status_reason"]
    assert result["commands"][0]["exit_code"] == 124 and result["commands"][0]["timed_out"] is True
    assert result["commands"][0]["duration_seconds"] < 20


def test_refuses_without_gpu_tools_or_with_a_bad_commands_file(gpu_repo, tmp_path):
    only_vllm = tmp_path / "bin"
    only_vllm.mkdir()
    (only_vllm / "vllm").symlink_to(FAKES / "vllm")
    proc = run_gpu(gpu_repo, tmp_path / "o1", gpu_env(tmp_path, path_dirs=[only_vllm]))
    assert proc.returncode == 2 and "nvidia-smi is not on PATH" in proc.stderr
    assert not (tmp_path / "o1").exists()
    bad = gpu_repo / "scripts" / "bad.commands"
    bad.write_text("# ok\nvllm --version\ncurl http://example.invalid | sh\n")
    proc = run_gpu(gpu_repo, tmp_path / "o2", gpu_env(tmp_path), "--commands", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:3: only `vllm …` invocations belong in the commands file, got 'curl'" in proc.stderr
    assert "fix: start the line with vllm" in proc.stderr


def test_commands_file_parses_with_the_pinned_cli():
    """Every line of scripts/gpu-validation.commands is a valid invocation of the pinned release (the CLI spec)."""
    from vllm_book import pin as pin_mod
    from vllm_book.sync import commands as cmd

    spec = cmd.load_spec(cmd.spec_path(pin_mod.load_pin(REPO).version))
    path = REPO / "scripts" / "gpu-validation.commands"
    n_checked = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        words, _ = cmd.shell_words([(n, line)])
        (one,) = cmd.simple_commands(words)
        inv = cmd.invocation(one)
        assert inv is not None, line
        assert cmd.check_invocation(spec, inv, REPO / "vllm") == [], f"{path.name}:{n}: {line}"
        n_checked += 1
    assert n_checked >= 3
    # the check is not vacuous: a wrong flag is caught
    words, _ = cmd.shell_words([(1, "vllm bench latency --num-iters-warmpu 2")])
    assert cmd.check_invocation(spec, cmd.invocation(cmd.simple_commands(words)[0]), REPO / "vllm")
