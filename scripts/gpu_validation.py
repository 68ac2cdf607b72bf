#!/usr/bin/env python3
"""GPU validation: run the book's ``vllm …`` commands on an NVIDIA machine and keep redacted evidence.

Called by ``scripts/gpu-validation.sh`` (the entry point of ``.github/workflows/gpu-validation.yml``).
Standard library only: the self-hosted runner has vLLM and its Python, not the book's ``.venv``.

Writes ``<out>/<id>/`` and archives it as ``<out>/<id>.tar.gz``::

    result.json            the record (schemas/gpu-evidence.schema.json)
    commands.txt           every command this script ran, in order, with exit status and duration
    git.txt                git rev-parse HEAD, the branch, git status --porcelain
    pin.toml               vllm-pin.toml as checked out
    nvidia-smi.txt         nvidia-smi
    nvidia-smi-query.csv   nvidia-smi --query-gpu=index,name,memory.total,driver_version
    vllm-version.txt       vllm --version
    env.txt                the environment, redacted
    logs/NN-<slug>.log     stdout+stderr of each command of the commands file (redacted line by line)

Redaction: a variable whose name matches :data:`SECRET_NAME` is written as ``NAME=<redacted>``, and its value
(when at least 8 characters long) is replaced wherever it appears in any file; values shaped like tokens
(:data:`TOKEN_SHAPES`: Hugging Face ``hf_…``, GitHub, OpenAI, AWS, Slack) and credentials in URLs are replaced
everywhere.  Output is redacted before it touches the disk; a final scan of every file refuses to archive if any
secret survived.

Exit status: 0 the run passed, 1 it failed (the evidence is still written, with ``status = "failed"``),
2 it could not run (no ``nvidia-smi``/``vllm``, a bad commands file, not a git checkout), 3 a secret survived
redaction (nothing archived).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

SCHEMA_ID = "vllm-book/gpu-evidence/1"
SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE|CERT", re.I)
TOKEN_SHAPES = [
    (re.compile(r"\bhf_[A-Za-z0-9]{6,}"), "hf_<redacted>"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), "gh_<redacted>"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), "github_pat_<redacted>"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), "sk-<redacted>"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "AKIA<redacted>"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "xox-<redacted>"),
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), r"\1<redacted>@"),
]
RULE = ("names matching /" + SECRET_NAME.pattern + "/i are written as NAME=<redacted> and their values removed "
        "from every file; hf_…, GitHub, OpenAI, AWS and Slack token shapes and URL credentials are removed everywhere")
DEFAULT_TIMEOUT = 3600


def utc(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Redactor:
    def __init__(self, environ: dict[str, str]) -> None:
        self.names = sorted(k for k in environ if SECRET_NAME.search(k))
        # longest first, so a value that contains another is removed whole
        self.values = sorted({environ[k] for k in self.names if len(environ[k]) >= 8}, key=len, reverse=True)
        self.count = 0

    def __call__(self, text: str) -> str:
        for v in self.values:
            if v in text:
                self.count += text.count(v)
                text = text.replace(v, "<redacted>")
        for rx, repl in TOKEN_SHAPES:
            text, n = rx.subn(repl, text)
            self.count += n
        return text

    def leaks(self, text: str) -> list[str]:
        found = [f"the value of a secret variable ({len(v)} characters)" for v in self.values if v in text]
        found += [f"a string shaped like {rx.pattern!r}" for rx, _ in TOKEN_SHAPES if rx.search(text.replace("<redacted>", ""))]
        return found

    def env_text(self, environ: dict[str, str]) -> str:
        lines = []
        for k in sorted(environ):
            v = "<redacted>" if k in self.names else self(environ[k])
            lines.append(f"{k}={v}".replace("\n", "\\n"))
        return "\n".join(lines) + "\n"


class Run:
    """The evidence directory being written, and the log of every command run."""

    def __init__(self, out: Path, redact: Redactor) -> None:
        self.dir = out
        self.redact = redact
        self.ledger: list[str] = []
        self.commands: list[dict] = []

    def write(self, rel: str, text: str) -> None:
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.redact(text), encoding="utf-8")

    def run(self, argv: list[str], *, cwd: Path | None = None, timeout: float = 120, log: Path | None = None,
            echo: bool = False) -> tuple[int, str, dict]:
        """Run *argv* (no shell); stdout+stderr are redacted line by line, kept in memory and/or in *log*."""
        shown = self.redact(shlex.join(argv))
        start = time.time()
        out_lines: list[str] = []
        timed_out = False
        fh = open(log, "w", encoding="utf-8") if log else None
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace", start_new_session=True)
        except OSError as exc:
            code, out_lines = 127, [f"cannot run {argv[0]}: {exc}\n"]
            if fh:
                fh.write(out_lines[0])
        else:
            deadline = start + timeout

            def _kill(*_):
                nonlocal timed_out
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(max(0.0, deadline - time.time()), _kill)
            timer.start()
            try:
                for line in proc.stdout:  # type: ignore[union-attr]
                    line = self.redact(line)
                    out_lines.append(line)
                    if fh:
                        fh.write(line)
                    if echo:
                        sys.stdout.write(line)
                        sys.stdout.flush()
                code = proc.wait()
            finally:
                timer.cancel()
            if timed_out:
                code = 124
                note = f"[gpu-validation] timed out after {timeout:g}s; process group killed\n"
                out_lines.append(note)
                if fh:
                    fh.write(note)
        finally:
            if fh:
                fh.close()
        dur = round(time.time() - start, 3)
        self.ledger.append(f"{utc(start)}\texit={code}\t{dur:.3f}s\t$ {shown}")
        return code, "".join(out_lines), {"command": shown, "exit_code": code, "timed_out": timed_out,
                                          "started_at": utc(start), "duration_seconds": dur}


def die(msg: str) -> None:
    """Could not run: exit status 2."""
    print(f"error: {msg}", file=sys.stderr)
    raise SystemExit(2)


def read_commands(path: Path) -> list[tuple[int, list[str]]]:
    out = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            die(f"{path}:{n}: {exc}")
        if argv[0] != "vllm":
            die(f"{path}:{n}: only `vllm …` invocations belong in the commands file, got {argv[0]!r}\n"
                             f"    fix: start the line with vllm (no shell syntax, no environment assignments)")
        out.append((n, argv))
    if not out:
        die(f"{path}: no commands")
    return out


def read_pin(root: Path) -> tuple[str, str]:
    text = (root / "vllm-pin.toml").read_text(encoding="utf-8")
    try:
        import tomllib

        v = tomllib.loads(text)["vllm"]
        return v["version"], v["commit"]
    except ImportError:  # Python < 3.11 on the runner
        ver = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        com = re.search(r'^commit\s*=\s*"([0-9a-f]{40})"', text, re.M)
        if not (ver and com):
            die("vllm-pin.toml: cannot read [vllm] version/commit")
        return ver.group(1), com.group(1)


def parse_gpus(csv: str) -> tuple[list[dict], str]:
    devices, drivers = [], set()
    for line in csv.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        mem = re.match(r"\d+", parts[2])
        devices.append({"index": int(parts[0]), "name": parts[1], "memory_total_mib": int(mem.group()) if mem else 0})
        drivers.add(parts[3])
    return devices, ", ".join(sorted(drivers))


def slug(argv: list[str]) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", " ".join(a for a in argv[1:3] if not a.startswith("-")).lower()).strip("-")
    return s or "vllm"


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description="run the GPU validation commands and archive redacted evidence")
    ap.add_argument("--root", default=str(here.parent), help="the book checkout (default: this script's)")
    ap.add_argument("--commands", default=None, help="commands file (default: scripts/gpu-validation.commands)")
    ap.add_argument("--out", default=None, help="where the evidence directory goes (default: <root>/_build/gpu-evidence)")
    ap.add_argument("--id", default=None, help="evidence id (default: gpu-<UTC date-time>-<book commit>)")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("GPU_VALIDATION_TIMEOUT", DEFAULT_TIMEOUT)),
                    help="seconds per command (env GPU_VALIDATION_TIMEOUT)")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    commands_file = Path(args.commands) if args.commands else root / "scripts" / "gpu-validation.commands"
    commands = read_commands(commands_file)
    for tool in ("git", "nvidia-smi", "vllm"):
        if shutil.which(tool) is None:
            print(f"error: {tool} is not on PATH; GPU validation runs on an NVIDIA machine with vLLM installed", file=sys.stderr)
            return 2
    environ = dict(os.environ)
    red = Redactor(environ)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        print(f"error: {root} is not a git checkout ({head.stderr.strip()})", file=sys.stderr)
        return 2
    commit = head.stdout.strip()
    run_id = args.id or f"gpu-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{commit[:10]}"
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{2,79}", run_id):
        print(f"error: evidence id {run_id!r}: use 3–80 of a-z 0-9 . _ - (starting with a letter or digit)", file=sys.stderr)
        return 2
    out_root = Path(args.out) if args.out else root / "_build" / "gpu-evidence"
    evdir = out_root / run_id
    if evdir.exists():
        print(f"error: {evdir} exists; choose another --id", file=sys.stderr)
        return 2
    evdir.mkdir(parents=True)
    r = Run(evdir, red)
    created = utc()
    pin_version, pin_commit = read_pin(root)
    shutil.copyfile(root / "vllm-pin.toml", evdir / "pin.toml")

    _, sha, _ = r.run(["git", "-C", str(root), "rev-parse", "HEAD"])
    _, ref, _ = r.run(["git", "-C", str(root), "rev-parse", "--abbrev-ref", "HEAD"])
    _, status, _ = r.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    r.write("git.txt", f"$ git rev-parse HEAD\n{sha}$ git rev-parse --abbrev-ref HEAD\n{ref}"
                       f"$ git status --porcelain --untracked-files=no\n{status}")
    dirty = bool(status.strip())

    _, smi, _ = r.run(["nvidia-smi"])
    r.write("nvidia-smi.txt", smi)
    _, query, _ = r.run(["nvidia-smi", "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits"])
    r.write("nvidia-smi-query.csv", query)
    devices, driver = parse_gpus(query)
    m = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", smi)
    cuda = m.group(1) if m else ""
    if not driver:
        m = re.search(r"Driver Version:\s*([0-9][0-9.]*)", smi)
        driver = m.group(1) if m else ""

    vcode, vout, _ = r.run(["vllm", "--version"])
    r.write("vllm-version.txt", vout)
    installed = (vout.strip().splitlines() or [""])[-1].strip() if vcode == 0 else ""

    env_text = red.env_text(environ)
    (evdir / "env.txt").write_text(env_text, encoding="utf-8")

    (evdir / "logs").mkdir()
    results = []
    for i, (lineno, cmd) in enumerate(commands, 1):
        log_rel = f"logs/{i:02d}-{slug(cmd)}.log"
        print(f"== [{i}/{len(commands)}] {red(shlex.join(cmd))}", flush=True)
        code, _, rec = r.run(cmd, cwd=root, timeout=args.timeout, log=evdir / log_rel, echo=True)
        results.append({"index": i, **rec, "log": log_rel})
        print(f"== exit {code} after {rec['duration_seconds']}s", flush=True)

    reasons = []
    if installed != pin_version:
        reasons.append(f"installed vLLM {installed or '(unknown)'} is not the pinned {pin_version}")
    if dirty:
        reasons.append("the book checkout has uncommitted changes")
    if not devices:
        reasons.append("nvidia-smi listed no GPU")
    if not (driver and cuda):
        reasons.append("nvidia-smi reported no driver/CUDA version")
    failed = [c for c in results if c["exit_code"] != 0]
    if failed:
        reasons.append(f"{len(failed)} of {len(results)} commands failed (first: {failed[0]['command']}, exit {failed[0]['exit_code']})")

    r.write("commands.txt", "# started (UTC)\texit\tduration\tcommand — every command gpu-validation ran, in order\n"
                            + "\n".join(r.ledger) + "\n")
    files = []
    for p in sorted(evdir.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            files.append({"path": p.relative_to(evdir).as_posix(), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)})
    result = {
        "schema": SCHEMA_ID,
        "id": run_id,
        "created_at": created,
        "finished_at": utc(),
        "status": "failed" if reasons else "passed",
        **({"status_reason": "; ".join(reasons)} if reasons else {}),
        "book": {"commit": commit, "dirty": dirty, "ref": ref.strip()},
        "vllm": {"pin_version": pin_version, "pin_commit": pin_commit, "installed_version": installed,
                 "matches_pin": installed == pin_version},
        "gpu": {"driver_version": driver or "unknown", "cuda_version": cuda or "unknown", "devices": devices},
        "environment": {"redacted_names": red.names, "redaction_rule": RULE, "values_redacted": red.count},
        "commands": results,
        "files": files,
    }
    (evdir / "result.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    # the last line of defence: nothing secret may be archived
    for p in sorted(evdir.rglob("*")):
        if p.is_file():
            leaks = red.leaks(p.read_text(encoding="utf-8", errors="replace"))
            if leaks:
                print(f"error: {p.relative_to(out_root)} still holds {leaks[0]}; nothing archived. Delete {evdir}.",
                      file=sys.stderr)
                return 3
    archive = out_root / f"{run_id}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(evdir, arcname=run_id)
    print(f"evidence: {evdir}\narchive:  {archive}\nstatus:   {result['status']}"
          + (f" ({result['status_reason']})" if reasons else ""))
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
