"""``python -m experiments``: run the experiments, write results and figures, compare with what was there.

    python -m experiments run              # every experiment; writes JSON + SVG; exit 1 if any file changed
    python -m experiments run --check      # the same, but writes nothing (compare only)
    python -m experiments run block_size   # only the named experiments
    python -m experiments figures          # redraw the SVGs from the JSON on disk (no vLLM needed)
    python -m experiments list

A run compares every fresh file with the one on disk before it (in a fresh clone: the committed file)
and prints a short diff of each difference; the exit status is 1 when anything differs or is new, so
``make experiments`` and CI fail until the new results are committed.  Run times go to stderr only:
they are never part of a result.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

from .common import FIGURES_DIR, MEASURED_KEY, RESULTS_DIR, ROOT, check_result, comparable, diff_summary, dumps

EXPERIMENTS = ("block_size", "prefix_cache", "batching", "chunked_prefill", "kv_pressure", "sampler", "trace",
               "structured_output")


def load(name: str):
    return importlib.import_module(f"experiments.exp_{name}")


def figure_bytes(module, result) -> dict[str, bytes]:
    from .plots import render

    return {f"{stem}.svg": render(fig) for stem, fig in module.figure(result).items()}


def compare_and_write(path: Path, fresh: bytes, *, write: bool, is_text: bool) -> str | None:
    old = path.read_bytes() if path.exists() else None
    if old == fresh:
        return None
    if write:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(fresh)
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    if is_text:
        return diff_summary(str(rel), old.decode() if old is not None else None, fresh.decode())
    return f"{rel}: {'new file' if old is None else f'{len(old)} -> {len(fresh)} bytes, content differs'}"


def compare_result(path: Path, result: dict, *, write: bool) -> str | None:
    """Like :func:`compare_and_write` for a result, but its ``measured`` part (wall-clock times) is left
    out of the comparison: when the rest is identical the committed file, with its timings, is kept."""
    if MEASURED_KEY not in result:
        return compare_and_write(path, dumps(result).encode(), write=write, is_text=True)
    old = path.read_text() if path.exists() else None
    if old is not None:
        import json

        if dumps(comparable(json.loads(old))) == dumps(comparable(result)):
            return None
    diff = compare_and_write(path, dumps(result).encode(), write=write, is_text=True)
    if diff and old is not None:  # report what changed apart from the timings
        import json

        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        diff = diff_summary(str(rel), dumps(comparable(json.loads(old))), dumps(comparable(result)))
    return diff


def cmd_run(names: list[str], *, check: bool, results_dir: Path, figures_dir: Path) -> int:
    problems: list[str] = []
    t_all = time.perf_counter()
    for name in names:
        module = load(name)
        t0 = time.perf_counter()
        result = module.run()
        elapsed = time.perf_counter() - t0
        if errors := check_result(result):
            problems.append(f"{name}: bad result: " + "; ".join(errors))
            continue
        diff = compare_result(results_dir / f"{name}.json", result, write=not check)
        if diff:
            problems.append(diff)
        n_fig = 0
        for fname, data in figure_bytes(module, result).items():
            n_fig += 1
            diff = compare_and_write(figures_dir / fname, data, write=not check, is_text=False)
            if diff:
                problems.append(diff)
        print(f"[experiments] {name}: {len(result['series'])} rows, {n_fig} figure(s), "
              f"ran in {elapsed:.1f} s", file=sys.stderr, flush=True)
        for key, value in result.get(MEASURED_KEY, {}).items():
            if key != "machine":
                print(f"[experiments] {name}: measured {key} = {value:.3f} (not compared)", file=sys.stderr)
    print(f"[experiments] {len(names)} experiment(s) in {time.perf_counter() - t_all:.1f} s "
          f"(after the vLLM import)", file=sys.stderr)
    if problems:
        verb = "would change" if check else "changed"
        print(f"[experiments] FAIL: {len(problems)} file(s) {verb} against the committed results:",
              file=sys.stderr)
        for p in problems:
            print(p, file=sys.stderr)
        print("[experiments] a run must reproduce the committed results byte for byte; if the change is "
              "intended, review it and commit experiments/results/ and the figures.", file=sys.stderr)
        return 1
    print("[experiments] OK: results and figures identical to the committed ones", file=sys.stderr)
    return 0


def cmd_figures(names: list[str], figures_dir: Path, results_dir: Path) -> int:
    import json

    for name in names:
        result = json.loads((results_dir / f"{name}.json").read_text())
        for fname, data in figure_bytes(load(name), result).items():
            (figures_dir / fname).write_bytes(data)
            print(f"wrote {figures_dir / fname}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run experiments, write and compare results")
    run.add_argument("names", nargs="*", metavar="NAME")
    run.add_argument("--check", action="store_true", help="compare only, write nothing")
    run.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    run.add_argument("--figures-dir", type=Path, default=FIGURES_DIR)
    fig = sub.add_parser("figures", help="redraw figures from the JSON results")
    fig.add_argument("names", nargs="*", metavar="NAME")
    fig.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    fig.add_argument("--figures-dir", type=Path, default=FIGURES_DIR)
    sub.add_parser("list", help="list the experiments")
    args = ap.parse_args(argv)
    if args.cmd == "list":
        for name in EXPERIMENTS:
            print(f"{name}\t{load(name).TITLE}")
        return 0
    names = list(args.names) or list(EXPERIMENTS)
    if unknown := [n for n in names if n not in EXPERIMENTS]:
        ap.error(f"unknown experiment(s) {', '.join(unknown)}; known: {', '.join(EXPERIMENTS)}")
    if args.cmd == "figures":
        return cmd_figures(names, args.figures_dir, args.results_dir)
    return cmd_run(names, check=args.check, results_dir=args.results_dir, figures_dir=args.figures_dir)


if __name__ == "__main__":
    sys.exit(main())
