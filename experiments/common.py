"""Determinism helpers and the result schema of the experiments.  No vLLM, no matplotlib imports here.

Every experiment returns a *result*: a JSON object with

``name``        the experiment's module name (``block_size``, ...)
``title``       a one-line Chinese title (the figure's title)
``vllm``        the pinned vLLM version the numbers come from
``unit``        always ``"scheduler steps and tokens"``: no experiment measures seconds
``setup``       the fixed inputs (workload, budgets, block counts)
``series``      the measured rows, a list of flat objects (one per parameter point)
``notes``       short English notes for the chapter writer (what to look at)
``measured``    optional: wall-clock measurements of the run (e.g. a grammar's compile time) and the
                machine they were taken on.  The only part of a result that may hold times; it is not
                reproducible, so :func:`comparable` leaves it out when a run is compared with the
                committed file.

:func:`dumps` writes it byte-stable: sorted keys, two-space indent, floats rounded to
:data:`FLOAT_DIGITS` decimals (so ``0.1 + 0.2`` never shows up as ``0.30000000000000004``), a
final newline, no timestamps and no paths.  :func:`check_result` validates the schema;
:func:`diff_summary` says in a few lines how a fresh run differs from the committed file.
"""

from __future__ import annotations

import difflib
import json
import math
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "experiments" / "results"
FIGURES_DIR = ROOT / "source" / "07-hands-on" / "figures"
UNIT = "scheduler steps and tokens"
FLOAT_DIGITS = 4
REQUIRED_KEYS = ("name", "title", "vllm", "unit", "setup", "series", "notes")
MEASURED_KEY = "measured"


def normalize(value: Any) -> Any:
    """Return *value* with floats rounded, tuples as lists and dict keys as strings (recursively)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite float in a result: {value!r}")
        rounded = round(value, FLOAT_DIGITS)
        return 0.0 if rounded == 0 else rounded  # no "-0.0"
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    raise TypeError(f"not JSON-serialisable in a result: {type(value).__name__}")


def dumps(result: dict[str, Any]) -> str:
    """The canonical bytes of a result (as text)."""
    return json.dumps(normalize(result), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def ratio(num: float, den: float) -> float:
    """``num / den`` rounded the canonical way; 0.0 when ``den`` is 0."""
    return round(num / den, FLOAT_DIGITS) if den else 0.0


def check_result(result: dict[str, Any]) -> list[str]:
    """Schema problems of *result* (empty when it is well-formed)."""
    problems = [f"missing key {k!r}" for k in REQUIRED_KEYS if k not in result]
    if problems:
        return problems
    if result["unit"] != UNIT:
        problems.append(f"unit must be {UNIT!r}, not {result['unit']!r}")
    if not isinstance(result["setup"], dict):
        problems.append("setup must be an object")
    series = result["series"]
    if not isinstance(series, list) or not series:
        problems.append("series must be a non-empty list")
    else:
        for i, row in enumerate(series):
            if not isinstance(row, dict):
                problems.append(f"series[{i}] must be an object")
                continue
            for key, val in row.items():
                if isinstance(val, dict):
                    problems.append(f"series[{i}].{key}: rows are flat (no nested objects)")
                if any(word in key.lower() for word in ("second", "latency_s", "time_s", "_ms")):
                    problems.append(f"series[{i}].{key}: experiments count steps and tokens, not time")
    if MEASURED_KEY in result:
        measured = result[MEASURED_KEY]
        if not isinstance(measured, dict) or not measured:
            problems.append("measured must be a non-empty object")
        elif not isinstance(measured.get("machine"), dict):
            problems.append("measured needs a 'machine' object: a timing means nothing without it")
    if not isinstance(result["notes"], list) or not all(isinstance(n, str) for n in result["notes"]):
        problems.append("notes must be a list of strings")
    text = json.dumps(result, default=str)
    for bad in ("/work/", "/tmp/", "/root/", "/home/"):
        if bad in text:
            problems.append(f"result contains a path ({bad}…); results must be machine-independent")
    return problems


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """*result* without its ``measured`` part: what must be identical from run to run."""
    return {k: v for k, v in result.items() if k != MEASURED_KEY}


def diff_summary(name: str, committed: str | None, fresh: str, max_lines: int = 20) -> str:
    """A short unified diff between the committed text and a fresh run's text."""
    if committed is None:
        return f"{name}: no committed file (a new experiment? run `make experiments` and commit)"
    lines = list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(),
                                      f"committed/{name}", f"fresh/{name}", lineterm="", n=1))
    changed = sum(1 for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    shown = lines[:max_lines]
    more = [f"... ({len(lines) - max_lines} more diff lines)"] if len(lines) > max_lines else []
    return "\n".join([f"{name}: {changed} changed lines", *shown, *more])


def series_column(result: dict[str, Any], key: str) -> list[Any]:
    """The values of *key* over the series rows (for figures and tests)."""
    return [row[key] for row in result["series"]]
