"""Experiment 8 (``structured_output``): the committed steps of the xgrammar backend are consistent with
themselves, with the schema and with the bitmask layout the chapter ``09-advanced-features/02-structured-output``
derives from them; a fresh run on the pinned vLLM reproduces everything but the timings (integration,
needs .venv-vllm)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from experiments import common

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "experiments" / "results" / "structured_output.json"


@pytest.fixture(scope="module")
def result():
    return json.loads(RESULT.read_text())


def rows(result, phase, request=None):
    return [r for r in result["series"] if r["phase"] == phase and (request is None or r["request"] == request)]


def test_auto_picked_xgrammar_and_compiled_in_the_pool(result):
    json_row, choice_row = rows(result, "compile")
    assert result["setup"]["structured_outputs_backend"] == "auto"
    for r in (json_row, choice_row):
        assert r["backend_selected"] == "xgrammar" and r["backend_was_auto"] is True
        assert r["status_before"] == "WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR"
        assert r["compiled_in_thread_pool"] is True and r["grammar_ready"] is True
        assert r["backend_after"] == "XgrammarBackend" and r["grammar_class"] == "XgrammarGrammar"
        assert r["xgrammar_vocab_size"] == result["setup"]["model_vocab_size"]
        assert r["xgrammar_stop_token_ids"] == [result["setup"]["eos_token_id"]]
    assert json_row["backend_before"] is None  # the first structured request builds the backend
    assert choice_row["backend_before"] == "XgrammarBackend"  # the second one reuses it
    assert json_row["request_type"] == "JSON"
    # validate_xgrammar_grammar rewrote the choice into an EBNF grammar (choice_as_grammar)
    assert choice_row["request_type"] == "GRAMMAR"
    assert choice_row["grammar_spec"] == 'root ::= "Paris" | "Rome"'


def test_bitmask_layout(result):
    setup = result["setup"]
    vocab, words = setup["model_vocab_size"], setup["bitmask_words_per_row"]
    assert words == math.ceil(vocab / 32)
    assert setup["preallocated_bitmask_shape"] == [setup["max_num_seqs"], words]
    n_tok = len(setup["tokenizer_vocab"])
    for r in rows(result, "decode"):
        assert len(r["bitmask_words"]) == words
        ids = [t for t in range(vocab) if (r["bitmask_words"][t // 32] >> (t % 32)) & 1]
        assert ids == r["allowed_ids"]
        assert r["num_allowed"] + r["num_masked"] == vocab == len(ids) + r["num_masked"]
        assert all(t < n_tok for t in ids), "ids past the tokenizer (padding) are always masked"
        # the word values: sum of 2**(t % 32) over allowed t, as a signed int32
        for w in range(words):
            value = sum(1 << (t % 32) for t in ids if t // 32 == w)
            assert r["bitmask_words"][w] == (value - (1 << 32) if value >= 1 << 31 else value)
    after = rows(result, "after_termination")[0]
    assert after["bitmask_words"] == [-1] * words and after["num_masked"] == 0


def test_greedy_under_the_mask(result):
    setup = result["setup"]
    vocab = setup["tokenizer_vocab"]
    preference = setup["model_preference"]
    for r in rows(result, "decode"):
        assert r["unmasked_choice"] == preference[0] == "Sure"
        best = min(r["allowed_ids"], key=lambda t: preference.index(vocab[t]))
        assert r["chosen_id"] == best and r["chosen"] == vocab[best]
        assert r["accepted"] is True
    active = {}
    for r in rows(result, "decode"):
        active.setdefault(r["step"], []).append(r["request"])
    for r in rows(result, "decode"):
        assert r["bitmask_rows"] == len(active[r["step"]])
        assert r["batch_row"] == active[r["step"]].index(r["request"])


def test_termination_and_outputs(result):
    setup = result["setup"]
    eos = setup["eos_token_id"]
    for request in ("json", "choice"):
        steps = rows(result, "decode", request)
        assert [r["terminated_after"] for r in steps] == [False] * (len(steps) - 1) + [True]
        assert steps[-1]["chosen_id"] == eos and steps[-1]["allowed_ids"] == [eos]
        assert all(eos not in r["allowed_ids"] for r in steps[:-1]), "EOS only once the grammar is complete"
    out = json.loads(setup["outputs"]["json"])
    schema = json.loads(setup["json_schema"])
    assert list(out) == schema["required"]
    assert out["city"] in schema["properties"]["city"]["enum"] and isinstance(out["ok"], bool)
    assert setup["outputs"]["choice"] in setup["choice"]
    assert len(rows(result, "decode", "json")) == 12 and len(rows(result, "decode", "choice")) == 2


def test_measured_is_separate_and_has_the_machine(result):
    measured = result["measured"]
    assert common.check_result(result) == []
    assert {"cpu_count", "cpu_model", "python", "xgrammar"} <= set(measured["machine"])
    for key in ("json_grammar_init_to_ready_ms", "choice_grammar_init_to_ready_ms", "json_compile_again_cached_ms"):
        assert measured[key] > 0
    assert "measured" not in common.comparable(result)
    for r in result["series"]:
        assert not any(k.endswith("_ms") for k in r), "timings only in measured"


@pytest.mark.integration
def test_a_fresh_run_reproduces_all_but_the_timings(vllm_python):
    proc = subprocess.run([str(vllm_python), "-m", "experiments", "run", "--check", "structured_output"], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "HOME": str(Path.home())})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OK: results and figures identical" in proc.stderr
    assert "measured json_grammar_init_to_ready_ms" in proc.stderr
