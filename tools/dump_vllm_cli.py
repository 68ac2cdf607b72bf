#!/usr/bin/env python3
"""Dump the argument parsers of the installed vLLM as JSON (``make cli-spec``).

Runs inside the vLLM environment (``.venv-vllm``, ``pip install vllm==<pin>``), never inside the book's
``.venv``: it imports vLLM.  The book's ``make validate`` reads the JSON it writes
(``ext/vllm_book/data/vllm-cli-<version>.json``) and checks the command lines of the chapters against it,
so validate needs no 7 GB install.

How the parsers are obtained: the real entry points build them.  ``FlexibleArgumentParser.parse_args`` is
replaced by a function that raises with the parser it was called on, then

* ``vllm.entrypoints.cli.main.main()`` runs with ``sys.argv = ["vllm", "bench"]`` (``vllm bench`` builds its
  nested subparsers only when ``bench`` is the first positional argument), which yields the whole ``vllm``
  tree: ``serve``, ``bench <type>``, ``chat``, ``complete``, ``launch``, ``run-batch``, ``collect-env``…;
* each module in ``MODULES`` runs as ``__main__`` (``python -m <module>``) and yields its parser.

No parser is rebuilt by hand, so what the JSON says is what the pinned release parses.  vLLM cannot infer a
device on a machine without a GPU; the CPU platform is set first (``vllm.platforms._current_platform``, a
private name of v0.26.0 — see ``/work/shared/notes/vllm-on-cpu.md`` and ``docs/decisions.md``).

The output is deterministic: keys sorted, options sorted by their first option string, defaults reduced to
JSON values (anything else by ``repr`` with machine paths replaced), no timestamps.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import io
import json
import os
import runpy
import sys
from pathlib import Path

SCHEMA = 1
#: ``python -m`` modules with a ``__main__`` that builds a parser (only those that exist at the pin are dumped)
MODULES = (
    "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.openai.run_batch",
)  # vllm.entrypoints.grpc_server needs the vllm[grpc] extra (smg-grpc-servicer): not dumped


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__("parser captured")
        self.parser = parser


def _set_cpu_platform() -> None:
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    if not hasattr(platforms, "_current_platform"):
        raise SystemExit("vllm.platforms has no _current_platform: the CPU-platform override of the dumper "
                         "no longer fits this vLLM (see tools/dump_vllm_cli.py)")
    platforms._current_platform = CpuPlatform()


@contextlib.contextmanager
def _capturing():
    from vllm.utils import argparse_utils

    cls = argparse_utils.FlexibleArgumentParser
    saved = cls.parse_args

    def capture(self, args=None, namespace=None):  # noqa: ARG001
        raise _Captured(self)

    cls.parse_args = capture
    saved_argv = sys.argv[:]
    try:
        yield
    finally:
        cls.parse_args = saved
        sys.argv = saved_argv


def _run_capture(fn) -> argparse.ArgumentParser:
    with _capturing():
        try:
            fn()
        except _Captured as c:
            return c.parser
    raise RuntimeError(f"{fn} returned without calling FlexibleArgumentParser.parse_args")


# ---------------------------------------------------------------------------- serialisation

_HOME_PATHS: tuple[str, ...] = ()


def _scrub(s: str) -> str:
    for p in _HOME_PATHS:
        if p and p in s:
            s = s.replace(p, "<path>")
    return s


def jsonable(v):
    """A JSON value for an argparse default or choice (deterministic; no machine paths)."""
    if v is None or isinstance(v, (bool, int)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    if isinstance(v, str):
        return _scrub(v)
    if isinstance(v, enum.Enum):
        return _scrub(str(v.value) if isinstance(v.value, (str, int)) else v.name)
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted((jsonable(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, Path):
        return _scrub(str(v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return f"<{type(v).__name__}>"
    if isinstance(v, type):
        return f"<class {v.__name__}>"
    return _scrub(f"<{type(v).__name__}>")


def _action_kind(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    for name, cls in sorted(parser._registries.get("action", {}).items(), key=lambda kv: str(kv[0])):
        if name is not None and type(action) is cls:
            return str(name)
    return type(action).__name__


def _config_class(tp):
    """The config dataclass a JSON-valued vLLM argument parses into (``parse_dataclass`` in arg_utils)."""
    seen = 0
    while tp is not None and seen < 4:
        seen += 1
        defaults = getattr(tp, "__defaults__", None) or ()
        for d in defaults:
            if isinstance(d, type) and dataclasses.is_dataclass(d):
                return d
        cells = getattr(tp, "__closure__", None) or ()
        inner = None
        for c in cells:
            try:
                val = c.cell_contents
            except ValueError:
                continue
            if isinstance(val, type) and dataclasses.is_dataclass(val):
                return val
            if callable(val) and not isinstance(val, type):
                inner = val
        tp = inner
    return None


#: value converters the checker re-implements (int("8k") fails, human_readable_int("8k") is 8000, …)
CHECKED_TYPES = frozenset({"int", "float", "human_readable_int", "human_readable_int_or_auto", "loads"})


def _type_chain(tp) -> list[str]:
    """Names of *tp* and of the converters it wraps (``optional_type(parse_type(json.loads))`` → …)."""
    chain: list[str] = []
    while tp is not None and len(chain) < 5:
        chain.append(getattr(tp, "__name__", None) or type(tp).__name__)
        inner = None
        for c in getattr(tp, "__closure__", None) or ():
            try:
                v = c.cell_contents
            except ValueError:
                continue
            if callable(v) and not (isinstance(v, type) and dataclasses.is_dataclass(v)):
                inner = v
                break
        tp = inner
    return chain


def _type_name(tp) -> str | None:
    if tp is None:
        return None
    name = getattr(tp, "__name__", None) or type(tp).__name__
    return name


def dump_action(parser: argparse.ArgumentParser, a: argparse.Action) -> dict:
    kind = _action_kind(parser, a)
    nargs = a.nargs
    if nargs is argparse.SUPPRESS:
        nargs = "==SUPPRESS=="
    out: dict = {
        "action": kind,
        "dest": a.dest,
        "nargs": nargs,
        "takes_value": a.nargs != 0,
        "required": bool(a.required),
        "default": "==SUPPRESS==" if a.default is argparse.SUPPRESS else jsonable(a.default),
    }
    if a.option_strings:
        out["option_strings"] = list(a.option_strings)
    if a.choices is not None and not isinstance(a.choices, dict):
        # sorted: some choices are built from a set (their order changes with the hash seed)
        out["choices"] = sorted((jsonable(c) for c in a.choices), key=lambda x: json.dumps(x, sort_keys=True))
    if a.const is not None:
        out["const"] = jsonable(a.const)
    tname = _type_name(a.type)
    if tname:
        out["type"] = tname
        chain = _type_chain(a.type)
        if chain[-1] in CHECKED_TYPES:
            out["value_type"] = chain[-1]
            if "_optional_type" in chain:
                out["none_ok"] = True
    if isinstance(a, argparse.BooleanOptionalAction):
        pos = [s for s in a.option_strings if not s.startswith("--no-")]
        neg = [s for s in a.option_strings if s.startswith("--no-")]
        out["boolean_pair"] = {"true": pos, "false": neg}
    cfg = _config_class(a.type)
    if cfg is not None:
        out["json_config"] = cfg.__name__
        out["json_fields"] = sorted(f.name for f in dataclasses.fields(cfg))
    elif tname in ("_parse_type", "union_dict_and_str", "loads") or (tname == "_optional_type" and "json" in repr(a.type.__closure__)):
        out["json_value"] = True
    if a.help is argparse.SUPPRESS:
        out["hidden"] = True
    return out


def dump_parser(parser: argparse.ArgumentParser, prog: str) -> dict:
    options, positionals, subcommands = [], [], {}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            by_parser: dict[int, list[str]] = {}
            for name, sp in a.choices.items():
                by_parser.setdefault(id(sp), []).append(name)
            for names in by_parser.values():
                sp = a.choices[names[0]]
                d = dump_parser(sp, f"{prog} {names[0]}")
                d["aliases"] = names[1:]
                subcommands[names[0]] = d
            positionals.append({"dest": a.dest, "subcommand": True, "required": bool(a.required)})
        elif a.option_strings:
            options.append(dump_action(parser, a))
        else:
            d = dump_action(parser, a)
            positionals.append(d)
    options.sort(key=lambda o: o["option_strings"][0])
    out = {
        "prog": prog,
        "allow_abbrev": bool(parser.allow_abbrev),
        "prefix_chars": parser.prefix_chars,
        "flexible": type(parser).__name__ == "FlexibleArgumentParser",
        "options": options,
        "positionals": positionals,
    }
    if subcommands:
        out["subcommands"] = dict(sorted(subcommands.items()))
    return out


def _mark_varying(a, b):
    """*a* with every value that differs in *b* (a second build in the same process) replaced by a marker:
    some defaults are random (``vllm bench serve --request-id-prefix``: a fresh uuid)."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: _mark_varying(a[k], b[k]) for k in a}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_mark_varying(x, y) for x, y in zip(a, b)]
    return a if a == b else "<varies per run>"


def build() -> dict:
    global _HOME_PATHS
    import vllm

    _HOME_PATHS = tuple(sorted({str(Path.home()), os.getcwd(), sys.prefix, str(Path(vllm.__file__).parent.parent),
                                "/tmp"}, key=len, reverse=True))
    _set_cpu_platform()
    import vllm.entrypoints.cli.main as cli_main

    def run_vllm():
        sys.argv = ["vllm", "bench"]
        cli_main.main()

    programs = {"vllm": _mark_varying(dump_parser(_run_capture(run_vllm), "vllm"),
                                      dump_parser(_run_capture(run_vllm), "vllm"))}
    import importlib.util

    for mod in MODULES:
        if importlib.util.find_spec(mod) is None:
            continue

        def run_mod(mod=mod):
            sys.argv = [mod]
            runpy.run_module(mod, run_name="__main__", alter_sys=False)

        programs[f"python -m {mod}"] = _mark_varying(dump_parser(_run_capture(run_mod), f"python -m {mod}"),
                                                     dump_parser(_run_capture(run_mod), f"python -m {mod}"))

    return {
        "schema": SCHEMA,
        "vllm_version": vllm.__version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "generated_by": "tools/dump_vllm_cli.py (make cli-spec)",
        "programs": programs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write here (default: stdout; with --pin: the path validate reads)")
    ap.add_argument("--expect-version", help="fail unless the installed vLLM is this version")
    ap.add_argument("--pin", metavar="vllm-pin.toml",
                    help="take --expect-version from the pin and write ext/vllm_book/data/vllm-cli-<version>.json "
                         "beside it (unless --out)")
    ap.add_argument("--stdout", action="store_true", help="print the JSON (with --pin: instead of writing it)")
    args = ap.parse_args(argv)
    if args.pin:
        import tomllib

        pin_path = Path(args.pin)
        version = tomllib.loads(pin_path.read_text(encoding="utf-8"))["vllm"]["version"]
        args.expect_version = args.expect_version or version
        if not args.out and not args.stdout:
            args.out = str(pin_path.resolve().parent / "ext" / "vllm_book" / "data" / f"vllm-cli-{version}.json")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    # vLLM logs to stdout/stderr while building; keep stdout clean for the JSON
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        data = build()
    if args.expect_version and data["vllm_version"] != args.expect_version:
        print(f"error: the installed vLLM is {data['vllm_version']}, the pin is {args.expect_version}; "
              f"reinstall the vLLM environment (make .venv-vllm/.installed)", file=sys.stderr)
        return 2
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        if args.pin:  # one spec: the pinned release's (a refresh leaves the old one behind otherwise)
            for old in Path(args.out).parent.glob("vllm-cli-*.json"):
                if old.name != Path(args.out).name:
                    old.unlink()
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out} ({len(text.encode()) // 1024} KiB, vLLM {data['vllm_version']})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
