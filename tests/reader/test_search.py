"""The search page as a reader meets it: the query set of tests/search/queries.toml in headless Chromium.

Each query must find its page among the first three results; the edition scores at least 95 %.
The per-group score is printed (``-s``) and written to ``<build>/search-report.json``.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
from reader_helpers import run_node

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
QUERIES = REPO / "tests" / "search" / "queries.toml"
THRESHOLD = 0.95
#: Latin text the query side must cut exactly as the index side does
TOKEN_SAMPLES = ["Scheduler.schedule", "hash_block_tokens", "KVCacheManager", "--max-num-batched-tokens",
                 "prefix caching", "GPUModelRunner.execute_model", "v0.26.0 TTFT/TPOT", "don't the Tokenizers",
                 "reshape_and_cache_flash", "AsyncLLM", "vllm:num_requests_running", "FlashAttention-3"]


def load_queries(edition: str) -> list[dict]:
    data = tomllib.loads(QUERIES.read_text(encoding="utf-8"))["query"]
    return [q for q in data if q.get("edition", "zh_CN") == edition]


def test_query_set_is_well_formed():
    data = tomllib.loads(QUERIES.read_text(encoding="utf-8"))["query"]
    docs = {p.relative_to(REPO / "source").with_suffix("").as_posix() for p in (REPO / "source").rglob("*.md")}
    bad = [q for q in data if q.get("expect") not in docs or not q.get("q") or not q.get("group")]
    assert not bad, f"queries naming no page of source/: {bad}"
    assert len([q for q in data if q.get("edition", "zh_CN") == "zh_CN"]) >= 60


def _score(base: str, edition: str, env: dict, report: Path) -> tuple[float, list[str], dict]:
    queries = load_queries(edition)
    qfile = report.with_suffix(".queries.json")
    qfile.write_text(json.dumps(queries, ensure_ascii=False))
    out = run_node("search_queries.js", base, str(qfile), env={**env, "TOKEN_SAMPLES": json.dumps(TOKEN_SAMPLES)})
    assert out["errors"] == [], out["errors"][:10]
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for q, r in zip(queries, out["results"], strict=True):
        hit = q["expect"] in r["top"][:3]
        groups[q["group"]][0] += hit
        groups[q["group"]][1] += 1
        if not hit:
            misses.append(f"{q['q']!r}: want {q['expect']}, got {r['top'][:3]}")
    total = sum(h for h, _ in groups.values()) / sum(n for _, n in groups.values())
    summary = {"edition": edition, "score": round(total, 4),
               "groups": {g: f"{h}/{n}" for g, (h, n) in sorted(groups.items())}, "misses": misses,
               "results": out["results"]}
    report.write_text(json.dumps(summary, ensure_ascii=False, indent=1))
    print(f"\nsearch {edition}: {total:.1%} top-3;", summary["groups"], "\n  " + "\n  ".join(misses))
    return total, misses, out


def test_chinese_edition_finds_the_right_page(served_book, real_book, node_env):
    total, misses, out = _score(served_book, "zh_CN", node_env, real_book / "search-report.json")
    from vllm_book.search import tokens

    expected = {s: list(tokens.terms(s)) for s in TOKEN_SAMPLES}
    assert out["tokens"] == expected  # the query side cuts Latin text exactly as the index did
    assert total >= THRESHOLD, "\n".join(misses)


def test_english_edition_finds_the_right_page(served_english, english_book, node_env):
    total, misses, _ = _score(served_english, "en", node_env, english_book / "search-report.json")
    assert total >= THRESHOLD, "\n".join(misses)
