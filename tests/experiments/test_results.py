"""The experiments' harness without vLLM: determinism helpers, the result schema, the committed files."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from experiments import common
from experiments.__main__ import EXPERIMENTS

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "experiments" / "results"
FIGURES = REPO / "source" / "07-hands-on" / "figures"


def _pin_version() -> str:
    with open(REPO / "vllm-pin.toml", "rb") as f:
        return tomllib.load(f)["vllm"]["version"]


def _minimal(**overrides):
    result = {"name": "x", "title": "标题", "vllm": "0.26.0", "unit": common.UNIT, "setup": {},
              "series": [{"steps": 3, "hit_rate": 0.5}], "notes": ["n"]}
    result.update(overrides)
    return result


def test_dumps_is_canonical():
    text = common.dumps({"b": [0.1 + 0.2, (1, 2)], "a": {"z": -0.0, 3: "中文"}, "c": 2 / 3})
    assert text == ('{\n  "a": {\n    "3": "中文",\n    "z": 0.0\n  },\n  "b": [\n    0.3,\n    [\n      1,\n'
                    '      2\n    ]\n  ],\n  "c": 0.6667\n}\n')
    assert common.dumps(json.loads(text)) == text  # a fixed point: re-dumping changes nothing
    with pytest.raises(ValueError):
        common.dumps({"x": float("nan")})
    with pytest.raises(TypeError):
        common.dumps({"x": object()})


def test_ratio():
    assert common.ratio(1, 3) == 0.3333
    assert common.ratio(5, 0) == 0.0


def test_check_result_accepts_and_rejects():
    assert common.check_result(_minimal()) == []
    assert "missing key 'series'" in common.check_result({k: v for k, v in _minimal().items() if k != "series"})
    assert any("not time" in p for p in common.check_result(_minimal(series=[{"latency_seconds": 1.0}])))
    assert any("flat" in p for p in common.check_result(_minimal(series=[{"a": {"b": 1}}])))
    assert any("path" in p for p in common.check_result(_minimal(setup={"model": "/tmp/model"})))
    assert any("unit" in p for p in common.check_result(_minimal(unit="seconds")))
    assert any("non-empty" in p for p in common.check_result(_minimal(series=[])))


def test_measured_is_checked_and_left_out_of_the_comparison(tmp_path):
    from experiments.__main__ import compare_result

    machine = {"cpu_count": 2}
    ok = _minimal(measured={"compile_ms": 3.2, "machine": machine})
    assert common.check_result(ok) == []
    assert any("machine" in p for p in common.check_result(_minimal(measured={"compile_ms": 3.2})))
    assert any("non-empty" in p for p in common.check_result(_minimal(measured={})))
    assert common.comparable(ok) == _minimal()
    path = tmp_path / "x.json"
    path.write_text(common.dumps(ok))
    # another timing, the rest identical: no difference, and the committed timing is kept
    assert compare_result(path, _minimal(measured={"compile_ms": 9.9, "machine": machine}), write=True) is None
    assert json.loads(path.read_text())["measured"]["compile_ms"] == 3.2
    # a change outside measured is reported (without the timings in the diff) and written
    changed = _minimal(series=[{"steps": 4, "hit_rate": 0.5}], measured={"compile_ms": 9.9, "machine": machine})
    diff = compare_result(path, changed, write=True)
    assert diff and "+      \"steps\": 4" in diff and "compile_ms" not in diff
    assert json.loads(path.read_text()) == common.normalize(changed)


def test_diff_summary_is_short_and_names_the_file():
    old = common.dumps(_minimal())
    new = common.dumps(_minimal(series=[{"steps": 4, "hit_rate": 0.5}]))
    summary = common.diff_summary("experiments/results/x.json", old, new)
    assert summary.startswith("experiments/results/x.json: 2 changed lines")
    assert '-      "steps": 3' in summary and '+      "steps": 4' in summary
    assert "no committed file" in common.diff_summary("y.json", None, new)
    long = common.diff_summary("z", "a\n" * 100, "b\n" * 100, max_lines=5)
    assert "more diff lines" in long


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_committed_result_is_valid_and_canonical(name):
    path = RESULTS / f"{name}.json"
    assert path.is_file(), f"{path.name} not committed: run `make experiments` and commit"
    text = path.read_text()
    result = json.loads(text)
    assert common.check_result(result) == []
    assert result["name"] == name
    assert result["vllm"] == _pin_version(), "results come from the pinned vLLM: rerun make experiments"
    assert common.dumps(result) == text, "committed result is not in canonical form"
    assert not re.search(r"20\d\d-\d\d-\d\dT", text), "no timestamps in results"


def test_every_result_file_is_an_experiment():
    assert sorted(p.stem for p in RESULTS.glob("*.json")) == sorted(EXPERIMENTS)


def test_figures_are_stable_and_epub_valid():
    svgs = sorted(FIGURES.glob("*.svg"))
    assert len(svgs) >= 5
    for svg in svgs:
        data = svg.read_bytes()
        assert b"<!DOCTYPE" not in data, svg.name  # EPUB 3 forbids the DTD's external identifiers
        assert not re.search(rb"<path (?![^>]*\bd=)[^>]*>", data), f"{svg.name}: <path> without d"
        assert b"<dc:date>" not in data, f"{svg.name}: a timestamp"
        assert b"<text" not in data, f"{svg.name}: text must be paths (svg.fonttype='path')"
        assert b"/work/" not in data and b"/tmp/" not in data


def test_fix_svg():
    from experiments.plots import fix_svg

    raw = (b'<?xml version="1.0"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"\n'
           b'  "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">\n<svg>'
           b'<path id="F-1" transform="scale(0.015625)"/><path id="F-2" d="M 0 0" transform="x"/></svg>')
    fixed = fix_svg(raw)
    assert b"DOCTYPE" not in fixed
    assert b'<path id="F-1" d="" transform="scale(0.015625)"/>' in fixed
    assert b'<path id="F-2" d="M 0 0" transform="x"/>' in fixed
    assert fix_svg(fixed) == fixed


def test_requirements_are_hash_pinned_to_the_pin():
    text = (REPO / "experiments" / "requirements-vllm.txt").read_text()
    entries = re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+) \\\n    --hash=sha256:([0-9a-f]{64})$", text, re.M)
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#") and not ln.startswith("    ")]
    assert len(entries) == len(lines) > 100, "every requirement is name==version with one sha256"
    versions = {name: version for name, version, _ in entries}
    assert versions["vllm"] == _pin_version()
    assert "matplotlib" in versions and "torch" in versions


def test_html_build_never_needs_the_vllm_environment():
    """`make html` uses the committed results and figures only."""
    for path in [REPO / "conf.py", *sorted((REPO / "ext").rglob("*.py"))]:
        src = path.read_text()
        # no path into the vLLM environment (a message that names it, e.g. a fix line, is fine)
        assert not re.search(r"""["']\.venv-vllm|\.venv-vllm/""", src), path
        assert not re.search(r"^\s*(from|import) experiments\b", src, re.M), path
    make = (REPO / "Makefile").read_text()
    html_rule = re.search(r"^html:([^\n]*)", make, re.M).group(1)
    prereqs = re.search(r"^PREREQS :=([^\n]*)", make, re.M).group(1)
    for rule in (html_rule, prereqs):
        assert "VLLM_VENV" not in rule and "experiments" not in rule
    assert re.search(r"^experiments: \$\(VLLM_VENV\)/\.installed ## ", make, re.M), "make help lists it"
