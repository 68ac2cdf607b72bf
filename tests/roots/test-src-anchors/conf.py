import os

extensions = ["myst_parser", "vllm_book.config", "vllm_book.anchors"]
language = "zh_CN"  # a Chinese book ("完整源码 →"; an English edition prints "Full source →")
# the shared fake tree (tests copy this root to a temporary directory and pass
# vllm_book_src_root as a confoverride; the index cache lands in the copy)
vllm_book_src_root = os.environ.get("VLLM_BOOK_FAKE_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fake-vllm")
)
myst_enable_extensions = ["colon_fence"]
exclude_patterns = ["_build"]
