"""Structured output on CPU: vLLM's own xgrammar backend compiles a JSON schema and a choice, then masks.

What is real: ``SamplingParams.verify`` (the check the input processor runs, which picks the backend
for ``backend="auto"`` and rewrites a ``choice`` into an EBNF ``grammar``), ``StructuredOutputManager``
(``grammar_init`` builds ``XgrammarBackend`` on first use and submits the compilation to its thread
pool; ``grammar_bitmask`` fills one bitmask row per request), ``XgrammarGrammar`` (xgrammar's
``GrammarMatcher``: ``fill_bitmask``, ``accept_tokens``, ``is_terminated``) and xgrammar's
``apply_token_bitmask_inplace`` on CPU logits (the call vLLM's V1 runner ends in).

What is made up: the tokenizer and the model.  The tokenizer is a 20-token ``tokenizers`` WordLevel
vocabulary built in code and saved next to a ``config.json`` whose ``vocab_size`` is 40 (as real models
pad their embedding past the tokenizer), so nothing is downloaded.  The "model" is a fixed logit vector
that prefers a chatty ``Sure`` over everything; the run records, step by step, which token ids the
bitmask allows, which one the model would pick without the mask, the one it picks with it, and when
the grammar terminates.  Everything in ``series`` is deterministic; the compile times are wall-clock
measurements and live only in ``measured`` (which ``python -m experiments run`` does not compare).
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import UNIT
from .harness import TINY_CONFIG, use_cpu_platform, vllm_version

NAME = "structured_output"
TITLE = "结构化输出：xgrammar 后端在 CPU 上编译文法、逐步填位掩码"
#: the tokenizer's vocabulary, id = position; 0 is the end-of-sequence token
VOCAB = ("</s>", "Sure", "!", "{", "}", '"', ":", ",", '{"', '":', "city", "ok", "Paris", "Rome",
         "true", "false", '"city"', '"ok"', " ", "<unk>")
EOS = 0
MODEL_VOCAB = 40  # config.json vocab_size: ids 20..39 exist in the logits but not in the tokenizer
#: the fake model's preference, best first (logit = -rank); padding ids get -100
PREFERENCE = ("Sure", "!", "<unk>", '"ok"', "Rome", "true", "{", '"city"', '{"', '"', ":", '":', ",",
              "city", "ok", "Paris", "false", "}", " ", "</s>")
SCHEMA = {"type": "object",
          "properties": {"city": {"enum": ["Paris", "Rome"]}, "ok": {"type": "boolean"}},
          "required": ["city", "ok"]}
CHOICE = ["Paris", "Rome"]
MAX_NUM_SEQS = 4
MAX_STEPS = 30


def token_name(t: int) -> str:
    return VOCAB[t] if t < len(VOCAB) else f"#{t}"


def logits_row() -> list[float]:
    rank = {tok: i for i, tok in enumerate(PREFERENCE)}
    return [float(-rank[VOCAB[t]]) if t < len(VOCAB) else -100.0 for t in range(MODEL_VOCAB)]


def model_dir() -> str:
    """A temporary model directory: the tiny config.json (vocab 40) and a 20-token tokenizer."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    path = Path(tempfile.mkdtemp(prefix="vllm-book-so-model-"))
    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="<unk>"))
    tok.decoder = decoders.Fuse()  # tokens are plain text: xgrammar reads the vocabulary as RAW
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", unk_token="<unk>").save_pretrained(path)
    config = dict(TINY_CONFIG, vocab_size=MODEL_VOCAB, bos_token_id=EOS, eos_token_id=EOS, pad_token_id=EOS)
    (path / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    return str(path)


def allowed_ids(words: list[int]) -> list[int]:
    """Token ids whose bit is 1 in one bitmask row (bit t % 32 of int32 word t // 32)."""
    return [t for t in range(MODEL_VOCAB) if (words[t // 32] >> (t % 32)) & 1]


def machine() -> dict[str, Any]:
    import importlib.metadata as md

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.machine()}",
        "xgrammar": md.version("xgrammar"),
        "torch": md.version("torch"),
        "note": "shared machine: other jobs ran at the same time; single wall-clock measurements",
    }


def run() -> dict[str, Any]:
    use_cpu_platform()
    import torch
    import xgrammar as xgr
    from vllm.config import ModelConfig, SchedulerConfig, VllmConfig
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    from vllm.v1.request import Request
    from vllm.v1.structured_output import StructuredOutputManager

    model_config = ModelConfig(model=model_dir(), dtype="float16", seed=0, max_model_len=256)
    vllm_config = VllmConfig(
        model_config=model_config,
        scheduler_config=SchedulerConfig(max_num_seqs=MAX_NUM_SEQS, max_num_batched_tokens=256,
                                         max_model_len=256, is_encoder_decoder=False))
    manager = StructuredOutputManager(vllm_config)  # the scheduler's; builds the tokenizer from model_dir
    so_config = vllm_config.structured_outputs_config

    specs = [("json", StructuredOutputsParams(json=SCHEMA)), ("choice", StructuredOutputsParams(choice=CHOICE))]
    requests: dict[str, Any] = {}
    series: list[dict[str, Any]] = []
    measured: dict[str, Any] = {}
    for i, (rid, so_params) in enumerate(specs):
        params = SamplingParams(max_tokens=MAX_STEPS, temperature=0.0, structured_outputs=so_params)
        params.verify(model_config, None, so_config, manager.tokenizer)  # what InputProcessor runs
        req = Request(request_id=rid, prompt_token_ids=[1, 2], sampling_params=params, pooling_params=None,
                      arrival_time=float(i))
        status_before = req.status.name
        backend_before = type(manager.backend).__name__ if manager.backend is not None else None
        t0 = time.perf_counter()
        manager.grammar_init(req)
        future = req.structured_output_request._grammar
        grammar = future.result()
        measured[f"{rid}_grammar_init_to_ready_ms"] = (time.perf_counter() - t0) * 1000
        kind, spec = req.structured_output_request.structured_output_key
        series.append({
            "phase": "compile",
            "request": rid,
            "backend_selected": params.structured_outputs._backend,
            "backend_was_auto": params.structured_outputs._backend_was_auto,
            "request_type": kind.name,
            "grammar_spec": spec,
            "status_before": status_before,
            "compiled_in_thread_pool": type(future).__name__ == "Future",
            "backend_before": backend_before,
            "backend_after": type(manager.backend).__name__,
            "grammar_class": type(grammar).__name__,
            "xgrammar_vocab_type": grammar.ctx.tokenizer_info.vocab_type.name,
            "xgrammar_vocab_size": grammar.ctx.tokenizer_info.vocab_size,
            "xgrammar_stop_token_ids": list(grammar.ctx.tokenizer_info.stop_token_ids),
            "grammar_ready": req.structured_output_request.is_grammar_ready,
        })
        requests[rid] = req

    # the cache: the same JSON key compiled again by the backend (xgrammar's GrammarCompiler cache)
    t0 = time.perf_counter()
    manager.backend.compile_grammar(*requests["json"].structured_output_request.structured_output_key)
    measured["json_compile_again_cached_ms"] = (time.perf_counter() - t0) * 1000
    measured["machine"] = machine()

    row = logits_row()
    active = [rid for rid, _ in specs]
    step = 0
    while active and step < MAX_STEPS:
        step += 1
        bitmask = manager.grammar_bitmask({r: requests[r] for r in active}, active, {})
        logits = torch.tensor([row] * len(active), dtype=torch.float32)
        unmasked = logits.argmax(dim=-1).tolist()
        xgr.apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask))
        chosen = logits.argmax(dim=-1).tolist()
        for b, rid in enumerate(list(active)):
            words = [int(w) for w in bitmask[b].tolist()]
            ids = allowed_ids(words)
            grammar = requests[rid].structured_output_request.grammar
            accepted = grammar.accept_tokens(rid, [chosen[b]])
            series.append({
                "phase": "decode",
                "request": rid,
                "step": step,
                "batch_row": b,
                "bitmask_rows": int(bitmask.shape[0]),
                "bitmask_words": words,
                "allowed_ids": ids,
                "allowed_tokens": [token_name(t) for t in ids],
                "num_allowed": len(ids),
                "num_masked": MODEL_VOCAB - len(ids),
                "unmasked_choice": token_name(unmasked[b]),
                "chosen_id": chosen[b],
                "chosen": token_name(chosen[b]),
                "accepted": accepted,
                "terminated_after": grammar.is_terminated(),
            })
            if grammar.is_terminated():  # it sampled EOS: the scheduler would finish it here
                active.remove(rid)

    # what _fill_bitmasks writes for a grammar that has terminated: every bit set
    probe = manager.grammar_bitmask({"json": requests["json"]}, ["json"], {})
    words = [int(w) for w in probe[0].tolist()]
    series.append({"phase": "after_termination", "request": "json", "bitmask_words": words,
                   "num_allowed": len(allowed_ids(words)), "num_masked": MODEL_VOCAB - len(allowed_ids(words))})
    texts = {rid: "".join(r["chosen"] for r in series if r.get("request") == rid and r["phase"] == "decode"
                          and r["chosen_id"] != EOS) for rid in requests}
    manager.backend.destroy()
    return {
        "name": NAME,
        "title": TITLE,
        "vllm": vllm_version(),
        "unit": UNIT,
        "setup": {
            "tokenizer_vocab": list(VOCAB),
            "model_vocab_size": MODEL_VOCAB,
            "eos_token_id": EOS,
            "bitmask_words_per_row": -(-MODEL_VOCAB // 32),
            "preallocated_bitmask_shape": list(manager._grammar_bitmask.shape),
            "max_num_seqs": MAX_NUM_SEQS,
            "structured_outputs_backend": so_config.backend,
            "json_schema": json.dumps(SCHEMA, sort_keys=True),
            "choice": CHOICE,
            "model_preference": list(PREFERENCE),
            "logits": "logit = -rank in model_preference; ids 20..39 (no token) -100",
            "decoding": "greedy: argmax of the logits after xgrammar.apply_token_bitmask_inplace",
            "outputs": texts,
        },
        "series": series,
        "measured": measured,
        "notes": [
            "series rows: phase compile (one per request), decode (one per request and step), after_termination",
            "bitmask_words are the int32 words of the row as vLLM hands them over (signed); bit t%32 of word "
            "t//32 is 1 when token t is allowed",
            "unmasked_choice is what greedy decoding would pick without the mask (always 'Sure')",
            "measured holds wall-clock times of this one run and the machine; not compared by --check",
        ],
    }


def figure(result: dict[str, Any]):
    return {}  # the chapter shows the steps as a table
