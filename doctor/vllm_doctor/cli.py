"""``vllm-doctor``: the command line.

Exit status (stable, for scripts and agents):

* 0 — healthy / resolved / the phase completed;
* 1 — an incident was found, or verification says not resolved / unstable;
* 2 — usage error, unreadable source, bad configuration;
* 3 — insufficient evidence (the tool refuses to guess).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vllm_doctor import VLLM_PIN, __version__
from vllm_doctor import render as R
from vllm_doctor.config import load_config
from vllm_doctor.diagnose import diagnose
from vllm_doctor.errors import DoctorError
from vllm_doctor.pipeline import collect, open_source, query_context, run, verify_samples
from vllm_doctor.plans import make_plan
from vllm_doctor.playbooks import BY_ID, EXTRA_DOCS, playbooks_dir
from vllm_doctor.report import render_report
from vllm_doctor.rules import table_markdown
from vllm_doctor.selector import Selector, check_duration
from vllm_doctor.signals import all_queries
from vllm_doctor.triage import triage
from vllm_doctor.verify import verify

EXIT_OK, EXIT_INCIDENT, EXIT_ERROR, EXIT_INSUFFICIENT = 0, 1, 2, 3
_VERDICT_EXIT = {"healthy": EXIT_OK, "incident": EXIT_INCIDENT, "insufficient-evidence": EXIT_INSUFFICIENT}
_VERIFY_EXIT = {"resolved": EXIT_OK, "not-resolved": EXIT_INCIDENT, "unstable": EXIT_INCIDENT,
                "insufficient-evidence": EXIT_INSUFFICIENT}


def _parse_at(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DoctorError(f"--at {text!r}: expected unix seconds or ISO 8601 (2026-01-31T12:00:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _common(p: argparse.ArgumentParser, data: bool = True) -> None:
    g = p.add_argument_group("configuration")
    g.add_argument("--config", action="append", type=Path, default=[], metavar="FILE",
                   help="thresholds TOML merged over the shipped default (repeatable)")
    g.add_argument("--no-default-config", action="store_true",
                   help="do not load the shipped default thresholds (missing ones make rules undecidable)")
    g.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one threshold, e.g. --set preempt.rate_per_s=0.5")
    g.add_argument("--window", help="PromQL range for rates (config window.range)")
    g.add_argument("--baseline-offset", help="offset of the baseline window (config window.baseline_offset)")
    g.add_argument("--restart-lookback", help="range for restart detection (config window.restart_lookback)")
    g.add_argument("--selector", default="", help='label matchers scoping every query, e.g. job="vllm"')
    g.add_argument("--format", choices=("text", "json"), default="text")
    if not data:
        return
    s = p.add_argument_group("signal source (exactly one)")
    s.add_argument("--prometheus", metavar="URL", help="Prometheus base URL, e.g. http://127.0.0.1:9090")
    s.add_argument("--fixture", type=Path, metavar="FILE", help="a vllm-doctor JSON fixture (dry run)")
    s.add_argument("--timeout", type=float, default=10.0, help="HTTP timeout in seconds (default 10)")
    s.add_argument("--vllm-url", help="optional vLLM server URL; probe reads /version and /health (GET only)")
    s.add_argument("--at", help="evaluate at this time (unix seconds or ISO 8601) instead of now")


def _playbook_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--playbook", choices=sorted(BY_ID), help="default: the playbook triage picks")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="vllm-doctor",
        description=f"Read-only incident triage for vLLM v{VLLM_PIN} services (Prometheus or a JSON fixture).",
        epilog="exit status: 0 ok/healthy/resolved, 1 incident/not resolved, 2 error, 3 insufficient evidence",
    )
    ap.add_argument("--version", action="version", version=f"vllm-doctor {__version__} (vLLM v{VLLM_PIN} metrics)")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    helps = {
        "probe": "1. what is reachable: Prometheus build info, vLLM metrics present, targets, cache config",
        "collect": "2. collect the golden signals (and derived ratios)",
        "triage": "3. run the decision table; name the playbook, its evidence, confidence, alternatives",
        "diagnose": "4. deep-dive read-only queries and checks for one playbook",
        "plan": "5. print the remediation plan (never executed; mutating steps need approval)",
        "verify": "6. re-check the symptom over repeated samples",
        "report": "7. write the Markdown incident report (runs phases 1-6)",
        "run": "all seven phases; prints the report",
    }
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text)
        _common(p)
        if name in ("diagnose", "plan", "verify", "report", "run"):
            _playbook_arg(p)
        if name in ("verify", "report", "run"):
            p.add_argument("--samples", type=int, help="number of samples (config verify.samples)")
            p.add_argument("--interval", help="time between samples (config verify.interval)")
        if name == "verify":
            p.add_argument("--history", action="store_true",
                           help="sample the past (instant queries at now - k*interval) instead of waiting")
        if name in ("report", "run"):
            p.add_argument("--verify-mode", choices=("history", "live", "skip"), default="history",
                           help="how the pipeline verifies (default history: no waiting)")
            p.add_argument("--output", "-o", type=Path, help="write the report here instead of stdout")
        if name == "triage":
            p.add_argument("--verbose", "-v", action="store_true", help="also list rules that did not match")
    p = sub.add_parser("rules", help="print the triage decision table (Markdown)")
    p = sub.add_parser("playbook", help="print one playbook (Markdown) from doctor/playbooks/")
    p.add_argument("id", choices=sorted(BY_ID) + [d.removesuffix(".md") for d in EXTRA_DOCS])
    p = sub.add_parser("queries", help="print every PromQL query vllm-doctor can send")
    _common(p, data=False)
    return ap


def _config(args: argparse.Namespace) -> Any:
    overrides = list(args.set)
    for flag, key in (("window", "window.range"), ("baseline_offset", "window.baseline_offset"),
                      ("restart_lookback", "window.restart_lookback"), ("interval", "verify.interval")):
        val = getattr(args, flag, None)
        if val:
            check_duration(val, f"--{flag.replace('_', '-')}")
            overrides.append(f"{key}={val}")
    samples = getattr(args, "samples", None)
    if samples is not None:
        overrides.append(f"verify.samples={samples}")
    return load_config(args.config, overrides, use_defaults=not args.no_default_config)


def _emit(args: argparse.Namespace, text: str, data: dict[str, Any]) -> None:
    if args.format == "json":
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print(text)


def _dispatch(args: argparse.Namespace) -> int:
    if args.cmd == "rules":
        print(table_markdown(), end="")
        return EXIT_OK
    if args.cmd == "playbook":
        folder = playbooks_dir()
        path = folder / f"{args.id}.md" if folder else None
        if path is None or not path.is_file():
            raise DoctorError(f"playbook {args.id} not found (looked in {folder or 'no playbooks folder'}); "
                              "run from a checkout of the book or set VLLM_DOCTOR_PLAYBOOKS=/path/to/doctor/playbooks")
        print(path.read_text(encoding="utf-8"), end="")
        return EXIT_OK
    config = _config(args)
    selector = Selector.parse(args.selector)
    if args.cmd == "queries":
        qs = all_queries(query_context(config, selector))
        _emit(args, "\n".join(f"{k}: {v}" for k, v in qs.items()), qs)
        return EXIT_OK
    source = open_source(config, prometheus=args.prometheus, fixture=args.fixture, selector=selector,
                         timeout=args.timeout, vllm_url=args.vllm_url)
    at = _parse_at(args.at)

    if args.cmd in ("report", "run"):
        result = run(source, config, at=at, playbook=args.playbook, verify_mode=args.verify_mode)
        text = render_report(result)
        if args.output:
            args.output.write_text(text, encoding="utf-8")
            print(f"report written to {args.output}: {result.triage.summary()}")
        elif args.format == "json":
            _emit(args, "", {"triage": R.triage_json(result.triage), "report_markdown": text})
        else:
            print(text, end="")
        return _VERDICT_EXIT[result.triage.verdict]

    probe = source.probe()
    if args.cmd == "probe":
        _emit(args, R.probe_text(probe), R.probe_json(probe))
        if not probe.reachable:
            return EXIT_ERROR
        return EXIT_OK if probe.ok else EXIT_INSUFFICIENT
    if not probe.reachable:
        raise DoctorError("probe failed: " + "; ".join(probe.problems or ["source unreachable"]))

    ev = collect(source, config, probe, at)
    if args.cmd == "collect":
        _emit(args, R.signals_text(ev), R.evidence_json(ev))
        return EXIT_INSUFFICIENT if ev.missing_golden() else EXIT_OK

    tri = triage(ev)
    if args.cmd == "triage":
        _emit(args, R.triage_text(tri, args.verbose), R.triage_json(tri))
        return _VERDICT_EXIT[tri.verdict]

    playbook = args.playbook or (tri.primary.rule.playbook if tri.primary else None)
    if playbook is None:
        msg = f"no playbook given and triage found none ({tri.summary()}); pass --playbook"
        _emit(args, msg, {"error": msg, "triage": R.triage_json(tri)})
        return _VERDICT_EXIT[tri.verdict] if tri.verdict != "healthy" else EXIT_OK
    if args.cmd == "diagnose":
        d = diagnose(source, playbook, at)
        _emit(args, R.diag_text(d), R.diag_json(d))
        return EXIT_OK
    if args.cmd == "plan":
        p = make_plan(playbook, probe.cache_config)
        _emit(args, R.plan_text(p), R.plan_json(p))
        return EXIT_OK
    if args.cmd == "verify":
        samples = verify_samples(source, config, "history" if args.history else "live")
        v = verify(playbook, samples, config, probe.exported)
        _emit(args, R.verify_text(v), R.verify_json(v))
        return _VERIFY_EXIT[v.outcome]
    raise AssertionError(args.cmd)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except DoctorError as exc:
        print(f"vllm-doctor: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("vllm-doctor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `vllm-doctor report ... | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (keep the interpreter's final flush quiet)
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
