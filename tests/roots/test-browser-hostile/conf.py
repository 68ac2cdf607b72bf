import os

extensions = ["myst_parser", "vllm_book.config", "vllm_book.anchors", "vllm_book.browser"]
# a tree of its own: hostile file contents and names (copied with the root)
vllm_book_src_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tree")
exclude_patterns = ["_build", "tree"]
language = "zh_CN"
