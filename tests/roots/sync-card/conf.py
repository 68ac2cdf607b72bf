# Test root of the header card's 复核 field (tests/sync/test_sync_card.py).
extensions = ["myst_parser", "sphinxcontrib.mermaid", "vllm_book.config", "vllm_book.chapters", "vllm_book.sync.card"]
language = "zh_CN"
exclude_patterns = ["_build"]
