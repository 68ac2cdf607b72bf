import os

extensions = ["myst_parser", "vllm_book.config", "vllm_book.anchors", "vllm_book.landmarks"]
language = "zh_CN"
vllm_book_src_root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fake-vllm"))
vllm_book_landmarks = "landmarks.toml"
exclude_patterns = ["_build"]
