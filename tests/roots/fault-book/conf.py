"""The fault-injection book (tests/faults): a tiny copy of the real book's setup.

Like the real ``conf.py``: built with ``-c .`` from ``source/``, the pin in
``vllm-pin.toml`` (written by the fixture), the tree provisioned into ``vllm/``
from a fake sdist of ``tests/roots/fake-vllm``.  No ``html_*`` value holds an
absolute path, so two clones build the same bytes.
"""

import os

# an "env" value, like the real conf.py's: it is not hashed into .buildinfo
vllm_book_repo_root = os.path.dirname(os.path.abspath(__file__))

from vllm_book.pin import Pin, ProvisionError, load_pin  # noqa: E402

try:  # as the real conf.py: a broken pin is reported by vllm_book.gate, not as a conf.py traceback
    PIN = load_pin(vllm_book_repo_root)
except ProvisionError:
    PIN = Pin("?", "0" * 40, "", "", "", "", None)

project = "故障注入测试书"
author = "测试作者"
copyright = "2026, 测试作者"
version = f"vLLM {PIN.version}"
language = "zh_CN"
extensions = ["myst_parser", "sphinx_design", "sphinxcontrib.mermaid", "vllm_book"]
myst_enable_extensions = ["colon_fence", "attrs_inline", "attrs_block"]
exclude_patterns = ["_build"]
html_search_options = {"dict": "source/_data/jieba.txt"}
mermaid_use_local = "mermaid.esm.min.mjs"
mermaid_include_elk = False
vllm_book_browser_jobs = 1
vllm_book_online_base = "https://book.example/zh-cn/latest/"
