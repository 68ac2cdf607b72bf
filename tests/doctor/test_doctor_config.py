"""Thresholds configuration and label selectors."""

from __future__ import annotations

from pathlib import Path

import pytest
from vllm_doctor import metrics as M
from vllm_doctor.config import SCHEMA, default_text, load_config, parse_toml
from vllm_doctor.errors import ConfigError
from vllm_doctor.selector import Selector, check_duration, duration_seconds


def test_shipped_default_covers_the_schema() -> None:
    values = parse_toml(default_text(), "default")
    assert set(values) == set(SCHEMA), "thresholds.toml and config.SCHEMA drifted apart"
    assert "起点" in default_text() and "starting points" in default_text()


def test_file_then_set_override(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('[preempt]\nrate_per_s = 2\n[window]\nrange = "1m"\n', encoding="utf-8")
    cfg = load_config([f], ["preempt.rate_per_s=3.5"])
    assert cfg.number("preempt.rate_per_s") == 3.5
    assert cfg.get("window.range") == "1m"
    assert cfg.number("preempt.kv_usage_high") == 0.9  # still from the default
    assert cfg.sources[-1].startswith("--set")


def test_no_defaults_leaves_keys_absent(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text("[preempt]\nrate_per_s = 1\n", encoding="utf-8")
    cfg = load_config([f], use_defaults=False)
    assert cfg.number("preempt.rate_per_s") == 1.0
    assert cfg.number("preempt.kv_usage_high") is None


@pytest.mark.parametrize("text,fragment", [
    ("[preempt]\nrate_per_sec = 1\n", "unknown key"),
    ("[preempt]\nrate_per_s = -1\n", "must not be negative"),
    ("[preempt]\nrate_per_s = true\n", "boolean"),
    ("[preempt]\nrate_per_s = 'fast'\n", "must be a number"),
    ("[window]\nrange = '5 minutes'\n", "not a PromQL duration"),
    ("[verify]\nmin_clean_samples = 0\n", "positive integer"),
    ("preempt = 1\n", "must be a [table]"),
    ("[preempt\n", "not valid TOML"),
])
def test_bad_config_is_rejected(tmp_path: Path, text: str, fragment: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=None) as exc:
        load_config([f])
    assert fragment in str(exc.value)


def test_bad_set_is_rejected() -> None:
    with pytest.raises(ConfigError, match="expected section.key=value"):
        load_config(overrides=["preempt.rate_per_s"])
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(overrides=["nope.x=1"])


def test_missing_file_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the thresholds file"):
        load_config([tmp_path / "absent.toml"])


def test_unknown_key_lookup_is_a_bug() -> None:
    with pytest.raises(KeyError):
        load_config().get("preempt.nope")


def test_durations() -> None:
    assert duration_seconds("1h30m") == 5400
    assert duration_seconds("500ms") == 0.5
    assert check_duration("5m", "x") == "5m"
    for bad in ("", "5", "m5", "5 m", "0s"):
        with pytest.raises(ConfigError):
            check_duration(bad, "x")


def test_selector_parsing_and_scoping() -> None:
    sel = Selector.parse('{job="vllm", model_name=~"llama.*",engine!="1"}')
    assert [m.label for m in sel.matchers] == ["job", "model_name", "engine"]
    assert sel.for_metric(M.NUM_PREEMPTIONS) == '{job="vllm",model_name=~"llama.*",engine!="1"}'
    # the LoRA info gauge has neither model_name nor engine: those matchers are dropped
    assert sel.for_metric(M.LORA_REQUESTS_INFO) == '{job="vllm"}'
    # the cache-config info gauge has engine but no model_name
    assert sel.for_metric(M.CACHE_CONFIG_INFO) == '{job="vllm",engine!="1"}'
    assert sel.target_only() == '{job="vllm"}'
    assert sel.for_metric(M.REQUEST_SUCCESS, finished_reason="abort").endswith('finished_reason="abort"}')
    # the API server's HTTP counter has neither; regex matchers render with =~
    assert sel.for_metric(M.HTTP_REQUESTS, {"handler": "/v1/a|/v1/b"}, method="POST") == (
        '{job="vllm",method="POST",handler=~"/v1/a|/v1/b"}')
    with pytest.raises(ValueError):
        sel.for_metric(M.HTTP_REQUESTS, {"model_name": "x"})
    with pytest.raises(ValueError):
        sel.for_metric(M.NUM_PREEMPTIONS, reason="x")
    assert Selector.parse("").for_metric(M.NUM_PREEMPTIONS) == ""
    assert Selector.parse('a="x\\"y"').matchers[0].value == 'x\\"y'


@pytest.mark.parametrize("bad", ['job=vllm', 'job="vllm" model="x"', '="x"', 'job=="x"'])
def test_bad_selectors(bad: str) -> None:
    with pytest.raises(ConfigError, match="cannot parse the label selector"):
        Selector.parse(bad)
