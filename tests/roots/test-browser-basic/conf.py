import os

project = "浏览器测试书"
extensions = ["myst_parser", "vllm_book.config", "vllm_book.anchors", "vllm_book.browser"]
# the shared fake tree (tests also pass it, with a temporary cache dir, as confoverrides)
vllm_book_src_root = os.environ.get("VLLM_BOOK_FAKE_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fake-vllm")
)
exclude_patterns = ["_build"]
language = "zh_CN"
